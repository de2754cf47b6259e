//! One immutable view of the live table files, level by level.
//!
//! Owns: `Version`, its file order, its lookups, and applying an edit to get the next
//! version (a pure function: no I/O).
//! Must not touch: the manifest or table contents.
//! Concurrency: a `Version` never changes once built; share it with `Arc` across threads.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::Arc;

use super::{FileMeta, RowMeta, VersionEdit};
use crate::key::{self, InternalKey, ValueType, MAX_SEQ};

/// The table files of every level at one point in time. `Send + Sync`, immutable.
///
/// Level 0 is ordered newest first (largest `largest_seq` first, ties by file number
/// descending); its files may overlap. Levels from 1 on are ordered by smallest key and
/// never overlap: each file's largest internal key is below the next file's smallest.
///
/// A matrix level 0 keeps its data as rows on persistent memory instead of files; those
/// are ordered newest first: newest group first, then largest `largest_seq` first, ties by
/// number descending.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Version {
    levels: Vec<Vec<Arc<FileMeta>>>,
    rows: Vec<Arc<RowMeta>>,
}

/// Why an edit cannot be applied to a version.
#[derive(Debug)]
pub(super) enum ApplyError {
    /// The edit names a level the database is not configured to have.
    LevelOutOfRange(String),
    /// The edit contradicts the version (missing file, duplicate number, overlap).
    Invalid(String),
}

impl ApplyError {
    pub(super) fn reason(&self) -> &str {
        match self {
            ApplyError::LevelOutOfRange(s) | ApplyError::Invalid(s) => s,
        }
    }
}

impl Version {
    /// An empty version with `num_levels` levels.
    pub fn new(num_levels: usize) -> Self {
        Version {
            levels: vec![Vec::new(); num_levels],
            rows: Vec::new(),
        }
    }

    /// Number of levels, level 0 included.
    pub fn num_levels(&self) -> usize {
        self.levels.len()
    }

    /// The files of `level` in the level's order; empty for a level out of range.
    pub fn files(&self, level: usize) -> &[Arc<FileMeta>] {
        self.levels
            .get(level)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// Every level's files.
    pub fn levels(&self) -> &[Vec<Arc<FileMeta>>] {
        &self.levels
    }

    /// The matrix rows of level 0, newest first (empty with a classic level 0).
    pub fn rows(&self) -> &[Arc<RowMeta>] {
        &self.rows
    }

    /// Total size in bytes of the files of `level`.
    pub fn level_bytes(&self, level: usize) -> u64 {
        self.files(level).iter().map(|f| f.size).sum()
    }

    /// Numbers of every file in this version.
    pub fn file_numbers(&self) -> impl Iterator<Item = u64> + '_ {
        self.levels.iter().flatten().map(|f| f.number)
    }

    /// The files of `level` whose user-key range meets `[lo, hi]` (inclusive; `None` is
    /// unbounded), in the level's order.
    pub fn overlapping_files(
        &self,
        level: usize,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
    ) -> Vec<Arc<FileMeta>> {
        let files = self.files(level);
        if level == 0 {
            return files
                .iter()
                .filter(|f| f.overlaps(lo, hi))
                .cloned()
                .collect();
        }
        // Largest user keys are non-decreasing in a sorted level, so this is a partition.
        let start = match lo {
            Some(l) => files.partition_point(|f| f.largest_user_key() < l),
            None => 0,
        };
        files
            .get(start..)
            .unwrap_or_default()
            .iter()
            .take_while(|f| hi.is_none_or(|h| f.smallest_user_key() <= h))
            .cloned()
            .collect()
    }

    /// In a level from 1 on, the only file that may hold entries of `ikey`'s user key at or
    /// below `ikey`'s sequence number: the first file whose largest internal key is not below
    /// `ikey` (by [`key::compare`]), if its smallest user key is not above `ikey`'s.
    /// `None` for level 0 and levels out of range.
    ///
    /// A file whose largest key is the range-deletion sentinel `(end, MAX_SEQ,
    /// RangeDeletion)` holds nothing of `end` (tombstone ends are exclusive), so a lookup of
    /// `end` goes to the next file even when `ikey` sorts before the sentinel (a seek at
    /// `MAX_SEQ`).
    pub fn file_for_key(&self, level: usize, ikey: &[u8]) -> Option<&Arc<FileMeta>> {
        if level == 0 {
            return None;
        }
        let files = self.files(level);
        let mut i =
            files.partition_point(|f| key::compare(f.largest.encoded(), ikey) == Ordering::Less);
        let ends_at_key = |f: &Arc<FileMeta>| {
            is_sentinel(&f.largest) && f.largest_user_key() == key::user_key(ikey)
        };
        if files.get(i).is_some_and(ends_at_key) {
            i += 1;
        }
        files
            .get(i)
            .filter(|f| f.smallest_user_key() <= key::user_key(ikey))
    }

    /// The version that results from applying `edit`: deletions first, then additions.
    /// A file may be deleted from one level and added to another in the same edit (a move).
    ///
    /// Fails if the edit names a level out of range, deletes a file that is not in the named
    /// level, adds a file number that is live or added twice, adds a file whose smallest key
    /// is above its largest, or makes files overlap in a level from 1 on.
    pub(super) fn apply(&self, edit: &VersionEdit) -> Result<Version, ApplyError> {
        let n = self.levels.len();
        let check_level = |level: u32, what: &str| -> Result<usize, ApplyError> {
            usize::try_from(level)
                .ok()
                .filter(|&l| l < n)
                .ok_or_else(|| {
                    ApplyError::LevelOutOfRange(format!(
                        "{what} at level {level}, but the database has {n} levels"
                    ))
                })
        };
        let mut levels = self.levels.clone();
        for &(level, number) in &edit.deleted_files {
            let l = check_level(level, &format!("deleted file {number}"))?;
            let files = levels.get_mut(l).ok_or_else(|| invalid("level vanished"))?;
            let Some(pos) = files.iter().position(|f| f.number == number) else {
                return Err(invalid(format!(
                    "deleted file {number} is not in level {level}"
                )));
            };
            files.remove(pos);
        }
        let mut live: HashSet<u64> = levels.iter().flatten().map(|f| f.number).collect();
        live.extend(
            self.rows
                .iter()
                .map(|r| r.number)
                .filter(|n| !edit.deleted_rows.contains(n)),
        );
        for (level, meta) in &edit.new_files {
            let l = check_level(*level, &format!("new file {}", meta.number))?;
            if !live.insert(meta.number) {
                return Err(invalid(format!("file {} added twice", meta.number)));
            }
            if key::compare(meta.smallest.encoded(), meta.largest.encoded()) == Ordering::Greater {
                return Err(invalid(format!(
                    "file {} has smallest key {:?} above largest {:?}",
                    meta.number, meta.smallest, meta.largest
                )));
            }
            let files = levels.get_mut(l).ok_or_else(|| invalid("level vanished"))?;
            files.push(Arc::new(meta.clone()));
        }
        for &(level, _) in &edit.compact_pointers {
            check_level(level, "compact pointer")?;
        }
        let rows = self.apply_rows(edit, &mut live)?;
        for (l, files) in levels.iter_mut().enumerate() {
            sort_level(l, files);
            if l > 0 {
                check_disjoint(l, files)?;
            }
        }
        Ok(Version { levels, rows })
    }

    /// The rows after `edit`: deletions, then trims, then additions. A row number must not
    /// be live as a file or a row already.
    fn apply_rows(
        &self,
        edit: &VersionEdit,
        live: &mut HashSet<u64>,
    ) -> Result<Vec<Arc<RowMeta>>, ApplyError> {
        let mut rows = self.rows.clone();
        for &number in &edit.deleted_rows {
            let Some(pos) = rows.iter().position(|r| r.number == number) else {
                return Err(invalid(format!("deleted row {number} is not live")));
            };
            rows.remove(pos);
        }
        for (number, trim) in &edit.trimmed_rows {
            let Some(row) = rows.iter_mut().find(|r| r.number == *number) else {
                return Err(invalid(format!("trimmed row {number} is not live")));
            };
            if row.trim.as_ref().is_some_and(|t| t > trim) {
                return Err(invalid(format!("row {number} trimmed backwards")));
            }
            let mut m = row.as_ref().clone();
            m.trim = Some(trim.clone());
            *row = Arc::new(m);
        }
        for &(number, chunks, size) in &edit.released_rows {
            let Some(row) = rows.iter_mut().find(|r| r.number == number) else {
                return Err(invalid(format!("released row {number} is not live")));
            };
            if chunks < row.released_chunks || row.trim.is_none() {
                return Err(invalid(format!(
                    "row {number} releases chunks backwards or without a trim"
                )));
            }
            let mut m = row.as_ref().clone();
            m.released_chunks = chunks;
            m.size = size;
            *row = Arc::new(m);
        }
        live.extend(rows.iter().map(|r| r.number));
        for meta in &edit.new_rows {
            if !live.insert(meta.number) {
                return Err(invalid(format!("row {} added twice", meta.number)));
            }
            if key::compare(meta.smallest.encoded(), meta.largest.encoded()) == Ordering::Greater {
                return Err(invalid(format!(
                    "row {} has smallest key {:?} above largest {:?}",
                    meta.number, meta.smallest, meta.largest
                )));
            }
            rows.push(Arc::new(meta.clone()));
        }
        rows.sort_by(|a, b| {
            b.group
                .cmp(&a.group)
                .then(b.largest_seq.cmp(&a.largest_seq))
                .then(b.number.cmp(&a.number))
        });
        Ok(rows)
    }
}

fn is_sentinel(k: &InternalKey) -> bool {
    key::try_parse(k.encoded())
        .is_ok_and(|p| p.seq == MAX_SEQ && p.kind == ValueType::RangeDeletion)
}

fn invalid(reason: impl Into<String>) -> ApplyError {
    ApplyError::Invalid(reason.into())
}

fn sort_level(level: usize, files: &mut [Arc<FileMeta>]) {
    if level == 0 {
        files.sort_by(|a, b| {
            b.largest_seq
                .cmp(&a.largest_seq)
                .then(b.number.cmp(&a.number))
        });
    } else {
        files.sort_by(|a, b| {
            key::compare(a.smallest.encoded(), b.smallest.encoded()).then(a.number.cmp(&b.number))
        });
    }
}

fn check_disjoint(level: usize, files: &[Arc<FileMeta>]) -> Result<(), ApplyError> {
    for pair in files.windows(2) {
        if let [a, b] = pair {
            if key::compare(a.largest.encoded(), b.smallest.encoded()) != Ordering::Less {
                return Err(invalid(format!(
                    "files {} [{:?} .. {:?}] and {} [{:?} .. {:?}] overlap in level {level}",
                    a.number, a.smallest, a.largest, b.number, b.smallest, b.largest
                )));
            }
        }
    }
    Ok(())
}
