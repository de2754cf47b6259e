//! The memtable's insert cost as it fills, beside the standard library's `BTreeMap` on
//! the same keys for scale: what `terrace serve` pays per member of a large collection
//! (keys sharing a long prefix, random after it, short values), without the rest of the
//! server around it.
//!
//! ```text
//! cargo run --release -p terrace --example memtable_insert -- [entries] [batch] [btree]
//! ```
//!
//! `entries` (default 800 000) keys of 18 shared bytes and 16 random hex digits, each with
//! an 8-byte value, go in as sorted batches of `batch` (default 20, the size of a group of
//! 50 clients' commands without pipelining) through `MemTable::add_batch`, into a memtable
//! sized for 256 MiB (so that its point index never fills). Prints the mean time per
//! insert over each quarter of the entries. With `btree` as the third argument the same
//! keys go one at a time into a `BTreeMap<Vec<u8>, u64>` instead: a single-threaded tree
//! with no concurrency, no sequence numbers and no arena, so a lower bound on what an
//! ordered structure with many keys per node can do, not a like-for-like peer.

use std::collections::BTreeMap;
use std::time::Instant;

use terrace::key::ValueType;
use terrace::memtable::MemTable;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let entries: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(800_000);
    let batch: usize = args
        .get(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20)
        .max(1);
    let btree = args.get(2).is_some_and(|a| a == "btree");
    let keys = member_keys(entries);
    let quarter = (entries / 4).max(1);
    let mut report = Report {
        quarter,
        started: Instant::now(),
    };
    if btree {
        let mut map = BTreeMap::new();
        for (i, key) in keys.iter().enumerate() {
            map.insert(key.clone(), i as u64);
            report.after(i + 1, "btree");
        }
        return;
    }
    let memtable = MemTable::with_point_index(256 << 20);
    let value = [7u8; 8];
    let mut seq = 0u64;
    let mut writes: Vec<(u64, ValueType, &[u8], &[u8])> = Vec::with_capacity(batch);
    let mut done = 0;
    for chunk in keys.chunks(batch) {
        writes.clear();
        for key in chunk {
            seq += 1;
            writes.push((seq, ValueType::Value, key.as_slice(), &value[..]));
        }
        memtable.add_batch(&writes);
        for _ in chunk {
            done += 1;
            report.after(done, "memtable");
        }
    }
}

/// Keys like a large collection's member records: a shared prefix, then random digits.
fn member_keys(n: usize) -> Vec<Vec<u8>> {
    let prefix = b"\x00\x00\x00\x06mycoll\x00\x00\x01\x02\x03\x04\x05\x06";
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..n)
        .map(|_| {
            // xorshift64: a fixed sequence, so every run inserts the same keys.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let mut key = prefix.to_vec();
            key.extend_from_slice(format!("{:016x}", state % 1_000_000).as_bytes());
            key
        })
        .collect()
}

/// Prints the mean time per insert at the end of each quarter.
struct Report {
    quarter: usize,
    started: Instant,
}

impl Report {
    fn after(&mut self, done: usize, what: &str) {
        if done.is_multiple_of(self.quarter) {
            let ns = self.started.elapsed().as_nanos() as f64 / self.quarter as f64;
            println!("{what:>8} {done:>9} entries {ns:>7.0} ns/insert");
            self.started = Instant::now();
        }
    }
}
