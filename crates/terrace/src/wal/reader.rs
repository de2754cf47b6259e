//! The log reader: reassembles records from fragments, block by block, and tells a torn
//! tail (damage with nothing valid after it) from corruption in the middle of the log.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::record::{decode_header, fragment_crc, valid_fragment_at, RecordType};
use super::record::{BLOCK_SIZE, HEADER_SIZE};
use crate::error::Result;
use crate::storage::{IoClass, ReadableFile};

const BLOCK: u64 = BLOCK_SIZE as u64;

/// What [`LogReader::read_record`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadOutcome {
    /// A whole record whose every fragment passed its checksum.
    Record {
        /// The record's bytes.
        data: Vec<u8>,
        /// File offset of the record's first fragment header.
        offset: u64,
    },
    /// The log ended cleanly.
    Eof,
    /// A record could not be read; the reader has moved past it.
    Corrupt {
        /// File offset of the first byte of the lost record (its first fragment
        /// header when known): everything before it was returned intact.
        offset: u64,
        /// What was wrong, and where it was detected.
        reason: String,
        /// True for a torn write at the end of the log: no fragment with a valid
        /// checksum follows the damage. After a tail corruption the reader returns `Eof`.
        tail: bool,
    },
}

/// What the fragment layer found at the reader's position.
enum Fragment {
    /// A fragment with a valid checksum; its payload is `block[start..end]`.
    Ok {
        kind: RecordType,
        offset: u64,
        start: usize,
        end: usize,
    },
    Eof,
    /// Header or payload cut off by the end of the file.
    Truncated {
        offset: u64,
    },
    /// A damaged fragment. `next` is where the following header is, if the damaged
    /// header's length is believable.
    Bad {
        offset: u64,
        reason: &'static str,
        next: Option<u64>,
    },
}

/// Reads the records of one log file in order, 32 KiB at a time with positional reads.
/// `Send + Sync`; used by one thread at a time.
pub struct LogReader {
    file: Arc<dyn ReadableFile>,
    path: PathBuf,
    file_len: u64,
    /// The block being read (shorter than `BLOCK_SIZE` only at the end of the file).
    block: Vec<u8>,
    /// File offset of `block[0]`.
    block_start: u64,
    /// Position in `block` of the next fragment header.
    pos: usize,
    /// After damage: skip middle and last fragments of the lost record.
    resyncing: bool,
    /// Set at the end of the log and after a tail corruption.
    finished: bool,
}

impl LogReader {
    /// A reader of `file`, whose name `path` is used in reports.
    pub fn new(file: Arc<dyn ReadableFile>, path: PathBuf) -> Self {
        let file_len = file.len();
        LogReader {
            file,
            path,
            file_len,
            block: Vec::with_capacity(BLOCK_SIZE),
            block_start: 0,
            pos: 0,
            resyncing: false,
            finished: false,
        }
    }

    /// The file being read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the next record. Damage is reported as [`ReadOutcome::Corrupt`], after which
    /// reading continues with the next intact record (or ends, for a torn tail).
    ///
    /// # Errors
    /// Only I/O errors of the file; corruption is an outcome, not an error.
    pub fn read_record(&mut self) -> Result<ReadOutcome> {
        if self.finished {
            return Ok(ReadOutcome::Eof);
        }
        // The record being assembled: its offset and the bytes so far.
        let mut partial: Option<(u64, Vec<u8>)> = None;
        loop {
            let (kind, offset, start, end) = match self.read_fragment()? {
                Fragment::Ok {
                    kind,
                    offset,
                    start,
                    end,
                } => (kind, offset, start, end),
                Fragment::Eof => {
                    self.finished = true;
                    return Ok(match partial {
                        Some((s, _)) => tail_corrupt(s, "log ends inside a fragmented record"),
                        None => ReadOutcome::Eof,
                    });
                }
                Fragment::Truncated { offset } => {
                    self.finished = true;
                    let at = partial.map_or(offset, |(s, _)| s);
                    return Ok(tail_corrupt(
                        at,
                        &format!("fragment at byte {offset} cut off by the end of the log"),
                    ));
                }
                Fragment::Bad {
                    offset,
                    reason,
                    next,
                } => {
                    let at = partial.map_or(offset, |(s, _)| s);
                    return self.damaged(at, offset, reason, next);
                }
            };
            if self.resyncing {
                if matches!(kind, RecordType::Middle | RecordType::Last) {
                    continue;
                }
                self.resyncing = false;
            }
            let payload = self.block.get(start..end).unwrap_or_default();
            match (kind, partial.as_mut()) {
                (RecordType::Full, None) => {
                    return Ok(ReadOutcome::Record {
                        data: payload.to_vec(),
                        offset,
                    })
                }
                (RecordType::First, None) => partial = Some((offset, payload.to_vec())),
                (RecordType::Middle, Some((_, buf))) => buf.extend_from_slice(payload),
                (RecordType::Last, Some((s, buf))) => {
                    buf.extend_from_slice(payload);
                    return Ok(ReadOutcome::Record {
                        data: std::mem::take(buf),
                        offset: *s,
                    });
                }
                (RecordType::Full | RecordType::First, Some((s, _))) => {
                    // A record starts before the previous one ended: report the lost
                    // record now and read this fragment again next time.
                    let s = *s;
                    self.seek_to(offset)?;
                    return Ok(ReadOutcome::Corrupt {
                        offset: s,
                        reason: format!("record has no last fragment before byte {offset}"),
                        tail: false,
                    });
                }
                (RecordType::Middle | RecordType::Last, None) => {
                    let next = offset + (HEADER_SIZE + end - start) as u64;
                    return self.damaged(
                        offset,
                        offset,
                        "fragment without a first fragment",
                        Some(next),
                    );
                }
            }
        }
    }

    /// Reports damage found at `frag_offset` in a record starting at `record_offset`,
    /// and moves to the first valid fragment after it, if there is one.
    fn damaged(
        &mut self,
        record_offset: u64,
        frag_offset: u64,
        reason: &str,
        next: Option<u64>,
    ) -> Result<ReadOutcome> {
        let reason = format!("{reason} at byte {frag_offset}");
        match self.find_valid_fragment(frag_offset, next)? {
            Some(p) => {
                self.seek_to(p)?;
                self.resyncing = true;
                Ok(ReadOutcome::Corrupt {
                    offset: record_offset,
                    reason,
                    tail: false,
                })
            }
            None => {
                self.finished = true;
                Ok(tail_corrupt(record_offset, &reason))
            }
        }
    }

    /// The offset of the first fragment with a valid checksum after the damaged one at
    /// `frag_offset`: first along the damaged block's chain from `next`, then along the
    /// chain of each later block (every block starts with a fragment header).
    fn find_valid_fragment(&self, frag_offset: u64, next: Option<u64>) -> Result<Option<u64>> {
        let block_start = frag_offset - frag_offset % BLOCK;
        if let Some(n) = next.filter(|n| *n >= self.block_start) {
            if let Some(p) = scan_chain(&self.block, (n - self.block_start) as usize) {
                return Ok(Some(self.block_start + p as u64));
            }
        }
        let mut buf = Vec::new();
        let mut b = block_start + BLOCK;
        while b < self.file_len {
            buf.resize((self.file_len - b).min(BLOCK) as usize, 0);
            self.file.read_exact_at(b, &mut buf, IoClass::Wal)?;
            if let Some(p) = scan_chain(&buf, 0) {
                return Ok(Some(b + p as u64));
            }
            b += BLOCK;
        }
        Ok(None)
    }

    /// Positions the reader on the fragment header at file offset `p`.
    fn seek_to(&mut self, p: u64) -> Result<()> {
        let start = p - p % BLOCK;
        if start != self.block_start || self.block.is_empty() {
            self.load_block(start)?;
        }
        self.pos = (p - start) as usize;
        Ok(())
    }

    fn load_block(&mut self, start: u64) -> Result<()> {
        let n = self.file_len.saturating_sub(start).min(BLOCK) as usize;
        self.block.resize(n, 0);
        self.file
            .read_exact_at(start, &mut self.block, IoClass::Wal)?;
        self.block_start = start;
        self.pos = 0;
        Ok(())
    }

    fn read_fragment(&mut self) -> Result<Fragment> {
        loop {
            let remaining = self.block.len().saturating_sub(self.pos);
            if remaining < HEADER_SIZE {
                let block_end = self.block_start + self.block.len() as u64;
                if block_end >= self.file_len {
                    let offset = self.block_start + self.pos as u64;
                    self.pos = self.block.len();
                    // A short final block ends where the file was cut; leftover bytes
                    // there are a partial header. A full block's tail is padding.
                    if remaining > 0 && self.block.len() < BLOCK_SIZE {
                        return Ok(Fragment::Truncated { offset });
                    }
                    return Ok(Fragment::Eof);
                }
                self.load_block(block_end)?;
                continue;
            }
            let offset = self.block_start + self.pos as u64;
            let rest = self.block.get(self.pos..).unwrap_or_default();
            let Some(h) = decode_header(rest) else {
                return Ok(Fragment::Truncated { offset });
            };
            let start = self.pos + HEADER_SIZE;
            let end = start + h.len;
            let next = Some(offset + (HEADER_SIZE + h.len) as u64);
            if end > BLOCK_SIZE {
                self.pos = self.block.len();
                return Ok(Fragment::Bad {
                    offset,
                    reason: "fragment length passes the block end",
                    next: None,
                });
            }
            let Some(payload) = self.block.get(start..end) else {
                // Only the final, short block can end before a fragment does.
                self.pos = self.block.len();
                return Ok(Fragment::Truncated { offset });
            };
            if fragment_crc(h.kind, payload) != h.crc {
                self.pos = self.block.len();
                return Ok(Fragment::Bad {
                    offset,
                    reason: "checksum mismatch",
                    next,
                });
            }
            let Some(kind) = RecordType::from_u8(h.kind) else {
                self.pos = self.block.len();
                return Ok(Fragment::Bad {
                    offset,
                    reason: "unknown fragment type",
                    next,
                });
            };
            self.pos = end;
            return Ok(Fragment::Ok {
                kind,
                offset,
                start,
                end,
            });
        }
    }
}

fn tail_corrupt(offset: u64, reason: &str) -> ReadOutcome {
    ReadOutcome::Corrupt {
        offset,
        reason: reason.to_string(),
        tail: true,
    }
}

/// Walks the fragment chain of `block` from `pos`, stepping over damaged fragments by
/// their claimed length; returns the position of the first valid fragment.
fn scan_chain(block: &[u8], mut pos: usize) -> Option<usize> {
    while pos + HEADER_SIZE <= block.len() {
        if valid_fragment_at(block, pos).is_some() {
            return Some(pos);
        }
        let h = decode_header(block.get(pos..)?)?;
        pos += HEADER_SIZE + h.len;
    }
    None
}
