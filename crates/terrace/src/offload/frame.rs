//! The compaction workers' frame (docs/formats/compaction-frame.md): every message between a
//! database and a compaction worker is one frame, on TCP or a Unix socket.
//!
//! ```text
//! magic "TCF1" (4) | type (1) | flags (1) | reserved, 0 (2) | payload length (u32 LE)
//! | payload | CRC32C of everything before it (u32 LE)
//! ```
//!
//! Owns: encoding and decoding frames, and refusing any frame that is not whole and intact.
//! Must not touch: what payloads mean (the client and the worker decide).
//! Concurrency: plain functions over a reader or writer.

use std::io::{Read, Write};

use crate::error::{Error, Result};

/// The four bytes every frame starts with.
pub const MAGIC: [u8; 4] = *b"TCF1";
/// Header bytes before the payload.
pub const HEADER_LEN: usize = 12;
/// The largest payload a frame may carry (a task names its inputs; 64 MiB is far more
/// than any task's description).
pub const MAX_PAYLOAD: u32 = 64 << 20;

/// What a frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameType {
    /// Client to worker: the shared secret (payload), first frame of a connection.
    Hello = 1,
    /// Worker to client: the secret matched; payload is the worker's description (JSON).
    Welcome = 2,
    /// Client to worker: a compaction task (docs/formats/compaction-task.md).
    Task = 3,
    /// Worker to client: the task's result (docs/formats/compaction-task.md).
    Result = 4,
    /// Either way: a refusal or a failure; payload is a UTF-8 message.
    Error = 5,
    /// Worker to client, before a task's result: one output file finished, with where
    /// the next output starts (`compaction::FinishedOutput`, JSON), so that the client
    /// can take the task over from there if the worker goes away.
    Progress = 6,
}

impl FrameType {
    fn from_u8(b: u8) -> Option<FrameType> {
        Some(match b {
            1 => FrameType::Hello,
            2 => FrameType::Welcome,
            3 => FrameType::Task,
            4 => FrameType::Result,
            5 => FrameType::Error,
            6 => FrameType::Progress,
            _ => return None,
        })
    }
}

/// One decoded frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// What it carries.
    pub kind: FrameType,
    /// Flags; none are defined, and a frame with any set is refused.
    pub flags: u8,
    /// The payload.
    pub payload: Vec<u8>,
}

impl Frame {
    /// A frame of `kind` with no flags.
    pub fn new(kind: FrameType, payload: Vec<u8>) -> Frame {
        Frame {
            kind,
            flags: 0,
            payload,
        }
    }

    /// The frame's bytes.
    ///
    /// # Errors
    /// `InvalidArgument` for a payload over [`MAX_PAYLOAD`].
    pub fn encode(&self) -> Result<Vec<u8>> {
        let len = u32::try_from(self.payload.len())
            .ok()
            .filter(|l| *l <= MAX_PAYLOAD)
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "a frame payload of {} bytes is over the limit of {MAX_PAYLOAD}",
                    self.payload.len()
                ))
            })?;
        let mut out = Vec::with_capacity(HEADER_LEN + self.payload.len() + 4);
        out.extend_from_slice(&MAGIC);
        out.push(self.kind as u8);
        out.push(self.flags);
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&self.payload);
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        Ok(out)
    }

    /// Writes the frame and flushes.
    ///
    /// # Errors
    /// Those of [`Frame::encode`]; I/O errors of `w` (named `peer`).
    pub fn write_to(&self, w: &mut impl Write, peer: &str) -> Result<()> {
        let bytes = self.encode()?;
        w.write_all(&bytes)
            .and_then(|()| w.flush())
            .map_err(|e| Error::io(peer, e))
    }

    /// Reads one whole frame.
    ///
    /// # Errors
    /// `Corruption` (file `peer`) for a wrong magic, an unknown type, flags or reserved
    /// bytes set, a length over [`MAX_PAYLOAD`] or a checksum mismatch; an I/O error for a
    /// connection that ends or fails, mid-frame included.
    pub fn read_from(r: &mut impl Read, peer: &str) -> Result<Frame> {
        let mut header = [0u8; HEADER_LEN];
        r.read_exact(&mut header).map_err(|e| Error::io(peer, e))?;
        let bad = |offset: u64, reason: &str| Error::corruption(peer, offset, reason.to_string());
        if header[..4] != MAGIC {
            return Err(bad(0, "not a compaction frame (wrong magic)"));
        }
        let kind = FrameType::from_u8(header[4]).ok_or_else(|| bad(4, "unknown frame type"))?;
        let flags = header[5];
        if flags != 0 || header[6..8] != [0, 0] {
            return Err(bad(5, "unknown flags or reserved bytes set"));
        }
        let mut len_bytes = [0u8; 4];
        len_bytes.copy_from_slice(&header[8..12]);
        let len = u32::from_le_bytes(len_bytes);
        if len > MAX_PAYLOAD {
            return Err(bad(8, "payload length over the limit"));
        }
        let mut rest = vec![0u8; len as usize + 4];
        r.read_exact(&mut rest).map_err(|e| Error::io(peer, e))?;
        let split = rest.len() - 4;
        let (payload, crc_bytes) = rest.split_at(split);
        let mut crc = [0u8; 4];
        crc.copy_from_slice(crc_bytes);
        let want = crc32c::crc32c_append(crc32c::crc32c(&header), payload);
        if u32::from_le_bytes(crc) != want {
            return Err(bad((HEADER_LEN + split) as u64, "frame checksum mismatch"));
        }
        rest.truncate(split);
        Ok(Frame {
            kind,
            flags,
            payload: rest,
        })
    }
}

#[cfg(test)]
mod tests;
