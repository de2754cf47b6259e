//! The properties block: counts, bounds and sizes of a table, stored as named entries.
//!
//! Owns: [`Properties`] and its encoding — a block (block_builder format) whose keys are
//! property names in bytewise order and whose values are varint64 numbers or raw bytes
//! (docs/formats/sst.md). Unknown names are ignored, so later versions may add properties.
//! Must not touch: other blocks.
//! Concurrency: plain data.

use std::collections::BTreeMap;

use bytes::Bytes;

use super::block_builder::BlockBuilder;
use super::block_iter::{Block, BlockIter, BlockResult};
use crate::coding::{get_varint64, put_varint64};
use crate::key::SeqNo;

/// What a table says about itself.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Properties {
    /// Point entries (values and deletions).
    pub num_entries: u64,
    /// Point deletions.
    pub num_deletions: u64,
    /// Range tombstones.
    pub num_range_deletions: u64,
    /// Smallest internal key of the file, range tombstone starts included.
    pub smallest_key: Vec<u8>,
    /// Largest internal key of the file, `(end, MAX_SEQ, RangeDeletion)` of tombstones included.
    pub largest_key: Vec<u8>,
    /// Smallest sequence number of any entry or tombstone.
    pub smallest_seq: SeqNo,
    /// Largest sequence number of any entry or tombstone.
    pub largest_seq: SeqNo,
    /// Data blocks.
    pub num_data_blocks: u64,
    /// Bytes of data blocks as stored, trailers included.
    pub data_size: u64,
    /// Bytes of the index block as stored, trailer included.
    pub index_size: u64,
    /// Bytes of the filter block as stored, trailer included (0 without a filter).
    pub filter_size: u64,
    /// Compression the table was written with ("none", "lz4", "zstd(3)"); blocks that
    /// did not shrink enough are stored raw regardless.
    pub compression: String,
    /// Format version from the footer.
    pub format_version: u32,
}

/// Names of the numeric properties.
const NUMBERS: [&str; 9] = [
    "data_size",
    "filter_size",
    "index_size",
    "largest_seq",
    "num_data_blocks",
    "num_deletions",
    "num_entries",
    "num_range_deletions",
    "smallest_seq",
];

/// Names of the byte-string properties.
const STRINGS: [&str; 3] = ["compression", "largest_key", "smallest_key"];

impl Properties {
    fn number_field(&mut self, name: &[u8]) -> Option<&mut u64> {
        Some(match name {
            b"data_size" => &mut self.data_size,
            b"filter_size" => &mut self.filter_size,
            b"index_size" => &mut self.index_size,
            b"largest_seq" => &mut self.largest_seq,
            b"num_data_blocks" => &mut self.num_data_blocks,
            b"num_deletions" => &mut self.num_deletions,
            b"num_entries" => &mut self.num_entries,
            b"num_range_deletions" => &mut self.num_range_deletions,
            b"smallest_seq" => &mut self.smallest_seq,
            _ => return None,
        })
    }

    /// The properties block contents (`format_version` is not stored here).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut map: BTreeMap<&str, Vec<u8>> = BTreeMap::new();
        let mut copy = self.clone();
        for name in NUMBERS {
            let mut v = Vec::new();
            if let Some(x) = copy.number_field(name.as_bytes()) {
                put_varint64(&mut v, *x);
            }
            map.insert(name, v);
        }
        map.insert("compression", self.compression.as_bytes().to_vec());
        map.insert("largest_key", self.largest_key.clone());
        map.insert("smallest_key", self.smallest_key.clone());
        let mut b = BlockBuilder::new(1);
        for (k, v) in &map {
            b.add(k.as_bytes(), v);
        }
        b.finish().to_vec()
    }

    /// Decodes a properties block; every property this version writes must be present.
    pub(crate) fn decode(block: Bytes, format_version: u32) -> BlockResult<Properties> {
        let mut p = Properties {
            format_version,
            ..Properties::default()
        };
        let mut seen = 0usize;
        let mut it = BlockIter::new(Block::new(block)?);
        it.seek_to_first()?;
        while it.valid() {
            let name = it.key();
            let value = it.value();
            match name {
                b"compression" => {
                    p.compression = String::from_utf8(value.to_vec())
                        .map_err(|_| "compression name is not UTF-8")?;
                    seen += 1;
                }
                b"smallest_key" => {
                    p.smallest_key = value.to_vec();
                    seen += 1;
                }
                b"largest_key" => {
                    p.largest_key = value.to_vec();
                    seen += 1;
                }
                _ => {
                    if let Some(field) = p.number_field(name) {
                        let (v, end) = get_varint64(value, 0).map_err(|_| "bad property number")?;
                        *field = v;
                        if end != value.len() {
                            return Err("bad property number");
                        }
                        seen += 1;
                    }
                }
            }
            it.next()?;
        }
        if seen != NUMBERS.len() + STRINGS.len() {
            return Err("properties block lacks a property or repeats one");
        }
        Ok(p)
    }
}
