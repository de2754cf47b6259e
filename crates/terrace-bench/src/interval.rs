//! The report-interval series: every `--report_interval_seconds` a row of throughput and
//! latency of the operations completed in that interval, appended to `--report_file` as
//! CSV while the benchmark runs (db_bench's `secs_elapsed,interval_qps`, plus latency
//! columns, the benchmark's name, the tree depth and the slow-second share so far).
//!
//! Also the slow-second figure itself: the share of a run's whole 1-second intervals
//! whose throughput is below 20% of the median second's, which counts the seconds a
//! stall or a throttled device took from the writers (MatrixKV's "fluctuation").
//!
//! Owns: `IntervalRow`, `SlowSeconds`, the CSV file, the reporter loop. Must not touch:
//! the database (the tree depth comes through a function the caller passes).
//! Concurrency: the reporter runs on its own thread and reads the workers' interval
//! histograms through `Shared`; the CSV file is behind a mutex.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::error::{BenchError, Result};
use crate::recorder::Shared;

#[cfg(test)]
mod tests;

/// A second is slow when its operations are below this share of the median second's.
pub const SLOW_SECOND_FRACTION: f64 = 0.2;

/// How steady a run's throughput was, over its whole 1-second intervals.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct SlowSeconds {
    /// Whole seconds measured.
    pub seconds: u64,
    /// Operations in the median second (the mean of the two middle ones for an even
    /// count).
    pub median_ops_per_sec: f64,
    /// Seconds with fewer operations than `SLOW_SECOND_FRACTION` of the median.
    pub slow_seconds: u64,
    /// `slow_seconds / seconds`.
    pub share: f64,
}

/// The slow-second figure of `ops_per_second`, the operations completed in each whole
/// second of a run (seconds without any count as 0); `None` for no seconds. When more
/// than half the seconds saw no operation the median is 0 and no second is slow: read
/// `median_ops_per_sec` with the share.
pub fn slow_seconds(ops_per_second: &[u64]) -> Option<SlowSeconds> {
    let mut sorted = ops_per_second.to_vec();
    sorted.sort_unstable();
    let n = sorted.len();
    let median = match (sorted.get(n.wrapping_sub(1) / 2), sorted.get(n / 2)) {
        (Some(a), Some(b)) => (*a as f64 + *b as f64) / 2.0,
        _ => return None,
    };
    let limit = median * SLOW_SECOND_FRACTION;
    let slow = sorted.iter().take_while(|&&v| (v as f64) < limit).count() as u64;
    Some(SlowSeconds {
        seconds: n as u64,
        median_ops_per_sec: median,
        slow_seconds: slow,
        share: slow as f64 / n as f64,
    })
}

/// Throughput and latency of one interval.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct IntervalRow {
    /// Seconds since the run started, at the end of the interval.
    pub secs_elapsed: f64,
    /// Operations per second in the interval.
    pub interval_qps: f64,
    /// Median latency in the interval, microseconds.
    pub p50_micros: f64,
    /// 99th percentile latency in the interval, microseconds.
    pub p99_micros: f64,
    /// Largest latency in the interval, microseconds.
    pub max_micros: f64,
    /// The benchmark running.
    pub benchmark: String,
    /// Non-empty levels below the memtables at the end of the interval (`None` when the
    /// levels are unknown, as in server mode).
    pub tree_depth: Option<usize>,
    /// The slow-second share of the benchmark's whole seconds so far (`None` before the
    /// first whole second); the benchmark's last row carries its result's figure when the
    /// last partial interval saw operations.
    pub slow_second_share: Option<f64>,
    /// Each throttled volume's I/O in the interval, as iostat shows a device (empty
    /// without `--volumes`, and in server mode).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<VolumeInterval>,
}

/// One volume's I/O in one interval.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct VolumeInterval {
    /// The volume's id.
    pub id: u32,
    /// Operations per second.
    pub iops: f64,
    /// Megabytes (10^6) per second read and written.
    pub mb_per_sec: f64,
    /// Milliseconds of throttle wait per second, summed over the threads that waited.
    pub wait_ms_per_sec: f64,
}

/// What the engine says at the end of an interval: the tree depth, and each throttled
/// volume's cumulative counters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EngineSample {
    /// Non-empty levels below the memtables (`None` where unknown).
    pub tree_depth: Option<usize>,
    /// `(volume id, operations, bytes, wait microseconds)` since the database opened.
    pub volumes: Vec<(u32, u64, u64, u64)>,
}

impl EngineSample {
    /// The sample of `stats`.
    pub fn of(stats: &terrace::DbStats) -> Self {
        EngineSample {
            tree_depth: Some(crate::report::tree_depth(&stats.levels)),
            volumes: stats
                .volumes
                .iter()
                .filter(|v| v.throttled)
                .map(|v| (v.id, v.ios, v.bytes, v.wait_micros))
                .collect(),
        }
    }
}

/// Each volume's I/O per second between samples `before` and `after`, `secs` apart.
pub fn volume_intervals(
    before: &EngineSample,
    after: &EngineSample,
    secs: f64,
) -> Vec<VolumeInterval> {
    let per_sec = |x: f64| if secs > 0.0 { x / secs } else { 0.0 };
    after
        .volumes
        .iter()
        .map(|&(id, ios, bytes, wait)| {
            let (b_ios, b_bytes, b_wait) = before
                .volumes
                .iter()
                .find(|v| v.0 == id)
                .map_or((0, 0, 0), |v| (v.1, v.2, v.3));
            VolumeInterval {
                id,
                iops: per_sec(ios.saturating_sub(b_ios) as f64),
                mb_per_sec: per_sec(bytes.saturating_sub(b_bytes) as f64 / 1e6),
                wait_ms_per_sec: per_sec(wait.saturating_sub(b_wait) as f64 / 1e3),
            }
        })
        .collect()
}

/// The CSV report file, and beside it (created with the first row that has volumes)
/// the per-volume series: `<report_file>` with `.volumes.csv` for its extension, one row
/// per volume per interval.
#[derive(Debug)]
pub struct CsvReport {
    path: PathBuf,
    out: BufWriter<File>,
    volumes: Option<(PathBuf, BufWriter<File>)>,
}

/// The per-volume series' file beside the report file `path`.
pub fn volumes_path(path: &Path) -> PathBuf {
    path.with_extension("volumes.csv")
}

impl CsvReport {
    /// The interval report a run asks for: `--report_file`, when
    /// `--report_interval_seconds` is set; shared by the run's reporter thread.
    ///
    /// # Errors
    /// `Io` if the file cannot be created.
    pub fn for_run(flags: &crate::flags::Flags) -> Result<parking_lot::Mutex<Option<CsvReport>>> {
        let report = if flags.report_interval_seconds > 0 {
            Some(CsvReport::create(&flags.report_file)?)
        } else {
            None
        };
        Ok(parking_lot::Mutex::new(report))
    }

    /// Creates (truncates) `path` and writes the header.
    ///
    /// # Errors
    /// `Io` if the file cannot be created.
    pub fn create(path: &Path) -> Result<CsvReport> {
        let io = |source| BenchError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut out = BufWriter::new(File::create(path).map_err(io)?);
        writeln!(
            out,
            "secs_elapsed,interval_qps,p50_micros,p99_micros,max_micros,benchmark,\
             tree_depth,slow_second_share"
        )
        .map_err(io)?;
        Ok(CsvReport {
            path: path.to_path_buf(),
            out,
            volumes: None,
        })
    }

    fn append(&mut self, r: &IntervalRow) -> Result<()> {
        let io = |source| BenchError::Io {
            path: self.path.clone(),
            source,
        };
        let depth = r.tree_depth.map(|d| d.to_string()).unwrap_or_default();
        let share = r
            .slow_second_share
            .map(|s| format!("{s:.4}"))
            .unwrap_or_default();
        writeln!(
            self.out,
            "{:.3},{:.0},{:.2},{:.2},{:.2},{},{},{}",
            r.secs_elapsed,
            r.interval_qps,
            r.p50_micros,
            r.p99_micros,
            r.max_micros,
            r.benchmark,
            depth,
            share
        )
        .map_err(io)?;
        self.out.flush().map_err(io)?;
        if !r.volumes.is_empty() {
            self.append_volumes(r)?;
        }
        Ok(())
    }

    fn append_volumes(&mut self, r: &IntervalRow) -> Result<()> {
        if self.volumes.is_none() {
            let path = volumes_path(&self.path);
            let io = |source| BenchError::Io {
                path: path.clone(),
                source,
            };
            let mut out = BufWriter::new(File::create(&path).map_err(io)?);
            writeln!(
                out,
                "secs_elapsed,benchmark,volume,iops,mb_per_sec,wait_ms_per_sec"
            )
            .map_err(io)?;
            self.volumes = Some((path, out));
        }
        let Some((path, out)) = self.volumes.as_mut() else {
            return Ok(());
        };
        let io = |source| BenchError::Io {
            path: path.clone(),
            source,
        };
        for v in &r.volumes {
            writeln!(
                out,
                "{:.3},{},{},{:.1},{:.3},{:.1}",
                r.secs_elapsed, r.benchmark, v.id, v.iops, v.mb_per_sec, v.wait_ms_per_sec
            )
            .map_err(io)?;
        }
        out.flush().map_err(io)
    }
}

/// Takes a row every `every` until `done` is set, then one last row for the partial
/// interval if it saw operations. `engine` samples the engine for each row (the tree
/// depth, and the volumes' counters, whose differences become the row's volumes).
/// Returns the rows.
///
/// # Errors
/// `Io` writing the CSV file, `Histogram` merging.
pub fn report_loop(
    shared: &Shared,
    every: Duration,
    benchmark: &str,
    run_start: Instant,
    done: &AtomicBool,
    csv: &Mutex<Option<CsvReport>>,
    engine: &(dyn Fn() -> EngineSample + Sync),
) -> Result<Vec<IntervalRow>> {
    let mut rows = Vec::new();
    let mut last = Instant::now();
    let mut last_sample = engine();
    loop {
        let finished = done.load(Ordering::Acquire);
        let now = Instant::now();
        if finished || now.duration_since(last) >= every {
            let h = shared.take_interval()?;
            let secs = now.duration_since(last).as_secs_f64();
            last = now;
            if !finished || !h.is_empty() {
                let sample = engine();
                let volumes = volume_intervals(&last_sample, &sample, secs);
                let us = |v: u64| v as f64 / 1000.0;
                let row = IntervalRow {
                    secs_elapsed: now.duration_since(run_start).as_secs_f64(),
                    interval_qps: if secs > 0.0 {
                        h.len() as f64 / secs
                    } else {
                        0.0
                    },
                    p50_micros: us(h.value_at_quantile(0.5)),
                    p99_micros: us(h.value_at_quantile(0.99)),
                    max_micros: us(h.max()),
                    benchmark: benchmark.to_string(),
                    tree_depth: sample.tree_depth,
                    slow_second_share: shared.slow_seconds(finished).map(|s| s.share),
                    volumes,
                };
                last_sample = sample;
                if let Some(c) = csv.lock().as_mut() {
                    c.append(&row)?;
                }
                rows.push(row);
            }
            if finished {
                return Ok(rows);
            }
        }
        std::thread::sleep(Duration::from_millis(20).min(every));
    }
}
