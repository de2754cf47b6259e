//! Versions: the set of live table files per level, the edits that change it, and the
//! MANIFEST log that makes each change durable.
//!
//! Owns: `FileMeta`, `VersionEdit` (docs/formats/manifest.md), `Version`, `VersionSet`.
//! Must not touch: table contents; it knows files only by their metadata.

mod file_meta;

pub use file_meta::FileMeta;
