//! Slowed-down writes are paced at `delayed_write_rate` while level 0's debt stays put:
//! never faster, and with a sleep per millisecond of schedule rather than per write. (How
//! the rate follows a changing debt is tested next to `db::write_delay`.)

use std::sync::Arc;
use std::time::Instant;

use terrace::level0::{Backpressure, ClassicLevel0, Level0, Level0Env, Level0Flush, Level0View};
use terrace::memtable::MemTable;
use terrace::tables::Tables;
use terrace::version::Version;
use terrace::{Db, Options};

/// The classic level 0, except that it always asks writers to slow down and reports a
/// constant size, so that the delayed rate never adapts: the configured one holds.
struct AlwaysSlow;

impl Level0 for AlwaysSlow {
    fn kind(&self) -> &'static str {
        "always-slow"
    }
    fn flush(
        &self,
        env: &Level0Env<'_>,
        mem: &Arc<MemTable>,
        file_number: u64,
    ) -> terrace::Result<Level0Flush> {
        ClassicLevel0.flush(env, mem, file_number)
    }
    fn empty_state(&self) -> Arc<dyn terrace::version::Level0State> {
        ClassicLevel0.empty_state()
    }

    fn install(&self, tables: &Arc<Tables>, version: &Arc<Version>) -> Arc<dyn Level0View> {
        ClassicLevel0.install(tables, version)
    }
    fn size_bytes(&self, _version: &Version) -> u64 {
        1 << 20
    }
    fn backpressure(
        &self,
        _version: &Version,
        _opts: &terrace::level0::Level0Settings,
    ) -> Backpressure {
        Backpressure::Slowdown
    }
    fn compaction_score(
        &self,
        version: &Version,
        busy: &std::collections::HashSet<u64>,
        opts: &terrace::level0::Level0Settings,
    ) -> f64 {
        ClassicLevel0.compaction_score(version, busy, opts)
    }
    fn durable_seq(&self, version: &Version) -> u64 {
        ClassicLevel0.durable_seq(version)
    }
    fn checkpoint(
        &self,
        version: &Version,
    ) -> terrace::Result<Option<Box<dyn terrace::level0::Level0Copy>>> {
        ClassicLevel0.checkpoint(version)
    }
    fn recover(&self, env: &Level0Env<'_>, version: &Version) -> terrace::Result<()> {
        ClassicLevel0.recover(env, version)
    }
}

#[test]
fn slowed_writes_keep_to_the_delayed_write_rate() {
    let dir = tempfile::tempdir().unwrap();
    let rate = 4u64 << 20;
    let opts = Options {
        level0: Arc::new(AlwaysSlow),
        delayed_write_rate: rate,
        // One memtable holds the whole load: no flush, so no wait but the pacing's.
        write_buffer_size: 4 << 20,
        ..crate::small_options()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    let writes = 800u64;
    let value = [7u8; 1024];
    let start = Instant::now();
    for i in 0..writes {
        db.put(format!("k{i:05}").as_bytes(), &value).unwrap();
    }
    let elapsed = start.elapsed();
    let s = db.stats();
    // Never faster than the rate: the schedule is slept out before it runs a millisecond
    // ahead (a lower bound, whatever the machine's speed).
    let bytes = s.user_bytes_written;
    let floor = std::time::Duration::from_micros(bytes * 1_000_000 / rate);
    assert!(
        elapsed + std::time::Duration::from_millis(2) >= floor,
        "{bytes} bytes in {elapsed:?}, faster than {rate} B/s allows ({floor:?})"
    );
    // Paced, not a sleep per write: a write costs a quarter of a millisecond at this rate,
    // and the leader sleeps only once a whole millisecond is due.
    assert!(s.stall_count > 0, "writes were never delayed");
    assert!(
        s.stall_count <= writes / 3,
        "{} sleeps for {writes} writes",
        s.stall_count
    );
    for i in (0..writes).step_by(97) {
        assert_eq!(
            db.get(format!("k{i:05}").as_bytes()).unwrap().as_deref(),
            Some(&value[..])
        );
    }
}
