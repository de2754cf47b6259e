//! The shared cache of decompressed blocks.
//!
//! Owns: [`BlockCache`], a sharded cache (quick_cache, CLOCK-Pro-like eviction) weighed in
//! bytes, keyed by `(cache_id, block offset)`.
//! Must not touch: files; readers fill it and look blocks up.
//! Concurrency: `Send + Sync`; shared by every reader through an `Arc`. Each shard has its
//! own lock, so concurrent lookups of different blocks rarely contend.

use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
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

/// Decompressed blocks of every open table, at most `capacity_bytes` of them.
pub struct BlockCache {
    cache: Cache<(u64, u64), Bytes, BlockWeighter>,
    hits: AtomicU64,
    misses: AtomicU64,
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
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
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
        counter.fetch_add(1, Ordering::Relaxed);
        v
    }

    /// Caches the block at `offset` of table `cache_id`.
    pub(crate) fn insert(&self, cache_id: u64, offset: u64, block: Bytes) {
        self.cache.insert((cache_id, offset), block);
    }

    /// Lookups that found their block.
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// Lookups that did not.
    pub fn misses(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
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
