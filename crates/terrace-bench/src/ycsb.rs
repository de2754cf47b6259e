//! YCSB's CoreWorkload on the embedded engine: the load phase and workloads A–F with the
//! proportions of YCSB's `workloads/workload[a-f]` files.
//!
//! Records are named `"user" + fnvhash64(n)` (YCSB's hashed inserts) and hold
//! `--ycsb_field_count` fields of `--ycsb_field_length` bytes stored side by side in one
//! value, as YCSB's RocksDB binding does. An update rewrites one field (`writeallfields`
//! false) by reading the record, replacing the field and writing it back, as that binding
//! does; a read returns all fields. `--num` is the record count and `--reads` the
//! operations per thread.
//!
//! Owns: workload mixes, the shared insert counter, the per-thread loop.
//! Must not touch: output or the database's lifetime.
//! Concurrency: one call per worker; inserts take numbers from an atomic counter and
//! acknowledge with `fetch_max`, so readers may pick a key a moment before another
//! thread's insert of a lower number completes (YCSB keeps a window of acknowledgements).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use rand::Rng;
use terrace::{ReadOptions, WriteBatch};

use crate::error::Result;
use crate::flags::Flags;
use crate::generator::{fnv_hash64, KeyChooser, Latest, ScrambledZipfian};
use crate::keys::ValueGenerator;
use crate::recorder::{Budget, OpKind, ThreadStats};
use crate::workload::Ctx;

/// One of YCSB's core workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// Update heavy: 50% reads, 50% updates, zipfian.
    A,
    /// Read mostly: 95% reads, 5% updates, zipfian.
    B,
    /// Read only: 100% reads, zipfian.
    C,
    /// Read latest: 95% reads, 5% inserts, latest.
    D,
    /// Short ranges: 95% scans, 5% inserts, zipfian, scan length uniform in 1..=100.
    E,
    /// Read-modify-write: 50% reads, 50% read-modify-writes, zipfian.
    F,
}

impl Workload {
    /// The workload of a benchmark name `ycsb_a` .. `ycsb_f`.
    pub fn from_name(name: &str) -> Option<Workload> {
        Some(match name {
            "ycsb_a" => Workload::A,
            "ycsb_b" => Workload::B,
            "ycsb_c" => Workload::C,
            "ycsb_d" => Workload::D,
            "ycsb_e" => Workload::E,
            "ycsb_f" => Workload::F,
            _ => return None,
        })
    }

    /// Proportions of (read, update, insert, scan, read-modify-write), with the read
    /// share of A, B and C replaced by `read` (the rest updates) when given.
    pub fn mix_with(self, read: Option<f64>) -> [(OpKind, f64); 5] {
        let mut mix = self.mix();
        if let (Some(r), Workload::A | Workload::B | Workload::C) = (read, self) {
            mix[0].1 = r;
            mix[1].1 = 1.0 - r;
        }
        mix
    }

    /// Proportions of (read, update, insert, scan, read-modify-write).
    pub fn mix(self) -> [(OpKind, f64); 5] {
        let p = match self {
            Workload::A => [0.5, 0.5, 0.0, 0.0, 0.0],
            Workload::B => [0.95, 0.05, 0.0, 0.0, 0.0],
            Workload::C => [1.0, 0.0, 0.0, 0.0, 0.0],
            Workload::D => [0.95, 0.0, 0.05, 0.0, 0.0],
            Workload::E => [0.0, 0.0, 0.05, 0.95, 0.0],
            Workload::F => [0.5, 0.0, 0.0, 0.0, 0.5],
        };
        let kinds = [
            OpKind::Read,
            OpKind::Update,
            OpKind::Insert,
            OpKind::Scan,
            OpKind::ReadModifyWrite,
        ];
        let mut out = [(OpKind::Read, 0.0); 5];
        for (o, (k, p)) in out.iter_mut().zip(kinds.into_iter().zip(p)) {
            *o = (k, p);
        }
        out
    }

    fn insert_proportion(self) -> f64 {
        match self {
            Workload::D | Workload::E => 0.05,
            _ => 0.0,
        }
    }
}

/// The key number counter of one YCSB benchmark, shared by its workers.
#[derive(Debug)]
pub struct InsertCounter {
    next: AtomicU64,
    newest: AtomicU64,
}

impl InsertCounter {
    /// Inserts continue after `records` loaded records.
    pub fn new(records: u64) -> Self {
        InsertCounter {
            next: AtomicU64::new(records),
            newest: AtomicU64::new(records.saturating_sub(1)),
        }
    }

    /// The number of the next record to insert.
    pub(crate) fn take(&self) -> u64 {
        self.next.fetch_add(1, Ordering::AcqRel)
    }

    /// Acknowledges that record `n` is stored.
    pub(crate) fn ack(&self, n: u64) {
        self.newest.fetch_max(n, Ordering::AcqRel);
    }

    /// The newest acknowledged record.
    pub(crate) fn newest(&self) -> u64 {
        self.newest.load(Ordering::Acquire)
    }
}

/// YCSB's key name of record `n`.
pub fn record_key(n: u64) -> Vec<u8> {
    format!("user{}", fnv_hash64(n)).into_bytes()
}

/// The record numbers of worker `tid`'s share of the load phase.
pub(crate) fn load_share(f: &Flags, tid: usize) -> std::ops::Range<u64> {
    let (threads, tid) = (f.threads as u64, tid as u64);
    let per = f.num / threads;
    let extra = u64::from(tid < f.num % threads);
    let first = per * tid + tid.min(f.num % threads);
    first..first + per + extra
}

/// The load phase: this worker's share of `--num` records, inserted in key-number order.
///
/// # Errors
/// The engine's write errors.
pub fn load(ctx: Ctx<'_>) -> Result<ThreadStats> {
    let f = ctx.flags;
    let record_len = f.ycsb_field_count * f.ycsb_field_length;
    let mut values = ValueGenerator::new(record_len, f.compression_ratio);
    let mut st = ThreadStats::new(ctx.shared)?;
    for n in load_share(f, ctx.tid) {
        let began = Instant::now();
        let key = record_key(n);
        let mut batch = WriteBatch::new();
        batch.put(&key, values.generate(record_len));
        ctx.db.write(batch, ctx.write_options())?;
        st.finished(
            ctx.shared,
            OpKind::Insert,
            began,
            1,
            (key.len() + record_len) as u64,
        )?;
    }
    st.stop(ctx.shared);
    Ok(st)
}

/// The transaction phase of `workload`: `--reads` operations per worker (or `--duration`).
///
/// # Errors
/// The engine's errors.
pub fn run(ctx: Ctx<'_>, workload: Workload, counter: &InsertCounter) -> Result<ThreadStats> {
    let f = ctx.flags;
    let record_len = f.ycsb_field_count * f.ycsb_field_length;
    let mut values = ValueGenerator::new(record_len, f.compression_ratio);
    let mut rng = ctx.rng();
    let ops = f.reads_per_thread();
    let mut chooser = chooser(f, workload);
    let mix = workload.mix_with(f.ycsb_read_proportion);
    let mut st = ThreadStats::new(ctx.shared)?;
    let budget = Budget::new(ops, f.duration_seconds);
    let opts = ReadOptions::default();
    let mut record = Vec::with_capacity(record_len);
    while !budget.done(st.done) {
        let began = Instant::now();
        let kind = pick(&mix, rng.gen());
        let newest = counter.newest();
        let bytes = match kind {
            OpKind::Insert => {
                let n = counter.take();
                let key = record_key(n);
                let mut batch = WriteBatch::new();
                batch.put(&key, values.generate(record_len));
                ctx.db.write(batch, ctx.write_options())?;
                counter.ack(n);
                key.len() + record_len
            }
            OpKind::Scan => {
                let key = record_key(chooser.next(newest, &mut rng));
                let len = rng.gen_range(1..=f.ycsb_max_scan_length);
                let mut it = ctx.db.iter(ReadOptions::default())?;
                it.seek(&key)?;
                let mut bytes = 0;
                for _ in 0..len {
                    if !it.valid() {
                        break;
                    }
                    bytes += it.key().len() + it.value().len();
                    it.next()?;
                }
                st.found += u64::from(bytes > 0);
                bytes
            }
            OpKind::Read => {
                let key = record_key(chooser.next(newest, &mut rng));
                match ctx.db.get_pinned(&opts, &key)? {
                    Some(v) => {
                        st.found += 1;
                        key.len() + v.len()
                    }
                    None => 0,
                }
            }
            _ => {
                // Update and read-modify-write: read the record, replace one field, write.
                let key = record_key(chooser.next(newest, &mut rng));
                record.clear();
                if ctx.db.get_into(&opts, &key, &mut record)? {
                    st.found += 1;
                }
                record.resize(record_len, b' ');
                let field = rng.gen_range(0..f.ycsb_field_count) * f.ycsb_field_length;
                let new = values.generate(f.ycsb_field_length);
                if let Some(slot) = record.get_mut(field..field + f.ycsb_field_length) {
                    slot.copy_from_slice(new);
                }
                let mut batch = WriteBatch::new();
                batch.put(&key, &record);
                ctx.db.write(batch, ctx.write_options())?;
                2 * (key.len() + record_len)
            }
        };
        st.finished(ctx.shared, kind, began, 1, bytes as u64)?;
    }
    st.stop(ctx.shared);
    Ok(st)
}

/// The key chooser of `workload`: latest for D, scrambled zipfian over the records plus
/// room for twice the expected inserts (as YCSB) for the others.
pub(crate) fn chooser(f: &Flags, workload: Workload) -> KeyChooser {
    let theta = f.ycsb_zipfian_constant;
    match workload {
        Workload::D => KeyChooser::Latest(Latest::new(f.num.saturating_sub(1), theta)),
        _ => {
            let ops = f.reads_per_thread();
            let expected =
                (ops as f64 * f.threads as f64 * workload.insert_proportion() * 2.0) as u64;
            KeyChooser::Zipfian(ScrambledZipfian::new(f.num + expected, theta))
        }
    }
}

/// The operation of a uniform draw `u` in [0, 1) under `mix`.
pub(crate) fn pick(mix: &[(OpKind, f64); 5], u: f64) -> OpKind {
    let mut acc = 0.0;
    for (kind, p) in mix {
        acc += p;
        if u < acc {
            return *kind;
        }
    }
    mix.iter()
        .rev()
        .find(|(_, p)| *p > 0.0)
        .map_or(OpKind::Read, |(k, _)| *k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_proportion_replaces_the_read_share_of_a_b_and_c() {
        let c = Workload::C.mix_with(Some(0.7));
        assert_eq!((c[0].0, c[0].1), (OpKind::Read, 0.7));
        assert_eq!((c[1].0, c[1].1), (OpKind::Update, 1.0 - 0.7));
        assert_eq!(Workload::B.mix_with(None), Workload::B.mix());
        // Other workloads keep their own mix.
        assert_eq!(Workload::E.mix_with(Some(0.7)), Workload::E.mix());
    }
}
