//! The bench crate's error: bad flags, engine failures, server failures and report I/O.
//!
//! Owns: `BenchError`. Must not touch: anything else.
//! Concurrency: plain data, `Send + Sync`.

use std::path::PathBuf;

/// What went wrong in a benchmark run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// A flag name that db_bench-style parsing does not know.
    #[error("unknown flag --{0}")]
    UnknownFlag(String),
    /// A flag whose value does not parse or is out of range.
    #[error("bad value {value:?} for --{flag}: {reason}")]
    BadValue {
        /// The flag's name.
        flag: String,
        /// The value given.
        value: String,
        /// Why it was rejected.
        reason: String,
    },
    /// A benchmark name that is not implemented.
    #[error("unknown benchmark {0:?}")]
    UnknownBenchmark(String),
    /// A latency histogram could not be made or merged.
    #[error("latency histogram: {0}")]
    Histogram(String),
    /// A worker thread died.
    #[error("benchmark thread failed: {0}")]
    Thread(String),
    /// A Redis-protocol server could not be reached.
    #[error("cannot connect to {target}: {source} (is the server running and listening there?)")]
    Connect {
        /// The `--target`.
        target: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Talking to a connected server failed: a closed connection or a malformed reply.
    #[error("talking to {target}: {source}")]
    Net {
        /// The `--target`.
        target: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The server answered a benchmark's command with an error or an unexpected reply.
    #[error("server replied to {command}: {reply}")]
    Server {
        /// The command's name.
        command: String,
        /// The reply, as text.
        reply: String,
    },
    /// A benchmark that only exists for the embedded engine, asked of a server.
    #[error("benchmark {0:?} is not available with --target (server mode runs ycsb_load and ycsb_a .. ycsb_f)")]
    NotInServerMode(String),
    /// The engine failed.
    #[error(transparent)]
    Engine(#[from] terrace::Error),
    /// A report file could not be written.
    #[error("writing {}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The plot could not be drawn.
    #[error("drawing plot {}: {reason}", .path.display())]
    Plot {
        /// The file.
        path: PathBuf,
        /// The drawing library's message.
        reason: String,
    },
}

/// Result of the bench crate.
pub type Result<T> = std::result::Result<T, BenchError>;
