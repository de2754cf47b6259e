//! Per-block compression and the 5-byte block trailer (type byte + CRC32C).
//!
//! Owns: the compression type codes and the stored form of a compressed block
//! (`varint32(uncompressed length) ++ compressed bytes`), see docs/formats/sst.md.
//! Must not touch: files; callers read and write the bytes.

use bytes::Bytes;

use super::format::BLOCK_TRAILER_LEN;
use crate::coding::{get_fixed32, get_varint32, put_varint32};

/// Per-block compression of table files.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
pub enum Compression {
    /// Blocks are stored as built.
    #[default]
    None,
    /// LZ4 block format.
    Lz4,
    /// Zstandard at the given level.
    Zstd(i32),
}

/// Type byte of a block stored as built.
pub(crate) const TYPE_NONE: u8 = 0;
/// Type byte of an LZ4 (block format) block.
pub(crate) const TYPE_LZ4: u8 = 1;
/// Type byte of a Zstandard block.
pub(crate) const TYPE_ZSTD: u8 = 2;

/// Largest decompressed block a reader accepts (a corrupt length must not allocate more).
const MAX_BLOCK_LEN: usize = 1 << 30;

/// A short name of the compression, stored in the properties block.
pub(crate) fn compression_name(c: Compression) -> String {
    match c {
        Compression::None => "none".to_string(),
        Compression::Lz4 => "lz4".to_string(),
        Compression::Zstd(level) => format!("zstd({level})"),
    }
}

/// Compresses `raw` into `out` if that saves at least 1/8 of its size; returns the type
/// byte, with `out` holding the stored contents (left empty for `TYPE_NONE`).
pub(crate) fn compress_block(raw: &[u8], c: Compression, out: &mut Vec<u8>) -> u8 {
    out.clear();
    let Ok(len) = u32::try_from(raw.len()) else {
        return TYPE_NONE;
    };
    let kind = match c {
        Compression::None => return TYPE_NONE,
        Compression::Lz4 => {
            put_varint32(out, len);
            // Straight into `out`: no buffer of its own to allocate and copy from.
            let start = out.len();
            out.resize(
                start + lz4_flex::block::get_maximum_output_size(raw.len()),
                0,
            );
            match out
                .get_mut(start..)
                .map(|dst| lz4_flex::block::compress_into(raw, dst))
            {
                Some(Ok(n)) => out.truncate(start + n),
                _ => {
                    out.clear();
                    return TYPE_NONE;
                }
            }
            TYPE_LZ4
        }
        Compression::Zstd(level) => match zstd::bulk::compress(raw, level) {
            Ok(z) => {
                put_varint32(out, len);
                out.extend_from_slice(&z);
                TYPE_ZSTD
            }
            Err(_) => return TYPE_NONE,
        },
    };
    if out.len() > raw.len() - raw.len() / 8 {
        out.clear();
        return TYPE_NONE;
    }
    kind
}

/// The trailer of a block with stored `contents` and type byte `kind`.
pub(crate) fn block_trailer(contents: &[u8], kind: u8) -> [u8; BLOCK_TRAILER_LEN] {
    let crc = crc32c::crc32c_append(crc32c::crc32c(contents), &[kind]);
    let c = crc.to_le_bytes();
    [kind, c[0], c[1], c[2], c[3]]
}

/// Checks and decompresses a block read with its trailer (`contents ++ type ++ crc`).
/// Uncompressed blocks are returned without copying.
pub(crate) fn decode_block(mut buf: Vec<u8>) -> Result<Bytes, &'static str> {
    let n = buf
        .len()
        .checked_sub(BLOCK_TRAILER_LEN)
        .ok_or("block shorter than its trailer")?;
    let kind = *buf.get(n).ok_or("block trailer missing")?;
    let stored = get_fixed32(&buf, n + 1).ok_or("block trailer missing")?;
    let contents = buf.get(..n).ok_or("block contents missing")?;
    let actual = crc32c::crc32c_append(crc32c::crc32c(contents), &[kind]);
    if actual != stored {
        return Err("block checksum mismatch");
    }
    match kind {
        TYPE_NONE => {
            buf.truncate(n);
            Ok(Bytes::from(buf))
        }
        TYPE_LZ4 | TYPE_ZSTD => {
            let (len, pos) = get_varint32(contents, 0).map_err(|_| "bad uncompressed length")?;
            let len = len as usize;
            let payload = contents.get(pos..).ok_or("bad compressed block")?;
            if len > MAX_BLOCK_LEN {
                return Err("uncompressed block length too large");
            }
            let out = if kind == TYPE_LZ4 {
                // LZ4 cannot expand a byte into more than 255.
                if len > payload.len().saturating_mul(255).saturating_add(16) {
                    return Err("uncompressed block length impossible for lz4");
                }
                let mut out = vec![0u8; len];
                let got = lz4_flex::block::decompress_into(payload, &mut out)
                    .map_err(|_| "bad lz4 block")?;
                if got != len {
                    return Err("lz4 block has the wrong length");
                }
                out
            } else {
                let out = zstd::bulk::decompress(payload, len).map_err(|_| "bad zstd block")?;
                if out.len() != len {
                    return Err("zstd block has the wrong length");
                }
                out
            };
            Ok(Bytes::from(out))
        }
        _ => Err("unknown block compression type"),
    }
}
