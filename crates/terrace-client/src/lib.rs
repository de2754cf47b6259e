//! A client for Terrace's BOOM protocol (docs/techniques/boom.md): one round trip per
//! PUT and GET to a `terrace serve --boom-socket` on the same host (shared memory), or
//! over TCP to its `--boom-port` from another, with a pool of connections for programs
//! with many threads.
//!
//! ```no_run
//! let pool = terrace_client::Pool::new("boom:///run/terrace/boom.sock", b"", 8)?;
//! let version = pool.get()?.put(b"key", b"value")?;
//! assert_eq!(pool.get()?.get(b"key")?.as_deref(), Some(&b"value"[..]));
//! # Ok::<(), terrace_client::BoomError>(())
//! ```

use std::path::PathBuf;

use parking_lot::{Condvar, Mutex};

pub use terrace_boom::{BoomClient, BoomError, Result};

/// Where a BOOM server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address {
    /// `boom:///path/to/socket`: the server's Unix socket, shared memory on this host.
    Local(PathBuf),
    /// `boom+tcp://host:port`: its TCP port, for clients on other hosts.
    Tcp(String),
}

/// Where a BOOM server listens, from an address such as `boom:///path/to/socket` or
/// `boom+tcp://host:port`.
///
/// # Errors
/// `InvalidArgument` for another scheme, an empty path or a TCP address without a port.
pub fn parse_address(addr: &str) -> Result<Address> {
    let bad = |why: &str| BoomError::InvalidArgument(format!("{addr:?}: {why}"));
    if let Some(hostport) = addr.strip_prefix("boom+tcp://") {
        if !hostport.contains(':') {
            return Err(bad("expected boom+tcp://host:port"));
        }
        return Ok(Address::Tcp(hostport.to_string()));
    }
    let path = addr.strip_prefix("boom://").ok_or_else(|| {
        bad("not a BOOM address (boom:///path/to/socket or boom+tcp://host:port)")
    })?;
    if path.is_empty() {
        return Err(bad("names no socket"));
    }
    Ok(Address::Local(PathBuf::from(path)))
}

/// Connections to one server, opened on demand up to a limit and reused.
#[derive(Debug)]
pub struct Pool {
    address: Address,
    password: Vec<u8>,
    max: usize,
    state: Mutex<PoolState>,
    returned: Condvar,
}

#[derive(Debug, Default)]
struct PoolState {
    idle: Vec<BoomClient>,
    /// Connections open, idle or lent.
    open: usize,
}

impl Pool {
    /// A pool of at most `max` connections (at least one) to the server at `addr`.
    ///
    /// # Errors
    /// As [`parse_address`].
    pub fn new(addr: &str, password: &[u8], max: usize) -> Result<Pool> {
        Ok(Pool {
            address: parse_address(addr)?,
            password: password.to_vec(),
            max: max.max(1),
            state: Mutex::new(PoolState::default()),
            returned: Condvar::new(),
        })
    }

    /// A connection: an idle one, a new one while under the limit, or the next one
    /// returned.
    ///
    /// # Errors
    /// The connection's errors (the server refused, no free segment, I/O).
    pub fn get(&self) -> Result<Pooled<'_>> {
        let mut st = self.state.lock();
        loop {
            if let Some(c) = st.idle.pop() {
                return Ok(self.lend(c));
            }
            if st.open < self.max {
                st.open += 1;
                drop(st);
                let connected = match &self.address {
                    Address::Local(p) => BoomClient::connect_unix(p, &self.password),
                    Address::Tcp(a) => {
                        BoomClient::connect_tcp(a, &self.password, Default::default())
                    }
                };
                return match connected {
                    Ok(c) => Ok(self.lend(c)),
                    Err(e) => {
                        self.state.lock().open -= 1;
                        self.returned.notify_one();
                        Err(e)
                    }
                };
            }
            self.returned.wait(&mut st);
        }
    }

    /// Connections open now (idle or lent).
    pub fn open_connections(&self) -> usize {
        self.state.lock().open
    }

    fn lend(&self, client: BoomClient) -> Pooled<'_> {
        Pooled {
            pool: self,
            client: Some(client),
            broken: false,
        }
    }

    fn give_back(&self, client: Option<BoomClient>) {
        let mut st = self.state.lock();
        match client {
            Some(c) => st.idle.push(c),
            None => st.open -= 1,
        }
        self.returned.notify_one();
    }
}

/// A connection lent by a [`Pool`]; it goes back when dropped, unless a request on it
/// failed in a way that may have left the connection unusable.
#[derive(Debug)]
pub struct Pooled<'a> {
    pool: &'a Pool,
    client: Option<BoomClient>,
    broken: bool,
}

impl Pooled<'_> {
    fn with<T>(&mut self, f: impl FnOnce(&mut BoomClient) -> Result<T>) -> Result<T> {
        let client = self
            .client
            .as_mut()
            .ok_or_else(|| BoomError::InvalidArgument("a connection already given back".into()))?;
        let r = f(client);
        // Only a refusal the server answered leaves the connection as it was; anything
        // else (I/O, a closed connection, a cut-off client) retires it.
        if let Err(e) = &r {
            self.broken = !matches!(e, BoomError::NoFreeSegment | BoomError::InvalidArgument(_));
        }
        r
    }

    /// [`BoomClient::put`].
    ///
    /// # Errors
    /// As [`BoomClient::put`].
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<u64> {
        self.with(|c| c.put(key, value))
    }

    /// [`BoomClient::get`].
    ///
    /// # Errors
    /// As [`BoomClient::get`].
    pub fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.with(|c| c.get(key))
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        let client = self.client.take().filter(|_| !self.broken);
        self.pool.give_back(client);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse() {
        assert_eq!(
            parse_address("boom:///tmp/s").unwrap(),
            Address::Local(PathBuf::from("/tmp/s"))
        );
        assert_eq!(
            parse_address("boom+tcp://10.0.0.1:7000").unwrap(),
            Address::Tcp("10.0.0.1:7000".into())
        );
        assert!(parse_address("redis://x:1").is_err());
        assert!(parse_address("boom://").is_err());
        assert!(parse_address("boom+tcp://host").is_err());
    }
}
