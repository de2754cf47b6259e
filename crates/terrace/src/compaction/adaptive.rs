//! CoPro+'s decision component (docs/techniques/copro.md): before each task, a score
//! f = a * CPU + b * memory + c * (share of large values) chooses between the pipelined
//! and the linear executor. The pipeline buys speed with CPU (two more threads per task)
//! and a little memory, and buys little for large values, whose cost is I/O; so a busy
//! machine or a large-value task runs linearly.
//!
//! Unlike the paper's component, ours has hysteresis: it turns the pipeline off when f
//! rises past `threshold + hysteresis`, back on only when f falls below
//! `threshold - hysteresis`, and holds each choice for at least `min_hold`; a signal that
//! wanders around the threshold (the paper's Fig. 12 shows its pipeline switched on and
//! off over short stretches) does not flip the mode.
//!
//! Owns: the signals (`MachineSignals`: system CPU and memory from `sysinfo`, sampled at
//! most every 200 ms; the inputs' value sizes from their table metadata), the score, the
//! current mode and its counters. Must not touch: how either mode runs a task.
//! Concurrency: `execute` is called from several compaction threads; the decision state
//! is under a mutex held only to decide.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::metrics::RunMode;
use super::{
    execute, execute_pipelined, CompactionExecutor, CompactionResult, CompactionTask, ExecutorEnv,
    LinearExecutor, PipelinedExecutor,
};
use crate::error::Result;

/// The decision's weights and thresholds. Every signal is a fraction in `[0, 1]`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DecisionConfig {
    /// a: weight of the CPU use of the cores this process may run on (busy fraction).
    pub cpu_weight: f64,
    /// b: weight of the machine's memory use (1 - available / total).
    pub memory_weight: f64,
    /// c: weight of the share of the task's input entries that are large.
    pub large_value_weight: f64,
    /// An entry is large from this many bytes (the paper: 32 KiB on the host, 16 KiB on
    /// the device).
    pub large_value_bytes: u64,
    /// f at or above `threshold + hysteresis` runs linearly; below
    /// `threshold - hysteresis` pipelined; in between, the mode stays.
    pub threshold: f64,
    /// Half the width of the band in which the mode does not change.
    pub hysteresis: f64,
    /// Milliseconds a mode holds at least after a change.
    pub min_hold_ms: u64,
}

impl Default for DecisionConfig {
    /// Ours: CPU use and large values weigh 0.6 each, memory 0.1; the pipeline turns off
    /// at f >= 0.55 (this process's cores over 92% busy, or a task of over 92% large
    /// values, less what memory use adds) and on again below f < 0.45.
    fn default() -> Self {
        DecisionConfig {
            cpu_weight: 0.6,
            memory_weight: 0.1,
            large_value_weight: 0.6,
            large_value_bytes: 32 << 10,
            threshold: 0.5,
            hysteresis: 0.05,
            min_hold_ms: 2_000,
        }
    }
}

impl DecisionConfig {
    /// The configuration the paper measured: large values only (c = 1, a = b = 0), a 70%
    /// threshold, no hysteresis.
    pub fn paper() -> Self {
        DecisionConfig {
            cpu_weight: 0.0,
            memory_weight: 0.0,
            large_value_weight: 1.0,
            large_value_bytes: 32 << 10,
            threshold: 0.7,
            hysteresis: 0.0,
            min_hold_ms: 0,
        }
    }

    /// The score of `s`.
    pub fn score(&self, s: &Signals) -> f64 {
        self.cpu_weight * s.cpu
            + self.memory_weight * s.memory
            + self.large_value_weight * s.large_values
    }
}

/// What a decision is made on, each a fraction in `[0, 1]`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Signals {
    /// The CPU use of the cores this process may run on, over the last sampling interval.
    pub cpu: f64,
    /// The machine's memory use.
    pub memory: f64,
    /// The share of the task's input entries that are large.
    pub large_values: f64,
}

/// Where the machine's CPU and memory use come from (tests give their own).
pub trait MachineSignals: Send + Sync {
    /// (CPU use, memory use), fractions in `[0, 1]`.
    fn sample(&self) -> (f64, f64);
}

/// The machine's own figures, from `sysinfo`: CPU use is the mean over the cores this
/// process may run on (its affinity when it was created: a database pinned to one core
/// next to a worker on another sees its own core), over the time since the last refresh,
/// which happens at most every 200 ms (a shorter interval measures nothing).
pub struct SystemSignals {
    state: Mutex<SystemState>,
}

struct SystemState {
    system: sysinfo::System,
    /// Indexes of the cores this process may run on; empty: all.
    cores: Vec<usize>,
    refreshed: Instant,
    last: (f64, f64),
}

impl SystemSignals {
    /// Starts measuring now.
    pub fn new() -> Self {
        let mut system = sysinfo::System::new();
        system.refresh_cpu_usage();
        system.refresh_memory();
        let memory = memory_use(&system);
        let cores = rustix::thread::sched_getaffinity(None)
            .map(|set| {
                (0..rustix::thread::CpuSet::MAX_CPU)
                    .filter(|&i| set.is_set(i))
                    .collect()
            })
            .unwrap_or_default();
        SystemSignals {
            state: Mutex::new(SystemState {
                system,
                cores,
                refreshed: Instant::now(),
                last: (0.0, memory),
            }),
        }
    }
}

impl SystemState {
    /// Mean use of `cores` (all cores where none of them is known), a fraction.
    fn cpu_use(&self) -> f64 {
        let cpus = self.system.cpus();
        let mine: Vec<f64> = self
            .cores
            .iter()
            .filter_map(|&i| cpus.get(i))
            .map(|c| f64::from(c.cpu_usage()))
            .collect();
        let percent = if mine.is_empty() {
            f64::from(self.system.global_cpu_usage())
        } else {
            mine.iter().sum::<f64>() / mine.len() as f64
        };
        (percent / 100.0).clamp(0.0, 1.0)
    }
}

impl Default for SystemSignals {
    fn default() -> Self {
        Self::new()
    }
}

fn memory_use(system: &sysinfo::System) -> f64 {
    let total = system.total_memory();
    if total == 0 {
        return 0.0;
    }
    (1.0 - system.available_memory() as f64 / total as f64).clamp(0.0, 1.0)
}

impl MachineSignals for SystemSignals {
    fn sample(&self) -> (f64, f64) {
        let mut st = self.state.lock();
        if st.refreshed.elapsed() >= sysinfo::MINIMUM_CPU_UPDATE_INTERVAL {
            st.system.refresh_cpu_usage();
            st.system.refresh_memory();
            st.last = (st.cpu_use(), memory_use(&st.system));
            st.refreshed = Instant::now();
        }
        st.last
    }
}

/// The share of `task`'s input entries that are large, estimated per input table from
/// its metadata: a table whose bytes per entry reach `large_value_bytes` counts all its
/// entries as large. Level-0 units that are not tables are not counted.
pub fn large_value_share(task: &CompactionTask, large_value_bytes: u64) -> f64 {
    let (mut large, mut all) = (0u64, 0u64);
    for f in task.input_files() {
        let entries = f.num_entries.max(1);
        all += entries;
        if f.size / entries >= large_value_bytes {
            large += entries;
        }
    }
    if all == 0 {
        0.0
    } else {
        large as f64 / all as f64
    }
}

struct Decision {
    mode: RunMode,
    changed: Instant,
    last_score: f64,
}

/// Chooses the pipelined or the linear executor for each task; see the module
/// documentation. Starts pipelined, as the paper does.
pub struct AdaptiveExecutor {
    config: DecisionConfig,
    signals: Arc<dyn MachineSignals>,
    decision: Mutex<Decision>,
    switches: AtomicU64,
}

impl AdaptiveExecutor {
    /// Decides by `config` on the machine's own signals.
    pub fn new(config: DecisionConfig) -> Self {
        Self::with_signals(config, Arc::new(SystemSignals::new()))
    }

    /// Decides by `config` on `signals`.
    pub fn with_signals(config: DecisionConfig, signals: Arc<dyn MachineSignals>) -> Self {
        AdaptiveExecutor {
            config,
            signals,
            decision: Mutex::new(Decision {
                mode: RunMode::Pipelined,
                changed: Instant::now(),
                last_score: 0.0,
            }),
            switches: AtomicU64::new(0),
        }
    }

    /// The mode for `task`, updating the current mode.
    pub fn decide(&self, task: &CompactionTask) -> RunMode {
        let (cpu, memory) = self.signals.sample();
        let signals = Signals {
            cpu,
            memory,
            large_values: large_value_share(task, self.config.large_value_bytes),
        };
        self.decide_on(&signals)
    }

    /// The mode for a task with `signals`, updating the current mode.
    pub fn decide_on(&self, signals: &Signals) -> RunMode {
        let c = &self.config;
        let f = c.score(signals);
        let mut d = self.decision.lock();
        d.last_score = f;
        let held = d.changed.elapsed() >= Duration::from_millis(c.min_hold_ms);
        let next = match d.mode {
            RunMode::Pipelined if f >= c.threshold + c.hysteresis => RunMode::Linear,
            RunMode::Linear if f < c.threshold - c.hysteresis => RunMode::Pipelined,
            m => m,
        };
        if next != d.mode && held {
            tracing::debug!(score = f, mode = next.as_str(), "compaction mode changes");
            d.mode = next;
            d.changed = Instant::now();
            self.switches.fetch_add(1, Ordering::Relaxed);
        }
        d.mode
    }

    /// Mode changes so far.
    pub fn switches(&self) -> u64 {
        self.switches.load(Ordering::Relaxed)
    }

    /// The score of the last decision.
    pub fn last_score(&self) -> f64 {
        self.decision.lock().last_score
    }
}

impl CompactionExecutor for AdaptiveExecutor {
    fn name(&self) -> &str {
        "auto"
    }

    fn execute(&self, task: &CompactionTask, env: &ExecutorEnv<'_>) -> Result<CompactionResult> {
        match self.decide(task) {
            RunMode::Linear => execute(task, env),
            RunMode::Pipelined => execute_pipelined(task, env),
        }
    }
}

/// How a host or a worker runs its share of compaction: `linear`, `pipelined`, or `auto`
/// (the decision component).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ExecutionMode {
    /// Read, merge and write in turn.
    Linear,
    /// A read / merge / write pipeline.
    Pipelined,
    /// Chosen per task by [`AdaptiveExecutor`].
    Auto(DecisionConfig),
}

impl ExecutionMode {
    /// Parses `linear`, `pipelined` or `auto` (with the default decision configuration).
    ///
    /// # Errors
    /// `InvalidArgument` for anything else.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "linear" => Ok(ExecutionMode::Linear),
            "pipelined" => Ok(ExecutionMode::Pipelined),
            "auto" => Ok(ExecutionMode::Auto(DecisionConfig::default())),
            other => Err(crate::error::Error::InvalidArgument(format!(
                "compaction mode {other:?}: expected linear, pipelined or auto"
            ))),
        }
    }

    /// The executor that runs this mode on this host.
    pub fn executor(&self) -> Arc<dyn CompactionExecutor> {
        match self {
            ExecutionMode::Linear => Arc::new(LinearExecutor),
            ExecutionMode::Pipelined => Arc::new(PipelinedExecutor),
            ExecutionMode::Auto(config) => Arc::new(AdaptiveExecutor::new(*config)),
        }
    }
}

#[cfg(test)]
mod tests;
