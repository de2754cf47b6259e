//! The memtable's skiplist: one writer, lock-free readers, nodes in an append-only arena.
//!
//! Owns: the node layout, the links between nodes and the search. Nodes are the slots of
//! an [`Arena`], named by `u32` index; slot 0 is the head. A node holds its internal key
//! and value in one buffer (one allocation per entry), the first [`PREFIX_BYTES`] of its
//! user key inline (a search compares against them without reading the buffer, which on
//! a large memtable is a cache miss per visited node), and its forward links as an
//! inline array of [`MAX_HEIGHT`] `AtomicU32`s, of which the first `height` are used.
//! Heights are random with branching factor 4, as in LevelDB's memtable. A sorted batch
//! is inserted with its searches interleaved (`skiplist/batch.rs`).
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
use crate::key::{compare_bytes, key_prefix, PREFIX_BYTES, TRAILER_LEN};
use compare::Target;
use index::{PointIndex, Probe};

mod batch;
mod compare;
mod index;
pub(super) use batch::SortedEntry;

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
    /// [`key_prefix`] of the user key.
    prefix: [u64; 2],
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
            prefix: key_prefix(user),
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

    /// Orders this node's key against the internal key `target`, as
    /// [`crate::key::compare`] does. The inline prefixes decide most comparisons; the
    /// entry's buffer is read only when they are equal.
    #[inline]
    fn cmp_to(&self, target: &Target<'_>) -> Ordering {
        let user = match self.prefix.cmp(&target.prefix) {
            Ordering::Equal => {
                if self.user_len.min(target.user.len()) < PREFIX_BYTES {
                    // Equal padded prefixes and a key shorter than the prefix: that key
                    // is a prefix of the other, so the shorter one sorts first.
                    self.user_len.cmp(&target.user.len())
                } else {
                    compare_bytes(
                        self.user_key().get(PREFIX_BYTES..).unwrap_or_default(),
                        target.user.get(PREFIX_BYTES..).unwrap_or_default(),
                    )
                }
            }
            o => o,
        };
        match user {
            Ordering::Equal => target.trailer.cmp(&self.trailer()),
            o => o,
        }
    }
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
    /// Each key's newest node, for point reads (`skiplist/index.rs`); optional.
    index: Option<PointIndex>,
    /// Height of the tallest node; readers may see it before the links it allows.
    height: AtomicUsize,
    writer: Mutex<Writer>,
}

impl SkipList {
    pub(super) fn new() -> Self {
        Self::build(None)
    }

    /// A list with a point index of about `slots` slots.
    pub(super) fn with_index(slots: usize) -> Self {
        Self::build(Some(PointIndex::new(slots)))
    }

    fn build(index: Option<PointIndex>) -> Self {
        let arena = Arena::new();
        let _ = arena.set(HEAD, Node::new(&[], 0, &[]));
        SkipList {
            arena,
            index,
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
        let mut prev = [HEAD; MAX_HEIGHT];
        let target = Target::new(user, trailer);
        let found = self.search_ge(&target, Some(&mut prev));
        self.link_new(&mut w, &target, value, &prev, found)
            .is_some()
    }

    /// Adds `target` with `value` where a search left `prev` (the last node before it at
    /// each level) and `found` (the first node not before it). Returns the new node's
    /// index and height (0 when it only replaced the value of an equal key), or `None`
    /// if the arena is full. The caller holds the writer lock.
    fn link_new(
        &self,
        w: &mut Writer,
        target: &Target<'_>,
        value: &[u8],
        prev: &[u32; MAX_HEIGHT],
        found: u32,
    ) -> Option<(u32, usize)> {
        let index = w.next_index;
        let after = index.checked_add(1)?;
        let (user, trailer) = (target.user, target.trailer);
        if let Some(same) = self.node(found).filter(|n| n.cmp_to(target).is_eq()) {
            let last = self.latest(same);
            self.arena
                .set(index, Node::new(user, trailer, value))
                .ok()?;
            w.next_index = after;
            last.replaced_by.store(index, AtomicOrdering::Release);
            return Some((index, 0));
        }

        let height = w.random_height();
        if height > self.height.load(AtomicOrdering::Relaxed) {
            // `prev` already holds the head for the new levels. Readers that see the new
            // height before the links find NIL there and move down.
            self.height.store(height, AtomicOrdering::Relaxed);
        }
        let node = Node::new(user, trailer, value);
        for (level, (link, p)) in node.next.iter().zip(prev).enumerate().take(height) {
            let succ = self.arena.get(*p).map_or(NIL, |p| p.link(level));
            link.store(succ, AtomicOrdering::Relaxed);
        }
        self.arena.set(index, node).ok()?;
        w.next_index = after;
        for (level, p) in prev.iter().enumerate().take(height) {
            if let Some(link) = self.arena.get(*p).and_then(|p| p.next.get(level)) {
                link.store(index, AtomicOrdering::Release);
            }
        }
        if let Some(points) = &self.index {
            // Entries of one key sort newest first: the node is its key's newest unless
            // the node before it holds the same key.
            let newest = self.node(prev[0]).is_none_or(|p| {
                p.user_len != user.len() || p.prefix != target.prefix || p.user_key() != user
            });
            if newest {
                points.insert(user, index, |n| self.holds(n, user));
            }
        }
        Some((index, height))
    }

    /// Whether node `n` holds `user`'s entries.
    fn holds(&self, n: u32, user: &[u8]) -> bool {
        self.node(n).is_some_and(|node| node.user_key() == user)
    }

    /// Bytes the point index has allocated.
    pub(super) fn index_bytes(&self) -> usize {
        self.index.as_ref().map_or(0, PointIndex::allocated_bytes)
    }

    /// What [`SkipList::find_ge`] returns for `(user, trailer)` if it is a node of
    /// `user` ([`NIL`] otherwise), found through the point index; `None` when the index
    /// cannot tell (there is none, or it gave up).
    pub(super) fn find_indexed(&self, user: &[u8], trailer: u64) -> Option<u32> {
        match self.index.as_ref()?.lookup(user, |n| self.holds(n, user)) {
            Probe::Unknown => None,
            Probe::Absent => Some(NIL),
            Probe::Newest(first) => {
                // Older entries of the key follow the newest at level 0.
                let mut i = first;
                loop {
                    let Some(node) = self.node(i).filter(|n| n.user_key() == user) else {
                        return Some(NIL);
                    };
                    if node.trailer() <= trailer {
                        return Some(i);
                    }
                    i = node.link(0);
                }
            }
        }
    }

    /// The first node `>=` the internal key `(user, trailer)`, or [`NIL`]. Fills `prev`
    /// with the last node `<` it at each level.
    pub(super) fn find_ge(
        &self,
        user: &[u8],
        trailer: u64,
        prev: Option<&mut [u32; MAX_HEIGHT]>,
    ) -> u32 {
        self.search_ge(&Target::new(user, trailer), prev)
    }

    fn search_ge(&self, target: &Target<'_>, mut prev: Option<&mut [u32; MAX_HEIGHT]>) -> u32 {
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
                    if n.cmp_to(target).is_lt() {
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
        let target = Target::new(user, trailer);
        let Some(mut x) = self.arena.get(HEAD) else {
            return NIL;
        };
        let mut x_index = HEAD;
        let mut level = self.height.load(AtomicOrdering::Relaxed).max(1) - 1;
        loop {
            let next = x.link(level);
            if let Some(n) = self.node(next) {
                let o = n.cmp_to(&target);
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
