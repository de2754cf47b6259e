//! What writers last left recently written top-level keys as (absent, present, present
//! with an expiry), so that the key count (`keycount.rs`) reads the engine only for keys
//! not remembered.
//!
//! A table of 8-byte slots, one per key, each holding a fingerprint of its key and the
//! state: the key's slot is one hash of it, the fingerprint 62 bits of a second,
//! independent one. A later key with the same slot overwrites the entry (the earlier key
//! is then read from the engine when written again). A batch's lookups load all their
//! slots first in one loop, whose loads do not depend on each other, so that the
//! processor has many of their cache misses in flight at once: with a general-purpose
//! cache (`quick_cache`: a hash table of keys, shard locks) these lookups were 12% of a
//! pipelined SET's shard-thread time on a table larger than the processor's caches.
//!
//! What a fingerprint gives up: two keys with the same slot and the same 62-bit
//! fingerprint would share an entry, and the count of a write of one would then be taken
//! from the other's state. A lookup of a key whose slot holds another key's entry matches
//! it by chance with probability 2^-62: at a million such lookups a second, once in about
//! 150 000 years, below the rate of undetected memory errors, which threaten the same
//! count. The hashes' seeds are drawn at random for each table, so nobody can choose keys
//! that collide.
//!
//! Memory: the budget (`--keyspace-count-cache-bytes`) is held to a power of two of
//! slots, at most 2^31 (16 GiB), allocated 512 KiB at a time as keys arrive.
//!
//! Concurrency: each slot is an atomic word. Only writers read and fill the table, each
//! under the stripe locks of the keys it looks up or records, so a key's entry changes only
//! under its stripe; keys of other stripes that share its slot can only replace it (a
//! fingerprint that does not match is a miss). Must not touch: the counts or the engine.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Bytes per slot.
const SLOT_BYTES: u64 = 8;
/// Slots per chunk (512 KiB): the table is allocated a chunk at a time, on a chunk's first
/// write, so a large budget costs memory only as keys arrive.
const CHUNK_SLOTS: usize = 1 << 16;
/// Most slots (16 GiB): a larger budget is held to it.
const MAX_SLOTS: u64 = 1 << 31;

/// The remembered states.
pub(crate) struct KeyStates {
    chunks: Box<[OnceLock<Box<[AtomicU64]>>]>,
    /// Slots per chunk: [`CHUNK_SLOTS`], or all of them in a smaller table.
    chunk_slots: usize,
    /// Slots in all: a power of two.
    slots: usize,
    /// Hashes a key to its slot.
    place: ahash::RandomState,
    /// Hashes a key to its fingerprint (seeds of its own).
    print: ahash::RandomState,
}

impl KeyStates {
    /// A table of at most `bytes` (a power of two of slots, at most [`MAX_SLOTS`]), or
    /// `None` for less than one slot.
    pub(crate) fn with_bytes(bytes: u64) -> Option<KeyStates> {
        let wanted = (bytes / SLOT_BYTES).min(MAX_SLOTS);
        if wanted == 0 {
            return None;
        }
        // The largest power of two not above `wanted`.
        let slots = usize::try_from(1u64 << (63 - wanted.leading_zeros())).ok()?;
        let chunk_slots = slots.min(CHUNK_SLOTS);
        Some(KeyStates {
            chunks: (0..slots / chunk_slots).map(|_| OnceLock::new()).collect(),
            chunk_slots,
            slots,
            // Seeds drawn at random for each table (ahash's runtime source): no one can
            // pick keys that collide, and a chance collision does not recur after a
            // restart.
            place: ahash::RandomState::new(),
            print: ahash::RandomState::new(),
        })
    }

    /// Bytes the table may take.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> u64 {
        self.slots as u64 * SLOT_BYTES
    }

    /// `key`'s slot index and its fingerprint (shifted into the slot's upper 62 bits):
    /// what [`KeyStates::get_located`] and [`KeyStates::insert_located`] take, so that a
    /// writer hashes each key once.
    pub(crate) fn locate(&self, key: &[u8]) -> (usize, u64) {
        let slot = (self.place.hash_one(key) as usize) & (self.slots - 1);
        (slot, self.print.hash_one(key) & !3)
    }

    /// Slot `i`, if its chunk has been written.
    fn slot(&self, i: usize) -> Option<&AtomicU64> {
        self.chunks
            .get(i / self.chunk_slots)?
            .get()?
            .get(i % self.chunk_slots)
    }

    /// Slot `i`, its chunk allocated if it was not (zeroed: empty slots).
    fn slot_alloc(&self, i: usize) -> Option<&AtomicU64> {
        let chunk = self
            .chunks
            .get(i / self.chunk_slots)?
            .get_or_init(|| (0..self.chunk_slots).map(|_| AtomicU64::new(0)).collect());
        chunk.get(i % self.chunk_slots)
    }

    /// The state `key` was left in, if remembered: `Some(None)` absent, `Some(Some(e))`
    /// present, with an expiry if `e`.
    pub(crate) fn get(&self, key: &[u8]) -> Option<Option<bool>> {
        let (slot, print) = self.locate(key);
        let word = self.slot(slot)?.load(Ordering::Relaxed);
        decode(word, print)
    }

    /// [`KeyStates::get`] of each of `keys`, the slots loaded in one pass first.
    #[cfg(test)]
    pub(crate) fn get_many(&self, keys: &[&[u8]]) -> Vec<Option<Option<bool>>> {
        let located: Vec<(usize, u64)> = keys.iter().map(|k| self.locate(k)).collect();
        self.get_located(&located)
    }

    /// [`KeyStates::get`] of the keys [`KeyStates::locate`] placed, the slots loaded in
    /// one pass first.
    pub(crate) fn get_located(&self, located: &[(usize, u64)]) -> Vec<Option<Option<bool>>> {
        // Independent loads: their misses overlap.
        let words: Vec<u64> = located
            .iter()
            .map(|&(slot, _)| self.slot(slot).map_or(0, |s| s.load(Ordering::Relaxed)))
            .collect();
        words
            .iter()
            .zip(located)
            .map(|(&word, &(_, print))| decode(word, print))
            .collect()
    }

    /// Remembers that a write leaves `key` in `state` (the caller holds its stripe).
    pub(crate) fn insert(&self, key: &[u8], state: Option<bool>) {
        self.insert_located(self.locate(key), state);
    }

    /// [`KeyStates::insert`] of the key [`KeyStates::locate`] placed.
    pub(crate) fn insert_located(&self, located: (usize, u64), state: Option<bool>) {
        let (slot, print) = located;
        if let Some(s) = self.slot_alloc(slot) {
            s.store(print | encode(state), Ordering::Relaxed);
        }
    }

    /// Forgets every state.
    pub(crate) fn clear(&self) {
        for s in self
            .chunks
            .iter()
            .filter_map(OnceLock::get)
            .flat_map(|c| c.iter())
        {
            s.store(0, Ordering::Relaxed);
        }
    }
}

/// A state in a slot's two low bits: 0 is an empty slot.
fn encode(state: Option<bool>) -> u64 {
    match state {
        None => 1,
        Some(false) => 2,
        Some(true) => 3,
    }
}

/// The state in `word` if its fingerprint is `print`.
fn decode(word: u64, print: u64) -> Option<Option<bool>> {
    if word & !3 != print {
        return None;
    }
    match word & 3 {
        1 => Some(None),
        2 => Some(Some(false)),
        3 => Some(Some(true)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_replaces_and_forgets() {
        let states = KeyStates::with_bytes(1 << 12).unwrap();
        assert_eq!(states.bytes(), 1 << 12);
        // Four keys of distinct slots (the seeds are random: pick them in this table).
        let names: Vec<String> = (0..100).map(|i| format!("k{i}")).collect();
        let mut keys: Vec<&[u8]> = Vec::new();
        for n in &names {
            let slot = states.locate(n.as_bytes()).0;
            if keys.iter().all(|k| states.locate(k).0 != slot) {
                keys.push(n.as_bytes());
            }
        }
        let [a, b, c, d] = [keys[0], keys[1], keys[2], keys[3]];
        assert_eq!(states.get(a), None);
        states.insert(a, None);
        states.insert(b, Some(false));
        states.insert(c, Some(true));
        assert_eq!(states.get(a), Some(None));
        assert_eq!(
            states.get_many(&[b, c, d, a]),
            vec![Some(Some(false)), Some(Some(true)), None, Some(None)]
        );
        states.insert(b, Some(true));
        assert_eq!(states.get(b), Some(Some(true)));
        states.clear();
        assert_eq!(states.get_many(&[a, b, c]), vec![None, None, None]);
    }

    #[test]
    fn a_key_sharing_a_slot_replaces_the_entry_and_is_never_taken_for_it() {
        // One slot: every key shares it.
        let states = KeyStates::with_bytes(15).unwrap();
        assert_eq!(states.bytes(), 8);
        states.insert(b"first", Some(true));
        states.insert(b"second", None);
        assert_eq!(states.get(b"first"), None, "replaced, so read again");
        assert_eq!(states.get(b"second"), Some(None));
        assert!(KeyStates::with_bytes(7).is_none());
    }

    #[test]
    fn keys_spread_over_the_slots() {
        // 1 000 keys in 65 536 slots: a few share a slot (about 8 expected), a hash that
        // did not spread them (constant seeds that cancel out) would lose nearly all.
        let states = KeyStates::with_bytes(8 << 16).unwrap();
        let keys: Vec<String> = (0..1000).map(|i| format!("key:{i:012}")).collect();
        for k in &keys {
            states.insert(k.as_bytes(), Some(false));
        }
        let kept = keys
            .iter()
            .filter(|k| states.get(k.as_bytes()).is_some())
            .count();
        assert!(kept > 970, "{kept} of 1000 kept");
    }

    #[test]
    fn a_huge_budget_is_held_to_the_most_slots_and_allocated_as_used() {
        let states = KeyStates::with_bytes(u64::MAX).unwrap();
        assert_eq!(states.bytes(), MAX_SLOTS * SLOT_BYTES);
        assert!(
            states.chunks.iter().all(|c| c.get().is_none()),
            "nothing allocated"
        );
        states.insert(b"k", Some(false));
        assert_eq!(states.get(b"k"), Some(Some(false)));
        assert_eq!(
            states.chunks.iter().filter(|c| c.get().is_some()).count(),
            1
        );
        states.clear();
        assert_eq!(states.get(b"k"), None);
    }

    #[test]
    fn tables_draw_their_own_seeds() {
        // Two tables of one slot each: a key's fingerprint differs between them, so what
        // one table's entry holds is no match in the other.
        let (a, b) = (
            KeyStates::with_bytes(8).unwrap(),
            KeyStates::with_bytes(8).unwrap(),
        );
        assert_ne!(a.locate(b"k").1, b.locate(b"k").1);
    }

    #[test]
    fn sizes_are_the_power_of_two_of_slots_below_the_budget() {
        assert_eq!(KeyStates::with_bytes(64 << 20).unwrap().bytes(), 64 << 20);
        assert_eq!(
            KeyStates::with_bytes((64 << 20) - 1).unwrap().bytes(),
            32 << 20
        );
    }
}
