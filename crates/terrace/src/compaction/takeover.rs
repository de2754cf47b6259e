//! Running a task on an untrusted executor (a worker) with the host ready to take it
//! over: the worker reports each output file as it finishes it; when the worker fails,
//! dies or stalls past its deadline, or answers wrongly, the host checks the outputs the
//! worker finished, keeps them, and runs only the rest of the task's key range, from the
//! key the last finished output stopped at (docs/techniques/xengine-offload.md, "Resume").
//!
//! The task's reserved file numbers are split in two: the worker gets the first half and
//! the host's takeover the second, so a worker the host gave up on (stalled, not dead)
//! can never write a number the host writes or installs; whatever it still writes is an
//! orphan for garbage collection. A task with fewer than two reserved numbers runs on
//! the host directly.
//!
//! Owns: the progress reports ([`FinishedOutput`], [`ProgressSink`]), the number split,
//! and the takeover. Must not touch: how either side runs its part, or the install (the
//! joined result is checked again against the whole task there).
//! Concurrency: a [`Progress`] collects reports from whichever thread writes outputs.

use parking_lot::Mutex;

use super::metrics::{mark_fallback, RunMode, RunRecord, HOST};
use super::{
    checked_edit, execute_checked, CompactionExecutor, CompactionResult, CompactionStats,
    CompactionTask, ExecutorEnv, Trust,
};
use crate::error::{Error, Result};
use crate::version::FileMeta;

/// One output file an executor has finished (written, synced and closed).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FinishedOutput {
    /// The file.
    pub file: FileMeta,
    /// Where the next output starts (exclusive end of this one's range, the bound its
    /// range tombstones were clipped to): the first user key after it, or the task's
    /// upper bound after its last output (`None`: unbounded).
    pub resume_from: Option<Vec<u8>>,
}

/// Receives each output as it is finished.
pub trait ProgressSink: Send + Sync {
    /// `output` is finished.
    fn finished(&self, output: &FinishedOutput);
}

/// Collects the reports of one run.
#[derive(Debug, Default)]
pub struct Progress {
    outputs: Mutex<Vec<FinishedOutput>>,
}

impl Progress {
    /// The reports so far, in the order they came.
    pub fn take(&self) -> Vec<FinishedOutput> {
        std::mem::take(&mut *self.outputs.lock())
    }
}

impl ProgressSink for Progress {
    fn finished(&self, output: &FinishedOutput) {
        self.outputs.lock().push(output.clone());
    }
}

/// The untrusted executor's copy of `task`: the first half of its reserved numbers.
pub fn worker_task(task: &CompactionTask) -> CompactionTask {
    let mut t = task.clone();
    let half = task.output.file_numbers.len() / 2;
    t.output.file_numbers.truncate(half);
    t
}

/// The host's copy of `task` for a takeover: the second half of its reserved numbers.
pub fn takeover_task(task: &CompactionTask) -> CompactionTask {
    let mut t = task.clone();
    let half = task.output.file_numbers.len() / 2;
    t.output.file_numbers.drain(..half);
    t
}

/// What [`execute_or_take_over`] did.
#[derive(Debug)]
pub struct Outcome {
    /// The task's result, from whichever side.
    pub result: CompactionResult,
    /// Why the untrusted executor's run was not taken as it was; `None`: it was.
    pub failure: Option<Error>,
}

/// Runs `task` on `untrusted` with the worker's numbers; a failure, a wrong answer or a
/// stall (the executor's own deadline) hands the task to `host`, which keeps what the
/// worker finished and runs the rest. A [`Trust::Local`] executor runs the task directly.
///
/// # Errors
/// The host's errors; the untrusted executor's are logged and taken over.
pub fn execute_or_take_over(
    untrusted: &dyn CompactionExecutor,
    host: &dyn CompactionExecutor,
    task: &CompactionTask,
    env: &ExecutorEnv<'_>,
) -> Result<CompactionResult> {
    run_or_take_over(untrusted, host, task, env).map(|o| o.result)
}

/// [`execute_or_take_over`], saying whether the untrusted executor failed.
///
/// # Errors
/// The host's errors.
pub fn run_or_take_over(
    untrusted: &dyn CompactionExecutor,
    host: &dyn CompactionExecutor,
    task: &CompactionTask,
    env: &ExecutorEnv<'_>,
) -> Result<Outcome> {
    let done = |result| Outcome {
        result,
        failure: None,
    };
    if untrusted.trust() == Trust::Local {
        return untrusted.execute(task, env).map(done);
    }
    if task.output.file_numbers.len() < 2 {
        return host.execute(task, env).map(done);
    }
    let progress = Progress::default();
    let tracked = ExecutorEnv {
        progress: Some(&progress),
        ..*env
    };
    let worker = worker_task(task);
    let failure = match execute_checked(untrusted, &worker, &tracked) {
        Ok(mut r) => {
            // The worker's result answers the task with the worker's numbers.
            r.task_id = task.id;
            return Ok(done(r));
        }
        Err(e) => e,
    };
    let finished = progress.take();
    let kept = usable_prefix(&worker, &finished, env);
    tracing::warn!(
        executor = untrusted.name(),
        task = task.id,
        error = %failure,
        kept_outputs = kept.len(),
        "the host takes the compaction task over"
    );
    let mut rest = takeover_task(task);
    let resume_from = kept.last().map(|k| k.resume_from.clone());
    if let Some(from) = &resume_from {
        if *from == task.largest_user_key {
            // The worker finished every output; only its answer was lost.
            return Ok(Outcome {
                result: joined(task, kept, None, untrusted.name()),
                failure: Some(failure),
            });
        }
        rest.smallest_user_key.clone_from(from);
    }
    let mut r = host.execute(&rest, env)?;
    mark_fallback(&mut r.runs, untrusted.name());
    Ok(Outcome {
        result: joined(task, kept, Some(r), untrusted.name()),
        failure: Some(failure),
    })
}

/// The longest prefix of `finished` that checks out: each output inside the part of
/// the task it claims (from the previous output's resume point, or the task's lower
/// bound, up to its own resume point, which is inside the task), with one of the worker's
/// numbers not named before, and its size and checksum on storage as reported.
fn usable_prefix(
    worker: &CompactionTask,
    finished: &[FinishedOutput],
    env: &ExecutorEnv<'_>,
) -> Vec<FinishedOutput> {
    let mut kept: Vec<FinishedOutput> = Vec::new();
    for f in finished {
        let inside = match (&f.resume_from, &worker.largest_user_key) {
            (_, None) => true,
            (None, Some(_)) => false,
            (Some(r), Some(hi)) => r <= hi,
        };
        if !inside || kept.iter().any(|k| k.file.number == f.file.number) {
            break;
        }
        let mut part = worker.clone();
        part.smallest_user_key = match kept.last() {
            Some(prev) => prev.resume_from.clone(),
            None => worker.smallest_user_key.clone(),
        };
        part.largest_user_key.clone_from(&f.resume_from);
        let claimed = CompactionResult {
            task_id: worker.id,
            outputs: vec![f.file.clone()],
            stats: Default::default(),
            runs: Vec::new(),
        };
        let checked = checked_edit(
            &part,
            std::slice::from_ref(&part),
            std::slice::from_ref(&claimed),
            env.storage,
            env.tables,
            Trust::Remote,
        );
        if checked.is_err() {
            break;
        }
        kept.push(f.clone());
    }
    kept
}

/// The worker's kept outputs followed by the host's run of the rest, as one result.
fn joined(
    task: &CompactionTask,
    kept: Vec<FinishedOutput>,
    rest: Option<CompactionResult>,
    worker: &str,
) -> CompactionResult {
    let mut outputs: Vec<FileMeta> = kept.into_iter().map(|k| k.file).collect();
    let kept_count = outputs.len() as u64;
    let (mut stats, mut runs) = match rest {
        Some(r) => {
            outputs.extend(r.outputs);
            (r.stats, r.runs)
        }
        // Only the worker's answer was lost: the takeover is a record with no work.
        None => (
            CompactionStats::default(),
            vec![RunRecord {
                unit: HOST.to_string(),
                mode: RunMode::Linear,
                input_bytes: 0,
                output_bytes: 0,
                elapsed_micros: 0,
                cpu_micros: 0,
                fallback_for: Some(worker.to_string()),
                kept_outputs: 0,
            }],
        ),
    };
    stats.output_bytes = outputs.iter().map(|f| f.size).sum();
    if kept_count > 0 {
        tracing::info!(
            task = task.id,
            worker,
            kept_count,
            "outputs kept from the worker"
        );
    }
    for r in &mut runs {
        r.kept_outputs = kept_count;
    }
    CompactionResult {
        task_id: task.id,
        outputs,
        stats,
        runs,
    }
}

#[cfg(test)]
mod tests;
