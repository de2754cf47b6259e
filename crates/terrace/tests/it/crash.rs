//! Crash tests: a child process writes through the fault-injection storage (which keeps
//! unsynced bytes in its own memory) and reports each acknowledged write; the parent kills
//! it with SIGKILL at a random moment, reopens the database and checks what survived.
//! In one mode the child writes through the real file storage instead, without syncing:
//! a process kill is not a power cut, so every write acknowledged before the kill must
//! survive it (it is in the operating system's page cache, as with RocksDB's WAL on).
//! Each cycle waits for the child's first acknowledgement before it starts the clock that
//! ends in the kill, so that every cycle kills a process with writes in flight.
//!
//! The database runs with the classic level 0, or with the matrix container on a region in
//! `PmemMode::Shadow` (whose unpersisted writes die with the process) and memtables small
//! enough that rows, freezes and column compactions happen within a few cycles.
//!
//! Seeds are printed; rerun one with `TERRACE_CRASH_SEED=<seed>`. Cycles per test come from
//! `TERRACE_CRASH_CYCLES` (default 6).

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use terrace::pmem::PmemMode;
use terrace::storage::{FaultStorage, FsStorage};
use terrace::{Options, WriteBatch, WriteOptions};

const CHILD_ENV: &str = "TERRACE_CRASH_CHILD";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    /// sync = true; acknowledged writes must all survive.
    Sync,
    /// sync = false; the survivors must be a prefix of the writes.
    NoSync,
    /// Negative control: sync = false but reported as acknowledged-durable.
    AckBeforeSync,
    /// sync = false on the real file storage: acknowledged writes must all survive a
    /// process kill (they reached the operating system before the acknowledgement).
    NoSyncRealStorage,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Sync => "sync",
            Mode::NoSync => "nosync",
            Mode::AckBeforeSync => "ack-before-sync",
            Mode::NoSyncRealStorage => "nosync-real-storage",
        }
    }

    /// True if every acknowledged write must survive the kill.
    fn durable_acks(self) -> bool {
        matches!(self, Mode::Sync | Mode::NoSyncRealStorage)
    }
}

/// Which level 0 the database uses.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Level0Kind {
    Classic,
    /// The matrix container, its region file next to the database directory.
    Matrix,
}

impl Level0Kind {
    fn name(self) -> &'static str {
        match self {
            Level0Kind::Classic => "classic",
            Level0Kind::Matrix => "matrix",
        }
    }

    fn parse(name: &str) -> Level0Kind {
        match name {
            "classic" => Level0Kind::Classic,
            "matrix" => Level0Kind::Matrix,
            other => panic!("unknown level 0 {other:?}"),
        }
    }
}

fn key(cycle: u32, i: u64) -> Vec<u8> {
    format!("c{cycle:03}-{i:09}").into_bytes()
}

fn value(cycle: u32, i: u64) -> Vec<u8> {
    let mut v = format!("value-{cycle}-{i}-").into_bytes();
    v.resize(100, b'.');
    v
}

/// The database directory inside a run's temporary directory `root`.
fn db_dir(root: &Path) -> PathBuf {
    root.join("db")
}

fn child_options(fault: bool, root: &Path, l0: Level0Kind) -> Options {
    let mut o = crate::small_options();
    o.write_buffer_size = 64 << 10;
    if l0 == Level0Kind::Matrix {
        // A row every ~60 writes; the rows freeze for column compaction at ~8 rows.
        o.write_buffer_size = 8 << 10;
        o.level0 = crate::matrix_level0(root, 96 << 10, PmemMode::Shadow);
    }
    if fault {
        o.storage = Arc::new(FaultStorage::new(Arc::new(FsStorage::new())));
    }
    o
}

/// The child: runs only when started by `run_cycles` (ignored otherwise).
#[test]
#[ignore = "started as a child process by the crash tests"]
fn crash_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let mut parts = spec.splitn(4, ':');
    let mode = parts.next().unwrap().to_string();
    let l0 = Level0Kind::parse(parts.next().unwrap());
    let cycle: u32 = parts.next().unwrap().parse().unwrap();
    let root = PathBuf::from(parts.next().unwrap());
    let fault = mode != Mode::NoSyncRealStorage.name();
    let db = crate::open_retrying_lock(&db_dir(&root), child_options(fault, &root, l0)).unwrap();
    let sync = mode == "sync";
    let mut out = std::io::stdout().lock();
    use std::io::Write;
    for i in 0.. {
        let mut b = WriteBatch::new();
        b.put(&key(cycle, i), &value(cycle, i));
        db.write(
            b,
            WriteOptions {
                sync,
                disable_wal: false,
            },
        )
        .unwrap();
        writeln!(out, "ACK {i}").unwrap();
        out.flush().unwrap();
    }
}

/// Runs `cycles` kill/reopen cycles; returns the number of cycles in which acknowledged
/// writes were found missing (for the negative control) and panics on any other violation.
fn run_cycles(mode: Mode, l0: Level0Kind, cycles: u32) -> u32 {
    let seed: u64 = std::env::var("TERRACE_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().gen());
    eprintln!(
        "crash test mode={} level0={} seed={seed} (TERRACE_CRASH_SEED={seed} to repeat)",
        mode.name(),
        l0.name()
    );
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut acked: Vec<u64> = Vec::new();
    let mut cycles_with_loss = 0;
    for cycle in 0..cycles {
        let mut child = Command::new(&exe)
            .args([
                "crash::crash_child",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(
                CHILD_ENV,
                format!(
                    "{}:{}:{cycle}:{}",
                    mode.name(),
                    l0.name(),
                    dir.path().display()
                ),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let run_for = Duration::from_millis(rng.gen_range(100..700));
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(n) = line.strip_prefix("ACK ") {
                    if tx.send(n.parse::<u64>().unwrap()).is_err() {
                        break;
                    }
                }
            }
        });
        // The clock starts at the first acknowledgement: a kill before it tests nothing.
        let mut last: Option<u64> = rx.recv_timeout(Duration::from_secs(30)).ok();
        assert!(
            last.is_some(),
            "cycle {cycle}: the child acknowledged no write within 30 s (seed {seed})"
        );
        let start = Instant::now();
        while start.elapsed() < run_for {
            if let Ok(n) = rx.recv_timeout(Duration::from_millis(5)) {
                last = Some(n);
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        // Acknowledgements read after the kill still count: they were printed before it.
        while let Ok(n) = rx.try_recv() {
            last = Some(n);
        }
        let _ = reader.join();
        let acked_now = last.map_or(0, |n| n + 1);
        eprintln!("cycle {cycle}: {acked_now} writes acknowledged in {run_for:?}");
        acked.push(acked_now);
        let lost = verify(dir.path(), mode, l0, &acked, cycle, seed);
        if lost {
            cycles_with_loss += 1;
        }
    }
    cycles_with_loss
}

/// Checks every cycle's writes; returns true if an acknowledged write is missing
/// (allowed only for the modes that do not promise durability).
fn verify(root: &Path, mode: Mode, l0: Level0Kind, acked: &[u64], upto: u32, seed: u64) -> bool {
    let db = crate::open_retrying_lock(&db_dir(root), child_options(false, root, l0))
        .unwrap_or_else(|e| panic!("reopen failed (seed {seed}): {e}"));
    let mut lost = false;
    for cycle in 0..=upto {
        let acked_n = acked[cycle as usize];
        // Present keys of this cycle, from a scan.
        let mut it = db
            .iter(terrace::ReadOptions {
                lower_bound: Some(format!("c{cycle:03}-").into_bytes()),
                upper_bound: Some(format!("c{:03}-", cycle + 1).into_bytes()),
                ..Default::default()
            })
            .unwrap();
        it.seek_to_first().unwrap();
        let mut present = BTreeSet::new();
        while it.valid() {
            let k = std::str::from_utf8(it.key()).unwrap();
            let i: u64 = k[5..].parse().unwrap();
            assert_eq!(
                it.value(),
                value(cycle, i).as_slice(),
                "wrong value for {k} (seed {seed})"
            );
            present.insert(i);
            it.next().unwrap();
        }
        // No holes: the survivors are exactly 0..n for some n.
        let n = present.len() as u64;
        assert!(
            present.iter().copied().eq(0..n),
            "cycle {cycle}: recovered writes have a hole (seed {seed}, mode {mode:?})"
        );
        if n < acked_n {
            lost = true;
            if mode.durable_acks() {
                panic!("cycle {cycle}: {acked_n} writes acknowledged ({mode:?}), only {n} recovered (seed {seed})");
            }
        }
        // Keys past what the child acknowledged may exist (written, not yet reported).
    }
    let s = db.stats();
    let files: Vec<usize> = s.levels.iter().map(|l| l.files).collect();
    eprintln!(
        "after cycle {upto}: level 0 rows {}, files per level {files:?}",
        s.levels[0].rows
    );
    db.close().unwrap();
    lost
}

fn cycles() -> u32 {
    std::env::var("TERRACE_CRASH_CYCLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6)
}

#[test]
fn synced_writes_survive_sigkill() {
    run_cycles(Mode::Sync, Level0Kind::Classic, cycles());
}

#[test]
fn unsynced_writes_recover_to_a_prefix() {
    run_cycles(Mode::NoSync, Level0Kind::Classic, cycles());
}

#[test]
fn unsynced_writes_on_real_storage_survive_sigkill() {
    run_cycles(Mode::NoSyncRealStorage, Level0Kind::Classic, cycles());
}

#[test]
fn with_a_matrix_level0_unsynced_writes_on_real_storage_survive_sigkill() {
    run_cycles(Mode::NoSyncRealStorage, Level0Kind::Matrix, cycles());
}

#[test]
fn negative_control_detects_loss_of_unsynced_acknowledged_writes() {
    // The same check as the sync test, on writes acknowledged before they were durable:
    // the checker must notice the loss, or it would be unable to catch a real bug.
    let lossy = run_cycles(Mode::AckBeforeSync, Level0Kind::Classic, cycles().max(3));
    assert!(lossy > 0, "the crash checker did not detect any lost write");
}

#[test]
fn with_a_matrix_level0_synced_writes_survive_sigkill() {
    run_cycles(Mode::Sync, Level0Kind::Matrix, cycles());
}

#[test]
fn with_a_matrix_level0_negative_control_detects_loss_of_unsynced_acknowledged_writes() {
    let lossy = run_cycles(Mode::AckBeforeSync, Level0Kind::Matrix, cycles().max(3));
    assert!(lossy > 0, "the crash checker did not detect any lost write");
}
