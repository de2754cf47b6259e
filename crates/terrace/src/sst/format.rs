//! The fixed parts of a table file: block handles, the block trailer and the footer.
//!
//! Owns: the byte layout shared by the builder and the reader (docs/formats/sst.md);
//! integers are coded by `crate::coding`.
//! Must not touch: blocks' contents; block_builder and block_iter own those.

use crate::coding::{
    get_fixed32, get_fixed64, get_varint64, put_fixed32, put_fixed64, put_varint64,
};

/// The 64-bit magic number that ends every table file (ASCII "TerraSST").
pub(crate) const MAGIC: u64 = u64::from_le_bytes(*b"TerraSST");

/// The format version written by this build; readers accept exactly the versions they know.
pub(crate) const FORMAT_VERSION: u32 = 1;

/// Bytes after every block: one compression-type byte and a CRC32C.
pub(crate) const BLOCK_TRAILER_LEN: usize = 5;

/// Size of the footer at the end of the file.
pub(crate) const FOOTER_LEN: usize = 48;

/// Metaindex name of the (blocked) bloom filter block, the one the builder writes.
pub(crate) const META_FILTER: &[u8] = b"terrace.filter.blocked";
/// Metaindex name of the whole-bit-array bloom filter of tables written before.
pub(crate) const META_FILTER_WHOLE: &[u8] = b"terrace.filter.bloom";
/// Metaindex name of the properties block.
pub(crate) const META_PROPERTIES: &[u8] = b"terrace.properties";
/// Metaindex name of the range-deletion block.
pub(crate) const META_RANGE_DEL: &[u8] = b"terrace.range_del";

/// Where a block lives: its offset in the file and the size of its stored contents
/// (the trailer that follows is not counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct BlockHandle {
    pub offset: u64,
    pub size: u64,
}

impl BlockHandle {
    /// Appends `varint64(offset) varint64(size)`.
    pub fn encode_to(&self, buf: &mut Vec<u8>) {
        put_varint64(buf, self.offset);
        put_varint64(buf, self.size);
    }

    /// Decodes a handle that must fill `data` exactly.
    pub fn decode(data: &[u8]) -> Option<BlockHandle> {
        let (offset, pos) = get_varint64(data, 0).ok()?;
        let (size, pos) = get_varint64(data, pos).ok()?;
        (pos == data.len()).then_some(BlockHandle { offset, size })
    }

    /// The offset just past the block's trailer, `None` on overflow.
    pub fn end(&self) -> Option<u64> {
        self.offset
            .checked_add(self.size)?
            .checked_add(BLOCK_TRAILER_LEN as u64)
    }
}

/// The fixed-size record at the end of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Footer {
    pub metaindex: BlockHandle,
    pub index: BlockHandle,
    pub format_version: u32,
}

impl Footer {
    /// The 48 footer bytes.
    pub fn encode(&self) -> [u8; FOOTER_LEN] {
        let mut b = Vec::with_capacity(FOOTER_LEN);
        put_fixed64(&mut b, self.metaindex.offset);
        put_fixed64(&mut b, self.metaindex.size);
        put_fixed64(&mut b, self.index.offset);
        put_fixed64(&mut b, self.index.size);
        put_fixed32(&mut b, self.format_version);
        let crc = crc32c::crc32c(&b);
        put_fixed32(&mut b, crc);
        put_fixed64(&mut b, MAGIC);
        let mut out = [0u8; FOOTER_LEN];
        out.copy_from_slice(&b);
        out
    }

    /// Decodes and checks a footer: magic, checksum, version, in that order.
    pub fn decode(b: &[u8]) -> Result<Footer, &'static str> {
        if b.len() != FOOTER_LEN {
            return Err("footer has the wrong length");
        }
        let field = |i: usize| get_fixed64(b, i * 8).ok_or("footer field out of range");
        if get_fixed64(b, 40) != Some(MAGIC) {
            return Err("bad magic number: not a table file or truncated");
        }
        let stored_crc = get_fixed32(b, 36).ok_or("footer checksum out of range")?;
        if crc32c::crc32c(b.get(..36).ok_or("footer too short")?) != stored_crc {
            return Err("footer checksum mismatch");
        }
        let format_version = get_fixed32(b, 32).ok_or("footer version out of range")?;
        if format_version != FORMAT_VERSION {
            return Err("unsupported table format version");
        }
        Ok(Footer {
            metaindex: BlockHandle {
                offset: field(0)?,
                size: field(1)?,
            },
            index: BlockHandle {
                offset: field(2)?,
                size: field(3)?,
            },
            format_version,
        })
    }
}
