//! The matrix container: a level 0 kept as stacked sorted rows on the persistent-memory
//! tier and compacted into level 1 one key-range column at a time (MatrixKV;
//! docs/techniques/matrixkv.md).
//!
//! Owns: [`MatrixLevel0`] (the `Level0` implementation, and `SelfCompacting` in
//! `columns`), its [`MatrixOptions`], the persistent-memory region it maps, which rows
//! form which group, and the freeze that starts column compaction.
//! Must not touch: the manifest (the database records the level-0 records it returns),
//! the row format (`rows`), where a column ends (`column_cut`), the table merge itself
//! (`table_merge`) or the compaction executor.
//! Concurrency: one mutex guards the container's state; flushes run one at a time; views
//! are immutable groups shared with readers by `Arc`; rows free their pages when the last
//! view holding them is dropped.
//!
//! Crash consistency: a row's chunks and directory are persisted before the flush returns,
//! and only the manifest makes a row live, so a crash before the edit leaves pages that
//! the next open treats as free. A column's level-1 outputs and the trims of the rows it
//! consumed are one edit. A table merge's outputs, the relinked row above (sharing the old
//! row's data extents) and the deletion of the rows they replace are one edit. At
//! open every live row is claimed and checked again.
//!
//! Split: the settings (`options`), building each version's groups and a flushed row's
//! metadata (`groups`), the readers' view (`view`), rows on the region (`store`), and
//! column compaction and the table merge as the database drives them (`columns`). This
//! file is past 400 lines because the flush and the `Level0` methods share its private
//! state.

mod columns;
mod groups;
mod options;
mod store;
mod view;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use parking_lot::Mutex;

use self::groups::{build_groups, release_chunks, row_meta};
pub(in crate::level0::matrix) use self::groups::{stored_row_meta, CachedGroup};
pub use self::options::{MatrixOptions, DEFAULT_REGION_FILE};
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use self::store::decode_dir;
#[cfg(test)]
pub(crate) use self::store::encode_dir;
use self::store::{load_row, DirLocation};
pub(in crate::level0::matrix) use self::store::{store_relinked, store_row, StoredRow};
use self::view::MatrixView;
use super::rows::{Below, RowBuilder};
use super::state::{is_matrix_state, rows_of, MatrixState, RowEdit};
use super::table_merge::MergeDone;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::SeqNo;
use crate::level0::flush_stream::for_each_kept;
use crate::level0::{
    Backpressure, Level0, Level0Copy, Level0Env, Level0Flush, Level0Settings, Level0View,
    SelfCompacting,
};
use crate::memtable::MemTable;
use crate::pmem::{PmemOptions, PmemRegion};
use crate::tables::Tables;
use crate::version::{Level0State, Version};

/// The compaction score of a container whose flushes wait for room: above any level's.
const STALLED_SCORE: f64 = 1000.0;

/// A level 0 of matrix rows on persistent memory. Give one instance to one database.
pub struct MatrixLevel0 {
    pub(in crate::level0::matrix) opts: MatrixOptions,
    pub(in crate::level0::matrix) state: Mutex<Option<State>>,
}

impl std::fmt::Debug for MatrixLevel0 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MatrixLevel0")
            .field("opts", &self.opts)
            .finish_non_exhaustive()
    }
}

/// The container's state while a database has it open.
pub(in crate::level0::matrix) struct State {
    pub(in crate::level0::matrix) region: Arc<PmemRegion>,
    /// Rows by number: every live row, and rows flushed but not yet installed.
    pub(in crate::level0::matrix) rows: HashMap<u64, Arc<StoredRow>>,
    /// The group new rows join.
    pub(in crate::level0::matrix) active_group: u64,
    /// The row a flush is writing, until a version holds it: no freeze may happen
    /// meanwhile, or the row would join a group whose columns are being consumed.
    pub(in crate::level0::matrix) pending: Option<u64>,
    /// The newest version seen, and the groups built for it (newest group first).
    pub(in crate::level0::matrix) version: Arc<Version>,
    pub(in crate::level0::matrix) groups: Vec<CachedGroup>,
    /// A table merge is running in the background.
    pub(in crate::level0::matrix) merging: bool,
    /// A table merge done, waiting for the database to record it.
    pub(in crate::level0::matrix) merge_done: Option<MergeDone>,
    /// The active group as the table merge being recorded left it, for the version that
    /// records it (building it from its rows would read them all again).
    pub(in crate::level0::matrix) prepared: Option<CachedGroup>,
}

impl MatrixLevel0 {
    /// A container with `opts`; nothing is mapped until a database opens with it.
    ///
    /// # Errors
    /// `InvalidArgument` for options out of range.
    pub fn new(opts: MatrixOptions) -> Result<Self> {
        opts.params.validate()?;
        if !(opts.compaction_trigger > 0.0 && opts.compaction_trigger <= 1.0) {
            return Err(Error::InvalidArgument(
                "matrix compaction_trigger must be in (0, 1]".into(),
            ));
        }
        if opts.columns == 0 || opts.capacity == 0 {
            return Err(Error::InvalidArgument(
                "matrix capacity and columns must be positive".into(),
            ));
        }
        Ok(MatrixLevel0 {
            opts,
            state: Mutex::new(None),
        })
    }

    /// The options.
    pub fn options(&self) -> &MatrixOptions {
        &self.opts
    }

    /// Bytes written to the persistent-memory region so far (0 before open).
    pub fn region_bytes_written(&self) -> u64 {
        self.state
            .lock()
            .as_ref()
            .map_or(0, |s| s.region.stats().bytes_written)
    }

    /// True if a row from a memtable of `bytes` fits next to the live rows (an empty
    /// container always takes one, whatever its size).
    pub(in crate::level0::matrix) fn has_room(&self, version: &Version, bytes: usize) -> bool {
        let used = self.size_bytes(version);
        used.saturating_add(self.row_bytes(bytes)) <= self.opts.capacity
            || rows_of(version).is_empty()
    }

    /// The region bytes a row from a memtable of `bytes` may take: about its memtable's
    /// bytes plus page rounding of its chunks.
    pub(in crate::level0::matrix) fn row_bytes(&self, bytes: usize) -> u64 {
        bytes as u64 + bytes as u64 / 8 + 4 * u64::from(self.opts.page_size)
    }

    /// Builds the row of `mem` as number `number` on top of the active group and stores it
    /// on the region (see `Level0::flush`).
    fn flush_row(
        &self,
        mem: &Arc<MemTable>,
        number: u64,
        snapshots: &[SeqNo],
    ) -> Result<Level0Flush> {
        let tombstones = mem.range_tombstones();
        let mut iter = mem.iter();
        iter.seek_to_first()?;
        if !iter.valid() && tombstones.is_empty() {
            return Ok(Level0Flush::default());
        }
        // Decide the row's group and find the row below it.
        let (region, group, top) = {
            let mut guard = self.state.lock();
            let st = guard.as_mut().ok_or_else(Self::not_open)?;
            let frozen = rows_of(&st.version)
                .iter()
                .any(|r| r.group < st.active_group);
            let active = group_bytes(&st.version, st.active_group);
            let incoming = mem.approximate_memory_usage() as u64;
            if !frozen && active > 0 && active + incoming > self.trigger_bytes() {
                // Freeze: the current rows become the compacting group.
                st.active_group += 1;
            }
            let top = rows_of(&st.version)
                .iter()
                .find(|r| r.group == st.active_group)
                .and_then(|r| st.rows.get(&r.number).map(|s| (r.number, s.reader.clone())));
            st.pending = Some(number);
            (st.region.clone(), st.active_group, top)
        };
        let mut b = RowBuilder::new(
            number,
            top.as_ref().map(|(_, r)| Below::new(r, 0)),
            self.opts.params.chunk_bytes,
        )?;
        for_each_kept(&mut iter, &tombstones, snapshots, |k, v| b.add(k, v))?;
        for t in &tombstones {
            b.add_range_tombstone(t)?;
        }
        let built = b.finish()?;
        let stored = Arc::new(store_row(&region, number, &built)?);
        let below_number = top.map_or(0, |(n, _)| n);
        let meta = row_meta(number, group, below_number, &stored, mem, &tombstones)?;
        let mut guard = self.state.lock();
        let st = guard.as_mut().ok_or_else(Self::not_open)?;
        st.rows.insert(number, stored);
        Ok(Level0Flush {
            bytes_written: meta.size,
            tier_bytes: meta.size,
            entries: meta.num_entries,
            records: RowEdit {
                new: vec![meta],
                ..RowEdit::default()
            }
            .into_records(),
            ..Level0Flush::default()
        })
    }

    pub(in crate::level0::matrix) fn trigger_bytes(&self) -> u64 {
        (self.opts.capacity as f64 * self.opts.compaction_trigger) as u64
    }

    pub(in crate::level0::matrix) fn column_bytes(&self) -> u64 {
        (self.opts.capacity / u64::from(self.opts.columns)).max(1)
    }

    pub(in crate::level0::matrix) fn not_open() -> Error {
        Error::Internal("the matrix level 0 is not open".into())
    }
}

/// Bytes of the live rows of `group` in `version`.
fn group_bytes(version: &Version, group: u64) -> u64 {
    rows_of(version)
        .iter()
        .filter(|r| r.group == group)
        .map(|r| r.size)
        .sum()
}

impl Level0 for MatrixLevel0 {
    fn kind(&self) -> &'static str {
        "matrix"
    }

    fn empty_state(&self) -> Arc<dyn Level0State> {
        Arc::new(MatrixState::default())
    }

    fn flush(&self, env: &Level0Env<'_>, mem: &Arc<MemTable>, number: u64) -> Result<Level0Flush> {
        let flushed = self.flush_row(mem, number, env.snapshots);
        if flushed.is_err() {
            // No row comes of it: freezes may happen again.
            let mut guard = self.state.lock();
            if let Some(st) = guard.as_mut().filter(|st| st.pending == Some(number)) {
                st.pending = None;
            }
        }
        flushed
    }

    fn install(&self, _tables: &Arc<Tables>, version: &Arc<Version>) -> Arc<dyn Level0View> {
        let mut guard = self.state.lock();
        let Some(st) = guard.as_mut() else {
            return Arc::new(MatrixView::failed(Self::not_open()));
        };
        if let Err(e) = release_chunks(st, version) {
            return Arc::new(MatrixView::failed(e));
        }
        match build_groups(st, version, &self.opts.params) {
            Ok(groups) => {
                if st
                    .pending
                    .is_some_and(|p| rows_of(version).iter().any(|r| r.number == p))
                {
                    st.pending = None;
                }
                st.prepared = None;
                st.version = version.clone();
                st.groups = groups.clone();
                // Forget rows that left the version (their pages free once no view holds
                // them), keeping the row of the flush in progress.
                let live: HashSet<u64> = rows_of(version).iter().map(|r| r.number).collect();
                let pending = st.pending;
                st.rows
                    .retain(|n, _| live.contains(n) || Some(*n) == pending);
                Arc::new(MatrixView {
                    groups: groups.into_iter().map(|g| g.group).collect(),
                    error: None,
                })
            }
            Err(e) => Arc::new(MatrixView::failed(e)),
        }
    }

    fn size_bytes(&self, version: &Version) -> u64 {
        // Saturating: row sizes come from the manifest, which may be corrupt.
        rows_of(version)
            .iter()
            .fold(0u64, |sum, r| sum.saturating_add(r.size))
    }

    fn backpressure(&self, version: &Version, opts: &Level0Settings) -> Backpressure {
        // Flushes stop when no row fits (see `ready_to_flush`); before that, writes are
        // paced while the room left holds less than a quarter of the container, gently
        // (`Ease`) until it holds less than three memtables and firmly (`Slowdown`) after,
        // so that compaction catches up in many short delays instead of one long stop: the
        // write rate adapts once per new version (`db::write_delay`), and the zone must
        // hold enough flushes for it to come down to what compaction drains.
        if rows_of(version).is_empty() {
            return Backpressure::None;
        }
        let used = self.size_bytes(version);
        let near = 3 * opts.write_buffer_size as u64;
        let early = near.max(self.opts.capacity / 4);
        if used.saturating_add(near) > self.opts.capacity {
            Backpressure::Slowdown
        } else if used.saturating_add(early) > self.opts.capacity {
            Backpressure::Ease
        } else {
            Backpressure::None
        }
    }

    fn ready_to_flush(&self, version: &Version, bytes: usize) -> bool {
        self.has_room(version, bytes) && self.region_has_room(bytes)
    }

    fn compaction_score(
        &self,
        version: &Version,
        _busy: &HashSet<u64>,
        opts: &Level0Settings,
    ) -> f64 {
        if !self.has_room(version, opts.write_buffer_size) {
            // Flushes are stalled: freeing room comes before every other compaction.
            return STALLED_SCORE;
        }
        let active = self.state.lock().as_ref().map_or(0, |s| s.active_group);
        let frozen = frozen_group(version, active);
        match frozen {
            // Columns of a frozen group are due: urgency grows as the container fills.
            Some(_) => {
                let used = self.size_bytes(version) as f64;
                1.0 + used / self.opts.capacity.max(1) as f64
            }
            None => self.size_bytes(version) as f64 / self.trigger_bytes().max(1) as f64,
        }
    }

    fn level1_target_bytes(&self, _version: &Version, _settings: &Level0Settings) -> u64 {
        // Level 1 is as large as the container unless set, and each deeper level the usual
        // ratio larger: the tree is as deep as with a level 0 of this size.
        match self.opts.level1_bytes {
            0 => self.opts.capacity,
            n => n,
        }
    }

    fn durable_seq(&self, version: &Version) -> SeqNo {
        let files = version.levels().iter().flatten().map(|f| f.largest_seq);
        let rows = rows_of(version).iter().map(|r| r.largest_seq);
        files.chain(rows).max().unwrap_or(0)
    }

    fn checkpoint(&self, version: &Version) -> Result<Option<Box<dyn Level0Copy>>> {
        if rows_of(version).is_empty() {
            return Ok(None);
        }
        let guard = self.state.lock();
        let st = guard.as_ref().ok_or_else(Self::not_open)?;
        let mut rows = Vec::with_capacity(rows_of(version).len());
        for r in rows_of(version) {
            let stored = st.rows.get(&r.number).ok_or_else(|| {
                Error::Internal(format!(
                    "matrix row {} of the current version is not in the container",
                    r.number
                ))
            })?;
            // A row's held chunks are a superset of what the version names as long as the
            // container has not released more than the version records.
            if stored.released() > r.released_chunks as usize {
                return Err(Error::Internal(format!(
                    "matrix row {}: {} data chunks released, the version records {}",
                    r.number,
                    stored.released(),
                    r.released_chunks
                )));
            }
            rows.push(stored.clone());
        }
        Ok(Some(Box::new(RowsCopy {
            region: st.region.clone(),
            rows,
        })))
    }

    fn self_compacting(&self) -> Option<&dyn SelfCompacting> {
        Some(self)
    }

    fn recover(&self, env: &Level0Env<'_>, version: &Version) -> Result<()> {
        if !is_matrix_state(version) {
            return Err(Error::Internal(
                "the matrix level 0 recovers a version built without its state".into(),
            ));
        }
        let mut guard = self.state.lock();
        // A previous open's mapping goes first, so that the region file can be locked.
        *guard = None;
        let path = self
            .opts
            .region_path
            .clone()
            .unwrap_or_else(|| env.tables.dir(0).join(DEFAULT_REGION_FILE));
        let region = PmemRegion::open(
            &path,
            PmemOptions {
                capacity: self.opts.capacity.saturating_add(self.opts.capacity / 4),
                page_size: self.opts.page_size,
                mode: self.opts.mode,
                rate_limit: self.opts.pmem_rate_limit,
            },
        )?;
        region.set_skip_persists(self.opts.skip_persists);
        if let Some(power) = &self.opts.power {
            region.set_power(power.clone())?;
        }
        let mut rows = HashMap::new();
        for r in rows_of(version) {
            let loc = DirLocation {
                offset: r.dir_offset,
                len: r.dir_len,
                checksum: r.dir_checksum,
            };
            let released = r.released_chunks as usize;
            rows.insert(
                r.number,
                Arc::new(load_row(&region, r.number, loc, released)?),
            );
        }
        // The newest group takes new rows, unless column compaction already consumed
        // part of it: then it stays frozen and new rows start the next group.
        let newest = rows_of(version).iter().map(|r| r.group).max().unwrap_or(0);
        let newest_trimmed = rows_of(version)
            .iter()
            .any(|r| r.group == newest && r.trim.is_some());
        let active_group = newest + u64::from(newest_trimmed);
        let mut st = State {
            region,
            rows,
            active_group,
            pending: None,
            merging: false,
            merge_done: None,
            version: Arc::new(Version::with_level0(
                version.num_levels(),
                self.empty_state(),
            )),
            groups: Vec::new(),
            prepared: None,
        };
        let v = Arc::new(version.clone());
        st.groups = build_groups(&st, &v, &self.opts.params)?;
        st.version = v;
        *guard = Some(st);
        Ok(())
    }
}

/// The rows of a checkpoint: held here (their extents are not given back meanwhile) until
/// they are written into the checkpoint's own region file, at the same offsets, with the
/// same creation id (docs/formats/pmem.md, "Copies").
struct RowsCopy {
    region: Arc<PmemRegion>,
    rows: Vec<Arc<StoredRow>>,
}

impl Level0Copy for RowsCopy {
    fn write_to(self: Box<Self>, dir: &std::path::Path) -> Result<()> {
        let extents: Vec<_> = self
            .rows
            .iter()
            .flat_map(|r| {
                std::iter::once(&r.dir)
                    .chain(r.reader.meta_chunks())
                    .chain(r.reader.data_chunks())
            })
            .collect();
        self.region
            .copy_to(&dir.join(DEFAULT_REGION_FILE), &extents)
    }
}

/// The oldest group if it is older than the `active` one (the group flushes join): the
/// group being compacted into level 1, column by column.
fn frozen_group(version: &Version, active: u64) -> Option<u64> {
    let oldest = rows_of(version).iter().map(|r| r.group).min()?;
    (oldest < active).then_some(oldest)
}

#[cfg(test)]
mod tests;
