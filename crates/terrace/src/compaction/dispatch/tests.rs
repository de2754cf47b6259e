use std::sync::Barrier;

use super::*;
use crate::compaction::{CompactionStats, FilterRegistry};
use crate::error::Error;
use crate::storage::{FsStorage, Storage};
use crate::tables::Tables;

/// A unit that answers with an empty result (or fails), after waiting on its barrier.
struct Fake {
    name: &'static str,
    fail: bool,
    hold: Option<Arc<Barrier>>,
    calls: AtomicU64,
}

impl Fake {
    fn new(name: &'static str, fail: bool) -> Arc<Fake> {
        Arc::new(Fake {
            name,
            fail,
            hold: None,
            calls: AtomicU64::new(0),
        })
    }
}

impl CompactionExecutor for Fake {
    fn name(&self) -> &str {
        self.name
    }

    fn execute(&self, task: &CompactionTask, _env: &ExecutorEnv<'_>) -> Result<CompactionResult> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if let Some(b) = &self.hold {
            b.wait();
            b.wait();
        }
        if self.fail {
            return Err(Error::Unsupported("unit down".into()));
        }
        Ok(CompactionResult {
            task_id: task.id,
            outputs: vec![],
            stats: CompactionStats::default(),
            runs: vec![],
        })
    }
}

fn task() -> CompactionTask {
    let json = br#"{"format_version":2,"id":1,"inputs":[],"output_level":1,"smallest_user_key":null,"largest_user_key":null,"snapshots":[],"bottommost":false,"output":{"target_file_size":1,"block_size":4096,"restart_interval":16,"bloom_bits_per_key":0,"compression":"None","volume":0,"file_numbers":[]},"filter":null,"reason":"LevelSize"}"#;
    CompactionTask::decode(json).unwrap()
}

fn with_env(f: impl FnOnce(&ExecutorEnv<'_>)) {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(FsStorage::new());
    let tables = Tables::new(storage.clone(), dir.path(), vec![], 4, None);
    let filters = FilterRegistry::new();
    f(&ExecutorEnv {
        storage: storage.as_ref(),
        tables: &tables,
        filters: &filters,
        level0: None,
        progress: None,
    });
}

#[test]
fn round_robin_takes_each_unit_in_turn_and_failures_fall_back() {
    let (a, b, down, host) = (
        Fake::new("a", false),
        Fake::new("b", false),
        Fake::new("down", true),
        Fake::new("host", false),
    );
    let d = DispatchingExecutor::new(
        vec![a.clone(), b.clone(), down.clone()],
        host.clone(),
        DispatchPolicy::RoundRobin,
    );
    with_env(|env| {
        for _ in 0..6 {
            d.execute(&task(), env).unwrap();
        }
    });
    let stats = d.unit_stats();
    assert_eq!(
        stats[0],
        (
            "a".into(),
            UnitStats {
                succeeded: 2,
                failed: 0
            }
        )
    );
    assert_eq!(
        stats[1],
        (
            "b".into(),
            UnitStats {
                succeeded: 2,
                failed: 0
            }
        )
    );
    assert_eq!(
        stats[2],
        (
            "down".into(),
            UnitStats {
                succeeded: 0,
                failed: 2
            }
        )
    );
    assert_eq!(host.calls.load(Ordering::SeqCst), 2);
    // No units: everything runs on the fallback.
    let none = DispatchingExecutor::new(vec![], host.clone(), DispatchPolicy::LeastLoaded);
    with_env(|env| {
        none.execute(&task(), env).unwrap();
    });
    assert_eq!(host.calls.load(Ordering::SeqCst), 3);
}

#[test]
fn least_loaded_passes_a_busy_unit_by() {
    let barrier = Arc::new(Barrier::new(2));
    let busy = Arc::new(Fake {
        name: "busy",
        fail: false,
        hold: Some(barrier.clone()),
        calls: AtomicU64::new(0),
    });
    let idle = Fake::new("idle", false);
    let d = DispatchingExecutor::new(
        vec![busy.clone(), idle.clone()],
        Fake::new("host", false),
        DispatchPolicy::LeastLoaded,
    );
    with_env(|env| {
        std::thread::scope(|s| {
            let first = s.spawn(|| d.execute(&task(), env).map(|_| ()));
            // The first task is inside the busy unit; the next goes to the idle one.
            barrier.wait();
            d.execute(&task(), env).unwrap();
            barrier.wait();
            first.join().unwrap().unwrap();
        });
    });
    assert_eq!(busy.calls.load(Ordering::SeqCst), 1);
    assert_eq!(idle.calls.load(Ordering::SeqCst), 1);
    // Both idle again: the first of equals.
    let (a, b) = (Fake::new("a", false), Fake::new("b", false));
    let d = DispatchingExecutor::new(
        vec![a.clone(), b.clone()],
        Fake::new("host", false),
        DispatchPolicy::LeastLoaded,
    );
    with_env(|env| {
        d.execute(&task(), env).unwrap();
    });
    assert_eq!(
        (
            a.calls.load(Ordering::SeqCst),
            b.calls.load(Ordering::SeqCst)
        ),
        (1, 0)
    );
}
