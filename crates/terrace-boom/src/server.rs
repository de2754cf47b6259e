//! The server's side of a BOOM connection: the handshake (password, a segment, a reply
//! buffer), then doorbells (PUT: commit the entry at this offset), GETs (copy the value
//! into the client's reply buffer) and segment requests, one thread per connection.
//!
//! Owns: a connection's lifetime (its segment is sealed and its reply buffer deleted
//! when it ends) and what a request does. Must not touch: byte layouts (`layout`,
//! `proto`) or how segments are kept (`store`).
//! Concurrency: one thread per connection; the store and the database are shared.

use std::io::Read;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::{BoomError, Result};
use crate::proto::{read_frame, write_frame, Reply, Request, Transport};
use crate::ring::{self, Ring};
use crate::shm::SharedFile;

/// How often a connection thread waiting on its ring checks that its client is there.
const RING_CHECK: std::time::Duration = std::time::Duration::from_millis(100);
use crate::store::{BoomStore, DbHandle, SegmentGrant};

/// What a BOOM server needs besides its store.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The password a client's handshake must carry (`requirepass`); empty: none.
    pub password: Vec<u8>,
    /// Bytes of each client's reply buffer: GET values up to this size are copied into
    /// it, larger ones come inline in the reply (over the socket; a ring client gets an
    /// error for them).
    pub reply_bytes: u64,
    /// How long a connection's thread polls the ring before it sleeps on it.
    pub spin: std::time::Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            password: Vec::new(),
            reply_bytes: 1 << 20,
            spin: std::time::Duration::from_micros(50),
        }
    }
}

/// A BOOM server: shared by its connection threads.
pub struct BoomServer {
    store: Arc<BoomStore>,
    db: Arc<dyn DbHandle>,
    config: ServerConfig,
    next_conn: AtomicU64,
    stopping: AtomicBool,
    /// Connections being served by `serve_unix`'s threads.
    active: Arc<Tracker>,
    /// How to shut down the socket of each connection being served, by id (on stop).
    sockets: parking_lot::Mutex<std::collections::HashMap<u64, Box<dyn Fn() + Send>>>,
}

impl std::fmt::Debug for BoomServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoomServer")
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

impl BoomServer {
    /// A server of `store` writing to `db`.
    pub fn new(store: Arc<BoomStore>, db: Arc<dyn DbHandle>, config: ServerConfig) -> Arc<Self> {
        Arc::new(BoomServer {
            store,
            db,
            config,
            next_conn: AtomicU64::new(1),
            stopping: AtomicBool::new(false),
            active: Arc::new(Tracker::default()),
            sockets: parking_lot::Mutex::new(std::collections::HashMap::new()),
        })
    }

    /// Binds a Unix socket at `path` (replacing a stale one), readable and writable by
    /// this user only.
    ///
    /// # Errors
    /// I/O errors.
    pub fn bind_unix(path: &Path) -> Result<UnixListener> {
        let io = |source| BoomError::Io {
            path: path.to_path_buf(),
            source,
        };
        if path.exists() {
            // A socket nobody answers is a stale one from an earlier run.
            if UnixStream::connect(path).is_ok() {
                return Err(BoomError::InvalidArgument(format!(
                    "{} is in use by another server",
                    path.display()
                )));
            }
            std::fs::remove_file(path).map_err(io)?;
        }
        let listener = UnixListener::bind(path).map_err(io)?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(io)?;
        Ok(listener)
    }

    /// Accepts connections on `listener` until [`BoomServer::stop`], each served on its
    /// own thread.
    pub fn serve_unix(self: &Arc<Self>, listener: UnixListener) {
        for stream in listener.incoming() {
            if self.stopping.load(Ordering::Acquire) {
                return;
            }
            match stream {
                Ok(s) => {
                    let shut = s.try_clone().ok().map(|c| {
                        Box::new(move || {
                            let _ = c.shutdown(std::net::Shutdown::Both);
                        }) as Box<dyn Fn() + Send>
                    });
                    self.spawn_connection(shut, move |server| server.serve_connection(s));
                }
                Err(e) => tracing::warn!(error = %e, "BOOM accept failed"),
            }
        }
    }

    /// [`BoomServer::serve_unix`] for clients on other hosts: each connection carries
    /// entries and values in its messages (`Transport::Remote`).
    pub fn serve_tcp(self: &Arc<Self>, listener: TcpListener) {
        for stream in listener.incoming() {
            if self.stopping.load(Ordering::Acquire) {
                return;
            }
            match stream {
                Ok(s) => {
                    let _ = s.set_nodelay(true);
                    let shut = s.try_clone().ok().map(|c| {
                        Box::new(move || {
                            let _ = c.shutdown(std::net::Shutdown::Both);
                        }) as Box<dyn Fn() + Send>
                    });
                    self.spawn_connection(shut, move |server| server.serve_tcp_connection(s));
                }
                Err(e) => tracing::warn!(error = %e, "BOOM accept failed"),
            }
        }
    }

    /// Runs `serve` on a thread of its own, counted until it has let go of the server.
    fn spawn_connection(
        self: &Arc<Self>,
        shut: Option<Box<dyn Fn() + Send>>,
        serve: impl FnOnce(&BoomServer) + Send + 'static,
    ) {
        let server = self.clone();
        let id = self.next_conn.fetch_add(1, Ordering::Relaxed);
        if let Some(shut) = shut {
            self.sockets.lock().insert(id, shut);
        }
        let active = self.active.clone();
        *active.count.lock() += 1;
        let spawned = std::thread::Builder::new()
            .name("terrace-boom-conn".into())
            .spawn(move || {
                serve(&server);
                server.sockets.lock().remove(&id);
                // The server (and the database it holds) is let go before the
                // connection counts as ended.
                drop(server);
                active.leave();
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot start a BOOM connection thread");
            self.sockets.lock().remove(&id);
            self.active.leave();
        }
    }

    /// Waits until no connection `serve_unix` started is being served (after
    /// [`BoomServer::stop`] or the clients' departure), at most `timeout`; returns
    /// whether none is. A connection ends after its thread has let go of the server.
    pub fn wait_for_connections(&self, timeout: std::time::Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        let mut active = self.active.count.lock();
        while *active > 0 {
            if self
                .active
                .idle
                .wait_until(&mut active, deadline)
                .timed_out()
            {
                return *active == 0;
            }
        }
        true
    }

    /// Makes `serve_unix` return at its next connection (the caller connects once to
    /// wake it) and ends every connection (their segments are sealed).
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::Release);
        for shut in self.sockets.lock().values() {
            shut();
        }
    }

    /// Serves one connection to its end; its segment is sealed and its channel file
    /// deleted whatever happens.
    pub fn serve_connection(&self, mut stream: UnixStream) {
        let mut conn: Option<Conn> = None;
        let served = match self.run(&mut stream, &mut conn, false) {
            Ok(true) => self.run_ring(&mut stream, &mut conn),
            other => other.map(|_| ()),
        };
        self.end(served, conn);
    }

    /// [`BoomServer::serve_connection`] for a TCP connection (remote transport only).
    pub fn serve_tcp_connection(&self, mut stream: TcpStream) {
        let mut conn: Option<Conn> = None;
        let served = self.run(&mut stream, &mut conn, true).map(|_| ());
        self.end(served, conn);
    }

    fn end(&self, served: Result<()>, conn: Option<Conn>) {
        if let Err(e) = served {
            tracing::debug!(error = %e, "BOOM connection ended");
        }
        if let Some(c) = conn {
            if let Err(e) = self.store.seal(&c.grant) {
                tracing::debug!(error = %e, "BOOM segment already sealed");
            }
            if let Err(e) = std::fs::remove_file(&c.reply_path) {
                tracing::warn!(path = %c.reply_path.display(), error = %e, "cannot remove a BOOM channel file");
            }
        }
    }

    /// The reply to a request, and whether the connection ends after it.
    fn answer(&self, frame: &[u8], conn: &mut Option<Conn>, tcp: bool) -> (Reply, bool) {
        let reply = match Request::decode(frame) {
            Ok(req) => self.handle(req, conn, tcp),
            Err(e) => Err(e),
        };
        match reply {
            Ok(r) => (r, false),
            Err(e) => {
                // A client that breaks the protocol or writes garbage is cut off; the
                // engine's own trouble and a full store are only reported.
                let fatal = !matches!(
                    e,
                    BoomError::Engine(_) | BoomError::NoFreeSegment | BoomError::SegmentFull
                );
                (
                    Reply::Error {
                        message: e.to_string(),
                        fatal,
                    },
                    fatal,
                )
            }
        }
    }

    /// Serves requests on the socket; `Ok(true)` when the handshake chose the ring (the
    /// caller goes on with [`BoomServer::run_ring`]), `Ok(false)` at the end.
    fn run<S: Read + Write>(
        &self,
        stream: &mut S,
        conn: &mut Option<Conn>,
        tcp: bool,
    ) -> Result<bool> {
        let mut frame = Vec::new();
        let io = |source| BoomError::Io {
            path: PathBuf::from("<boom connection>"),
            source,
        };
        loop {
            if !read_frame(stream, &mut frame).map_err(io)? {
                return Ok(false);
            }
            let (reply, end) = self.answer(&frame, conn, tcp);
            write_frame(stream, &reply.encode()).map_err(io)?;
            if end {
                return Ok(false);
            }
            if conn
                .as_ref()
                .is_some_and(|c| c.transport == Transport::Ring)
            {
                return Ok(true);
            }
        }
    }

    /// After a handshake that chose the ring: requests come through the channel file,
    /// and the socket only says whether the client is still there.
    fn run_ring(&self, stream: &mut UnixStream, conn: &mut Option<Conn>) -> Result<()> {
        let io = |source| BoomError::Io {
            path: PathBuf::from("<boom connection>"),
            source,
        };
        stream.set_nonblocking(true).map_err(io)?;
        let Some(c) = conn.as_ref() else {
            return Ok(());
        };
        let channel = c.reply.clone();
        let ring = Ring::new(&channel);
        // A new channel file starts at zero, and the client may have rung already.
        let mut last = 0;
        let mut probe = [0u8; 1];
        loop {
            let waited = ring.wait_request(last, self.config.spin, RING_CHECK)?;
            let Some((seq, frame)) = waited else {
                if self.stopping.load(Ordering::Acquire) {
                    return Ok(());
                }
                match stream.read(&mut probe) {
                    // Closed, or bytes on a socket that carries none in ring mode.
                    Ok(_) => return Ok(()),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                    Err(e) => return Err(io(e)),
                }
            };
            last = seq;
            let (mut reply, end) = self.answer(&frame, conn, false);
            let mut bytes = reply.encode();
            if bytes.len() as u64 > ring::SLOT_BYTES - 4 {
                reply = Reply::Error {
                    message: "the reply does not fit the ring: a value larger than the reply \
                              buffer"
                        .into(),
                    fatal: false,
                };
                bytes = reply.encode();
            }
            ring.post_response(&bytes)?;
            if end {
                return Ok(());
            }
        }
    }

    fn handle(&self, req: Request, conn: &mut Option<Conn>, tcp: bool) -> Result<Reply> {
        let Some(c) = conn.as_mut() else {
            let Request::Hello {
                password,
                transport,
            } = req
            else {
                return Err(BoomError::InvalidArgument(
                    "the first message must be HELLO".into(),
                ));
            };
            if tcp && transport != Transport::Remote {
                return Err(BoomError::InvalidArgument(
                    "a TCP client shares no memory with the server: it must use the remote \
                     transport"
                        .into(),
                ));
            }
            return self.hello(&password, transport, conn);
        };
        match req {
            Request::Hello { .. } => Err(BoomError::InvalidArgument("HELLO twice".into())),
            Request::PutRemote {
                offset,
                next_segment,
                entry,
            } => {
                // What a NIC does with a one-sided write: the bytes land in the segment.
                if offset.saturating_add(entry.len() as u64) > c.grant.len {
                    return Err(BoomError::BadEntry(format!(
                        "{} bytes at {offset} run past the segment",
                        entry.len()
                    )));
                }
                self.store.write_entry(&c.grant, offset, &entry)?;
                self.put(c, offset, next_segment)
            }
            Request::Put {
                offset,
                next_segment,
            } => self.put(c, offset, next_segment),
            Request::Segment => Ok(Reply::Segment {
                grant: self.next_segment(c)?,
            }),
            Request::Get { key } | Request::Lookup { key } => self.stage(&key, c),
            Request::Alloc { len } => {
                let offset = self.store.append_point(&c.grant)?;
                if offset.saturating_add(len) > c.grant.len {
                    return Err(BoomError::SegmentFull);
                }
                Ok(Reply::Alloc { offset })
            }
            Request::Read { offset, len } => {
                let len = usize::try_from(len)
                    .map_err(|_| BoomError::InvalidArgument("a read longer than memory".into()))?;
                Ok(Reply::Data {
                    bytes: c
                        .reply
                        .read_vec(ring::DATA_AREA.saturating_add(offset), len)?,
                })
            }
        }
    }

    /// Commits the entry at `offset` of the connection's segment, handing over the next
    /// segment when asked.
    fn put(&self, c: &mut Conn, offset: u64, next_segment: bool) -> Result<Reply> {
        let version = self.store.commit_put(self.db.as_ref(), &c.grant, offset)?;
        let next = if next_segment {
            self.next_segment(c).ok()
        } else {
            None
        };
        Ok(Reply::Put { version, next })
    }

    /// Looks `key` up and copies its value into the connection's reply buffer (inline
    /// in the reply when it does not fit).
    fn stage(&self, key: &[u8], c: &mut Conn) -> Result<Reply> {
        let stored = self.db.db().get(&self.store.codec().engine_key(key))?;
        let value = stored.and_then(|v| self.store.codec().decode(&v));
        Ok(match value {
            None => Reply::Get {
                len: None,
                inline: None,
            },
            Some(v)
                if c.transport != Transport::Remote
                    && v.len() as u64 <= c.reply.len() - ring::DATA_AREA =>
            {
                c.reply.write(ring::DATA_AREA, &v)?;
                Reply::Get {
                    len: Some(v.len() as u64),
                    inline: None,
                }
            }
            Some(v) => Reply::Get {
                len: Some(v.len() as u64),
                inline: Some(v),
            },
        })
    }

    /// Seals the connection's segment and hands it the next one.
    fn next_segment(&self, c: &mut Conn) -> Result<SegmentGrant> {
        let next = self.store.allocate()?;
        if let Err(e) = self.store.seal(&c.grant) {
            tracing::debug!(error = %e, "BOOM segment already sealed");
        }
        c.grant = next;
        Ok(next)
    }

    fn hello(
        &self,
        password: &[u8],
        transport: Transport,
        conn: &mut Option<Conn>,
    ) -> Result<Reply> {
        if !constant_time_eq(password, &self.config.password) {
            return Err(BoomError::InvalidArgument(
                "WRONGPASS invalid password".into(),
            ));
        }
        let id = self.next_conn.fetch_add(1, Ordering::Relaxed);
        let reply_path = self
            .store
            .dir()
            .join(format!("reply-{}-{id}", std::process::id()));
        let _ = std::fs::remove_file(&reply_path);
        let reply = Arc::new(SharedFile::open_or_create(
            &reply_path,
            ring::channel_len(self.config.reply_bytes.max(4096)),
        )?);
        let grant = match self.store.allocate() {
            Ok(g) => g,
            Err(e) => {
                let _ = std::fs::remove_file(&reply_path);
                return Err(e);
            }
        };
        let welcome = Reply::Welcome {
            grant,
            region_path: self.store.region_path().to_string_lossy().into_owned(),
            region_len: self.store.region_len(),
            reply_path: reply_path.to_string_lossy().into_owned(),
            reply_len: reply.len(),
        };
        *conn = Some(Conn {
            grant,
            reply,
            reply_path,
            transport,
        });
        Ok(welcome)
    }
}

/// Counts connection threads.
#[derive(Debug, Default)]
struct Tracker {
    count: parking_lot::Mutex<u64>,
    idle: parking_lot::Condvar,
}

impl Tracker {
    fn leave(&self) {
        let mut n = self.count.lock();
        *n = n.saturating_sub(1);
        if *n == 0 {
            self.idle.notify_all();
        }
    }
}

/// One connection's state after its handshake.
struct Conn {
    grant: SegmentGrant,
    /// The channel file: the ring, and the reply buffer from `ring::DATA_AREA`.
    reply: Arc<SharedFile>,
    reply_path: PathBuf,
    /// How requests travel.
    transport: Transport,
}

/// Compares without stopping at the first difference, so the time taken says nothing
/// of how much of a password was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
