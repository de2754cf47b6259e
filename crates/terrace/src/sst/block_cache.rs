//! The shared cache of decompressed blocks.
//!
//! Owns: [`BlockCache`], a sharded cache (quick_cache, CLOCK-Pro-like eviction) weighed in
//! bytes, keyed by `(cache_id, block offset)`.
//! Must not touch: files; readers fill it and look blocks up.
//! Concurrency: `Send + Sync`; shared by every reader through an `Arc`. Each shard has its
//! own lock, so concurrent lookups of different blocks rarely contend.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use bytes::Bytes;
use crossbeam_utils::CachePadded;
use quick_cache::sync::Cache;
use quick_cache::Weighter;

/// Bytes charged per entry on top of the block itself (key, bookkeeping).
const ENTRY_OVERHEAD: u64 = 64;

/// A block's charge against the capacity.
#[derive(Debug, Clone, Copy, Default)]
struct BlockWeighter;

impl Weighter<(u64, u64), Bytes> for BlockWeighter {
    fn weight(&self, _key: &(u64, u64), val: &Bytes) -> u64 {
        val.len() as u64 + ENTRY_OVERHEAD
    }
}

/// Stripes of a [`StripedCount`].
const STRIPES: usize = 16;

/// The next thread's stripe.
static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's stripe, assigned on its first count.
    static STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// A count bumped by many threads, each adding to its own cache line (threads are dealt
/// stripes in turn): a counter of every block lookup, shared by the connection and reader
/// threads on different cores, otherwise moves its one line between the cores on nearly
/// every lookup.
#[derive(Default)]
struct StripedCount {
    stripes: [CachePadded<AtomicU64>; STRIPES],
}

impl StripedCount {
    fn add_one(&self) {
        let stripe = STRIPE.with(|s| {
            if s.get() == usize::MAX {
                s.set(NEXT_STRIPE.fetch_add(1, Ordering::Relaxed) % STRIPES);
            }
            s.get()
        });
        if let Some(c) = self.stripes.get(stripe) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn sum(&self) -> u64 {
        self.stripes.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }
}

/// Decompressed blocks of every open table, at most `capacity_bytes` of them.
pub struct BlockCache {
    cache: Cache<(u64, u64), Bytes, BlockWeighter>,
    hits: StripedCount,
    misses: StripedCount,
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache")
            .field("usage_bytes", &self.usage_bytes())
            .field("capacity_bytes", &self.cache.capacity())
            .field("hits", &self.hits())
            .field("misses", &self.misses())
            .finish()
    }
}

impl BlockCache {
    /// A cache holding at most `capacity_bytes` of blocks (plus a small per-entry charge).
    pub fn new(capacity_bytes: usize) -> Self {
        let items = (capacity_bytes / 4096).max(16);
        BlockCache {
            cache: Cache::with_weighter(items, capacity_bytes as u64, BlockWeighter),
            hits: StripedCount::default(),
            misses: StripedCount::default(),
        }
    }

    /// The block at `offset` of table `cache_id`, counting a hit or a miss.
    pub(crate) fn get(&self, cache_id: u64, offset: u64) -> Option<Bytes> {
        let v = self.cache.get(&(cache_id, offset));
        let counter = if v.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.add_one();
        v
    }

    /// Caches the block at `offset` of table `cache_id`.
    pub(crate) fn insert(&self, cache_id: u64, offset: u64, block: Bytes) {
        self.cache.insert((cache_id, offset), block);
    }

    /// Whether a block of `len` bytes fits without evicting anything.
    pub(crate) fn has_room_for(&self, len: usize) -> bool {
        self.cache.weight() + len as u64 + ENTRY_OVERHEAD <= self.cache.capacity()
    }

    /// Drops the block at `offset` of table `cache_id`, if cached.
    pub(crate) fn remove(&self, cache_id: u64, offset: u64) {
        self.cache.remove(&(cache_id, offset));
    }

    /// Lookups that found their block.
    pub fn hits(&self) -> u64 {
        self.hits.sum()
    }

    /// Lookups that did not.
    pub fn misses(&self) -> u64 {
        self.misses.sum()
    }

    /// Bytes charged for the cached blocks now.
    pub fn usage_bytes(&self) -> u64 {
        self.cache.weight()
    }

    /// The capacity in bytes.
    pub fn capacity_bytes(&self) -> u64 {
        self.cache.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn striped_counts_add_up_across_threads() {
        let count = StripedCount::default();
        std::thread::scope(|s| {
            for _ in 0..STRIPES + 3 {
                s.spawn(|| (0..1000).for_each(|_| count.add_one()));
            }
        });
        assert_eq!(count.sum(), (STRIPES as u64 + 3) * 1000);
    }

    #[test]
    fn lookups_count_hits_and_misses() {
        let cache = BlockCache::new(1 << 20);
        assert!(cache.get(1, 0).is_none());
        cache.insert(1, 0, Bytes::from_static(b"block"));
        assert_eq!(cache.get(1, 0).as_deref(), Some(&b"block"[..]));
        assert_eq!((cache.hits(), cache.misses()), (1, 1));
    }
}
