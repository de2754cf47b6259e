//! Where the next column of a frozen matrix group ends: the cut-point rule of column
//! compaction (docs/techniques/matrixkv.md, "Column compaction"), and the next column of
//! a group's rows (`next_column`).
//!
//! Owns: choosing cut keys so that every base-level file joins exactly one column and each
//! column holds about the target number of bytes.
//! Must not touch: rows or files here; the caller measures bytes and lists candidate
//! keys (`next_column` does both from a group's rows).
//! Concurrency: pure functions.

mod next_column;

use crate::key;
use crate::version::FileMeta;

pub use next_column::{next_column, MatrixColumn};

/// True if cutting at `k` (columns `[.., k)` and `[k, ..)`) leaves every file of the
/// sorted level `files` whole: no file holds user keys on both sides of `k`.
pub fn is_valid_cut(files: &[std::sync::Arc<FileMeta>], k: &[u8]) -> bool {
    // The first file whose largest user key is at or above k is the only one that can
    // straddle k (levels from 1 on are sorted and disjoint).
    let i = files.partition_point(|f| f.largest_user_key() < k);
    match files.get(i) {
        None => true,
        Some(f) if f.smallest_user_key() >= k => true,
        // A file ending in a range-tombstone sentinel at k holds nothing of k itself.
        Some(f) => f.largest_user_key() == k && ends_with_sentinel(f),
    }
}

fn ends_with_sentinel(f: &FileMeta) -> bool {
    key::try_parse(f.largest.encoded())
        .is_ok_and(|p| p.seq == key::MAX_SEQ && p.kind == key::ValueType::RangeDeletion)
}

/// The exclusive upper key of the column that starts at `start` (`None`: from the
/// beginning), or `None` if the rest of the group is the last column.
///
/// Candidates are the smallest user keys of the base-level files plus `samples` (keys
/// taken from the rows at regular positions, so that an empty or sparse base level still
/// cuts); only candidates above `start` that split no base-level file count. The first
/// candidate at which `bytes_between(start, candidate)` reaches `target_bytes` is the cut.
pub fn next_cut(
    files: &[std::sync::Arc<FileMeta>],
    samples: &[Vec<u8>],
    start: Option<&[u8]>,
    target_bytes: u64,
    mut bytes_between: impl FnMut(Option<&[u8]>, &[u8]) -> u64,
) -> Option<Vec<u8>> {
    let mut candidates: Vec<&[u8]> = files
        .iter()
        .map(|f| f.smallest_user_key())
        .chain(samples.iter().map(Vec::as_slice))
        .filter(|k| start.is_none_or(|s| *k > s))
        .collect();
    candidates.sort_unstable();
    candidates.dedup();
    // Bytes grow with the candidate, so a binary search finds the first one that reaches
    // the target; invalid cuts are skipped forwards from there.
    let first = candidates.partition_point(|k| bytes_between(start, k) < target_bytes);
    candidates
        .get(first..)
        .unwrap_or_default()
        .iter()
        .find(|k| is_valid_cut(files, k))
        .map(|k| k.to_vec())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::key::{InternalKey, ValueType, MAX_SEQ};

    fn file(number: u64, lo: &str, hi: &str) -> Arc<FileMeta> {
        Arc::new(FileMeta::for_test(
            number,
            0,
            lo.as_bytes(),
            hi.as_bytes(),
            100,
        ))
    }

    /// One byte per sample key below `hi` (and at or above `lo`).
    fn counter<'a>(keys: &'a [&'a str]) -> impl FnMut(Option<&[u8]>, &[u8]) -> u64 + 'a {
        move |lo, hi| {
            keys.iter()
                .filter(|k| lo.is_none_or(|l| k.as_bytes() >= l) && k.as_bytes() < hi)
                .count() as u64
        }
    }

    #[test]
    fn cuts_fall_on_file_boundaries_and_never_split_a_file() {
        let files = vec![file(1, "b", "d"), file(2, "f", "h"), file(3, "j", "m")];
        assert!(is_valid_cut(&files, b"a"));
        assert!(is_valid_cut(&files, b"b"));
        assert!(!is_valid_cut(&files, b"c"));
        assert!(!is_valid_cut(&files, b"d"));
        assert!(is_valid_cut(&files, b"e"));
        assert!(is_valid_cut(&files, b"z"));
        let keys = ["a", "b", "c", "e", "g", "i", "k", "n"];
        let samples: Vec<Vec<u8>> = keys.iter().map(|k| k.as_bytes().to_vec()).collect();
        // Three bytes: [.., "e") holds a, b, c; "c" would split file 1, "e" is a gap key.
        assert_eq!(
            next_cut(&files, &samples, None, 3, counter(&keys)),
            Some(b"e".to_vec())
        );
        // From "e", two bytes reach "i", which lies in the gap before file 3.
        assert_eq!(
            next_cut(&files, &samples, Some(b"e"), 2, counter(&keys)),
            Some(b"i".to_vec())
        );
        // "k" would split file 3; nothing valid after it but "n".
        assert_eq!(
            next_cut(&files, &samples, Some(b"j"), 1, counter(&keys)),
            Some(b"n".to_vec())
        );
        // Not enough bytes left: the rest is the last column.
        assert_eq!(
            next_cut(&files, &samples, Some(b"i"), 10, counter(&keys)),
            None
        );
    }

    #[test]
    fn an_empty_base_level_cuts_at_samples() {
        let keys = ["a", "b", "c", "d", "e", "f"];
        let samples: Vec<Vec<u8>> = keys.iter().map(|k| k.as_bytes().to_vec()).collect();
        assert_eq!(
            next_cut(&[], &samples, None, 2, counter(&keys)),
            Some(b"c".to_vec())
        );
    }

    #[test]
    fn a_file_ending_in_a_tombstone_sentinel_may_be_cut_at_its_end() {
        let mut f = (*file(1, "b", "d")).clone();
        f.largest = InternalKey::new(b"d", MAX_SEQ, ValueType::RangeDeletion);
        let files = vec![Arc::new(f)];
        assert!(is_valid_cut(&files, b"d"));
        assert!(!is_valid_cut(&files, b"c"));
    }
}
