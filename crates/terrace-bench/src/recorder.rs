//! Per-thread measurement of one benchmark: operation counts, bytes, latencies by kind of
//! operation, the shared interval histograms behind the report file, the longest gap
//! between completed writes, and the stop rule (`--num`/`--reads` or `--duration`).
//!
//! Owns: `ThreadStats`, `Shared`, `Budget`. Must not touch: the database or the output.
//! Concurrency: a `ThreadStats` belongs to its worker; `Shared` is read and updated by
//! all workers through atomics and one uncontended mutex per worker (interval histogram).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use indicatif::ProgressBar;
use parking_lot::Mutex;

use crate::error::{BenchError, Result};

/// A latency histogram in nanoseconds, 1 ns .. 1 hour at 3 significant digits.
///
/// # Errors
/// `Histogram` if the library rejects the bounds.
pub fn new_hist() -> Result<Histogram<u64>> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
        .map_err(|e| BenchError::Histogram(e.to_string()))
}

/// Adds `from` into `into`.
///
/// # Errors
/// `Histogram` if the bounds differ.
pub fn merge_hist(into: &mut Histogram<u64>, from: &Histogram<u64>) -> Result<()> {
    into.add(from)
        .map_err(|e| BenchError::Histogram(e.to_string()))
}

/// The kind of one timed operation; names are db_bench's histogram labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum OpKind {
    /// A point read.
    Read,
    /// A put (or a batch of puts).
    Write,
    /// A delete.
    Delete,
    /// A seek (with its nexts).
    Seek,
    /// A YCSB update.
    Update,
    /// A YCSB insert.
    Insert,
    /// A YCSB scan.
    Scan,
    /// A YCSB read-modify-write.
    ReadModifyWrite,
}

impl OpKind {
    /// The label used in output and JSON.
    pub fn label(self) -> &'static str {
        match self {
            OpKind::Read => "read",
            OpKind::Write => "write",
            OpKind::Delete => "delete",
            OpKind::Seek => "seek",
            OpKind::Update => "update",
            OpKind::Insert => "insert",
            OpKind::Scan => "scan",
            OpKind::ReadModifyWrite => "readmodifywrite",
        }
    }

    fn writes(self) -> bool {
        matches!(
            self,
            OpKind::Write
                | OpKind::Delete
                | OpKind::Update
                | OpKind::Insert
                | OpKind::ReadModifyWrite
        )
    }
}

/// State shared by the workers of one benchmark.
#[derive(Debug)]
pub struct Shared {
    start: Instant,
    last_write_nanos: AtomicU64,
    max_write_gap_nanos: AtomicU64,
    /// Set when the readers of a `*whilewriting` benchmark are done.
    pub stop: AtomicBool,
    intervals: Mutex<Vec<Arc<Mutex<Histogram<u64>>>>>,
    reporting: bool,
    progress: Option<ProgressBar>,
}

impl Shared {
    /// State for a benchmark starting now; `reporting` keeps interval histograms.
    pub fn new(reporting: bool, progress: Option<ProgressBar>) -> Self {
        Shared {
            start: Instant::now(),
            last_write_nanos: AtomicU64::new(0),
            max_write_gap_nanos: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            intervals: Mutex::new(Vec::new()),
            reporting,
            progress,
        }
    }

    /// Takes and resets every worker's interval histogram, merged.
    ///
    /// # Errors
    /// `Histogram` if a merge fails.
    pub fn take_interval(&self) -> Result<Histogram<u64>> {
        let mut total = new_hist()?;
        for h in self.intervals.lock().iter() {
            let mut h = h.lock();
            merge_hist(&mut total, &h)?;
            h.reset();
        }
        Ok(total)
    }

    /// The longest time between two completed writes.
    pub fn max_write_gap(&self) -> Duration {
        Duration::from_nanos(self.max_write_gap_nanos.load(Ordering::Relaxed))
    }

    /// The progress bar, if one is drawn.
    pub fn progress(&self) -> Option<&ProgressBar> {
        self.progress.as_ref()
    }
}

/// When a worker stops: after `max_ops` operations, or at the deadline of `--duration`.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    max_ops: u64,
    deadline: Option<Instant>,
}

impl Budget {
    /// `max_ops` operations, unless `duration_seconds > 0`, which runs for that long.
    pub fn new(max_ops: u64, duration_seconds: u64) -> Self {
        let deadline =
            (duration_seconds > 0).then(|| Instant::now() + Duration::from_secs(duration_seconds));
        Budget { max_ops, deadline }
    }

    /// Whether a worker that has done `ops` operations should stop.
    pub fn done(&self, ops: u64) -> bool {
        match self.deadline {
            Some(d) => Instant::now() >= d,
            None => ops >= self.max_ops,
        }
    }
}

/// What one worker measured.
#[derive(Debug)]
pub struct ThreadStats {
    /// Operations completed (a batch of N writes counts N).
    pub done: u64,
    /// Key and value bytes moved.
    pub bytes: u64,
    /// Point reads or seeks that found their key.
    pub found: u64,
    /// Operations by kind.
    pub counts: BTreeMap<OpKind, u64>,
    /// Latency histograms by kind, in nanoseconds.
    pub hists: BTreeMap<OpKind, Histogram<u64>>,
    /// All latencies, in nanoseconds.
    pub all: Histogram<u64>,
    /// When the worker started and finished.
    pub start: Instant,
    /// See `start`.
    pub finish: Instant,
    /// Left out of the benchmark's result (the writer of `readwhilewriting`).
    pub excluded: bool,
    interval: Option<Arc<Mutex<Histogram<u64>>>>,
    unreported: u64,
}

impl ThreadStats {
    /// A worker's stats, registered with `shared` for interval reports.
    ///
    /// # Errors
    /// `Histogram` if a histogram cannot be made.
    pub fn new(shared: &Shared) -> Result<Self> {
        let interval = if shared.reporting {
            let h = Arc::new(Mutex::new(new_hist()?));
            shared.intervals.lock().push(h.clone());
            Some(h)
        } else {
            None
        };
        let now = Instant::now();
        Ok(ThreadStats {
            done: 0,
            bytes: 0,
            found: 0,
            counts: BTreeMap::new(),
            hists: BTreeMap::new(),
            all: new_hist()?,
            start: now,
            finish: now,
            excluded: false,
            interval,
            unreported: 0,
        })
    }

    /// Records `ops` operations of `kind` begun at `began`, moving `bytes`.
    ///
    /// # Errors
    /// `Histogram` if a histogram cannot be made.
    pub fn finished(
        &mut self,
        shared: &Shared,
        kind: OpKind,
        began: Instant,
        ops: u64,
        bytes: u64,
    ) -> Result<()> {
        let now = Instant::now();
        let nanos = now
            .duration_since(began)
            .as_nanos()
            .min(u128::from(u64::MAX)) as u64;
        self.done += ops;
        self.bytes += bytes;
        *self.counts.entry(kind).or_insert(0) += ops;
        let h = match self.hists.entry(kind) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => e.insert(new_hist()?),
        };
        h.saturating_record(nanos.max(1));
        self.all.saturating_record(nanos.max(1));
        if let Some(i) = &self.interval {
            i.lock().saturating_record(nanos.max(1));
        }
        if kind.writes() {
            let at = now
                .duration_since(shared.start)
                .as_nanos()
                .min(u128::from(u64::MAX)) as u64;
            let prev = shared.last_write_nanos.fetch_max(at, Ordering::Relaxed);
            if prev > 0 {
                shared
                    .max_write_gap_nanos
                    .fetch_max(at.saturating_sub(prev), Ordering::Relaxed);
            }
        }
        self.unreported += ops;
        if self.unreported >= 1024 {
            if let Some(p) = &shared.progress {
                p.inc(self.unreported);
            }
            self.unreported = 0;
        }
        self.finish = now;
        Ok(())
    }

    /// Marks the end of the worker's run.
    pub fn stop(&mut self, shared: &Shared) {
        self.finish = Instant::now();
        if let Some(p) = &shared.progress {
            p.inc(self.unreported);
        }
        self.unreported = 0;
    }
}
