//! One change to the set of live files: the payload of a manifest record
//! (docs/formats/manifest.md, "Edit payload").
//!
//! Owns: the tags of edit fields and file-metadata sub-fields, and their encoding.
//! Must not touch: the manifest file or versions; `set` frames and applies edits.
//! Concurrency: plain values.

use std::path::Path;

use super::field::{put_field, put_varint_field, Decoder};
use super::level0_state::{is_level0_tag, Level0Record};
use super::FileMeta;
use crate::coding::{put_varint32, put_varint64};
use crate::error::{Error, Result};
use crate::key::{self, InternalKey, SeqNo};

pub use super::field::SAFE_TO_IGNORE;

// Edit fields. New tags are only ever added; a tag is never reused for another meaning.
const TAG_LOG_NUMBER: u32 = 1;
const TAG_NEXT_FILE_NUMBER: u32 = 2;
const TAG_LAST_SEQUENCE: u32 = 3;
const TAG_DELETED_FILE: u32 = 4;
const TAG_NEW_FILE: u32 = 5;
const TAG_COMPACT_POINTER: u32 = 6;
/// Not safe to ignore: a release that skipped it would not replay the external log's
/// writes that are not in tables yet, and lose them.
const TAG_EXTERNAL_FLUSHED: u32 = 11;
// Tags 7 to 10 and 64 to 127 carry level-0 records (`level0_state::is_level0_tag`).

// Sub-fields of a new file.
const FILE_NUMBER: u32 = 1;
const FILE_VOLUME: u32 = 2;
const FILE_SIZE: u32 = 3;
const FILE_SMALLEST: u32 = 4;
const FILE_LARGEST: u32 = 5;
const FILE_SMALLEST_SEQ: u32 = 6;
const FILE_LARGEST_SEQ: u32 = 7;
const FILE_NUM_ENTRIES: u32 = 8;
const FILE_NUM_DELETIONS: u32 = 9;
const FILE_NUM_RANGE_DELETIONS: u32 = 10;
const FILE_CHECKSUM: u32 = 11;
/// The volumes of a file's replicas, as varints; safe to ignore (a release that skips it
/// reads the copy on `FILE_VOLUME`).
const FILE_REPLICAS: u32 = SAFE_TO_IGNORE | 12;

/// A change to the live files and counters, as logged in the manifest.
///
/// Decoding keeps fields this release does not know but may skip (tags with
/// [`SAFE_TO_IGNORE`] set) in `unknown_fields`, and encoding writes them back verbatim.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VersionEdit {
    /// Write-ahead logs with a number below this are obsolete.
    pub log_number: Option<u64>,
    /// The next file number to allocate.
    pub next_file_number: Option<u64>,
    /// The largest sequence number written.
    pub last_sequence: Option<SeqNo>,
    /// Files removed: `(level, file number)`.
    pub deleted_files: Vec<(u32, u64)>,
    /// Files added: `(level, metadata)`.
    pub new_files: Vec<(u32, FileMeta)>,
    /// Where the next compaction of a level starts: `(level, internal key)`.
    pub compact_pointers: Vec<(u32, InternalKey)>,
    /// Every write of the external log (`wal::ExternalLog`) with sequence numbers at or
    /// below this is in table files.
    pub external_flushed: Option<SeqNo>,
    /// Level-0 records, in order: opaque here, the level 0 that wrote them applies them
    /// to its state (the matrix level 0's rows).
    pub level0: Vec<Level0Record>,
    /// Safe-to-ignore fields of a newer release: `(tag, payload)`.
    pub unknown_fields: Vec<(u32, Vec<u8>)>,
}

impl VersionEdit {
    /// Encodes the edit as a sequence of tagged fields.
    pub fn encode(&self) -> Vec<u8> {
        let mut buf = Vec::with_capacity(64 + self.new_files.len() * 96);
        if let Some(n) = self.log_number {
            put_varint_field(&mut buf, TAG_LOG_NUMBER, n);
        }
        if let Some(n) = self.next_file_number {
            put_varint_field(&mut buf, TAG_NEXT_FILE_NUMBER, n);
        }
        if let Some(s) = self.last_sequence {
            put_varint_field(&mut buf, TAG_LAST_SEQUENCE, s);
        }
        for &(level, number) in &self.deleted_files {
            let mut p = Vec::with_capacity(12);
            put_varint32(&mut p, level);
            put_varint64(&mut p, number);
            put_field(&mut buf, TAG_DELETED_FILE, &p);
        }
        for (level, meta) in &self.new_files {
            let mut p = Vec::with_capacity(96);
            put_varint32(&mut p, *level);
            encode_file_meta(&mut p, meta);
            put_field(&mut buf, TAG_NEW_FILE, &p);
        }
        for (level, k) in &self.compact_pointers {
            let mut p = Vec::with_capacity(5 + k.0.len());
            put_varint32(&mut p, *level);
            p.extend_from_slice(&k.0);
            put_field(&mut buf, TAG_COMPACT_POINTER, &p);
        }
        if let Some(s) = self.external_flushed {
            put_varint_field(&mut buf, TAG_EXTERNAL_FLUSHED, s);
        }
        for r in &self.level0 {
            put_field(&mut buf, r.tag, &r.payload);
        }
        for (tag, payload) in &self.unknown_fields {
            put_field(&mut buf, *tag, payload);
        }
        buf
    }

    /// Decodes an edit stored at byte `offset` of `file`.
    ///
    /// # Errors
    /// `Error::Corruption` (with the offset where decoding stopped) for malformed bytes;
    /// `Error::Unsupported` for a tag this release does not know and may not skip.
    pub fn decode(data: &[u8], file: &Path, offset: u64) -> Result<VersionEdit> {
        let mut d = Decoder::new(data, file, offset);
        let mut edit = VersionEdit::default();
        while !d.is_empty() {
            let at = d.offset();
            let (tag, mut p) = d.field()?;
            match tag {
                TAG_LOG_NUMBER => edit.log_number = Some(p.only_varint64("log number")?),
                TAG_NEXT_FILE_NUMBER => {
                    edit.next_file_number = Some(p.only_varint64("next file number")?);
                }
                TAG_LAST_SEQUENCE => {
                    edit.last_sequence = Some(p.only_varint64("last sequence")?);
                }
                TAG_EXTERNAL_FLUSHED => {
                    edit.external_flushed = Some(p.only_varint64("external flushed sequence")?);
                }
                TAG_DELETED_FILE => {
                    let level = p.varint32()?;
                    let number = p.varint64()?;
                    p.finish("deleted file")?;
                    edit.deleted_files.push((level, number));
                }
                TAG_NEW_FILE => {
                    let level = p.varint32()?;
                    edit.new_files.push((level, decode_file_meta(p)?));
                }
                TAG_COMPACT_POINTER => {
                    let level = p.varint32()?;
                    let key_at = p.offset();
                    let k = p.rest();
                    key::parse(k, file, key_at)?;
                    edit.compact_pointers.push((level, InternalKey(k.to_vec())));
                }
                t if is_level0_tag(t) => edit.level0.push(Level0Record {
                    tag: t,
                    payload: p.rest().to_vec(),
                }),
                t if t & SAFE_TO_IGNORE != 0 => edit.unknown_fields.push((t, p.rest().to_vec())),
                t => return Err(p.unknown_tag(t, at, "edit field")),
            }
        }
        Ok(edit)
    }
}

fn encode_file_meta(buf: &mut Vec<u8>, m: &FileMeta) {
    put_varint_field(buf, FILE_NUMBER, m.number);
    put_varint_field(buf, FILE_VOLUME, u64::from(m.volume));
    put_varint_field(buf, FILE_SIZE, m.size);
    put_field(buf, FILE_SMALLEST, &m.smallest.0);
    put_field(buf, FILE_LARGEST, &m.largest.0);
    put_varint_field(buf, FILE_SMALLEST_SEQ, m.smallest_seq);
    put_varint_field(buf, FILE_LARGEST_SEQ, m.largest_seq);
    put_varint_field(buf, FILE_NUM_ENTRIES, m.num_entries);
    put_varint_field(buf, FILE_NUM_DELETIONS, m.num_deletions);
    put_varint_field(buf, FILE_NUM_RANGE_DELETIONS, m.num_range_deletions);
    put_field(buf, FILE_CHECKSUM, &m.file_checksum.to_le_bytes());
    if !m.replicas.is_empty() {
        let mut list = Vec::with_capacity(m.replicas.len());
        for &v in &m.replicas {
            put_varint32(&mut list, v);
        }
        put_field(buf, FILE_REPLICAS, &list);
    }
}

/// Decodes the sub-fields of a new file. Number, smallest and largest key are required;
/// the other fields default to 0. Unknown safe-to-ignore sub-fields are skipped.
fn decode_file_meta(mut d: Decoder<'_>) -> Result<FileMeta> {
    let start = d.offset();
    let mut m = FileMeta {
        number: 0,
        volume: 0,
        size: 0,
        smallest: InternalKey::default(),
        largest: InternalKey::default(),
        smallest_seq: 0,
        largest_seq: 0,
        num_entries: 0,
        num_deletions: 0,
        num_range_deletions: 0,
        file_checksum: 0,
        replicas: Vec::new(),
    };
    let (mut has_number, mut has_smallest, mut has_largest) = (false, false, false);
    while !d.is_empty() {
        let at = d.offset();
        let (tag, mut p) = d.field()?;
        match tag {
            FILE_NUMBER => {
                m.number = p.only_varint64("file number")?;
                has_number = true;
            }
            FILE_VOLUME => {
                let v = p.varint32()?;
                p.finish("volume")?;
                m.volume = v;
            }
            FILE_SIZE => m.size = p.only_varint64("file size")?,
            FILE_SMALLEST | FILE_LARGEST => {
                let key_at = p.offset();
                let k = p.rest();
                key::parse(k, d.file(), key_at)?;
                if tag == FILE_SMALLEST {
                    m.smallest = InternalKey(k.to_vec());
                    has_smallest = true;
                } else {
                    m.largest = InternalKey(k.to_vec());
                    has_largest = true;
                }
            }
            FILE_SMALLEST_SEQ => m.smallest_seq = p.only_varint64("smallest sequence")?,
            FILE_LARGEST_SEQ => m.largest_seq = p.only_varint64("largest sequence")?,
            FILE_NUM_ENTRIES => m.num_entries = p.only_varint64("entry count")?,
            FILE_NUM_DELETIONS => m.num_deletions = p.only_varint64("deletion count")?,
            FILE_NUM_RANGE_DELETIONS => {
                m.num_range_deletions = p.only_varint64("range deletion count")?;
            }
            FILE_CHECKSUM => {
                m.file_checksum = p.only_fixed32("file checksum")?;
            }
            FILE_REPLICAS => {
                while !p.is_empty() {
                    m.replicas.push(p.varint32()?);
                }
            }
            t if t & SAFE_TO_IGNORE != 0 => {}
            t => return Err(p.unknown_tag(t, at, "file field")),
        }
    }
    if !(has_number && has_smallest && has_largest) {
        return Err(Error::corruption(
            d.file(),
            start,
            "new file lacks its number, smallest or largest key",
        ));
    }
    let mut copies: Vec<u32> = m.copies().collect();
    copies.sort_unstable();
    if copies.windows(2).any(|w| w[0] == w[1]) {
        return Err(Error::corruption(
            d.file(),
            start,
            format!("file {} names a volume twice among its copies", m.number),
        ));
    }
    Ok(m)
}
