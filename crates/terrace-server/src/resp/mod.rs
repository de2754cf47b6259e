//! RESP: the Redis serialization protocol, as far as Terrace speaks it (docs/formats/resp.md).
//!
//! Owns: parsing client requests (RESP arrays of bulk strings and inline commands) under
//! the configured limits, and writing replies in RESP2 or RESP3.
//! Must not touch: command semantics (`commands`) or sockets (`net`); it works on byte
//! buffers only.
//! Concurrency: pure functions and plain values; no shared state.
//!
//! The parser never allocates a size a client claims: a bulk string is taken only once
//! all its bytes have arrived, and an array's element vector grows as elements parse.
//! [`parse_command_into`] hands out a multibulk command's arguments as slices of the
//! read buffer (the server's path); [`parse_command`] copies them.

mod parser;
mod reply;

pub(crate) use parser::parse_decimal;
pub use parser::{
    parse_command, parse_command_into, ArgList, Frame, Limits, Parsed, ProtocolError,
    UNAUTHENTICATED_MAX_ARGS, UNAUTHENTICATED_MAX_BULK_LEN,
};
pub(crate) use reply::format_double;
pub use reply::{Protocol, Reply};

#[cfg(test)]
mod tests;
