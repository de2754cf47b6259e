//! The server's error type for starting and running (command errors are RESP replies).

/// Why the server could not start or stopped with a failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A bad configuration file, flag or combination.
    #[error("configuration: {0}")]
    Config(String),
    /// The engine failed (open, close, sync).
    #[error(transparent)]
    Engine(#[from] terrace::Error),
    /// A stored record the server cannot read (background work that found it).
    #[error("data: {0}")]
    Data(String),
    /// A socket or runtime failure.
    #[error("network: {0}")]
    Io(#[from] std::io::Error),
}

/// `Result` with the server's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
