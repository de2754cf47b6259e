//! Inserting a sorted batch: the searches for all its keys run interleaved, one step of
//! each in turn, so that the processor has several of their cache misses in flight at
//! once instead of one (a search on a large memtable is a chain of dependent misses);
//! the nodes are then linked in key order, each walking past the nodes linked into its
//! splice since the search (the batch's own and other writers').
//!
//! Same concurrency rule as the skiplist: one writer slot is held throughout, other
//! writers may insert meanwhile, readers never wait, and each node is complete before the
//! `Release` swap that links it.

use std::sync::atomic::Ordering as AtomicOrdering;

use super::{Node, SkipList, Splice, Target, HEAD, NIL};

/// One entry of a batch: user key, trailer (sequence and type) and value.
pub(in crate::memtable) type SortedEntry<'a> = (&'a [u8], u64, &'a [u8]);

/// Searches run side by side: enough to keep the misses of several in flight.
const LANES: usize = 16;

/// Where one interleaved search stands.
struct Search<'n> {
    x: Node<'n>,
    x_index: u32,
    level: usize,
    /// The last node found not less than the target: no need to compare it again.
    known_ge: u32,
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
        // Each splice was found before the batch's earlier nodes were linked; where one
        // of them landed inside it, linking walks on past it (as past another writer's).
        for ((target, (_, _, value)), splice) in targets.iter().zip(entries).zip(&mut splices) {
            if self.link_new(&mut w, target, value, splice, None).is_none() {
                return false;
            }
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

    /// The search of [`SkipList::search_ge`] for each of `targets`, run in lock step:
    /// fills `splices` (if given) and `found` (the first node not less than each target).
    fn search_interleaved(
        &self,
        targets: &[Target<'_>],
        mut splices: Option<&mut [Splice]>,
        found: &mut [u32],
    ) {
        let Some(head) = self.head() else {
            return;
        };
        let top = self.height.load(AtomicOrdering::Relaxed).max(1) - 1;
        let mut searches: Vec<Option<Search<'_>>> = targets
            .iter()
            .map(|_| {
                Some(Search {
                    x: head,
                    x_index: HEAD,
                    level: top,
                    known_ge: NIL,
                })
            })
            .collect();
        let mut running = searches.len();
        while running > 0 {
            for (i, ((lane, target), out)) in searches
                .iter_mut()
                .zip(targets)
                .zip(found.iter_mut())
                .enumerate()
            {
                let Some(s) = lane else {
                    continue;
                };
                let next = s.x.link(s.level);
                if next != s.known_ge {
                    if let Some(n) = self.node(next) {
                        if n.cmp_to(target).is_lt() {
                            s.x = n;
                            s.x_index = next;
                            continue;
                        }
                    }
                }
                s.known_ge = next;
                if let Some(splice) = splices.as_deref_mut().and_then(|p| p.get_mut(i)) {
                    splice.set(s.level, s.x_index, next);
                }
                if s.level == 0 {
                    *out = next;
                    *lane = None;
                    running -= 1;
                } else {
                    s.level -= 1;
                }
            }
        }
    }
}
