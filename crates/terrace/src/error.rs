//! The public error type of the engine.
//!
//! Owns: `Error` and the crate-wide `Result` alias.
//! Must not touch: anything else; modules keep private detail in the message fields.

use std::path::PathBuf;
use std::sync::Arc;

/// Result of every fallible engine operation.
pub type Result<T> = std::result::Result<T, Error>;

/// What went wrong. A variant exists only where a caller would react differently;
/// the detail in the fields and the message is not API.
///
/// `Error` is `Clone` so that a background failure can be returned to every later writer.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Stored bytes failed a checksum or did not decode. Nothing was returned from them.
    #[error("corrupt {}: byte {offset}: {reason}", .file.display())]
    Corruption {
        /// The damaged file.
        file: PathBuf,
        /// Byte offset in that file where decoding stopped.
        offset: u64,
        /// What was wrong there.
        reason: String,
    },
    /// An operating-system I/O call failed.
    #[error("I/O on {}: {source}", .path.display())]
    Io {
        /// The file or directory the call was about.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// The caller passed something the engine cannot accept (an option, a range, a path).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Another process (or another `Db` in this one) holds the database's LOCK file.
    #[error("database at {} is locked by another process", .0.display())]
    Locked(PathBuf),
    /// A background flush or compaction failed; the database refuses writes until reopened.
    #[error("database is read-only after a background error: {0}")]
    Background(Arc<Error>),
    /// I/O on one volume (a table directory, `Options::volumes`) failed: the volume is
    /// named so that an operator knows which device to look at.
    #[error("volume {volume} ({}) failed: {error}", .dir.display())]
    Volume {
        /// The volume's id (0: the database directory).
        volume: u32,
        /// Its directory.
        dir: PathBuf,
        /// What failed there.
        error: Arc<Error>,
    },
    /// The database was closed.
    #[error("database is closed")]
    Closed,
    /// A fixed-size space (a persistent-memory region) has no free run large enough.
    /// Space comes back when extents are dropped; the caller may wait, compact or fail.
    #[error("no space in {what}: {needed} bytes needed")]
    NoSpace {
        /// The space that is full, with what is left in it.
        what: String,
        /// The bytes the request needed.
        needed: u64,
    },
    /// The operation is not supported by this build or configuration.
    #[error("not supported: {0}")]
    Unsupported(String),
    /// An invariant inside the engine does not hold (a bug, not the caller's input or a
    /// damaged file). The operation did nothing it could not undo.
    #[error("internal error: {0}")]
    Internal(String),
    /// A compaction's result does not answer its task (an output outside the numbers or
    /// key range reserved for it, or unlike the file on storage): nothing of it was
    /// installed, and the task runs again on this host.
    #[error("compaction result refused: {0}")]
    ResultRefused(String),
}

impl Error {
    /// An I/O error about `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source: Arc::new(source),
        }
    }

    /// A corruption found in `file` at byte `offset`.
    pub fn corruption(file: impl Into<PathBuf>, offset: u64, reason: impl Into<String>) -> Self {
        Error::Corruption {
            file: file.into(),
            offset,
            reason: reason.into(),
        }
    }

    /// The file or directory the error is about, if it names one.
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            Error::Io { path, .. } => Some(path),
            Error::Corruption { file, .. } => Some(file),
            Error::Background(inner) | Error::Volume { error: inner, .. } => inner.path(),
            _ => None,
        }
    }

    /// True for checksum and decoding failures.
    pub fn is_corruption(&self) -> bool {
        match self {
            Error::Corruption { .. } => true,
            Error::Background(inner) | Error::Volume { error: inner, .. } => inner.is_corruption(),
            _ => false,
        }
    }
}
