//! Extents: runs of whole pages of a region, written once through an [`ExtentWriter`],
//! then sealed into a read-only, shareable [`Extent`].
//!
//! Owns: the ownership of page runs (a private `Pages` value exists once per run handed
//! out, and releases the run when dropped) and the only slices of mapped memory.
//! Must not touch: the free-page set except through `PmemRegion::release`.
//! Concurrency: an `ExtentWriter` has one owner; its bytes are written only through
//! `&mut self`. An `Extent` is `Clone + Send + Sync` and never written, so its `&[u8]` may be
//! read by any number of threads. Soundness rests on one rule: a `&mut Pages` is the only
//! way to write or persist a run, and an `Extent` never gives one out.

use std::ops::Range;
use std::sync::Arc;

use super::PmemRegion;
use crate::error::{Error, Result};
use crate::storage::Verdict;

/// One run of pages handed out by the free set; returned to it on drop.
struct Pages {
    region: Arc<PmemRegion>,
    offset: u64,
    len: u64,
}

impl Pages {
    /// The run as a mapping offset and length. Both fit `usize`: the region checked at open
    /// that the whole file does, and runs lie inside it.
    fn span(&self) -> (usize, usize) {
        (self.offset as usize, self.len as usize)
    }

    #[allow(unsafe_code)]
    fn bytes(&self) -> &[u8] {
        let (off, len) = self.span();
        // SAFETY: nobody writes these bytes while the slice lives: writing needs
        // `&mut Pages` (`bytes_mut`, `persist`), which the borrow of `self` excludes, and
        // no other `Pages` covers them (the free set hands a page out once until released,
        // which happens only when this `Pages` drops). The slice cannot outlive the mapping:
        // it borrows `self`, which holds the region. The range is inside the mapping (an
        // out-of-range one would give an empty slice).
        unsafe { self.region.data_map().slice(off, len) }.unwrap_or_default()
    }

    #[allow(unsafe_code)]
    fn bytes_mut(&mut self) -> &mut [u8] {
        let (off, len) = self.span();
        // SAFETY: `&mut self` is the only access to this run (see `bytes`), and the slice
        // borrows it mutably, so no other reference to these bytes exists while it lives.
        unsafe { self.region.data_map().slice_mut(off, len) }.unwrap_or_default()
    }

    /// Makes `range` (relative to the run) durable in the file, unless the region skips
    /// persists (fault injection).
    #[allow(unsafe_code)]
    fn persist(&mut self, range: Range<usize>) -> Result<()> {
        let (off, len) = self.span();
        if range.start > range.end || range.end > len {
            return Err(Error::InvalidArgument(format!(
                "persist {range:?} outside an extent of {len} bytes"
            )));
        }
        let region = &self.region;
        region.count_persist((range.end - range.start) as u64);
        let io = |e| Error::io(&region.path, e);
        match region.persist_verdict() {
            Verdict::Durable => {}
            Verdict::Lie => return Ok(()),
            Verdict::Fail => return Err(io(std::io::Error::from_raw_os_error(libc::EIO))),
        }
        let (at, n) = (off + range.start, range.end - range.start);
        region.charge_persist(n as u64);
        if let Some(shadow) = &region.shadow {
            // SAFETY: `&mut self` excludes every slice of this run, so nobody writes the
            // shadow bytes during the copy; the file-mapping bytes of this run are touched
            // only here, under the same `&mut self`. The two mappings are distinct.
            unsafe { shadow.copy_to(&region.file_map, at, n) }.map_err(io)?;
        }
        region.make_durable(at, n).map_err(io)
    }
}

impl Drop for Pages {
    fn drop(&mut self) {
        self.region.release(self.offset, self.len);
    }
}

/// A newly allocated extent being written. Uniquely owned (not `Clone`); `Send + Sync`.
/// Dropping it unsealed returns its pages to the region.
pub struct ExtentWriter {
    pages: Pages,
    /// Whether `as_mut_slice` has already been counted in `bytes_written`.
    lent: bool,
}

impl std::fmt::Debug for ExtentWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExtentWriter")
            .field("offset", &self.pages.offset)
            .field("len", &self.pages.len)
            .finish()
    }
}

impl ExtentWriter {
    pub(super) fn new(region: Arc<PmemRegion>, offset: u64, len: u64) -> ExtentWriter {
        ExtentWriter {
            pages: Pages {
                region,
                offset,
                len,
            },
            lent: false,
        }
    }

    /// Byte offset of the extent in the region file: what a caller records.
    pub fn offset(&self) -> u64 {
        self.pages.offset
    }

    /// Bytes of the extent: whole pages, at least the size asked for.
    pub fn len(&self) -> u64 {
        self.pages.len
    }

    /// Always false: an extent has at least one page.
    pub fn is_empty(&self) -> bool {
        self.pages.len == 0
    }

    /// The region the extent belongs to.
    pub fn region(&self) -> &Arc<PmemRegion> {
        &self.pages.region
    }

    /// The extent's current bytes (what has been written, unspecified elsewhere).
    pub fn bytes(&self) -> &[u8] {
        self.pages.bytes()
    }

    /// The extent's bytes for writing in place. Counts the whole extent in
    /// `PmemStats::bytes_written` the first time.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        if !self.lent {
            self.lent = true;
            self.pages.region.count_written(self.pages.len);
        }
        self.pages.bytes_mut()
    }

    /// Copies `data` into the extent at byte `at`.
    ///
    /// # Errors
    /// `InvalidArgument` when `at..at + data.len()` leaves the extent.
    pub fn write(&mut self, at: usize, data: &[u8]) -> Result<()> {
        let len = self.pages.len;
        let dst = at
            .checked_add(data.len())
            .and_then(|end| self.pages.bytes_mut().get_mut(at..end))
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "write of {} bytes at {at} outside an extent of {len} bytes",
                    data.len()
                ))
            })?;
        dst.copy_from_slice(data);
        self.pages.region.count_written(data.len() as u64);
        Ok(())
    }

    /// Makes `range` (byte positions in the extent) durable: after it returns, a crash
    /// keeps those bytes as they are now.
    ///
    /// # Errors
    /// `InvalidArgument` when the range leaves the extent; `Io` when `msync` fails.
    pub fn persist(&mut self, range: Range<usize>) -> Result<()> {
        self.pages.persist(range)
    }

    /// Persists the whole extent and returns it read-only. Record the extent durably only
    /// after this returns: then nothing half-written is ever reachable after a crash.
    ///
    /// # Errors
    /// `Io` when `msync` fails; the pages are then released.
    pub fn seal(self) -> Result<Extent> {
        let ExtentWriter { mut pages, .. } = self;
        let len = pages.span().1;
        pages.persist(0..len)?;
        Ok(Extent {
            pages: Arc::new(pages),
        })
    }

    /// CRC-32C (Castagnoli) of the extent's bytes.
    pub fn crc32c(&self) -> u32 {
        crc32c::crc32c(self.bytes())
    }
}

/// A sealed, read-only extent. `Clone + Send + Sync` (clones share it); its pages return
/// to the region when the last clone is dropped.
#[derive(Clone)]
pub struct Extent {
    pages: Arc<Pages>,
}

impl std::fmt::Debug for Extent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Extent")
            .field("offset", &self.pages.offset)
            .field("len", &self.pages.len)
            .finish()
    }
}

impl Extent {
    pub(super) fn claimed(region: Arc<PmemRegion>, offset: u64, len: u64) -> Extent {
        Extent {
            pages: Arc::new(Pages {
                region,
                offset,
                len,
            }),
        }
    }

    /// Byte offset of the extent in the region file.
    pub fn offset(&self) -> u64 {
        self.pages.offset
    }

    /// Bytes of the extent (whole pages).
    pub fn len(&self) -> u64 {
        self.pages.len
    }

    /// Always false: an extent has at least one page.
    pub fn is_empty(&self) -> bool {
        self.pages.len == 0
    }

    /// The region the extent belongs to.
    pub fn region(&self) -> &Arc<PmemRegion> {
        &self.pages.region
    }

    /// The extent's bytes. Read without a lock; never written again.
    pub fn bytes(&self) -> &[u8] {
        self.pages.bytes()
    }

    /// CRC-32C (Castagnoli) of the extent's bytes.
    pub fn crc32c(&self) -> u32 {
        crc32c::crc32c(self.bytes())
    }
}

impl AsRef<[u8]> for Extent {
    fn as_ref(&self) -> &[u8] {
        self.bytes()
    }
}
