//! The `CompactionPri::MinOverlappingRatio` choice of a level n >= 1 compaction's input:
//! the file that drags the fewest bytes of level n+1 into the compaction per byte of its
//! own (RocksDB's `kMinOverlappingRatio`, on plain file sizes).
//!
//! Owns: the ratio of each file and the order candidates are tried in.
//! Must not touch: widening inputs, ownership, trivial move and bottommost, which stay in
//! `picker` (`compact_file`) so that both policies follow the same rules.
//! Concurrency: a pure function over borrowed state, like the rest of `picker`.

use std::cmp::Ordering;
use std::sync::Arc;

use super::{compact_file, LevelState, PickedCompaction};
use crate::version::FileMeta;

/// A file of the level and the bytes of the next level's files its user keys overlap.
struct Candidate<'a> {
    file: &'a Arc<FileMeta>,
    overlap: u64,
}

impl Candidate<'_> {
    /// Compares `overlap / size` exactly (no rounding); a file of size 0 counts as 1 byte.
    fn cmp_ratio(&self, other: &Self) -> Ordering {
        let mine = u128::from(self.overlap) * u128::from(other.file.size.max(1));
        let theirs = u128::from(other.overlap) * u128::from(self.file.size.max(1));
        mine.cmp(&theirs)
    }
}

/// Bytes of the files of the sorted level `next` whose user keys overlap `f`'s, with
/// `prefix[i]` the bytes of `next[..i]`.
fn overlap_bytes(next: &[Arc<FileMeta>], prefix: &[u64], f: &FileMeta) -> u64 {
    let (lo, hi) = (f.smallest_user_key(), f.largest_user_key());
    let first = next.partition_point(|g| g.largest_user_key() < lo);
    let end = next.partition_point(|g| g.smallest_user_key() <= hi);
    if end <= first {
        return 0;
    }
    let at = |i: usize| prefix.get(i).copied().unwrap_or(0);
    at(end).saturating_sub(at(first))
}

/// Files of `level` not being compacted, smallest overlap ratio first, ties in key order;
/// the first whose widened inputs and next-level overlap are all free is compacted. A file
/// with no overlap has ratio 0 and, alone, is a trivial move.
pub(super) fn pick_min_overlapping_ratio(
    state: &LevelState<'_>,
    level: usize,
) -> Option<PickedCompaction> {
    let files = state.levels.get(level)?;
    let next = state.levels.get(level + 1)?;
    let mut prefix = Vec::with_capacity(next.len() + 1);
    let mut total = 0u64;
    prefix.push(total);
    for g in next {
        total = total.saturating_add(g.size);
        prefix.push(total);
    }
    let mut candidates: Vec<Candidate<'_>> = files
        .iter()
        .filter(|f| !state.being_compacted.contains(&f.number))
        .map(|file| Candidate {
            file,
            overlap: overlap_bytes(next, &prefix, file),
        })
        .collect();
    // Stable: equal ratios keep the level's key order.
    candidates.sort_by(Candidate::cmp_ratio);
    candidates
        .into_iter()
        .find_map(|c| compact_file(state, level, c.file))
}
