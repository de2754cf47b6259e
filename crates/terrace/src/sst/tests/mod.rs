//! Tests of the table format: blocks, filters, tables, caches, corruption.

mod block;
mod cache;
mod corruption;
mod table;

use std::path::PathBuf;
use std::sync::Arc;

use super::*;
use crate::error::Result;
use crate::fuzzing::MemWritable;
use crate::key::{internal_key, ValueType};
use crate::range_del::RangeTombstone;
use crate::storage::{IoClass, ReadableFile};

/// Sorted `(internal key, value)` pairs.
type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// A readable file held in memory.
struct MemFile(Vec<u8>);

impl ReadableFile for MemFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8], _class: IoClass) -> Result<()> {
        let start = usize::try_from(offset).unwrap();
        match self.0.get(start..start + buf.len()) {
            Some(src) => {
                buf.copy_from_slice(src);
                Ok(())
            }
            None => Err(crate::Error::io(
                "mem",
                std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
            )),
        }
    }
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
}

fn new_builder(opts: SstOptions) -> (SstBuilder, MemWritable) {
    let buf = MemWritable::default();
    let b = SstBuilder::new(Box::new(buf.clone()), PathBuf::from("test.sst"), opts);
    (b, buf)
}

/// Builds a table in memory from sorted entries and tombstones.
fn build(
    entries: &[(Vec<u8>, Vec<u8>)],
    tombstones: &[RangeTombstone],
    opts: SstOptions,
) -> (Vec<u8>, SstInfo) {
    let (mut b, buf) = new_builder(opts);
    for (k, v) in entries {
        b.add(k, v).unwrap();
    }
    for t in tombstones {
        b.add_range_tombstone(t);
    }
    let info = b.finish().unwrap();
    (buf.bytes(), info)
}

fn open_mem(bytes: Vec<u8>, cache: Option<Arc<BlockCache>>) -> Result<SstReader> {
    SstReader::open(
        Arc::new(MemFile(bytes)),
        PathBuf::from("test.sst"),
        1,
        cache,
    )
}

fn small_opts(compression: crate::options::Compression) -> SstOptions {
    SstOptions {
        block_size: 256,
        restart_interval: 4,
        bloom_bits_per_key: 10,
        compression,
    }
}

/// `n` user keys; every 7th has three versions, every 5th version is a deletion.
/// Values are compressible.
fn sample_entries(n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    let mut seq = 1u64;
    for i in 0..n {
        let uk = format!("key{:06}", i * 2).into_bytes();
        let versions = if i % 7 == 0 { 3 } else { 1 };
        let mut vs = Vec::new();
        for _ in 0..versions {
            let kind = if seq.is_multiple_of(5) {
                ValueType::Deletion
            } else {
                ValueType::Value
            };
            let value = if kind == ValueType::Deletion {
                Vec::new()
            } else {
                format!("value-{i}-{seq}-").repeat(3).into_bytes()
            };
            vs.push((internal_key(&uk, seq, kind), value));
            seq += 1;
        }
        vs.reverse(); // newest (largest seq) first
        out.extend(vs);
    }
    out.sort_by(|a, b| crate::key::compare(&a.0, &b.0));
    out
}
