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
//! fingerprint would share an entry. The count of a write of one would then be taken from
//! the other's state. In a table of 2^23 slots (the default 64 MiB) two given keys collide
//! with probability 2^-85; among a million keys, the chance that any two do is about
//! 2^-46, well below the rate of undetected memory errors, which threaten the same count.
//!
//! Concurrency: each slot is an atomic word. Only writers read and fill the table, each
//! under the stripe locks of the keys it looks up or records, so a key's entry changes only
//! under its stripe; keys of other stripes that share its slot can only replace it (a
//! fingerprint that does not match is a miss). Must not touch: the counts or the engine.

use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes per slot.
const SLOT_BYTES: u64 = 8;

/// The remembered states.
pub(crate) struct KeyStates {
    slots: Box<[AtomicU64]>,
    /// Hashes a key to its slot.
    place: ahash::RandomState,
    /// Hashes a key to its fingerprint (independent seeds).
    print: ahash::RandomState,
}

impl KeyStates {
    /// A table of at most `bytes` (a power of two of slots), or `None` for less than one
    /// slot.
    pub(crate) fn with_bytes(bytes: u64) -> Option<KeyStates> {
        let wanted = bytes / SLOT_BYTES;
        if wanted == 0 {
            return None;
        }
        // The largest power of two not above `wanted`.
        let n = usize::try_from(1u64 << (63 - wanted.leading_zeros())).ok()?;
        Some(KeyStates {
            slots: (0..n).map(|_| AtomicU64::new(0)).collect(),
            // Fixed, arbitrary seeds (not ahash's own constants, which cancel out to a
            // hash of zero).
            place: ahash::RandomState::with_seeds(
                0x9e37_79b9_7f4a_7c15,
                0xd1b5_4a32_d192_ed03,
                0x8cb9_2ba7_2f3d_8dd7,
                0x6a09_e667_bb67_ae85,
            ),
            print: ahash::RandomState::with_seeds(
                0x3c6e_f372_a54f_f53a,
                0x510e_527f_9b05_688c,
                0x1f83_d9ab_5be0_cd19,
                0xcbbb_9d5d_629a_292a,
            ),
        })
    }

    /// Bytes the table takes.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> u64 {
        self.slots.len() as u64 * SLOT_BYTES
    }

    /// `key`'s slot index and its fingerprint (shifted into the slot's upper 62 bits).
    fn locate(&self, key: &[u8]) -> (usize, u64) {
        let mask = self.slots.len().saturating_sub(1);
        let slot = (self.place.hash_one(key) as usize) & mask;
        (slot, self.print.hash_one(key) & !3)
    }

    /// The state `key` was left in, if remembered: `Some(None)` absent, `Some(Some(e))`
    /// present, with an expiry if `e`.
    pub(crate) fn get(&self, key: &[u8]) -> Option<Option<bool>> {
        let (slot, print) = self.locate(key);
        let word = self.slots.get(slot)?.load(Ordering::Relaxed);
        decode(word, print)
    }

    /// [`KeyStates::get`] of each of `keys`, the slots loaded in one pass first.
    pub(crate) fn get_many(&self, keys: &[&[u8]]) -> Vec<Option<Option<bool>>> {
        let located: Vec<(usize, u64)> = keys.iter().map(|k| self.locate(k)).collect();
        // Independent loads: their misses overlap.
        let words: Vec<u64> = located
            .iter()
            .map(|&(slot, _)| {
                self.slots
                    .get(slot)
                    .map_or(0, |s| s.load(Ordering::Relaxed))
            })
            .collect();
        words
            .iter()
            .zip(&located)
            .map(|(&word, &(_, print))| decode(word, print))
            .collect()
    }

    /// Remembers that a write leaves `key` in `state` (the caller holds its stripe).
    pub(crate) fn insert(&self, key: &[u8], state: Option<bool>) {
        let (slot, print) = self.locate(key);
        if let Some(s) = self.slots.get(slot) {
            s.store(print | encode(state), Ordering::Relaxed);
        }
    }

    /// Forgets every state.
    pub(crate) fn clear(&self) {
        for s in self.slots.iter() {
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
        assert_eq!(states.get(b"a"), None);
        states.insert(b"a", None);
        states.insert(b"b", Some(false));
        states.insert(b"c", Some(true));
        assert_eq!(states.get(b"a"), Some(None));
        assert_eq!(
            states.get_many(&[b"b", b"c", b"d", b"a"]),
            vec![Some(Some(false)), Some(Some(true)), None, Some(None)]
        );
        states.insert(b"b", Some(true));
        assert_eq!(states.get(b"b"), Some(Some(true)));
        states.clear();
        assert_eq!(states.get_many(&[b"a", b"b", b"c"]), vec![None, None, None]);
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
    fn sizes_are_the_power_of_two_of_slots_below_the_budget() {
        assert_eq!(KeyStates::with_bytes(64 << 20).unwrap().bytes(), 64 << 20);
        assert_eq!(
            KeyStates::with_bytes((64 << 20) - 1).unwrap().bytes(),
            32 << 20
        );
    }
}
