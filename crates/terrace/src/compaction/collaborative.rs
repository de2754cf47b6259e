//! Collaborative compaction (CoPro's data parallelism, docs/techniques/copro.md): one task
//! is cut by key range between the host and a device (any two executors), both shares run
//! at once, and the outputs come back as one result for one version edit.
//!
//! Owns: the share policy (a static ratio, a ratio from each side's measured speed, or
//! work stealing over small pieces), running the shares, checking the device's share
//! (and running it on the host when it fails or does not check out), and joining the
//! results. Must not touch: where either side runs (the executors) or the install.
//! Concurrency: each call runs its shares on scoped threads; the measured speeds are
//! shared by all calls under a mutex.

use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use super::split::{boundaries, input_samples, SplitPolicy};
use super::takeover::run_or_take_over;
use super::{
    CompactionExecutor, CompactionResult, CompactionStats, CompactionTask, ExecutorEnv, Trust,
};
use crate::error::{Error, Result};

/// How a task's input bytes are shared between host and device.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SharePolicy {
    /// The device takes this share of each task's input bytes (CoPro: 0.5).
    Static(f64),
    /// The device's share follows the two sides' measured bytes per second on recent
    /// tasks (starting at half).
    Dynamic,
    /// The task is cut into this many similar pieces that host and device take from one
    /// queue as they finish, so each side's share follows its speed with no formula.
    Steal(usize),
}

/// Measured throughput, bytes of input per second, smoothed; 0 until measured.
#[derive(Debug, Default, Clone, Copy)]
struct Speeds {
    host: f64,
    device: f64,
}

/// Runs each task on both `host` and `device`; see the module documentation.
pub struct CollaborativeExecutor {
    host: Arc<dyn CompactionExecutor>,
    device: Arc<dyn CompactionExecutor>,
    policy: SharePolicy,
    name: String,
    speeds: Mutex<Speeds>,
}

impl CollaborativeExecutor {
    /// Shares tasks between `host` (trusted, the fallback) and `device` under `policy`.
    pub fn new(
        host: Arc<dyn CompactionExecutor>,
        device: Arc<dyn CompactionExecutor>,
        policy: SharePolicy,
    ) -> Self {
        let name = format!(
            "collaborative {} + {} ({policy:?})",
            host.name(),
            device.name()
        );
        CollaborativeExecutor {
            host,
            device,
            policy,
            name,
            speeds: Mutex::new(Speeds::default()),
        }
    }

    /// The device's share of the next task under a static or dynamic policy.
    fn device_share(&self) -> f64 {
        match self.policy {
            SharePolicy::Static(r) => r,
            SharePolicy::Dynamic | SharePolicy::Steal(_) => {
                let s = *self.speeds.lock();
                if s.host > 0.0 && s.device > 0.0 {
                    (s.device / (s.host + s.device)).clamp(0.05, 0.95)
                } else {
                    0.5
                }
            }
        }
    }

    fn record(&self, device: bool, result: &CompactionResult, started: Instant) {
        let secs = started.elapsed().as_secs_f64().max(1e-6);
        let speed = result.stats.input_bytes as f64 / secs;
        let mut s = self.speeds.lock();
        let slot = if device { &mut s.device } else { &mut s.host };
        *slot = if *slot == 0.0 {
            speed
        } else {
            0.7 * *slot + 0.3 * speed
        };
    }

    /// Runs `piece` on the device, checking its result; on any failure the host takes it
    /// over (`compaction::takeover`).
    fn on_device(&self, piece: &CompactionTask, env: &ExecutorEnv<'_>) -> Result<CompactionResult> {
        let started = Instant::now();
        let outcome = run_or_take_over(self.device.as_ref(), self.host.as_ref(), piece, env)?;
        // A piece the host took over measures neither side.
        if outcome.failure.is_none() {
            self.record(true, &outcome.result, started);
        }
        Ok(outcome.result)
    }

    fn on_host(&self, piece: &CompactionTask, env: &ExecutorEnv<'_>) -> Result<CompactionResult> {
        let started = Instant::now();
        let r = self.host.execute(piece, env)?;
        self.record(false, &r, started);
        Ok(r)
    }

    /// Runs the shares and returns their results in key order (for the ratio policies the
    /// host takes the lower keys, the device the upper).
    fn run_shares(
        &self,
        task: &CompactionTask,
        env: &ExecutorEnv<'_>,
    ) -> Result<Vec<CompactionResult>> {
        let samples = input_samples(task, env.tables)?;
        match self.policy {
            SharePolicy::Static(_) | SharePolicy::Dynamic => {
                let cuts = boundaries(
                    task,
                    &samples,
                    SplitPolicy::Ratio(1.0 - self.device_share()),
                );
                let pieces = task.split(&cuts);
                match pieces.as_slice() {
                    [host, device] => std::thread::scope(|s| {
                        let d = s.spawn(|| self.on_device(device, env));
                        let h = self.on_host(host, env);
                        let d = d.join().unwrap_or_else(|_| Err(panicked()));
                        Ok(vec![h?, d?])
                    }),
                    // Too small to cut: the host runs it whole.
                    _ => pieces.iter().map(|p| self.on_host(p, env)).collect(),
                }
            }
            SharePolicy::Steal(n) => {
                // At least two reserved numbers per piece, so that a piece can cut outputs.
                let n = n.max(2).min(task.output.file_numbers.len() / 2);
                let cuts = boundaries(task, &samples, SplitPolicy::Pieces(n));
                let pieces = task.split(&cuts);
                let next = Mutex::new(0usize);
                let results: Vec<Mutex<Option<Result<CompactionResult>>>> =
                    pieces.iter().map(|_| Mutex::new(None)).collect();
                let worker = |device: bool| loop {
                    let i = {
                        let mut n = next.lock();
                        let i = *n;
                        *n += 1;
                        i
                    };
                    let (Some(piece), Some(slot)) = (pieces.get(i), results.get(i)) else {
                        break;
                    };
                    let r = if device {
                        self.on_device(piece, env)
                    } else {
                        self.on_host(piece, env)
                    };
                    *slot.lock() = Some(r);
                };
                std::thread::scope(|s| {
                    let d = s.spawn(|| worker(true));
                    worker(false);
                    d.join().map_err(|_| panicked())
                })?;
                results
                    .into_iter()
                    .map(|m| m.into_inner().unwrap_or_else(|| Err(panicked())))
                    .collect()
            }
        }
    }
}

fn panicked() -> Error {
    Error::Internal("a collaborative compaction share panicked or was never run".into())
}

impl CompactionExecutor for CollaborativeExecutor {
    fn name(&self) -> &str {
        &self.name
    }

    /// The device's share is checked here before it is joined, so the joined result is
    /// as good as the host's.
    fn trust(&self) -> Trust {
        self.host.trust()
    }

    fn execute(&self, task: &CompactionTask, env: &ExecutorEnv<'_>) -> Result<CompactionResult> {
        let started = Instant::now();
        let results = self.run_shares(task, env)?;
        let mut stats = CompactionStats::default();
        let mut outputs = Vec::new();
        let mut runs = Vec::new();
        for r in results {
            runs.extend(r.runs);
            stats.add(&r.stats);
            outputs.extend(r.outputs);
        }
        stats.elapsed_micros = started.elapsed().as_micros() as u64;
        Ok(CompactionResult {
            task_id: task.id,
            outputs,
            stats,
            runs,
        })
    }
}

#[cfg(test)]
mod tests;
