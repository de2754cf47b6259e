//! The memtable's skiplist: concurrent writers, lock-free readers, nodes in an
//! append-only arena.
//!
//! Owns: the links between nodes and the search. Nodes are runs of bytes in an [`Arena`],
//! named by `u32` handle; handle 0 is the head. A node holds its links (as many as its
//! height), its internal key and its value together (`skiplist/node.rs`), so a search's
//! comparison reads the bytes next to the link it followed, and an entry needs no
//! allocation of its own. Heights are random with branching factor 4, as in LevelDB's
//! memtable. A sorted batch is inserted with its searches interleaved
//! (`skiplist/batch.rs`); a single insert whose key follows its writer's last one starts
//! from that insert's path (`repair_splice`), so an ascending load skips the search.
//! Must not touch: sequence numbers or tombstones (the memtable's).
//! Concurrency: `Sync`. Any number of threads insert at once, as in RocksDB's
//! `InlineSkipList::InsertConcurrently`: each holds a writer slot (its own arena cursor,
//! so nodes are written without sharing), and links a node level by level with a
//! compare-and-swap of its predecessor's link, walking on when another writer got there
//! first. Readers never lock: a node is written whole (data and initial links) before
//! the `Release` swap that links it; readers follow links with `Acquire` loads, so they
//! never see a half-written node. Nodes are never removed or moved.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

use bytes::Bytes;
use parking_lot::{Mutex, MutexGuard};

use super::arena::{Arena, Cursor};
use compare::Target;
use index::{Place, PointIndex, Probe};
pub(in crate::memtable) use node::Node;

mod batch;
mod compare;
mod index;
// Reads and writes a node's bytes in the arena.
#[allow(unsafe_code)]
mod node;
pub(super) use batch::SortedEntry;

/// Block slots kept in reserve: below this many the list reports itself nearly full.
const FULL_RESERVE_SLOTS: usize = 64;

/// Writer slots: an inserting thread holds one (an arena cursor and a height generator)
/// for the length of its insert, so this many threads insert at once without waiting.
const WRITER_SLOTS: usize = 8;

/// Successors a writer's last splice is compared with before an insert searches from
/// the head instead (`SkipList::repair_splice`).
const SPLICE_PROBES: usize = 2;

/// Most links a node can have.
pub(super) const MAX_HEIGHT: usize = 12;
/// The head's handle (the arena's first bytes).
pub(super) const HEAD: u32 = 0;
/// The end of a list. Equal to [`HEAD`]: no link ever points back to the head.
pub(super) const NIL: u32 = 0;

/// The next thread's preferred writer slot.
static NEXT_WRITER_SLOT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's preferred writer slot: a thread that inserts alone keeps filling the
    /// same arena block.
    static WRITER_SLOT: usize = NEXT_WRITER_SLOT.fetch_add(1, AtomicOrdering::Relaxed);
}

/// State of one writer slot.
struct Writer {
    /// Where this writer's next node goes.
    cursor: Cursor,
    /// xorshift32 state for node heights.
    rng: u32,
    /// Where this writer's last node went (its path, with the node as predecessor at
    /// each of its levels): the next insert starts from it when its key falls there, so
    /// ascending keys (a sequential load) skip the search from the head, as RocksDB's
    /// `InlineSkipList` does with its sequential splice.
    last: Splice,
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

/// Where a key goes: at each level, the last node before it and the node after it (or
/// [`NIL`]), as a search found them. Other writers may link nodes in between afterwards;
/// linking notices (its compare-and-swap fails) and walks on from `prev`.
#[derive(Clone, Copy)]
pub(super) struct Splice {
    prev: [u32; MAX_HEIGHT],
    next: [u32; MAX_HEIGHT],
}

impl Splice {
    /// Records the search's path at `level`: `prev` before the key, `next` after it.
    #[inline]
    fn set(&mut self, level: usize, prev: u32, next: u32) {
        if let (Some(p), Some(n)) = (self.prev.get_mut(level), self.next.get_mut(level)) {
            *p = prev;
            *n = next;
        }
    }
}

impl Default for Splice {
    fn default() -> Self {
        Splice {
            prev: [HEAD; MAX_HEIGHT],
            next: [NIL; MAX_HEIGHT],
        }
    }
}

/// The skiplist. See the module docs.
pub(super) struct SkipList {
    arena: Arena,
    /// Bytes of the nodes added (all writers' count).
    node_bytes: AtomicUsize,
    /// Tests: refuse every insert, as a full arena does.
    #[cfg(test)]
    pub(super) refuse: std::sync::atomic::AtomicBool,
    /// Each key's newest node, for point reads (`skiplist/index.rs`); optional.
    index: Option<PointIndex>,
    /// Height of the tallest node; readers may see it before the links it allows.
    height: AtomicUsize,
    writers: Box<[Mutex<Writer>]>,
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
        let writers = (0..WRITER_SLOTS as u32)
            .map(|i| {
                Mutex::new(Writer {
                    cursor: Cursor::new(&arena),
                    rng: 0x2545_f491 ^ i.wrapping_mul(0x9e37_79b9),
                    last: Splice::default(),
                })
            })
            .collect();
        let list = SkipList {
            arena,
            node_bytes: AtomicUsize::new(0),
            #[cfg(test)]
            refuse: std::sync::atomic::AtomicBool::new(false),
            index,
            height: AtomicUsize::new(1),
            writers,
        };
        // The head: every level, no key, at handle 0 (the first cursor's first bytes).
        // Only an allocation failure can stop it, and then every search finds an empty
        // list (`head` answers `None`) and every insert is refused.
        if let Some(w) = list.writers.first() {
            let _ = list.write_node(&mut w.lock(), &[NIL; MAX_HEIGHT], &[], 0, &[]);
        }
        list
    }

    /// A writer slot for this thread: its preferred one, else any free one, else it waits
    /// for its preferred one.
    fn writer(&self) -> Option<MutexGuard<'_, Writer>> {
        let n = self.writers.len();
        let start = WRITER_SLOT.with(|s| *s) % n.max(1);
        (0..n)
            .find_map(|i| self.writers.get((start + i) % n)?.try_lock())
            .or_else(|| self.writers.get(start).map(Mutex::lock))
    }

    /// Reserves and writes a node; returns its handle. `None` if the arena cannot take it.
    fn write_node(
        &self,
        w: &mut Writer,
        next: &[u32],
        user: &[u8],
        trailer: u64,
        value: &[u8],
    ) -> Option<u32> {
        #[cfg(test)]
        if self.refuse.load(AtomicOrdering::Relaxed) {
            return None;
        }
        let size = node::size(next.len(), user.len(), value.len())?;
        let (handle, dst) = self.arena.alloc(&mut w.cursor, size)?;
        node::write(dst, next, user, trailer, value)?;
        self.node_bytes
            .fetch_add(size.next_multiple_of(8), AtomicOrdering::Relaxed);
        Some(handle)
    }

    /// The head node.
    #[inline]
    fn head(&self) -> Option<Node<'_>> {
        self.node_at(HEAD)
    }

    /// The node at handle `i`, the head included.
    #[inline]
    fn node_at(&self, i: u32) -> Option<Node<'_>> {
        node::at(&self.arena, i)
    }

    /// The node at `i`; `None` for [`NIL`] (and the head).
    #[inline]
    pub(super) fn node(&self, i: u32) -> Option<Node<'_>> {
        if i == NIL {
            None
        } else {
            self.node_at(i)
        }
    }

    /// Starts loading node `i` into the cache (see [`Arena::prefetch`]; nothing for
    /// [`NIL`]) and returns where its bytes are, for [`SkipList::node_located`].
    #[inline]
    pub(super) fn prefetch_located(&self, i: u32) -> Option<(NonNull<u8>, usize)> {
        if i == NIL {
            None
        } else {
            self.arena.prefetch(i)
        }
    }

    /// The node whose bytes [`SkipList::prefetch_located`] found.
    #[inline]
    pub(super) fn node_located(&self, located: Option<(NonNull<u8>, usize)>) -> Option<Node<'_>> {
        let (ptr, room) = located?;
        node::at_located(&self.arena, ptr, room)
    }

    /// Whether the arena is close to running out of block slots: the memtable should be
    /// switched before it takes more (each entry over 1 MiB takes a slot of its own).
    pub(super) fn nearly_full(&self) -> bool {
        self.arena.slots_left() < FULL_RESERVE_SLOTS
    }

    /// Bytes of the nodes added, the head included.
    pub(super) fn node_bytes(&self) -> usize {
        self.node_bytes.load(AtomicOrdering::Relaxed)
    }

    /// The newest value written under node `i`'s key, as shared bytes: no copy.
    pub(super) fn value_bytes(&self, i: u32) -> Bytes {
        let i = self.latest_handle(i);
        let value = self.node(i).map_or(&[][..], |n| n.value());
        if value.is_empty() {
            return Bytes::new();
        }
        self.arena
            .share(i, value)
            .unwrap_or_else(|| Bytes::copy_from_slice(value))
    }

    /// The handle of the node holding the newest value written under node `i`'s key.
    #[inline]
    fn latest_handle(&self, i: u32) -> u32 {
        let mut n = i;
        loop {
            match self.node(n).map(|node| node.replaced_by()) {
                Some(r) if r != NIL => n = r,
                _ => return n,
            }
        }
    }

    /// The node holding the newest value written under node `i`'s key.
    #[inline]
    pub(super) fn latest(&self, i: u32) -> Option<Node<'_>> {
        self.node(self.latest_handle(i))
    }

    /// Adds the internal key `(user, trailer)` with `value`; if that key is present, its
    /// value is replaced. Any number of threads may insert at once. Returns false only if
    /// the arena is full.
    pub(super) fn insert(&self, user: &[u8], trailer: u64, value: &[u8]) -> bool {
        let Some(mut w) = self.writer() else {
            return false;
        };
        if self.head().is_none() {
            // The head could not be allocated: the list takes nothing (the next node would
            // land at the head's handle).
            return false;
        }
        let target = Target::new(user, trailer);
        let place = self.index.as_ref().map(|points| points.place(user));
        let mut splice = w.last;
        self.repair_splice(&target, &mut splice);
        let Some((index, height)) = self.link_new(&mut w, &target, value, &mut splice, place)
        else {
            return false;
        };
        // The new node precedes the key's successors at its levels; above them, and
        // when it only replaced a value, the path stays as found.
        for prev in splice.prev.iter_mut().take(height) {
            *prev = index;
        }
        w.last = splice;
        true
    }

    /// Makes `splice`, the path of this writer's last insert, the path to `target`.
    /// When the target comes after that insert's key (an ascending load), only the levels
    /// below the lowest one where the splice still brackets the target are searched
    /// again; otherwise, or when [`SPLICE_PROBES`] successors did not bracket it (keys
    /// in random order), the whole search runs from the head.
    ///
    /// A level brackets the target when its predecessor is before it (true at every
    /// level once it is at the lowest: predecessors are never later going up), its
    /// successor (or the end) is not, and the two are still adjacent. Successors are
    /// never earlier going up, so every level above a bracketing one brackets the target
    /// too (perhaps no longer adjacent: linking walks on there, as past another writer's
    /// node).
    fn repair_splice(&self, target: &Target<'_>, splice: &mut Splice) {
        let top = self
            .height
            .load(AtomicOrdering::Relaxed)
            .clamp(1, MAX_HEIGHT);
        let after_last = splice.prev[0] != HEAD
            && self
                .node(splice.prev[0])
                .is_some_and(|p| p.cmp_to(target).is_lt());
        let mut level = if after_last { 0 } else { top };
        let mut probes = SPLICE_PROBES;
        while level < top {
            let (prev, next) = (splice.prev[level], splice.next[level]);
            if self.node_at(prev).is_none_or(|p| p.link(level) != next) {
                level += 1;
            } else if probes == 0 {
                level = top;
            } else if self.node(next).is_some_and(|n| n.cmp_to(target).is_lt()) {
                // The target is after the successor: so it is at every level it is.
                probes -= 1;
                while level < top && splice.next[level] == next {
                    level += 1;
                }
            } else {
                break;
            }
        }
        if level > 0 {
            let start = if level < top {
                splice.prev[level]
            } else {
                HEAD
            };
            self.search_ge_from(target, start, level - 1, Some(splice));
        }
    }

    /// Adds `target` with `value` where a search left `splice`. Returns the new node's
    /// handle and height (0 when it only replaced the value of an equal key), or `None`
    /// if the arena is full.
    ///
    /// The node is written whole, then linked bottom up, each level with a
    /// compare-and-swap of its predecessor's link: if another writer linked a node there
    /// since the search, the swap fails and the splice walks on from its predecessor at
    /// that level (nodes are never removed, so it is still before the key). A reader
    /// reaches a node's link at a level only through a link at that level or above, which
    /// is swapped in after the link below it is set.
    fn link_new(
        &self,
        w: &mut Writer,
        target: &Target<'_>,
        value: &[u8],
        splice: &mut Splice,
        place: Option<Place>,
    ) -> Option<(u32, usize)> {
        let (user, trailer) = (target.user, target.trailer);
        if self
            .node(splice.next[0])
            .is_some_and(|n| n.cmp_to(target).is_eq())
        {
            let index = self.write_node(w, &[], user, trailer, value)?;
            return self.chain_value(splice.next[0], index).map(|i| (i, 0));
        }

        let height = w.random_height();
        // Readers that see the new height before the links find NIL at the head's new
        // levels and move down; `splice` holds the head there already.
        self.height.fetch_max(height, AtomicOrdering::Relaxed);
        let index = self.write_node(w, splice.next.get(..height)?, user, trailer, value)?;
        // The new node, written by this thread and not yet reachable.
        let node = self.node_at(index)?;
        for level in 0..height {
            loop {
                let (prev, next) = (splice.prev[level], splice.next[level]);
                // Not reachable at this level yet: no reader or writer loads this link.
                node.set_link(level, next);
                if self.node_at(prev)?.cas_link(level, next, index) {
                    break;
                }
                self.walk_splice(target, splice, level);
                let next = splice.next[level];
                if level == 0 && self.node(next).is_some_and(|n| n.cmp_to(target).is_eq()) {
                    // Another writer linked the same internal key first: this node holds
                    // a later value of it instead.
                    return self.chain_value(next, index).map(|i| (i, 0));
                }
            }
        }
        if let Some(points) = &self.index {
            // Entries of one key sort newest first: the node is its key's newest unless
            // the node it was linked after holds the same key. A newer one linked before
            // it later moves the index on; the index never moves back to an older one.
            let newest = self
                .node(splice.prev[0])
                .is_none_or(|p| p.user_key() != user);
            if newest {
                let place = place.unwrap_or_else(|| points.place(user));
                points.insert(place, index, |n| {
                    self.node(n)
                        .filter(|n| n.user_key() == user)
                        .map(|n| n.trailer() < trailer)
                });
            }
        }
        Some((index, height))
    }

    /// Moves `splice` at `level` forward past the nodes now linked before `target`.
    fn walk_splice(&self, target: &Target<'_>, splice: &mut Splice, level: usize) {
        let mut prev = splice.prev[level];
        loop {
            let next = self.node_at(prev).map_or(NIL, |p| p.link(level));
            match self.node(next) {
                Some(n) if n.cmp_to(target).is_lt() => prev = next,
                _ => {
                    splice.prev[level] = prev;
                    splice.next[level] = next;
                    return;
                }
            }
        }
    }

    /// Appends node `by` to the chain of values of node `i`'s internal key; returns `by`.
    fn chain_value(&self, i: u32, by: u32) -> Option<u32> {
        let mut last = self.latest_handle(i);
        loop {
            match self.node(last)?.cas_replaced_by(by) {
                Ok(()) => return Some(by),
                Err(later) => last = self.latest_handle(later),
            }
        }
    }

    /// Whether node `n` holds `user`'s entries.
    fn holds(&self, n: u32, user: &[u8]) -> bool {
        self.node(n).is_some_and(|node| node.user_key() == user)
    }

    /// Bytes of the arena's blocks.
    #[cfg(test)]
    pub(super) fn allocated_bytes(&self) -> usize {
        self.arena.allocated_bytes()
    }

    /// Bytes the point index has allocated.
    pub(super) fn index_bytes(&self) -> usize {
        self.index.as_ref().map_or(0, PointIndex::allocated_bytes)
    }

    /// What [`SkipList::find_ge`] returns for `(user, trailer)` if it is a node of
    /// `user` ([`NIL`] otherwise), found through the point index; `None` when the index
    /// cannot tell (there is none, or it is incomplete and the key is not in it).
    pub(super) fn find_indexed(&self, user: &[u8], trailer: u64) -> Option<u32> {
        let index = self.index.as_ref()?;
        self.found_indexed(user, trailer, index.lookup(user, |n| self.holds(n, user)))
    }

    /// Asks for the point-index slot of `user` ahead of [`SkipList::find_indexed_hashed`]
    /// (a reader looking several keys up); `None` without an index.
    pub(super) fn prefetch_indexed(&self, user: &[u8]) -> Option<(u64, u64)> {
        Some(self.index.as_ref()?.prefetch(user))
    }

    /// [`SkipList::find_indexed`] of the key [`SkipList::prefetch_indexed`] hashed.
    pub(super) fn find_indexed_hashed(
        &self,
        user: &[u8],
        trailer: u64,
        hashed: (u64, u64),
    ) -> Option<u32> {
        let index = self.index.as_ref()?;
        let probe = index.lookup_hashed(hashed, |n| self.holds(n, user));
        self.found_indexed(user, trailer, probe)
    }

    /// What the point index's answer `probe` for `user` means for a search of
    /// `(user, trailer)`.
    fn found_indexed(&self, user: &[u8], trailer: u64, probe: Probe) -> Option<u32> {
        match probe {
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

    /// The first node `>=` the internal key `(user, trailer)`, or [`NIL`].
    pub(super) fn find_ge(&self, user: &[u8], trailer: u64) -> u32 {
        self.search_ge(&Target::new(user, trailer), None)
    }

    /// The first node `>=` `target`, or [`NIL`]; fills `splice` (if given) with the
    /// search's path.
    fn search_ge(&self, target: &Target<'_>, splice: Option<&mut Splice>) -> u32 {
        let top = self.height.load(AtomicOrdering::Relaxed).max(1) - 1;
        self.search_ge_from(target, HEAD, top, splice)
    }

    /// [`SkipList::search_ge`] starting at node `start` (the head, or a node before
    /// `target`) on `top` and the levels below it; fills those levels of `splice`.
    fn search_ge_from(
        &self,
        target: &Target<'_>,
        start: u32,
        top: usize,
        splice: Option<&mut Splice>,
    ) -> u32 {
        if target.long {
            self.search_ge_with::<true>(target, start, top, splice)
        } else {
            self.search_ge_with::<false>(target, start, top, splice)
        }
    }

    /// [`SkipList::search_ge_from`], its comparisons as `Node::search_cmp` says.
    fn search_ge_with<const FROM_COMMON: bool>(
        &self,
        target: &Target<'_>,
        start: u32,
        top: usize,
        mut splice: Option<&mut Splice>,
    ) -> u32 {
        let Some(mut x) = self.node_at(start) else {
            return NIL;
        };
        let mut x_index = start;
        let mut level = top;
        // The last node found not less than the target: no need to compare it again.
        let mut known_ge = NIL;
        // How many leading bytes `x`'s and `known_ge`'s user keys share with the target's
        // (0 for the start node, whose key is not looked at, and for the end): each node
        // met lies between the two, so its comparison starts at the smaller.
        let (mut x_common, mut ge_common) = (0, 0);
        loop {
            let next = x.link(level);
            if next != known_ge {
                match self.node(next) {
                    Some(n) => {
                        let (order, common) =
                            n.search_cmp::<FROM_COMMON>(target, x_common.min(ge_common));
                        if order.is_lt() {
                            x = n;
                            x_index = next;
                            x_common = common;
                            continue;
                        }
                        ge_common = common;
                    }
                    None => ge_common = 0,
                }
            }
            known_ge = next;
            if let Some(s) = splice.as_deref_mut() {
                s.set(level, x_index, next);
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
        let Some(mut x) = self.head() else {
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
        let Some(mut x) = self.head() else {
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
        self.head().map_or(NIL, |h| h.link(0))
    }

    /// The node after `i` at level 0, or [`NIL`].
    #[inline]
    pub(super) fn next_of(&self, i: u32) -> u32 {
        self.node(i).map_or(NIL, |n| n.link(0))
    }
}

#[cfg(test)]
mod tests;
