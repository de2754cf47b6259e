//! The compaction stream: decides, entry by entry, what a compaction keeps, independent
//! of files.
//!
//! Owns: the keep/drop rules of LevelDB and RocksDB (snapshot stripes, range-tombstone
//! coverage, bottommost deletion drops and sequence zeroing, compaction filters) and the
//! choice of range tombstones to write out. See docs/techniques/leveled-compaction.md.
//! Must not touch: tables; the caller merges the inputs, writes what comes out and cuts
//! output files (only between user keys).
//! Concurrency: a [`CompactionStream`] has one owner; it borrows its input.
//!
//! Snapshot stripes: with snapshots `s1 < s2 < ... < sn`, stripe 0 holds sequence numbers
//! `<= s1`, stripe `i` those in `(si, s(i+1)]` and stripe `n` those above `sn`. A version is
//! visible to snapshot `s` if its sequence number is `<= s`, so two versions of a key in
//! one stripe are told apart by no reader: only the newer one is kept.

use crate::compaction::filter::{CompactionFilter, FilterDecision};
use crate::compaction::task::CompactionStats;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{self, SeqNo, ValueType, MAX_SEQ};
use crate::range_del::{FragmentedTombstones, RangeTombstone};

/// How a compaction treats its entries.
#[derive(Clone, Copy, Default)]
pub struct StreamConfig<'a> {
    /// Every live snapshot's sequence number (any order; sorted internally).
    pub snapshots: &'a [SeqNo],
    /// No older data for these keys exists below the output level.
    pub bottommost: bool,
    /// The compaction filter, if any.
    pub filter: Option<&'a dyn CompactionFilter>,
    /// The output level, passed to the filter.
    pub output_level: usize,
    /// First user key to process (inclusive); `None` starts at the first entry.
    pub lower_bound: Option<&'a [u8]>,
    /// First user key not to process (exclusive); `None` runs to the end.
    pub upper_bound: Option<&'a [u8]>,
}

/// What a stream did with its input.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamCounters {
    /// Point entries read.
    pub input_entries: u64,
    /// Key and value bytes read.
    pub input_bytes: u64,
    /// Entries returned.
    pub output_entries: u64,
    /// Key and value bytes returned.
    pub output_bytes: u64,
    /// Dropped: an older version in the same snapshot stripe as a newer one.
    pub dropped_shadowed: u64,
    /// Dropped: covered by a newer range tombstone in the same stripe.
    pub dropped_range_deleted: u64,
    /// Dropped: deletions (and filter removals) no reader needs at the bottommost level.
    pub dropped_deletions: u64,
    /// Values the filter removed.
    pub filter_removed: u64,
    /// Values the filter changed.
    pub filter_changed: u64,
}

impl StreamCounters {
    /// Adds these counters to a compaction's stats (all but the elapsed time).
    pub fn add_to(&self, stats: &mut CompactionStats) {
        stats.input_entries += self.input_entries;
        stats.input_bytes += self.input_bytes;
        stats.output_entries += self.output_entries;
        stats.output_bytes += self.output_bytes;
        stats.dropped_entries +=
            self.dropped_shadowed + self.dropped_range_deleted + self.dropped_deletions;
        stats.filtered_entries += self.filter_removed + self.filter_changed;
    }
}

/// Sorted, deduplicated snapshots and the stripe arithmetic on them.
#[derive(Debug, Clone)]
struct Stripes(Vec<SeqNo>);

impl Stripes {
    fn new(snapshots: &[SeqNo]) -> Self {
        let mut s = snapshots.to_vec();
        s.sort_unstable();
        s.dedup();
        Stripes(s)
    }
    /// 0 for sequence numbers visible to every snapshot, `len` above the newest.
    fn of(&self, seq: SeqNo) -> usize {
        self.0.partition_point(|s| *s < seq)
    }
    /// The stripe no snapshot can see.
    fn top(&self) -> usize {
        self.0.len()
    }
}

/// Produces the entries a compaction keeps, in internal-key order.
///
/// Rules, applied to the versions of each user key from newest to oldest:
/// 1. of the versions in one snapshot stripe only the newest is kept;
/// 2. a version covered by a newer range tombstone of the same stripe is dropped;
/// 3. the filter sees the newest value of the top stripe (no snapshot sees it); `Remove`
///    turns it into a deletion, `ChangeValue` replaces the value;
/// 4. at the bottommost level a deletion in stripe 0 is dropped (rule 1 already drops
///    the older versions it hid);
/// 5. at the bottommost level a kept value in stripe 0 that no input range tombstone
///    covers gets sequence number 0, as in RocksDB: every reader sees it, so its number
///    carries nothing, and zeros compress well.
///
/// Range-deletion entries in the point input are skipped: tombstones travel in the
/// `tombstones` argument, and [`tombstones_to_keep`] says which to write out.
pub struct CompactionStream<'a> {
    input: &'a mut dyn InternalIterator,
    tombstones: &'a FragmentedTombstones,
    stripes: Stripes,
    config: StreamConfig<'a>,
    started: bool,
    /// The user key of the last entry decided on (valid while `has_current`); a buffer
    /// reused from key to key.
    current_key: Vec<u8>,
    has_current: bool,
    last_stripe: usize,
    counters: StreamCounters,
    /// The last emitted entry's internal key, rewritten in place entry after entry.
    out_key: Vec<u8>,
    /// The last emitted entry's value when the filter changed it.
    out_value: Vec<u8>,
    /// Whether the last emitted value is `out_value` rather than the input's own.
    value_changed: bool,
    /// The input still sits on the last emitted entry (its value may be lent out).
    advance: bool,
}

impl<'a> CompactionStream<'a> {
    /// A stream over `input` (merged, in internal-key order) with the inputs' range
    /// `tombstones` (built with `max_seq = MAX_SEQ`). The input is positioned on the
    /// first call to [`CompactionStream::next_output`].
    pub fn new(
        input: &'a mut dyn InternalIterator,
        tombstones: &'a FragmentedTombstones,
        config: StreamConfig<'a>,
    ) -> Self {
        CompactionStream {
            input,
            tombstones,
            stripes: Stripes::new(config.snapshots),
            config,
            started: false,
            current_key: Vec::new(),
            has_current: false,
            last_stripe: 0,
            counters: StreamCounters::default(),
            out_key: Vec::new(),
            out_value: Vec::new(),
            value_changed: false,
            advance: false,
        }
    }

    /// What the stream has done so far.
    pub fn counters(&self) -> StreamCounters {
        self.counters
    }

    /// The next entry to write, as `(internal key, value)`, or `None` at the end.
    ///
    /// # Errors
    /// Errors of the input iterator, and `Error::Corruption` for an input key that is
    /// not an internal key.
    pub fn next_output(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        Ok(self.next_entry()?.map(|(k, v)| (k.to_vec(), v.to_vec())))
    }

    /// [`CompactionStream::next_output`] without copies: the entry is lent until the next
    /// call (the key from a buffer the stream reuses, the value from the input itself
    /// unless the filter changed it).
    ///
    /// # Errors
    /// As [`CompactionStream::next_output`].
    pub fn next_entry(&mut self) -> Result<Option<(&[u8], &[u8])>> {
        if !self.started {
            self.started = true;
            match self.config.lower_bound {
                Some(lo) => self.input.seek(&key::seek_key(lo, MAX_SEQ))?,
                None => self.input.seek_to_first()?,
            }
        }
        if self.advance {
            self.advance = false;
            self.input.next()?;
        }
        while self.input.valid() {
            match self.decide()? {
                Step::End => break,
                Step::Skip => self.input.next()?,
                Step::Emit => {
                    self.advance = true;
                    let value: &[u8] = if self.value_changed {
                        &self.out_value
                    } else {
                        self.input.value()
                    };
                    self.counters.output_entries += 1;
                    self.counters.output_bytes += (self.out_key.len() + value.len()) as u64;
                    return Ok(Some((self.out_key.as_slice(), value)));
                }
            }
        }
        Ok(None)
    }

    /// Applies the rules to the current input entry.
    fn decide(&mut self) -> Result<Step> {
        let ikey = self.input.key();
        let parsed = key::try_parse(ikey)
            .map_err(|r| Error::corruption("<compaction input>", 0, r.to_string()))?;
        let uk = parsed.user_key;
        if self.config.upper_bound.is_some_and(|hi| uk >= hi) {
            return Ok(Step::End);
        }
        if parsed.kind == ValueType::RangeDeletion {
            return Ok(Step::Skip);
        }
        let value = self.input.value();
        self.counters.input_entries += 1;
        self.counters.input_bytes += (ikey.len() + value.len()) as u64;

        let stripe = self.stripes.of(parsed.seq);
        if self.has_current && self.current_key.as_slice() == uk {
            if stripe == self.last_stripe {
                self.counters.dropped_shadowed += 1;
                return Ok(Step::Skip);
            }
        } else {
            self.current_key.clear();
            self.current_key.extend_from_slice(uk);
            self.has_current = true;
        }
        self.last_stripe = stripe;

        if self.covered_in_stripe(uk, parsed.seq, stripe) {
            self.counters.dropped_range_deleted += 1;
            return Ok(Step::Skip);
        }

        let mut kind = parsed.kind;
        let mut new_value = None;
        if let (ValueType::Value, Some(filter)) = (kind, self.config.filter) {
            if stripe == self.stripes.top() {
                match filter.filter(self.config.output_level, uk, value) {
                    FilterDecision::Keep => {}
                    FilterDecision::Remove => {
                        self.counters.filter_removed += 1;
                        kind = ValueType::Deletion;
                        new_value = Some(Vec::new());
                    }
                    FilterDecision::ChangeValue(v) => {
                        self.counters.filter_changed += 1;
                        new_value = Some(v);
                    }
                }
            }
        }

        let oldest = stripe == 0 && self.config.bottommost;
        if kind == ValueType::Deletion && oldest {
            self.counters.dropped_deletions += 1;
            return Ok(Step::Skip);
        }
        let seq = if kind == ValueType::Value && oldest && self.tombstones.max_covering_seq(uk) == 0
        {
            0
        } else {
            parsed.seq
        };
        self.value_changed = new_value.is_some();
        if let Some(v) = new_value {
            self.out_value = v;
        }
        self.out_key.clear();
        key::append_internal_key(&mut self.out_key, uk, seq, kind);
        Ok(Step::Emit)
    }

    /// True if a tombstone newer than `seq` and in the same stripe covers `user_key`.
    fn covered_in_stripe(&self, user_key: &[u8], seq: SeqNo, stripe: usize) -> bool {
        self.tombstones.fragment_for(user_key).is_some_and(|f| {
            // The oldest covering tombstone newer than `seq` has the lowest stripe.
            f.seqs
                .iter()
                .rev()
                .find(|t| **t > seq)
                .is_some_and(|t| self.stripes.of(*t) == stripe)
        })
    }
}

/// What to do with one input entry.
enum Step {
    /// Return it (possibly rewritten: the key in `out_key`, a changed value in
    /// `out_value`).
    Emit,
    /// Drop it and go on.
    Skip,
    /// The upper bound is reached.
    End,
}

/// The range tombstones a compaction writes out, before clipping each output file's share
/// with [`FragmentedTombstones::clipped`]. Per fragment, of the tombstones in one snapshot
/// stripe only the newest is kept (it hides everything the older one did); at the
/// bottommost level those in stripe 0 are dropped, since the stream already dropped what
/// they covered and nothing older lies below.
pub fn tombstones_to_keep(
    tombstones: &FragmentedTombstones,
    snapshots: &[SeqNo],
    bottommost: bool,
) -> FragmentedTombstones {
    let stripes = Stripes::new(snapshots);
    let mut keep = Vec::new();
    for f in tombstones.fragments() {
        let mut last_stripe = None;
        for &seq in &f.seqs {
            let stripe = stripes.of(seq);
            if last_stripe == Some(stripe) {
                continue;
            }
            last_stripe = Some(stripe);
            if bottommost && stripe == 0 {
                continue;
            }
            keep.push(RangeTombstone {
                start: f.start.clone(),
                end: f.end.clone(),
                seq,
            });
        }
    }
    FragmentedTombstones::new(&keep, MAX_SEQ)
}

#[cfg(test)]
mod tests;
