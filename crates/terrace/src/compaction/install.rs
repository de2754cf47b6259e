//! Turning a compaction's results into a version edit, as a pure step that checks every
//! result against the task it answers before anything is installed: whatever ran the task
//! (this process, another thread, a worker in another process), an output reaches the
//! manifest only if the task could have written it.
//!
//! Owns: the checks (one result per subtask with its id; file numbers among those
//! reserved for the subtask, each used once; the task's output volume; key bounds inside
//! the subtask's range and in order; sizes, and for untrusted executors whole-file
//! checksums, against what is on storage) and the edit's file lists.
//! Must not touch: level 0's share of the edit (the caller adds the records of a finished
//! column), the manifest, counters or listeners; nothing here writes.
//! Concurrency: pure apart from reading the named output files; callers may hold the
//! state lock (only `Trust::Local` is cheap enough for that: it opens, never reads).

use std::collections::HashSet;

use super::{CompactionExecutor, CompactionResult, CompactionTask, ExecutorEnv};
use crate::error::{Error, Result};
use crate::key::{self, ValueType, MAX_SEQ};
use crate::storage::{IoClass, Storage};
use crate::tables::Tables;
use crate::version::{FileMeta, VersionEdit};

/// How far an executor's word is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// Ran in this process from this build: numbers, bounds, order and file sizes are
    /// checked, the files' contents are not read again.
    Local,
    /// Ran elsewhere: everything `Local` checks, and each output file is read whole and
    /// its CRC32C compared with the one the result claims.
    Remote,
}

/// Checks `results` (one per subtask, in the same order) against `subtasks` of `task`,
/// and on success returns the edit that deletes the task's inputs and adds every output
/// at the task's output level. Level-0 records and compact pointers are the caller's.
///
/// # Errors
/// `ResultRefused` naming the first check that failed; I/O errors reading the outputs.
pub fn checked_edit(
    task: &CompactionTask,
    subtasks: &[CompactionTask],
    results: &[CompactionResult],
    storage: &dyn Storage,
    tables: &Tables,
    trust: Trust,
) -> Result<VersionEdit> {
    if subtasks.len() != results.len() {
        return Err(refused(format!(
            "{} results for {} subtasks",
            results.len(),
            subtasks.len()
        )));
    }
    let mut seen = HashSet::new();
    for (sub, result) in subtasks.iter().zip(results) {
        check_result(sub, result, &mut seen)?;
        for f in &result.outputs {
            check_on_storage(f, storage, tables, trust)?;
        }
    }
    let mut edit = VersionEdit::default();
    for input in &task.inputs {
        for f in &input.files {
            edit.deleted_files.push((input.level, f.number));
        }
    }
    for f in results.iter().flat_map(|r| r.outputs.iter()) {
        edit.new_files.push((task.output_level, f.clone()));
    }
    Ok(edit)
}

/// Runs `task` on `executor` and, unless the executor is [`Trust::Local`], checks its
/// result in full (as [`checked_edit`] with [`Trust::Remote`]) before returning it: the
/// one place where an untrusted executor's word is checked, whoever called it.
///
/// # Errors
/// The executor's error, or `ResultRefused` for a result that does not check out.
pub fn execute_checked(
    executor: &dyn CompactionExecutor,
    task: &CompactionTask,
    env: &ExecutorEnv<'_>,
) -> Result<CompactionResult> {
    let result = executor.execute(task, env)?;
    if executor.trust() != Trust::Local {
        let one = std::slice::from_ref(task);
        let results = std::slice::from_ref(&result);
        checked_edit(task, one, results, env.storage, env.tables, Trust::Remote)?;
    }
    Ok(result)
}

fn refused(why: String) -> Error {
    Error::ResultRefused(why)
}

/// The checks that need no storage: id, numbers, volume, bounds and order.
fn check_result(
    sub: &CompactionTask,
    result: &CompactionResult,
    seen: &mut HashSet<u64>,
) -> Result<()> {
    if result.task_id != sub.id {
        return Err(refused(format!(
            "result of task {} given for task {}",
            result.task_id, sub.id
        )));
    }
    let lo = sub.smallest_user_key.as_deref();
    let hi = sub.largest_user_key.as_deref();
    let mut previous: Option<&FileMeta> = None;
    for f in &result.outputs {
        let n = f.number;
        if !sub.output.file_numbers.contains(&n) {
            return Err(refused(format!(
                "output {n} is not among the numbers reserved for task {}",
                sub.id
            )));
        }
        if !seen.insert(n) {
            return Err(refused(format!("output {n} is named twice")));
        }
        if !sub.output.allows_volume(f.volume) {
            return Err(refused(format!(
                "output {n} is on volume {}, which the task does not write to",
                f.volume
            )));
        }
        if f.smallest > f.largest {
            return Err(refused(format!("output {n}: smallest key above largest")));
        }
        if lo.is_some_and(|lo| f.smallest_user_key() < lo) {
            return Err(refused(format!("output {n} starts below the task's range")));
        }
        if let Some(hi) = hi {
            let top = f.largest_user_key();
            // A range tombstone may end exactly at the bound: its end sentinel is the
            // file's largest key, at the bound's user key.
            let sentinel = key::try_parse(&f.largest.0)
                .is_ok_and(|p| p.seq == MAX_SEQ && p.kind == ValueType::RangeDeletion);
            if top > hi || (top == hi && !sentinel) {
                return Err(refused(format!("output {n} ends past the task's range")));
            }
        }
        if previous.is_some_and(|p| p.largest >= f.smallest) {
            return Err(refused(format!("output {n} overlaps the output before it")));
        }
        previous = Some(f);
    }
    Ok(())
}

/// The output file is on storage at its size, and (untrusted) has the claimed checksum.
fn check_on_storage(
    f: &FileMeta,
    storage: &dyn Storage,
    tables: &Tables,
    trust: Trust,
) -> Result<()> {
    let path = tables.path(f.volume, f.number);
    let len = storage.open(&path)?.len();
    if len != f.size {
        return Err(refused(format!(
            "output {} is {len} bytes on storage, the result says {}",
            f.number, f.size
        )));
    }
    if trust == Trust::Remote {
        let crc = crc32c::crc32c(&storage.read_all(&path, IoClass::Compaction)?);
        if crc != f.file_checksum {
            return Err(refused(format!(
                "output {} has checksum {crc:#010x} on storage, the result says {:#010x}",
                f.number, f.file_checksum
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
