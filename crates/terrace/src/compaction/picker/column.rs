//! The base-level side of a level-0 column compaction: the column a level 0 that compacts
//! itself in columns chose, with the output-level files it overlaps, widened so that no
//! file is split.
//!
//! Owns: [`pick_into_base_level`] and the widening of a column to whole output-level files.
//! Must not touch: the choice of the column itself (the level 0's) or the other picks;
//! no I/O, no locks.
//! Concurrency: a pure function over borrowed state.

use std::sync::Arc;

use super::{ends_exclusive, Level0Column, LevelState, PickedCompaction};
use crate::compaction::task::CompactionReason;
use crate::version::FileMeta;

/// A column compaction of a level-0 column within `[lo, hi)` into `output_level`, with
/// every file of that level overlapping the range. `None` if one of them, or one of the
/// column's level-0 units, is being compacted.
///
/// Column cuts are chosen between output-level files, so that each file joins exactly one
/// column; but the output level can change between two columns of a group (another level
/// becomes the base level, or its files move). A file that reaches outside the range then
/// widens it: below `lo` only the file contributes (the level 0 has nothing there), and
/// above `hi` the column grows to the file's end, so no file is ever split.
pub fn pick_into_base_level(
    state: &LevelState<'_>,
    output_level: usize,
    mut column: Level0Column,
) -> Option<PickedCompaction> {
    let files = state.levels.get(output_level)?;
    let overlaps = |f: &Arc<FileMeta>, lo: Option<&[u8]>, hi: Option<&[u8]>| {
        lo.is_none_or(|l| f.largest_user_key() >= l) && hi.is_none_or(|h| f.smallest_user_key() < h)
    };
    let output_inputs: Vec<Arc<FileMeta>> = files
        .iter()
        .filter(|f| overlaps(f, column.lo.as_deref(), column.hi.as_deref()))
        .cloned()
        .collect();
    if let (Some(first), Some(lo)) = (output_inputs.first(), column.lo.as_deref()) {
        if first.smallest_user_key() < lo {
            column.lo = Some(first.smallest_user_key().to_vec());
        }
    }
    if let (Some(last), Some(hi)) = (output_inputs.last(), column.hi.as_deref()) {
        if last.largest_user_key() >= hi && !ends_exclusive_at(last, hi) {
            // The first user key after the file's largest.
            let mut end = last.largest_user_key().to_vec();
            end.push(0);
            column.hi = Some(end);
        }
    }
    if output_inputs
        .iter()
        .any(|f| state.being_compacted.contains(&f.number))
    {
        return None;
    }
    let (lo, hi) = (column.lo.as_deref(), column.hi.as_deref());
    if column
        .input
        .units
        .iter()
        .any(|u| state.being_compacted.contains(&u.number))
    {
        return None;
    }
    let below_overlaps = state.levels.iter().skip(output_level + 1).any(|l| {
        l.iter().any(|f| {
            lo.is_none_or(|x| f.largest_user_key() >= x)
                && hi.is_none_or(|h| f.smallest_user_key() < h)
        })
    });
    Some(PickedCompaction {
        level: 0,
        output_level,
        inputs: Vec::new(),
        output_inputs,
        trivial_move: false,
        reason: CompactionReason::Level0Column,
        bottommost: !below_overlaps,
        column: Some(column),
    })
}

/// True if `f` ends with a range-tombstone sentinel at user key `h` (it then holds
/// nothing of `h`).
fn ends_exclusive_at(f: &FileMeta, h: &[u8]) -> bool {
    ends_exclusive(f) && f.largest_user_key() == h
}
