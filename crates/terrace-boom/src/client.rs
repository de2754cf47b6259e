//! A client's side of BOOM over a Unix socket on the server's host: it maps its segment
//! of the server's region and its reply buffer, appends each PUT's entry into the
//! segment itself and rings the doorbell with the offset, and reads each GET's value
//! from the reply buffer the server copied it into. One round trip per request.
//!
//! Owns: a connection, its segment mapping and append point. Must not touch: the
//! server's files beyond its segment and reply buffer.
//! Concurrency: a client is used by one thread at a time (`&mut self`); a pool hands
//! clients to threads.

use std::os::unix::net::UnixStream;
use std::path::Path;

use crate::error::{BoomError, Result};
use crate::layout::{encode_entry, entry_alloc_len};
use crate::proto::{read_frame, write_frame, Reply, Request, Transport};
use crate::ring::{Ring, DATA_AREA};
use crate::shm::SharedFile;
use crate::store::SegmentGrant;

/// How a client talks to the server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mode {
    /// BOOM: one round trip per PUT and per GET.
    #[default]
    Boom,
    /// The two-phase baseline the paper measures against (RDMP-KV's shape): a metadata
    /// round trip first (PUT: where to write; GET: where the value is), then the data
    /// (PUT: the entry and its doorbell; GET: a one-sided read).
    TwoPhase,
}

/// How a client connects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientOptions {
    /// BOOM or the two-phase baseline.
    pub mode: Mode,
    /// How requests travel: the doorbell ring (default), the socket with shared
    /// memory, or the socket alone (`Remote`: another host, `connect_tcp`).
    pub transport: Transport,
    /// How long to poll the ring for a response before sleeping on it.
    pub spin: std::time::Duration,
    /// The hybrid update: overwrite the older of a key's last two versions in place
    /// when the new entry fits it (else every PUT appends).
    pub hybrid: bool,
    /// A wire to model: every round trip also takes this long (spent polling before
    /// the request is posted), as a network round trip would on top of the shared
    /// memory's. Zero: none.
    pub round_trip_delay: std::time::Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            mode: Mode::Boom,
            transport: Transport::Ring,
            spin: std::time::Duration::from_micros(50),
            hybrid: true,
            round_trip_delay: std::time::Duration::ZERO,
        }
    }
}

/// How long a client waits for a response before it gives the server up.
const RESPONSE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// How often a client waiting on the ring checks that the server's socket is still
/// open (a server that died answers nothing; its closed socket says so at once).
const LIVENESS_CHECK: std::time::Duration = std::time::Duration::from_millis(20);

/// RDMA verbs the same exchanges would post on real hardware, counted per kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Verbs {
    /// Two-sided sends (requests and replies), either side.
    pub sends: u64,
    /// One-sided writes without a completion at the target.
    pub writes: u64,
    /// One-sided writes with immediate (a write that also completes at the target).
    pub write_imms: u64,
    /// One-sided reads.
    pub reads: u64,
}

impl Verbs {
    /// Every verb.
    pub fn total(&self) -> u64 {
        self.sends + self.writes + self.write_imms + self.reads
    }
}

/// An entry of this client's segment: where, its bytes, its version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot {
    offset: u64,
    alloc_len: u64,
    version: u64,
}

/// Segment space a client's PUTs used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpaceUse {
    /// Bytes appended to segments.
    pub appended_bytes: u64,
    /// Bytes written in place over older versions (no new space).
    pub in_place_bytes: u64,
}

/// A connected BOOM client. See the module docs.
#[derive(Debug)]
pub struct BoomClient {
    mode: Mode,
    /// Per key, its last two versions in the current segment (newest first).
    versions: std::collections::HashMap<Vec<u8>, (Slot, Option<Slot>)>,
    space: SpaceUse,
    options: ClientOptions,
    /// The channel file (ring and reply buffer), mapped; `None` for a remote client.
    reply: Option<SharedFile>,
    /// The last response sequence number seen on the ring.
    last_response: u32,
    verbs: Verbs,
    round_trips: u64,
    stream: Box<dyn Wire>,
    region_path: std::path::PathBuf,
    grant: SegmentGrant,
    /// The segment, mapped; `None` for a remote client (the server writes its entries).
    segment: Option<SharedFile>,
    /// Where the next entry goes in the segment.
    at: u64,
    frame: Vec<u8>,
}

/// A connection to the server: a Unix or TCP stream.
trait Wire: std::io::Read + std::io::Write + Send + std::fmt::Debug {
    /// Whether the server has closed the connection, asked without blocking. Only for a
    /// socket that carries no bytes while the ring is in use.
    fn peer_closed(&mut self) -> std::io::Result<bool>;
}

impl Wire for UnixStream {
    fn peer_closed(&mut self) -> std::io::Result<bool> {
        self.set_nonblocking(true)?;
        let mut probe = [0u8; 1];
        let r = std::io::Read::read(self, &mut probe);
        self.set_nonblocking(false)?;
        match r {
            Ok(n) => Ok(n == 0),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(false),
            Err(e) => Err(e),
        }
    }
}

impl Wire for std::net::TcpStream {
    fn peer_closed(&mut self) -> std::io::Result<bool> {
        self.set_nonblocking(true)?;
        let mut probe = [0u8; 1];
        let r = self.peek(&mut probe);
        self.set_nonblocking(false)?;
        match r {
            Ok(n) => Ok(n == 0),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(false),
            Err(e) => Err(e),
        }
    }
}

fn io(source: std::io::Error) -> BoomError {
    BoomError::Io {
        path: "<boom connection>".into(),
        source,
    }
}

impl BoomClient {
    /// Connects to the server's socket at `path` with `password` (empty without one).
    ///
    /// # Errors
    /// I/O errors; `Remote` if the server refuses (a wrong password, no free segment).
    pub fn connect_unix(path: &Path, password: &[u8]) -> Result<BoomClient> {
        Self::connect_unix_mode(path, password, Mode::Boom)
    }

    /// [`BoomClient::connect_unix`] speaking `mode`.
    ///
    /// # Errors
    /// As [`BoomClient::connect_unix`].
    pub fn connect_unix_mode(path: &Path, password: &[u8], mode: Mode) -> Result<BoomClient> {
        Self::connect_unix_with(
            path,
            password,
            ClientOptions {
                mode,
                ..ClientOptions::default()
            },
        )
    }

    /// [`BoomClient::connect_unix`] with `options`.
    ///
    /// # Errors
    /// As [`BoomClient::connect_unix`].
    pub fn connect_unix_with(
        path: &Path,
        password: &[u8],
        options: ClientOptions,
    ) -> Result<BoomClient> {
        let stream = UnixStream::connect(path).map_err(|source| BoomError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::handshake(Box::new(stream), password, options)
    }

    /// Connects over TCP to a server's `--boom-port` at `addr` (`host:port`): entries
    /// and values travel in the messages (`Transport::Remote`), one round trip each.
    ///
    /// # Errors
    /// As [`BoomClient::connect_unix`].
    pub fn connect_tcp(addr: &str, password: &[u8], options: ClientOptions) -> Result<BoomClient> {
        let stream = std::net::TcpStream::connect(addr).map_err(|source| BoomError::Io {
            path: addr.into(),
            source,
        })?;
        stream.set_nodelay(true).map_err(io)?;
        let options = ClientOptions {
            transport: Transport::Remote,
            ..options
        };
        Self::handshake(Box::new(stream), password, options)
    }

    fn handshake(
        mut stream: Box<dyn Wire>,
        password: &[u8],
        options: ClientOptions,
    ) -> Result<BoomClient> {
        let mut frame = Vec::new();
        let hello = Request::Hello {
            password: password.to_vec(),
            transport: options.transport,
        };
        write_frame(&mut stream, &hello.encode()).map_err(io)?;
        match read_reply(&mut stream, &mut frame)? {
            Reply::Welcome {
                grant,
                region_path,
                reply_path,
                reply_len,
                ..
            } => {
                let region_path = std::path::PathBuf::from(region_path);
                let shared = options.transport != Transport::Remote;
                let segment = match shared {
                    true => Some(SharedFile::open_range(
                        &region_path,
                        grant.region_offset,
                        grant.len,
                    )?),
                    false => None,
                };
                let reply = match shared {
                    true => Some(SharedFile::open_range(
                        Path::new(&reply_path),
                        0,
                        reply_len,
                    )?),
                    false => None,
                };
                Ok(BoomClient {
                    mode: options.mode,
                    versions: std::collections::HashMap::new(),
                    space: SpaceUse::default(),
                    options,
                    // A new channel file starts at zero: no response before a request.
                    last_response: 0,
                    verbs: Verbs::default(),
                    round_trips: 1,
                    stream,
                    region_path,
                    grant,
                    segment,
                    at: grant.start,
                    reply,
                    frame,
                })
            }
            other => Err(unexpected(&other)),
        }
    }

    /// Writes `key = value`; returns its version (the engine's sequence number).
    ///
    /// # Errors
    /// `Remote` if the server refuses; `NoFreeSegment` if the entry needs a new segment
    /// and none is free; I/O errors.
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<u64> {
        let len = u64::from(
            entry_alloc_len(key.len(), value.len())
                .ok_or_else(|| BoomError::InvalidArgument("entry too long".into()))?,
        );
        if len > self.grant.len {
            return Err(BoomError::InvalidArgument(format!(
                "an entry of {len} bytes does not fit a segment of {}",
                self.grant.len
            )));
        }
        if self.mode == Mode::TwoPhase {
            return self.put_two_phase(key, value, len);
        }
        match self.put_once(key, value, len) {
            // The segment's commit records ran out before its bytes: move on once.
            Err(BoomError::SegmentFull) => {
                self.next_segment()?;
                self.put_once(key, value, len)
            }
            r => r,
        }
    }

    /// One BOOM PUT: in place over the older of the key's last two versions in this
    /// segment when the hybrid update allows it, else appended.
    fn put_once(&mut self, key: &[u8], value: &[u8], len: u64) -> Result<u64> {
        let slots = self.versions.get(key).copied();
        let in_place = match slots {
            Some((_, Some(second))) if self.options.hybrid && len <= second.alloc_len => {
                Some(second)
            }
            _ => None,
        };
        if in_place.is_none() && self.at + len > self.grant.len {
            self.next_segment()?;
        }
        let (offset, alloc) = match in_place {
            Some(slot) => (slot.offset, slot.alloc_len),
            None => (self.at, len),
        };
        let entry = encode_entry(key, value, offset as u32, alloc as u32)?;
        // Ask for the next segment in the same round trip once this one is nearly full.
        let next_segment =
            in_place.is_none() && self.at + 2 * len + self.grant.len / 16 > self.grant.len;
        let req = self.doorbell(offset, next_segment, entry)?;
        // The entry and its doorbell: one write with immediate; the reply: one send.
        self.verbs.write_imms += 1;
        self.verbs.sends += 1;
        match self.call(&req)? {
            Reply::Put { version, next } => {
                let slot = Slot {
                    offset,
                    alloc_len: alloc,
                    version,
                };
                match in_place {
                    Some(_) => self.space.in_place_bytes += alloc,
                    None => {
                        self.at += alloc;
                        self.space.appended_bytes += alloc;
                    }
                }
                let first = slots.map(|(first, _)| first);
                self.versions.insert(key.to_vec(), (slot, first));
                if let Some(g) = next {
                    self.switch_to(g)?;
                }
                Ok(version)
            }
            other => Err(unexpected(&other)),
        }
    }

    /// The two-phase PUT: ask where, then write and ring.
    fn put_two_phase(&mut self, key: &[u8], value: &[u8], len: u64) -> Result<u64> {
        self.verbs.sends += 2;
        let offset = match self.call(&Request::Alloc { len }) {
            Ok(Reply::Alloc { offset }) => offset,
            Err(BoomError::SegmentFull) => {
                self.next_segment()?;
                self.verbs.sends += 2;
                match self.call(&Request::Alloc { len })? {
                    Reply::Alloc { offset } => offset,
                    other => return Err(unexpected(&other)),
                }
            }
            Ok(other) => return Err(unexpected(&other)),
            Err(e) => return Err(e),
        };
        let entry = encode_entry(key, value, offset as u32, len as u32)?;
        let req = self.doorbell(offset, false, entry)?;
        self.verbs.write_imms += 1;
        self.verbs.sends += 1;
        match self.call(&req)? {
            Reply::Put { version, .. } => {
                self.at = offset + len;
                self.space.appended_bytes += len;
                Ok(version)
            }
            other => Err(unexpected(&other)),
        }
    }

    /// The value of `key`, or `None`.
    ///
    /// # Errors
    /// `Remote` if the server refuses; I/O errors.
    pub fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let req = match self.mode {
            Mode::Boom => Request::Get { key: key.to_vec() },
            Mode::TwoPhase => Request::Lookup { key: key.to_vec() },
        };
        // The request: one send; the answer: the value pushed with a write with immediate
        // (BOOM), or the value's location in a send (two-phase).
        self.verbs.sends += 1;
        match self.mode {
            Mode::Boom => self.verbs.write_imms += 1,
            Mode::TwoPhase => self.verbs.sends += 1,
        }
        match self.call(&req)? {
            Reply::Get { len: None, .. } => Ok(None),
            Reply::Get {
                inline: Some(v), ..
            } => Ok(Some(v)),
            Reply::Get {
                len: Some(n),
                inline: None,
            } => match self.mode {
                Mode::Boom => {
                    let n = usize::try_from(n)
                        .map_err(|_| BoomError::Remote("a value longer than memory".into()))?;
                    let reply = self.reply.as_ref().ok_or_else(|| {
                        BoomError::Remote("a value left in a buffer a remote client has not".into())
                    })?;
                    Ok(Some(reply.read_vec(DATA_AREA, n)?))
                }
                Mode::TwoPhase => {
                    self.verbs.reads += 1;
                    match self.call(&Request::Read { offset: 0, len: n })? {
                        Reply::Data { bytes } => Ok(Some(bytes)),
                        other => Err(unexpected(&other)),
                    }
                }
            },
            other => Err(unexpected(&other)),
        }
    }

    /// The segment space this client's PUTs used.
    pub fn space(&self) -> SpaceUse {
        self.space
    }

    /// The verbs this client's requests would have posted on RDMA hardware so far.
    pub fn verbs(&self) -> Verbs {
        self.verbs
    }

    /// Round trips made so far (the handshake included).
    pub fn round_trips(&self) -> u64 {
        self.round_trips
    }

    /// The segment this client appends to.
    pub fn segment(&self) -> SegmentGrant {
        self.grant
    }

    fn next_segment(&mut self) -> Result<()> {
        self.verbs.sends += 2;
        match self.call(&Request::Segment)? {
            Reply::Segment { grant } => self.switch_to(grant),
            other => Err(unexpected(&other)),
        }
    }

    /// Writes `entry` at `offset` of the segment and returns the doorbell for it; a
    /// remote client's doorbell carries the entry instead.
    fn doorbell(&mut self, offset: u64, next_segment: bool, entry: Vec<u8>) -> Result<Request> {
        Ok(match &self.segment {
            Some(segment) => {
                segment.write(offset, &entry)?;
                Request::Put {
                    offset,
                    next_segment,
                }
            }
            None => Request::PutRemote {
                offset,
                next_segment,
                entry,
            },
        })
    }

    fn switch_to(&mut self, grant: SegmentGrant) -> Result<()> {
        // The table of versions is the segment's: entries elsewhere are not ours to
        // overwrite.
        self.versions.clear();
        if self.segment.is_some() {
            self.segment = Some(SharedFile::open_range(
                &self.region_path,
                grant.region_offset,
                grant.len,
            )?);
        }
        self.grant = grant;
        self.at = grant.start;
        Ok(())
    }

    fn call(&mut self, req: &Request) -> Result<Reply> {
        self.round_trips += 1;
        if !self.options.round_trip_delay.is_zero() {
            let start = std::time::Instant::now();
            while start.elapsed() < self.options.round_trip_delay {
                crate::ring::pause(start);
            }
        }
        let ring_file = match (&self.reply, self.options.transport) {
            (Some(f), Transport::Ring) => f,
            _ => {
                write_frame(&mut self.stream, &req.encode()).map_err(io)?;
                return read_reply(&mut self.stream, &mut self.frame);
            }
        };
        let ring = Ring::new(ring_file);
        ring.post_request(&req.encode())?;
        let start = std::time::Instant::now();
        loop {
            let waited =
                ring.wait_response(self.last_response, self.options.spin, LIVENESS_CHECK)?;
            if let Some((seq, frame)) = waited {
                self.last_response = seq;
                return decode_reply(&frame);
            }
            if self.stream.peer_closed().map_err(io)? {
                return Err(BoomError::Remote("the server closed the connection".into()));
            }
            if start.elapsed() >= RESPONSE_TIMEOUT {
                return Err(BoomError::Remote("the server did not answer".into()));
            }
        }
    }
}

fn read_reply(stream: &mut Box<dyn Wire>, frame: &mut Vec<u8>) -> Result<Reply> {
    if !read_frame(stream, frame).map_err(io)? {
        return Err(BoomError::Remote("the server closed the connection".into()));
    }
    decode_reply(frame)
}

/// A reply, with the server's refusals as errors.
fn decode_reply(frame: &[u8]) -> Result<Reply> {
    match Reply::decode(frame)? {
        Reply::Error { message, .. } if message.contains("no free segment") => {
            Err(BoomError::NoFreeSegment)
        }
        Reply::Error { message, .. } if message.contains("no room in the segment") => {
            Err(BoomError::SegmentFull)
        }
        Reply::Error { message, .. } => Err(BoomError::Remote(message)),
        r => Ok(r),
    }
}

fn unexpected(r: &Reply) -> BoomError {
    BoomError::Remote(format!("unexpected reply {r:?}"))
}
