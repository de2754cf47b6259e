//! Cutting one compaction into key-range subtasks: where to cut, from the inputs' index
//! blocks, so that the pieces hold similar shares of the input bytes (subcompactions,
//! pieces for several executors) or a chosen share (CoPro's host/device ratio).
//!
//! Owns: the samples (one per input data block: a user key and the block's size) and the
//! choice of cut keys. Must not touch: the subtasks themselves (`CompactionTask::split`
//! cuts the description at these keys, every version of a user key on one side) or where
//! they run.
//! Concurrency: pure apart from opening the input tables (`input_samples`), which may read
//! from storage on a table-cache miss: call it without the state lock.

use super::CompactionTask;
use crate::error::Result;
use crate::tables::Tables;

/// How a compaction's input bytes are shared between its pieces.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SplitPolicy {
    /// Up to this many pieces of similar input size.
    Pieces(usize),
    /// Two pieces, the first (the lower keys) with this share of the input bytes, in
    /// (0, 1): CoPro's split between the host and a device.
    Ratio(f64),
}

/// One sample per data block of every input table (its index key's user key and stored
/// size), and two per level-0 unit that is not a table (its bounds, half its bytes each).
///
/// # Errors
/// I/O or corruption opening an input table or reading its index.
pub fn input_samples(task: &CompactionTask, tables: &Tables) -> Result<Vec<(Vec<u8>, u64)>> {
    let mut out = Vec::new();
    for f in task.input_files() {
        out.extend(tables.open(f)?.block_samples()?);
    }
    for u in task.level0.iter().flat_map(|l| l.units.iter()) {
        out.push((u.smallest_user_key.clone(), u.bytes / 2));
        out.push((u.largest_user_key.clone(), u.bytes - u.bytes / 2));
    }
    Ok(out)
}

/// The user keys to cut `task` at under `policy`, ascending and strictly inside the task's
/// range; `samples` are `(key, bytes)` pairs, the bytes lying at or before the key. Fewer
/// cuts come back where the samples are too coarse (a piece never starts empty), none for
/// one piece or no samples.
pub fn boundaries(
    task: &CompactionTask,
    samples: &[(Vec<u8>, u64)],
    policy: SplitPolicy,
) -> Vec<Vec<u8>> {
    let mut sorted: Vec<(&[u8], u64)> = samples.iter().map(|(k, b)| (k.as_slice(), *b)).collect();
    sorted.sort_unstable();
    let total: u64 = sorted.iter().map(|(_, b)| b).sum();
    if total == 0 {
        return Vec::new();
    }
    // Cumulative byte counts at which cuts are due.
    let targets: Vec<u64> = match policy {
        SplitPolicy::Pieces(n) if n > 1 => {
            let n = n as u64;
            (1..n)
                .map(|k| (total as u128 * k as u128 / n as u128) as u64)
                .collect()
        }
        SplitPolicy::Ratio(r) if r > 0.0 && r < 1.0 => vec![(total as f64 * r) as u64],
        _ => return Vec::new(),
    };
    let lo = task.smallest_user_key.as_deref();
    let hi = task.largest_user_key.as_deref();
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut next = targets.iter().peekable();
    let mut before = 0u64;
    for (key, bytes) in sorted {
        before += bytes;
        let Some(&&target) = next.peek() else { break };
        if before < target {
            continue;
        }
        // Every target passed by this sample is served by one cut after it.
        while next.peek().is_some_and(|t| **t <= before) {
            next.next();
        }
        // The cut goes just past `key`: its bytes belong to the piece before the cut.
        let mut cut = key.to_vec();
        cut.push(0);
        let inside = lo.is_none_or(|l| cut.as_slice() > l) && hi.is_none_or(|h| cut.as_slice() < h);
        if inside && out.last().is_none_or(|last| last < &cut) {
            out.push(cut);
        }
    }
    out
}

#[cfg(test)]
mod tests;
