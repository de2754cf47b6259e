//! Memtable: the in-memory, concurrently written, ordered buffer of recent writes.
//!
//! Owns: point entries keyed by internal key (an arena skiplist with concurrent writers
//! and lock-free readers, `skiplist.rs` over `arena.rs`; a batch's entries go in as one
//! sorted batch, `skiplist/batch.rs`), the memtable's range tombstones, its
//! memory accounting, and [`MemTableIterator`].
//! Must not touch: the log, sequence allocation or flushing; the write path calls
//! [`MemTable::add`] with sequence numbers it assigned, and flush reads [`MemTable::iter`].
//! Concurrency: `Send + Sync`. Any number of threads may call `add` and `add_batch`
//! through `&self` at once (the writers of a write group do, each with its own batch);
//! point inserts link nodes with compare-and-swap, range tombstones take a lock. Reads (`get`, iterators) never
//! wait for the writer; entries are never removed, so a reader sees every entry whose
//! `add` returned before the read began, and never a half-added one.

// Raw blocks and their addressing: the memtable's only allocation of node memory.
#[allow(unsafe_code)]
mod arena;
mod iter;
mod skiplist;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::RwLock;

use crate::key::{pack_trailer, SeqNo, ValueType, MAX_SEQ, TYPE_FOR_SEEK};
use crate::range_del::{FragmentedTombstones, RangeTombstone};
use skiplist::SkipList;

// The unit tests name the key type through `super::*`.
#[cfg(test)]
use crate::key::InternalKey;

pub use iter::MemTableIterator;

/// Bytes charged per range tombstone on top of its start and end keys.
pub const TOMBSTONE_OVERHEAD_BYTES: usize = 64;

/// Buffer bytes per point-index slot (8 bytes each, charged as memtable memory) of a
/// memtable with no predecessor to size it by (the first after open): a slot for every
/// 64 bytes keeps the table under three quarters full for nodes of 85 bytes or more,
/// which takes in a Redis collection's members (70-90 bytes a node with the index's own
/// share). With smaller entries the last new keys of a full memtable go unindexed, and a
/// point read that misses the index then searches the list alone (a ZADD's read of its
/// member's score: 4% of the server's time once the first memtable's index had filled
/// at a slot per 96 bytes). Larger entries leave slots unused: 8 MiB of a 64 MiB buffer
/// instead of about 5, for this one memtable, since [`MemTable::successor`] sizes each
/// next index by the entries its predecessor held.
const INDEX_BYTES_PER_SLOT: usize = 64;

/// Entries a memtable must have held for [`MemTable::successor`] to size its successor's
/// index by them (fewer: a memtable flushed early, by request, says little).
const SIZING_MIN_ENTRIES: usize = 1024;
/// Keys of a [`MemTable::get_many`] whose point-index slots are asked for before any is
/// read: as many misses in flight as the lanes of a search.
const INDEX_WINDOW: usize = 32;

/// Sorted batches of at least this many point entries are inserted in parts that
/// [`crate::helpers::Helpers`] may share out: each part is a few hundred microseconds of
/// searches, worth a helper's wake-up.
pub const SHARED_INSERT_MIN: usize = 256;

/// Most parts a shared insert is cut into.
const SHARED_INSERT_PARTS: usize = 8;

/// A point entry found by [`MemTable::get`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemEntry {
    /// Sequence number of the write.
    pub seq: SeqNo,
    /// `Value` or `Deletion`.
    pub kind: ValueType,
    /// The value (empty for a deletion); shares the memtable's copy, no bytes copied.
    pub value: Bytes,
}

#[derive(Default)]
struct Tombstones {
    list: Vec<RangeTombstone>,
    /// `list` fragmented, built on the first read after a change.
    fragmented: Option<Arc<FragmentedTombstones>>,
}

/// The memtable. See the module docs for the concurrency rule.
pub struct MemTable {
    list: SkipList,
    tombstones: RwLock<Tombstones>,
    /// Bytes charged for range tombstones (point entries are the skiplist's nodes).
    tombstone_bytes: AtomicUsize,
    /// Set when an entry could not be added (see [`MemTable::insert_failed`]).
    insert_failed: AtomicBool,
    entries: AtomicUsize,
    largest_seq: AtomicU64,
}

/// Point-index slots for a buffer of `write_buffer_size` bytes filled with entries of
/// `entry_bytes` (node bytes each, taken as 16 to 64 KiB): an entry costs its node and,
/// with the table two thirds full when the buffer is (under the index's three-quarter
/// limit, with room for entries larger than the last memtable's), 3/2 of an 8-byte
/// slot; so the buffer holds `size / (entry + 12)` entries and the index 3/2 of that
/// many slots.
fn index_slots(write_buffer_size: usize, entry_bytes: usize) -> usize {
    let entry = entry_bytes.clamp(16, 64 << 10) as u64;
    let entries = write_buffer_size as u64 / (entry + 12);
    usize::try_from(entries.saturating_mul(3) / 2).unwrap_or(usize::MAX)
}

impl Default for MemTable {
    fn default() -> Self {
        MemTable::new()
    }
}

impl std::fmt::Debug for MemTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemTable")
            .field("entries", &self.len())
            .field("memory_bytes", &self.approximate_memory_usage())
            .field("largest_seq", &self.largest_seq())
            .finish()
    }
}

impl MemTable {
    /// An empty memtable.
    pub fn new() -> Self {
        Self::with_list(SkipList::new())
    }

    /// An empty memtable with a point index sized for `write_buffer_size` bytes of
    /// entries: a hash table from user key to the key's newest entry, which point reads
    /// use instead of a skiplist search. It costs 8 bytes per 64 bytes of buffer,
    /// counted in [`MemTable::approximate_memory_usage`] as it is allocated; should more
    /// entries arrive than it was sized for, reads fall back to searching.
    pub fn with_point_index(write_buffer_size: usize) -> Self {
        Self::with_list(SkipList::with_index(
            write_buffer_size / INDEX_BYTES_PER_SLOT,
        ))
    }

    /// The memtable to take over from this one: empty, with a point index sized for
    /// `write_buffer_size` bytes of entries the size of this one's (node bytes per
    /// entry), so that it is about two thirds full when the memtable is: small entries
    /// (a collection's members, 70-90 bytes a node) get a slot for every 60 bytes or so,
    /// and every new key stays indexed; large ones fewer slots than
    /// [`MemTable::with_point_index`] gives. Sized as that one is when this memtable
    /// held too few entries to go by.
    pub fn successor(&self, write_buffer_size: usize) -> Self {
        let entries = self.len();
        if entries < SIZING_MIN_ENTRIES {
            return Self::with_point_index(write_buffer_size);
        }
        Self::with_list(SkipList::with_index(index_slots(
            write_buffer_size,
            self.list.node_bytes() / entries,
        )))
    }

    fn with_list(list: SkipList) -> Self {
        MemTable {
            list,
            tombstones: RwLock::default(),
            tombstone_bytes: AtomicUsize::new(0),
            insert_failed: AtomicBool::new(false),
            entries: AtomicUsize::new(0),
            largest_seq: AtomicU64::new(0),
        }
    }

    /// Records one write. `Value` and `Deletion` are point entries. For `RangeDeletion`,
    /// `user_key` is the start and `value` the (exclusive) end; it goes to the tombstone
    /// list, not to the point entries seen by [`MemTable::iter`].
    ///
    /// Each `(user_key, seq, kind)` is written once; adding it again replaces the value.
    pub fn add(&self, seq: SeqNo, kind: ValueType, user_key: &[u8], value: &[u8]) {
        match kind {
            ValueType::RangeDeletion => {
                let mut t = self.tombstones.write();
                t.list.push(RangeTombstone {
                    start: user_key.to_vec(),
                    end: value.to_vec(),
                    seq,
                });
                t.fragmented = None;
                self.tombstone_bytes.fetch_add(
                    user_key.len() + value.len() + TOMBSTONE_OVERHEAD_BYTES,
                    Ordering::Relaxed,
                );
            }
            ValueType::Value | ValueType::Deletion => {
                let trailer = pack_trailer(seq, kind as u8);
                if !self.list.insert(user_key, trailer, value) {
                    // The node arena is out of block slots (or memory): the write path
                    // switches memtables before that (`is_nearly_full`), so only one
                    // group of very large entries can get here. It must not pass
                    // silently: `insert_failed` reports it.
                    tracing::error!(seq, "memtable full: entry not added");
                    self.insert_failed.store(true, Ordering::Release);
                    return;
                }
            }
        }
        self.entries.fetch_add(1, Ordering::Relaxed);
        self.largest_seq.fetch_max(seq, Ordering::Relaxed);
    }

    /// Records a group of writes `(seq, kind, user_key, value)`, as [`MemTable::add`]
    /// would one by one. The point entries go into the skiplist as one sorted batch,
    /// whose searches overlap their cache misses: much cheaper per entry than separate
    /// inserts on a large memtable.
    pub fn add_batch(&self, writes: &[(SeqNo, ValueType, &[u8], &[u8])]) {
        self.add_batch_shared(writes, &crate::helpers::NoHelpers);
    }

    /// [`MemTable::add_batch`], a sorted batch of at least [`SHARED_INSERT_MIN`] point
    /// entries cut into parts of neighbouring keys that `helpers` may insert beside this
    /// thread, each holding a writer slot of its own.
    pub fn add_batch_shared(
        &self,
        writes: &[(SeqNo, ValueType, &[u8], &[u8])],
        helpers: &dyn crate::helpers::Helpers,
    ) {
        if writes.len() < 2 {
            for &(seq, kind, key, value) in writes {
                self.add(seq, kind, key, value);
            }
            return;
        }
        let mut points: Vec<skiplist::SortedEntry<'_>> = Vec::with_capacity(writes.len());
        let mut largest = 0;
        for &(seq, kind, key, value) in writes {
            match kind {
                ValueType::RangeDeletion => self.add(seq, kind, key, value),
                ValueType::Value | ValueType::Deletion => {
                    points.push((key, pack_trailer(seq, kind as u8), value));
                    largest = largest.max(seq);
                }
            }
        }
        // Internal-key order: user key ascending, then trailer descending.
        let user_keys: Vec<&[u8]> = points.iter().map(|p| p.0).collect();
        let trailer = |i: usize| points.get(i).map_or(0, |p| p.1);
        let order = crate::key::sort_order(&user_keys, |a, b| trailer(b).cmp(&trailer(a)));
        let points: Vec<skiplist::SortedEntry<'_>> = order
            .into_iter()
            .filter_map(|i| points.get(i).copied())
            .collect();
        let distinct = points.windows(2).all(|w| match w {
            [a, b] => (a.0, a.1) != (b.0, b.1),
            _ => true,
        });
        if !distinct {
            // The same internal key twice replaces the value: insert in the given order.
            for &(seq, kind, key, value) in writes {
                if kind != ValueType::RangeDeletion {
                    self.add(seq, kind, key, value);
                }
            }
            return;
        }
        let stored = if points.len() >= SHARED_INSERT_MIN {
            let size = (points.len() / SHARED_INSERT_PARTS).max(SHARED_INSERT_MIN / 4);
            let parts: Vec<&[skiplist::SortedEntry<'_>]> = points.chunks(size).collect();
            let failed = AtomicBool::new(false);
            let done = helpers.share(parts.len(), &|i| {
                if let Some(part) = parts.get(i) {
                    if !self.list.insert_sorted(part) {
                        failed.store(true, Ordering::Relaxed);
                    }
                }
            });
            if !done {
                tracing::error!("a helper did not complete its part of a memtable insert");
            }
            done && !failed.load(Ordering::Relaxed)
        } else {
            self.list.insert_sorted(&points)
        };
        if !stored {
            tracing::error!("memtable insert failed: entries not added");
            self.insert_failed.store(true, Ordering::Release);
            return;
        }
        self.entries.fetch_add(points.len(), Ordering::Relaxed);
        self.largest_seq.fetch_max(largest, Ordering::Relaxed);
    }

    /// The newest point entry of `user_key` with `seq <= snapshot`. Range tombstones are
    /// not applied here; see [`MemTable::max_covering_tombstone_seq`].
    pub fn get(&self, user_key: &[u8], snapshot: SeqNo) -> Option<MemEntry> {
        let target = pack_trailer(snapshot.min(MAX_SEQ), TYPE_FOR_SEEK);
        let node = self
            .list
            .find_indexed(user_key, target)
            .unwrap_or_else(|| self.list.find_ge(user_key, target));
        self.entry_at(node, user_key)
    }

    /// [`MemTable::get`] for each of `user_keys`, into `out` (one slot per key). The
    /// skiplist searches run interleaved, overlapping their cache misses.
    pub fn get_many(&self, user_keys: &[&[u8]], snapshot: SeqNo, out: &mut [Option<MemEntry>]) {
        let target = pack_trailer(snapshot.min(MAX_SEQ), TYPE_FOR_SEEK);
        // The point index answers most keys; the others are searched together. Its slots
        // are asked for a window of keys at a time before any is read, so that their
        // misses overlap.
        let mut indexed: Vec<Option<u32>> = Vec::with_capacity(user_keys.len());
        let mut hashed: Vec<Option<(u64, u64)>> = Vec::with_capacity(INDEX_WINDOW);
        for window in user_keys.chunks(INDEX_WINDOW) {
            hashed.clear();
            hashed.extend(window.iter().map(|k| self.list.prefetch_indexed(k)));
            indexed.extend(
                window
                    .iter()
                    .zip(&hashed)
                    .map(|(k, h)| h.and_then(|h| self.list.find_indexed_hashed(k, target, h))),
            );
        }
        let targets: Vec<(&[u8], u64)> = user_keys
            .iter()
            .zip(&indexed)
            .filter(|(_, i)| i.is_none())
            .map(|(k, _)| (*k, target))
            .collect();
        let mut searched = vec![skiplist::NIL; targets.len()];
        if !targets.is_empty() {
            self.list.find_ge_many(&targets, &mut searched);
        }
        let mut searched = searched.into_iter();
        for ((key, node), slot) in user_keys.iter().zip(indexed).zip(out) {
            let node = node.or_else(|| searched.next()).unwrap_or(skiplist::NIL);
            *slot = self.entry_at(node, key);
        }
    }

    /// The entry of skiplist node `node` if it holds `user_key`.
    fn entry_at(&self, handle: u32, user_key: &[u8]) -> Option<MemEntry> {
        let node = self.list.node(handle)?;
        if node.user_key() != user_key {
            return None;
        }
        let trailer = node.trailer();
        Some(MemEntry {
            seq: trailer >> 8,
            kind: ValueType::from_u8((trailer & 0xff) as u8)?,
            value: self.list.value_bytes(handle),
        })
    }

    /// The largest sequence number of a range tombstone covering `user_key` with
    /// `seq <= snapshot`, or 0 if there is none.
    pub fn max_covering_tombstone_seq(&self, user_key: &[u8], snapshot: SeqNo) -> SeqNo {
        let Some(frags) = self.fragmented_tombstones() else {
            return 0;
        };
        frags
            .fragment_for(user_key)
            .and_then(|f| f.seqs.iter().copied().find(|s| *s <= snapshot))
            .unwrap_or(0)
    }

    /// The range tombstones, in the order they were added.
    pub fn range_tombstones(&self) -> Vec<RangeTombstone> {
        self.tombstones.read().list.clone()
    }

    /// Bytes of the skiplist's nodes (keys, values, links and headers), its point index
    /// and the range tombstones ([`TOMBSTONE_OVERHEAD_BYTES`] each on top of their keys).
    pub fn approximate_memory_usage(&self) -> usize {
        self.list.node_bytes()
            + self.list.index_bytes()
            + self.tombstone_bytes.load(Ordering::Relaxed)
    }

    /// True if some `add` could not store its entry (the node arena ran out of block
    /// slots or memory). The entry is not in the memtable: the caller must treat the
    /// write as failed.
    pub fn insert_failed(&self) -> bool {
        self.insert_failed.load(Ordering::Acquire)
    }

    /// True when the node arena is close to its limit of block slots, whatever the bytes
    /// charged: the memtable should be switched before it takes more. (Each entry over
    /// 1 MiB takes a slot; ordinary blocks hold 8 MiB of nodes.)
    pub fn is_nearly_full(&self) -> bool {
        self.list.nearly_full()
    }

    /// Number of entries added: point entries and range tombstones.
    pub fn len(&self) -> usize {
        self.entries.load(Ordering::Relaxed)
    }

    /// True if nothing was added (no point entry and no tombstone).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The largest sequence number added, 0 if empty.
    pub fn largest_seq(&self) -> SeqNo {
        self.largest_seq.load(Ordering::Relaxed)
    }

    /// An iterator over the point entries in internal-key order. It holds the memtable
    /// alive; entries added while it exists may or may not be seen.
    pub fn iter(self: &Arc<Self>) -> MemTableIterator {
        MemTableIterator::new(Arc::clone(self))
    }

    /// The tombstones fragmented (cached until the next range deletion), or `None`.
    fn fragmented_tombstones(&self) -> Option<Arc<FragmentedTombstones>> {
        {
            let t = self.tombstones.read();
            if t.list.is_empty() {
                return None;
            }
            if let Some(f) = &t.fragmented {
                return Some(Arc::clone(f));
            }
        }
        let mut t = self.tombstones.write();
        let built = match &t.fragmented {
            Some(f) => Arc::clone(f),
            None => Arc::new(FragmentedTombstones::new(&t.list, MAX_SEQ)),
        };
        t.fragmented = Some(Arc::clone(&built));
        Some(built)
    }
}

#[cfg(test)]
mod tests;
