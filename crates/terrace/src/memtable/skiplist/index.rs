//! The skiplist's point index: a hash table from user key to the node holding the key's
//! newest entry, so that a point read finds it in a cache miss or two instead of a
//! search through the list (a dozen or more misses on a large memtable).
//!
//! Owns: the table. A slot is an `AtomicU64`: a 32-bit fingerprint of the key's hash
//! above the node's index, 0 when empty (node 0 is the head, never indexed). Open
//! addressing with linear probing from a home slot picked by a multiply-shift of the
//! hash (so any capacity works, not only powers of two); nothing is ever removed. The
//! capacity is fixed when the memtable is made, allocated in chunks on first use. Once
//! the table is three quarters full, or an insert finds no slot within [`MAX_PROBES`],
//! the index is incomplete: keys already in it keep moving to their newest node, new keys
//! are not added, and a lookup that does not find its key answers [`Probe::Unknown`]
//! (search the list) instead of [`Probe::Absent`].
//! Must not touch: the list; the skiplist says which node is a key's newest and checks
//! that a node holds a key.
//! Concurrency: any number of writers (compare-and-swap on slots), lock-free readers. A
//! writer stores a node's index only after linking the node, and marks the index
//! incomplete (a `Release` store) before the write that could not be indexed is
//! published (the engine publishes a write group's sequence numbers after all its
//! inserts returned); a reader that can see that write therefore sees the mark, and one
//! that cannot does not need it. A key's slot only ever moves to newer nodes of the key, so a reader at an older
//! snapshot walks from the indexed node to older ones.

use ahash::RandomState;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Most slots per chunk (64 KiB).
const CHUNK_SLOTS: usize = 1 << 13;
/// Longest probe sequence before a lookup or insert gives up. Linear probing's longest
/// run grows with the table: at two thirds full, 50 000 keys met a run over 32 slots
/// (which marked the index incomplete long before it filled), so the bound is set where
/// only a table far fuller than the three-quarter limit reaches it. A lookup stops at
/// the first empty slot, so the bound costs nothing in the usual case.
const MAX_PROBES: usize = 256;

/// What the index knows of a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Probe {
    /// The list holds no entry of the key.
    Absent,
    /// The node holding the key's newest entry.
    Newest(u32),
    /// The index cannot tell: search the list.
    Unknown,
}

/// A key's hash and the value its home slot held when [`PointIndex::place`] looked.
#[derive(Clone, Copy)]
pub(super) struct Place {
    home: u64,
    fp: u64,
    home_value: u64,
}

/// The point index; see the module docs.
pub(super) struct PointIndex {
    chunks: Box<[OnceLock<Box<[AtomicU64]>>]>,
    /// Slots per chunk, a power of two: [`CHUNK_SLOTS`], or in a smaller table the
    /// power of two that holds all of them (so that a slot's chunk and place in it are a
    /// shift and a mask, not two divisions).
    chunk_slots: usize,
    chunk_shift: u32,
    slots: u64,
    hasher: RandomState,
    /// Set once a new key could not be added: a miss no longer proves absence.
    incomplete: AtomicBool,
    /// Slots in use (the writer's count).
    used: AtomicUsize,
    /// Bytes of chunks allocated.
    bytes: AtomicUsize,
}

impl PointIndex {
    /// An index of `slots` slots (at least 8).
    pub(super) fn new(slots: usize) -> Self {
        let slots = slots.max(8);
        let chunk_slots = slots.min(CHUNK_SLOTS).next_power_of_two();
        PointIndex {
            chunks: (0..slots.div_ceil(chunk_slots))
                .map(|_| OnceLock::new())
                .collect(),
            chunk_slots,
            chunk_shift: chunk_slots.trailing_zeros(),
            slots: slots as u64,
            hasher: RandomState::new(),
            incomplete: AtomicBool::new(false),
            used: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
        }
    }

    /// Bytes the index has allocated.
    pub(super) fn allocated_bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    fn slots(&self) -> usize {
        self.slots as usize
    }

    /// The home slot and fingerprint of `key`.
    fn hash(&self, key: &[u8]) -> (u64, u64) {
        let h = self.hasher.hash_one(key);
        (
            ((u128::from(h) * u128::from(self.slots)) >> 64) as u64,
            h & 0xffff_ffff,
        )
    }

    /// Slot `i` of a probe sequence (a home slot plus fewer than [`MAX_PROBES`]: past the
    /// table's end at most once, unless the table has fewer slots than that), as its
    /// chunk and its place in the chunk.
    fn locate(&self, i: u64) -> (usize, usize) {
        let i = if i < self.slots {
            i
        } else if i - self.slots < self.slots {
            i - self.slots
        } else {
            i % self.slots
        } as usize;
        (i >> self.chunk_shift, i & (self.chunk_slots - 1))
    }

    fn slot(&self, i: u64) -> Option<&AtomicU64> {
        let (chunk, at) = self.locate(i);
        self.chunks.get(chunk)?.get()?.get(at)
    }

    /// The slot, allocating its chunk (the writer's call).
    fn slot_alloc(&self, i: u64) -> Option<&AtomicU64> {
        let (chunk, at) = self.locate(i);
        let cell = self.chunks.get(chunk)?;
        if cell.get().is_none() {
            let chunk: Box<[AtomicU64]> =
                (0..self.chunk_slots).map(|_| AtomicU64::new(0)).collect();
            if cell.set(chunk).is_ok() {
                self.bytes.fetch_add(
                    self.chunk_slots * std::mem::size_of::<AtomicU64>(),
                    Ordering::Relaxed,
                );
            }
        }
        cell.get()?.get(at)
    }

    /// The node of `key`'s newest entry; `holds(n)` says whether node `n` holds `key`.
    pub(super) fn lookup(&self, key: &[u8], holds: impl Fn(u32) -> bool) -> Probe {
        self.lookup_hashed(self.hash(key), holds)
    }

    /// Hashes `key` and asks for its home slot's cache line, for a reader about to look
    /// up several keys: their misses then overlap. Returns what [`PointIndex::lookup_hashed`]
    /// takes.
    pub(super) fn prefetch(&self, key: &[u8]) -> (u64, u64) {
        let hashed = self.hash(key);
        if let Some(slot) = self.slot(hashed.0) {
            crate::prefetch::prefetch_value(slot);
        }
        hashed
    }

    /// [`PointIndex::lookup`] of the key [`PointIndex::prefetch`] hashed.
    pub(super) fn lookup_hashed(&self, hashed: (u64, u64), holds: impl Fn(u32) -> bool) -> Probe {
        let (home, fp) = hashed;
        for i in (0..MAX_PROBES as u64).map(|p| home + p) {
            let v = self.slot(i).map_or(0, |s| s.load(Ordering::Acquire));
            if v == 0 {
                // Keys are added before any empty slot of their probe sequence, and none
                // is removed: an empty slot ends the search unless new keys went unadded.
                return if self.incomplete.load(Ordering::Acquire) {
                    Probe::Unknown
                } else {
                    Probe::Absent
                };
            }
            let node = v as u32;
            if v >> 32 == fp && holds(node) {
                return Probe::Newest(node);
            }
        }
        Probe::Unknown
    }

    /// Where `key` goes: its hash, and its home slot loaded now, so that a writer that
    /// asks before searching the list has the slot's cache miss overlap the search.
    pub(super) fn place(&self, key: &[u8]) -> Place {
        self.place_hashed(self.hash(key))
    }

    /// [`PointIndex::place`] of the key [`PointIndex::prefetch`] hashed: a batch writer
    /// prefetches every entry's home slot before its searches, so the load here hits.
    pub(super) fn place_hashed(&self, (home, fp): (u64, u64)) -> Place {
        let home_value = self.slot(home).map_or(0, |s| s.load(Ordering::Acquire));
        Place {
            home,
            fp,
            home_value,
        }
    }

    /// Records `node` as the newest entry of the key of `place` (a writer's call, after
    /// linking it). `older(n)` says whether node `n` holds the key (`None` if not) and
    /// then whether its entry is older than `node`'s: a slot only moves to newer entries,
    /// whichever of two writers of one key gets there first.
    pub(super) fn insert(&self, place: Place, node: u32, older: impl Fn(u32) -> Option<bool>) {
        let Place { home, fp, .. } = place;
        let entry = fp << 32 | u64::from(node);
        let full = self.used.load(Ordering::Relaxed) >= self.slots() / 4 * 3;
        for (probe, i) in (0..MAX_PROBES as u64).map(|p| (p, home + p)) {
            let Some(slot) = self.slot_alloc(i) else {
                break;
            };
            // The value loaded early may be stale: the compare-and-swap below then fails
            // and the loop looks again.
            let mut v = if probe == 0 {
                place.home_value
            } else {
                slot.load(Ordering::Acquire)
            };
            loop {
                let replace = if v == 0 {
                    // A key already in the table is found before its first empty slot.
                    if full {
                        v = slot.load(Ordering::Acquire);
                        if v != 0 {
                            continue;
                        }
                        self.incomplete.store(true, Ordering::Release);
                        return;
                    }
                    true
                } else if v >> 32 == fp {
                    match older(v as u32) {
                        Some(true) => true,
                        // A newer entry of the key is indexed already.
                        Some(false) => return,
                        None => false,
                    }
                } else {
                    false
                };
                if !replace {
                    break;
                }
                match slot.compare_exchange(v, entry, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) => {
                        if v == 0 {
                            self.used.fetch_add(1, Ordering::Relaxed);
                        }
                        return;
                    }
                    // Another writer filled or moved the slot: look at it again.
                    Err(now) => v = now,
                }
            }
        }
        // A new key that could not be added: lookups that miss must search the list.
        self.incomplete.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::{PointIndex, CHUNK_SLOTS, MAX_PROBES};

    /// The shift-and-mask location of a probe's slot is the one the plain remainder and
    /// division give, for tables smaller than a probe sequence, smaller than a chunk,
    /// and of several chunks (the last one partly used).
    #[test]
    fn a_probe_slot_is_located_as_by_division() {
        for slots in [
            8,
            100,
            255,
            256,
            1000,
            CHUNK_SLOTS,
            CHUNK_SLOTS + 77,
            3 * CHUNK_SLOTS,
        ] {
            let index = PointIndex::new(slots);
            let per_chunk = slots.min(CHUNK_SLOTS);
            for home in (0..slots as u64).step_by(7).chain([slots as u64 - 1]) {
                for p in 0..MAX_PROBES as u64 {
                    let i = ((home + p) % slots as u64) as usize;
                    let (chunk, at) = index.locate(home + p);
                    assert_eq!(chunk * index.chunk_slots + at, i, "{slots} {home} {p}");
                    assert!(chunk < index.chunks.len() && at < index.chunk_slots);
                    // The same slot whatever the chunk size: chunks only split the table.
                    assert!(index.chunk_slots >= per_chunk);
                }
            }
        }
    }
}
