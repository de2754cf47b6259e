//! The offload dispatcher (X-Engine's compaction driver, docs/techniques/xengine-offload.md):
//! compaction tasks go to one of several compaction units (any executors: workers,
//! pipelines, the host), chosen round robin or by fewest tasks in flight; each unit's
//! successes, failures and fallbacks are counted; a task a unit fails or answers wrongly
//! runs on the fallback executor (the host's CPU).
//!
//! Owns: the choice of unit, the per-unit counters, checking an untrusted unit's result
//! and the fallback. Must not touch: how a unit runs a task, or the install.
//! Concurrency: `execute` is called from several compaction threads at once (one per
//! subtask); units are chosen under a mutex and run outside it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::metrics::mark_fallback;
use super::takeover::{run_or_take_over, Outcome};
use super::{CompactionExecutor, CompactionResult, CompactionTask, ExecutorEnv, Trust};
use crate::error::Result;

/// How the dispatcher chooses a unit (`round_robin` or `least_loaded` in text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DispatchPolicy {
    /// Each unit in turn.
    RoundRobin,
    /// The unit with the fewest tasks in flight (the first of equals).
    LeastLoaded,
}

impl DispatchPolicy {
    /// `round_robin` or `least_loaded`.
    ///
    /// # Errors
    /// `InvalidArgument` for anything else.
    pub fn parse(v: &str) -> Result<DispatchPolicy> {
        match v.trim() {
            "round_robin" => Ok(DispatchPolicy::RoundRobin),
            "least_loaded" => Ok(DispatchPolicy::LeastLoaded),
            other => Err(crate::error::Error::InvalidArgument(format!(
                "dispatch policy {other:?}: expected round_robin or least_loaded"
            ))),
        }
    }
}

/// One unit's counters.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct UnitStats {
    /// Tasks whose result the unit delivered and that checked out.
    pub succeeded: u64,
    /// Tasks the unit failed, or answered with a result that did not check out; each ran
    /// on the fallback executor instead.
    pub failed: u64,
}

struct Unit {
    executor: Arc<dyn CompactionExecutor>,
    in_flight: AtomicU64,
    succeeded: AtomicU64,
    failed: AtomicU64,
}

/// Dispatches tasks over compaction units; see the module documentation.
pub struct DispatchingExecutor {
    units: Vec<Unit>,
    fallback: Arc<dyn CompactionExecutor>,
    policy: DispatchPolicy,
    next: Mutex<usize>,
    name: String,
}

impl DispatchingExecutor {
    /// A dispatcher over `units` (none: every task runs on `fallback`).
    pub fn new(
        units: Vec<Arc<dyn CompactionExecutor>>,
        fallback: Arc<dyn CompactionExecutor>,
        policy: DispatchPolicy,
    ) -> Self {
        let names: Vec<&str> = units.iter().map(|u| u.name()).collect();
        let name = format!("dispatch {policy:?} over [{}]", names.join(", "));
        DispatchingExecutor {
            units: units
                .into_iter()
                .map(|executor| Unit {
                    executor,
                    in_flight: AtomicU64::new(0),
                    succeeded: AtomicU64::new(0),
                    failed: AtomicU64::new(0),
                })
                .collect(),
            fallback,
            policy,
            next: Mutex::new(0),
            name,
        }
    }

    /// Each unit's name and counters, in the order given.
    pub fn unit_stats(&self) -> Vec<(String, UnitStats)> {
        self.units
            .iter()
            .map(|u| {
                let stats = UnitStats {
                    succeeded: u.succeeded.load(Ordering::Relaxed),
                    failed: u.failed.load(Ordering::Relaxed),
                };
                (u.executor.name().to_string(), stats)
            })
            .collect()
    }

    /// The unit for the next task, its in-flight count already raised.
    fn choose(&self) -> Option<&Unit> {
        let mut next = self.next.lock();
        let i = match self.policy {
            DispatchPolicy::RoundRobin => {
                let i = *next % self.units.len().max(1);
                *next = next.wrapping_add(1);
                i
            }
            DispatchPolicy::LeastLoaded => self
                .units
                .iter()
                .enumerate()
                .min_by_key(|(_, u)| u.in_flight.load(Ordering::Relaxed))
                .map_or(0, |(i, _)| i),
        };
        let unit = self.units.get(i)?;
        unit.in_flight.fetch_add(1, Ordering::Relaxed);
        Some(unit)
    }
}

impl CompactionExecutor for DispatchingExecutor {
    fn name(&self) -> &str {
        &self.name
    }

    /// Untrusted units' results are checked here, so what leaves is as good as the
    /// fallback's.
    fn trust(&self) -> Trust {
        self.fallback.trust()
    }

    fn execute(&self, task: &CompactionTask, env: &ExecutorEnv<'_>) -> Result<CompactionResult> {
        let Some(unit) = self.choose() else {
            return self.fallback.execute(task, env);
        };
        let unit_exec = unit.executor.as_ref();
        let outcome = if unit_exec.trust() == Trust::Local {
            // A local unit (a pipeline on this host) that fails has stopped: the fallback
            // runs the whole task again.
            match unit_exec.execute(task, env) {
                Ok(result) => Ok(Outcome {
                    result,
                    failure: None,
                }),
                Err(e) => self.fallback.execute(task, env).map(|mut result| {
                    mark_fallback(&mut result.runs, unit_exec.name());
                    Outcome {
                        result,
                        failure: Some(e),
                    }
                }),
            }
        } else {
            run_or_take_over(unit_exec, self.fallback.as_ref(), task, env)
        };
        unit.in_flight.fetch_sub(1, Ordering::Relaxed);
        let outcome = outcome?;
        match &outcome.failure {
            None => unit.succeeded.fetch_add(1, Ordering::Relaxed),
            Some(e) => {
                tracing::warn!(unit = unit_exec.name(), error = %e, "a compaction task fell back");
                unit.failed.fetch_add(1, Ordering::Relaxed)
            }
        };
        Ok(outcome.result)
    }
}

#[cfg(test)]
mod tests;
