//! Rows on persistent memory: copying a built row into extents, the row directory that
//! finds them again, and reopening a row at recovery (docs/formats/matrix-row.md,
//! "Row directory").
//!
//! Owns: the directory format and the order of persistence: every chunk is sealed
//! (persisted) before the directory, and the directory before the manifest records the
//! row, so a recorded row is always whole.
//! Must not touch: the manifest or the row format itself (`level0::matrix`).
//! Concurrency: plain functions; extents are immutable once sealed.

use std::path::Path;
use std::sync::Arc;

use crate::coding::{get_fixed32, get_fixed64};
use crate::error::{Error, Result};
use crate::level0::matrix::{BuiltRow, ReadMeter, RelinkedMeta, RowReader};
use crate::pmem::{Extent, PmemRegion};

const DIR_MAGIC: u32 = 0x4458_4d54; // "TMXD" little-endian
const DIR_VERSION: u32 = 1;
const DIR_FIXED: usize = 4 + 4 + 8 + 8 + 4 + 4 + 4 + 4;

/// A row held on persistent memory: its directory extent and its reader over the chunk
/// extents. Dropping the last clone returns every page to the region.
pub(crate) struct StoredRow {
    pub(crate) dir: Extent,
    location: DirLocation,
    pub(crate) reader: Arc<RowReader<Extent>>,
}

/// Where a stored row's directory is, and its checksum: what the manifest records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DirLocation {
    pub(crate) offset: u64,
    pub(crate) len: u64,
    pub(crate) checksum: u32,
}

impl StoredRow {
    /// The location of the directory.
    pub(crate) fn location(&self) -> DirLocation {
        self.location
    }

    /// Bytes of persistent memory the row occupies.
    pub(crate) fn size(&self) -> u64 {
        let chunks = self
            .reader
            .meta_chunks()
            .iter()
            .chain(self.reader.data_chunks());
        self.dir.len() + chunks.map(Extent::len).sum::<u64>()
    }

    /// Leading data chunks given back (column compaction consumed their entries).
    pub(crate) fn released(&self) -> usize {
        self.reader.released_chunks()
    }

    /// The data chunks wholly below `trim` (a user key) that this row could give back:
    /// every chunk before the one holding the row's first entry at or above `trim`.
    ///
    /// # Errors
    /// Errors reading the row.
    pub(crate) fn releasable(&self, trim: &[u8]) -> Result<usize> {
        let r = &self.reader;
        let start = r.lower_bound(
            &crate::key::seek_key(trim, crate::key::MAX_SEQ),
            r.first_live(),
            r.len(),
        )?;
        if start >= r.len() {
            return Ok(r.header().data_chunks.len());
        }
        r.data_chunk_of(start)
    }

    /// This row with its first `released` data chunks given back; their pages return to
    /// the region when no reader holds the old row any more.
    ///
    /// # Errors
    /// `InvalidArgument` if `released` is below what is released already or past the row.
    pub(crate) fn release(&self, released: usize) -> Result<StoredRow> {
        Ok(StoredRow {
            dir: self.dir.clone(),
            location: self.location,
            reader: Arc::new(self.reader.release_data_chunks(released)?),
        })
    }
}

/// A region's rows report their reads to its rate limit (point lookups, iterators,
/// table merges, column compactions and the open-time check all read through them).
impl ReadMeter for PmemRegion {
    fn read(&self, bytes: u64) {
        self.charge_read(bytes);
    }
}

/// The meter of the rows of `region`: none without a rate limit, so that a read costs
/// one branch.
fn meter(region: &Arc<PmemRegion>) -> Option<Arc<dyn ReadMeter>> {
    (region.rate_limit() > 0).then(|| Arc::clone(region) as Arc<dyn ReadMeter>)
}

fn copy_in(region: &Arc<PmemRegion>, bytes: &[u8]) -> Result<Extent> {
    let mut w = region.alloc(bytes.len().max(1) as u64)?;
    w.write(0, bytes)?;
    w.seal()
}

/// Copies `row` (number `number`) into extents of `region`, persists it, and opens it.
///
/// # Errors
/// `NoSpace` if the region cannot hold it (nothing stays allocated); I/O errors of the
/// persist; `Corruption` if the copy does not read back as the row.
pub(crate) fn store_row(
    region: &Arc<PmemRegion>,
    number: u64,
    row: &BuiltRow,
) -> Result<StoredRow> {
    let meta = row
        .meta_chunks
        .iter()
        .map(|c| copy_in(region, c))
        .collect::<Result<Vec<_>>>()?;
    let data = row
        .data_chunks
        .iter()
        .map(|c| copy_in(region, c))
        .collect::<Result<Vec<_>>>()?;
    finish_row(region, number, &row.header, meta, data)
}

/// Stores row `number` over the data extents `data` of an existing row, with the new
/// header and metadata chunks of `relinked` (a table merge rebuilt its `next` pointers).
/// The old row must leave the manifest in the edit that records this one, so that no
/// two live rows name the same extent.
///
/// # Errors
/// As [`store_row`].
pub(crate) fn store_relinked(
    region: &Arc<PmemRegion>,
    number: u64,
    relinked: &RelinkedMeta,
    data: Vec<Extent>,
) -> Result<StoredRow> {
    let meta = relinked
        .meta_chunks
        .iter()
        .map(|c| copy_in(region, c))
        .collect::<Result<Vec<_>>>()?;
    finish_row(region, number, &relinked.header, meta, data)
}

/// Writes the directory of row `number` over sealed chunk extents and opens the row.
fn finish_row(
    region: &Arc<PmemRegion>,
    number: u64,
    header: &[u8],
    meta: Vec<Extent>,
    data: Vec<Extent>,
) -> Result<StoredRow> {
    let dir_bytes = encode_dir(
        number,
        region.creation_id(),
        header,
        &spans(&meta),
        &spans(&data),
    );
    let dir = copy_in(region, &dir_bytes)?;
    let location = DirLocation {
        offset: dir.offset(),
        len: dir_bytes.len() as u64,
        checksum: crc32c::crc32c(&dir_bytes),
    };
    let reader = RowReader::open_metered(header, meta, data, 0, meter(region))?;
    Ok(StoredRow {
        dir,
        location,
        reader: Arc::new(reader),
    })
}

/// Each extent's `(offset, length)` in the region.
fn spans(extents: &[Extent]) -> Vec<(u64, u64)> {
    extents.iter().map(|e| (e.offset(), e.len())).collect()
}

/// The directory of row `number`: its header, then the `(offset, length)` of each
/// metadata and data chunk extent.
pub(crate) fn encode_dir(
    number: u64,
    creation_id: u64,
    header: &[u8],
    meta: &[(u64, u64)],
    data: &[(u64, u64)],
) -> Vec<u8> {
    let mut b = Vec::with_capacity(DIR_FIXED + header.len() + 16 * (meta.len() + data.len()) + 4);
    b.extend_from_slice(&DIR_MAGIC.to_le_bytes());
    b.extend_from_slice(&DIR_VERSION.to_le_bytes());
    b.extend_from_slice(&number.to_le_bytes());
    b.extend_from_slice(&creation_id.to_le_bytes());
    b.extend_from_slice(&(header.len() as u32).to_le_bytes());
    b.extend_from_slice(&(meta.len() as u32).to_le_bytes());
    b.extend_from_slice(&(data.len() as u32).to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(header);
    for &(offset, len) in meta.iter().chain(data) {
        b.extend_from_slice(&offset.to_le_bytes());
        b.extend_from_slice(&len.to_le_bytes());
    }
    let crc = crc32c::crc32c(&b);
    b.extend_from_slice(&crc.to_le_bytes());
    b
}

/// A decoded directory.
pub(crate) struct Directory<'a> {
    /// The row header's bytes.
    pub(crate) header: &'a [u8],
    /// `(offset, length)` of each metadata chunk extent.
    pub(crate) meta: Vec<(u64, u64)>,
    /// `(offset, length)` of each data chunk extent.
    pub(crate) data: Vec<(u64, u64)>,
}

/// Decodes and checks the directory of row `number` in the region `creation_id`.
///
/// # Errors
/// `Corruption` naming `name` and the byte; `Unsupported` for another version.
pub(crate) fn decode_dir<'a>(
    bytes: &'a [u8],
    number: u64,
    creation_id: u64,
    name: &Path,
) -> Result<Directory<'a>> {
    let bad = |at: usize, why: &str| Error::corruption(name, at as u64, why.to_string());
    let fixed = bytes
        .get(..DIR_FIXED)
        .ok_or_else(|| bad(0, "row directory too short"))?;
    let u32_at = |at: usize| get_fixed32(fixed, at).unwrap_or(0);
    let u64_at = |at: usize| get_fixed64(fixed, at).unwrap_or(0);
    if u32_at(0) != DIR_MAGIC {
        return Err(bad(0, "not a row directory (bad magic)"));
    }
    if u32_at(4) != DIR_VERSION {
        return Err(Error::Unsupported(format!(
            "{}: row directory version {}",
            name.display(),
            u32_at(4)
        )));
    }
    if u64_at(8) != number {
        return Err(bad(8, "row directory names another row"));
    }
    if u64_at(16) != creation_id {
        return Err(bad(16, "row directory belongs to another region file"));
    }
    let header_len = u32_at(24) as usize;
    let (n_meta, n_data) = (u32_at(28) as usize, u32_at(32) as usize);
    let list_len = n_meta
        .checked_add(n_data)
        .and_then(|n| n.checked_mul(16))
        .ok_or_else(|| bad(28, "chunk counts overflow"))?;
    let body_end = DIR_FIXED
        .checked_add(header_len)
        .and_then(|n| n.checked_add(list_len))
        .ok_or_else(|| bad(24, "lengths overflow"))?;
    let crc_bytes = bytes
        .get(body_end..body_end + 4)
        .ok_or_else(|| bad(body_end, "row directory runs past its extent"))?;
    let stored = get_fixed32(crc_bytes, 0).unwrap_or(0);
    if crc32c::crc32c(bytes.get(..body_end).unwrap_or_default()) != stored {
        return Err(bad(body_end, "row directory checksum mismatch"));
    }
    let header = bytes
        .get(DIR_FIXED..DIR_FIXED + header_len)
        .unwrap_or_default();
    let list = bytes
        .get(DIR_FIXED + header_len..body_end)
        .unwrap_or_default();
    let pairs: Vec<(u64, u64)> = list
        .chunks_exact(16)
        .map(|p| {
            let off = get_fixed64(p, 0).unwrap_or(0);
            let len = get_fixed64(p, 8).unwrap_or(0);
            (off, len)
        })
        .collect();
    let (meta, data) = pairs.split_at(n_meta.min(pairs.len()));
    Ok(Directory {
        header,
        meta: meta.to_vec(),
        data: data.to_vec(),
    })
}

/// Reopens row `number` after a restart: claims its directory and chunks in `region` and
/// checks them all. The first `released` data chunks were given back by column compaction:
/// they are neither claimed nor read.
///
/// # Errors
/// `Corruption` if the directory or a chunk does not check, the extents overlap ones
/// already claimed, or `released` exceeds the row's data chunks; `Unsupported` for another
/// directory version.
pub(crate) fn load_row(
    region: &Arc<PmemRegion>,
    number: u64,
    loc: DirLocation,
    released: usize,
) -> Result<StoredRow> {
    let name = region.path().join(format!("row-{number}"));
    let claim = |off: u64, len: u64| {
        region.claim(off, len).map_err(|e| {
            Error::corruption(
                name.clone(),
                off,
                format!("row extent cannot be claimed: {e}"),
            )
        })
    };
    let page = u64::from(region.page_size());
    let pages =
        loc.len.div_ceil(page).checked_mul(page).ok_or_else(|| {
            Error::corruption(name.clone(), loc.offset, "row directory too large")
        })?;
    let dir = claim(loc.offset, pages)?;
    let dir_bytes = dir.bytes().get(..loc.len as usize).unwrap_or_default();
    region.charge_read(dir_bytes.len() as u64);
    if dir_bytes.len() as u64 != loc.len || crc32c::crc32c(dir_bytes) != loc.checksum {
        return Err(Error::corruption(
            name,
            loc.offset,
            "row directory differs from the manifest's checksum",
        ));
    }
    let d = decode_dir(dir_bytes, number, region.creation_id(), &name)?;
    let meta = d
        .meta
        .iter()
        .map(|&(o, l)| claim(o, l))
        .collect::<Result<Vec<_>>>()?;
    if released > d.data.len() {
        return Err(Error::corruption(
            name,
            loc.offset,
            "the manifest releases more data chunks than the row has",
        ));
    }
    let data = d
        .data
        .iter()
        .skip(released)
        .map(|&(o, l)| claim(o, l))
        .collect::<Result<Vec<_>>>()?;
    let reader = RowReader::open_metered(d.header, meta, data, released, meter(region))?;
    Ok(StoredRow {
        dir,
        location: loc,
        reader: Arc::new(reader),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pmem::{PmemMode, PmemOptions};

    fn region(dir: &tempfile::TempDir) -> Arc<PmemRegion> {
        let opts = PmemOptions {
            capacity: 64 * 4096,
            page_size: 4096,
            mode: PmemMode::Shadow,
            rate_limit: 0,
        };
        PmemRegion::open(&dir.path().join("dir.pmem"), opts).unwrap()
    }

    fn extent(r: &Arc<PmemRegion>, bytes: u64) -> Extent {
        r.alloc(bytes).unwrap().seal().unwrap()
    }

    /// A directory reads back as written: the header, then the metadata and data chunk
    /// extents in order.
    #[test]
    fn a_directory_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let r = region(&dir);
        let meta = vec![extent(&r, 100)];
        let data = vec![extent(&r, 5000), extent(&r, 1)];
        let header = b"row header bytes".to_vec();
        let bytes = encode_dir(7, r.creation_id(), &header, &spans(&meta), &spans(&data));
        let d = decode_dir(&bytes, 7, r.creation_id(), Path::new("row-7")).unwrap();
        assert_eq!(d.header, &header[..]);
        assert_eq!(d.meta, spans(&meta));
        assert_eq!(d.data, spans(&data));
        // Another row's number or another region's directory is refused.
        assert!(decode_dir(&bytes, 8, r.creation_id(), Path::new("row-7")).is_err());
        assert!(decode_dir(&bytes, 7, r.creation_id() ^ 1, Path::new("row-7")).is_err());
    }

    /// Every flipped byte and every truncation of a directory is an error naming the row,
    /// never a panic or a directory that reads differently.
    #[test]
    fn every_damaged_or_short_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let r = region(&dir);
        let (meta, data) = (vec![extent(&r, 10)], vec![extent(&r, 20)]);
        let bytes = encode_dir(3, r.creation_id(), b"hdr", &spans(&meta), &spans(&data));
        let name = Path::new("row-3");
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            match decode_dir(&bad, 3, r.creation_id(), name) {
                Err(Error::Corruption { .. } | Error::Unsupported(_)) => {}
                other => panic!("byte {i}: {:?}", other.map(|d| d.header.len())),
            }
        }
        for n in 0..bytes.len() {
            assert!(
                decode_dir(&bytes[..n], 3, r.creation_id(), name).is_err(),
                "{n} bytes"
            );
        }
        // Huge counts in a directory whose checksum was recomputed are still refused.
        let mut huge = bytes.clone();
        huge[28..32].copy_from_slice(&u32::MAX.to_le_bytes());
        let end = huge.len() - 4;
        let crc = crc32c::crc32c(&huge[..end]);
        huge[end..].copy_from_slice(&crc.to_le_bytes());
        assert!(decode_dir(&huge, 3, r.creation_id(), name).is_err());
    }
}
