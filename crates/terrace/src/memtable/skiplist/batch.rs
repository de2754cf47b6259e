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

impl<'n> Search<'n> {
    /// A search from the head's top level `top`.
    fn from_top(head: Node<'n>, top: usize) -> Self {
        Search {
            x: head,
            x_index: HEAD,
            level: top,
            known_ge: NIL,
            x_common: 0,
            ge_common: 0,
            ahead: NIL,
            ahead_at: None,
        }
    }
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
        // Each entry's home slot in the point index, asked for before the searches: its
        // cache miss overlaps theirs instead of stalling the entry's link after them.
        let hashed: Vec<(u64, u64)> = match &self.index {
            Some(points) => targets.iter().map(|t| points.prefetch(t.user)).collect(),
            None => Vec::new(),
        };
        let mut splices = vec![Splice::default(); entries.len()];
        let mut found = vec![NIL; entries.len()];
        // One call for the whole batch: each lane takes a run of neighbouring keys, and
        // starts each from the splice of the one before.
        self.search_interleaved(&targets, Some(&mut splices), &mut found);
        // Each splice was found before the batch's earlier nodes were linked. At each
        // level where the last batch node linked there was found in the same gap as this
        // entry, that node becomes the predecessor (`Followed`); only other writers'
        // nodes are left for linking to walk past.
        let mut followed = Followed::default();
        for (i, ((target, (_, _, value)), splice)) in
            targets.iter().zip(entries).zip(&mut splices).enumerate()
        {
            let found = splice.prev;
            followed.apply(splice);
            let place = self
                .index
                .as_ref()
                .zip(hashed.get(i))
                .map(|(points, &h)| points.place_hashed(h));
            let Some((node, height)) = self.link_new(&mut w, target, value, splice, place) else {
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
        // Runs of targets per lane only for an insert of more targets than lanes: with one
        // target per lane the loop is compiled without the runs' bookkeeping (which cost
        // the loop its inlined key comparison: 9% more instructions on batches of 20).
        let runs = splices.is_some() && targets.len() > LANES;
        match (targets.iter().all(|t| t.long), runs) {
            (true, true) => self.search_lanes::<true, true>(targets, splices, found),
            (true, false) => self.search_lanes::<true, false>(targets, splices, found),
            (false, true) => self.search_lanes::<false, true>(targets, splices, found),
            (false, false) => self.search_lanes::<false, false>(targets, splices, found),
        }
    }

    /// [`SkipList::search_interleaved`], its comparisons as `Node::search_cmp` says.
    ///
    /// Each lane searches a run of consecutive targets, one after another. When the
    /// splices are kept (an insert; the targets are then sorted), a lane starts each
    /// target after the first of its run from the splice of the one before (a finger
    /// search): levels whose successor there is not less than the new target keep that
    /// splice, and the search descends from the lowest level whose successor is less,
    /// instead of from the top. Between neighbours `g` entries apart that costs about
    /// `log g` levels instead of the list's height.
    #[inline(never)]
    fn search_lanes<const FROM_COMMON: bool, const RUNS: bool>(
        &self,
        targets: &[Target<'_>],
        mut splices: Option<&mut [Splice]>,
        found: &mut [u32],
    ) {
        let Some(head) = self.head() else {
            return;
        };
        let top = self.height.load(AtomicOrdering::Relaxed).max(1) - 1;
        let start = Search::from_top(head, top);
        let n = targets.len().min(found.len());
        if n == 0 {
            return;
        }
        // Lane `i` searches targets `i * per ..` up to the next lane's first; every lane
        // has at least one. Without runs, one target each (at most `LANES`).
        let per = if RUNS { n.div_ceil(n.min(LANES)) } else { 1 };
        let lanes = n.div_ceil(per);
        let mut searches = [start; LANES];
        let mut current: [usize; LANES] = std::array::from_fn(|i| i * per);
        let end = |lane: usize| ((lane + 1) * per).min(n);
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
                let t = if RUNS {
                    current.get(lane).copied().unwrap_or(usize::MAX)
                } else {
                    lane
                };
                let Some(s) = searches.get_mut(lane) else {
                    return;
                };
                let Some(target) = targets.get(t) else {
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
                if let Some(splice) = splices.as_deref_mut().and_then(|p| p.get_mut(t)) {
                    splice.set(s.level, s.x_index, next);
                }
                if s.level > 0 {
                    s.level -= 1;
                    let down = s.x.link(s.level);
                    if down != s.known_ge {
                        s.ahead = down;
                        s.ahead_at = self.prefetch_located(down);
                    }
                    at += 1;
                    continue;
                }
                if let Some(out) = found.get_mut(t) {
                    *out = next;
                }
                if !RUNS {
                    running -= 1;
                    running_lanes.swap(at, running);
                    continue;
                }
                // This target is done: on to the next of the lane's run, if any.
                let (t, from) = self.next_in_run::<FROM_COMMON>(
                    targets,
                    splices.as_deref_mut(),
                    found,
                    (t + 1, end(lane)),
                    top,
                );
                if let Some(c) = current.get_mut(lane) {
                    *c = t;
                }
                match from {
                    Some(from) => {
                        *s = from;
                        at += 1;
                    }
                    None => {
                        running -= 1;
                        running_lanes.swap(at, running);
                    }
                }
            }
        }
    }

    /// The next target of a lane's run `run` (from the target after the one just found,
    /// to the run's end) that needs a search, and where its search starts: from the top
    /// without splices, else from the splice before ([`SkipList::finger`]), past targets
    /// that splice settles alone. `None` when the run is done.
    #[inline(never)]
    fn next_in_run<const FROM_COMMON: bool>(
        &self,
        targets: &[Target<'_>],
        mut splices: Option<&mut [Splice]>,
        found: &mut [u32],
        run: (usize, usize),
        top: usize,
    ) -> (usize, Option<Search<'_>>) {
        let (mut t, end) = run;
        while t < end {
            let from = match splices.as_deref_mut() {
                Some(splices) => self.finger::<FROM_COMMON>(targets, splices, found, t, top),
                None => self.head().map(|head| Search::from_top(head, top)),
            };
            if from.is_some() {
                return (t, from);
            }
            // Settled by the splice before it alone.
            t += 1;
        }
        (t, None)
    }

    /// Starts the search for sorted target `t` from the splice of target `t - 1` (see
    /// [`SkipList::search_lanes`]): copies the levels of that splice whose successor is
    /// not less than the target into `splices[t]` and returns the search that fills in
    /// the levels below; `None` if none are left, the splice and `found[t]` then set
    /// from the previous ones alone.
    fn finger<'n, const FROM_COMMON: bool>(
        &'n self,
        targets: &[Target<'_>],
        splices: &mut [Splice],
        found: &mut [u32],
        t: usize,
        top: usize,
    ) -> Option<Search<'n>> {
        let full = Search::from_top(self.head()?, top);
        let (Some(target), Some(before)) = (targets.get(t), t.checked_sub(1)) else {
            return Some(full);
        };
        let Some(prev) = splices.get(before).cloned() else {
            return Some(full);
        };
        // The lowest level whose successor is not less than the target, and the last
        // successor found less (with how much of its key it shares with the target).
        let mut level = 0;
        let mut less: Option<(u32, Node<'n>, usize)> = None;
        let mut ge_common = 0;
        while level <= top {
            let next = prev.next.get(level).copied().unwrap_or(NIL);
            let Some(node) = self.node(next) else {
                break;
            };
            let (order, common) = node.search_cmp::<FROM_COMMON>(target, 0);
            if !order.is_lt() {
                ge_common = common;
                break;
            }
            less = Some((next, node, common));
            level += 1;
        }
        let splice = splices.get_mut(t)?;
        for l in level..MAX_HEIGHT {
            if let (Some(&p), Some(&n)) = (prev.prev.get(l), prev.next.get(l)) {
                splice.set(l, p, n);
            }
        }
        let Some((x_index, x, x_common)) = less else {
            // Every level keeps the splice: the target falls in the same gap.
            if let Some(out) = found.get_mut(t) {
                *out = prev.next.first().copied().unwrap_or(NIL);
            }
            return None;
        };
        Some(Search {
            x,
            x_index,
            level: level - 1,
            known_ge: if level <= top {
                prev.next.get(level).copied().unwrap_or(NIL)
            } else {
                NIL
            },
            x_common,
            ge_common,
            ahead: NIL,
            ahead_at: None,
        })
    }
}
