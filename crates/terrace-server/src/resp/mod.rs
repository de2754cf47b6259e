//! RESP: the Redis serialization protocol, as far as Terrace speaks it (docs/formats/resp.md).
//!
//! Owns: parsing client requests (RESP arrays of bulk strings and inline commands) under
//! the configured limits, and writing replies in RESP2 or RESP3.
//! Must not touch: command semantics (`commands`) or sockets (`net`); it works on byte
//! buffers only.
//! Concurrency: pure functions and plain values; no shared state.
//!
//! The parser never allocates a size a client claims: a bulk string is copied only once
//! all its bytes have arrived, and an array's element vector grows as elements parse.

mod parser;
mod reply;

pub use parser::{parse_command, Limits, Parsed, ProtocolError};
pub(crate) use reply::format_double;
pub use reply::{Protocol, Reply};

#[cfg(test)]
mod tests;
