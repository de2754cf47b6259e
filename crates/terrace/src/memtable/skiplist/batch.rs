//! Inserting a sorted batch: the searches for all its keys run interleaved, one step of
//! each in turn, so that the processor has several of their cache misses in flight at
//! once instead of one (a search on a large memtable is a chain of dependent misses);
//! the nodes are then linked in key order, each walking past the nodes linked into its
//! splice since the search (the batch's own and other writers').
//!
//! Same concurrency rule as the skiplist: one writer slot is held throughout, other
//! writers may insert meanwhile, readers never wait, and each node is complete before the
//! `Release` swap that links it.

use std::ptr::NonNull;
use std::sync::atomic::Ordering as AtomicOrdering;

use super::{Node, SkipList, Splice, Target, HEAD, MAX_HEIGHT, NIL};

/// One entry of a batch: user key, trailer (sequence and type) and value.
pub(in crate::memtable) type SortedEntry<'a> = (&'a [u8], u64, &'a [u8]);

/// Searches run side by side: enough to keep the misses of several in flight (32 against
/// 16: 10-15% less time per insert in `examples/memtable_insert`, batches of 20 and 800;
/// 64 no better again).
const LANES: usize = 32;

/// Per level, the batch's last node linked there, with the predecessor and successor its
/// search found: what lets a later entry of the same gap start from that node.
///
/// The searches all ran before the batch's first node was linked, and the batch is sorted.
/// So at a level where a later entry's search found the same predecessor and successor
/// as that node's, and the node was linked right before that successor, the node and the
/// successor bracket the entry: the node becomes its predecessor. Otherwise the splice
/// stays as found. Without this, a batch whose keys share one gap (elements pushed onto a
/// list, a sequential load) walked past every node the batch had linked there before it:
/// quadratic in the batch's length.
struct Followed {
    /// Per level: the node, the predecessor its search found, and its successor when it
    /// was linked (the successor its search found, unless another writer's node came
    /// between).
    last: [(u32, u32, u32); MAX_HEIGHT],
    /// Levels with a node in `last`: the tallest node's height so far.
    top: usize,
}

impl Default for Followed {
    fn default() -> Self {
        Followed {
            last: [(NIL, HEAD, NIL); MAX_HEIGHT],
            top: 0,
        }
    }
}

impl Followed {
    /// Moves `splice`, as its search found it, past the batch's nodes in its gaps: at a
    /// level where the batch's last node there was found between the same predecessor and
    /// successor and linked right before that successor, the node and that successor
    /// bracket this entry too. Where another writer's node came between them, the splice
    /// stays as found (the successor must stay one known not to be before the entry);
    /// where one comes after the node later, linking's compare-and-swap notices and walks
    /// on.
    fn apply(&self, splice: &mut Splice) {
        // Entries in other gaps at level 0 (a batch of scattered keys) are left as found
        // at every level: one comparison each, and the walks left are short.
        if !self.last.first().is_some_and(|&(node, found, next)| {
            node != NIL && splice.prev.first() == Some(&found) && splice.next.first() == Some(&next)
        }) {
            return;
        }
        for (level, &(node, found, next)) in self.last.iter().enumerate().take(self.top) {
            if node != NIL
                && splice.prev.get(level) == Some(&found)
                && splice.next.get(level) == Some(&next)
            {
                splice.set(level, node, next);
            }
        }
    }

    /// Records node `node`, linked at its `height` levels as `linked` says (predecessor
    /// and successor per level) after a search that found the predecessors `found`.
    fn linked(&mut self, node: u32, height: usize, found: &[u32; MAX_HEIGHT], linked: &Splice) {
        let height = height.min(MAX_HEIGHT);
        for (level, slot) in self.last.iter_mut().enumerate().take(height) {
            if let (Some(&pred), Some(&next)) = (found.get(level), linked.next.get(level)) {
                *slot = (node, pred, next);
            }
        }
        self.top = self.top.max(height);
    }
}

/// Where one interleaved search stands.
#[derive(Clone, Copy)]
struct Search<'n> {
    x: Node<'n>,
    x_index: u32,
    level: usize,
    /// The last node found not less than the target: no need to compare it again.
    known_ge: u32,
    /// How many leading bytes `x`'s user key shares with the target's (0 for the head).
    x_common: usize,
    /// How many `known_ge`'s shares with it (0 for the end): every node the search
    /// meets lies between `x` and `known_ge`, so it shares at least the smaller of the
    /// two, and its comparison starts there (`Node::cmp_from`).
    ge_common: usize,
    /// The node this search prefetched for its next step, and where its bytes are: the
    /// step reads it without looking its block up again (unless another writer changed
    /// the link meanwhile, and the step meets a different node).
    ahead: u32,
    ahead_at: Option<(NonNull<u8>, usize)>,
}

impl SkipList {
    /// Adds `entries`, sorted by internal key and without two equal internal keys, as
    /// [`SkipList::insert`] would one by one. Returns false if the arena filled up (the
    /// entries before that point were added).
    pub(in crate::memtable) fn insert_sorted(&self, entries: &[SortedEntry<'_>]) -> bool {
        let Some(mut w) = self.writer() else {
            return false;
        };
        if self.head().is_none() {
            return false;
        }
        let targets: Vec<Target<'_>> = entries
            .iter()
            .map(|(user, trailer, _)| Target::new(user, *trailer))
            .collect();
        let mut splices = vec![Splice::default(); entries.len()];
        let mut found = vec![NIL; entries.len()];
        for ((t, s), f) in targets
            .chunks(LANES)
            .zip(splices.chunks_mut(LANES))
            .zip(found.chunks_mut(LANES))
        {
            self.search_interleaved(t, Some(s), f);
        }
        // Each splice was found before the batch's earlier nodes were linked. At each
        // level where the last batch node linked there was found in the same gap as this
        // entry, that node becomes the predecessor (`Followed`); only other writers'
        // nodes are left for linking to walk past.
        let mut followed = Followed::default();
        for ((target, (_, _, value)), splice) in targets.iter().zip(entries).zip(&mut splices) {
            let found = splice.prev;
            followed.apply(splice);
            let Some((node, height)) = self.link_new(&mut w, target, value, splice, None) else {
                return false;
            };
            followed.linked(node, height, &found, splice);
        }
        true
    }

    /// [`SkipList::find_ge`] for each of `targets` `(user, trailer)`, the searches
    /// interleaved: fills `found` with the first node not less than each.
    pub(in crate::memtable) fn find_ge_many(&self, targets: &[(&[u8], u64)], found: &mut [u32]) {
        let targets: Vec<Target<'_>> = targets
            .iter()
            .map(|(user, trailer)| Target::new(user, *trailer))
            .collect();
        for (t, f) in targets.chunks(LANES).zip(found.chunks_mut(LANES)) {
            self.search_interleaved(t, None, f);
        }
    }

    /// The search of [`SkipList::search_ge`] for each of `targets` (at most [`LANES`]),
    /// run in lock step: fills `splices` (if given) and `found` (the first node not less
    /// than each target).
    fn search_interleaved(
        &self,
        targets: &[Target<'_>],
        splices: Option<&mut [Splice]>,
        found: &mut [u32],
    ) {
        if targets.iter().all(|t| t.long) {
            self.search_lanes::<true>(targets, splices, found);
        } else {
            self.search_lanes::<false>(targets, splices, found);
        }
    }

    /// [`SkipList::search_interleaved`], its comparisons as `Node::search_cmp` says.
    fn search_lanes<const FROM_COMMON: bool>(
        &self,
        targets: &[Target<'_>],
        mut splices: Option<&mut [Splice]>,
        found: &mut [u32],
    ) {
        let Some(head) = self.head() else {
            return;
        };
        let top = self.height.load(AtomicOrdering::Relaxed).max(1) - 1;
        let start = Search {
            x: head,
            x_index: HEAD,
            level: top,
            known_ge: NIL,
            x_common: 0,
            ge_common: 0,
            ahead: NIL,
            ahead_at: None,
        };
        let lanes = targets.len().min(LANES).min(found.len());
        let mut searches = [start; LANES];
        // The lanes still searching, in the first `running` places: a lane that ends is
        // swapped out, so each round steps only the searches left.
        let mut running_lanes: [usize; LANES] = std::array::from_fn(|i| i);
        let mut running = lanes;
        while running > 0 {
            let mut at = 0;
            while at < running {
                let Some(&lane) = running_lanes.get(at) else {
                    return;
                };
                let (Some(s), Some(target)) = (searches.get_mut(lane), targets.get(lane)) else {
                    return;
                };
                let next = s.x.link(s.level);
                if next != s.known_ge {
                    let node = if next == s.ahead {
                        self.node_located(s.ahead_at)
                    } else {
                        self.node(next)
                    };
                    match node {
                        Some(n) => {
                            let (order, common) =
                                n.search_cmp::<FROM_COMMON>(target, s.x_common.min(s.ge_common));
                            if order.is_lt() {
                                s.x = n;
                                s.x_index = next;
                                s.x_common = common;
                                // This lane's next step reads the node after `n`: start
                                // loading it while the other lanes take their steps.
                                s.ahead = n.link(s.level);
                                s.ahead_at = self.prefetch_located(s.ahead);
                                at += 1;
                                continue;
                            }
                            s.ge_common = common;
                        }
                        None => s.ge_common = 0,
                    }
                }
                s.known_ge = next;
                if let Some(splice) = splices.as_deref_mut().and_then(|p| p.get_mut(lane)) {
                    splice.set(s.level, s.x_index, next);
                }
                if s.level == 0 {
                    if let Some(out) = found.get_mut(lane) {
                        *out = next;
                    }
                    running -= 1;
                    running_lanes.swap(at, running);
                } else {
                    s.level -= 1;
                    let down = s.x.link(s.level);
                    if down != s.known_ge {
                        s.ahead = down;
                        s.ahead_at = self.prefetch_located(down);
                    }
                    at += 1;
                }
            }
        }
    }
}
