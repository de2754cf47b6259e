//! Errors of the BOOM protocol and its store.

/// What can go wrong in BOOM.
#[derive(Debug, thiserror::Error)]
pub enum BoomError {
    /// An entry a client wrote is malformed, out of its segment or fails its checksum:
    /// the client is refused.
    #[error("bad entry: {0}")]
    BadEntry(String),
    /// The server's own files are damaged.
    #[error("corrupt BOOM store: {0}")]
    Corrupt(String),
    /// A request or a setting that cannot be served.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The server refused a request (its message).
    #[error("server: {0}")]
    Remote(String),
    /// The client's segment has no room for the entry: it asks for the next one.
    #[error("no room in the segment for the entry")]
    SegmentFull,
    /// No free segment is left.
    #[error("no free segment: every segment holds writes not yet in the engine's tables")]
    NoFreeSegment,
    /// An I/O error on the region or metadata file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The engine's error.
    #[error(transparent)]
    Engine(#[from] terrace::Error),
}

/// A BOOM result.
pub type Result<T> = std::result::Result<T, BoomError>;

impl From<BoomError> for terrace::Error {
    fn from(e: BoomError) -> Self {
        match e {
            BoomError::Engine(e) => e,
            BoomError::Io { path, source } => terrace::Error::Io {
                path,
                source: std::sync::Arc::new(source),
            },
            BoomError::Corrupt(reason) => terrace::Error::Corruption {
                file: std::path::PathBuf::from(crate::store::META_FILE),
                offset: 0,
                reason,
            },
            other => terrace::Error::InvalidArgument(other.to_string()),
        }
    }
}
