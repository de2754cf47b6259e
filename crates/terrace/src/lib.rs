//! Terrace: an LSM-tree key-value store for heterogeneous storage hardware.
//!
//! The crate is the engine. See ARCHITECTURE.md for the map of modules.

pub mod error;
pub mod inspect;
pub mod iter;
pub mod key;
pub mod options;
pub mod range_del;
pub mod storage;
pub mod version;

pub use error::{Error, Result};
pub use inspect::{inspect_database, DatabaseLayout};
pub use options::{Compression, Options, ReadOptions, WalRecoveryMode, WriteOptions};
