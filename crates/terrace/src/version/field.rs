//! Tagged fields: the `varint32 tag | varint32 length | payload` encoding shared by
//! version edits and the file metadata inside them (docs/formats/manifest.md).
//!
//! Owns: the field framing and a bounds-checked decoder that reports file offsets
//! (integers are coded by `crate::coding`).
//! Must not touch: what the tags mean; `edit` decides that.
//! Concurrency: plain values; a `Decoder` has one owner.

use std::path::Path;

use crate::coding::{
    get_fixed32, get_varint32, get_varint64, put_varint32, put_varint64, VarintError,
};
use crate::error::{Error, Result};

/// Tags with this bit set may be skipped by a reader that does not know them.
pub const SAFE_TO_IGNORE: u32 = 0x1000;

/// Appends one field. The length is written with the varint64 routine, whose bytes equal
/// varint32's below 2^32; a payload that long could not be decoded and cannot occur
/// (payloads are a few integers and two keys).
pub(crate) fn put_field(buf: &mut Vec<u8>, tag: u32, payload: &[u8]) {
    put_varint32(buf, tag);
    put_varint64(buf, payload.len() as u64);
    buf.extend_from_slice(payload);
}

/// Appends a field holding one varint.
pub(crate) fn put_varint_field(buf: &mut Vec<u8>, tag: u32, v: u64) {
    let mut payload = Vec::with_capacity(10);
    put_varint64(&mut payload, v);
    put_field(buf, tag, &payload);
}

/// Reads stored bytes front to back; every error names the file and absolute offset.
pub(crate) struct Decoder<'a> {
    data: &'a [u8],
    pos: usize,
    file: &'a Path,
    base: u64,
}

impl<'a> Decoder<'a> {
    /// Decodes `data`, which starts at byte `base` of `file`.
    pub(crate) fn new(data: &'a [u8], file: &'a Path, base: u64) -> Self {
        Decoder {
            data,
            pos: 0,
            file,
            base,
        }
    }

    /// True when every byte was consumed.
    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.data.len()
    }

    /// Absolute file offset of the next byte.
    pub(crate) fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// The file being decoded.
    pub(crate) fn file(&self) -> &'a Path {
        self.file
    }

    /// A corruption error at the current position.
    pub(crate) fn corruption(&self, reason: impl Into<String>) -> Error {
        Error::corruption(self.file, self.offset(), reason)
    }

    /// Reads a varint of at most 64 bits.
    pub(crate) fn varint64(&mut self) -> Result<u64> {
        let r = get_varint64(self.data, self.pos);
        self.take_varint(r, "varint overflows 64 bits")
    }

    /// Reads a varint that must fit in 32 bits.
    pub(crate) fn varint32(&mut self) -> Result<u32> {
        let r = get_varint32(self.data, self.pos);
        self.take_varint(r, "varint overflows 32 bits")
    }

    /// Advances past a decoded varint, or names the varint's first byte in the error.
    fn take_varint<T>(
        &mut self,
        r: std::result::Result<(T, usize), VarintError>,
        overflow: &'static str,
    ) -> Result<T> {
        match r {
            Ok((v, end)) => {
                self.pos = end;
                Ok(v)
            }
            Err(VarintError::Truncated) => Err(self.corruption("truncated varint")),
            Err(VarintError::Overflow) => Err(self.corruption(overflow)),
        }
    }

    /// Reads `n` raw bytes.
    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n);
        match end.and_then(|e| self.data.get(self.pos..e)) {
            Some(s) => {
                self.pos += n;
                Ok(s)
            }
            None => Err(self.corruption(format!("{n}-byte value runs past the end"))),
        }
    }

    /// Reads every remaining byte.
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        let s = self.data.get(self.pos..).unwrap_or_default();
        self.pos = self.data.len();
        s
    }

    /// Reads one field: its tag and a decoder over its payload.
    pub(crate) fn field(&mut self) -> Result<(u32, Decoder<'a>)> {
        let tag = self.varint32()?;
        let len = self.varint32()?;
        let payload_offset = self.offset();
        let len = usize::try_from(len).map_err(|_| self.corruption("field too long"))?;
        let payload = self.bytes(len).map_err(|_| {
            self.corruption(format!("field {tag} of {len} bytes runs past the end"))
        })?;
        Ok((tag, Decoder::new(payload, self.file, payload_offset)))
    }

    /// Fails unless every byte was consumed (a field must hold exactly its value).
    pub(crate) fn finish(&self, what: &str) -> Result<()> {
        if self.is_empty() {
            Ok(())
        } else {
            Err(self.corruption(format!("trailing bytes after {what}")))
        }
    }

    /// Reads a field payload that is exactly one varint.
    pub(crate) fn only_varint64(mut self, what: &str) -> Result<u64> {
        let v = self.varint64()?;
        self.finish(what)?;
        Ok(v)
    }

    /// Reads a field payload that is exactly one fixed32.
    pub(crate) fn only_fixed32(self, what: &str) -> Result<u32> {
        let rest = self.data.get(self.pos..).unwrap_or_default();
        match get_fixed32(rest, 0) {
            Some(v) if rest.len() == 4 => Ok(v),
            _ => Err(self.corruption(format!("{what} is not 4 bytes"))),
        }
    }

    /// The error for a tag this release does not know and may not skip.
    pub(crate) fn unknown_tag(&self, tag: u32, at: u64, what: &str) -> Error {
        Error::Unsupported(format!(
            "{}: byte {at}: unknown {what} tag {tag} without the safe-to-ignore bit \
             (written by a newer release?)",
            self.file.display()
        ))
    }
}
