//! The raw memory of a region: `mmap` of the region file, cache-line write-back, `msync`.
//!
//! Owns: the raw operations of the pmem module (mapping, unmapping, slices over mapped
//! memory, copies between mappings, flush instructions and fences, `fallocate`). The only
//! other `unsafe` blocks of the module are the three calls in `extent.rs` that rely on
//! extent ownership.
//! Must not touch: allocation or the header; it does not know who owns which bytes.
//! Concurrency: a [`Mapping`] is shared by all threads. It hands out slices only through
//! `unsafe` accessors whose callers guarantee that no two of them alias a `&mut`
//! (the extent types in `extent.rs` do, because each byte range has one owner).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::ptr::NonNull;

/// A memory mapping of the first `len` bytes of a file, unmapped on drop.
pub(super) struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: a `Mapping` is a pointer to process-wide memory that stays valid until `drop`;
// it has no thread affinity. Concurrent access to its bytes goes only through the
// `unsafe` accessors below, whose callers guarantee exclusive ownership of what they write.
unsafe impl Send for Mapping {}
// SAFETY: as for `Send`; the safe methods (`msync`, `write_back`) read no bytes through Rust
// references and do not modify the mapped data.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `file` shared and writable. Tries a synchronous mapping
    /// (`MAP_SHARED_VALIDATE | MAP_SYNC`, accepted only on a DAX filesystem) first and falls
    /// back to a plain shared mapping when the kernel or filesystem refuses it. The flag says
    /// whether the synchronous mapping was made.
    pub(super) fn shared(file: &File, len: usize) -> io::Result<(Mapping, bool)> {
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        {
            let flags = libc::MAP_SHARED_VALIDATE | libc::MAP_SYNC;
            match Mapping::map(file, len, flags) {
                Ok(m) => return Ok((m, true)),
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EOPNOTSUPP) | Some(libc::EINVAL)
                    ) => {}
                Err(e) => return Err(e),
            }
        }
        Ok((Mapping::map(file, len, libc::MAP_SHARED)?, false))
    }

    /// Maps `len` bytes of `file` private and writable: reads see the file, writes stay in
    /// process memory (copy-on-write) and never reach the file.
    pub(super) fn private(file: &File, len: usize) -> io::Result<Mapping> {
        Mapping::map(file, len, libc::MAP_PRIVATE)
    }

    fn map(file: &File, len: usize, flags: libc::c_int) -> io::Result<Mapping> {
        if len == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty mapping"));
        }
        // SAFETY: a fresh mapping at an address the kernel chooses; it overlaps no Rust
        // object. The fd is valid for the call (borrowed `File`); the mapping keeps its own
        // reference to the file after the fd is closed.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        match NonNull::new(ptr.cast::<u8>()) {
            Some(ptr) => Ok(Mapping { ptr, len }),
            None => Err(io::Error::other("mmap returned a null address")),
        }
    }

    fn check(&self, off: usize, len: usize) -> io::Result<()> {
        match off.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "range outside the mapping",
            )),
        }
    }

    /// The bytes `off..off + len`, or `None` when the range leaves the mapping.
    ///
    /// # Safety
    /// For the lifetime of the returned slice nobody may write these bytes: no `&mut` from
    /// [`Mapping::slice_mut`] may overlap them and no copy may target them.
    pub(super) unsafe fn slice(&self, off: usize, len: usize) -> Option<&[u8]> {
        self.check(off, len).ok()?;
        // SAFETY: in bounds (checked above) of a live mapping that outlives `&self`; the
        // caller guarantees that nobody writes the bytes while the slice lives.
        Some(unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(off), len) })
    }

    /// The bytes `off..off + len` for writing, or `None` when the range leaves the mapping.
    ///
    /// # Safety
    /// For the lifetime of the returned slice no other reference (shared or mutable) to
    /// these bytes may exist and no copy may read or write them.
    // The mapping is shared memory behind a raw pointer; exclusivity is the caller's
    // obligation (the `# Safety` contract), not `&self`'s.
    #[allow(clippy::mut_from_ref)]
    pub(super) unsafe fn slice_mut(&self, off: usize, len: usize) -> Option<&mut [u8]> {
        self.check(off, len).ok()?;
        // SAFETY: in bounds (checked above) of a live mapping that outlives `&self`; the
        // caller guarantees exclusive access to the bytes while the slice lives.
        Some(unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().add(off), len) })
    }

    /// Copies `off..off + len` of this mapping to the same offsets of `dst`.
    ///
    /// # Safety
    /// During the call nobody may write the source bytes and nobody may read or write the
    /// destination bytes; `self` and `dst` must be different mappings.
    pub(super) unsafe fn copy_to(&self, dst: &Mapping, off: usize, len: usize) -> io::Result<()> {
        self.check(off, len)?;
        dst.check(off, len)?;
        // SAFETY: both ranges are in bounds (checked above) of live mappings; they do not
        // overlap because the mappings are distinct; the caller guarantees no concurrent
        // access to either range.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.ptr.as_ptr().add(off),
                dst.ptr.as_ptr().add(off),
                len,
            );
        }
        Ok(())
    }

    /// `msync(MS_SYNC)` of the operating-system pages covering `off..off + len`: the bytes
    /// are in the file on the device when it returns.
    pub(super) fn msync(&self, off: usize, len: usize) -> io::Result<()> {
        self.check(off, len)?;
        if len == 0 {
            return Ok(());
        }
        let start = off - off % os_page_size();
        // SAFETY: `start..off + len` lies inside the mapping (checked above, `start <= off`)
        // and `start` is page-aligned because the mapping's base is. msync reads no Rust
        // object; it only asks the kernel to write back the pages.
        let rc = unsafe {
            libc::msync(
                self.ptr.as_ptr().add(start).cast::<libc::c_void>(),
                off + len - start,
                libc::MS_SYNC,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Writes the CPU cache lines covering `off..off + len` back to memory (`clwb`, else
    /// `clflushopt`, else `clflush`) and fences (`sfence`). On a synchronous (DAX) mapping
    /// the bytes are then persistent.
    #[cfg(target_arch = "x86_64")]
    pub(super) fn write_back(&self, off: usize, len: usize) -> io::Result<()> {
        self.write_back_with(line_flush(), off, len)
    }

    /// [`Mapping::write_back`] with a given instruction, which the CPU must support
    /// ([`LineFlush::supported`]); an unsupported one is refused.
    #[cfg(target_arch = "x86_64")]
    pub(super) fn write_back_with(
        &self,
        kind: LineFlush,
        off: usize,
        len: usize,
    ) -> io::Result<()> {
        self.check(off, len)?;
        if !kind.supported() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "cache-line instruction not supported by this CPU",
            ));
        }
        let base = self.ptr.as_ptr() as usize;
        let mut line = (base + off) & !(CACHE_LINE - 1);
        let end = base + off + len;
        while line < end {
            let p = line as *const u8;
            // SAFETY: `p` is inside the mapping (a cache line overlapping a checked range,
            // and the mapping is page-aligned, so the line's first byte is mapped). The
            // instructions write back or evict a cache line; they change no memory contents
            // and touch no registers but the address operand. The CPU supports the chosen
            // instruction (checked with CPUID above).
            unsafe {
                match kind {
                    LineFlush::Clwb => {
                        std::arch::asm!("clwb [{0}]", in(reg) p, options(nostack, preserves_flags))
                    }
                    LineFlush::Clflushopt => std::arch::asm!(
                        "clflushopt [{0}]", in(reg) p, options(nostack, preserves_flags)
                    ),
                    LineFlush::Clflush => {
                        std::arch::asm!("clflush [{0}]", in(reg) p, options(nostack, preserves_flags))
                    }
                }
            }
            line += CACHE_LINE;
        }
        // SAFETY: `sfence` orders the preceding write-backs before later stores; it has no
        // operands and is available on every x86_64 CPU.
        unsafe { std::arch::asm!("sfence", options(nostack, preserves_flags)) };
        Ok(())
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly what mmap returned; nothing borrows the mapping
        // any more (every slice borrows `&self`, and extents keep the region, and so the
        // mapping, alive). A failure cannot be reported from drop and leaves the pages mapped.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast::<libc::c_void>(), self.len);
        }
    }
}

/// Reserves the file's blocks up to `len` bytes, so that a store into the mapping never
/// faults for lack of space (which would kill the process with SIGBUS).
pub(super) fn reserve(file: &File, len: u64) -> io::Result<()> {
    let len = libc::off_t::try_from(len)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file too large"))?;
    // SAFETY: plain system call on a valid fd; it reads no memory of ours.
    let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len) };
    match rc {
        0 => Ok(()),
        // Filesystems without fallocate: the space is not reserved, but the file has its length.
        libc::EOPNOTSUPP | libc::EINVAL => Ok(()),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

/// The operating system's page size: the granularity of `msync`.
pub(super) fn os_page_size() -> usize {
    // SAFETY: sysconf reads a constant of the system; no memory of ours is involved.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n)
        .ok()
        .filter(|n| n.is_power_of_two())
        .unwrap_or(4096)
}

/// Bytes of a cache line on every x86_64 CPU that has these instructions.
#[cfg(target_arch = "x86_64")]
const CACHE_LINE: usize = 64;

/// The cache-line write-back instruction the CPU offers, best first.
#[cfg(target_arch = "x86_64")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LineFlush {
    /// Write back, keep the line cached.
    Clwb,
    /// Write back and evict, weakly ordered.
    Clflushopt,
    /// Write back and evict, ordered (every x86_64 CPU has it).
    Clflush,
}

/// Detects (once) which write-back instruction to use.
#[cfg(target_arch = "x86_64")]
pub(super) fn line_flush() -> LineFlush {
    static KIND: std::sync::OnceLock<LineFlush> = std::sync::OnceLock::new();
    *KIND.get_or_init(|| {
        [LineFlush::Clwb, LineFlush::Clflushopt]
            .into_iter()
            .find(|k| k.supported())
            .unwrap_or(LineFlush::Clflush)
    })
}

#[cfg(target_arch = "x86_64")]
impl LineFlush {
    /// Whether the CPU has this instruction (CPUID leaf 7, EBX bits 24 and 23).
    pub(super) fn supported(self) -> bool {
        let bit = match self {
            LineFlush::Clflush => return true,
            LineFlush::Clwb => 24,
            LineFlush::Clflushopt => 23,
        };
        // SAFETY: CPUID exists on every x86_64 CPU and reads no memory; leaf 7 is queried
        // only when the highest basic leaf (leaf 0, EAX) reaches it. (The intrinsics are
        // safe functions in newer compilers, hence the allow.)
        #[allow(unused_unsafe)]
        let ebx = unsafe {
            if std::arch::x86_64::__cpuid(0).eax < 7 {
                return false;
            }
            std::arch::x86_64::__cpuid_count(7, 0).ebx
        };
        ebx & (1 << bit) != 0
    }
}
