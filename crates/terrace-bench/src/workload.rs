//! db_bench's benchmarks, one worker thread's loop each, with db_bench's semantics: which
//! keys, how many operations, what counts as found and how many bytes moved.
//!
//! Owns: the per-thread loops of fill*, overwrite, read*, seekrandom, deleterandom,
//! updaterandom and the background writer of the `*whilewriting` benchmarks.
//! Must not touch: output, or the database's lifetime (the runner opens and resets it).
//! Concurrency: one call per worker thread; workers share only the `Db` and `Shared`.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::Rng;
use terrace::{Db, ReadOptions, WriteBatch, WriteOptions};

use crate::error::Result;
use crate::flags::Flags;
use crate::keys::{format_key, ValueGenerator};
use crate::recorder::{Budget, OpKind, Shared, ThreadStats};

/// What one worker needs.
#[derive(Debug, Clone, Copy)]
pub struct Ctx<'a> {
    /// The database.
    pub db: &'a Db,
    /// The run's flags.
    pub flags: &'a Flags,
    /// The benchmark's shared state.
    pub shared: &'a Shared,
    /// The worker's index (0-based).
    pub tid: usize,
    /// The seed of the worker's random numbers (`seed::Seeds` gives it, as db_bench).
    pub seed: u64,
}

impl Ctx<'_> {
    /// The worker's random numbers, from its seed.
    pub fn rng(&self) -> StdRng {
        crate::seed::rng(self.seed)
    }

    /// The write options of `--sync` and `--disable_wal`.
    pub fn write_options(&self) -> WriteOptions {
        WriteOptions {
            sync: self.flags.sync,
            disable_wal: self.flags.disable_wal,
        }
    }
}

/// A batch with room for `--batch_size` entries of `--key_size` + `--value_size` bytes,
/// so that filling it never reallocates (db_bench reuses one batch for the same effect).
fn batch_for(f: &Flags) -> WriteBatch {
    WriteBatch::with_capacity(f.batch_size.max(1) * (11 + f.key_size + f.value_size))
}

/// A uniformly random key number below `num` (0 when `num` is 0).
pub fn random_key(rng: &mut impl Rng, num: u64) -> u64 {
    if num == 0 {
        0
    } else {
        rng.gen_range(0..num)
    }
}

/// Which keys a writer puts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyOrder {
    /// 0, 1, 2, ...
    Sequential,
    /// Uniformly random below `--num`.
    Random,
}

/// fillseq, fillrandom, overwrite, fillsync: `ops` puts in batches of `--batch_size`.
///
/// # Errors
/// The engine's write errors.
pub fn write(ctx: Ctx<'_>, order: KeyOrder, ops: u64, wopts: WriteOptions) -> Result<ThreadStats> {
    let f = ctx.flags;
    let mut values = ValueGenerator::new(f.value_size, f.compression_ratio);
    let mut st = ThreadStats::new(ctx.shared)?;
    let mut rng = ctx.rng();
    let budget = Budget::new(ops, f.duration_seconds);
    let mut key = Vec::with_capacity(f.key_size);
    let mut next_seq = 0u64;
    while !budget.done(st.done) {
        let began = Instant::now();
        let n = if f.duration_seconds > 0 {
            f.batch_size as u64
        } else {
            (f.batch_size as u64).min(ops - st.done)
        };
        let mut batch = batch_for(f);
        for _ in 0..n {
            let k = match order {
                KeyOrder::Sequential => next_seq,
                KeyOrder::Random => random_key(&mut rng, f.num),
            };
            next_seq += 1;
            format_key(k, f.key_size, &mut key);
            batch.put(&key, values.generate(f.value_size));
        }
        ctx.db.write(batch, wopts)?;
        st.finished(
            ctx.shared,
            OpKind::Write,
            began,
            n,
            n * (f.key_size + f.value_size) as u64,
        )?;
    }
    st.stop(ctx.shared);
    Ok(st)
}

/// readrandom (`missing` false) and readmissing (`missing` true: keys one byte longer,
/// so none exists, as db_bench does).
///
/// # Errors
/// The engine's read errors.
pub fn read_random(ctx: Ctx<'_>, missing: bool) -> Result<ThreadStats> {
    let f = ctx.flags;
    let mut st = ThreadStats::new(ctx.shared)?;
    let mut rng = ctx.rng();
    let budget = Budget::new(f.reads_per_thread(), f.duration_seconds);
    let key_size = f.key_size + usize::from(missing);
    let mut key = Vec::with_capacity(key_size);
    let opts = ReadOptions::default();
    while !budget.done(st.done) && !ctx.shared.stop.load(Ordering::Relaxed) {
        let began = Instant::now();
        format_key(random_key(&mut rng, f.num), key_size, &mut key);
        let bytes = match ctx.db.get_pinned(&opts, &key)? {
            Some(v) => {
                st.found += 1;
                (key.len() + v.len()) as u64
            }
            None => 0,
        };
        st.finished(ctx.shared, OpKind::Read, began, 1, bytes)?;
    }
    st.stop(ctx.shared);
    Ok(st)
}

/// readseq (`reverse` false) and readreverse: one pass over the database, up to
/// `--reads` entries.
///
/// # Errors
/// The engine's iterator errors.
pub fn read_sequential(ctx: Ctx<'_>, reverse: bool) -> Result<ThreadStats> {
    let f = ctx.flags;
    let mut st = ThreadStats::new(ctx.shared)?;
    let budget = Budget::new(f.reads_per_thread(), f.duration_seconds);
    let mut it = ctx.db.iter(ReadOptions::default())?;
    let mut began = Instant::now();
    if reverse {
        it.seek_to_last()?;
    } else {
        it.seek_to_first()?;
    }
    while it.valid() && !budget.done(st.done) {
        let bytes = (it.key().len() + it.value().len()) as u64;
        st.found += 1;
        st.finished(ctx.shared, OpKind::Read, began, 1, bytes)?;
        began = Instant::now();
        if reverse {
            it.prev()?;
        } else {
            it.next()?;
        }
    }
    st.stop(ctx.shared);
    Ok(st)
}

/// seekrandom: a new iterator per seek (as db_bench without a tailing iterator), seek to
/// a random key, then `--seek_nexts` nexts.
///
/// # Errors
/// The engine's iterator errors.
pub fn seek_random(ctx: Ctx<'_>) -> Result<ThreadStats> {
    let f = ctx.flags;
    let mut st = ThreadStats::new(ctx.shared)?;
    let mut rng = ctx.rng();
    let budget = Budget::new(f.reads_per_thread(), f.duration_seconds);
    let mut key = Vec::with_capacity(f.key_size);
    while !budget.done(st.done) && !ctx.shared.stop.load(Ordering::Relaxed) {
        let began = Instant::now();
        format_key(random_key(&mut rng, f.num), f.key_size, &mut key);
        let mut it = ctx.db.iter(ReadOptions::default())?;
        it.seek(&key)?;
        let mut bytes = 0;
        if it.valid() && it.key() == key.as_slice() {
            st.found += 1;
        }
        for _ in 0..f.seek_nexts {
            if !it.valid() {
                break;
            }
            bytes += (it.key().len() + it.value().len()) as u64;
            it.next()?;
        }
        if it.valid() {
            bytes += (it.key().len() + it.value().len()) as u64;
        }
        st.finished(ctx.shared, OpKind::Seek, began, 1, bytes)?;
    }
    st.stop(ctx.shared);
    Ok(st)
}

/// deleterandom: `--num` deletes of random keys in batches of `--batch_size`.
///
/// # Errors
/// The engine's write errors.
pub fn delete_random(ctx: Ctx<'_>) -> Result<ThreadStats> {
    let f = ctx.flags;
    let mut st = ThreadStats::new(ctx.shared)?;
    let mut rng = ctx.rng();
    let budget = Budget::new(f.num, f.duration_seconds);
    let mut key = Vec::with_capacity(f.key_size);
    while !budget.done(st.done) {
        let began = Instant::now();
        let n = (f.batch_size as u64).min(f.num.saturating_sub(st.done).max(1));
        let mut batch = batch_for(f);
        for _ in 0..n {
            format_key(random_key(&mut rng, f.num), f.key_size, &mut key);
            batch.delete(&key);
        }
        ctx.db.write(batch, ctx.write_options())?;
        st.finished(ctx.shared, OpKind::Delete, began, n, 0)?;
    }
    st.stop(ctx.shared);
    Ok(st)
}

/// compact and waitforcompaction: the first worker runs `op` once (a manual compaction of
/// the whole key range, or a wait until no flush or compaction is pending), timed as one
/// operation; the other workers do nothing, as in db_bench.
///
/// # Errors
/// The engine's errors.
pub fn maintenance(
    ctx: Ctx<'_>,
    op: impl FnOnce(&Db) -> terrace::Result<()>,
) -> Result<ThreadStats> {
    let mut st = ThreadStats::new(ctx.shared)?;
    if ctx.tid == 0 {
        let began = Instant::now();
        op(ctx.db)?;
        st.finished(ctx.shared, OpKind::Compaction, began, 1, 0)?;
    }
    st.stop(ctx.shared);
    Ok(st)
}

/// updaterandom: read a random key, then write a new value for it.
///
/// # Errors
/// The engine's errors.
pub fn update_random(ctx: Ctx<'_>) -> Result<ThreadStats> {
    let f = ctx.flags;
    let mut values = ValueGenerator::new(f.value_size, f.compression_ratio);
    let mut st = ThreadStats::new(ctx.shared)?;
    let mut rng = ctx.rng();
    let budget = Budget::new(f.reads_per_thread(), f.duration_seconds);
    let mut key = Vec::with_capacity(f.key_size);
    let opts = ReadOptions::default();
    while !budget.done(st.done) {
        let began = Instant::now();
        format_key(random_key(&mut rng, f.num), f.key_size, &mut key);
        let mut bytes = 0;
        if let Some(v) = ctx.db.get_pinned(&opts, &key)? {
            st.found += 1;
            bytes += (key.len() + v.len()) as u64;
        }
        let mut batch = batch_for(f);
        batch.put(&key, values.generate(f.value_size));
        ctx.db.write(batch, ctx.write_options())?;
        bytes += (f.key_size + f.value_size) as u64;
        st.finished(ctx.shared, OpKind::Update, began, 1, bytes)?;
    }
    st.stop(ctx.shared);
    Ok(st)
}

/// The writer of readwhilewriting and seekrandomwhilewriting: random puts until the
/// readers stop, at most `--benchmark_write_rate_limit` bytes per second. Its stats are
/// excluded from the benchmark's result, as db_bench does.
///
/// # Errors
/// The engine's write errors.
pub fn background_writer(ctx: Ctx<'_>) -> Result<ThreadStats> {
    let f = ctx.flags;
    let mut values = ValueGenerator::new(f.value_size, f.compression_ratio);
    let mut st = ThreadStats::new_excluded(ctx.shared)?;
    let mut rng = ctx.rng();
    let mut key = Vec::with_capacity(f.key_size);
    let started = Instant::now();
    while !ctx.shared.stop.load(Ordering::Relaxed) {
        let began = Instant::now();
        format_key(random_key(&mut rng, f.num), f.key_size, &mut key);
        let mut batch = batch_for(f);
        batch.put(&key, values.generate(f.value_size));
        ctx.db.write(batch, ctx.write_options())?;
        st.finished(
            ctx.shared,
            OpKind::Write,
            began,
            1,
            (f.key_size + f.value_size) as u64,
        )?;
        if f.benchmark_write_rate_limit > 0 {
            let due =
                Duration::from_secs_f64(st.bytes as f64 / f.benchmark_write_rate_limit as f64);
            if let Some(wait) = due.checked_sub(started.elapsed()) {
                std::thread::sleep(wait.min(Duration::from_millis(100)));
            }
        }
    }
    st.stop(ctx.shared);
    Ok(st)
}
