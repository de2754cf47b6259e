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
//! Negative controls prove the checker can fail: [`Check::ClaimAllDurable`] counts every
//! write as durable, and [`Check::SkipPersists`] makes the matrix level 0's region skip
//! its persists, so the rows it flushed vanish with the crash.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use terrace::storage::{FaultStorage, FsStorage};
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
}

fn options(
    fault: &FaultStorage,
    dir: &Path,
    layout: Layout,
    check: Check,
    rng: &mut StdRng,
) -> Options {
    let mut o = crate::small_options();
    o.storage = Arc::new(fault.clone());
    o.write_buffer_size = 8 << 10;
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
        // One row per segment: a group of four rows already has a table merge due, so
        // crashes land before, during and after merges.
        m.params.segment_rows = 1;
        o.level0 = Arc::new(terrace::level0::MatrixLevel0::new(m).unwrap());
    }
    if layout == Layout::SeparateWalDir {
        o.wal_dir = Some(dir.join("wal"));
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
        Err(e) if check == Check::SkipPersists => {
            eprintln!("{what} failed, as the negative control expects: {e}");
            None
        }
        Err(e) => panic!("{what} failed: {e}"),
    }
}

/// Runs `cycles` crash cycles held to `check`. An honest run panics on the first
/// violation; a negative control counts them. A failed reopen or scan panics too, except
/// under [`Check::SkipPersists`], where it is what the control expects: it is counted and
/// the run stops.
pub fn run(cycles: u32, check: Check, layout: Layout) -> Outcome {
    let seed: u64 = std::env::var("TERRACE_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().gen());
    eprintln!(
        "in-process crash test seed={seed} {check:?} {layout:?} \
         (TERRACE_CRASH_SEED={seed} to repeat)"
    );
    let mut rng = StdRng::seed_from_u64(seed);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let fault = FaultStorage::new(Arc::new(FsStorage::new()));
    let mut baseline = Model::new();
    let mut next_value = 0u64;
    let mut violations = 0;
    let mut open_errors = 0;
    let mut row_merges = 0;
    for cycle in 0..cycles {
        let opts = options(&fault, tmp.path(), layout, check, &mut rng);
        let Some(db) = reopen(
            &dir,
            opts,
            check,
            &format!("cycle {cycle}: open (seed {seed})"),
        ) else {
            open_errors += 1;
            break;
        };
        let mut ops: Vec<Op> = Vec::new();
        let mut durable = 0usize;
        let n_ops = rng.gen_range(50..600);
        for _ in 0..n_ops {
            let roll = rng.gen_range(0..1000);
            if roll < 10 {
                db.flush().unwrap();
                durable = ops.len();
                continue;
            }
            if roll < 16 {
                let a = rng.gen_range(0..300);
                let b = a + rng.gen_range(0..150);
                let (lo, hi) = (key(a), key(b));
                match rng.gen_range(0..3) {
                    0 => db.compact_range(None, None).unwrap(),
                    1 => db.compact_range(Some(&lo), Some(&hi)).unwrap(),
                    _ => db.compact_range(Some(&lo), None).unwrap(),
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
            let sync = rng.gen_bool(0.05);
            db.write(
                b,
                WriteOptions {
                    sync,
                    disable_wal: false,
                },
            )
            .unwrap();
            ops.push(op);
            if sync {
                durable = ops.len();
            }
        }
        row_merges += db.stats().row_merges;
        let power_loss = rng.gen_bool(0.7);
        if power_loss {
            // Nothing becomes durable from here on; background jobs fail and stop.
            fault.set_fail_syncs(true);
        } else {
            durable = ops.len();
        }
        drop(db);
        fault.set_fail_syncs(false);
        fault.simulate_crash().unwrap();
        if check == Check::ClaimAllDurable {
            durable = ops.len();
        }

        let opts = options(&fault, tmp.path(), layout, check, &mut rng);
        let what = format!("cycle {cycle}: reopen after the crash (seed {seed})");
        let Some(db) = reopen(&dir, opts, check, &what) else {
            open_errors += 1;
            break;
        };
        let got = match try_scan(&db) {
            Ok(got) => got,
            Err(e) if check == Check::SkipPersists => {
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
            assert_eq!(
                db.get(k).unwrap().as_ref(),
                Some(v),
                "get {k:?} (seed {seed})"
            );
        }
        drop(db);
        match matched {
            Some(n) => {
                eprintln!(
                    "cycle {cycle}: {} ops, durable {durable}, recovered {n}, power loss {power_loss}",
                    ops.len()
                );
                baseline = got;
            }
            None if check != Check::Honest => {
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
    eprintln!("{row_merges} table merges recorded before the crashes");
    Outcome {
        violations,
        open_errors,
        row_merges,
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
