//! The classic level 0: one table file per flushed memtable, possibly overlapping,
//! searched newest first and compacted into level 1 when there are enough of them.

use std::collections::HashSet;
use std::sync::Arc;

use super::flush_stream::for_each_kept;
use super::{Backpressure, Level0, Level0Env, Level0Flush, Level0Settings, Level0View};
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{self, SeqNo};
use crate::memtable::MemTable;
use crate::range_del::RangeTombstone;
use crate::sst::SstBuilder;
use crate::storage::IoClass;
use crate::tables::{lookup, lookup_many, Lookup, Probe, Tables};
use crate::version::{FileMeta, Level0State, NoLevel0State, Version};

/// RocksDB's level-0 score: live level-0 files (those no running compaction owns) over
/// the file-count `trigger`.
pub fn level0_file_count_score(
    level0: &[Arc<FileMeta>],
    being_compacted: &HashSet<u64>,
    trigger: usize,
) -> f64 {
    let live = level0
        .iter()
        .filter(|f| !being_compacted.contains(&f.number))
        .count();
    live as f64 / trigger.max(1) as f64
}

/// Level-0 table files in the manifest, with RocksDB's file-count triggers.
#[derive(Debug, Default, Clone, Copy)]
pub struct ClassicLevel0;

struct ClassicView {
    /// Newest first.
    files: Vec<Arc<FileMeta>>,
    tables: Arc<Tables>,
}

/// Writes the entries of `mem` a reader can still tell apart (`flush_stream`) into table
/// `number` on level 0's volume and syncs it. Returns `None` (writing nothing) for a
/// memtable with nothing in it.
///
/// # Errors
/// I/O errors.
pub(crate) fn write_memtable(
    env: &Level0Env<'_>,
    mem: &Arc<MemTable>,
    number: u64,
) -> Result<Option<FileMeta>> {
    let tombstones = mem.range_tombstones();
    let mut iter = mem.iter();
    iter.seek_to_first()?;
    if !iter.valid() && tombstones.is_empty() {
        return Ok(None);
    }
    let volume = match env.placement {
        Some(plan) => {
            let smallest = iter.valid().then(|| key::user_key(iter.key()).to_vec());
            iter.seek_to_last()?;
            let largest = iter.valid().then(|| key::user_key(iter.key()).to_vec());
            iter.seek_to_first()?;
            let first = tombstones.iter().map(|t| t.start.clone());
            let smallest = smallest.into_iter().chain(first).min().unwrap_or_default();
            let last = tombstones.iter().map(|t| t.end.clone());
            let largest = largest.into_iter().chain(last).max().unwrap_or_default();
            plan.choose(&[], number, &smallest, &largest)
        }
        None => env.settings.volume,
    };
    let dir = env.tables.dir(volume);
    let path = env.tables.path(volume, number);
    let file = env.storage.create(&path, IoClass::Flush)?;
    let mut builder = env
        .tables
        .new_table_builder(SstBuilder::new(file, path, env.settings.sst), number);
    for_each_kept(&mut iter, &tombstones, env.snapshots, |k, v| {
        builder.add(k, v)
    })?;
    for t in &tombstones {
        builder.add_range_tombstone(t);
    }
    let info = builder.finish()?;
    env.storage.sync_dir(&dir)?;
    Ok(Some(crate::compaction::file_meta(number, volume, &info)))
}

impl Level0 for ClassicLevel0 {
    fn kind(&self) -> &'static str {
        "classic"
    }

    fn empty_state(&self) -> Arc<dyn Level0State> {
        Arc::new(NoLevel0State)
    }

    fn flush(
        &self,
        env: &Level0Env<'_>,
        mem: &Arc<MemTable>,
        file_number: u64,
    ) -> Result<Level0Flush> {
        let written = write_memtable(env, mem, file_number)?;
        Ok(Level0Flush {
            bytes_written: written.as_ref().map_or(0, |f| f.size),
            entries: written.as_ref().map_or(0, |f| f.num_entries),
            new_files: written.into_iter().collect(),
            ..Level0Flush::default()
        })
    }

    /// Each flush writes a table of its own and touches no shared state.
    fn parallel_flushes(&self) -> bool {
        true
    }

    fn install(&self, tables: &Arc<Tables>, version: &Arc<Version>) -> Arc<dyn Level0View> {
        Arc::new(ClassicView {
            files: version.files(0).to_vec(),
            tables: tables.clone(),
        })
    }

    fn size_bytes(&self, version: &Version) -> u64 {
        version.level_bytes(0)
    }

    fn backpressure(&self, version: &Version, opts: &Level0Settings) -> Backpressure {
        let n = version.files(0).len();
        if n >= opts.level0_stop_writes_trigger {
            Backpressure::Stop
        } else if n >= opts.level0_slowdown_writes_trigger {
            Backpressure::Slowdown
        } else {
            Backpressure::None
        }
    }

    fn compaction_score(
        &self,
        version: &Version,
        being_compacted: &HashSet<u64>,
        opts: &Level0Settings,
    ) -> f64 {
        level0_file_count_score(
            version.files(0),
            being_compacted,
            opts.level0_file_num_compaction_trigger,
        )
    }

    fn durable_seq(&self, version: &Version) -> SeqNo {
        version
            .levels()
            .iter()
            .flatten()
            .map(|f| f.largest_seq)
            .max()
            .unwrap_or(0)
    }

    fn checkpoint(&self, _version: &Version) -> Result<Option<Box<dyn super::Level0Copy>>> {
        // Level-0 files are table files of the version: the database links them.
        Ok(None)
    }

    fn recover(&self, _env: &Level0Env<'_>, _version: &Version) -> Result<()> {
        // Level-0 files are recorded in the manifest; the version set has checked them
        // (and refused level-0 records of another kind of level 0, such as matrix rows).
        Ok(())
    }
}

impl Level0View for ClassicView {
    fn get(
        &self,
        user_key: &[u8],
        seek_key: &[u8],
        snap: SeqNo,
        max_tombstone: &mut SeqNo,
        fill_cache: bool,
    ) -> Result<Lookup> {
        for f in &self.files {
            if f.smallest_user_key() > user_key || f.largest_user_key() < user_key {
                continue;
            }
            let reader = self.tables.open(f)?;
            if let Lookup::Found(v) =
                lookup(&reader, user_key, seek_key, snap, max_tombstone, fill_cache)?
            {
                return Ok(Lookup::Found(v));
            }
        }
        Ok(Lookup::Missing)
    }

    /// File by file, newest first: each file is opened once and asked about every probe
    /// in its key range not found in a newer one.
    fn get_many(&self, probes: &mut [Probe<'_>], snap: SeqNo, fill_cache: bool) -> Result<()> {
        let mut pick = Vec::with_capacity(probes.len());
        for f in &self.files {
            pick.clear();
            pick.extend(probes.iter().enumerate().filter_map(|(i, p)| {
                (p.found.is_none()
                    && f.smallest_user_key() <= p.user_key
                    && f.largest_user_key() >= p.user_key)
                    .then_some(i)
            }));
            if pick.is_empty() {
                continue;
            }
            let reader = self.tables.open(f)?;
            lookup_many(&reader, probes, &pick, snap, fill_cache)?;
        }
        Ok(())
    }

    fn add_iterators(
        &self,
        out: &mut Vec<Box<dyn InternalIterator>>,
        tombstones: &mut Vec<RangeTombstone>,
        fill_cache: bool,
    ) -> Result<()> {
        for f in &self.files {
            let reader = self.tables.open(f)?;
            tombstones.extend(reader.range_tombstones().iter().cloned());
            out.push(Box::new(reader.iter(IoClass::Foreground, fill_cache)));
        }
        Ok(())
    }
}
