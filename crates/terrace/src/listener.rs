//! Event listeners: user callbacks on flushes, compactions and background errors.
//!
//! Owns: the [`EventListener`] trait and what it is told. Must not touch: the database;
//! `db` calls the listeners in `Options::listeners` after each event.

use crate::error::Error;

/// A completed flush of one memtable into level 0.
#[derive(Debug, Clone)]
pub struct FlushInfo {
    /// The table file written (none if the memtable held nothing to keep).
    pub file_number: Option<u64>,
    /// Bytes written.
    pub bytes_written: u64,
    /// Entries flushed.
    pub entries: u64,
    /// Largest sequence number in the flushed memtable.
    pub largest_seq: u64,
}

/// A completed compaction.
#[derive(Debug, Clone)]
pub struct CompactionInfo {
    /// Level the inputs came from.
    pub input_level: usize,
    /// Level the outputs went to.
    pub output_level: usize,
    /// Input table files.
    pub input_files: Vec<u64>,
    /// Output table files.
    pub output_files: Vec<u64>,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// True if a file was moved without rewriting.
    pub trivial_move: bool,
}

/// Receives engine events. Callbacks run on background threads and must not call back
/// into the database's write path (they may read). `Send + Sync`.
pub trait EventListener: Send + Sync {
    /// A flush finished and is installed.
    fn on_flush_completed(&self, _info: &FlushInfo) {}
    /// A compaction finished and is installed.
    fn on_compaction_completed(&self, _info: &CompactionInfo) {}
    /// A background job failed; the database is now read-only until reopened.
    fn on_background_error(&self, _error: &Error) {}
}
