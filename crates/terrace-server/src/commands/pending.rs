//! A group's writes not yet committed, and the reads and writes of [`Ctx`] that go
//! through them.
//!
//! Collection commands read and write only through the `Ctx` accessors below. Run on
//! their own they go straight to the store; run in a group (`run.rs`) their writes
//! gather in a [`Pending`] overlay that later commands of the group read through (their
//! own writes and those of the commands before them), and the group commits the overlay
//! as one engine batch. One batch for a whole group turns many small engine writes,
//! each a WAL append and a few memtable searches, into one append and one sorted
//! memtable insert whose searches overlap their cache misses; and a collection's
//! metadata, rewritten by every command, is written once per group.
//!
//! Owns: [`Pending`] and the accessors.
//! Must not touch: locking (the group's executor holds the stripes of every key its
//! commands name) or committing (the executor writes [`Pending::batch`]).

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::ops::{Bound, Range};

use bytes::Bytes;
use terrace::batch::BatchOp;
use terrace::WriteBatch;

use super::store::MemberCursor;
use super::{Ctx, Fail};
use crate::value::keys::{self, top};
use crate::value::Top;

/// Where an operation's key and value (none for a deletion) lie in its batch's bytes.
type Span = (Range<usize>, Option<Range<usize>>);

/// Writes of a group not yet committed: the last value of each engine key written
/// (`None`: deleted), the client keys written (for WATCH) and the lists pushed to (for
/// blocked clients), both told after the commit.
#[derive(Default)]
pub(crate) struct Pending {
    /// Keys and values are slices of the batches the commands wrote (see [`Pending::add`]).
    writes: BTreeMap<Bytes, Option<Bytes>>,
    written: Vec<Vec<u8>>,
    pushed: Vec<Vec<u8>>,
    /// A cursor per member prefix walked forwards, kept for the group: the engine holds
    /// the group's keys as they were when it began (their stripes are locked, their
    /// writes are here), so one iterator serves every walk, and a walk from near the
    /// last one's stopping point (a group's pops) goes on without a seek.
    iters: RefCell<HashMap<Vec<u8>, MemberCursor>>,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("writes", &self.writes.len())
            .field("written", &self.written.len())
            .field("pushed", &self.pushed.len())
            .finish_non_exhaustive()
    }
}

impl Pending {
    /// Whether nothing is written.
    pub(crate) fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }

    /// Adds the operations of `batch`, which writes `client_keys`. The batch's bytes
    /// become one shared buffer that the keys and values it writes are slices of: one
    /// allocation per command instead of two per operation.
    fn add<'k>(
        &mut self,
        batch: WriteBatch,
        client_keys: impl IntoIterator<Item = &'k [u8]>,
    ) -> Result<(), Fail> {
        let data = batch.data();
        // Where a slice of `data` lies in it (every key and value the batch yields is
        // one).
        let span = |part: &[u8]| {
            let start = (part.as_ptr() as usize).checked_sub(data.as_ptr() as usize)?;
            let end = start.checked_add(part.len())?;
            (end <= data.len()).then_some(start..end)
        };
        let mut ops: smallvec::SmallVec<[Span; 4]> = smallvec::SmallVec::new();
        for op in &batch {
            let (key, value) = match op? {
                BatchOp::Put { key, value } => (key, Some(value)),
                BatchOp::Delete { key } => (key, None),
                BatchOp::DeleteRange { .. } => {
                    return Err(Fail::err(
                        "a range deletion cannot run in a group of commands",
                    ));
                }
            };
            let key = span(key).ok_or_else(|| Fail::err("a batch key outside its batch"))?;
            let value = match value {
                Some(v) => {
                    Some(span(v).ok_or_else(|| Fail::err("a batch value outside its batch"))?)
                }
                None => None,
            };
            ops.push((key, value));
        }
        let shared = Bytes::from(batch.into_data());
        for (key, value) in ops {
            self.set(shared.slice(key), value.map(|v| shared.slice(v)));
        }
        for key in client_keys {
            push_distinct(&mut self.written, key);
        }
        Ok(())
    }

    /// Records `value` as the group's write of `key` (one search of the map).
    fn set(&mut self, key: Bytes, value: Option<Bytes>) {
        self.writes.insert(key, value);
    }

    /// The write of engine key `key` in this group: `None` if it has none, `Some(None)`
    /// if it deletes the key.
    fn get(&self, key: &[u8]) -> Option<Option<&Bytes>> {
        self.writes.get(key).map(Option::as_ref)
    }

    /// The writes from `from` (inclusive) to `end` (exclusive; `None`: no end).
    fn range<'a>(
        &'a self,
        from: &'a [u8],
        end: Option<&'a [u8]>,
    ) -> impl DoubleEndedIterator<Item = (&'a [u8], Option<&'a Bytes>)> {
        let upper = end.map_or(Bound::Unbounded, Bound::Excluded);
        self.writes
            .range::<[u8], _>((Bound::Included(from), upper))
            .map(|(k, v)| (k.as_ref(), v.as_ref()))
    }

    /// All the writes as one engine batch, in key order.
    pub(crate) fn batch(&self) -> WriteBatch {
        let bytes = self
            .writes
            .iter()
            .map(|(k, v)| 12 + k.len() + v.as_ref().map_or(0, Bytes::len))
            .sum();
        let mut batch = WriteBatch::with_capacity(bytes);
        for (k, v) in &self.writes {
            match v {
                Some(v) => batch.put(k, v),
                None => batch.delete(k),
            }
        }
        batch
    }

    /// The client keys written.
    pub(crate) fn written(&self) -> impl Iterator<Item = &[u8]> {
        self.written.iter().map(Vec::as_slice)
    }

    /// The lists pushed to.
    pub(crate) fn pushed(&self) -> impl Iterator<Item = &[u8]> {
        self.pushed.iter().map(Vec::as_slice)
    }
}

impl Ctx<'_> {
    /// The live top-level record of `key` (see `Store::get_top`).
    pub(crate) fn get_top(&self, key: &[u8]) -> Result<Option<Top>, Fail> {
        if let Some(write) = self.pending.as_deref().and_then(|p| p.get(&top(key))) {
            let Some(raw) = write else {
                return Ok(None);
            };
            let t = Top::decode(raw).map_err(|e| Fail::corrupt(key, e))?;
            return Ok(t
                .expire_at_ms()
                .is_none_or(|at| at > self.now_ms)
                .then_some(t));
        }
        self.engine.store.get_top(key, self.now_ms)
    }

    /// The value of the member record `engine_key`, if any.
    pub(crate) fn get_member(&self, engine_key: &[u8]) -> Result<Option<Bytes>, Fail> {
        match self.pending.as_deref().and_then(|p| p.get(engine_key)) {
            Some(write) => Ok(write.cloned()),
            None => self.engine.store.get_member(engine_key),
        }
    }

    /// Member records from `start` on while they start with `prefix` (see
    /// `Store::for_each_member`), this group's writes merged in.
    pub(crate) fn for_each_member(
        &self,
        prefix: &[u8],
        start: &[u8],
        mut visit: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), Fail> {
        let store = &self.engine.store;
        let Some(pending) = self.pending.as_deref() else {
            return store.for_each_member(prefix, start, visit);
        };
        let mut from = keys::MemberKeyBuf::new();
        from.extend_from_slice(prefix);
        from.extend_from_slice(start);
        let end = keys::prefix_end(prefix);
        let overlay = pending.range(&from, end.as_deref());
        // A walk inside another's visit finds the cache borrowed: it uses its own.
        let Ok(mut iters) = pending.iters.try_borrow_mut() else {
            let walk =
                |f: &mut dyn FnMut(&[u8], &[u8]) -> bool| store.for_each_member(prefix, start, f);
            return merge_walk(prefix.len(), overlay, |a, b| a < b, walk, &mut visit);
        };
        // Looked up before it is inserted: the map's key is copied only for a new prefix.
        if !iters.contains_key(prefix) {
            iters.insert(
                prefix.to_vec(),
                MemberCursor::new(store.member_iter(prefix)?, true),
            );
        }
        let Some(it) = iters.get_mut(prefix) else {
            return Err(Fail::err("a member cursor missing from its map"));
        };
        let walk = |f: &mut dyn FnMut(&[u8], &[u8]) -> bool| it.walk(prefix, start, f);
        merge_walk(prefix.len(), overlay, |a, b| a < b, walk, &mut visit)
    }

    /// As [`Ctx::for_each_member`], from the last record backwards.
    pub(crate) fn for_each_member_rev(
        &self,
        prefix: &[u8],
        below: Option<&[u8]>,
        mut visit: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), Fail> {
        let store = &self.engine.store;
        let Some(pending) = self.pending.as_deref() else {
            return store.for_each_member_rev(prefix, below, visit);
        };
        let end = keys::members_end(prefix, below);
        merge_walk(
            prefix.len(),
            pending.range(prefix, end.as_deref()).rev(),
            |a, b| a > b,
            |f| store.for_each_member_rev(prefix, below, f),
            &mut visit,
        )
    }

    /// Commits `batch`, which writes `keys` (see `Store::write`); in a group, adds it to
    /// the group's writes.
    pub(crate) fn write<'k>(
        &mut self,
        batch: WriteBatch,
        keys: impl IntoIterator<Item = &'k [u8]>,
    ) -> Result<(), Fail> {
        match self.pending.as_deref_mut() {
            Some(pending) => pending.add(batch, keys),
            None => self.engine.store.write(batch, keys),
        }
    }

    /// Stores the top-level record `t` under `key`.
    pub(crate) fn put_top(&mut self, key: &[u8], t: &Top) -> Result<(), Fail> {
        let mut batch = WriteBatch::new();
        super::store::put_top(&mut batch, key, t);
        self.write(batch, [key])
    }

    /// Wakes the clients blocked on `key`, added to: now, or after the group's
    /// commit (woken before it, they would look before the push is there).
    pub(crate) fn wake(&mut self, key: &[u8]) {
        match self.pending.as_deref_mut() {
            Some(pending) => push_distinct(&mut pending.pushed, key),
            None => self.engine.waiters.wake(key),
        }
    }
}

/// Adds `key` to `keys` unless it is the last one there: a group's commands on one key
/// (every command of a redis-benchmark collection test) record it once, not once each.
/// Both lists are told after the commit, where a key named twice is told twice for nothing.
fn push_distinct(keys: &mut Vec<Vec<u8>>, key: &[u8]) {
    if keys.last().map(Vec::as_slice) != Some(key) {
        keys.push(key.to_vec());
    }
}

/// Merges a group's writes under one prefix (`overlay`, in the walk's order) into the
/// engine's walk of the same members (`walk`), calling `visit` with each live member in
/// order until it returns false: a member the group wrote shows its new value, one it
/// deleted is skipped. `ahead(a, b)`: member `a` comes before member `b` in the walk.
fn merge_walk<'a>(
    prefix_len: usize,
    overlay: impl Iterator<Item = (&'a [u8], Option<&'a Bytes>)>,
    ahead: fn(&[u8], &[u8]) -> bool,
    walk: impl FnOnce(&mut dyn FnMut(&[u8], &[u8]) -> bool) -> Result<(), Fail>,
    visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
) -> Result<(), Fail> {
    let mut overlay = overlay
        .map(|(k, v)| (k.get(prefix_len..).unwrap_or_default(), v))
        .peekable();
    let mut stopped = false;
    walk(&mut |member, value| {
        while let Some(&(m, v)) = overlay.peek() {
            if !ahead(m, member) {
                break;
            }
            overlay.next();
            if v.is_some_and(|v| !visit(m, v)) {
                stopped = true;
                return false;
            }
        }
        let go_on = match overlay.peek() {
            Some(&(m, v)) if m == member => {
                overlay.next();
                v.is_none_or(|v| visit(member, v))
            }
            _ => visit(member, value),
        };
        stopped = !go_on;
        go_on
    })?;
    if !stopped {
        for (m, v) in overlay {
            if v.is_some_and(|v| !visit(m, v)) {
                break;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
