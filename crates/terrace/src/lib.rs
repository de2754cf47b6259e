//! Terrace: an LSM-tree key-value store for heterogeneous storage hardware.
//!
//! The crate is the engine: open a [`Db`], write with `put`/`delete`/`delete_range` or
//! atomic [`WriteBatch`]es, read with `get`, snapshots and iterators.
//!
//! ```
//! use terrace::{Db, Options, ReadOptions};
//!
//! # fn main() -> terrace::Result<()> {
//! let dir = std::env::temp_dir().join(format!("terrace-doc-{}", std::process::id()));
//! let db = Db::open(&dir, Options::default())?;
//! db.put(b"hello", b"world")?;
//! assert_eq!(db.get(b"hello")?, Some(b"world".to_vec()));
//! let mut it = db.iter(ReadOptions::default())?;
//! it.seek_to_first()?;
//! assert_eq!(it.key(), b"hello");
//! db.close()?;
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok(())
//! # }
//! ```
//!
//! See ARCHITECTURE.md for the map of modules.

pub mod batch;
mod coding;
pub mod compaction;
pub mod db;
pub mod error;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod helpers;
pub mod inspect;
pub mod iter;
pub mod key;
pub mod level0;
pub mod listener;
pub mod memtable;
pub mod merge;
pub mod offload;
pub mod options;
pub mod pmem;
#[allow(unsafe_code)]
mod prefetch;
pub mod range_del;
pub mod sst;
pub mod storage;
pub mod tables;
pub mod version;
pub mod volume;
pub mod wal;

pub use batch::WriteBatch;
pub use db::{
    CompactionInfo, Db, DbIterator, DbReader, DbStats, EventListener, FlushInfo, LatencySummary,
    LevelStats, PinnedValue, Snapshot,
};
pub use error::{Error, Result};
pub use inspect::{inspect_database, DatabaseLayout};
pub use options::{
    CompactionPri, Compression, Options, ReadOptions, WalRecoveryMode, WriteOptions,
};
