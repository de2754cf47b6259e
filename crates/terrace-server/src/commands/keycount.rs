//! The keyspace's size, kept with every write: DBSIZE and INFO keyspace read it in O(1).
//!
//! What is counted is what Redis's DBSIZE counts: the top-level records in the engine,
//! a key that has expired but is not yet deleted included (lazy expiry on read and the
//! active expiry cycle delete those, through the store's write, which counts them out),
//! and how many of those records carry an expiry (INFO keyspace's `expires`).
//!
//! Every write of a top-level record goes through [`KeyCounts::changes`] before it
//! commits: the batch says what each key becomes, and one multi-get of the keys it names
//! says what each was. The writer holds the stripes of those keys (every write command,
//! group and BOOM PUT does), so no other write of them lands between the read and the
//! commit, and the delta it adds after the commit is exact. The counts are rebuilt at open
//! with one walk of the top-level records, which deletes the keys that expired while the
//! server was down.
//!
//! The read costs a blind SET what a GET costs. A writer therefore first looks for the key
//! among the states recent writers left keys in (`key_states.rs`, bounded memory): a key
//! written again while remembered costs a hash lookup instead of an engine read.
//!
//! Owns: the counters, the remembered states and the delta of a batch. Must not touch: locking (the caller holds
//! the stripes) or committing.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use terrace::batch::BatchOp;
use terrace::{Db, ReadOptions, WriteBatch, WriteOptions};

use super::key_states::KeyStates;
use super::readers::Readers;
use super::Fail;
use crate::value::{expiry_of, keys};

/// Expired keys deleted at open per engine batch.
const PURGE_BATCH: usize = 1024;

/// Top-level records and those of them with an expiry.
#[derive(Default)]
pub(crate) struct KeyCounts {
    /// Whether the counts are kept (`keyspace_count`); when not, `keys` and `expiring`
    /// stay 0 and DBSIZE walks the keys.
    enabled: bool,
    keys: AtomicI64,
    expiring: AtomicI64,
    /// Keys deleted because they expired, since open (INFO's `expired_keys`).
    expired: AtomicU64,
    /// What recently written keys were left as, so that the next write of one reads
    /// nothing (`key_states.rs`).
    known: Option<KeyStates>,
}

/// What a batch changes in the counts, to add once it has committed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Delta {
    keys: i64,
    expiring: i64,
}

impl Delta {
    /// The delta of one top-level record going from `before` to `after` (`None`: absent;
    /// `Some(true)`: present with an expiry).
    pub(crate) fn of(before: Option<bool>, after: Option<bool>) -> Delta {
        let count = |s: Option<bool>| (i64::from(s.is_some()), i64::from(s == Some(true)));
        let (k0, e0) = count(before);
        let (k1, e1) = count(after);
        Delta {
            keys: k1 - k0,
            expiring: e1 - e0,
        }
    }
}

/// Whether a stored top-level record carries an expiry; one the server cannot decode
/// counts as having none (the write that replaces it must not fail for it).
pub(crate) fn has_expiry(record: &[u8]) -> bool {
    matches!(expiry_of(record), Ok(Some(_)))
}

impl KeyCounts {
    /// Counts the top-level records of `db`.
    #[cfg(test)]
    pub(crate) fn recount(db: &Db) -> terrace::Result<KeyCounts> {
        Self::walk(db, None, 0)
    }

    /// Counts that are not kept: writes read nothing for them.
    pub(crate) fn disabled() -> KeyCounts {
        KeyCounts::default()
    }

    /// Whether the counts are kept.
    pub(crate) fn enabled(&self) -> bool {
        self.enabled
    }

    /// Counts the top-level records of `db` at open, before any write, deleting those
    /// expired at `now_ms` as it goes (Redis does not load expired keys either).
    /// `known_bytes`: the memory for the states of recently written keys (0: none).
    pub(crate) fn open(
        db: &Db,
        now_ms: u64,
        opts: WriteOptions,
        known_bytes: u64,
    ) -> terrace::Result<KeyCounts> {
        Self::walk(db, Some((now_ms, opts)), known_bytes)
    }

    fn walk(
        db: &Db,
        purge: Option<(u64, WriteOptions)>,
        known_bytes: u64,
    ) -> terrace::Result<KeyCounts> {
        let end = keys::top_end();
        let opts = ReadOptions {
            upper_bound: Some(end.to_vec()),
            ..ReadOptions::default()
        };
        let mut it = db.iter(opts)?;
        it.seek_to_first()?;
        let (mut n, mut expiring) = (0i64, 0i64);
        let mut deletes = WriteBatch::new();
        let mut pending = 0;
        while it.valid() {
            let at = expiry_of(it.value()).ok().flatten();
            match purge {
                Some((now, opts)) if at.is_some_and(|at| at <= now) => {
                    deletes.delete(it.key());
                    pending += 1;
                    if pending == PURGE_BATCH {
                        db.write(std::mem::take(&mut deletes), opts)?;
                        pending = 0;
                    }
                }
                _ => {
                    n += 1;
                    expiring += i64::from(at.is_some());
                }
            }
            it.next()?;
        }
        if let (Some((_, opts)), true) = (purge, pending > 0) {
            db.write(deletes, opts)?;
        }
        Ok(KeyCounts {
            enabled: true,
            keys: AtomicI64::new(n),
            expiring: AtomicI64::new(expiring),
            expired: AtomicU64::new(0),
            known: KeyStates::with_bytes(known_bytes),
        })
    }

    /// What committing `batch` will change, read from `db` as it stands (the caller
    /// holds the stripes of every key the batch writes).
    ///
    /// # Errors
    /// A read error, or a range deletion in the batch (only FLUSHDB writes one, and it
    /// resets the counts instead).
    pub(crate) fn changes(
        &self,
        db: &Db,
        batch: &WriteBatch,
        readers: &Readers,
    ) -> Result<Delta, Fail> {
        if !self.enabled {
            return Ok(Delta::default());
        }
        let end = keys::top_end();
        // The last write of each top-level key in the batch, in batch order.
        let mut last: Vec<(&[u8], Option<bool>)> = Vec::new();
        for op in batch {
            match op? {
                BatchOp::Put { key, value } if key < end.as_slice() => {
                    last.push((key, Some(has_expiry(value))));
                }
                BatchOp::Delete { key } if key < end.as_slice() => last.push((key, None)),
                BatchOp::DeleteRange { .. } => {
                    return Err(Fail::err("a range deletion cannot be counted"));
                }
                BatchOp::Put { .. } | BatchOp::Delete { .. } => {}
            }
        }
        if last.is_empty() {
            return Ok(Delta::default());
        }
        // Each key hashed once for the remembered states: its slot and fingerprint serve
        // the dedup, the lookup and the update.
        let mut located: Vec<(usize, u64)> = match &self.known {
            Some(known) => last.iter().map(|w| known.locate(w.0)).collect(),
            None => Vec::new(),
        };
        if last.len() > 1 {
            if self.known.is_some() {
                dedup_located(&mut last, &mut located);
            } else {
                last = dedup_sorted(last);
            }
        }
        // Each key's state before the batch: known, or read (one multi-get of the rest).
        let mut before: Vec<Option<Option<bool>>> = match &self.known {
            Some(known) => known.get_located(&located),
            None => vec![None; last.len()],
        };
        let known: Vec<bool> = before.iter().map(Option::is_some).collect();
        let unknown: Vec<&[u8]> = last
            .iter()
            .zip(&before)
            .filter(|(_, b)| b.is_none())
            .map(|((k, _), _)| *k)
            .collect();
        if !unknown.is_empty() {
            // Shared with the reader threads if many: the caller holds the keys'
            // stripes, so every chunk reads the same state.
            let read = readers.read_split(&unknown, |keys| {
                Ok(db.multi_get_pinned(&ReadOptions::default(), keys)?)
            })?;
            let mut read = read.into_iter();
            for b in before.iter_mut().filter(|b| b.is_none()) {
                *b = read.next().map(|v| v.map(|v| has_expiry(v.as_ref())));
            }
        }
        let mut delta = Delta::default();
        for (i, (((_, after), before), known)) in last.iter().zip(before).zip(known).enumerate() {
            let before = before.ok_or_else(|| Fail::err("a key's state was not read"))?;
            delta.add(Delta::of(before, *after));
            // An overwrite that leaves a remembered state as it was need not record it.
            if !known || before != *after {
                if let (Some(states), Some(&at)) = (&self.known, located.get(i)) {
                    states.insert_located(at, *after);
                }
            }
        }
        Ok(delta)
    }

    /// The state a writer last left `engine_key` in, if remembered.
    pub(crate) fn known_state(&self, engine_key: &[u8]) -> Option<Option<bool>> {
        self.known.as_ref()?.get(engine_key)
    }

    /// Records the state a write leaves `engine_key` in (the caller holds its stripe).
    pub(crate) fn remember(&self, engine_key: &[u8], after: Option<bool>) {
        if let Some(known) = &self.known {
            known.insert(engine_key, after);
        }
    }

    /// Forgets every remembered state: a commit failed, so what it recorded may be wrong.
    pub(crate) fn forget_states(&self) {
        if let Some(known) = &self.known {
            known.clear();
        }
    }

    /// Adds a committed batch's delta.
    pub(crate) fn apply(&self, delta: Delta) {
        if !self.enabled {
            return;
        }
        if delta.keys != 0 {
            self.keys.fetch_add(delta.keys, Ordering::Relaxed);
        }
        if delta.expiring != 0 {
            self.expiring.fetch_add(delta.expiring, Ordering::Relaxed);
        }
    }

    /// Counts out a key with an expiry deleted because it expired.
    pub(crate) fn expired(&self) {
        self.apply(Delta::of(Some(true), None));
        // Kept either way: it costs no read.
        self.expired.fetch_add(1, Ordering::Relaxed);
    }

    /// Keys deleted because they expired, since open.
    pub(crate) fn expired_total(&self) -> u64 {
        self.expired.load(Ordering::Relaxed)
    }

    /// Forgets every key (FLUSHDB).
    pub(crate) fn reset(&self) {
        self.forget_states();
        self.keys.store(0, Ordering::Relaxed);
        self.expiring.store(0, Ordering::Relaxed);
    }

    /// The top-level records (0 when the counts are not kept).
    pub(crate) fn keys(&self) -> u64 {
        u64::try_from(self.keys.load(Ordering::Relaxed)).unwrap_or(0)
    }

    /// The top-level records with an expiry.
    pub(crate) fn expiring(&self) -> u64 {
        u64::try_from(self.expiring.load(Ordering::Relaxed)).unwrap_or(0)
    }
}

impl Delta {
    fn add(&mut self, other: Delta) {
        self.keys += other.keys;
        self.expiring += other.expiring;
    }
}

/// The batch's last write of each key, in key order (a stable sort: among writes of one
/// key the batch's last stays last).
fn dedup_sorted(last: Vec<(&[u8], Option<bool>)>) -> Vec<(&[u8], Option<bool>)> {
    let names: Vec<&[u8]> = last.iter().map(|w| w.0).collect();
    let order = terrace::key::sort_order(&names, |a, b| a.cmp(&b));
    let mut deduped: Vec<(&[u8], Option<bool>)> = Vec::with_capacity(last.len());
    for w in order.into_iter().filter_map(|i| last.get(i).copied()) {
        match deduped.last_mut() {
            Some(prev) if prev.0 == w.0 => *prev = w,
            _ => deduped.push(w),
        }
    }
    deduped
}

/// Keeps, in batch order, only the batch's last write of each key of `last`, and the
/// matching entries of `located` (each key's slot and fingerprint). Writes of one key
/// have the same slot and fingerprint, so sorting those words (a sort of integers, not of
/// keys) brings them together; keys are compared only where the words tie, so two keys
/// that share a slot and fingerprint are still told apart.
fn dedup_located(last: &mut Vec<(&[u8], Option<bool>)>, located: &mut Vec<(usize, u64)>) {
    let mut order: Vec<(usize, u64, usize)> = located
        .iter()
        .enumerate()
        .map(|(i, &(slot, print))| (slot, print, i))
        .collect();
    order.sort_unstable();
    let mut keep = vec![true; last.len()];
    for run in order.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
        // A run is in batch order: a write with a later one of the same key in it goes.
        for (j, &(_, _, i)) in run.iter().enumerate() {
            let key = last.get(i).map(|w| w.0);
            let later = run.get(j + 1..).unwrap_or_default();
            if later
                .iter()
                .any(|&(_, _, l)| last.get(l).map(|w| w.0) == key)
            {
                if let Some(k) = keep.get_mut(i) {
                    *k = false;
                }
            }
        }
    }
    let mut flags = keep.iter();
    last.retain(|_| flags.next().copied().unwrap_or(true));
    let mut flags = keep.iter();
    located.retain(|_| flags.next().copied().unwrap_or(true));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_of_each_transition() {
        let d = |keys, expiring| Delta { keys, expiring };
        assert_eq!(Delta::of(None, None), d(0, 0));
        assert_eq!(Delta::of(None, Some(false)), d(1, 0));
        assert_eq!(Delta::of(None, Some(true)), d(1, 1));
        assert_eq!(Delta::of(Some(false), Some(true)), d(0, 1));
        assert_eq!(Delta::of(Some(true), Some(false)), d(0, -1));
        assert_eq!(Delta::of(Some(true), None), d(-1, -1));
        assert_eq!(Delta::of(Some(false), None), d(-1, 0));
        assert_eq!(Delta::of(Some(true), Some(true)), d(0, 0));
    }

    proptest::proptest! {
        // Both dedups keep exactly the batch's last write of each key; the one by slot
        // words keeps batch order and tells apart keys whose slot and fingerprint tie
        // (here forced: few slots and fingerprints).
        #[test]
        fn dedups_keep_each_keys_last_write(
            writes in proptest::collection::vec((0u8..12, proptest::option::of(proptest::bool::ANY)), 0..60),
            slots in 1usize..4,
        ) {
            let names: Vec<Vec<u8>> = (0u8..12).map(|k| vec![b'k', k]).collect();
            let last: Vec<(&[u8], Option<bool>)> =
                writes.iter().map(|&(k, s)| (names[usize::from(k)].as_slice(), s)).collect();
            let mut want: std::collections::BTreeMap<&[u8], (usize, Option<bool>)> =
                std::collections::BTreeMap::new();
            for (i, w) in last.iter().enumerate() {
                want.insert(w.0, (i, w.1));
            }
            let sorted = dedup_sorted(last.clone());
            let want_sorted: Vec<(&[u8], Option<bool>)> =
                want.iter().map(|(k, &(_, s))| (*k, s)).collect();
            proptest::prop_assert_eq!(&sorted, &want_sorted);
            let mut by_words = last.clone();
            let mut located: Vec<(usize, u64)> = last
                .iter()
                .map(|w| (usize::from(w.0[1]) % slots, u64::from(w.0[1] % 2) << 2))
                .collect();
            dedup_located(&mut by_words, &mut located);
            let mut want_order: Vec<(usize, &[u8], Option<bool>)> =
                want.iter().map(|(k, &(i, s))| (i, *k, s)).collect();
            want_order.sort();
            let want_words: Vec<(&[u8], Option<bool>)> =
                want_order.into_iter().map(|(_, k, s)| (k, s)).collect();
            proptest::prop_assert_eq!(&by_words, &want_words);
            let want_located: Vec<(usize, u64)> = by_words
                .iter()
                .map(|w| (usize::from(w.0[1]) % slots, u64::from(w.0[1] % 2) << 2))
                .collect();
            proptest::prop_assert_eq!(located, want_located);
        }
    }
}
