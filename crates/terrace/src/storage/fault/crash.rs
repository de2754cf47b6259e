//! What a simulated power cut does to the bytes a file still holds only in memory.
//!
//! Owns: [`CrashMode`] and the choice, page by page, of the unsynced bytes that reach a
//! file at a crash.
//! Must not touch: files; `FaultStorage` writes what [`surviving_tail`] returns.
//! Concurrency: none (pure functions).

use std::path::Path;

/// The page size of the simulated page cache: the unit in which unsynced bytes reach
/// the device, or not, at a crash.
pub const PAGE_BYTES: u64 = 4096;

/// What [`FaultStorage::simulate_crash`](super::FaultStorage::simulate_crash) does to the
/// bytes appended to a file since its last successful sync (its unsynced tail). Every
/// choice is a function of the seed, the number of the crash (the first crash of a storage
/// is 0), the file's path and the page's index, so a failing case replays with its seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CrashMode {
    /// The whole unsynced tail is lost: the file keeps exactly its synced bytes.
    #[default]
    DropUnsynced,
    /// Each 4 KiB page of the unsynced tail (pages are aligned to file offsets, so the
    /// first may be partly synced) independently reaches the device or not, but the file's
    /// size never covers a page whose data did not: the file keeps its synced bytes and
    /// the unsynced pages up to the first lost one. A tail torn at a page boundary, as a
    /// file system that writes data before the size that covers it leaves (ext4 with
    /// `data=ordered`).
    PartialPages {
        /// Seed of the choices.
        seed: u64,
    },
    /// As `PartialPages`, but the file's size may have reached the device without the data
    /// (ext4 with `data=writeback`, XFS): the file ends after the last surviving page, or
    /// (one crash in two per file) at the end of its whole unsynced tail, and every lost
    /// page below that end reads back as zeros. A file extended by the crash with holes.
    ZeroPages {
        /// Seed of the choices.
        seed: u64,
    },
}

/// The bytes of `pending` (the unsynced tail, which follows `synced` durable bytes of
/// `path`) that crash number `crash` writes after the durable bytes under `mode`; lost
/// pages inside the result are zeros.
pub(super) fn surviving_tail(
    mode: CrashMode,
    crash: u64,
    path: &Path,
    synced: u64,
    pending: &[u8],
) -> Vec<u8> {
    let (seed, holes) = match mode {
        CrashMode::DropUnsynced => return Vec::new(),
        CrashMode::PartialPages { seed } => (seed, false),
        CrashMode::ZeroPages { seed } => (seed, true),
    };
    if pending.is_empty() {
        return Vec::new();
    }
    let file = mix(seed ^ mix(crash ^ mix(path_hash(path))));
    let survives = |page: u64| mix(file ^ mix(page)) & 1 == 1;
    // Pages as ranges of `pending`.
    let end = synced + pending.len() as u64;
    let pages = (synced / PAGE_BYTES..=(end - 1) / PAGE_BYTES).map(|p| {
        let lo = (p * PAGE_BYTES).max(synced) - synced;
        let hi = ((p + 1) * PAGE_BYTES).min(end) - synced;
        (p, lo as usize, hi as usize)
    });
    if !holes {
        let kept = pages
            .take_while(|(p, _, _)| survives(*p))
            .last()
            .map_or(0, |(_, _, hi)| hi);
        return pending.get(..kept).unwrap_or_default().to_vec();
    }
    let whole = mix(file ^ mix(u64::MAX)) & 1 == 1;
    let mut out = pending.to_vec();
    let mut kept = 0;
    for (p, lo, hi) in pages {
        if survives(p) {
            kept = hi;
        } else if let Some(lost) = out.get_mut(lo..hi) {
            lost.fill(0);
        }
    }
    out.truncate(if whole { pending.len() } else { kept });
    out
}

/// SplitMix64's finalizer: a well-mixed 64-bit function of `x`.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// FNV-1a of the path's bytes: stable across runs and builds, unlike the std hasher.
fn path_hash(path: &Path) -> u64 {
    path.as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tail(mode: CrashMode, crash: u64, synced: u64, pending: &[u8]) -> Vec<u8> {
        surviving_tail(mode, crash, Path::new("/db/000007.log"), synced, pending)
    }

    /// A pending tail of `len` bytes after `synced`, each its page number plus one (never 0).
    fn paged(synced: u64, len: usize) -> Vec<u8> {
        (0..len as u64)
            .map(|i| ((synced + i) / PAGE_BYTES + 1) as u8)
            .collect()
    }

    #[test]
    fn drop_unsynced_keeps_nothing() {
        assert!(tail(CrashMode::DropUnsynced, 0, 0, &[1; 10_000]).is_empty());
    }

    #[test]
    fn partial_pages_keep_a_prefix_cut_at_a_page_boundary() {
        let synced = 1000;
        let pending = paged(synced, 5 * 4096);
        let mut lengths = std::collections::BTreeSet::new();
        for crash in 0..200 {
            let got = tail(CrashMode::PartialPages { seed: 7 }, crash, synced, &pending);
            assert_eq!(got[..], pending[..got.len()], "a prefix, no holes");
            let end = synced + got.len() as u64;
            assert!(
                end == synced || end.is_multiple_of(PAGE_BYTES) || got.len() == pending.len(),
                "cut at a page boundary: {end}"
            );
            lengths.insert(got.len());
        }
        assert!(lengths.len() >= 4, "cuts at several pages: {lengths:?}");
        assert!(lengths.contains(&0));
    }

    #[test]
    fn zero_pages_leave_holes_and_may_extend_the_file() {
        let synced = 4096 + 100;
        let pending = paged(synced, 6 * 4096);
        let (mut holes, mut extended_over_loss) = (0, 0);
        for crash in 0..200 {
            let got = tail(CrashMode::ZeroPages { seed: 3 }, crash, synced, &pending);
            assert!(got.len() <= pending.len());
            for (i, b) in got.iter().enumerate() {
                assert!(*b == 0 || *b == pending[i], "a byte is its own or zero");
            }
            // Each page is whole or all zeros.
            let mut pos = 0;
            let mut zero_page = false;
            while pos < got.len() {
                let next = ((synced + pos as u64) / PAGE_BYTES + 1) * PAGE_BYTES - synced;
                let page = &got[pos..(next as usize).min(got.len())];
                let zeros = page.iter().all(|b| *b == 0);
                assert!(zeros || page == &pending[pos..pos + page.len()]);
                zero_page |= zeros;
                pos = next as usize;
            }
            holes += u32::from(zero_page && got.last() != Some(&0));
            extended_over_loss += u32::from(got.len() == pending.len() && got.last() == Some(&0));
        }
        assert!(holes > 0, "a lost page below a surviving one");
        assert!(extended_over_loss > 0, "a file extended over lost pages");
    }

    #[test]
    fn choices_replay_from_the_seed_and_differ_between_seeds_and_crashes() {
        let pending = paged(0, 16 * 4096);
        let a = tail(CrashMode::ZeroPages { seed: 1 }, 4, 0, &pending);
        assert_eq!(a, tail(CrashMode::ZeroPages { seed: 1 }, 4, 0, &pending));
        let differ = (0..20)
            .filter(|c| tail(CrashMode::ZeroPages { seed: 1 }, *c, 0, &pending) != a)
            .count();
        assert!(differ > 10);
        let other_path = surviving_tail(
            CrashMode::ZeroPages { seed: 1 },
            4,
            Path::new("/db/MANIFEST-000001"),
            0,
            &pending,
        );
        let other_seed = tail(CrashMode::ZeroPages { seed: 2 }, 4, 0, &pending);
        assert!(other_path != a || other_seed != a);
    }
}
