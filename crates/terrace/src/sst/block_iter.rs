//! Reads one block: the decoded view ([`Block`]) and a cursor over its entries ([`BlockIter`]).
//!
//! Owns: decoding of the block format written by `block_builder` (docs/formats/sst.md).
//! Must not touch: files or checksums; the reader hands in checked, decompressed bytes.
//! Concurrency: a `Block` is immutable and cheap to clone (it shares its bytes);
//! a `BlockIter` has one owner.
//!
//! Errors are reasons (`&'static str`); the caller adds the file and the block's offset.

use std::cmp::Ordering;

use bytes::{Buf, Bytes};

use crate::coding::{get_fixed32, get_varint32};
use crate::key::KeyBuf;
use crate::prefetch::prefetch_range;

/// Result of block decoding: a reason on failure.
pub(crate) type BlockResult<T> = std::result::Result<T, &'static str>;

/// A checked, decompressed block.
#[derive(Debug, Clone)]
pub(crate) struct Block {
    data: Bytes,
    restarts_offset: usize,
    num_restarts: usize,
}

impl Block {
    /// Number of restart points.
    pub(crate) fn num_restarts(&self) -> usize {
        self.num_restarts
    }

    /// Decodes the restart count and checks that the restart array fits.
    pub fn new(data: Bytes) -> BlockResult<Block> {
        let n = data.len().checked_sub(4).ok_or("block too short")?;
        let num_restarts = get_fixed32(&data, n).ok_or("block too short")? as usize;
        if num_restarts == 0 || num_restarts > n / 4 {
            return Err("bad restart count");
        }
        Ok(Block {
            restarts_offset: n - 4 * num_restarts,
            num_restarts,
            data,
        })
    }

    /// A block without entries.
    pub fn empty() -> Block {
        Block {
            data: Bytes::from_static(&[0, 0, 0, 0, 1, 0, 0, 0]),
            restarts_offset: 0,
            num_restarts: 1,
        }
    }

    fn restart_point(&self, i: usize) -> BlockResult<usize> {
        let off = get_fixed32(&self.data, self.restarts_offset + 4 * i)
            .ok_or("bad restart index")? as usize;
        if off > self.restarts_offset {
            return Err("restart point out of range");
        }
        Ok(off)
    }

    /// Decodes the entry header at `p`: (shared, non_shared, value_len, header end).
    #[inline]
    fn entry_header(&self, p: usize) -> BlockResult<(usize, usize, usize, usize)> {
        // Fast path: with short keys and values all three lengths take one byte each.
        let (shared, non_shared, value_len, pos) = match self.data.get(p..p + 3) {
            Some(&[a, b, c]) if (a | b | c) < 0x80 => {
                (usize::from(a), usize::from(b), usize::from(c), p + 3)
            }
            _ => self.entry_header_varints(p)?,
        };
        let end = pos
            .checked_add(non_shared)
            .and_then(|x| x.checked_add(value_len))
            .ok_or("entry length overflow")?;
        if end > self.restarts_offset {
            return Err("entry runs past the entries area");
        }
        Ok((shared, non_shared, value_len, pos))
    }

    /// The entry header's three varints at `p` in general form (any length, checked).
    #[cold]
    fn entry_header_varints(&self, p: usize) -> BlockResult<(usize, usize, usize, usize)> {
        let bad = |_| "bad entry header";
        let (shared, pos) = get_varint32(&self.data, p).map_err(bad)?;
        let (non_shared, pos) = get_varint32(&self.data, pos).map_err(bad)?;
        let (value_len, pos) = get_varint32(&self.data, pos).map_err(bad)?;
        Ok((
            shared as usize,
            non_shared as usize,
            value_len as usize,
            pos,
        ))
    }

    /// The full key of the entry at restart point `i` (which shares nothing), borrowed.
    fn restart_key(&self, i: usize) -> BlockResult<&[u8]> {
        let p = self.restart_point(i)?;
        if p >= self.restarts_offset {
            return Err("restart point at end of entries");
        }
        let (shared, non_shared, _, hdr) = self.entry_header(p)?;
        if shared != 0 {
            return Err("restart entry shares key bytes");
        }
        self.data
            .get(hdr..hdr + non_shared)
            .ok_or("bad restart key")
    }
}

/// A cursor over a block's entries, both directions.
#[derive(Debug)]
pub(crate) struct BlockIter {
    block: Block,
    /// Offset of the current entry; meaningful only while `valid`.
    current: usize,
    next_offset: usize,
    restart_index: usize,
    /// Offset of restart point `restart_index + 1` (`usize::MAX` past the last), so that
    /// stepping forward decodes the restart array only when it crosses into the next run.
    next_restart: usize,
    key: KeyBuf,
    value: (usize, usize),
    valid: bool,
}

impl BlockIter {
    /// A cursor over `block`, not positioned.
    pub fn new(block: Block) -> Self {
        BlockIter {
            block,
            current: 0,
            next_offset: 0,
            restart_index: 0,
            next_restart: usize::MAX,
            key: KeyBuf::default(),
            value: (0, 0),
            valid: false,
        }
    }

    /// The restart run of the current entry (its entry number in a block whose entries
    /// are all restart points).
    #[inline]
    pub(crate) fn restart_index(&self) -> usize {
        self.restart_index
    }

    /// True if positioned on an entry.
    #[inline]
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current key (empty if not valid).
    #[inline]
    pub fn key(&self) -> &[u8] {
        if self.valid {
            self.key.as_slice()
        } else {
            &[]
        }
    }

    /// The current value (empty if not valid).
    #[inline]
    pub fn value(&self) -> &[u8] {
        if !self.valid {
            return &[];
        }
        self.block
            .data
            .get(self.value.0..self.value.1)
            .unwrap_or(&[])
    }

    /// The current value as a zero-copy slice of the block.
    pub fn value_bytes(&self) -> Bytes {
        if !self.valid {
            return Bytes::new();
        }
        self.block.data.slice(self.value.0..self.value.1)
    }

    /// [`BlockIter::value_bytes`], consuming the cursor: its handle on the block becomes
    /// the value's, so no reference count is updated (a clone and a drop of a cached
    /// block's handle are two atomic updates of a count other threads update too).
    pub fn into_value_bytes(self) -> Bytes {
        if !self.valid {
            return Bytes::new();
        }
        let mut data = self.block.data;
        data.truncate(self.value.1);
        data.advance(self.value.0);
        data
    }

    fn fail<T>(&mut self, reason: &'static str) -> BlockResult<T> {
        self.valid = false;
        Err(reason)
    }

    fn seek_to_restart(&mut self, i: usize) -> BlockResult<()> {
        self.key.clear();
        self.valid = false;
        match self.block.restart_point(i) {
            Ok(p) => {
                self.next_offset = p;
                self.set_restart_index(i)
            }
            Err(e) => self.fail(e),
        }
    }

    /// Makes `i` the current restart run and caches where the next one starts.
    fn set_restart_index(&mut self, i: usize) -> BlockResult<()> {
        self.restart_index = i;
        self.next_restart = if i + 1 < self.block.num_restarts {
            match self.block.restart_point(i + 1) {
                Ok(r) => r,
                Err(e) => return self.fail(e),
            }
        } else {
            usize::MAX
        };
        Ok(())
    }

    /// Decodes the entry at `next_offset`; becomes invalid at the end of the entries.
    fn parse_next(&mut self) -> BlockResult<()> {
        let p = self.next_offset;
        if p >= self.block.restarts_offset {
            self.valid = false;
            return Ok(());
        }
        let (shared, non_shared, value_len, hdr) = match self.block.entry_header(p) {
            Ok(h) => h,
            Err(e) => return self.fail(e),
        };
        if shared > self.key.len() {
            return self.fail("entry shares more bytes than the previous key has");
        }
        let Some(delta) = self.block.data.get(hdr..hdr + non_shared) else {
            return self.fail("bad entry key");
        };
        self.key.replace_tail(shared, delta);
        self.value = (hdr + non_shared, hdr + non_shared + value_len);
        self.current = p;
        self.next_offset = self.value.1;
        self.valid = true;
        while self.next_restart <= self.current {
            self.set_restart_index(self.restart_index + 1)?;
        }
        Ok(())
    }

    /// Positions on the first entry.
    pub fn seek_to_first(&mut self) -> BlockResult<()> {
        self.seek_to_restart(0)?;
        self.parse_next()
    }

    /// Positions on the last entry.
    pub fn seek_to_last(&mut self) -> BlockResult<()> {
        self.seek_to_restart(self.block.num_restarts - 1)?;
        self.parse_next()?;
        while self.valid && self.next_offset < self.block.restarts_offset {
            self.parse_next()?;
        }
        Ok(())
    }

    /// Moves to the next entry (invalid after the last).
    pub fn next(&mut self) -> BlockResult<()> {
        if !self.valid {
            return Ok(());
        }
        self.parse_next()
    }

    /// Moves to the previous entry (invalid before the first).
    pub fn prev(&mut self) -> BlockResult<()> {
        if !self.valid {
            return Ok(());
        }
        let original = self.current;
        loop {
            let r = match self.block.restart_point(self.restart_index) {
                Ok(r) => r,
                Err(e) => return self.fail(e),
            };
            if r < original {
                break;
            }
            if self.restart_index == 0 {
                self.valid = false;
                return Ok(());
            }
            self.restart_index -= 1;
        }
        self.seek_to_restart(self.restart_index)?;
        loop {
            self.parse_next()?;
            if !self.valid {
                return self.fail("entries do not reach the previous entry");
            }
            if self.next_offset >= original {
                return Ok(());
            }
        }
    }

    /// Positions on the first entry whose key is `>= target` under `cmp`.
    pub fn seek_by(
        &mut self,
        target: &[u8],
        cmp: impl Fn(&[u8], &[u8]) -> Ordering,
    ) -> BlockResult<()> {
        self.seek_between(target, 0, self.block.num_restarts - 1, cmp)
    }

    /// As [`BlockIter::seek_by`], knowing that the last restart point whose key is
    /// `< target` is between restart points `lo` and `hi` (or is `lo` when none is).
    pub(crate) fn seek_between(
        &mut self,
        target: &[u8],
        lo: usize,
        hi: usize,
        cmp: impl Fn(&[u8], &[u8]) -> Ordering,
    ) -> BlockResult<()> {
        // Binary search for the last restart point whose key is < target.
        let (mut lo, mut hi) = (lo, hi.min(self.block.num_restarts - 1));
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            let k = match self.block.restart_key(mid) {
                Ok(k) => k,
                Err(e) => return self.fail(e),
            };
            if cmp(k, target) == Ordering::Less {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        self.seek_to_restart(lo)?;
        // The scan reads the run's entries one after another: ask for all of its lines
        // now so that their misses overlap.
        prefetch_range(
            &self.block.data,
            self.next_offset,
            self.next_restart.min(self.block.restarts_offset),
        );
        loop {
            self.parse_next()?;
            if !self.valid || cmp(self.key.as_slice(), target) != Ordering::Less {
                return Ok(());
            }
        }
    }

    /// Positions on the first entry whose internal key is `>= target` (`key::compare`).
    pub fn seek(&mut self, target: &[u8]) -> BlockResult<()> {
        self.seek_by(target, crate::key::compare)
    }
}
