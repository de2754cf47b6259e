//! Checks of the decoders of untrusted bytes, shared by the fuzz targets in `fuzz/` and
//! the engine's own random-bytes property test (so `cargo test` covers the same ground).
//!
//! Owns: one `check_*` function per decoder. Each feeds arbitrary bytes to the decoder
//! and returns `Err` only when a property is broken (a decoded value does not round-trip,
//! or a reader stops making progress); bytes that do not decode are `Ok`. A panic inside
//! a decoder is the other failure the callers look for.
//! Must not touch: any file or database; everything stays in memory.
//! Concurrency: pure functions.
//!
//! Compiled for tests and with the `fuzzing` feature only; not part of the API.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use crate::batch::{BatchOp, WriteBatch};
use crate::compaction::CompactionTask;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::sst::block_iter::{Block, BlockIter};
use crate::sst::SstReader;
use crate::storage::{IoClass, ReadableFile};
use crate::version::VersionEdit;
use crate::wal::{LogReader, ReadOutcome, HEADER_SIZE};

/// A property a decoder broke, with what was seen.
pub type Broken = String;

/// A readable file held in memory (the table and log checks read through it).
#[derive(Debug, Clone)]
pub struct MemFile(pub Vec<u8>);

impl ReadableFile for MemFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8], _class: IoClass) -> Result<()> {
        let eof = || {
            Error::io(
                "<memory>",
                std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
            )
        };
        let start = usize::try_from(offset).map_err(|_| eof())?;
        let end = start.checked_add(buf.len()).ok_or_else(eof)?;
        let src = self.0.get(start..end).ok_or_else(eof)?;
        buf.copy_from_slice(src);
        Ok(())
    }

    fn len(&self) -> u64 {
        self.0.len() as u64
    }
}

/// Decodes `data` as a table block (contents without trailer) and walks it forward,
/// backward and by seeks to each key found. No property beyond not panicking: a block
/// with damaged restart points may legitimately read differently in each direction.
///
/// # Errors
/// None so far; the signature matches the other checks.
pub fn check_block(data: &[u8]) -> std::result::Result<(), Broken> {
    let Ok(block) = Block::new(Bytes::copy_from_slice(data)) else {
        return Ok(());
    };
    let mut keys = Vec::new();
    let mut it = BlockIter::new(block.clone());
    let mut step = it.seek_to_first();
    while step.is_ok() && it.valid() && keys.len() <= data.len() {
        keys.push(it.key().to_vec());
        let _ = it.value();
        step = it.next();
    }
    let mut it = BlockIter::new(block);
    let mut step = it.seek_to_last();
    let mut back = 0;
    while step.is_ok() && it.valid() && back <= data.len() {
        back += 1;
        step = it.prev();
    }
    for k in keys.iter().take(64) {
        let _ = it.seek(k);
    }
    Ok(())
}

/// Opens `data` as a whole table file and reads every entry, tombstone and property.
/// Checksums turn away nearly every mutated file at its footer or first block, so this
/// mostly exercises the footer, the block trailer and the error paths; `check_block`
/// covers what is inside blocks.
///
/// # Errors
/// None so far (compressed blocks may legitimately hold many more entries than the file
/// has bytes, so iteration is not bounded here; a fuzzer's timeout catches a loop).
pub fn check_table(data: &[u8]) -> std::result::Result<(), Broken> {
    let file = Arc::new(MemFile(data.to_vec()));
    let Ok(reader) = SstReader::open(file, PathBuf::from("fuzz.sst"), 1, None) else {
        return Ok(());
    };
    let reader = Arc::new(reader);
    let _ = reader.properties();
    let _ = reader.range_tombstones();
    let _ = reader.verify();
    let mut it = reader.iter(IoClass::Foreground, false);
    let mut step = it.seek_to_first();
    let mut first = None;
    while step.is_ok() && it.valid() {
        if first.is_none() {
            first = Some(it.key().to_vec());
        }
        step = it.next();
    }
    if let Some(k) = first {
        let _ = reader.get(&k, IoClass::Foreground, false);
        let _ = it.seek(&k);
        let _ = it.seek_for_prev(&k);
    }
    let _ = it.seek_to_last().and_then(|()| it.prev());
    Ok(())
}

/// Reads `data` as a log file to its end.
///
/// # Errors
/// When the reader neither ends nor advances: more outcomes than the file has headers.
pub fn check_wal(data: &[u8]) -> std::result::Result<(), Broken> {
    let mut reader = LogReader::new(Arc::new(MemFile(data.to_vec())), PathBuf::from("fuzz.log"));
    let limit = data.len() / HEADER_SIZE + 2;
    for _ in 0..limit {
        match reader.read_record() {
            Ok(ReadOutcome::Eof) | Err(_) => return Ok(()),
            Ok(ReadOutcome::Record { data: r, .. }) if r.len() > data.len() => {
                return Err(format!(
                    "record of {} bytes from a {}-byte log",
                    r.len(),
                    data.len()
                ));
            }
            Ok(_) => {}
        }
    }
    Err(format!(
        "log of {} bytes gives more than {limit} outcomes",
        data.len()
    ))
}

/// Decodes `data` as a log record's write batch; a batch that decodes must iterate
/// without error, and rebuilding it from its operations must give the same operations
/// in no more bytes (decoders accept padded varints, so the bytes may be fewer).
///
/// # Errors
/// When a decoded batch's operations fail to iterate or rebuild differently.
pub fn check_batch(data: &[u8]) -> std::result::Result<(), Broken> {
    let Ok(batch) = WriteBatch::from_record(data.to_vec(), Path::new("fuzz.log"), 0) else {
        return Ok(());
    };
    let ops = batch
        .iter()
        .collect::<Result<Vec<_>>>()
        .map_err(|e| format!("decoded batch fails to iterate: {e}"))?;
    let mut rebuilt = WriteBatch::new();
    rebuilt.set_sequence(batch.sequence());
    for op in &ops {
        match *op {
            BatchOp::Put { key, value } => rebuilt.put(key, value),
            BatchOp::Delete { key } => rebuilt.delete(key),
            BatchOp::DeleteRange { start, end } => rebuilt.delete_range(start, end),
        }
    }
    let again = rebuilt
        .iter()
        .collect::<Result<Vec<_>>>()
        .map_err(|e| format!("rebuilt batch fails to iterate: {e}"))?;
    if again != ops || rebuilt.count() != batch.count() || rebuilt.data().len() > data.len() {
        return Err("decoded batch rebuilds to different operations".to_string());
    }
    Ok(())
}

/// Decodes `data` as a manifest edit; an edit that decodes must survive encode, decode.
///
/// # Errors
/// When the re-encoded edit does not decode to the same edit.
pub fn check_version_edit(data: &[u8]) -> std::result::Result<(), Broken> {
    let file = Path::new("MANIFEST-fuzz");
    let Ok(edit) = VersionEdit::decode(data, file, 0) else {
        return Ok(());
    };
    match VersionEdit::decode(&edit.encode(), file, 0) {
        Ok(again) if again == edit => Ok(()),
        Ok(again) => Err(format!("edit {edit:?} re-decodes as {again:?}")),
        Err(e) => Err(format!("edit {edit:?} does not re-decode: {e}")),
    }
}

/// Decodes `data` as a compaction task; a task that decodes must survive encode, decode.
///
/// # Errors
/// When a decoded task fails to encode or re-decodes differently.
pub fn check_compaction_task(data: &[u8]) -> std::result::Result<(), Broken> {
    let Ok(task) = CompactionTask::decode(data) else {
        return Ok(());
    };
    let bytes = task
        .encode()
        .map_err(|e| format!("decoded task does not encode: {e}"))?;
    match CompactionTask::decode(&bytes) {
        Ok(again) if again == task => Ok(()),
        Ok(again) => Err(format!("task {task:?} re-decodes as {again:?}")),
        Err(e) => Err(format!("task {task:?} does not re-decode: {e}")),
    }
}

#[cfg(test)]
mod tests;
