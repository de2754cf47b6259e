//! Versions: the set of live table files per level, the edits that change it, and the
//! MANIFEST log that makes each change durable (docs/formats/manifest.md).
//!
//! Owns: `FileMeta`, `VersionEdit` and its encoding (`edit`, `field`), `Version`
//! (`version`), level 0's opaque share of both (`level0_state`), the manifest's framing and CURRENT (`manifest`), replaying a manifest
//! (`replay`), `VersionSet` (`set`), and the names of database files (`file_name`).
//! Must not touch: table or log contents; it knows files only by their metadata and names.
//! Concurrency: `Version`s are immutable and shared by `Arc`; the `VersionSet` is not
//! synchronised and lives under the database mutex.

mod edit;
pub(crate) mod field;
mod file_meta;
mod file_name;
mod level0_state;
mod manifest;
mod replay;
mod set;
#[allow(clippy::module_inception)]
mod version;

pub use edit::{VersionEdit, SAFE_TO_IGNORE};
pub use file_meta::FileMeta;
pub use file_name::{
    manifest_file_name, parse_file_name, table_file_name, wal_file_name, FileKind,
    CURRENT_FILE_NAME, LOCK_FILE_NAME,
};
pub use level0_state::{is_level0_tag, Level0Record, Level0State, NoLevel0State};
pub(crate) use replay::{replay_manifest, Replayed};
pub use set::VersionSet;
pub use version::Version;

#[cfg(test)]
mod tests;
