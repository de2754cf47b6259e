//! The region header: the first page of a region file (docs/formats/pmem.md).
//!
//! Owns: the header's byte layout, its checksum and the checks made on open, and the
//! crash-safe creation of a new region file.
//! Must not touch: the data pages; it never maps the file.
//! Concurrency: used only by `PmemRegion::open`, before the region is shared.

use std::fs::{File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io::{Read, Write};
use std::path::Path;

use crate::coding::{get_fixed32, get_fixed64, put_fixed32, put_fixed64};
use crate::error::{Error, Result};

/// The first eight bytes of every region file.
pub(super) const MAGIC: [u8; 8] = *b"TRCPMEM\0";
/// The header format this code writes and reads.
pub(super) const FORMAT_VERSION: u32 = 1;
/// Bytes of the checked header fields, checksum included; the rest of the page is zero.
pub(crate) const HEADER_BYTES: usize = 36;
/// Smallest page size a region accepts.
pub(super) const MIN_PAGE_SIZE: u32 = 4096;
/// Largest page size a region accepts.
pub(super) const MAX_PAGE_SIZE: u32 = 1 << 30;

/// The decoded header of a region file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    /// Bytes per page; the header occupies page 0.
    pub page_size: u32,
    /// Bytes of the data area (pages 1..), a multiple of `page_size`.
    pub capacity: u64,
    /// A random number drawn when the file was made.
    pub creation_id: u64,
}

impl Header {
    /// Bytes of the whole file: the header page and the data area.
    /// Saturates rather than overflow, so a crafted capacity reads as a truncated file.
    pub fn file_len(&self) -> u64 {
        u64::from(self.page_size).saturating_add(self.capacity)
    }

    /// The checked fields and their checksum ([`HEADER_BYTES`] bytes).
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(HEADER_BYTES);
        b.extend_from_slice(&MAGIC);
        put_fixed32(&mut b, FORMAT_VERSION);
        put_fixed32(&mut b, self.page_size);
        put_fixed64(&mut b, self.capacity);
        put_fixed64(&mut b, self.creation_id);
        let crc = crc32c::crc32c(&b);
        put_fixed32(&mut b, crc);
        b
    }

    /// Decodes and checks the fixed fields of the header of `path`, whose file is
    /// `file_len` bytes long. `fixed` holds the file's first bytes (at least
    /// [`HEADER_BYTES`] unless the file is shorter).
    pub fn decode(path: &Path, fixed: &[u8], file_len: u64) -> Result<Header> {
        let bad = |offset: u64, reason: String| Error::corruption(path, offset, reason);
        let short = || bad(file_len, "file shorter than a region header".into());
        let fixed = fixed.get(..HEADER_BYTES).ok_or_else(short)?;
        if fixed.get(..8) != Some(&MAGIC[..]) {
            return Err(bad(0, "not a persistent-memory region (bad magic)".into()));
        }
        let u32_at = |at: usize| get_fixed32(fixed, at).ok_or_else(short);
        let u64_at = |at: usize| get_fixed64(fixed, at).ok_or_else(short);
        let stored = u32_at(32)?;
        let actual = crc32c::crc32c(fixed.get(..32).ok_or_else(short)?);
        if stored != actual {
            return Err(bad(
                32,
                format!("header checksum mismatch: stored {stored:#010x}, computed {actual:#010x}"),
            ));
        }
        let version = u32_at(8)?;
        if version != FORMAT_VERSION {
            return Err(bad(
                8,
                format!("unsupported region format version {version}"),
            ));
        }
        let header = Header {
            page_size: u32_at(12)?,
            capacity: u64_at(16)?,
            creation_id: u64_at(24)?,
        };
        if check_page_size(header.page_size).is_err() {
            return Err(bad(12, format!("invalid page size {}", header.page_size)));
        }
        if header.capacity == 0 || !header.capacity.is_multiple_of(u64::from(header.page_size)) {
            return Err(bad(16, format!("invalid capacity {}", header.capacity)));
        }
        if file_len < header.file_len() {
            return Err(bad(
                file_len,
                format!("file truncated: {} bytes expected", header.file_len()),
            ));
        }
        Ok(header)
    }

    /// Checks that the rest of the header page (`page`, the whole first page) is zero.
    pub fn check_reserved(&self, path: &Path, page: &[u8]) -> Result<()> {
        let reserved = page
            .get(HEADER_BYTES..self.page_size as usize)
            .ok_or_else(|| {
                Error::corruption(path, page.len() as u64, "header page not read whole")
            })?;
        match reserved.iter().position(|&b| b != 0) {
            None => Ok(()),
            Some(i) => Err(Error::corruption(
                path,
                (HEADER_BYTES + i) as u64,
                "reserved header byte is not zero",
            )),
        }
    }
}

/// Checks a page size: a power of two from [`MIN_PAGE_SIZE`] to [`MAX_PAGE_SIZE`].
pub(super) fn check_page_size(page_size: u32) -> std::result::Result<(), String> {
    if page_size.is_power_of_two() && (MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&page_size) {
        Ok(())
    } else {
        Err(format!(
            "page size {page_size} is not a power of two from {MIN_PAGE_SIZE} to {MAX_PAGE_SIZE}"
        ))
    }
}

/// Reads the header page of an open region file and checks it.
pub(super) fn read(path: &Path, file: &mut File) -> Result<Header> {
    let io = |e| Error::io(path, e);
    let file_len = file.metadata().map_err(io)?.len();
    let mut page = Vec::with_capacity(HEADER_BYTES);
    Read::by_ref(file)
        .take(HEADER_BYTES as u64)
        .read_to_end(&mut page)
        .map_err(io)?;
    let header = Header::decode(path, &page, file_len)?;
    // `decode` checked that the file holds the whole header page.
    Read::by_ref(file)
        .take(u64::from(header.page_size) - HEADER_BYTES as u64)
        .read_to_end(&mut page)
        .map_err(io)?;
    header.check_reserved(path, &page)?;
    Ok(header)
}

/// Creates a region file at `path` atomically: the file is written and synced under a
/// temporary name and renamed into place, so a crash leaves either no file or a whole one.
pub(super) fn create(path: &Path, page_size: u32, capacity: u64) -> Result<()> {
    let header = Header {
        page_size,
        capacity,
        creation_id: creation_id(),
    };
    write_new(path, header, |_| Ok(()))
}

/// Creates a region file at `path` with `header` atomically, as [`create`] does, letting
/// `fill` write data pages into it before it is synced and renamed into place. Refuses to
/// replace an existing file.
pub(super) fn write_new(
    path: &Path,
    header: Header,
    fill: impl FnOnce(&File) -> std::io::Result<()>,
) -> Result<()> {
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(format!(".creating-{}", std::process::id()));
    let tmp = Path::new(&tmp_name);
    let written = write_file(tmp, header, fill).and_then(|()| {
        if path.try_exists().map_err(|e| Error::io(path, e))? {
            return Err(Error::InvalidArgument(format!(
                "pmem region {} already exists",
                path.display()
            )));
        }
        Ok(())
    });
    if let Err(e) = written {
        // Best effort: the error that stopped the creation matters more than this one.
        let _ = std::fs::remove_file(tmp);
        return Err(e);
    }
    std::fs::rename(tmp, path).map_err(|e| Error::io(path, e))?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| Error::io(dir, e))?;
    }
    Ok(())
}

/// Writes and syncs a whole region file at `path` (no rename).
fn write_file(
    path: &Path,
    header: Header,
    fill: impl FnOnce(&File) -> std::io::Result<()>,
) -> Result<()> {
    let io = |e| Error::io(path, e);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(io)?;
    let mut page = vec![0u8; header.page_size as usize];
    let fixed = header.encode();
    page[..fixed.len()].copy_from_slice(&fixed);
    file.write_all(&page).map_err(io)?;
    file.set_len(header.file_len()).map_err(io)?;
    super::map::reserve(&file, header.file_len()).map_err(io)?;
    fill(&file).map_err(io)?;
    file.sync_all().map_err(io)
}

/// A fresh 64-bit identity for a new file: the standard library's randomly keyed hasher
/// (seeded from the operating system) over the clock and the process id.
fn creation_id() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    h.write_u128(nanos);
    h.write_u32(std::process::id());
    h.finish()
}
