//! One immutable view of the live table files, level by level.
//!
//! Owns: `Version`, its file order, its lookups, and applying an edit to get the next
//! version (a pure function: no I/O).
//! Must not touch: the manifest or table contents.
//! Concurrency: a `Version` never changes once built; share it with `Arc` across threads.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::Arc;

use super::level0_state::{Level0State, NoLevel0State};
use super::{FileMeta, VersionEdit};
use crate::key::{self, InternalKey, ValueType, MAX_SEQ};

/// The table files of every level at one point in time. `Send + Sync`, immutable.
///
/// Level 0 is ordered newest first (largest `largest_seq` first, ties by file number
/// descending); its files may overlap. Levels from 1 on are ordered by smallest key and
/// never overlap: each file's largest internal key is below the next file's smallest.
///
/// A level 0 that keeps data outside table files (the matrix level 0's rows on
/// persistent memory) keeps its own immutable [`Level0State`] here, built from the
/// level-0 records of the edits.
///
/// Each version installed by a `VersionSet` has a number of its own, ascending: two
/// versions with the same number are the same version.
#[derive(Debug, Clone)]
pub struct Version {
    number: u64,
    levels: Vec<Vec<Arc<FileMeta>>>,
    level0: Arc<dyn Level0State>,
}

impl PartialEq for Version {
    /// Equal files per level and equal level-0 records; the numbers do not count.
    fn eq(&self, other: &Self) -> bool {
        self.levels == other.levels && self.level0.records() == other.level0.records()
    }
}

/// Why an edit cannot be applied to a version.
#[derive(Debug)]
pub(crate) enum ApplyError {
    /// The edit names a level the database is not configured to have.
    LevelOutOfRange(String),
    /// The edit contradicts the version (missing file, duplicate number, overlap).
    Invalid(String),
    /// The level-0 state refused the edit's level-0 records.
    Level0(crate::error::Error),
}

impl ApplyError {
    pub(crate) fn reason(&self) -> String {
        match self {
            ApplyError::LevelOutOfRange(s) | ApplyError::Invalid(s) => s.clone(),
            ApplyError::Level0(e) => e.to_string(),
        }
    }
}

impl Version {
    /// An empty version with `num_levels` levels and a level 0 that keeps only files.
    pub fn new(num_levels: usize) -> Self {
        Self::with_level0(num_levels, Arc::new(NoLevel0State))
    }

    /// An empty version with `num_levels` levels and level-0 state `level0` (the empty
    /// state of the database's level 0).
    pub fn with_level0(num_levels: usize, level0: Arc<dyn Level0State>) -> Self {
        Version {
            number: 0,
            levels: vec![Vec::new(); num_levels],
            level0,
        }
    }

    /// The number the version set gave this version when installing it (0 before).
    pub fn number(&self) -> u64 {
        self.number
    }

    pub(super) fn set_number(&mut self, number: u64) {
        self.number = number;
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

    /// Level 0's own state (beyond its table files).
    pub fn level0(&self) -> &Arc<dyn Level0State> {
        &self.level0
    }

    /// Total size in bytes of the files of `level`.
    pub fn level_bytes(&self, level: usize) -> u64 {
        self.files(level).iter().map(|f| f.size).sum()
    }

    /// Numbers of every table file in this version.
    pub fn file_numbers(&self) -> impl Iterator<Item = u64> + '_ {
        self.levels.iter().flatten().map(|f| f.number)
    }

    /// Every number of the file-number space this version uses: its table files' and
    /// level 0's own.
    pub fn numbers_in_use(&self) -> impl Iterator<Item = u64> + '_ {
        self.file_numbers().chain(self.level0.numbers())
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
        let i = self.file_index_for_key(level, ikey)?;
        self.files(level).get(i)
    }

    /// The position in `files(level)` of [`Version::file_for_key`]'s file.
    pub fn file_index_for_key(&self, level: usize, ikey: &[u8]) -> Option<usize> {
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
            .map(|_| i)
    }

    /// The version that results from applying `edit`: deletions first, then additions,
    /// then the level-0 records (applied by the level-0 state). A file may be deleted from
    /// one level and added to another in the same edit (a move).
    ///
    /// Fails if the edit names a level out of range, deletes a file that is not in the named
    /// level, adds a file number that is live or added twice, adds a file whose smallest key
    /// is above its largest, makes files overlap in a level from 1 on, or has level-0
    /// records the state refuses, or if the state then uses a number a file uses.
    pub(crate) fn apply(&self, edit: &VersionEdit) -> Result<Version, ApplyError> {
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
        let level0 = if edit.level0.is_empty() {
            self.level0.clone()
        } else {
            self.level0
                .apply(&edit.level0)
                .map_err(ApplyError::Level0)?
        };
        if let Some(n) = level0.numbers().into_iter().find(|n| live.contains(n)) {
            return Err(invalid(format!(
                "number {n} is used by a file and by level 0"
            )));
        }
        for (l, files) in levels.iter_mut().enumerate() {
            sort_level(l, files);
            if l > 0 {
                check_disjoint(l, files)?;
            }
        }
        Ok(Version {
            number: 0,
            levels,
            level0,
        })
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
