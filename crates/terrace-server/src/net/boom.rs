//! BOOM beside RESP (`boom_socket`): the one-round-trip persistent-memory protocol's
//! listener, on its own threads, writing to the same engine (docs/techniques/boom.md).
//!
//! Owns: starting and stopping the BOOM server, and the value encoding that makes BOOM's
//! writes RESP strings (so `GET` over RESP reads what a BOOM client put). Must not touch:
//! the protocol itself (`terrace-boom`).

use std::sync::Arc;

use terrace_boom::{BoomServer, DbHandle, ServerConfig, ValueCodec};

use crate::commands::Engine;
use crate::error::{Error, Result};
use crate::value::StoredValue;

/// BOOM values as RESP strings without expiry.
#[derive(Debug, Clone, Copy, Default)]
pub struct RespStrings;

impl ValueCodec for RespStrings {
    fn encode(&self, value: &[u8]) -> Vec<u8> {
        StoredValue::new(value.to_vec()).encode()
    }

    fn decode(&self, stored: &[u8]) -> Option<Vec<u8>> {
        let v = StoredValue::decode(stored).ok()?;
        (!v.is_expired(crate::value::now_ms())).then_some(v.data)
    }

    fn engine_key<'k>(&self, key: &'k [u8]) -> std::borrow::Cow<'k, [u8]> {
        crate::value::keys::top(key)
    }
}

impl DbHandle for Engine {
    fn db(&self) -> &terrace::Db {
        Engine::db(self)
    }

    /// A BOOM PUT runs as a RESP write of its key does: beside other commands (not
    /// inside an EXEC), holding the key's stripe (so INCR and the like read-modify-write
    /// around it, not through it), counting the key and marking its watchers.
    fn write_key(
        &self,
        key: &[u8],
        write: &mut dyn FnMut() -> terrace::Result<u64>,
    ) -> terrace::Result<u64> {
        let _shared = self.store.exclusive.read();
        let _stripe = self.store.lock_keys(std::iter::once(key));
        self.store.put_beside(key, write)
    }
}

/// The running BOOM listener.
pub(crate) struct Boom {
    server: Arc<BoomServer>,
    socket: std::path::PathBuf,
    thread: Option<std::thread::JoinHandle<()>>,
    /// The TCP listener's address and thread (`boom_port`).
    tcp: Option<(std::net::SocketAddr, std::thread::JoinHandle<()>)>,
}

impl Boom {
    /// Starts BOOM on the engine's `boom_socket`, if it has one.
    ///
    /// # Errors
    /// `Error::Config` when the socket cannot be bound.
    pub(crate) fn start(engine: &Arc<Engine>) -> Result<Option<Boom>> {
        let config = engine.config.read().clone();
        let (Some(socket), Some(store)) = (config.boom_socket.clone(), engine.boom.clone()) else {
            return Ok(None);
        };
        let listener = BoomServer::bind_unix(&socket)
            .map_err(|e| Error::Config(format!("boom_socket: {e}")))?;
        let server = BoomServer::new(
            store,
            engine.clone(),
            ServerConfig {
                password: config.requirepass.into_bytes(),
                ..ServerConfig::default()
            },
        );
        let tcp = match config.boom_port {
            Some(port) => {
                let l = std::net::TcpListener::bind((config.bind.as_str(), port)).map_err(|e| {
                    Error::Config(format!(
                        "cannot listen on {}:{port} for BOOM: {e}",
                        config.bind
                    ))
                })?;
                let addr = l.local_addr()?;
                let s = server.clone();
                let t = std::thread::Builder::new()
                    .name("terrace-boom-tcp".into())
                    .spawn(move || s.serve_tcp(l))?;
                Some((addr, t))
            }
            None => None,
        };
        let s = server.clone();
        let thread = std::thread::Builder::new()
            .name("terrace-boom".into())
            .spawn(move || s.serve_unix(listener))?;
        Ok(Some(Boom {
            server,
            socket,
            thread: Some(thread),
            tcp,
        }))
    }

    /// The socket's path.
    pub(crate) fn socket(&self) -> &std::path::Path {
        &self.socket
    }

    /// The TCP listener's address, if BOOM listens on TCP.
    pub(crate) fn tcp_addr(&self) -> Option<std::net::SocketAddr> {
        self.tcp.as_ref().map(|(a, _)| *a)
    }

    /// Ends every BOOM connection (their segments are sealed) and the listener.
    pub(crate) fn stop(mut self) {
        self.server.stop();
        let _ = std::os::unix::net::UnixStream::connect(&self.socket);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if let Some((addr, t)) = self.tcp.take() {
            let _ = std::net::TcpStream::connect(addr);
            let _ = t.join();
        }
        if !self
            .server
            .wait_for_connections(std::time::Duration::from_secs(10))
        {
            tracing::warn!("BOOM connections still open at shutdown");
        }
        let _ = std::fs::remove_file(&self.socket);
    }
}
