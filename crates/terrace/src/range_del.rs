//! Range tombstones: `delete_range(start, end)` records, and the fragmented view that
//! answers "which tombstones cover this key" for reads and compactions.
//!
//! Owns: [`RangeTombstone`] and [`FragmentedTombstones`].
//! Must not touch: storage; tables and memtables hand their tombstones in.
//! Concurrency: immutable after construction, shared freely.

use crate::key::SeqNo;

/// A deletion of every user key in `[start, end)` written at `seq`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct RangeTombstone {
    /// First deleted user key.
    pub start: Vec<u8>,
    /// First user key after the range (exclusive).
    pub end: Vec<u8>,
    /// Sequence number of the deletion.
    pub seq: SeqNo,
}

impl RangeTombstone {
    /// True if the tombstone's range contains `user_key`.
    pub fn contains(&self, user_key: &[u8]) -> bool {
        self.start.as_slice() <= user_key && user_key < self.end.as_slice()
    }
}

/// A run of user keys `[start, end)` covered by the same set of tombstones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fragment {
    /// First user key of the run.
    pub start: Vec<u8>,
    /// First user key after the run.
    pub end: Vec<u8>,
    /// Sequence numbers of the covering tombstones, newest first.
    pub seqs: Vec<SeqNo>,
}

/// Tombstones cut into non-overlapping fragments, sorted by start key.
#[derive(Debug, Clone, Default)]
pub struct FragmentedTombstones {
    fragments: Vec<Fragment>,
}

impl FragmentedTombstones {
    /// Fragments `tombstones`, keeping only those with `seq <= max_seq` (a snapshot).
    /// Empty ranges (`start >= end`) are ignored.
    pub fn new(tombstones: &[RangeTombstone], max_seq: SeqNo) -> Self {
        let live: Vec<&RangeTombstone> = tombstones
            .iter()
            .filter(|t| t.seq <= max_seq && t.start < t.end)
            .collect();
        if live.is_empty() {
            return FragmentedTombstones::default();
        }
        let mut bounds: Vec<&[u8]> = live
            .iter()
            .flat_map(|t| [t.start.as_slice(), t.end.as_slice()])
            .collect();
        bounds.sort_unstable();
        bounds.dedup();
        let mut seqs: Vec<Vec<SeqNo>> = vec![Vec::new(); bounds.len().saturating_sub(1)];
        for t in &live {
            let from = bounds.partition_point(|b| *b < t.start.as_slice());
            let to = bounds.partition_point(|b| *b < t.end.as_slice());
            for s in seqs.iter_mut().take(to).skip(from) {
                s.push(t.seq);
            }
        }
        let mut fragments = Vec::new();
        for (i, mut s) in seqs.into_iter().enumerate() {
            if s.is_empty() {
                continue;
            }
            s.sort_unstable_by(|a, b| b.cmp(a));
            s.dedup();
            fragments.push(Fragment {
                start: bounds[i].to_vec(),
                end: bounds[i + 1].to_vec(),
                seqs: s,
            });
        }
        FragmentedTombstones { fragments }
    }

    /// True if there are no tombstones.
    pub fn is_empty(&self) -> bool {
        self.fragments.is_empty()
    }

    /// The fragments, sorted by start key.
    pub fn fragments(&self) -> &[Fragment] {
        &self.fragments
    }

    /// The fragment containing `user_key`, if any.
    pub fn fragment_for(&self, user_key: &[u8]) -> Option<&Fragment> {
        let i = self
            .fragments
            .partition_point(|f| f.end.as_slice() <= user_key);
        self.fragments
            .get(i)
            .filter(|f| f.start.as_slice() <= user_key)
    }

    /// The newest sequence number of a tombstone covering `user_key`, or 0.
    pub fn max_covering_seq(&self, user_key: &[u8]) -> SeqNo {
        self.fragment_for(user_key)
            .and_then(|f| f.seqs.first().copied())
            .unwrap_or(0)
    }

    /// True if an entry of `user_key` written at `seq` is deleted by a newer tombstone.
    pub fn covers(&self, user_key: &[u8], seq: SeqNo) -> bool {
        self.max_covering_seq(user_key) > seq
    }

    /// The tombstones clipped to `[lower, upper)` (either bound optional), one per
    /// fragment and sequence number: what a table covering that range must store.
    pub fn clipped(&self, lower: Option<&[u8]>, upper: Option<&[u8]>) -> Vec<RangeTombstone> {
        let mut out = Vec::new();
        for f in &self.fragments {
            let start = match lower {
                Some(l) if l > f.start.as_slice() => l,
                _ => f.start.as_slice(),
            };
            let end = match upper {
                Some(u) if u < f.end.as_slice() => u,
                _ => f.end.as_slice(),
            };
            if start >= end {
                continue;
            }
            for &seq in &f.seqs {
                out.push(RangeTombstone {
                    start: start.to_vec(),
                    end: end.to_vec(),
                    seq,
                });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;
