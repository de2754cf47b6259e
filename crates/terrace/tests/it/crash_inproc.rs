//! In-process crash tests: random writes (synced and not), deletions, range deletions,
//! flushes and compactions through [`FaultStorage`]; then the database is dropped, the
//! crash is simulated (unsynced bytes and files whose directory was never synced vanish)
//! and the reopened database must hold exactly the state after some prefix of the writes,
//! a prefix that includes every write made durable (by a synced write or a flush).
//!
//! A cycle either shuts down cleanly (everything must survive) or "loses power": syncs are
//! made to fail before the drop, so nothing more becomes durable while the background
//! threads finish. Seeds are printed; rerun one with `TERRACE_CRASH_SEED=<seed>`. Cycles
//! per test come from `TERRACE_INPROC_CRASH_CYCLES` (default 30). `Layout::SeparateWalDir`
//! keeps the logs in their own `wal_dir` (tests/it/wal_dir.rs runs it).
//!
//! [`Tear`] chooses the storage's crash mode: by default the crash drops every unsynced
//! byte; [`run_tearing`] instead lets each 4 KiB page of an unsynced tail (a log's, a
//! manifest's, an unfinished table's) reach the file or not, torn at a page boundary or
//! with lost pages read back as zeros (`CrashMode::PartialPages`, `CrashMode::ZeroPages`).
//!
//! Negative controls prove the checker can fail: [`Check::ClaimAllDurable`] counts every
//! write as durable, and [`Check::SkipPersists`] makes the matrix level 0's region skip
//! its persists, so the rows it flushed vanish with the crash.
//!
//! With a matrix level 0, [`run_crashing_in`] lands the crash inside one background job:
//! the storage and the region share a simulated power supply ([`PowerSupply`]) that is cut
//! at a random durability point (file sync, directory sync or region persist) of the
//! thread running the job: a flush to a row, a column compaction (the compaction thread,
//! whose other work here is a few level-1 compactions) or a table merge. Each job has a
//! negative control, [`Check::LieIn`], in which that job's own durability points lie (a
//! row or merge output never persisted, a compaction output never synced) and the checker
//! must notice.
//!
//! The classic engine has its jobs too: a flush to a table file, a compaction, and the
//! MANIFEST writes (edits and rollovers, on whichever thread makes them), each with a
//! negative control whose syncs lie; two more controls make the log's syncs and the
//! directory syncs lie.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use terrace::storage::{
    CrashMode, FaultStorage, FsStorage, IoClass, PointFilter, PointKind, PowerSupply,
};
use terrace::{Db, Options, WriteBatch, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Debug, Clone)]
enum Op {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    DeleteRange(Vec<u8>, Vec<u8>),
}

fn apply(m: &mut Model, op: &Op) {
    match op {
        Op::Put(k, v) => {
            m.insert(k.clone(), v.clone());
        }
        Op::Delete(k) => {
            m.remove(k);
        }
        Op::DeleteRange(a, b) => {
            let doomed: Vec<Vec<u8>> = m
                .range(a.clone()..b.clone())
                .map(|(k, _)| k.clone())
                .collect();
            for k in doomed {
                m.remove(&k);
            }
        }
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("k{i:04}").into_bytes()
}

/// Where a run keeps its write-ahead logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// In the database directory.
    OneDir,
    /// In `wal_dir`, a directory of its own.
    SeparateWalDir,
    /// In the database directory, with a matrix level 0 on a region in shadow mode
    /// (unpersisted writes to it are lost by the crash).
    MatrixLevel0,
}

/// What a run holds the database to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Every cycle must recover an allowed prefix; anything else panics.
    Honest,
    /// Negative control: every write is treated as durable, so a checker that works must
    /// find violations after power losses.
    ClaimAllDurable,
    /// Negative control (matrix level 0 only): the region's persists do nothing, so the
    /// rows flushed to it are lost with the crash; reopening must fail, or the recovered
    /// state must miss durable writes.
    SkipPersists,
    /// Negative control: the durability points a job needs lie (return success, make
    /// nothing durable); see [`Job::lying_points`].
    LieIn(Job),
}

impl Check {
    /// Whether this is a negative control, expected to fail to open or read.
    fn is_control(self) -> bool {
        !matches!(self, Check::Honest)
    }

    fn may_fail_to_read(self) -> bool {
        matches!(self, Check::SkipPersists | Check::LieIn(_))
    }
}

/// A background job a crash can land in: three of a matrix level 0, three of the classic
/// engine, and two kinds of durability point that only negative controls use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Job {
    /// A flush of a memtable to a row (the flush thread).
    Flush,
    /// A column compaction into level 1 (the compaction thread).
    ColumnCompaction,
    /// A table merge of rows (the level-0 rewrite thread).
    TableMerge,
    /// Classic level 0: a flush of a memtable to a level-0 table file.
    TableFlush,
    /// Classic level 0: a compaction (the compaction thread).
    Compaction,
    /// Classic level 0: the install (MANIFEST and directory syncs of the compaction
    /// thread) of compactions split into pieces shared between the host and an untrusted
    /// device: all pieces' outputs appear in one edit or none.
    SplitInstall,
    /// Any MANIFEST write: an edit's sync, or a rollover's new MANIFEST and CURRENT.
    ManifestWrite,
    /// Negative controls only: the log's syncs (a synced write, a memtable switch).
    LogSync,
    /// Negative controls only: directory syncs (new tables, logs, MANIFESTs, renames).
    DirSync,
}

impl Job {
    /// Where the job runs.
    fn layout(self) -> Layout {
        match self {
            Job::Flush | Job::ColumnCompaction | Job::TableMerge => Layout::MatrixLevel0,
            _ => Layout::OneDir,
        }
    }

    /// The name prefix of the engine's thread that runs the job (`None`: any thread).
    fn thread(self) -> Option<&'static str> {
        match self {
            Job::Flush | Job::TableFlush => Some("terrace-flush"),
            Job::ColumnCompaction | Job::Compaction | Job::SplitInstall => Some("terrace-compact"),
            Job::TableMerge => Some("terrace-l0-rewrite"),
            Job::ManifestWrite | Job::LogSync | Job::DirSync => None,
        }
    }

    /// The points the job's own durability rests on.
    fn kinds(self) -> Vec<PointKind> {
        match self {
            Job::Flush | Job::TableMerge => vec![PointKind::Persist],
            Job::ColumnCompaction | Job::Compaction => {
                vec![PointKind::Sync(IoClass::Compaction)]
            }
            Job::TableFlush => vec![PointKind::Sync(IoClass::Flush)],
            Job::SplitInstall => vec![PointKind::Sync(IoClass::Manifest), PointKind::DirSync],
            Job::ManifestWrite => vec![PointKind::Sync(IoClass::Manifest)],
            Job::LogSync => vec![PointKind::Sync(IoClass::Wal)],
            Job::DirSync => vec![PointKind::DirSync],
        }
    }

    /// Where the cut is drawn: every durability point of the job's thread, or the job's
    /// own points on any thread.
    fn cut_filter(self) -> PointFilter {
        if self == Job::SplitInstall {
            return PointFilter::on_thread("terrace-compact").of_kinds(&self.kinds());
        }
        match self.thread() {
            Some(t) => PointFilter::on_thread(t),
            None => PointFilter::any().of_kinds(&self.kinds()),
        }
    }

    /// The points that lie in the job's negative control: the persists of a flushed row
    /// or of a merge's outputs, the syncs of a flush's or a compaction's output tables,
    /// of the MANIFEST, of the log, or of directories.
    fn lying_points(self) -> PointFilter {
        // A lying MANIFEST sync of the install alone is made good by the next honest
        // sync of the same file from another thread; the control lies on every thread.
        if self == Job::SplitInstall {
            return PointFilter::any().of_kinds(&self.kinds());
        }
        match self.thread() {
            Some(t) => PointFilter::on_thread(t).of_kinds(&self.kinds()),
            None => PointFilter::any().of_kinds(&self.kinds()),
        }
    }

    /// The durability points of a cycle among which the cut is drawn (a cycle that ends
    /// before the cut crashes at its end instead).
    fn points_per_cycle(self) -> u64 {
        match self {
            Job::Flush => 300,
            Job::ColumnCompaction => 150,
            Job::TableMerge => 60,
            Job::TableFlush => 150,
            Job::Compaction => 60,
            Job::SplitInstall => 20,
            Job::ManifestWrite => 60,
            Job::LogSync => 40,
            Job::DirSync => 60,
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn options(
    fault: &FaultStorage,
    power: &Arc<PowerSupply>,
    dir: &Path,
    layout: Layout,
    check: Check,
    tear: Tear,
    job: Option<Job>,
    rng: &mut StdRng,
) -> Options {
    let mut o = crate::small_options();
    o.storage = Arc::new(fault.clone());
    o.write_buffer_size = 8 << 10;
    if tear != Tear::Drop {
        // Logs of several 32 KiB blocks, so that a torn tail can span a block boundary.
        o.write_buffer_size = 96 << 10;
    }
    o.target_file_size_base = 8 << 10;
    o.max_bytes_for_level_base = 32 << 10;
    o.max_subcompactions = rng.gen_range(1..=2);
    o.max_manifest_file_size = 4 << 10;
    // Levels 1 and deeper live on a second volume, so its directory's durability is exercised too.
    o.volumes = vec![dir.join("vol1")];
    o.level_volumes = vec![0, 1, 1, 1, 1, 1, 1];
    if layout == Layout::MatrixLevel0 {
        let mut m = crate::matrix_options(dir, 256 << 10, terrace::pmem::PmemMode::Shadow);
        m.skip_persists = check == Check::SkipPersists;
        m.power = Some(power.clone());
        // One row per segment: a group of four rows already has a table merge due, so
        // crashes land before, during and after merges.
        m.params.segment_rows = 1;
        o.level0 = Arc::new(terrace::level0::MatrixLevel0::new(m).unwrap());
    }
    if layout == Layout::SeparateWalDir {
        o.wal_dir = Some(dir.join("wal"));
    }
    if job == Some(Job::SplitInstall) {
        o.max_subcompactions = 3;
        o.compaction_executor = crate::offloaded_executor();
    }
    o
}

/// What a run found.
pub struct Outcome {
    /// Cycles whose recovered state was no allowed prefix (or, under
    /// `Check::SkipPersists`, could not be read).
    pub violations: u32,
    /// Reopens that failed (only `Check::SkipPersists` survives one, and stops there).
    pub open_errors: u32,
    /// Matrix table merges recorded before the crashes: what the crashes could cut into.
    pub row_merges: u64,
    /// Cycles whose crash landed at a durability point of the job chosen by
    /// [`run_crashing_in`] (the others crashed at their end).
    pub cut_in_job: u32,
    /// Reopens that dropped damaged write-ahead-log records (a torn tail).
    pub torn_logs: u32,
}

impl Outcome {
    /// Whether the checker noticed anything: what a negative control must see.
    pub fn detected(&self) -> bool {
        self.violations > 0 || self.open_errors > 0
    }
}

/// Every key and value of `db`, or the first error reading them.
fn try_scan(db: &Db) -> terrace::Result<Model> {
    let mut it = db.iter(terrace::ReadOptions::default())?;
    it.seek_to_first()?;
    Ok(it.collect_remaining()?.into_iter().collect())
}

/// Opens the database (`what` names the attempt): `None` when that fails under
/// [`Check::SkipPersists`], which expects it; a panic when it fails otherwise.
fn reopen(dir: &Path, opts: Options, check: Check, what: &str) -> Option<Db> {
    match crate::open_retrying_lock(dir, opts) {
        Ok(db) => Some(db),
        Err(e) if check.may_fail_to_read() => {
            eprintln!("{what} failed, as the negative control expects: {e}");
            None
        }
        Err(e) => panic!("{what} failed: {e}"),
    }
}

/// What the crash does to unsynced bytes (the storage's [`CrashMode`], seeded from the
/// run's seed so that `TERRACE_CRASH_SEED` replays it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tear {
    /// Every unsynced byte is lost.
    Drop,
    /// Unsynced tails are torn at a page boundary.
    Pages,
    /// Unsynced tails keep any subset of their pages, the others read back as zeros.
    ZeroPages,
}

impl Tear {
    fn mode(self, seed: u64) -> CrashMode {
        match self {
            Tear::Drop => CrashMode::DropUnsynced,
            Tear::Pages => CrashMode::PartialPages { seed },
            Tear::ZeroPages => CrashMode::ZeroPages { seed },
        }
    }
}

/// Runs `cycles` crash cycles held to `check`. An honest run panics on the first
/// violation; a negative control counts them. A failed reopen or scan panics too, except
/// under [`Check::SkipPersists`] and [`Check::LieIn`], where it is what the control
/// expects: it is counted and the run stops.
pub fn run(cycles: u32, check: Check, layout: Layout) -> Outcome {
    run_cycles(cycles, check, layout, None, Tear::Drop)
}

/// Like [`run`], the crashes tearing unsynced tails as `tear` says.
pub fn run_tearing(cycles: u32, check: Check, layout: Layout, tear: Tear) -> Outcome {
    run_cycles(cycles, check, layout, None, tear)
}

/// Like [`run`] with the level 0 `job` belongs to, each cycle's crash drawn among the
/// durability points of `job` (see [`Job::cut_filter`]).
pub fn run_crashing_in(cycles: u32, check: Check, job: Job) -> Outcome {
    run_cycles(cycles, check, job.layout(), Some(job), Tear::Drop)
}

fn run_cycles(cycles: u32, check: Check, layout: Layout, job: Option<Job>, tear: Tear) -> Outcome {
    let seed: u64 = std::env::var("TERRACE_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().gen());
    eprintln!(
        "in-process crash test seed={seed} {check:?} {layout:?} {tear:?} \
         (TERRACE_CRASH_SEED={seed} to repeat)"
    );
    let mut rng = StdRng::seed_from_u64(seed);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let power = Arc::new(PowerSupply::new());
    let fault = FaultStorage::with_power(Arc::new(FsStorage::new()), power.clone());
    fault.set_crash_mode(tear.mode(seed));
    let mut baseline = Model::new();
    let mut next_value = 0u64;
    let mut violations = 0;
    let mut open_errors = 0;
    let mut row_merges = 0;
    let mut cut_in_job = 0;
    let mut torn_logs = 0;
    for cycle in 0..cycles {
        let opts = options(
            &fault,
            &power,
            tmp.path(),
            layout,
            check,
            tear,
            job,
            &mut rng,
        );
        let Some(db) = reopen(
            &dir,
            opts,
            check,
            &format!("cycle {cycle}: open (seed {seed})"),
        ) else {
            open_errors += 1;
            break;
        };
        if let Some(job) = job {
            let at = rng.gen_range(0..job.points_per_cycle());
            power.cut_at(job.cut_filter(), at);
            if let Check::LieIn(j) = check {
                power.lie(j.lying_points());
            }
        }
        // Once the power is out every operation may fail; the workload stops there. A
        // negative control may also fail before: the engine reads back what never reached
        // the device (a lied sync leaves an empty table file) and stops with an error.
        let noticed = std::cell::Cell::new(false);
        let failed = |r: terrace::Result<()>, what: &str| match r {
            Ok(()) => false,
            Err(_) if power.is_out() => true,
            Err(e) if check.may_fail_to_read() => {
                eprintln!("cycle {cycle}: {what} failed, as the negative control expects: {e}");
                noticed.set(true);
                true
            }
            Err(e) => panic!("cycle {cycle}: {what} failed (seed {seed}): {e}"),
        };
        let mut ops: Vec<Op> = Vec::new();
        let mut durable = 0usize;
        let n_ops = if job.is_some() {
            rng.gen_range(1500..3000)
        } else if tear != Tear::Drop {
            rng.gen_range(300..1500)
        } else {
            rng.gen_range(50..600)
        };
        // Tearing runs flush and compact a quarter as often (mostly puts instead): long
        // unsynced log tails, of several pages and blocks.
        let rolls = if tear == Tear::Drop { 1000 } else { 4000 };
        // With a cut drawn in a job, a cycle whose writes end before the job has reached
        // its cut writes on, up to twice as many operations: on a slow or loaded machine
        // the background job runs late, and the cut would otherwise often miss it.
        let most = if job.is_some() { 2 * n_ops } else { n_ops };
        let mut done = 0;
        while done < n_ops || (done < most && !power.is_out()) {
            done += 1;
            let roll = rng.gen_range(0..rolls);
            if roll < 10 {
                if failed(db.flush(), "flush") {
                    break;
                }
                durable = ops.len();
                continue;
            }
            // Manual compactions run on the caller's thread; with a crash in a job they
            // would only take work from it.
            if roll < 16 && job.is_none() {
                let a = rng.gen_range(0..300);
                let b = a + rng.gen_range(0..150);
                let (lo, hi) = (key(a), key(b));
                let r = match rng.gen_range(0..3) {
                    0 => db.compact_range(None, None),
                    1 => db.compact_range(Some(&lo), Some(&hi)),
                    _ => db.compact_range(Some(&lo), None),
                };
                if failed(r, "compaction") {
                    break;
                }
                durable = ops.len();
                continue;
            }
            let op = if roll < 80 {
                Op::Delete(key(rng.gen_range(0..300)))
            } else if roll < 95 {
                let a = rng.gen_range(0..300);
                Op::DeleteRange(key(a), key(a + rng.gen_range(1..20)))
            } else {
                next_value += 1;
                let mut v = format!("v{next_value}-").into_bytes();
                v.resize(rng.gen_range(8..200), b'x');
                Op::Put(key(rng.gen_range(0..300)), v)
            };
            let mut b = WriteBatch::new();
            match &op {
                Op::Put(k, v) => b.put(k, v),
                Op::Delete(k) => b.delete(k),
                Op::DeleteRange(a, z) => b.delete_range(a, z),
            }
            // Tearing runs sync rarely: long unsynced tails, of many pages.
            let sync = rng.gen_bool(if tear == Tear::Drop { 0.05 } else { 0.002 });
            let r = db.write(
                b,
                WriteOptions {
                    sync,
                    disable_wal: false,
                },
            );
            if failed(r, "write") {
                break;
            }
            ops.push(op);
            if sync {
                durable = ops.len();
            }
        }
        row_merges += db.stats().row_merges;
        if noticed.get() {
            violations += 1;
            break;
        }
        let in_job = power.cut_by_filter();
        cut_in_job += u32::from(in_job);
        let power_loss = power.is_out() || rng.gen_bool(0.7);
        if power_loss {
            // Nothing becomes durable from here on; background jobs fail and stop.
            power.cut_now();
        } else {
            // A clean shutdown: the cut drawn for this cycle must not land in the close.
            power.disarm();
            durable = ops.len();
        }
        drop(db);
        power.restore();
        fault.simulate_crash().unwrap();
        if check == Check::ClaimAllDurable {
            durable = ops.len();
        }

        let opts = options(
            &fault,
            &power,
            tmp.path(),
            layout,
            check,
            tear,
            job,
            &mut rng,
        );
        let what = format!("cycle {cycle}: reopen after the crash (seed {seed})");
        let Some(db) = reopen(&dir, opts, check, &what) else {
            open_errors += 1;
            break;
        };
        torn_logs += u32::from(db.stats().wal_records_dropped > 0);
        let got = match try_scan(&db) {
            Ok(got) => got,
            Err(e) if check.may_fail_to_read() => {
                eprintln!("cycle {cycle}: scan failed, as the negative control expects: {e}");
                violations += 1;
                break;
            }
            Err(e) => panic!("cycle {cycle}: scan failed (seed {seed}): {e}"),
        };
        let mut state = baseline.clone();
        let mut matched = (durable == 0 && state == got).then_some(0);
        for (i, op) in ops.iter().enumerate() {
            apply(&mut state, op);
            if i + 1 >= durable && state == got {
                matched = Some(i + 1);
                break;
            }
        }
        for (k, v) in got.iter().take(20) {
            match db.get(k) {
                Ok(found) => assert_eq!(found.as_ref(), Some(v), "get {k:?} (seed {seed})"),
                Err(e) if check.may_fail_to_read() => {
                    eprintln!("cycle {cycle}: get failed, as the negative control expects: {e}");
                    violations += 1;
                    break;
                }
                Err(e) => panic!("cycle {cycle}: get {k:?} failed (seed {seed}): {e}"),
            }
        }
        drop(db);
        match matched {
            Some(n) => {
                eprintln!(
                    "cycle {cycle}: {} ops, durable {durable}, recovered {n}, power loss \
                     {power_loss}, cut in the job {in_job}",
                    ops.len()
                );
                baseline = got;
            }
            None if check.is_control() => {
                eprintln!("cycle {cycle}: no allowed prefix, as the negative control expects");
                violations += 1;
                baseline = got;
            }
            None => panic!(
                "cycle {cycle}: recovered state is no prefix of at least {durable} of {} writes \
                 (seed {seed}, power loss {power_loss})",
                ops.len()
            ),
        }
    }
    eprintln!(
        "{row_merges} table merges recorded before the crashes; {torn_logs} reopens dropped \
         a torn log tail"
    );
    Outcome {
        violations,
        open_errors,
        row_merges,
        cut_in_job,
        torn_logs,
    }
}

pub fn cycles() -> u32 {
    std::env::var("TERRACE_INPROC_CRASH_CYCLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30)
}

#[test]
fn recovered_state_is_a_prefix_holding_every_durable_write() {
    run(cycles(), Check::Honest, Layout::OneDir);
}

#[test]
fn with_a_matrix_level0_recovered_state_is_a_prefix_holding_every_durable_write() {
    let out = run(cycles(), Check::Honest, Layout::MatrixLevel0);
    // Crashes must also land around table merges (running or just recorded).
    assert!(
        out.row_merges > 0,
        "no table merge ran in {} cycles",
        cycles()
    );
}

#[test]
fn with_a_matrix_level0_negative_control_notices_unsynced_writes_claimed_durable() {
    let out = run(
        cycles().max(10) / 2,
        Check::ClaimAllDurable,
        Layout::MatrixLevel0,
    );
    assert!(
        out.violations > 0,
        "the checker accepted every cycle although unsynced writes were claimed durable"
    );
}

#[test]
fn negative_control_notices_unsynced_writes_claimed_durable() {
    let out = run(cycles().max(10), Check::ClaimAllDurable, Layout::OneDir);
    assert!(
        out.violations > 0,
        "the checker accepted every cycle although unsynced writes were claimed durable"
    );
}

#[test]
fn with_a_matrix_level0_negative_control_notices_rows_that_were_never_persisted() {
    let out = run(
        cycles().max(10) / 2,
        Check::SkipPersists,
        Layout::MatrixLevel0,
    );
    assert!(
        out.detected(),
        "the checker accepted every cycle although the matrix rows were never persisted"
    );
}

/// Honest crash cycles whose power is cut inside `job`: every cycle must recover, and
/// a quarter of the cuts at least must land in the job (the others end their cycle first)
/// for the test to mean something.
fn crashes_in(job: Job) -> Outcome {
    let n = cycles();
    let out = run_crashing_in(n, Check::Honest, job);
    assert!(
        out.cut_in_job * 4 >= n,
        "only {} of {n} crashes landed in a {job:?}",
        out.cut_in_job
    );
    out
}

/// The negative control of `job`: its durability points lie, and the checker must see a
/// failed reopen or read, or a recovered state that misses durable writes.
fn lies_in(job: Job) {
    let out = run_crashing_in(cycles().max(10) / 2, Check::LieIn(job), job);
    assert!(
        out.detected(),
        "the checker accepted every cycle although the {job:?}'s durability points lied"
    );
}

#[test]
fn a_crash_inside_a_flush_to_a_row_recovers_every_durable_write() {
    crashes_in(Job::Flush);
}

#[test]
fn negative_control_notices_flushed_rows_that_were_never_persisted() {
    lies_in(Job::Flush);
}

#[test]
fn a_crash_inside_a_column_compaction_recovers_every_durable_write() {
    crashes_in(Job::ColumnCompaction);
}

#[test]
fn negative_control_notices_column_compaction_outputs_that_were_never_synced() {
    lies_in(Job::ColumnCompaction);
}

#[test]
fn a_crash_inside_a_table_merge_recovers_every_durable_write() {
    let out = crashes_in(Job::TableMerge);
    assert!(out.row_merges > 0, "no table merge ran");
}

#[test]
fn negative_control_notices_table_merge_outputs_that_were_never_persisted() {
    lies_in(Job::TableMerge);
}

#[test]
fn a_crash_inside_a_table_flush_recovers_every_durable_write() {
    crashes_in(Job::TableFlush);
}

#[test]
fn negative_control_notices_flushed_tables_that_were_never_synced() {
    lies_in(Job::TableFlush);
}

#[test]
fn a_crash_inside_a_compaction_recovers_every_durable_write() {
    crashes_in(Job::Compaction);
}

#[test]
fn negative_control_notices_compaction_outputs_that_were_never_synced() {
    lies_in(Job::Compaction);
}

#[test]
fn a_crash_inside_the_install_of_a_split_offloaded_compaction_recovers_every_durable_write() {
    crashes_in(Job::SplitInstall);
}

#[test]
fn negative_control_notices_split_compaction_installs_that_were_never_synced() {
    lies_in(Job::SplitInstall);
}

#[test]
fn a_crash_inside_a_manifest_write_recovers_every_durable_write() {
    crashes_in(Job::ManifestWrite);
}

#[test]
fn negative_control_notices_manifest_edits_that_were_never_synced() {
    lies_in(Job::ManifestWrite);
}

#[test]
fn negative_control_notices_log_syncs_that_did_nothing() {
    lies_in(Job::LogSync);
}

#[test]
fn negative_control_notices_directory_syncs_that_did_nothing() {
    lies_in(Job::DirSync);
}

/// Power cuts that tear unsynced tails (logs, manifests, tables) at a page boundary.
#[test]
fn with_tails_torn_at_page_boundaries_recovered_state_is_a_prefix_holding_every_durable_write() {
    let out = run_tearing(cycles(), Check::Honest, Layout::OneDir, Tear::Pages);
    assert!(out.torn_logs > 0, "no crash tore a log's tail");
}

/// Power cuts that keep any subset of the pages of unsynced tails, the lost ones read back
/// as zeros where the file's size covers them (holes in the middle of a log's tail).
#[test]
fn with_zeroed_pages_in_unsynced_tails_recovered_state_is_a_prefix_holding_every_durable_write() {
    let out = run_tearing(cycles(), Check::Honest, Layout::OneDir, Tear::ZeroPages);
    assert!(out.torn_logs > 0, "no crash tore a log's tail");
}

#[test]
fn with_zeroed_pages_negative_control_notices_unsynced_writes_claimed_durable() {
    let out = run_tearing(
        cycles().max(10),
        Check::ClaimAllDurable,
        Layout::OneDir,
        Tear::ZeroPages,
    );
    assert!(
        out.violations > 0,
        "the checker accepted every cycle although unsynced writes were claimed durable"
    );
}
