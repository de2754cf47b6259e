//! The live table files as a set: where each file lives (its volume), opening it through
//! the table cache, a point lookup in one table, and an iterator over a sorted level.
//!
//! Owns: [`Tables`], [`LevelIterator`], [`lookup`] and its batched form [`lookup_many`].
//! Must not touch: the manifest (files are named by their `FileMeta`) or the memtables.
//! Concurrency: `Tables` is `Send + Sync` and shared by `Arc`; iterators have one owner.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{self, SeqNo, ValueType};
use crate::sst::{BlockCache, SstBuilder, SstReader, TableCache};
use crate::storage::{IoClass, ReadableFile, Storage};
use crate::version::FileMeta;
use crate::volume::heat::{CountingFile, Heat};
use crate::volume::replica::{CopyChooser, ReplicatedFile, RotatingChooser};
use crate::volume::Volumes;

/// The table files of one database: its volumes and the table cache.
pub struct Tables {
    cache: TableCache,
    volumes: Volumes,
    /// Counts each table's reads, when heat statistics are kept.
    heat: Option<Arc<Heat>>,
    /// Which copy of a replicated table a read goes to.
    chooser: Arc<dyn CopyChooser>,
    /// Whether new tables' data blocks go into the block cache as they are written.
    warm_new_tables: bool,
}

impl Tables {
    /// Tables of the database in `db_dir` whose extra volumes are `volumes`
    /// (volume `i >= 1` is `volumes[i - 1]`).
    pub fn new(
        storage: Arc<dyn Storage>,
        db_dir: &Path,
        volumes: Vec<PathBuf>,
        max_open_files: usize,
        block_cache: Option<Arc<BlockCache>>,
    ) -> Self {
        Tables {
            cache: TableCache::new(storage, max_open_files, block_cache),
            volumes: Volumes::new(db_dir, &volumes),
            heat: None,
            chooser: Arc::new(RotatingChooser::default()),
            warm_new_tables: false,
        }
    }

    /// These tables, reading replicated tables from the copy `chooser` picks (without
    /// one: the copies in turn).
    pub fn with_copy_chooser(self, chooser: Arc<dyn CopyChooser>) -> Self {
        Tables { chooser, ..self }
    }

    /// These tables, counting every table's reads into `heat`.
    pub fn with_heat(self, heat: Arc<Heat>) -> Self {
        Tables {
            heat: Some(heat),
            ..self
        }
    }

    /// These tables, warming the block cache with each new table's data blocks as
    /// flushes and compactions write them (`Options::warm_block_cache_on_write`).
    pub fn with_warm_new_tables(self, warm: bool) -> Self {
        Tables {
            warm_new_tables: warm,
            ..self
        }
    }

    /// `builder` of new table `number`, warming the block cache as it writes if these
    /// tables do so (`SstBuilder::warm_cache`).
    pub fn new_table_builder(&self, builder: SstBuilder, number: u64) -> SstBuilder {
        match self.cache.block_cache() {
            Some(cache) if self.warm_new_tables => builder.warm_cache(cache.clone(), number),
            _ => builder,
        }
    }

    /// Which copy of a replicated table a read goes to.
    pub fn chooser(&self) -> &Arc<dyn CopyChooser> {
        &self.chooser
    }

    /// The heat statistics the tables count into, if any.
    pub fn heat(&self) -> Option<&Arc<Heat>> {
        self.heat.as_ref()
    }

    /// The volumes the tables live on.
    pub fn volumes(&self) -> &Volumes {
        &self.volumes
    }

    /// The directory of `volume` (see [`Volumes::dir`]).
    pub fn dir(&self, volume: u32) -> PathBuf {
        self.volumes.dir(volume).to_path_buf()
    }

    /// The path of table `number` on `volume`.
    pub fn path(&self, volume: u32, number: u64) -> PathBuf {
        self.volumes.table_path(volume, number)
    }

    /// Opens (or finds open) the table of `f`.
    ///
    /// # Errors
    /// I/O errors and `Corruption` of the table's footer or meta blocks.
    pub fn open(&self, f: &FileMeta) -> Result<Arc<SstReader>> {
        let path = || self.path(f.volume, f.number);
        if f.replicas.is_empty() && self.heat.is_none() {
            return self.cache.get_with(f.number, path);
        }
        let mut opened: Option<Arc<CountingFile>> = None;
        let reader = self.cache.get_opened(f.number, || {
            let (path, file) = self.open_copies(f)?;
            let file = match &self.heat {
                Some(heat) => {
                    let counters = heat.file(f.number, f.volume, f.size);
                    let counting = Arc::new(CountingFile::new(file, counters));
                    opened = Some(counting.clone());
                    counting as Arc<dyn ReadableFile>
                }
                None => file,
            };
            Ok((path, file))
        })?;
        if let Some(counting) = opened {
            counting.arm();
        }
        Ok(reader)
    }

    /// Opens every copy of `f` (its own, then its replicas'): one copy is read as it is,
    /// several through a [`ReplicatedFile`]. A copy that cannot be opened or has the wrong
    /// size (its volume failed, say) is left out while another copy opens; with none, the
    /// first copy's error. Returns the path of the first copy opened, for errors.
    fn open_copies(&self, f: &FileMeta) -> Result<(PathBuf, Arc<dyn ReadableFile>)> {
        let storage = self.cache.storage();
        if f.replicas.is_empty() {
            let path = self.path(f.volume, f.number);
            let file = storage.open(&path)?;
            return Ok((path, file));
        }
        let mut volumes = Vec::new();
        let mut copies: Vec<Arc<dyn ReadableFile>> = Vec::new();
        let mut first: Option<PathBuf> = None;
        let mut failure = None;
        for v in f.copies() {
            let path = self.path(v, f.number);
            match storage.open(&path) {
                Ok(copy) if copy.len() == f.size => {
                    volumes.push(v);
                    copies.push(copy);
                    first.get_or_insert(path);
                }
                Ok(copy) => {
                    tracing::warn!(
                        path = %path.display(),
                        len = copy.len(),
                        size = f.size,
                        "table copy has the wrong size; reading the other copies"
                    );
                    failure.get_or_insert_with(|| {
                        crate::error::Error::corruption(
                            &path,
                            0,
                            format!("copy is {} bytes, the manifest says {}", copy.len(), f.size),
                        )
                    });
                }
                Err(e) => {
                    tracing::warn!(
                        path = %path.display(),
                        error = %e,
                        "table copy cannot be opened; reading the other copies"
                    );
                    failure.get_or_insert(e);
                }
            }
        }
        let (Some(path), false) = (first, copies.is_empty()) else {
            return Err(failure.unwrap_or_else(|| {
                crate::error::Error::Internal(format!("table {} has no copy", f.number))
            }));
        };
        if copies.len() == 1 {
            return Ok((path, copies.swap_remove(0)));
        }
        let file = Arc::new(ReplicatedFile::new(volumes, copies, self.chooser.clone()));
        Ok((path, file))
    }

    /// Forgets an open table (its file moved; its cached blocks stay valid).
    pub fn evict(&self, number: u64) {
        self.cache.evict(number);
    }

    /// Forgets table `number`, whose last copy (at `path`) is being deleted, and its
    /// cached blocks (`TableCache::evict_deleted`; a table that is not open is opened for
    /// its index only where new tables warm the cache).
    pub fn evict_deleted(&self, number: u64, path: &Path) {
        self.cache.evict_deleted(number, path, self.warm_new_tables);
    }
}

/// What one source says about a key.
pub enum Lookup {
    /// The newest visible entry: the value, or `None` if it is deleted.
    Found(Option<Bytes>),
    /// Nothing here; look further down.
    Missing,
}

/// Resolves an entry against the newest covering range tombstone.
pub fn resolve(kind: ValueType, seq: SeqNo, max_tombstone: SeqNo, value: Bytes) -> Option<Bytes> {
    (seq >= max_tombstone && kind == ValueType::Value).then_some(value)
}

/// Looks `user_key` up in one table at snapshot `snap`. First raises `max_tombstone` to
/// the newest visible range tombstone of the table covering the key (tombstones count even
/// where the bloom filter rules the key out).
///
/// # Errors
/// I/O errors and `Corruption`.
pub fn lookup(
    reader: &SstReader,
    user_key: &[u8],
    seek_key: &[u8],
    snap: SeqNo,
    max_tombstone: &mut SeqNo,
    fill_cache: bool,
) -> Result<Lookup> {
    raise_tombstone(reader, user_key, snap, max_tombstone);
    match reader.get(seek_key, IoClass::Foreground, fill_cache)? {
        Some((seq, kind, value)) => Ok(Lookup::Found(resolve(kind, seq, *max_tombstone, value))),
        None => Ok(Lookup::Missing),
    }
}

/// Raises `max_tombstone` to the newest range tombstone of `reader`'s table visible at
/// `snap` that covers `user_key`.
fn raise_tombstone(reader: &SstReader, user_key: &[u8], snap: SeqNo, max_tombstone: &mut SeqNo) {
    for t in reader.range_tombstones() {
        if t.seq <= snap && t.seq > *max_tombstone && t.contains(user_key) {
            *max_tombstone = t.seq;
        }
    }
}

/// One key of a batched point read ([`lookup_many`]) and what the read has found so far.
#[derive(Debug, Clone)]
pub struct Probe<'k> {
    /// The key read.
    pub user_key: &'k [u8],
    /// Its filter hash, computed once for every table the read probes.
    pub hash: u64,
    /// The newest covering range tombstone seen so far (as [`lookup`]'s).
    pub max_tombstone: SeqNo,
    /// Once found, the newest visible entry: its value, or `None` if it is deleted.
    pub found: Option<Option<Bytes>>,
}

impl<'k> Probe<'k> {
    /// A probe of `user_key` not yet found, having seen tombstones up to `max_tombstone`.
    pub fn new(user_key: &'k [u8], max_tombstone: SeqNo) -> Self {
        Probe {
            user_key,
            hash: crate::sst::filter_hash(user_key),
            max_tombstone,
            found: None,
        }
    }
}

/// [`lookup`] in one table for each of the probes `pick` names that is not found yet,
/// at snapshot `snap`: first every such key's filter line is asked for, so that their
/// cache misses overlap, then each key is looked up as [`lookup`] does. Indexes out of
/// range are skipped.
///
/// # Errors
/// I/O errors and `Corruption`; probes found before the error keep what they found.
pub fn lookup_many(
    reader: &SstReader,
    probes: &mut [Probe<'_>],
    pick: &[usize],
    snap: SeqNo,
    fill_cache: bool,
) -> Result<()> {
    for p in pick.iter().filter_map(|&i| probes.get(i)) {
        if p.found.is_none() {
            reader.prefetch_filter(p.hash);
        }
    }
    for &i in pick {
        let Some(p) = probes.get_mut(i).filter(|p| p.found.is_none()) else {
            continue;
        };
        raise_tombstone(reader, p.user_key, snap, &mut p.max_tombstone);
        if !reader.may_contain_hash(p.hash) {
            continue;
        }
        let seek = key::KeyBuf::seek_key(p.user_key, snap);
        if let Some((seq, kind, value)) =
            reader.get_unfiltered(seek.as_slice(), IoClass::Foreground, fill_cache)?
        {
            p.found = Some(resolve(kind, seq, p.max_tombstone, value));
        }
    }
    Ok(())
}

/// Concatenates the tables of a level >= 1 (or of any list of sorted, disjoint files),
/// opening each lazily.
pub struct LevelIterator {
    files: Vec<Arc<FileMeta>>,
    tables: Arc<Tables>,
    class: IoClass,
    fill_cache: bool,
    idx: usize,
    cur: Option<Box<dyn InternalIterator>>,
}

impl LevelIterator {
    /// Iterates `files` (sorted by key, disjoint), reading with `class`.
    pub fn new(
        files: Vec<Arc<FileMeta>>,
        tables: Arc<Tables>,
        class: IoClass,
        fill_cache: bool,
    ) -> Self {
        LevelIterator {
            idx: files.len(),
            files,
            tables,
            class,
            fill_cache,
            cur: None,
        }
    }

    fn open_at(&mut self, idx: usize) -> Result<()> {
        self.idx = idx;
        self.cur = None;
        if let Some(f) = self.files.get(idx) {
            let reader = self.tables.open(f)?;
            self.cur = Some(Box::new(reader.iter(self.class, self.fill_cache)));
        }
        Ok(())
    }

    fn skip_forward(&mut self) -> Result<()> {
        while self.cur.as_ref().is_some_and(|c| !c.valid()) {
            let next = self.idx + 1;
            self.open_at(next)?;
            if let Some(c) = self.cur.as_mut() {
                c.seek_to_first()?;
            }
        }
        Ok(())
    }

    fn skip_backward(&mut self) -> Result<()> {
        while self.cur.as_ref().is_some_and(|c| !c.valid()) {
            if self.idx == 0 {
                self.cur = None;
                self.idx = self.files.len();
                return Ok(());
            }
            let prev = self.idx - 1;
            self.open_at(prev)?;
            if let Some(c) = self.cur.as_mut() {
                c.seek_to_last()?;
            }
        }
        Ok(())
    }
}

impl InternalIterator for LevelIterator {
    fn valid(&self) -> bool {
        self.cur.as_ref().is_some_and(|c| c.valid())
    }

    fn seek_to_first(&mut self) -> Result<()> {
        self.open_at(0)?;
        if let Some(c) = self.cur.as_mut() {
            c.seek_to_first()?;
        }
        self.skip_forward()
    }

    fn seek_to_last(&mut self) -> Result<()> {
        match self.files.len().checked_sub(1) {
            Some(last) => {
                self.open_at(last)?;
                if let Some(c) = self.cur.as_mut() {
                    c.seek_to_last()?;
                }
                self.skip_backward()
            }
            None => {
                self.cur = None;
                Ok(())
            }
        }
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let i = self
            .files
            .partition_point(|f| key::compare(f.largest.encoded(), target).is_lt());
        self.open_at(i)?;
        if let Some(c) = self.cur.as_mut() {
            c.seek(target)?;
        }
        self.skip_forward()
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        let i = self
            .files
            .partition_point(|f| key::compare(f.smallest.encoded(), target).is_le());
        match i.checked_sub(1) {
            Some(i) => {
                self.open_at(i)?;
                if let Some(c) = self.cur.as_mut() {
                    c.seek_for_prev(target)?;
                }
                self.skip_backward()
            }
            None => {
                self.cur = None;
                self.idx = self.files.len();
                Ok(())
            }
        }
    }

    fn next(&mut self) -> Result<()> {
        if let Some(c) = self.cur.as_mut() {
            c.next()?;
        }
        self.skip_forward()
    }

    fn prev(&mut self) -> Result<()> {
        if let Some(c) = self.cur.as_mut() {
            c.prev()?;
        }
        self.skip_backward()
    }

    fn key(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[][..], |c| c.key())
    }

    fn value(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[][..], |c| c.value())
    }
}
