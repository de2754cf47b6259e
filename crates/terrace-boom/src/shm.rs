//! A file mapped into memory and shared with other processes (`MAP_SHARED`): the BOOM
//! region clients write their entries into, and the server's metadata file.
//!
//! Owns: the mapping and every access to it, bounds-checked and by copy, persisting
//! ranges (`msync`), and for crash tests the emulation of a power cut (the bytes last
//! persisted, line by line, and a [`PowerSupply`] that persists ask first). Must not
//! touch: what the bytes mean (`layout`).
//! Concurrency: `Send + Sync`; any number of threads read and write disjoint ranges.
//! Another process (a client) may write any byte of its segment at any time, so every
//! read is a copy that may be torn, and callers check what they read (checksums).
//!
//! This module is the crate's only `unsafe`: reading and writing through the mapping's
//! raw pointer. It is sound because every access is checked against the mapping's
//! length, the mapping lives as long as the `SharedFile`, and only plain bytes are copied
//! (a byte another process changes mid-copy makes a torn copy, not undefined behaviour
//! in this process's own objects, since the copy goes into a buffer this process owns).
#![allow(unsafe_code)]

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU32;
use std::sync::{Arc, OnceLock};

use memmap2::MmapRaw;
use parking_lot::Mutex;
use terrace::storage::{PointKind, PowerSupply, Verdict};

use crate::error::{BoomError, Result};

/// Persistent memory's unit of write-back: a power cut keeps or loses each line whole.
pub const LINE_BYTES: usize = 64;

/// A shared, writable mapping of a whole file.
#[derive(Debug)]
pub struct SharedFile {
    path: PathBuf,
    map: MmapRaw,
    _file: File,
    /// Crash tests only: the supply persists ask, and the file's bytes as last persisted.
    power: OnceLock<(Arc<PowerSupply>, Mutex<Vec<u8>>)>,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BoomError + '_ {
    move |source| BoomError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl SharedFile {
    /// Opens `path`, creating it readable and writable by its owner only (0600) with
    /// `len` bytes if it does not exist; an existing file must have exactly `len` bytes.
    ///
    /// # Errors
    /// I/O errors; `Corrupt` for a file of another length.
    pub fn open_or_create(path: &Path, len: u64) -> Result<SharedFile> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .map_err(io(path))?;
        let have = file.metadata().map_err(io(path))?.len();
        if have == 0 {
            file.set_len(len).map_err(io(path))?;
        } else if have != len {
            return Err(BoomError::Corrupt(format!(
                "{} has {have} bytes where {len} were expected",
                path.display()
            )));
        }
        let map = MmapRaw::map_raw(&file).map_err(io(path))?;
        Ok(SharedFile {
            path: path.to_path_buf(),
            map,
            _file: file,
            power: OnceLock::new(),
        })
    }

    /// Maps `len` bytes of the existing file `path` from `offset` (a multiple of the
    /// page size): a client's view of its segment. Offsets given to this mapping's
    /// methods are relative to `offset`.
    ///
    /// # Errors
    /// I/O errors; `InvalidArgument` for a range outside the file.
    pub fn open_range(path: &Path, offset: u64, len: u64) -> Result<SharedFile> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(io(path))?;
        let have = file.metadata().map_err(io(path))?.len();
        if offset.checked_add(len).is_none_or(|end| end > have) || len == 0 {
            return Err(BoomError::InvalidArgument(format!(
                "{len} bytes at {offset} are outside {} ({have} bytes)",
                path.display()
            )));
        }
        let map = memmap2::MmapOptions::new()
            .offset(offset)
            .len(len as usize)
            .map_raw(&file)
            .map_err(io(path))?;
        Ok(SharedFile {
            path: path.to_path_buf(),
            map,
            _file: file,
            power: OnceLock::new(),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The mapping's length.
    pub fn len(&self) -> u64 {
        self.map.len() as u64
    }

    /// True for an empty mapping (never: files are created with a length).
    pub fn is_empty(&self) -> bool {
        self.map.len() == 0
    }

    fn check(&self, offset: u64, len: usize) -> Result<usize> {
        let end = offset.checked_add(len as u64);
        match end {
            Some(end) if end <= self.len() => Ok(offset as usize),
            _ => Err(BoomError::InvalidArgument(format!(
                "{len} bytes at {offset} are outside {} ({} bytes)",
                self.path.display(),
                self.len()
            ))),
        }
    }

    /// Copies `buf.len()` bytes at `offset` into `buf`.
    ///
    /// # Errors
    /// `InvalidArgument` for a range outside the file.
    pub fn read(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let at = self.check(offset, buf.len())?;
        // SAFETY: `check` keeps `at..at + buf.len()` inside the mapping, which lives as
        // long as `self`; `buf` is this process's own memory and cannot overlap a
        // shared file mapping. Bytes another process writes meanwhile may arrive torn,
        // which callers detect by checksum.
        unsafe {
            std::ptr::copy_nonoverlapping(self.map.as_ptr().add(at), buf.as_mut_ptr(), buf.len());
        }
        Ok(())
    }

    /// The `len` bytes at `offset`, copied.
    ///
    /// # Errors
    /// As [`SharedFile::read`].
    pub fn read_vec(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let mut out = vec![0u8; len];
        self.read(offset, &mut out)?;
        Ok(out)
    }

    /// Writes `bytes` at `offset` (not yet durable: see [`SharedFile::persist`]).
    ///
    /// # Errors
    /// `InvalidArgument` for a range outside the file.
    pub fn write(&self, offset: u64, bytes: &[u8]) -> Result<()> {
        let at = self.check(offset, bytes.len())?;
        // SAFETY: as in `read`; the destination is inside the mapping, which is writable
        // (opened read-write) and never handed out as a Rust reference, so no `&` or
        // `&mut` into it exists for this write to invalidate.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                self.map.as_mut_ptr().add(at),
                bytes.len(),
            );
        }
        Ok(())
    }

    /// The 32-bit word at `offset` (a multiple of 4) as an atomic, for the doorbell
    /// ring's sequence words, which both processes only ever access atomically.
    ///
    /// # Errors
    /// `InvalidArgument` for an unaligned or out-of-range offset.
    pub fn atomic_u32(&self, offset: u64) -> Result<&AtomicU32> {
        let at = self.check(offset, 4)?;
        if !offset.is_multiple_of(4) {
            return Err(BoomError::InvalidArgument(format!(
                "an atomic word at unaligned offset {offset}"
            )));
        }
        // SAFETY: `check` keeps the 4 bytes inside the mapping, which starts on a page
        // boundary, so `at` being a multiple of 4 makes the address aligned for a
        // `u32`; `AtomicU32` has the layout of `u32`; the reference borrows `self`, so
        // the mapping outlives it; and the ring's words are only accessed through
        // atomics (in this process through this reference, in the peer through its own
        // mapping), never through `read` or `write` (a peer that writes them plainly
        // can only make this process read an arbitrary value, which the ring treats as
        // any other sequence number).
        Ok(unsafe { &*self.map.as_ptr().add(at).cast::<AtomicU32>() })
    }

    /// Makes the `len` bytes at `offset` durable (`msync` of the pages covering them).
    ///
    /// # Errors
    /// `InvalidArgument` for a range outside the file; I/O errors.
    pub fn persist(&self, offset: u64, len: usize) -> Result<()> {
        let at = self.check(offset, len)?;
        let Some((power, durable)) = self.power.get() else {
            return self.map.flush_range(at, len).map_err(io(&self.path));
        };
        match power.point(PointKind::Persist) {
            Verdict::Fail => Err(io(&self.path)(std::io::Error::other("the power is out"))),
            Verdict::Lie => Ok(()),
            Verdict::Durable => {
                // No `msync`: under a supply the image, not the page cache, is what a
                // cut keeps: the lines covering the range, as they are now.
                let start = at - at % LINE_BYTES;
                let end = (at + len).next_multiple_of(LINE_BYTES).min(self.map.len());
                let mut durable = durable.lock();
                self.read(start as u64, &mut durable[start..end])
            }
        }
    }

    /// For crash tests only: from now on persists ask `power` first (they fail once it
    /// is out and make nothing durable when it lies), and the file remembers its bytes
    /// as last persisted, starting from what it holds now. A file takes one supply for
    /// its life.
    ///
    /// # Errors
    /// `InvalidArgument` if the file already has a supply.
    #[doc(hidden)]
    pub fn set_power(&self, power: Arc<PowerSupply>) -> Result<()> {
        let now = self.read_vec(0, self.map.len())?;
        self.power
            .set((power, Mutex::new(now)))
            .map_err(|_| BoomError::InvalidArgument("the file already has a power supply".into()))
    }

    /// For crash tests only, after the power was cut and nothing writes the file any
    /// more: what a power cut does to persistent memory. Each line written since it was
    /// last persisted keeps its new bytes or goes back to its persisted ones, at random
    /// (by `seed`), as unpersisted lines may or may not have been written back when the
    /// power went. Returns how many lines went back.
    ///
    /// # Errors
    /// `InvalidArgument` without a supply ([`SharedFile::set_power`]).
    #[doc(hidden)]
    pub fn lose_unpersisted(&self, seed: u64) -> Result<usize> {
        let Some((_, durable)) = self.power.get() else {
            return Err(BoomError::InvalidArgument(
                "no power supply: nothing knows what was persisted".into(),
            ));
        };
        let durable = durable.lock();
        let mut now = [0u8; LINE_BYTES];
        let mut lost = 0;
        for (i, line) in durable.chunks(LINE_BYTES).enumerate() {
            let at = (i * LINE_BYTES) as u64;
            let now = &mut now[..line.len()];
            self.read(at, now)?;
            if now != line && splitmix(seed ^ i as u64).is_multiple_of(2) {
                self.write(at, line)?;
                lost += 1;
            }
        }
        Ok(lost)
    }
}

/// A well-mixed 64-bit hash of `x` (splitmix64's finaliser).
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_writes_and_bounds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let f = SharedFile::open_or_create(&path, 8192).unwrap();
        f.write(4090, b"abcdef").unwrap();
        f.persist(4090, 6).unwrap();
        assert_eq!(f.read_vec(4090, 6).unwrap(), b"abcdef");
        assert!(f.read_vec(8190, 3).is_err());
        assert!(f.write(u64::MAX, b"x").is_err());
        assert!(f.persist(8192, 1).is_err());
        drop(f);
        // Reopened: the bytes are in the file; another length is refused.
        let f = SharedFile::open_or_create(&path, 8192).unwrap();
        assert_eq!(f.read_vec(4090, 6).unwrap(), b"abcdef");
        assert!(matches!(
            SharedFile::open_or_create(&path, 4096),
            Err(BoomError::Corrupt(_))
        ));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // A range of it, as a client maps its segment.
        let part = SharedFile::open_range(&path, 4096, 4096).unwrap();
        part.write(0, b"seg").unwrap();
        assert_eq!(f.read_vec(4096, 3).unwrap(), b"seg");
        assert!(part.read_vec(4095, 2).is_err());
        assert!(SharedFile::open_range(&path, 4096, 8192).is_err());
        assert!(SharedFile::open_range(&dir.path().join("none"), 0, 4096).is_err());
        // Atomic words: aligned and in range only; both mappings see the same word.
        let w = f.atomic_u32(4096).unwrap();
        w.store(7, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(
            part.atomic_u32(0)
                .unwrap()
                .load(std::sync::atomic::Ordering::SeqCst),
            7
        );
        assert!(f.atomic_u32(4097).is_err());
        assert!(f.atomic_u32(8190).is_err());
    }

    #[test]
    fn a_power_cut_keeps_persisted_lines_and_may_lose_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let f = SharedFile::open_or_create(&dir.path().join("f"), 64 * 64).unwrap();
        assert!(f.lose_unpersisted(1).is_err(), "no supply, no emulation");
        let power = Arc::new(PowerSupply::new());
        f.set_power(power.clone()).unwrap();
        assert!(f.set_power(power.clone()).is_err());
        // Lines 0..32 persisted (the range ends mid-line 31: the whole line counts),
        // lines 32..64 only written.
        f.write(0, &[1u8; 64 * 64]).unwrap();
        f.persist(10, 31 * 64 + 10).unwrap();
        power.cut_now();
        assert!(f.persist(0, 64).is_err(), "no persist without power");
        let lost = f.lose_unpersisted(7).unwrap();
        let bytes = f.read_vec(0, 64 * 64).unwrap();
        assert!(
            bytes[..32 * 64].iter().all(|&b| b == 1),
            "persisted lines stay"
        );
        let reverted = bytes[32 * 64..]
            .chunks(64)
            .filter(|l| l.iter().all(|&b| b == 0))
            .count();
        assert_eq!(reverted, lost);
        assert!(
            lost > 0 && lost < 32,
            "some unpersisted lines go, some stay: {lost}"
        );
        assert!(
            bytes[32 * 64..]
                .chunks(64)
                .all(|l| l.iter().all(|&b| b == 0) || l.iter().all(|&b| b == 1)),
            "each line whole"
        );
    }
}
