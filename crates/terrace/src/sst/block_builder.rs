//! Builds one block: prefix-compressed entries with a restart array (LevelDB's block format).
//!
//! Owns: the entry encoding `varint32(shared) varint32(non_shared) varint32(value_len)
//! key_delta value`, restart points every `restart_interval` entries, and the trailing
//! `fixed32 restart[n] fixed32 n` (docs/formats/sst.md).
//! Must not touch: key order; the caller adds keys in the order the block must keep.
//! Concurrency: one owner.

use crate::coding::{put_fixed32, put_varint32};

/// Accumulates entries of one block.
#[derive(Debug)]
pub(crate) struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    counter: usize,
    restart_interval: usize,
    last_key: Vec<u8>,
    num_entries: usize,
}

impl BlockBuilder {
    /// A builder with a restart point every `restart_interval` entries (at least 1).
    pub fn new(restart_interval: usize) -> Self {
        BlockBuilder {
            buf: Vec::new(),
            restarts: vec![0],
            counter: 0,
            restart_interval: restart_interval.max(1),
            last_key: Vec::new(),
            num_entries: 0,
        }
    }

    /// Forgets every entry, keeping the allocations.
    pub fn reset(&mut self) {
        self.buf.clear();
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.last_key.clear();
        self.num_entries = 0;
    }

    /// True if no entry was added since the last reset.
    pub fn is_empty(&self) -> bool {
        self.num_entries == 0
    }

    /// The size of the block if finished now.
    pub fn size_estimate(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    /// Appends an entry. Keys and values must be shorter than 4 GiB each, and the block
    /// must stay under 4 GiB (the builder of the table checks this).
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        let shared = if self.counter < self.restart_interval {
            self.last_key
                .iter()
                .zip(key)
                .take_while(|(a, b)| a == b)
                .count()
        } else {
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
            0
        };
        let non_shared = &key[shared..];
        put_varint32(&mut self.buf, shared as u32);
        put_varint32(&mut self.buf, non_shared.len() as u32);
        put_varint32(&mut self.buf, value.len() as u32);
        self.buf.extend_from_slice(non_shared);
        self.buf.extend_from_slice(value);
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(non_shared);
        self.counter += 1;
        self.num_entries += 1;
    }

    /// Appends the restart array and returns the finished block; call `reset` before reuse.
    pub fn finish(&mut self) -> &[u8] {
        for &r in &self.restarts {
            put_fixed32(&mut self.buf, r);
        }
        put_fixed32(&mut self.buf, self.restarts.len() as u32);
        &self.buf
    }
}
