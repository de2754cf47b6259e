//! The keyspace on the engine: typed values with expiry, per-key write locks, WATCH
//! bookkeeping and ordered iteration.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use bytes::{Buf, Bytes};
use parking_lot::{Mutex, MutexGuard, RwLock};
use terrace::{Db, DbIterator, ReadOptions, WriteBatch, WriteOptions};

use super::keycount::{has_expiry, Delta, KeyCounts};
use super::readers::Readers;
use super::Fail;
use crate::value::keys::{self, top};
use crate::value::{split_header, StoredValue, Top, ValueHeader};

/// `clear` deletes the keys below this with one range tombstone and those at or above it
/// one by one.
const CLEAR_FENCE: [u8; 16] = [0xff; 16];

/// One write of a batch: a put (`Some`) or a delete (`None`).
pub(crate) type Op = (Vec<u8>, Option<StoredValue>);

/// The bookkeeping record of the highest collection version that may have been used.
const VERSION_CEILING: &[u8] = b"version-ceiling";

/// Number of key-hash stripes serialising read-modify-write commands.
pub(crate) const STRIPES: usize = 1024;

/// The engine plus what commands need around it. `Send + Sync`.
pub(crate) struct Store {
    pub(crate) db: Db,
    write_opts: WriteOptions,
    stripes: Box<[Mutex<()>]>,
    /// Commands hold it shared; EXEC and FLUSHDB hold it exclusively.
    pub(crate) exclusive: RwLock<()>,
    watches: Watches,
    versions: Versions,
    /// The keyspace's size, kept with every write (`keycount`).
    pub(crate) counts: KeyCounts,
    /// Threads that help read a large batch of keys (`readers`), also lent to the engine
    /// for large memtable inserts.
    pub(crate) readers: Arc<Readers>,
}

/// Hands out collection versions: increasing across restarts, even if the clock goes
/// back, because the highest one that may be handed out is recorded first.
struct Versions {
    next: Mutex<(u64, u64)>,
}

/// How many versions one recorded ceiling covers.
const VERSION_BLOCK: u64 = 1 << 20;

/// Which clients watch which keys; a write to a watched key marks its watchers dirty.
#[derive(Default)]
struct Watches {
    count: AtomicUsize,
    map: Mutex<HashMap<Vec<u8>, Vec<Weak<AtomicBool>>>>,
}

/// The hash that picks a key's stripe, several times cheaper per call than the standard
/// library's SipHash. Fixed seeds are enough: keys that share a stripe only wait for each
/// other's writes (a shard's committer runs its groups one at a time anyway).
static STRIPE_HASH: ahash::RandomState = ahash::RandomState::with_seeds(
    0x243f_6a88_85a3_08d3,
    0x1319_8a2e_0370_7344,
    0xa409_3822_299f_31d0,
    0x082e_fa98_ec4e_6c89,
);

/// The stripe serialising writes of `key`.
pub(crate) fn stripe_of(key: &[u8]) -> usize {
    (STRIPE_HASH.hash_one(key) as usize) % STRIPES
}

impl Store {
    /// The store over `db`, whose keys it counts first (deleting those that expired).
    /// `count_keys`: keep the keyspace count (`keycount`), remembering the states of
    /// recently written keys in at most `known_bytes`. `readers`: threads that help read a
    /// large batch of keys.
    pub(crate) fn new(
        db: Db,
        sync_writes: bool,
        count_keys: bool,
        known_bytes: u64,
        readers: Arc<Readers>,
    ) -> terrace::Result<Store> {
        let write_opts = WriteOptions {
            sync: sync_writes,
            ..WriteOptions::default()
        };
        let counts = if count_keys {
            KeyCounts::open(&db, crate::value::now_ms(), write_opts, known_bytes)?
        } else {
            KeyCounts::disabled()
        };
        Ok(Store {
            db,
            write_opts,
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            exclusive: RwLock::new(()),
            watches: Watches::default(),
            versions: Versions {
                next: Mutex::new((0, 0)),
            },
            counts,
            readers,
        })
    }

    /// A version for a new collection, above every version handed out before (in this
    /// run or an earlier one: the ceiling is recorded before versions below it are used).
    pub(crate) fn new_version(&self) -> Result<u64, Fail> {
        let mut v = self.versions.next.lock();
        let (next, ceiling) = &mut *v;
        if *next >= *ceiling {
            let recorded = match self.db.get(&keys::bookkeeping(VERSION_CEILING))? {
                Some(b) => b
                    .as_slice()
                    .try_into()
                    .map(u64::from_be_bytes)
                    .map_err(|_| Fail::err("the recorded collection version is damaged"))?,
                None => 0,
            };
            let clock = u64::try_from(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_micros()),
            )
            .unwrap_or(u64::MAX / 2);
            *next = (*next).max(recorded).max(clock);
            let new_ceiling = *next + VERSION_BLOCK;
            let mut b = WriteBatch::new();
            b.put(
                &keys::bookkeeping(VERSION_CEILING),
                &new_ceiling.to_be_bytes(),
            );
            self.db.write(b, self.write_opts)?;
            *ceiling = new_ceiling;
        }
        *next += 1;
        Ok(*next)
    }

    /// Locks the stripes of `keys` in a fixed order (no deadlock between commands).
    pub(crate) fn lock_keys<'a>(
        &'a self,
        keys: impl Iterator<Item = &'a [u8]>,
    ) -> Vec<MutexGuard<'a, ()>> {
        let mut idx: Vec<usize> = keys.map(stripe_of).collect();
        idx.sort_unstable();
        idx.dedup();
        idx.into_iter()
            .filter_map(|i| self.stripes.get(i).map(Mutex::lock))
            .collect()
    }

    /// Stripe `i`'s lock, waiting for it.
    pub(crate) fn lock_stripe(&self, i: usize) -> Option<MutexGuard<'_, ()>> {
        self.stripes.get(i).map(Mutex::lock)
    }

    /// The live value of `key` at `now_ms`; an expired value reads as absent and is
    /// deleted if its stripe is free.
    pub(crate) fn get(&self, key: &[u8], now_ms: u64) -> Result<Option<StoredValue>, Fail> {
        Ok(self
            .get_shared(key, now_ms)?
            .map(|(expire_at_ms, data)| StoredValue {
                expire_at_ms,
                data: data.to_vec(),
            }))
    }

    /// As [`Store::get`], the payload shared with the engine's memtable or block cache
    /// instead of copied, with its expiry.
    pub(crate) fn get_shared(
        &self,
        key: &[u8],
        now_ms: u64,
    ) -> Result<Option<(Option<u64>, Bytes)>, Fail> {
        let Some(raw) = self.db.get_pinned(&ReadOptions::default(), &top(key))? else {
            return Ok(None);
        };
        let raw = raw.into_bytes();
        let (expire_at_ms, start) = split_header(&raw).map_err(|e| Fail::corrupt(key, e))?;
        if expire_at_ms.is_none_or(|at| at > now_ms) {
            return Ok(Some((expire_at_ms, raw.slice(start.min(raw.len())..))));
        }
        self.expire_lazily(key, now_ms)?;
        Ok(None)
    }

    /// [`Store::get_shared`] of each of `keys` (payloads only), read at one point in time.
    pub(crate) fn get_many_shared(
        &self,
        keys: &[&[u8]],
        now_ms: u64,
    ) -> Result<Vec<Option<Bytes>>, Fail> {
        self.get_many_shared_at(keys, now_ms, &ReadOptions::default())
    }

    /// [`Store::get_many_shared`] with `opts` (a snapshot's, say).
    pub(crate) fn get_many_shared_at(
        &self,
        keys: &[&[u8]],
        now_ms: u64,
        opts: &ReadOptions,
    ) -> Result<Vec<Option<Bytes>>, Fail> {
        let engine_keys: Vec<std::borrow::Cow<'_, [u8]>> = keys.iter().map(|k| top(k)).collect();
        let engine_keys: Vec<&[u8]> = engine_keys.iter().map(AsRef::as_ref).collect();
        let raw = self.db.multi_get_pinned(opts, &engine_keys)?;
        let mut out = Vec::with_capacity(raw.len());
        for (key, raw) in keys.iter().zip(raw) {
            let Some(raw) = raw else {
                out.push(None);
                continue;
            };
            let mut raw = raw.into_bytes();
            let (expire_at_ms, start) = split_header(&raw).map_err(|e| Fail::corrupt(key, e))?;
            if expire_at_ms.is_none_or(|at| at > now_ms) {
                // In place: a slice would be a clone and a drop, two atomic updates.
                raw.advance(start.min(raw.len()));
                out.push(Some(raw));
            } else {
                self.expire_lazily(key, now_ms)?;
                out.push(None);
            }
        }
        Ok(out)
    }

    /// Deletes `key`, read as expired at `now_ms`, if it still is and its stripe is free;
    /// whether it did.
    pub(crate) fn expire_lazily(&self, key: &[u8], now_ms: u64) -> Result<bool, Fail> {
        // A command already holding this stripe overwrites or skips the key.
        if let Some(_guard) = self.stripes.get(stripe_of(key)).and_then(Mutex::try_lock) {
            if let Some(raw) = self.db.get(&top(key))? {
                if Top::decode(&raw).is_ok_and(|v| v.expire_at_ms().is_some_and(|at| at <= now_ms))
                {
                    if let Err(e) = self.db.write(single_delete(key), self.write_opts) {
                        self.counts.forget_states();
                        return Err(e.into());
                    }
                    self.counts.remember(&top(key), None);
                    self.counts.expired();
                    self.written([key]);
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// The live top-level record of `key` (a string or a collection's metadata) at
    /// `now_ms`; an expired one reads as absent and is deleted if its stripe is free.
    pub(crate) fn get_top(&self, key: &[u8], now_ms: u64) -> Result<Option<Top>, Fail> {
        let Some(raw) = self.db.get_pinned(&ReadOptions::default(), &top(key))? else {
            return Ok(None);
        };
        let t = Top::decode(&raw).map_err(|e| Fail::corrupt(key, e))?;
        if t.expire_at_ms().is_none_or(|at| at > now_ms) {
            return Ok(Some(t));
        }
        self.expire_lazily(key, now_ms)?;
        Ok(None)
    }

    /// The value of the member record `engine_key` (see `value::keys`), if any.
    pub(crate) fn get_member(&self, engine_key: &[u8]) -> Result<Option<Bytes>, Fail> {
        Ok(self
            .db
            .get_pinned(&ReadOptions::default(), engine_key)?
            .map(|v| v.into_bytes()))
    }

    /// Member records from `start` on while they start with `prefix`, calling `visit`
    /// with each one's member (the key past `prefix`) and value until it returns false.
    pub(crate) fn for_each_member(
        &self,
        prefix: &[u8],
        start: &[u8],
        visit: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), Fail> {
        MemberCursor::new(self.member_iter(prefix)?, false).walk(prefix, start, visit)
    }

    /// An iterator over the member records under `prefix`, for a [`MemberCursor`].
    pub(crate) fn member_iter(&self, prefix: &[u8]) -> Result<DbIterator, Fail> {
        let opts = ReadOptions {
            upper_bound: keys::prefix_end(prefix),
            ..ReadOptions::default()
        };
        Ok(self.db.iter(opts)?)
    }

    /// As [`Store::for_each_member`], from the last record backwards: the last whose
    /// bytes after `prefix` sort before `below`, or the last of all if `None`.
    pub(crate) fn for_each_member_rev(
        &self,
        prefix: &[u8],
        below: Option<&[u8]>,
        mut visit: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), Fail> {
        let opts = ReadOptions {
            lower_bound: Some(prefix.to_vec()),
            upper_bound: keys::members_end(prefix, below),
            ..ReadOptions::default()
        };
        let mut it = self.db.iter(opts)?;
        it.seek_to_last()?;
        while it.valid() {
            let Some(member) = it.key().strip_prefix(prefix) else {
                break;
            };
            if !visit(member, it.value()) {
                break;
            }
            it.prev()?;
        }
        Ok(())
    }

    /// Stores `value` under `key`.
    pub(crate) fn put(&self, key: &[u8], value: &StoredValue) -> Result<(), Fail> {
        self.put_data(key, value.expire_at_ms, &value.data)
    }

    /// Stores the string `data`, expiring at `expire_at_ms`, under `key`.
    pub(crate) fn put_data(
        &self,
        key: &[u8],
        expire_at_ms: Option<u64>,
        data: &[u8],
    ) -> Result<(), Fail> {
        let mut batch = WriteBatch::with_capacity(20 + key.len() + data.len());
        put_value(&mut batch, key, expire_at_ms, data);
        self.write(batch, [key])
    }

    /// Commits `batch` and then marks the watchers of `keys`, the keys it writes.
    pub(crate) fn write<'k>(
        &self,
        batch: WriteBatch,
        keys: impl IntoIterator<Item = &'k [u8]>,
    ) -> Result<(), Fail> {
        let delta = self.counts.changes(&self.db, &batch, &self.readers)?;
        if let Err(e) = self.db.write(batch, self.write_opts) {
            self.counts.forget_states();
            return Err(e.into());
        }
        self.counts.apply(delta);
        self.written(keys);
        Ok(())
    }

    /// Marks the watchers of `keys`, just written (by this store or beside it: a BOOM
    /// PUT). After the write: a WATCH registered while it ran still sees it.
    pub(crate) fn written<'k>(&self, keys: impl IntoIterator<Item = &'k [u8]>) {
        if self.watches.count.load(Ordering::Acquire) > 0 {
            keys.into_iter().for_each(|k| self.watches.touch(k));
        }
    }

    /// Runs `write`, which puts a string without expiry under `key` beside the store (a
    /// BOOM PUT), then counts the key and marks its watchers. The caller holds the key's
    /// stripe.
    pub(crate) fn put_beside<T>(
        &self,
        key: &[u8],
        write: impl FnOnce() -> terrace::Result<T>,
    ) -> terrace::Result<T> {
        let engine_key = top(key);
        let before = match (self.counts.enabled(), self.counts.known_state(&engine_key)) {
            (false, _) => None,
            (true, Some(known)) => known,
            (true, None) => self
                .db
                .get_pinned(&ReadOptions::default(), &engine_key)?
                .map(|v| has_expiry(&v)),
        };
        let out = match write() {
            Ok(out) => out,
            Err(e) => {
                self.counts.forget_states();
                return Err(e);
            }
        };
        self.counts.remember(&engine_key, Some(false));
        self.counts.apply(Delta::of(before, Some(false)));
        self.written([key]);
        Ok(out)
    }

    /// Deletes `key`.
    pub(crate) fn delete(&self, key: &[u8]) -> Result<(), Fail> {
        self.write(single_delete(key), [key])
    }

    /// Applies puts (`Some`) and deletes (`None`) atomically, as one engine batch.
    pub(crate) fn apply(&self, ops: Vec<Op>) -> Result<(), Fail> {
        let mut batch = WriteBatch::new();
        for (k, v) in &ops {
            match v {
                Some(v) => put_value(&mut batch, k, v.expire_at_ms, &v.data),
                None => batch.delete(&top(k)),
            }
        }
        self.write(batch, ops.iter().map(|(k, _)| k.as_slice()))
    }

    /// Deletes every key (the caller holds `exclusive`): one range tombstone over every
    /// key below [`CLEAR_FENCE`], and a point deletion of each key at or above it (keys
    /// of sixteen 0xff bytes or more, normally none). It never walks the deleted keys:
    /// finding the first or last live key would step over every entry earlier clears
    /// left covered, which made each FLUSHDB slower than the one before.
    pub(crate) fn clear(&self) -> Result<(), Fail> {
        let mut batch = WriteBatch::new();
        batch.delete_range(b"", &CLEAR_FENCE);
        let mut it = self.db.iter(ReadOptions::default())?;
        it.seek(&CLEAR_FENCE)?;
        while it.valid() {
            batch.delete(it.key());
            it.next()?;
        }
        drop(it);
        let written = self.db.write(batch, self.write_opts);
        // Whether or not the range deletion took, the states remembered may be wrong now.
        self.counts.forget_states();
        written?;
        self.counts.reset();
        self.watches.touch_all();
        Ok(())
    }

    /// Live keys (and their top-level records) from `start` on in key order, calling
    /// `visit` until it returns false. Collections' members are not keys: the walk ends
    /// where they start.
    pub(crate) fn for_each_from(
        &self,
        start: &[u8],
        now_ms: u64,
        mut visit: impl FnMut(&[u8], &Top) -> bool,
    ) -> Result<(), Fail> {
        let mut it = self.db.iter(ReadOptions::default())?;
        it.seek(&top(start))?;
        let end = keys::top_end();
        while it.valid() && it.key() < end.as_slice() {
            let Some(key) = keys::client_key(it.key()) else {
                break;
            };
            let v = Top::decode(it.value()).map_err(|e| Fail::corrupt(&key, e))?;
            let live = v.expire_at_ms().is_none_or(|at| at > now_ms);
            if live && !visit(&key, &v) {
                break;
            }
            it.next()?;
        }
        Ok(())
    }

    /// Every top-level record from `start` on in key order, expired ones included, calling
    /// `visit` with its key and expiry (`None` too for a record it cannot decode) until
    /// it returns false.
    pub(crate) fn for_each_record_from(
        &self,
        start: &[u8],
        mut visit: impl FnMut(&[u8], Option<u64>) -> bool,
    ) -> Result<(), Fail> {
        let end = keys::top_end();
        let opts = ReadOptions {
            upper_bound: Some(end.to_vec()),
            ..ReadOptions::default()
        };
        let mut it = self.db.iter(opts)?;
        it.seek(&top(start))?;
        while it.valid() {
            let Some(key) = keys::client_key(it.key()) else {
                break;
            };
            // A record the server cannot decode has no expiry to act on.
            let at = crate::value::expiry_of(it.value()).ok().flatten();
            if !visit(&key, at) {
                break;
            }
            it.next()?;
        }
        Ok(())
    }

    /// Registers `flag` to be set when `key` is written.
    pub(crate) fn watch(&self, key: &[u8], flag: &Arc<AtomicBool>) {
        let mut map = self.watches.map.lock();
        map.entry(key.to_vec())
            .or_default()
            .push(Arc::downgrade(flag));
        self.watches.count.store(map.len(), Ordering::Release);
    }

    /// Forgets `flag`'s watches of `keys`.
    pub(crate) fn unwatch(&self, keys: &[Vec<u8>], flag: &Arc<AtomicBool>) {
        let mut map = self.watches.map.lock();
        for k in keys {
            if let Some(list) = map.get_mut(k) {
                list.retain(|w| w.upgrade().is_some_and(|f| !Arc::ptr_eq(&f, flag)));
                if list.is_empty() {
                    map.remove(k);
                }
            }
        }
        self.watches.count.store(map.len(), Ordering::Release);
    }
}

impl Watches {
    fn touch(&self, key: &[u8]) {
        if let Some(list) = self.map.lock().get(key) {
            list.iter()
                .filter_map(Weak::upgrade)
                .for_each(|f| f.store(true, Ordering::Release));
        }
    }

    fn touch_all(&self) {
        for list in self.map.lock().values() {
            list.iter()
                .filter_map(Weak::upgrade)
                .for_each(|f| f.store(true, Ordering::Release));
        }
    }
}

/// Steps forward to a target this close instead of seeking: a seek positions every
/// table's iterator again.
const STEPS_BEFORE_SEEK: usize = 8;

/// Records a kept cursor remembers behind its position: enough for LRANGE's 100, few
/// enough that a walk past more remembers nothing (replaying a long walk would cost as
/// much as the seek it saves, and copying it all the more).
const SEEN_RECORDS: usize = 128;

/// An engine iterator over one collection's member records (from
/// [`Store::member_iter`]) and where it stands, for walks from various starts.
///
/// A kept cursor (a group keeps one per collection it walks, `pending.rs`) also
/// remembers the records it passed, contiguous with its position, if at most
/// [`SEEN_RECORDS`] since its last walk began.
/// A walk from a start among them, or a few records ahead, goes on from there without a
/// seek, which positions every table's iterator again: a group's pops each walk from
/// just before the last one's stopping point.
pub(crate) struct MemberCursor {
    it: DbIterator,
    keep: bool,
    /// The passed records, oldest first (so in key order): each key and value in one
    /// buffer, with the key's length.
    seen: VecDeque<(usize, Vec<u8>)>,
}

impl MemberCursor {
    /// A cursor over `it`; `keep`: remember passed records for later walks.
    pub(crate) fn new(it: DbIterator, keep: bool) -> MemberCursor {
        MemberCursor {
            it,
            keep,
            seen: VecDeque::new(),
        }
    }

    /// [`Store::for_each_member`] through this cursor.
    pub(crate) fn walk(
        &mut self,
        prefix: &[u8],
        start: &[u8],
        mut visit: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), Fail> {
        let mut from = keys::MemberKeyBuf::new();
        from.extend_from_slice(prefix);
        from.extend_from_slice(start);
        let from = from.as_slice();
        let mut passed = 0;
        let at = self.it.valid().then(|| self.it.key());
        let not_past = at.is_none_or(|p| from <= p);
        if not_past && self.seen.front().is_some_and(|r| seen_key(r) <= from) {
            // Replay what lies between the start and the position (the remembered
            // records are in key order), then go on.
            let first = self.seen.partition_point(|r| seen_key(r) < from);
            for (key_len, record) in self.seen.range(first..) {
                let (k, v) = record.split_at(*key_len);
                let Some(member) = k.strip_prefix(prefix) else {
                    return Ok(());
                };
                if !visit(member, v) {
                    return Ok(());
                }
            }
        } else if at != Some(from) {
            let mut steps = 0;
            while self.it.valid() && self.it.key() < from && steps < STEPS_BEFORE_SEEK {
                self.remember(&mut passed);
                self.it.next()?;
                steps += 1;
            }
            let reached = steps > 0 && (!self.it.valid() || self.it.key() >= from);
            if !reached {
                self.seen.clear();
                self.it.seek(from)?;
            }
        }
        while self.it.valid() {
            let Some(member) = self.it.key().strip_prefix(prefix) else {
                break;
            };
            if !visit(member, self.it.value()) {
                break;
            }
            self.remember(&mut passed);
            self.it.next()?;
        }
        Ok(())
    }

    /// Notes the record the iterator stands on, about to be passed (`passed` of them so
    /// far in this walk).
    fn remember(&mut self, passed: &mut usize) {
        if !self.keep {
            return;
        }
        *passed += 1;
        if *passed > SEEN_RECORDS {
            self.seen.clear();
            return;
        }
        // A full memory's oldest record gives its buffer to the newest.
        let mut record = match self.seen.len() == SEEN_RECORDS {
            true => self.seen.pop_front().map(|(_, r)| r).unwrap_or_default(),
            false => Vec::new(),
        };
        let (key, value) = (self.it.key(), self.it.value());
        record.clear();
        record.reserve(key.len() + value.len());
        record.extend_from_slice(key);
        record.extend_from_slice(value);
        self.seen.push_back((key.len(), record));
    }
}

/// The key of a remembered record.
fn seen_key((key_len, record): &(usize, Vec<u8>)) -> &[u8] {
    record.get(..*key_len).unwrap_or_default()
}

/// Adds a put of `key`'s top-level record `t`.
pub(crate) fn put_top(batch: &mut WriteBatch, key: &[u8], t: &Top) {
    match t {
        Top::Coll(meta) => batch.put(&top(key), &meta.encoded()),
        Top::String(_) => batch.put(&top(key), &t.encode()),
    }
}

/// Adds a delete of `key`'s top-level record (a collection's members stay, under a
/// version nothing names any more, for compaction to drop).
pub(crate) fn delete_top(batch: &mut WriteBatch, key: &[u8]) {
    batch.delete(&top(key));
}

/// Adds a put of a string value (header and payload side by side, no joined copy).
pub(crate) fn put_value(
    batch: &mut WriteBatch,
    key: &[u8],
    expire_at_ms: Option<u64>,
    data: &[u8],
) {
    batch.put_parts(
        &top(key),
        &[ValueHeader::new(expire_at_ms).as_bytes(), data],
    );
}

fn single_delete(key: &[u8]) -> WriteBatch {
    let mut b = WriteBatch::with_capacity(6 + key.len());
    b.delete(&top(key));
    b
}
