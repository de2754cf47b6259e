//! The memtable's skiplist: one writer, lock-free readers, nodes in an append-only arena.
//!
//! Owns: the node layout, the links between nodes and the search. Nodes are the slots of
//! an [`Arena`], named by `u32` index; slot 0 is the head. A node holds its internal key
//! and value in one buffer (one allocation per entry) and its forward links as an inline
//! array of [`MAX_HEIGHT`] `AtomicU32`s, of which the first `height` are used. Heights are
//! random with branching factor 4, as in LevelDB's memtable.
//! Must not touch: memory accounting, sequence numbers or tombstones (the memtable's).
//! Concurrency: `Sync`. Inserts take the writer mutex (one writer at a time, uncontended
//! in the engine, where the group-commit leader or recovery is the only inserter).
//! Readers never lock: a node is built whole (data and initial links) and stored in its
//! slot before the `Release` stores that link it; readers follow links with `Acquire`
//! loads, so they never see a half-built node. Nodes are never removed or moved.

use std::cmp::Ordering;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::OnceLock;

use bytes::Bytes;
use parking_lot::Mutex;

use super::arena::Arena;
use crate::coding::{get_fixed64, put_fixed64};
use crate::key::TRAILER_LEN;

/// Most links a node can have.
pub(super) const MAX_HEIGHT: usize = 12;
/// The head's index.
pub(super) const HEAD: u32 = 0;
/// The end of a list. Equal to [`HEAD`]: no link ever points back to the head.
pub(super) const NIL: u32 = 0;

/// Bytes of one arena slot (the node and its write-once cell).
pub(super) const SLOT_BYTES: usize = std::mem::size_of::<OnceLock<Node>>();

/// One entry. See the module docs.
pub(super) struct Node {
    /// The internal key followed by the value.
    data: Bytes,
    /// Length of the user key at the front of `data` (the trailer follows it).
    user_len: usize,
    /// A node holding a later value written under the same internal key, or [`NIL`].
    replaced_by: AtomicU32,
    /// Forward links; levels at and above the node's height stay [`NIL`].
    next: [AtomicU32; MAX_HEIGHT],
}

impl Node {
    fn new(user: &[u8], trailer: u64, value: &[u8]) -> Self {
        // Exact capacity: `Bytes::from` keeps the buffer without reallocating.
        let mut data = Vec::with_capacity(user.len() + TRAILER_LEN + value.len());
        data.extend_from_slice(user);
        put_fixed64(&mut data, trailer);
        data.extend_from_slice(value);
        Node {
            data: Bytes::from(data),
            user_len: user.len(),
            replaced_by: AtomicU32::new(NIL),
            next: Default::default(),
        }
    }

    fn key_len(&self) -> usize {
        self.user_len + TRAILER_LEN
    }

    /// The internal key.
    #[inline]
    pub(super) fn key(&self) -> &[u8] {
        self.data.get(..self.key_len()).unwrap_or_default()
    }

    /// The user key.
    #[inline]
    pub(super) fn user_key(&self) -> &[u8] {
        self.data.get(..self.user_len).unwrap_or_default()
    }

    /// The trailer: sequence number and type.
    #[inline]
    pub(super) fn trailer(&self) -> u64 {
        get_fixed64(&self.data, self.user_len).unwrap_or(0)
    }

    /// The value stored with this node (see [`SkipList::latest`] for replaced values).
    #[inline]
    pub(super) fn value(&self) -> &[u8] {
        self.data.get(self.key_len()..).unwrap_or_default()
    }

    /// The value as shared bytes: no copy (one reference-count increment).
    pub(super) fn value_bytes(&self) -> Bytes {
        if self.key_len() <= self.data.len() {
            self.data.slice(self.key_len()..)
        } else {
            Bytes::new()
        }
    }

    #[inline]
    fn link(&self, level: usize) -> u32 {
        self.next
            .get(level)
            .map_or(NIL, |n| n.load(AtomicOrdering::Acquire))
    }

    /// Orders this node's key against the internal key `(target_user, target_trailer)`,
    /// as [`crate::key::compare`] does.
    #[inline]
    fn cmp_to(&self, target_user: &[u8], target_trailer: u64) -> Ordering {
        match compare_bytes(self.user_key(), target_user) {
            Ordering::Equal => target_trailer.cmp(&self.trailer()),
            o => o,
        }
    }
}

/// Bytewise order, as `<[u8]>::cmp`, eight bytes at a time and inline: the user keys of
/// the hot comparison are short, where a `memcmp` call costs more than the comparison.
#[inline]
fn compare_bytes(a: &[u8], b: &[u8]) -> Ordering {
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        let x = u64::from_be_bytes(x.try_into().unwrap_or_default());
        let y = u64::from_be_bytes(y.try_into().unwrap_or_default());
        if x != y {
            return x.cmp(&y);
        }
    }
    // At least one side ran out of whole words; both consumed the same number.
    let done = a.len().min(b.len()) & !7;
    let (rest_a, rest_b) = (
        a.get(done..).unwrap_or_default(),
        b.get(done..).unwrap_or_default(),
    );
    for (x, y) in rest_a.iter().zip(rest_b) {
        if x != y {
            return x.cmp(y);
        }
    }
    rest_a.len().cmp(&rest_b.len())
}

/// State only the writer touches.
struct Writer {
    /// Index of the next node.
    next_index: u32,
    /// xorshift32 state for node heights.
    rng: u32,
}

impl Writer {
    fn random_height(&mut self) -> usize {
        let mut h = 1;
        while h < MAX_HEIGHT {
            let mut x = self.rng;
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            self.rng = x;
            // Branching factor 4: grow with probability 1/4 (high bits: better mixed).
            if x >> 30 != 0 {
                break;
            }
            h += 1;
        }
        h
    }
}

/// The skiplist. See the module docs.
pub(super) struct SkipList {
    arena: Arena<Node>,
    /// Height of the tallest node; readers may see it before the links it allows.
    height: AtomicUsize,
    writer: Mutex<Writer>,
}

impl SkipList {
    pub(super) fn new() -> Self {
        let arena = Arena::new();
        let _ = arena.set(HEAD, Node::new(&[], 0, &[]));
        SkipList {
            arena,
            height: AtomicUsize::new(1),
            writer: Mutex::new(Writer {
                next_index: HEAD + 1,
                rng: 0x2545_f491,
            }),
        }
    }

    /// The node at `i`; `None` for [`NIL`] (and the head).
    #[inline]
    pub(super) fn node(&self, i: u32) -> Option<&Node> {
        if i == NIL {
            None
        } else {
            self.arena.get(i)
        }
    }

    /// The node holding the newest value written under `node`'s key.
    #[inline]
    pub(super) fn latest<'a>(&'a self, node: &'a Node) -> &'a Node {
        let mut n = node;
        loop {
            match self.node(n.replaced_by.load(AtomicOrdering::Acquire)) {
                Some(r) => n = r,
                None => return n,
            }
        }
    }

    /// Adds the internal key `(user, trailer)` with `value`; if that key is present, its
    /// value is replaced. Returns false only if the arena is full (2^32 - 1 entries).
    pub(super) fn insert(&self, user: &[u8], trailer: u64, value: &[u8]) -> bool {
        let mut w = self.writer.lock();
        let index = w.next_index;
        let Some(after) = index.checked_add(1) else {
            return false;
        };
        let mut prev = [HEAD; MAX_HEIGHT];
        let found = self.find_ge(user, trailer, Some(&mut prev));
        if let Some(same) = self.node(found).filter(|n| n.cmp_to(user, trailer).is_eq()) {
            let last = self.latest(same);
            if self
                .arena
                .set(index, Node::new(user, trailer, value))
                .is_err()
            {
                return false;
            }
            w.next_index = after;
            last.replaced_by.store(index, AtomicOrdering::Release);
            return true;
        }

        let height = w.random_height();
        if height > self.height.load(AtomicOrdering::Relaxed) {
            // `prev` already holds the head for the new levels. Readers that see the new
            // height before the links find NIL there and move down.
            self.height.store(height, AtomicOrdering::Relaxed);
        }
        let node = Node::new(user, trailer, value);
        for (level, (link, p)) in node.next.iter().zip(prev).enumerate().take(height) {
            let succ = self.arena.get(p).map_or(NIL, |p| p.link(level));
            link.store(succ, AtomicOrdering::Relaxed);
        }
        if self.arena.set(index, node).is_err() {
            return false;
        }
        w.next_index = after;
        for (level, p) in prev.into_iter().enumerate().take(height) {
            if let Some(link) = self.arena.get(p).and_then(|p| p.next.get(level)) {
                link.store(index, AtomicOrdering::Release);
            }
        }
        true
    }

    /// The first node `>=` the internal key `(user, trailer)`, or [`NIL`]. Fills `prev`
    /// with the last node `<` it at each level.
    pub(super) fn find_ge(
        &self,
        user: &[u8],
        trailer: u64,
        mut prev: Option<&mut [u32; MAX_HEIGHT]>,
    ) -> u32 {
        let Some(mut x) = self.arena.get(HEAD) else {
            return NIL;
        };
        let mut x_index = HEAD;
        let mut level = self.height.load(AtomicOrdering::Relaxed).max(1) - 1;
        // The last node found not less than the target: no need to compare it again.
        let mut known_ge = NIL;
        loop {
            let next = x.link(level);
            if next != known_ge {
                if let Some(n) = self.node(next) {
                    if n.cmp_to(user, trailer).is_lt() {
                        x = n;
                        x_index = next;
                        continue;
                    }
                }
            }
            known_ge = next;
            if let Some(slot) = prev.as_deref_mut().and_then(|p| p.get_mut(level)) {
                *slot = x_index;
            }
            if level == 0 {
                return next;
            }
            level -= 1;
        }
    }

    /// The last node `<` the internal key `(user, trailer)` (`<=` if `or_equal`), or
    /// [`NIL`] if there is none.
    pub(super) fn find_lt(&self, user: &[u8], trailer: u64, or_equal: bool) -> u32 {
        let Some(mut x) = self.arena.get(HEAD) else {
            return NIL;
        };
        let mut x_index = HEAD;
        let mut level = self.height.load(AtomicOrdering::Relaxed).max(1) - 1;
        loop {
            let next = x.link(level);
            if let Some(n) = self.node(next) {
                let o = n.cmp_to(user, trailer);
                if o.is_lt() || (or_equal && o.is_eq()) {
                    x = n;
                    x_index = next;
                    continue;
                }
            }
            if level == 0 {
                return x_index;
            }
            level -= 1;
        }
    }

    /// The last node, or [`NIL`] if the list is empty.
    pub(super) fn find_last(&self) -> u32 {
        let Some(mut x) = self.arena.get(HEAD) else {
            return NIL;
        };
        let mut x_index = HEAD;
        let mut level = self.height.load(AtomicOrdering::Relaxed).max(1) - 1;
        loop {
            let next = x.link(level);
            if let Some(n) = self.node(next) {
                x = n;
                x_index = next;
                continue;
            }
            if level == 0 {
                return x_index;
            }
            level -= 1;
        }
    }

    /// The first node, or [`NIL`].
    pub(super) fn first(&self) -> u32 {
        self.arena.get(HEAD).map_or(NIL, |h| h.link(0))
    }

    /// The node after `i` at level 0, or [`NIL`].
    #[inline]
    pub(super) fn next_of(&self, i: u32) -> u32 {
        self.node(i).map_or(NIL, |n| n.link(0))
    }
}

#[cfg(test)]
mod tests;
