//! Persistent memory: a region file mapped into memory, addressed by offsets and handed
//! out in extents (runs of whole pages) that are written once, persisted and then read.
//!
//! Owns: the region file (docs/formats/pmem.md): its header, its mapping, the volatile
//! free-page set, persistence (cache-line write-back and fence on a synchronous DAX
//! mapping, `msync` otherwise), the [`PmemMode::Shadow`] emulation of power failure, the
//! optional bandwidth limit (`rate`: a token bucket charged by persists and by the reads
//! its users report), and a fault switch for crash tests that makes persists do nothing.
//! Must not touch: what the bytes of an extent mean, or which extents are live. Callers
//! (the matrix container of level 0) record sealed extents durably in their own metadata
//! and [`PmemRegion::claim`] them again after a restart; the region trusts no allocator
//! state in the file, so a crash leaves nothing to undo.
//! Concurrency: a [`PmemRegion`] is `Send + Sync` and shared as `Arc<PmemRegion>`.
//! Allocation and release take a short mutex; reads never lock. An [`ExtentWriter`] has one
//! owner and is the only way to write its pages; an [`Extent`] is sealed and read-only, so
//! any number of threads read it at once.
//!
//! Only this module (in `map.rs` and two accessors of `extent.rs`) uses `unsafe`. The safe
//! API is sound because each page belongs to at most one `ExtentWriter` or one set of
//! `Extent` clones at a time (the free-page set hands a page out once until it is released),
//! a writer's `&mut [u8]` borrows the writer mutably, an extent's `&[u8]` borrows the
//! extent, and a region file is locked against a second open (in this process or another)
//! for as long as its `PmemRegion` lives. The lock is advisory: a process that writes or
//! truncates the file without taking it is outside these guarantees.

mod alloc;
mod extent;
pub(crate) mod header;
#[allow(unsafe_code)]
mod map;
mod rate;

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::storage::{Clock, PointKind, PowerSupply, SystemClock, ThrottleStats, Verdict};

pub use extent::{Extent, ExtentWriter};
pub use rate::READ_QUANTUM;

use alloc::{ClaimError, FreeRuns};
use header::Header;
use map::Mapping;
use rate::RateLimit;

/// How writes reach the region file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PmemMode {
    /// Writes go to a shared mapping of the file; `persist` writes cache lines back and
    /// fences on a synchronous (DAX) mapping, and `msync`s the covering pages otherwise.
    /// Unpersisted writes may still reach the file; they are merely not guaranteed to.
    #[default]
    Mapped,
    /// Test mode: reads and writes go to a volatile private copy of the file; only
    /// `persist`ed ranges are copied to the file (and made durable as in `Mapped`). Dropping
    /// the region or killing the process loses every write that was not persisted, as a
    /// power failure would.
    Shadow,
}

/// How to open or create a region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PmemOptions {
    /// Bytes of the data area of a new region, rounded up to whole pages. An existing file
    /// keeps the capacity it was made with and this field is ignored.
    pub capacity: u64,
    /// Bytes per page: a power of two from 4 KiB to 1 GiB. An existing file must have been
    /// made with the same page size.
    pub page_size: u32,
    /// How writes reach the file.
    pub mode: PmemMode,
    /// Bytes per second the region may move, persisted plus read; 0 (the default) is
    /// unlimited. A token bucket (with the throttled storage's 100 ms of burst) charged by
    /// every persist and by the reads users report with [`PmemRegion::charge_read`], so
    /// that a region emulated in DRAM moves no faster than a given device; not a model of
    /// persistent memory's media (docs/formats/pmem.md, "What the emulation is").
    pub rate_limit: u64,
}

impl Default for PmemOptions {
    /// No capacity (set it to create a region), 64 KiB pages, [`PmemMode::Mapped`], no
    /// rate limit.
    fn default() -> Self {
        PmemOptions {
            capacity: 0,
            page_size: 64 * 1024,
            mode: PmemMode::Mapped,
            rate_limit: 0,
        }
    }
}

/// Counters of a region since it was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PmemStats {
    /// Bytes stored through extent writers: the bytes given to `ExtentWriter::write`, plus
    /// the whole extent the first time `ExtentWriter::as_mut_slice` lends it out (the
    /// region cannot see which of those bytes the caller changes).
    pub bytes_written: u64,
    /// Bytes of the ranges passed to `persist` (`seal` persists the whole extent).
    pub bytes_persisted: u64,
    /// Calls of `persist`, `seal` included.
    pub persist_calls: u64,
}

/// A persistent-memory region: one file, mapped, with a header page and a data area of
/// whole pages handed out as extents. `Send + Sync`; use it as `Arc<PmemRegion>`.
pub struct PmemRegion {
    path: PathBuf,
    header: Header,
    mode: PmemMode,
    /// The shared mapping of the whole file (header page included).
    file_map: Mapping,
    /// Whether `file_map` is synchronous (`MAP_SYNC` was accepted).
    dax: bool,
    /// Shadow mode: the private copy-on-write mapping that reads and writes use.
    shadow: Option<Mapping>,
    free: Mutex<FreeRuns>,
    bytes_written: AtomicU64,
    bytes_persisted: AtomicU64,
    persist_calls: AtomicU64,
    /// Fault injection: persists return `Ok` without making anything durable.
    skip_persists: AtomicBool,
    /// Fault injection: the simulated power supply every persist asks first.
    power: OnceLock<Arc<PowerSupply>>,
    /// The bandwidth limit, if [`PmemOptions::rate_limit`] set one.
    rate: Option<RateLimit>,
    /// Holds the file's exclusive lock; declared last so it is closed after the unmapping.
    _file: File,
}

impl std::fmt::Debug for PmemRegion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PmemRegion")
            .field("path", &self.path)
            .field("mode", &self.mode)
            .field("dax", &self.dax)
            .field("page_size", &self.header.page_size)
            .field("capacity", &self.header.capacity)
            .finish_non_exhaustive()
    }
}

impl PmemRegion {
    /// Opens the region file at `path`, creating it (header page + `opts.capacity` rounded
    /// up to pages, blocks reserved) when it does not exist. Every data page starts free:
    /// claim the extents recorded before a restart with [`PmemRegion::claim`].
    ///
    /// # Errors
    /// `InvalidArgument` for a bad page size, a zero capacity when creating, or a page size
    /// that differs from the file's; `Corruption` (naming the file) for a bad magic, format
    /// version, checksum, field or length; `Locked` when another `PmemRegion` (in any
    /// process) has the file open; `Io` when the file cannot be made, read or mapped.
    pub fn open(path: &Path, opts: PmemOptions) -> Result<Arc<PmemRegion>> {
        PmemRegion::open_with_clock(path, opts, Arc::new(SystemClock::new()))
    }

    /// [`PmemRegion::open`] with the clock the rate limit reads and sleeps on (tests give
    /// a fake one, to check the limit's waits without real time).
    pub(crate) fn open_with_clock(
        path: &Path,
        opts: PmemOptions,
        clock: Arc<dyn Clock>,
    ) -> Result<Arc<PmemRegion>> {
        header::check_page_size(opts.page_size).map_err(Error::InvalidArgument)?;
        let io = |e| Error::io(path, e);
        if !path.try_exists().map_err(io)? {
            let page = u64::from(opts.page_size);
            let capacity = opts
                .capacity
                .checked_next_multiple_of(page)
                .filter(|&c| c > 0 && c.checked_add(page).is_some())
                .ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "capacity {} for a new pmem region at {}",
                        opts.capacity,
                        path.display()
                    ))
                })?;
            header::create(path, opts.page_size, capacity)?;
        }
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Err(Error::Locked(path.to_path_buf())),
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        let header = header::read(path, &mut file)?;
        if header.page_size != opts.page_size {
            return Err(Error::InvalidArgument(format!(
                "pmem region {} has {}-byte pages, not {}",
                path.display(),
                header.page_size,
                opts.page_size
            )));
        }
        let map_len = usize::try_from(header.file_len()).map_err(|_| {
            Error::InvalidArgument(format!(
                "pmem region {} is too large to map",
                path.display()
            ))
        })?;
        let (file_map, dax) = Mapping::shared(&file, map_len).map_err(io)?;
        let shadow = match opts.mode {
            PmemMode::Mapped => None,
            PmemMode::Shadow => Some(Mapping::private(&file, map_len).map_err(io)?),
        };
        Ok(Arc::new(PmemRegion {
            path: path.to_path_buf(),
            header,
            mode: opts.mode,
            file_map,
            dax,
            shadow,
            free: Mutex::new(FreeRuns::new(header.capacity / u64::from(header.page_size))),
            bytes_written: AtomicU64::new(0),
            bytes_persisted: AtomicU64::new(0),
            persist_calls: AtomicU64::new(0),
            skip_persists: AtomicBool::new(false),
            power: OnceLock::new(),
            rate: (opts.rate_limit > 0).then(|| RateLimit::new(opts.rate_limit, clock)),
            _file: file,
        }))
    }

    /// The region file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How writes reach the file.
    pub fn mode(&self) -> PmemMode {
        self.mode
    }

    /// True when the file is mapped synchronously (`MAP_SYNC` on a DAX filesystem), so
    /// `persist` is a cache-line write-back and fence; false when it falls back to `msync`
    /// (any other filesystem, tmpfs included: an emulation of persistent memory).
    pub fn is_dax(&self) -> bool {
        self.dax
    }

    /// Bytes per page.
    pub fn page_size(&self) -> u32 {
        self.header.page_size
    }

    /// Bytes of the data area (the file less its header page).
    pub fn capacity(&self) -> u64 {
        self.header.capacity
    }

    /// The random identity drawn when the file was made. Callers record it next to their
    /// extents, so that extents recorded for one file are never claimed in a recreated one.
    pub fn creation_id(&self) -> u64 {
        self.header.creation_id
    }

    /// The offset of the first data page (extents start at or after it): the page size.
    pub fn data_offset(&self) -> u64 {
        u64::from(self.header.page_size)
    }

    /// Bytes in free pages (not necessarily contiguous).
    pub fn free_bytes(&self) -> u64 {
        self.free.lock().free_pages() * u64::from(self.header.page_size)
    }

    /// Counters since open (relaxed reads; exact once writers are quiet).
    pub fn stats(&self) -> PmemStats {
        PmemStats {
            bytes_written: self.bytes_written.load(Ordering::Relaxed),
            bytes_persisted: self.bytes_persisted.load(Ordering::Relaxed),
            persist_calls: self.persist_calls.load(Ordering::Relaxed),
        }
    }

    /// The bytes per second of the region's rate limit; 0 when it has none.
    pub fn rate_limit(&self) -> u64 {
        self.rate.as_ref().map_or(0, RateLimit::bytes_per_sec)
    }

    /// Reports `bytes` of the region read (by a row lookup, an iterator, a merge or a
    /// check). With a rate limit, reads are gathered and every [`READ_QUANTUM`] bytes are
    /// charged to the limit by the call that completes them, which then waits as a
    /// persist does; without one this is a single branch and nothing is counted.
    #[inline]
    pub fn charge_read(&self, bytes: u64) {
        if let Some(rate) = &self.rate {
            rate.charge_read(bytes);
        }
    }

    /// What the rate limit was charged (persists, and reads in whole quanta) and how
    /// often and how long charges waited for it, as a throttled device reports it (`dir`
    /// is the region file); `None` without a limit.
    pub fn rate_limit_stats(&self) -> Option<ThrottleStats> {
        self.rate.as_ref().map(|r| r.stats(&self.path))
    }

    /// Charges a persist of `bytes` to the rate limit, if any, and waits for it.
    fn charge_persist(&self, bytes: u64) {
        if let Some(rate) = &self.rate {
            rate.charge(bytes);
        }
    }

    /// For fault-injection tests only: while `skip` is on, `ExtentWriter::persist` and
    /// `ExtentWriter::seal` still check their range, count in [`PmemStats`] and return `Ok`,
    /// but make nothing durable. In [`PmemMode::Shadow`] the range is not copied to the
    /// file, so dropping the region loses it: a program that forgot to persist. (In
    /// `Mapped` mode the bytes are already in the file mapping; only the write-back is
    /// skipped.) Affects persists that start after the call.
    #[doc(hidden)]
    pub fn set_skip_persists(&self, skip: bool) {
        self.skip_persists.store(skip, Ordering::Relaxed);
    }

    /// For crash tests only: every later persist asks `power` first, and fails once its
    /// power is out or makes nothing durable when it lies (see [`PowerSupply`]), as
    /// [`PmemRegion::set_skip_persists`] does. A region takes one supply for its life;
    /// a second call is refused.
    ///
    /// # Errors
    /// `InvalidArgument` if the region already has a supply.
    #[doc(hidden)]
    pub fn set_power(&self, power: Arc<PowerSupply>) -> Result<()> {
        self.power
            .set(power)
            .map_err(|_| Error::InvalidArgument("the region already has a power supply".into()))
    }

    /// Hands out a writable extent of `bytes` rounded up to whole pages: the lowest free
    /// run that fits. Its contents are unspecified (earlier extents' bytes) until written.
    /// Unless recorded durably and claimed after a restart, its pages are free again after a
    /// crash.
    ///
    /// # Errors
    /// `InvalidArgument` for zero bytes; `NoSpace` when no free run is long enough.
    pub fn alloc(self: &Arc<Self>, bytes: u64) -> Result<ExtentWriter> {
        let page = u64::from(self.header.page_size);
        let pages = bytes.div_ceil(page);
        if pages == 0 {
            return Err(Error::InvalidArgument(
                "a pmem extent needs at least one byte".into(),
            ));
        }
        let mut free = self.free.lock();
        let Some(start) = free.alloc(pages) else {
            return Err(Error::NoSpace {
                what: format!(
                    "pmem region {} ({} bytes free, longest free run {} bytes)",
                    self.path.display(),
                    free.free_pages() * page,
                    free.largest_run() * page
                ),
                needed: pages * page,
            });
        };
        drop(free);
        Ok(ExtentWriter::new(
            Arc::clone(self),
            self.data_offset() + start * page,
            pages * page,
        ))
    }

    /// Marks the run `offset..offset + len` (as recorded from a sealed extent's `offset()`
    /// and `len()`) in use and returns it read-only. Used at recovery for every extent the
    /// caller recorded durably.
    ///
    /// # Errors
    /// `InvalidArgument` when `offset` or `len` is not a whole number of pages, the run is
    /// empty or leaves the data area, or some page of it is already in use.
    pub fn claim(self: &Arc<Self>, offset: u64, len: u64) -> Result<Extent> {
        let page = u64::from(self.header.page_size);
        let bad = |why: &str| {
            Error::InvalidArgument(format!(
                "cannot claim {len} bytes at {offset} in pmem region {}: {why}",
                self.path.display()
            ))
        };
        if !offset.is_multiple_of(page) || !len.is_multiple_of(page) {
            return Err(bad("not page-aligned"));
        }
        if offset < self.data_offset() {
            return Err(bad("inside the header page"));
        }
        let start = (offset - self.data_offset()) / page;
        match self.free.lock().claim(start, len / page) {
            Ok(()) => Ok(Extent::claimed(Arc::clone(self), offset, len)),
            Err(ClaimError::OutOfRange) => Err(bad("empty or outside the data area")),
            Err(ClaimError::Overlap) => Err(bad("overlaps an extent in use")),
        }
    }

    /// Writes a copy of this region to a new file at `target`: the same header (page size,
    /// capacity and creation id, so that extents recorded for this file can be claimed in
    /// the copy at the same offsets) and the bytes of `extents`, each at its own offset;
    /// every other data page of the copy is zero. The copy is synced and renamed into place
    /// whole. Used by checkpoints, with the extents of every live row. The extents' bytes
    /// count as read for the rate limit ([`PmemRegion::charge_read`]).
    ///
    /// # Errors
    /// `InvalidArgument` if an extent belongs to another region or `target` exists; `Io`
    /// when the copy cannot be written.
    pub fn copy_to(&self, target: &Path, extents: &[&Extent]) -> Result<()> {
        if let Some(e) = extents
            .iter()
            .find(|e| !std::ptr::eq(Arc::as_ptr(e.region()), self))
        {
            return Err(Error::InvalidArgument(format!(
                "extent at {} belongs to pmem region {}, not {}",
                e.offset(),
                e.region().path().display(),
                self.path.display()
            )));
        }
        header::write_new(target, self.header, |file| {
            use std::os::unix::fs::FileExt;
            extents.iter().try_for_each(|e| {
                self.charge_read(e.len());
                file.write_all_at(e.bytes(), e.offset())
            })
        })
    }

    /// The mapping that reads and writes use: the shadow in Shadow mode, else the file.
    fn data_map(&self) -> &Mapping {
        self.shadow.as_ref().unwrap_or(&self.file_map)
    }

    /// Returns an extent's pages to the free set.
    fn release(&self, offset: u64, len: u64) {
        let page = u64::from(self.header.page_size);
        if let Some(rel) = offset.checked_sub(self.data_offset()) {
            self.free.lock().release(rel / page, len / page);
        }
    }

    fn count_written(&self, bytes: u64) {
        self.bytes_written.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Counts a persist of `len` bytes.
    fn count_persist(&self, len: u64) {
        self.persist_calls.fetch_add(1, Ordering::Relaxed);
        self.bytes_persisted.fetch_add(len, Ordering::Relaxed);
    }

    /// What the next persist must do: skip it (see [`PmemRegion::set_skip_persists`]
    /// and [`PmemRegion::set_power`]), fail it (the simulated power is out), or do it.
    fn persist_verdict(&self) -> Verdict {
        if self.skip_persists.load(Ordering::Relaxed) {
            return Verdict::Lie;
        }
        self.power
            .get()
            .map_or(Verdict::Durable, |p| p.point(PointKind::Persist))
    }

    /// Makes `off..off + len` of the file mapping durable in the file.
    fn make_durable(&self, off: usize, len: usize) -> std::io::Result<()> {
        #[cfg(target_arch = "x86_64")]
        if self.dax {
            return self.file_map.write_back(off, len);
        }
        self.file_map.msync(off, len)
    }
}

#[cfg(test)]
mod tests;
