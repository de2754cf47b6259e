//! What each compaction unit did: one [`RunRecord`] per run of a (sub)task, carried in its
//! result, and [`UnitTotals`], the sums per unit the database reports in `stats()`.
//!
//! A unit is where a run happened: `host` for this process's executors, `remote ADDR` for
//! a remote worker (the remote executor names its runs itself: a worker cannot claim to
//! be the host). CPU time is the run's threads' own CPU time (all three stages of a
//! pipeline), so MB per CPU-second compares modes and sides on the work itself, whatever
//! else the machine runs.
//!
//! Owns: the records, the per-thread CPU clock, the totals. Must not touch: how runs are
//! chosen or executed.
//! Concurrency: records are plain data; `UnitTotals` are summed under the caller's lock.

use std::collections::BTreeMap;

/// How a run executed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunMode {
    /// Read, merge and write in turn on one thread.
    Linear,
    /// Read, merge and write as three threads joined by bounded queues.
    Pipelined,
}

impl RunMode {
    /// `linear` or `pipelined`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunMode::Linear => "linear",
            RunMode::Pipelined => "pipelined",
        }
    }
}

/// One run of a (sub)task by one unit.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RunRecord {
    /// Where it ran: `host`, or `remote ADDR`.
    pub unit: String,
    /// How it ran.
    pub mode: RunMode,
    /// Bytes read (as `CompactionStats::input_bytes`).
    pub input_bytes: u64,
    /// Bytes of table files written.
    pub output_bytes: u64,
    /// Wall-clock microseconds.
    pub elapsed_micros: u64,
    /// CPU microseconds of the threads that ran it.
    pub cpu_micros: u64,
    /// The unit that failed this piece (or answered it wrongly), when this run replaced
    /// its run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_for: Option<String>,
    /// Outputs the failed unit had finished that this run kept, running only the rest
    /// of the piece (`compaction::takeover`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub kept_outputs: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// The calling thread's CPU time in microseconds (0 where the clock is unavailable).
pub fn thread_cpu_micros() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    let secs = u64::try_from(t.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(t.tv_nsec).unwrap_or(0);
    secs.saturating_mul(1_000_000).saturating_add(nanos / 1_000)
}

/// One unit's runs, summed.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct UnitTotals {
    /// `host` or `remote ADDR`.
    pub unit: String,
    /// Runs completed and installed or joined.
    pub runs: u64,
    /// Of `runs`, those run linearly.
    pub linear_runs: u64,
    /// Of `runs`, those run as a pipeline.
    pub pipelined_runs: u64,
    /// Bytes read.
    pub input_bytes: u64,
    /// Bytes written.
    pub output_bytes: u64,
    /// Wall-clock microseconds spent running (runs at once add up).
    pub busy_micros: u64,
    /// CPU microseconds.
    pub cpu_micros: u64,
    /// Pieces this unit failed or answered wrongly, run again elsewhere.
    pub failures: u64,
    /// Runs here that replaced another unit's failed piece.
    pub fallbacks: u64,
    /// Outputs of failed pieces that those runs kept instead of writing again.
    pub kept_outputs: u64,
}

impl UnitTotals {
    /// Compaction bandwidth while running: input MB (10^6 bytes) per busy second.
    pub fn mb_per_sec(&self) -> f64 {
        per_second(self.input_bytes, self.busy_micros)
    }

    /// Input MB per CPU-second (CoPro's efficiency measure).
    pub fn mb_per_cpu_second(&self) -> f64 {
        per_second(self.input_bytes, self.cpu_micros)
    }
}

fn per_second(bytes: u64, micros: u64) -> f64 {
    if micros == 0 {
        0.0
    } else {
        bytes as f64 / micros as f64
    }
}

/// Sums of runs per unit.
#[derive(Debug, Default)]
pub struct Totals {
    units: BTreeMap<String, UnitTotals>,
}

impl Totals {
    /// Adds one finished run.
    pub fn add(&mut self, run: &RunRecord) {
        let t = self.unit(&run.unit);
        t.runs += 1;
        match run.mode {
            RunMode::Linear => t.linear_runs += 1,
            RunMode::Pipelined => t.pipelined_runs += 1,
        }
        t.input_bytes += run.input_bytes;
        t.output_bytes += run.output_bytes;
        t.busy_micros += run.elapsed_micros;
        t.cpu_micros += run.cpu_micros;
        if let Some(failed) = &run.fallback_for {
            t.fallbacks += 1;
            t.kept_outputs += run.kept_outputs;
            self.unit(failed).failures += 1;
        }
    }

    fn unit(&mut self, name: &str) -> &mut UnitTotals {
        self.units
            .entry(name.to_string())
            .or_insert_with(|| UnitTotals {
                unit: name.to_string(),
                ..UnitTotals::default()
            })
    }

    /// Every unit's totals, `host` first, then by name.
    pub fn snapshot(&self) -> Vec<UnitTotals> {
        let mut out: Vec<UnitTotals> = self.units.values().cloned().collect();
        out.sort_by_key(|t| (t.unit != HOST, t.unit.clone()));
        out
    }
}

/// The unit name of this process's executors.
pub const HOST: &str = "host";

/// Marks every run of `runs` that has no earlier failure recorded as replacing `failed`.
pub fn mark_fallback(runs: &mut [RunRecord], failed: &str) {
    for r in runs {
        if r.fallback_for.is_none() {
            r.fallback_for = Some(failed.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(unit: &str, mode: RunMode, bytes: u64, micros: u64) -> RunRecord {
        RunRecord {
            unit: unit.into(),
            mode,
            input_bytes: bytes,
            output_bytes: bytes / 2,
            elapsed_micros: micros,
            cpu_micros: micros / 2,
            fallback_for: None,
            kept_outputs: 0,
        }
    }

    #[test]
    fn totals_sum_per_unit_and_count_failures_on_the_failed_unit() {
        let mut t = Totals::default();
        t.add(&run("remote a", RunMode::Pipelined, 4_000_000, 2_000_000));
        t.add(&run(HOST, RunMode::Linear, 1_000_000, 1_000_000));
        let mut replaced = run(HOST, RunMode::Linear, 1_000_000, 1_000_000);
        mark_fallback(std::slice::from_mut(&mut replaced), "remote a");
        t.add(&replaced);
        let s = t.snapshot();
        assert_eq!(s.len(), 2);
        let (host, worker) = (&s[0], &s[1]);
        assert_eq!(host.unit, HOST);
        assert_eq!((host.runs, host.linear_runs, host.fallbacks), (2, 2, 1));
        assert_eq!(host.input_bytes, 2_000_000);
        assert!((host.mb_per_sec() - 1.0).abs() < 1e-9);
        assert!((host.mb_per_cpu_second() - 2.0).abs() < 1e-9);
        assert_eq!(
            (worker.runs, worker.pipelined_runs, worker.failures),
            (1, 1, 1)
        );
        assert!((worker.mb_per_sec() - 2.0).abs() < 1e-9);
    }

    #[test]
    fn the_thread_cpu_clock_advances_with_work() {
        let before = thread_cpu_micros();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(thread_cpu_micros() > before);
    }

    #[test]
    fn a_later_failure_does_not_overwrite_the_first() {
        let mut runs = vec![run(HOST, RunMode::Linear, 1, 1)];
        mark_fallback(&mut runs, "remote a");
        mark_fallback(&mut runs, "dispatch");
        assert_eq!(runs[0].fallback_for.as_deref(), Some("remote a"));
    }
}
