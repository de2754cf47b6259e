//! The optional second trait of a level 0: one that compacts itself into the base level in
//! key-range columns of its own units, and merges its own data in the background (the
//! matrix level 0; docs/techniques/matrixkv.md).
//!
//! Owns: [`SelfCompacting`] and [`ColumnDone`].
//! Must not touch: the compaction executor or the manifest; the database turns a column
//! into a compaction task, runs it, and records the outputs together with what the level
//! 0 says the finished column changes.
//! Concurrency: implementations are `Send + Sync`; every method but `rewrite` is called
//! with the database's lock held.

use std::collections::HashSet;

use super::{Level0Env, Level0Flush, Level0Settings};
use crate::compaction::{Level0Column, Level0Source};
use crate::error::Result;
use crate::version::{Level0Record, Version};

/// What installing a finished column changes in level 0.
#[derive(Debug, Clone, Default)]
pub struct ColumnDone {
    /// Level-0 records for the edit that installs the column's outputs (the matrix level
    /// 0: rows trimmed past the column or deleted, chunks given back).
    pub records: Vec<Level0Record>,
    /// Units of storage the level 0 gives back (the matrix level 0: data chunks), for
    /// statistics.
    pub released: u64,
}

/// A level 0 that compacts itself in columns; see the module docs. The executor opens its
/// columns through the `Level0Source` supertrait.
pub trait SelfCompacting: Level0Source {
    /// The next column to compact into `base_level` (the level below level 0 that
    /// receives its data), or `None` when nothing is due. `manual` asks for every unit
    /// level 0 holds to be compacted (a manual compaction of the whole key range). `busy`
    /// holds the numbers that running compactions own.
    fn next_column(
        &self,
        version: &Version,
        busy: &HashSet<u64>,
        settings: &Level0Settings,
        base_level: usize,
        manual: bool,
    ) -> Option<Level0Column>;

    /// What the edit installing `column`'s outputs records of level 0 (called once the
    /// column's compaction has finished, right before that edit is applied).
    ///
    /// # Errors
    /// `Internal` if the column's units are not level 0's.
    fn finish_column(&self, column: &Level0Column) -> Result<ColumnDone>;

    /// A mark of what level 0 holds in `version`, for a manual compaction that must
    /// compact all of it (and not what arrives meanwhile); `None` if it holds nothing.
    fn manual_mark(&self, version: &Version) -> Option<u64>;

    /// True while `version`'s level 0 still holds data that was there at `mark`.
    fn holds_marked(&self, version: &Version, mark: u64) -> bool;

    /// Runs one background rewrite of level-0 data if one is due (the matrix container's
    /// table merge), without the database's lock; returns the changes to record, or `None`
    /// when nothing is due. What it wrote stays unused until `accept_rewrite` takes it.
    ///
    /// # Errors
    /// I/O errors and `Corruption`; nothing is installed on error.
    fn rewrite(&self, env: &Level0Env<'_>) -> Result<Option<Level0Flush>>;

    /// Called with the database's lock held, right before the edit recording the last
    /// `rewrite`'s changes is applied on top of `version`: true if they still apply (level
    /// 0 has then taken them into its state), false if the database must drop them.
    ///
    /// # Errors
    /// Errors reading the rewritten data.
    fn accept_rewrite(&self, version: &Version) -> Result<bool>;
}
