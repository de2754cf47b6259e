//! The integration tests: public API only, one binary.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod api;
mod compaction_executor;
mod compaction_pri;
mod concurrency;
mod corruption;
mod crash;
mod crash_inproc;
mod external_log;
mod format_fixtures;
mod io_errors;
mod level_stats;
mod matrix;
mod matrix_full;
mod model;
mod module_graph;
mod parallel_flush;
mod read_trigger;
mod regress;
mod seams;
mod sync_wal;
mod throttle;
mod volumes;
mod wal_dir;
mod wal_recovery;
mod write_delay;

use std::path::Path;

use terrace::{Db, Options};

/// Options that make flushes and compactions happen after a few kilobytes.
pub fn small_options() -> Options {
    Options {
        write_buffer_size: 16 << 10,
        target_file_size_base: 32 << 10,
        max_bytes_for_level_base: 128 << 10,
        level0_file_num_compaction_trigger: 2,
        level0_slowdown_writes_trigger: 8,
        level0_stop_writes_trigger: 12,
        block_size: 1024,
        ..Options::default()
    }
}

/// Options of a matrix-container level 0 with its region file in `dir`, small enough that
/// rows, freezes, table merges and column compactions happen within a few hundred kilobytes of writes.
pub fn matrix_options(
    dir: &Path,
    capacity: u64,
    mode: terrace::pmem::PmemMode,
) -> terrace::level0::MatrixOptions {
    let mut opts = terrace::level0::MatrixOptions {
        region_path: Some(dir.join("region.pmem")),
        capacity,
        page_size: 4096,
        mode,
        columns: 16,
        ..Default::default()
    };
    opts.params.chunk_bytes = 4096;
    opts.params.segment_rows = 3;
    // Table merges of two segments happen once a group holds three closed ones.
    opts.params.merge_segments = 2;
    opts
}

/// A matrix-container level 0 made from [`matrix_options`].
pub fn matrix_level0(
    dir: &Path,
    capacity: u64,
    mode: terrace::pmem::PmemMode,
) -> std::sync::Arc<dyn terrace::level0::Level0> {
    let opts = matrix_options(dir, capacity, mode);
    std::sync::Arc::new(terrace::level0::MatrixLevel0::new(opts).unwrap())
}

/// Every key and value of the database, in order.
pub fn scan_all(db: &Db) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = db.iter(terrace::ReadOptions::default()).unwrap();
    it.seek_to_first().unwrap();
    it.collect_remaining().unwrap()
}

/// Opens `dir` with `opts`, panicking with the error on failure.
pub fn open(dir: &Path, opts: Options) -> Db {
    Db::open(dir, opts).unwrap()
}

/// Opens `dir` with `opts`, retrying for up to two seconds while it is `Locked`: a child
/// process that another test is spawning holds a copy of every descriptor of this
/// process between its fork and its exec, the lock of a database just closed included.
pub fn open_retrying_lock(dir: &Path, opts: Options) -> terrace::Result<Db> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    loop {
        match Db::open(dir, opts.clone()) {
            Err(terrace::Error::Locked(_)) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            r => return r,
        }
    }
}

/// The proptest case count: `PROPTEST_CASES` or `default`.
pub fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A stand-in for a worker in this process: the pipelined executor, taken at its word no
/// more than a remote one (its results are checked in full, a failure is taken over).
pub struct UntrustedPipeline;

impl terrace::compaction::CompactionExecutor for UntrustedPipeline {
    fn name(&self) -> &str {
        "untrusted pipeline"
    }

    fn trust(&self) -> terrace::compaction::Trust {
        terrace::compaction::Trust::Remote
    }

    fn execute(
        &self,
        task: &terrace::compaction::CompactionTask,
        env: &terrace::compaction::ExecutorEnv<'_>,
    ) -> terrace::Result<terrace::compaction::CompactionResult> {
        terrace::compaction::execute_pipelined(task, env)
    }
}

/// Compactions shared between this host (linear) and an [`UntrustedPipeline`] device by
/// work stealing over four pieces: every task is split, half checked as a remote's.
pub fn offloaded_executor() -> std::sync::Arc<dyn terrace::compaction::CompactionExecutor> {
    use terrace::compaction::{CollaborativeExecutor, LinearExecutor, SharePolicy};
    std::sync::Arc::new(CollaborativeExecutor::new(
        std::sync::Arc::new(LinearExecutor),
        std::sync::Arc::new(UntrustedPipeline),
        SharePolicy::Steal(4),
    ))
}
