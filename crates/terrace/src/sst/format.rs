//! The fixed parts of a table file: varints, block handles, the block trailer and the footer.
//!
//! Owns: the byte layout shared by the builder and the reader (docs/formats/sst.md).
//! Must not touch: blocks' contents; block_builder and block_iter own those.

/// The 64-bit magic number that ends every table file (ASCII "TerraSST").
pub(crate) const MAGIC: u64 = u64::from_le_bytes(*b"TerraSST");

/// The format version written by this build; readers accept exactly the versions they know.
pub(crate) const FORMAT_VERSION: u32 = 1;

/// Bytes after every block: one compression-type byte and a CRC32C.
pub(crate) const BLOCK_TRAILER_LEN: usize = 5;

/// Size of the footer at the end of the file.
pub(crate) const FOOTER_LEN: usize = 48;

/// Metaindex name of the bloom filter block.
pub(crate) const META_FILTER: &[u8] = b"terrace.filter.bloom";
/// Metaindex name of the properties block.
pub(crate) const META_PROPERTIES: &[u8] = b"terrace.properties";
/// Metaindex name of the range-deletion block.
pub(crate) const META_RANGE_DEL: &[u8] = b"terrace.range_del";

/// Appends `v` as a LEB128 varint.
pub(crate) fn put_varint64(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// Appends `v` as a LEB128 varint.
pub(crate) fn put_varint32(buf: &mut Vec<u8>, v: u32) {
    put_varint64(buf, u64::from(v));
}

/// Decodes a varint of at most 64 bits at `*pos`, advancing `*pos`; `None` if truncated or too long.
#[inline]
pub(crate) fn get_varint64(data: &[u8], pos: &mut usize) -> Option<u64> {
    let mut result = 0u64;
    let mut shift = 0u32;
    while shift <= 63 {
        let b = *data.get(*pos)?;
        *pos += 1;
        if shift == 63 && b > 1 {
            return None;
        }
        result |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(result);
        }
        shift += 7;
    }
    None
}

/// Decodes a varint of at most 32 bits at `*pos`, advancing `*pos`.
#[inline]
pub(crate) fn get_varint32(data: &[u8], pos: &mut usize) -> Option<u32> {
    // Fast path: one byte.
    if let Some(&b) = data.get(*pos) {
        if b < 0x80 {
            *pos += 1;
            return Some(u32::from(b));
        }
    }
    get_varint64(data, pos).and_then(|v| u32::try_from(v).ok())
}

/// Reads a little-endian u32 at `pos`.
#[inline]
pub(crate) fn get_u32_le(data: &[u8], pos: usize) -> Option<u32> {
    let b = data.get(pos..pos.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Reads a little-endian u64 at `pos`.
#[inline]
pub(crate) fn get_u64_le(data: &[u8], pos: usize) -> Option<u64> {
    let b = data.get(pos..pos.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    Some(u64::from_le_bytes(a))
}

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
        let mut pos = 0;
        let offset = get_varint64(data, &mut pos)?;
        let size = get_varint64(data, &mut pos)?;
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
        b.extend_from_slice(&self.metaindex.offset.to_le_bytes());
        b.extend_from_slice(&self.metaindex.size.to_le_bytes());
        b.extend_from_slice(&self.index.offset.to_le_bytes());
        b.extend_from_slice(&self.index.size.to_le_bytes());
        b.extend_from_slice(&self.format_version.to_le_bytes());
        let crc = crc32c::crc32c(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        b.extend_from_slice(&MAGIC.to_le_bytes());
        let mut out = [0u8; FOOTER_LEN];
        out.copy_from_slice(&b);
        out
    }

    /// Decodes and checks a footer: magic, checksum, version, in that order.
    pub fn decode(b: &[u8]) -> Result<Footer, &'static str> {
        if b.len() != FOOTER_LEN {
            return Err("footer has the wrong length");
        }
        let field = |i: usize| get_u64_le(b, i * 8).ok_or("footer field out of range");
        if get_u64_le(b, 40) != Some(MAGIC) {
            return Err("bad magic number: not a table file or truncated");
        }
        let stored_crc = get_u32_le(b, 36).ok_or("footer checksum out of range")?;
        if crc32c::crc32c(b.get(..36).ok_or("footer too short")?) != stored_crc {
            return Err("footer checksum mismatch");
        }
        let format_version = get_u32_le(b, 32).ok_or("footer version out of range")?;
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
