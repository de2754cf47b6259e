//! Per-thread measurement of one benchmark: operation counts, bytes, latencies by kind of
//! operation, the shared interval histograms behind the report file, operations per
//! second of the run (for the slow-second figure), the longest gap between completed
//! writes, and the stop rule (`--num`/`--reads` or `--duration`).
//!
//! Owns: `ThreadStats`, `Shared`, `Budget`. Must not touch: the database or the output.
//! Concurrency: a `ThreadStats` belongs to its worker; `Shared` is read and updated by
//! all workers through atomics and one uncontended mutex per worker (its slot: interval
//! histogram and operations per second), which the reporter locks once per interval.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use indicatif::ProgressBar;
use parking_lot::Mutex;

use crate::error::{BenchError, Result};
use crate::interval::{slow_seconds, SlowSeconds};

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
    /// A manual compaction, or a wait for the background ones (`compact`,
    /// `waitforcompaction`).
    Compaction,
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
            OpKind::Compaction => "compaction",
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

/// What a worker shares with the reporter.
#[derive(Debug)]
struct Slot {
    /// Latencies since the last report row (only with `--report_interval_seconds`).
    interval: Option<Histogram<u64>>,
    /// Operations completed in each whole second since the benchmark started.
    per_second: Vec<u64>,
    /// Counted in the benchmark's result (not the writer of `*whilewriting`).
    measured: bool,
}

/// State shared by the workers of one benchmark.
#[derive(Debug)]
pub struct Shared {
    start: Instant,
    last_write_nanos: AtomicU64,
    max_write_gap_nanos: AtomicU64,
    /// Set when the readers of a `*whilewriting` benchmark are done.
    pub stop: AtomicBool,
    slots: Mutex<Vec<Arc<Mutex<Slot>>>>,
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
            slots: Mutex::new(Vec::new()),
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
        for slot in self.slots.lock().iter() {
            if let Some(h) = slot.lock().interval.as_mut() {
                merge_hist(&mut total, h)?;
                h.reset();
            }
        }
        Ok(total)
    }

    /// Operations of the measured workers completed in each second since the start, up
    /// to the last second in which one completed.
    pub fn ops_per_second(&self) -> Vec<u64> {
        let mut total: Vec<u64> = Vec::new();
        for slot in self.slots.lock().iter() {
            let slot = slot.lock();
            if !slot.measured {
                continue;
            }
            if total.len() < slot.per_second.len() {
                total.resize(slot.per_second.len(), 0);
            }
            for (t, n) in total.iter_mut().zip(&slot.per_second) {
                *t += n;
            }
        }
        total
    }

    /// The slow-second figure of the benchmark's whole seconds. While it runs (`finished`
    /// false) those are the seconds before the current one, with no operation counting
    /// as zero; once the workers are done, every second but the last one holding an
    /// operation, which is partial. `None` before a whole second has passed.
    pub fn slow_seconds(&self, finished: bool) -> Option<SlowSeconds> {
        let mut counts = self.ops_per_second();
        if finished {
            counts.pop();
        } else {
            let whole = usize::try_from(self.start.elapsed().as_secs()).unwrap_or(usize::MAX);
            counts.resize(whole, 0);
        }
        slow_seconds(&counts)
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
    excluded: bool,
    slot: Arc<Mutex<Slot>>,
    unreported: u64,
}

impl ThreadStats {
    /// A measured worker's stats, registered with `shared` for interval reports.
    ///
    /// # Errors
    /// `Histogram` if a histogram cannot be made.
    pub fn new(shared: &Shared) -> Result<Self> {
        ThreadStats::register(shared, true)
    }

    /// Stats of a worker left out of the benchmark's result (the writer of
    /// `readwhilewriting`); its operations still appear in the interval report.
    ///
    /// # Errors
    /// `Histogram` if a histogram cannot be made.
    pub fn new_excluded(shared: &Shared) -> Result<Self> {
        ThreadStats::register(shared, false)
    }

    fn register(shared: &Shared, measured: bool) -> Result<Self> {
        let slot = Arc::new(Mutex::new(Slot {
            interval: if shared.reporting {
                Some(new_hist()?)
            } else {
                None
            },
            per_second: Vec::new(),
            measured,
        }));
        shared.slots.lock().push(slot.clone());
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
            excluded: !measured,
            slot,
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
        let at = now
            .duration_since(shared.start)
            .as_nanos()
            .min(u128::from(u64::MAX)) as u64;
        {
            let mut slot = self.slot.lock();
            if let Some(i) = slot.interval.as_mut() {
                i.saturating_record(nanos.max(1));
            }
            let second = usize::try_from(at / 1_000_000_000).unwrap_or(usize::MAX);
            if slot.per_second.len() <= second {
                slot.per_second.resize(second.saturating_add(1), 0);
            }
            if let Some(n) = slot.per_second.get_mut(second) {
                *n += ops;
            }
        }
        if kind.writes() {
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

    /// Whether the worker is left out of the benchmark's result.
    pub fn excluded(&self) -> bool {
        self.excluded
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
