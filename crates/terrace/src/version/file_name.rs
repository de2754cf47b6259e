//! Names of the files in a database directory.
//!
//! Owns: the naming scheme (`000123.sst`, `000123.log`, `MANIFEST-000001`, `CURRENT`,
//! `LOCK`, `*.tmp`) and its parser.
//! Must not touch: the files themselves.
//! Concurrency: pure functions.

/// What a file in a database directory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FileKind {
    /// A table file, `000123.sst`.
    Table,
    /// A write-ahead log, `000123.log`.
    Wal,
    /// A manifest, `MANIFEST-000001`.
    Manifest,
    /// The pointer to the live manifest, `CURRENT` (number 0).
    Current,
    /// The lock file, `LOCK` (number 0).
    Lock,
    /// A temporary file being written before a rename: `000123.tmp`, or `CURRENT.tmp`
    /// (number 0).
    Temp,
}

/// `MANIFEST-000001`.
pub fn manifest_file_name(number: u64) -> String {
    format!("MANIFEST-{number:06}")
}

/// `000123.sst`.
pub fn table_file_name(number: u64) -> String {
    format!("{number:06}.sst")
}

/// `000123.log`.
pub fn wal_file_name(number: u64) -> String {
    format!("{number:06}.log")
}

/// `CURRENT`: names the live manifest.
pub const CURRENT_FILE_NAME: &str = "CURRENT";

/// `LOCK`: held while a process has the database open.
pub const LOCK_FILE_NAME: &str = "LOCK";

/// Classifies a file name of a database directory; `None` if the engine did not make it.
pub fn parse_file_name(name: &str) -> Option<(FileKind, u64)> {
    match name {
        CURRENT_FILE_NAME => return Some((FileKind::Current, 0)),
        LOCK_FILE_NAME => return Some((FileKind::Lock, 0)),
        "CURRENT.tmp" => return Some((FileKind::Temp, 0)),
        _ => {}
    }
    if let Some(n) = name.strip_prefix("MANIFEST-") {
        return parse_number(n).map(|n| (FileKind::Manifest, n));
    }
    let (stem, ext) = name.rsplit_once('.')?;
    let kind = match ext {
        "sst" => FileKind::Table,
        "log" => FileKind::Wal,
        "tmp" => FileKind::Temp,
        _ => return None,
    };
    parse_number(stem).map(|n| (kind, n))
}

fn parse_number(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}
