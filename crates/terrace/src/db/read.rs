//! The point-read path: memtables newest first, then level 0 newest first, then one file
//! per deeper level, tracking the newest range tombstone that covers the key on the way.

use std::ops::Deref;
use std::sync::atomic::Ordering;
use std::time::Instant;

use bytes::Bytes;

use super::{DbInner, SuperVersion};
use crate::error::Result;
use crate::key::{KeyBuf, SeqNo};
use crate::options::ReadOptions;
use crate::tables::{lookup, lookup_many, resolve, Lookup, Probe};

/// A value read without copying: it shares the memtable's or the cached block's memory.
#[derive(Clone, PartialEq, Eq)]
pub struct PinnedValue(Bytes);

impl PinnedValue {
    /// Copies the value out.
    pub fn to_vec(&self) -> Vec<u8> {
        self.0.to_vec()
    }
    /// The underlying shared buffer.
    pub fn into_bytes(self) -> Bytes {
        self.0
    }
}

impl Deref for PinnedValue {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl AsRef<[u8]> for PinnedValue {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl std::fmt::Debug for PinnedValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PinnedValue({:?})", String::from_utf8_lossy(&self.0))
    }
}

impl DbInner {
    pub(crate) fn read_seq(&self, opts: &ReadOptions) -> SeqNo {
        opts.snapshot_seq
            .unwrap_or_else(|| self.last_seq.load(Ordering::Acquire))
    }

    pub(crate) fn get_pinned(&self, opts: &ReadOptions, key: &[u8]) -> Result<Option<PinnedValue>> {
        let start = self.opts.latency_stats.then(Instant::now);
        let sv = self.super_version();
        let r = self.get_in(&sv, self.read_seq(opts), key, opts.fill_cache);
        if let Some(start) = start {
            self.counters.record_get(start.elapsed().as_micros() as u64);
        }
        r
    }

    pub(crate) fn multi_get(
        &self,
        opts: &ReadOptions,
        keys: &[&[u8]],
    ) -> Result<Vec<Option<Vec<u8>>>> {
        let sv = self.super_version();
        let snap = self.read_seq(opts);
        keys.iter()
            .map(|k| {
                Ok(self
                    .get_in(&sv, snap, k, opts.fill_cache)?
                    .map(|v| v.to_vec()))
            })
            .collect()
    }

    /// Point reads of `keys` at one snapshot, the memtable searches of all keys
    /// interleaved (see [`MemTable::get_many`]); keys the memtables do not settle are
    /// looked up in the tables one by one.
    pub(crate) fn multi_get_pinned(
        &self,
        opts: &ReadOptions,
        keys: &[&[u8]],
    ) -> Result<Vec<Option<PinnedValue>>> {
        let start = self.opts.latency_stats.then(Instant::now);
        let sv = self.super_version();
        let snap = self.read_seq(opts);
        let mut out: Vec<Option<PinnedValue>> = vec![None; keys.len()];
        // Per key: still to resolve, and the newest covering tombstone seen so far.
        let mut open: Vec<(usize, SeqNo)> = (0..keys.len()).map(|i| (i, 0)).collect();
        let mut found = Vec::new();
        let mut pending: Vec<&[u8]> = Vec::new();
        for mem in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
            if open.is_empty() {
                break;
            }
            pending.clear();
            pending.extend(open.iter().filter_map(|&(i, _)| keys.get(i).copied()));
            found.clear();
            found.resize(pending.len(), None);
            mem.get_many(&pending, snap, &mut found);
            let mut still = Vec::with_capacity(open.len());
            for ((i, mut max_tombstone), (key, entry)) in
                open.into_iter().zip(pending.iter().zip(found.drain(..)))
            {
                max_tombstone = max_tombstone.max(mem.max_covering_tombstone_seq(key, snap));
                match entry {
                    Some(e) => {
                        if let Some(slot) = out.get_mut(i) {
                            *slot = resolve(e.kind, e.seq, max_tombstone, e.value).map(PinnedValue);
                        }
                    }
                    None => still.push((i, max_tombstone)),
                }
            }
            open = still;
        }
        let mut probes: Vec<Probe<'_>> = open
            .iter()
            .filter_map(|&(i, max_tombstone)| Some(Probe::new(keys.get(i)?, max_tombstone)))
            .collect();
        self.get_many_from_tables(&sv, snap, &mut probes, opts.fill_cache)?;
        for ((i, _), p) in open.into_iter().zip(probes) {
            if let Some(slot) = out.get_mut(i) {
                *slot = p.found.flatten().map(PinnedValue);
            }
        }
        if let Some(start) = start.filter(|_| !keys.is_empty()) {
            // Each key is charged its share of the batch.
            let micros = start.elapsed().as_micros() as u64 / keys.len() as u64;
            self.counters.record_gets(micros, keys.len() as u64);
        }
        Ok(out)
    }

    fn get_in(
        &self,
        sv: &SuperVersion,
        snap: SeqNo,
        key: &[u8],
        fill_cache: bool,
    ) -> Result<Option<PinnedValue>> {
        let mut max_tombstone = 0;
        for mem in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
            max_tombstone = max_tombstone.max(mem.max_covering_tombstone_seq(key, snap));
            if let Some(e) = mem.get(key, snap) {
                return Ok(resolve(e.kind, e.seq, max_tombstone, e.value).map(PinnedValue));
            }
        }
        self.get_from_tables(sv, snap, key, &mut max_tombstone, fill_cache)
    }

    /// The table part of a batch of point reads, as [`DbInner::get_from_tables`] for each
    /// probe, table by table: each table is opened once for all the probes it may hold,
    /// and asked about them together ([`lookup_many`]: their filter misses overlap).
    fn get_many_from_tables(
        &self,
        sv: &SuperVersion,
        snap: SeqNo,
        probes: &mut [Probe<'_>],
        fill_cache: bool,
    ) -> Result<()> {
        sv.level0.get_many(probes, snap, fill_cache)?;
        // Per level: (the position of the open probe's file in the level, the probe).
        let mut by_file: Vec<(usize, usize)> = Vec::with_capacity(probes.len());
        let mut pick: Vec<usize> = Vec::with_capacity(probes.len());
        for level in 1..sv.version.num_levels() {
            let files = sv.version.files(level);
            if files.is_empty() {
                continue;
            }
            by_file.clear();
            for (i, p) in probes.iter().enumerate() {
                if p.found.is_none() {
                    let seek = KeyBuf::seek_key(p.user_key, snap);
                    if let Some(at) = sv.version.file_index_for_key(level, seek.as_slice()) {
                        by_file.push((at, i));
                    }
                }
            }
            by_file.sort_unstable();
            for run in by_file.chunk_by(|a, b| a.0 == b.0) {
                let Some(f) = run.first().and_then(|&(at, _)| files.get(at)) else {
                    continue;
                };
                pick.clear();
                pick.extend(run.iter().map(|&(_, i)| i));
                let reader = self.tables.open(f)?;
                lookup_many(&reader, probes, &pick, snap, fill_cache)?;
            }
        }
        Ok(())
    }

    /// The table part of a point read: level 0 newest first, then one file per level.
    fn get_from_tables(
        &self,
        sv: &SuperVersion,
        snap: SeqNo,
        key: &[u8],
        max_tombstone: &mut SeqNo,
        fill_cache: bool,
    ) -> Result<Option<PinnedValue>> {
        let seek = KeyBuf::seek_key(key, snap);
        let seek = seek.as_slice();
        if let Lookup::Found(v) = sv.level0.get(key, seek, snap, max_tombstone, fill_cache)? {
            return Ok(v.map(PinnedValue));
        }
        for level in 1..sv.version.num_levels() {
            let Some(f) = sv.version.file_for_key(level, seek) else {
                continue;
            };
            if f.smallest_user_key() > key {
                continue;
            }
            let reader = self.tables.open(f)?;
            if let Lookup::Found(v) = lookup(&reader, key, seek, snap, max_tombstone, fill_cache)? {
                return Ok(v.map(PinnedValue));
            }
        }
        Ok(None)
    }
}
