//! Checks of the decoders of untrusted bytes, shared by the fuzz targets in `fuzz/` and
//! the engine's own random-bytes property test (so `cargo test` covers the same ground).
//!
//! Owns: one `check_*` function per decoder. Each feeds arbitrary bytes to the decoder
//! and returns `Err` only when a property is broken (a decoded value does not round-trip,
//! or a reader stops making progress); bytes that do not decode are `Ok`. A panic inside
//! a decoder is the other failure the callers look for. The `fix_*` functions recompute
//! the checksums of a mutated table, log or row image, so that the `*_fixed` checks get
//! past the checksums into block, index, filter, fragment and row decoding.
//! Must not touch: any file or database; everything stays in memory.
//! Concurrency: pure functions.
//!
//! Compiled for tests and with the `fuzzing` feature only; not part of the API.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use crate::batch::{BatchOp, WriteBatch};
use crate::coding::{get_fixed32, get_fixed64};
use crate::compaction::CompactionTask;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key;
use crate::level0::matrix::RowReader;
use crate::level0::matrix::{MatrixState, RowEdit};
use crate::pmem::header::{Header as RegionHeader, HEADER_BYTES as REGION_HEADER_BYTES};
use crate::sst::block_iter::{Block, BlockIter};
use crate::sst::compress::decode_block;
use crate::sst::format::{BlockHandle, BLOCK_TRAILER_LEN, FOOTER_LEN, MAGIC as TABLE_MAGIC};
use crate::sst::SstReader;
use crate::storage::{IoClass, ReadableFile, WritableFile};
use crate::version::{Version, VersionEdit};
use crate::wal::{fragment_crc, LogReader, ReadOutcome, RecordType, BLOCK_SIZE, HEADER_SIZE};

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

/// A writable file whose bytes stay in memory, in a buffer shared with whoever holds a
/// clone of it (seed writers and tests read the bytes back).
#[derive(Debug, Clone, Default)]
pub struct MemWritable(pub Arc<parking_lot::Mutex<Vec<u8>>>);

impl MemWritable {
    /// The bytes written so far.
    pub fn bytes(&self) -> Vec<u8> {
        self.0.lock().clone()
    }
}

impl WritableFile for MemWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.0.lock().extend_from_slice(data);
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        self.0.lock().len() as u64
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
/// Its level-0 records are decoded as the matrix level 0's rows, which must survive
/// encode, decode too; applying them to an empty version must not panic.
///
/// # Errors
/// When the re-encoded edit or rows do not decode to the same.
pub fn check_version_edit(data: &[u8]) -> std::result::Result<(), Broken> {
    let file = Path::new("MANIFEST-fuzz");
    let Ok(edit) = VersionEdit::decode(data, file, 0) else {
        return Ok(());
    };
    match VersionEdit::decode(&edit.encode(), file, 0) {
        Ok(again) if again == edit => {}
        Ok(again) => return Err(format!("edit {edit:?} re-decodes as {again:?}")),
        Err(e) => return Err(format!("edit {edit:?} does not re-decode: {e}")),
    }
    let Ok(rows) = RowEdit::from_records(&edit.level0) else {
        return Ok(());
    };
    match RowEdit::from_records(&rows.clone().into_records()) {
        Ok(again) if again == rows => {}
        Ok(again) => return Err(format!("rows {rows:?} re-decode as {again:?}")),
        Err(e) => return Err(format!("rows {rows:?} do not re-decode: {e}")),
    }
    let empty = Version::with_level0(7, Arc::new(MatrixState::default()));
    let _ = empty.apply(&edit);
    Ok(())
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

/// The bytes of block `h` and its trailer, as `(start, trailer offset)`, if they lie
/// before `end` (where a table's footer starts).
fn block_span(h: BlockHandle, end: usize) -> Option<(usize, usize)> {
    let start = usize::try_from(h.offset).ok()?;
    let trailer = start.checked_add(usize::try_from(h.size).ok()?)?;
    (trailer.checked_add(BLOCK_TRAILER_LEN)? <= end).then_some((start, trailer))
}

/// Rewrites the CRC in the trailer of block `h` to match its contents and type byte.
fn fix_block_trailer(data: &mut [u8], h: BlockHandle, end: usize) {
    let Some((start, trailer)) = block_span(h, end) else {
        return;
    };
    let Some((&kind, contents)) = data.get(start..=trailer).and_then(|b| b.split_last()) else {
        return;
    };
    let crc = crc32c::crc32c_append(crc32c::crc32c(contents), &[kind]);
    if let Some(slot) = data.get_mut(trailer + 1..trailer + BLOCK_TRAILER_LEN) {
        slot.copy_from_slice(&crc.to_le_bytes());
    }
}

/// The block handles stored as the values of block `h` (an index or a metaindex),
/// as far as the block decodes.
fn handles_in_block(data: &[u8], h: BlockHandle, end: usize) -> Vec<BlockHandle> {
    let mut out = Vec::new();
    let Some((start, trailer)) = block_span(h, end) else {
        return out;
    };
    let Some(stored) = data.get(start..trailer + BLOCK_TRAILER_LEN) else {
        return out;
    };
    let Some(block) = decode_block(stored.to_vec())
        .ok()
        .and_then(|b| Block::new(b).ok())
    else {
        return out;
    };
    let mut it = BlockIter::new(block);
    let mut step = it.seek_to_first();
    while step.is_ok() && it.valid() && out.len() <= data.len() {
        if let Some(handle) = BlockHandle::decode(it.value()) {
            out.push(handle);
        }
        step = it.next();
    }
    out
}

/// Makes a mutated table file's checksums match its bytes: restores the footer's magic
/// number, then recomputes the trailer CRC of the index and metaindex blocks the footer
/// names, of every block their entries name (data blocks, filter, properties, range
/// deletions), and last the footer's own CRC. Offsets and sizes are left as they are,
/// so a mutation that moved bytes still fails, but at a handle or in a block's decoding,
/// not at a checksum.
pub fn fix_table_checksums(data: &mut [u8]) {
    let Some(footer_at) = data.len().checked_sub(FOOTER_LEN) else {
        return;
    };
    if let Some(magic) = data.get_mut(footer_at + 40..) {
        magic.copy_from_slice(&TABLE_MAGIC.to_le_bytes());
    }
    let handle = |data: &[u8], i: usize| BlockHandle {
        offset: get_fixed64(data, footer_at + 16 * i).unwrap_or(0),
        size: get_fixed64(data, footer_at + 16 * i + 8).unwrap_or(0),
    };
    let (metaindex, index) = (handle(data, 0), handle(data, 1));
    let mut named = Vec::new();
    for top in [index, metaindex] {
        fix_block_trailer(data, top, footer_at);
        named.extend(handles_in_block(data, top, footer_at));
    }
    for h in named {
        fix_block_trailer(data, h, footer_at);
    }
    // A named block that overlaps the index or metaindex changed its bytes: fix them last.
    for top in [index, metaindex] {
        fix_block_trailer(data, top, footer_at);
    }
    let crc = data.get(footer_at..footer_at + 36).map(crc32c::crc32c);
    if let (Some(crc), Some(slot)) = (crc, data.get_mut(footer_at + 36..footer_at + 40)) {
        slot.copy_from_slice(&crc.to_le_bytes());
    }
}

/// [`check_table`] on a copy of `data` whose checksums [`fix_table_checksums`] fixed.
///
/// # Errors
/// As [`check_table`].
pub fn check_table_fixed(data: &[u8]) -> std::result::Result<(), Broken> {
    let mut fixed = data.to_vec();
    fix_table_checksums(&mut fixed);
    check_table(&fixed)
}

/// Makes a mutated log's fragment checksums match their payloads: walks each 32 KiB
/// block's chain of fragment headers (as the reader does) and rewrites the CRC of every
/// fragment whose type is known and whose payload fits in its block and the file. A
/// block's chain stops at zero-filled space, an unknown type or a length that runs past.
pub fn fix_wal_checksums(data: &mut [u8]) {
    let mut block = 0usize;
    while block < data.len() {
        let end = block.saturating_add(BLOCK_SIZE).min(data.len());
        let mut pos = block;
        while let Some(header) = data.get(pos..pos + HEADER_SIZE) {
            let len = usize::from(u16::from_le_bytes([header[4], header[5]]));
            let kind = header[6];
            let payload_end = pos + HEADER_SIZE + len;
            if RecordType::from_u8(kind).is_none() || payload_end > end {
                break;
            }
            let crc = fragment_crc(
                kind,
                data.get(pos + HEADER_SIZE..payload_end).unwrap_or_default(),
            );
            if let Some(slot) = data.get_mut(pos..pos + 4) {
                slot.copy_from_slice(&crc.to_le_bytes());
            }
            pos = payload_end;
            if pos + HEADER_SIZE > end {
                break;
            }
        }
        block = block.saturating_add(BLOCK_SIZE);
    }
}

/// [`check_wal`] on a copy of `data` whose fragment checksums [`fix_wal_checksums`] fixed.
///
/// # Errors
/// As [`check_wal`].
pub fn check_wal_fixed(data: &[u8]) -> std::result::Result<(), Broken> {
    let mut fixed = data.to_vec();
    fix_wal_checksums(&mut fixed);
    check_wal(&fixed)
}

/// Offset of the row header inside a row directory.
const DIR_HEADER_AT: usize = 40;
/// Offset of the chunk list (`chunk_info`) inside a row header.
const ROW_CHUNK_INFO_AT: usize = 96;

/// The bytes at `(offset, length)` of a row image, if they are inside it.
fn image_slice(image: &[u8], (offset, len): (u64, u64)) -> Option<&[u8]> {
    let start = usize::try_from(offset).ok()?;
    image.get(start..start.checked_add(usize::try_from(len).ok()?)?)
}

/// Makes a mutated row image's checksums match (see [`check_matrix_row`] for the image):
/// each chunk's CRC in the row header, as far as the directory names the chunk inside the
/// image; the row header's CRC; the directory's CRC.
pub fn fix_matrix_row_checksums(image: &mut [u8]) {
    let u32_at = |b: &[u8], at: usize| get_fixed32(b, at).map_or(0, |v| v as usize);
    let header_len = u32_at(image, 24);
    let (n_meta, n_data) = (u32_at(image, 28), u32_at(image, 32));
    let Some(list_at) = DIR_HEADER_AT.checked_add(header_len) else {
        return;
    };
    let chunks = n_meta.saturating_add(n_data).min(image.len() / 16);
    let extents: Vec<(u64, u64)> = (0..chunks)
        .map_while(|i| {
            let at = list_at.checked_add(16 * i)?;
            Some((get_fixed64(image, at)?, get_fixed64(image, at + 8)?))
        })
        .collect();
    let row_len = u32_at(image, DIR_HEADER_AT + 8).min(header_len);
    let header_chunks =
        u32_at(image, DIR_HEADER_AT + 52).saturating_add(u32_at(image, DIR_HEADER_AT + 56));
    for (i, &(offset, _)) in extents.iter().enumerate().take(header_chunks) {
        let info_at = DIR_HEADER_AT + ROW_CHUNK_INFO_AT + 8 * i;
        if info_at + 8 > DIR_HEADER_AT + row_len {
            break;
        }
        let len = get_fixed32(image, info_at).unwrap_or(0);
        let Some(crc) = image_slice(image, (offset, u64::from(len))).map(crc32c::crc32c) else {
            continue;
        };
        if let Some(slot) = image.get_mut(info_at + 4..info_at + 8) {
            slot.copy_from_slice(&crc.to_le_bytes());
        }
    }
    if let Some(crc_at) = (DIR_HEADER_AT + row_len).checked_sub(4) {
        if crc_at >= DIR_HEADER_AT {
            let crc = image.get(DIR_HEADER_AT..crc_at).map(crc32c::crc32c);
            if let (Some(crc), Some(slot)) = (crc, image.get_mut(crc_at..crc_at + 4)) {
                slot.copy_from_slice(&crc.to_le_bytes());
            }
        }
    }
    let body_end = list_at.saturating_add(n_meta.saturating_add(n_data).saturating_mul(16));
    let crc = image.get(..body_end).map(crc32c::crc32c);
    if let (Some(crc), Some(slot)) = (crc, image.get_mut(body_end..body_end.saturating_add(4))) {
        slot.copy_from_slice(&crc.to_le_bytes());
    }
}

/// Decodes `image` as a row on persistent memory and reads the whole row: the image is a
/// row directory at offset 0 whose extents are `(offset, length)` byte ranges of the image
/// itself (as they are of the region file), holding the metadata and data chunks. The row
/// number and creation id the directory must name are taken from its own bytes. The image
/// is checked as given and again with its checksums fixed by [`fix_matrix_row_checksums`].
///
/// # Errors
/// When a row that opened (its whole contents were checked) then fails to read an
/// entry, reads keys out of order, or a key's lower bound is not its own position.
pub fn check_matrix_row(image: &[u8]) -> std::result::Result<(), Broken> {
    let mut fixed = image.to_vec();
    fix_matrix_row_checksums(&mut fixed);
    for bytes in [image, &fixed[..]] {
        if let Ok(row) = open_matrix_row(bytes) {
            check_row(&row)?;
        }
    }
    Ok(())
}

/// The row of a row image; `Err` with the reason when its directory does not decode, an
/// extent lies outside the image or the row does not open.
fn open_matrix_row(image: &[u8]) -> Result<RowReader<&[u8]>> {
    let number = get_fixed64(image, 8).unwrap_or(0);
    let creation_id = get_fixed64(image, 16).unwrap_or(0);
    let name = Path::new("fuzz-row");
    let dir = crate::level0::matrix::decode_dir(image, number, creation_id, name)?;
    let chunks = |spans: &[(u64, u64)]| {
        spans
            .iter()
            .map(|&s| image_slice(image, s))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| Error::corruption(name, 0, "extent outside the image"))
    };
    let (meta, data) = (chunks(&dir.meta)?, chunks(&dir.data)?);
    RowReader::open(dir.header, meta, data)
}

/// Reads every entry of an opened row, its `next` pointers and tombstones, and looks each
/// key up again.
fn check_row<E: AsRef<[u8]>>(row: &RowReader<E>) -> std::result::Result<(), Broken> {
    let mut last: Option<Vec<u8>> = None;
    for j in 0..row.len() {
        let (k, _) = row
            .entry(j)
            .map_err(|e| format!("opened row fails to read entry {j}: {e}"))?;
        if last.as_deref().is_some_and(|l| key::compare(l, k).is_ge()) {
            return Err(format!("opened row has entry {j} out of order"));
        }
        let k = k.to_vec();
        row.next_index(j)
            .map_err(|e| format!("opened row fails to read next of {j}: {e}"))?;
        match row.lower_bound(&k, 0, row.len()) {
            Ok(p) if p == j => {}
            other => return Err(format!("lower bound of entry {j} is {other:?}")),
        }
        let _ = row.max_covering_tombstone(key::user_key(&k), key::MAX_SEQ);
        last = Some(k);
    }
    let _ = row.range_tombstones();
    Ok(())
}

/// Decodes `data` as the first bytes of a persistent-memory region file, as given and with
/// its header CRC recomputed, both as a file of `data.len()` bytes and as a long enough
/// one; a header that decodes must encode to the same 36 bytes and fit the file.
///
/// # Errors
/// When a decoded header re-encodes differently or claims more bytes than the file has.
pub fn check_pmem_header(data: &[u8]) -> std::result::Result<(), Broken> {
    let mut fixed = data.to_vec();
    let crc = fixed.get(..32).map(crc32c::crc32c);
    if let (Some(crc), Some(slot)) = (crc, fixed.get_mut(32..36)) {
        slot.copy_from_slice(&crc.to_le_bytes());
    }
    let path = Path::new("fuzz.pmem");
    for bytes in [data, &fixed[..]] {
        for file_len in [bytes.len() as u64, u64::MAX] {
            let Ok(header) = RegionHeader::decode(path, bytes, file_len) else {
                continue;
            };
            if bytes.get(..REGION_HEADER_BYTES) != Some(&header.encode()[..]) {
                return Err(format!("header {header:?} re-encodes differently"));
            }
            if header.file_len() > file_len {
                return Err(format!(
                    "header {header:?} accepted for a {file_len}-byte file"
                ));
            }
            let _ = header.check_reserved(path, bytes);
        }
    }
    Ok(())
}

#[cfg(test)]
mod seeds;
#[cfg(test)]
mod tests;
