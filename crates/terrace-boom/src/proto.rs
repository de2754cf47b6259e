//! BOOM's messages on the doorbell connection (docs/formats/boom.md, "Doorbell
//! messages"): what a client sends after writing into shared memory, and the server's
//! answers. Frames are a little-endian `u32` length, then that many bytes.
//!
//! Owns: encoding and decoding the messages, with limits. Must not touch: sockets (the
//! caller reads and writes frames) or the store.

use crate::error::{BoomError, Result};
use crate::store::SegmentGrant;

/// Largest frame either side accepts.
pub const MAX_FRAME: usize = 1 << 20;

/// A client's request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// The first message: the password (empty without one), and how the requests after
    /// it travel.
    Hello {
        /// The server's `requirepass`.
        password: Vec<u8>,
        /// How requests travel.
        transport: Transport,
    },
    /// "I appended an entry at `offset` of my segment": the doorbell, carrying only the
    /// offset (RDMA's write-with-immediate).
    Put {
        /// The entry's offset in the segment.
        offset: u64,
        /// Seal this segment after the entry and hand over the next one in the reply.
        next_segment: bool,
    },
    /// The doorbell of a client on another host (`Transport::Remote`): the entry's
    /// bytes travel with it, and the server writes them into the segment at `offset`
    /// (what the NIC would do for a one-sided write) before it commits them.
    PutRemote {
        /// The entry's offset in the segment.
        offset: u64,
        /// Seal this segment after the entry and hand over the next one in the reply.
        next_segment: bool,
        /// The entry, as the client would have written it.
        entry: Vec<u8>,
    },
    /// Look `key` up and copy its value into my reply buffer.
    Get {
        /// The key.
        key: Vec<u8>,
    },
    /// Seal my segment and give me the next one (when a PUT's piggybacked request found
    /// none free, or an entry does not fit what is left).
    Segment,
    /// Two-phase baseline, PUT's first phase: where may I write an entry of `len` bytes?
    Alloc {
        /// The entry's bytes.
        len: u64,
    },
    /// Two-phase baseline, GET's first phase: where is `key`'s value? (The server stages
    /// it in my reply buffer and answers with its length, as a GET does.)
    Lookup {
        /// The key.
        key: Vec<u8>,
    },
    /// Two-phase baseline, GET's second phase: the one-sided read of `len` bytes at
    /// `offset` of my reply buffer, answered with the bytes and no engine work.
    Read {
        /// Where.
        offset: u64,
        /// How many bytes.
        len: u64,
    },
}

/// How a client's requests travel after the handshake.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Transport {
    /// On the socket; entries and values through shared memory (same host).
    Socket,
    /// Through the doorbell ring in shared memory (same host); the socket only says the
    /// client is there.
    #[default]
    Ring,
    /// On the socket only, with entries and values in the messages (another host: the
    /// TCP transport).
    Remote,
}

/// The server's reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// The handshake's answer: the client's segment and where its files are.
    Welcome {
        /// The segment.
        grant: SegmentGrant,
        /// The region file to map.
        region_path: String,
        /// The region file's length.
        region_len: u64,
        /// The client's channel file: the doorbell ring and the reply buffer GET results
        /// are copied into (`ring::DATA_AREA` on).
        reply_path: String,
        /// Its length.
        reply_len: u64,
    },
    /// A PUT is committed with `version` (its sequence number in the engine).
    Put {
        /// The version.
        version: u64,
        /// The next segment, when the PUT asked for it.
        next: Option<SegmentGrant>,
    },
    /// A GET's answer: `None` if the key has no value; otherwise the value's length, and
    /// the value itself inline when it did not fit the reply buffer (else it is there).
    Get {
        /// The value's length, if found.
        len: Option<u64>,
        /// The value, when it is not in the reply buffer.
        inline: Option<Vec<u8>>,
    },
    /// Where the two-phase PUT's entry goes.
    Alloc {
        /// Its offset in the client's segment.
        offset: u64,
    },
    /// The bytes a one-sided read returned.
    Data {
        /// The bytes.
        bytes: Vec<u8>,
    },
    /// The client's next segment.
    Segment {
        /// The segment.
        grant: SegmentGrant,
    },
    /// The request failed; `fatal` when the server closes the connection after it (a
    /// protocol violation).
    Error {
        /// What went wrong.
        message: String,
        /// Whether the connection ends.
        fatal: bool,
    },
}

const HELLO: u8 = 1;
const PUT: u8 = 2;
const GET: u8 = 3;
const SEGMENT: u8 = 4;
const ALLOC: u8 = 5;
const LOOKUP: u8 = 6;
const READ: u8 = 7;
const PUT_REMOTE: u8 = 8;

const WELCOME: u8 = 1;
const PUT_OK: u8 = 2;
const GET_OK: u8 = 3;
const ERROR: u8 = 4;
const SEGMENT_OK: u8 = 5;
const ALLOC_OK: u8 = 6;
const DATA: u8 = 7;

/// Reads little-endian fields from a frame, refusing to read past it.
struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.b.len() < n {
            return Err(BoomError::BadEntry("message cut short".into()));
        }
        let (head, rest) = self.b.split_at(n);
        self.b = rest;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    /// A flag byte: 0 or 1, anything else a violation.
    fn flag(&mut self) -> Result<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            f => Err(BoomError::BadEntry(format!("bad flag {f}"))),
        }
    }

    fn u32(&mut self) -> Result<u32> {
        let mut a = [0u8; 4];
        a.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(a))
    }

    fn u64(&mut self) -> Result<u64> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }

    fn bytes(&mut self) -> Result<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }

    fn string(&mut self) -> Result<String> {
        String::from_utf8(self.bytes()?.to_vec())
            .map_err(|_| BoomError::BadEntry("a path that is not UTF-8".into()))
    }

    fn end(self) -> Result<()> {
        if self.b.is_empty() {
            Ok(())
        } else {
            Err(BoomError::BadEntry("trailing bytes in a message".into()))
        }
    }
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

fn put_grant(out: &mut Vec<u8>, g: &SegmentGrant) {
    out.extend_from_slice(&g.index.to_le_bytes());
    out.extend_from_slice(&g.generation.to_le_bytes());
    out.extend_from_slice(&g.region_offset.to_le_bytes());
    out.extend_from_slice(&g.len.to_le_bytes());
    out.extend_from_slice(&g.start.to_le_bytes());
}

fn grant(r: &mut Reader<'_>) -> Result<SegmentGrant> {
    Ok(SegmentGrant {
        index: r.u32()?,
        generation: r.u64()?,
        region_offset: r.u64()?,
        len: r.u64()?,
        start: r.u64()?,
    })
}

impl Request {
    /// The message's bytes (without the frame's length).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Request::Hello {
                password,
                transport,
            } => {
                out.push(HELLO);
                put_bytes(&mut out, password);
                out.push(match transport {
                    Transport::Socket => 0,
                    Transport::Ring => 1,
                    Transport::Remote => 2,
                });
            }
            Request::PutRemote {
                offset,
                next_segment,
                entry,
            } => {
                out.push(PUT_REMOTE);
                out.extend_from_slice(&offset.to_le_bytes());
                out.push(u8::from(*next_segment));
                put_bytes(&mut out, entry);
            }
            Request::Put {
                offset,
                next_segment,
            } => {
                out.push(PUT);
                out.extend_from_slice(&offset.to_le_bytes());
                out.push(u8::from(*next_segment));
            }
            Request::Get { key } => {
                out.push(GET);
                put_bytes(&mut out, key);
            }
            Request::Segment => out.push(SEGMENT),
            Request::Alloc { len } => {
                out.push(ALLOC);
                out.extend_from_slice(&len.to_le_bytes());
            }
            Request::Lookup { key } => {
                out.push(LOOKUP);
                put_bytes(&mut out, key);
            }
            Request::Read { offset, len } => {
                out.push(READ);
                out.extend_from_slice(&offset.to_le_bytes());
                out.extend_from_slice(&len.to_le_bytes());
            }
        }
        out
    }

    /// The request in `frame`.
    ///
    /// # Errors
    /// `BadEntry` for an unknown kind, a short or overlong message.
    pub fn decode(frame: &[u8]) -> Result<Request> {
        let mut r = Reader { b: frame };
        let req = match r.u8()? {
            HELLO => Request::Hello {
                password: r.bytes()?.to_vec(),
                transport: match r.u8()? {
                    0 => Transport::Socket,
                    1 => Transport::Ring,
                    2 => Transport::Remote,
                    f => return Err(BoomError::BadEntry(format!("unknown transport {f}"))),
                },
            },
            PUT_REMOTE => Request::PutRemote {
                offset: r.u64()?,
                next_segment: r.flag()?,
                entry: r.bytes()?.to_vec(),
            },
            PUT => Request::Put {
                offset: r.u64()?,
                next_segment: r.flag()?,
            },
            GET => Request::Get {
                key: r.bytes()?.to_vec(),
            },
            SEGMENT => Request::Segment,
            ALLOC => Request::Alloc { len: r.u64()? },
            LOOKUP => Request::Lookup {
                key: r.bytes()?.to_vec(),
            },
            READ => Request::Read {
                offset: r.u64()?,
                len: r.u64()?,
            },
            k => return Err(BoomError::BadEntry(format!("unknown request kind {k}"))),
        };
        r.end()?;
        Ok(req)
    }
}

impl Reply {
    /// The message's bytes (without the frame's length).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Reply::Welcome {
                grant,
                region_path,
                region_len,
                reply_path,
                reply_len,
            } => {
                out.push(WELCOME);
                put_grant(&mut out, grant);
                put_bytes(&mut out, region_path.as_bytes());
                out.extend_from_slice(&region_len.to_le_bytes());
                put_bytes(&mut out, reply_path.as_bytes());
                out.extend_from_slice(&reply_len.to_le_bytes());
            }
            Reply::Put { version, next } => {
                out.push(PUT_OK);
                out.extend_from_slice(&version.to_le_bytes());
                match next {
                    Some(g) => {
                        out.push(1);
                        put_grant(&mut out, g);
                    }
                    None => out.push(0),
                }
            }
            Reply::Get { len, inline } => {
                out.push(GET_OK);
                match len {
                    Some(n) => {
                        out.push(1);
                        out.extend_from_slice(&n.to_le_bytes());
                    }
                    None => out.push(0),
                }
                match inline {
                    Some(v) => {
                        out.push(1);
                        put_bytes(&mut out, v);
                    }
                    None => out.push(0),
                }
            }
            Reply::Segment { grant } => {
                out.push(SEGMENT_OK);
                put_grant(&mut out, grant);
            }
            Reply::Alloc { offset } => {
                out.push(ALLOC_OK);
                out.extend_from_slice(&offset.to_le_bytes());
            }
            Reply::Data { bytes } => {
                out.push(DATA);
                put_bytes(&mut out, bytes);
            }
            Reply::Error { message, fatal } => {
                out.push(ERROR);
                out.push(u8::from(*fatal));
                put_bytes(&mut out, message.as_bytes());
            }
        }
        out
    }

    /// The reply in `frame`.
    ///
    /// # Errors
    /// `BadEntry` for an unknown kind, a short or overlong message.
    pub fn decode(frame: &[u8]) -> Result<Reply> {
        let mut r = Reader { b: frame };
        let reply = match r.u8()? {
            WELCOME => Reply::Welcome {
                grant: grant(&mut r)?,
                region_path: r.string()?,
                region_len: r.u64()?,
                reply_path: r.string()?,
                reply_len: r.u64()?,
            },
            PUT_OK => {
                let version = r.u64()?;
                let next = if r.flag()? {
                    Some(grant(&mut r)?)
                } else {
                    None
                };
                Reply::Put { version, next }
            }
            GET_OK => {
                let len = if r.flag()? { Some(r.u64()?) } else { None };
                let inline = if r.flag()? {
                    Some(r.bytes()?.to_vec())
                } else {
                    None
                };
                Reply::Get { len, inline }
            }
            SEGMENT_OK => Reply::Segment {
                grant: grant(&mut r)?,
            },
            ALLOC_OK => Reply::Alloc { offset: r.u64()? },
            DATA => Reply::Data {
                bytes: r.bytes()?.to_vec(),
            },
            ERROR => {
                let fatal = r.flag()?;
                Reply::Error {
                    fatal,
                    message: String::from_utf8_lossy(r.bytes()?).into_owned(),
                }
            }
            k => return Err(BoomError::BadEntry(format!("unknown reply kind {k}"))),
        };
        r.end()?;
        Ok(reply)
    }
}

/// Writes `msg` as one frame.
///
/// # Errors
/// I/O errors.
pub fn write_frame(w: &mut impl std::io::Write, msg: &[u8]) -> std::io::Result<()> {
    let mut frame = Vec::with_capacity(4 + msg.len());
    frame.extend_from_slice(&(msg.len() as u32).to_le_bytes());
    frame.extend_from_slice(msg);
    w.write_all(&frame)?;
    w.flush()
}

/// Reads one frame into `buf`; `Ok(false)` at a clean end of stream.
///
/// # Errors
/// I/O errors; `InvalidData` for a frame over [`MAX_FRAME`].
pub fn read_frame(r: &mut impl std::io::Read, buf: &mut Vec<u8>) -> std::io::Result<bool> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(false),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes (at most {MAX_FRAME})"),
        ));
    }
    buf.resize(len, 0);
    r.read_exact(buf)?;
    Ok(true)
}

#[cfg(test)]
mod tests;
