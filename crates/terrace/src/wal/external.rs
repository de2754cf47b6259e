//! Logs kept outside the engine: writes made durable by someone else (a client's
//! persistent-memory segment, say) before the engine applies them, which the engine must
//! replay after a crash and lets go of once its tables hold them.
//!
//! Owns: the [`ExternalLog`] seam. Must not touch: how such a log stores its records
//! (that is its owner's format) or the engine's own log files.

use crate::batch::WriteBatch;
use crate::error::Result;

/// A log of writes kept durable outside the engine's own log files.
///
/// A write reaches the engine through `Db::write_external`, which gives it its sequence
/// numbers and lets the log make it durable (with them) before anyone can read it. The
/// engine records in its manifest the sequence number through which every such write is
/// in table files, replays the rest from the log at open, and tells the log each time
/// that point moves, so that the log can reuse their space.
pub trait ExternalLog: Send + Sync + std::fmt::Debug {
    /// Calls `apply` with every durable write whose last sequence number is above
    /// `after`, as a batch whose sequence is its first one, in any order. A write the
    /// log cannot read back whole (torn by a crash before it was acknowledged) is
    /// skipped; damage in an acknowledged write is an error.
    ///
    /// # Errors
    /// The log's own errors, and whatever `apply` returns.
    fn replay(&self, after: u64, apply: &mut dyn FnMut(&WriteBatch) -> Result<()>) -> Result<()>;

    /// Every write of this log with sequence numbers at or below `seq` is in table
    /// files, durably: the log may drop them. Called after each flush, with the
    /// database's state lock released; `seq` never goes down.
    fn release_through(&self, seq: u64);
}
