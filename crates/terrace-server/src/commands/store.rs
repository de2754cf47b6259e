//! The keyspace on the engine: typed values with expiry, per-key write locks, WATCH
//! bookkeeping and ordered iteration.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::{Mutex, MutexGuard, RwLock};
use terrace::{Db, ReadOptions, WriteBatch, WriteOptions};

use super::Fail;
use crate::value::StoredValue;

/// One write of a batch: a put (`Some`) or a delete (`None`).
pub(crate) type Op = (Vec<u8>, Option<StoredValue>);

/// Number of key-hash stripes serialising read-modify-write commands.
const STRIPES: usize = 1024;

/// The engine plus what commands need around it. `Send + Sync`.
pub(crate) struct Store {
    pub(crate) db: Db,
    write_opts: WriteOptions,
    stripes: Box<[Mutex<()>]>,
    /// Commands hold it shared; EXEC and FLUSHDB hold it exclusively.
    pub(crate) exclusive: RwLock<()>,
    watches: Watches,
}

/// Which clients watch which keys; a write to a watched key marks its watchers dirty.
#[derive(Default)]
struct Watches {
    count: AtomicUsize,
    map: Mutex<HashMap<Vec<u8>, Vec<Weak<AtomicBool>>>>,
}

fn stripe_of(key: &[u8]) -> usize {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut h);
    (h.finish() as usize) % STRIPES
}

impl Store {
    pub(crate) fn new(db: Db, sync_writes: bool) -> Store {
        Store {
            db,
            write_opts: WriteOptions {
                sync: sync_writes,
                ..WriteOptions::default()
            },
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            exclusive: RwLock::new(()),
            watches: Watches::default(),
        }
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

    /// The live value of `key` at `now_ms`; an expired value reads as absent and is
    /// deleted if its stripe is free.
    pub(crate) fn get(&self, key: &[u8], now_ms: u64) -> Result<Option<StoredValue>, Fail> {
        let Some(raw) = self.db.get(key)? else {
            return Ok(None);
        };
        let v = StoredValue::decode_vec(raw).map_err(|e| Fail::corrupt(key, e))?;
        if !v.is_expired(now_ms) {
            return Ok(Some(v));
        }
        // Lazy expiry. A command already holding this stripe overwrites or skips the key.
        if let Some(_guard) = self.stripes.get(stripe_of(key)).and_then(Mutex::try_lock) {
            if let Some(raw) = self.db.get(key)? {
                if StoredValue::decode(&raw).is_ok_and(|v| v.is_expired(now_ms)) {
                    self.db.write(single_delete(key), self.write_opts)?;
                }
            }
        }
        Ok(None)
    }

    /// Stores `value` under `key`.
    pub(crate) fn put(&self, key: &[u8], value: &StoredValue) -> Result<(), Fail> {
        // The hot path of SET: one encoding, one batch sized up front, no copies of the
        // key or value beyond those.
        let encoded = value.encode();
        let mut batch = WriteBatch::with_capacity(11 + key.len() + encoded.len());
        batch.put(key, &encoded);
        self.db.write(batch, self.write_opts)?;
        self.watches.touch(key);
        Ok(())
    }

    /// Deletes `key`.
    pub(crate) fn delete(&self, key: &[u8]) -> Result<(), Fail> {
        self.db.write(single_delete(key), self.write_opts)?;
        self.watches.touch(key);
        Ok(())
    }

    /// Applies puts (`Some`) and deletes (`None`) atomically, as one engine batch.
    pub(crate) fn apply(&self, ops: Vec<Op>) -> Result<(), Fail> {
        let mut batch = WriteBatch::new();
        for (k, v) in &ops {
            match v {
                Some(v) => batch.put(k, &v.encode()),
                None => batch.delete(k),
            }
        }
        self.db.write(batch, self.write_opts)?;
        for (k, _) in &ops {
            self.watches.touch(k);
        }
        Ok(())
    }

    /// Deletes every key (the caller holds `exclusive`).
    pub(crate) fn clear(&self) -> Result<(), Fail> {
        let mut it = self.db.iter(ReadOptions::default())?;
        it.seek_to_last()?;
        if it.valid() {
            let last = it.key().to_vec();
            let mut batch = WriteBatch::new();
            batch.delete_range(b"", &last);
            batch.delete(&last);
            self.db.write(batch, self.write_opts)?;
        }
        self.watches.touch_all();
        Ok(())
    }

    /// Live keys (and values) from `start` on in key order, calling `visit` until it
    /// returns false.
    pub(crate) fn for_each_from(
        &self,
        start: &[u8],
        now_ms: u64,
        mut visit: impl FnMut(&[u8], &StoredValue) -> bool,
    ) -> Result<(), Fail> {
        let mut it = self.db.iter(ReadOptions::default())?;
        it.seek(start)?;
        while it.valid() {
            let v = StoredValue::decode(it.value()).map_err(|e| Fail::corrupt(it.key(), e))?;
            if !v.is_expired(now_ms) && !visit(it.key(), &v) {
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
        if self.count.load(Ordering::Acquire) == 0 {
            return;
        }
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

fn single_delete(key: &[u8]) -> WriteBatch {
    let mut b = WriteBatch::with_capacity(6 + key.len());
    b.delete(key);
    b
}
