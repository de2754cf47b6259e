//! A Redis-protocol server on the Terrace engine (`terrace serve`).
//!
//! Three layers, each usable without the ones above it:
//! - [`resp`] parses requests and writes replies (RESP2 and RESP3, inline commands);
//! - [`commands`] executes argument vectors against the engine ([`commands::Engine`],
//!   [`commands::Session`]), independent of framing and transport;
//! - [`net`] is the TCP transport: connections, pipelining, limits, shutdown.
//!
//! Values are stored with their expiry ([`value`], docs/formats/resp-values.md); the
//! RESP subset is documented in docs/formats/resp.md.

pub mod commands;
pub mod config;
pub mod error;
pub mod fdlimit;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod net;
pub mod resp;
pub mod value;

pub use config::{Config, Fsync, ServeArgs};
pub use error::{Error, Result};
