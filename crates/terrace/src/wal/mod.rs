//! Write-ahead log: frames write batches into checksummed records, keeps the set of log
//! files (rotation, replay, obsolescence) and reads them back.
//!
//! Owns: the log format (docs/formats/wal.md): 32 KiB blocks, fragment headers, record
//! checksums; the [`LogWriter`] seam and the file implementation [`FileLogWriter`];
//! the [`LogReader`] that classifies damage as a torn tail or mid-log corruption; the
//! `LogSet` of a database's log files, which applies `WalRecoveryMode` to that damage;
//! the [`ExternalLog`] seam for writes kept durable outside the engine.
//! Must not touch: the memtable, the manifest or batch contents; a record is opaque
//! bytes here (the caller parses it and says which logs are live).
//! Concurrency: a writer has one owner (the write path's leader); a reader is used by
//! one thread, during recovery.

mod external;
mod reader;
mod record;
mod set;
mod writer;

pub use external::ExternalLog;
pub use reader::{LogReader, ReadOutcome};
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use record::fragment_crc;
pub use record::{RecordType, BLOCK_SIZE, HEADER_SIZE};
pub(crate) use set::{FoundLog, LogSet};
pub use writer::FileLogWriter;

use crate::error::Result;
use crate::storage::SyncHandle;

/// Where committed write batches go before they are acknowledged.
///
/// Implemented by [`FileLogWriter`] (a log file on a [`crate::storage::Storage`]); other
/// implementations (for example persistent-memory segments written by clients) can take
/// its place behind this trait. `Send`: the log moves with the write path's leader.
pub trait LogWriter: Send {
    /// Appends one record. Records are read back whole and in order.
    ///
    /// # Errors
    /// I/O errors of the device. After an error the writer refuses further records,
    /// because the log may end in a partial record.
    fn add_record(&mut self, data: &[u8]) -> Result<()>;
    /// Hands buffered records to the operating system (they survive a process crash).
    ///
    /// # Errors
    /// I/O errors of the device.
    fn flush(&mut self) -> Result<()>;
    /// Makes every added record durable (it survives a power failure).
    ///
    /// # Errors
    /// I/O errors of the device.
    fn sync(&mut self) -> Result<()>;
    /// Hands added records to the operating system and returns a handle that makes them
    /// durable while records go on being added (see
    /// [`crate::storage::WritableFile::sync_handle`]); `None` (the default) if the log
    /// is made durable only through [`LogWriter::sync`].
    ///
    /// # Errors
    /// I/O errors of the device.
    fn sync_handle(&mut self) -> Result<Option<Box<dyn SyncHandle>>> {
        Ok(None)
    }
    /// Bytes of log written so far, framing included.
    fn size(&self) -> u64;
}

#[cfg(test)]
mod tests;
