//! The table merge as the container runs it: in the background, on the group new rows
//! join, while flushes go on stacking rows on top (docs/techniques/matrixkv.md, "Table
//! merge").
//!
//! Owns: when a merge runs (on the active group, never the frozen one that column
//! compaction consumes, never during log replay), storing its outputs and the relinked
//! row above, their row metadata, the rows its edit deletes, and taking the merge into
//! the container's groups once the database is about to record it (`accept`).
//! Must not touch: the manifest (the database records the outputs and deletes the inputs
//! in one edit), the merge itself (`table_merge`) or other groups.
//! Concurrency: `run_merge` reads a group shared by `Arc` without the container's lock;
//! flushes meanwhile add rows on top. The merge never includes or relinks the top row, so
//! a row flushed meanwhile keeps pointing into a row the merge leaves alone. `accept`
//! runs under the database's lock, so no edit lands between it and the merge's edit, and
//! refuses a merge whose group was frozen meanwhile (column compaction owns it then).
//!
//! Rows in a version sort by group, then largest sequence number, then number, newest
//! first. A merge's outputs all take their inputs' sequence bounds and ascending numbers
//! from the bottom output up, so the version stacks them as the merge did: key-disjoint,
//! the smallest keys at the bottom. The row above the merged range keeps its data chunks
//! and its header id (the rows above it keep pointing into it) and gets new metadata
//! chunks, a new directory and a new number; its old number leaves in the same edit.

use std::sync::Arc;

use super::MergePlan;
use crate::error::{Error, Result};
use crate::key::SeqNo;
use crate::level0::matrix::container::{
    store_relinked, store_row, stored_row_meta, CachedGroup, MatrixLevel0, State, StoredRow,
};
use crate::level0::matrix::rows::{MatrixGroup, RowHeader, SegmentFilter};
use crate::level0::matrix::state::{rows_of, RowEdit, RowMeta};
use crate::level0::{Level0Env, Level0Flush};
use crate::pmem::{Extent, PmemRegion};
use crate::version::Version;

impl MatrixLevel0 {
    /// Runs the table merge the active group has due, if any, and keeps it for
    /// `accept` (see `Level0::rewrite`).
    ///
    /// # Errors
    /// Errors reading or storing rows.
    pub(in crate::level0::matrix) fn background_merge(
        &self,
        env: &Level0Env<'_>,
    ) -> Result<Option<Level0Flush>> {
        let Some(new_number) = env.new_number else {
            return Ok(None);
        };
        let (region, group, metas, plan) = {
            let mut guard = self.state.lock();
            let st = guard.as_mut().ok_or_else(Self::not_open)?;
            if st.merging || st.merge_done.is_some() {
                return Ok(None);
            }
            let active = st.active_group;
            let Some(g) = st.groups.iter().find(|g| g.id == active) else {
                return Ok(None);
            };
            let Some(plan) = g.group.plan_merge() else {
                return Ok(None);
            };
            let group = g.group.clone();
            let metas: Vec<Arc<RowMeta>> = rows_of(&st.version)
                .iter()
                .filter(|r| r.group == active)
                .cloned()
                .collect();
            st.merging = true;
            (st.region.clone(), group, metas, plan)
        };
        // Room for the rows flushed while the merge runs (a flush waits if it has none).
        let reserve = 2 * self.row_bytes(env.settings.write_buffer_size);
        let result = run_merge(
            &region,
            &group,
            plan,
            &metas,
            env.snapshots,
            new_number,
            reserve,
        );
        let mut guard = self.state.lock();
        let st = guard.as_mut().ok_or_else(Self::not_open)?;
        st.merging = false;
        let Some(done) = result? else {
            return Ok(None);
        };
        let out = Level0Flush {
            records: RowEdit {
                new: done.new_rows.clone(),
                deleted: done.deleted_rows.clone(),
                ..RowEdit::default()
            }
            .into_records(),
            merges: 1,
            bytes_written: done.bytes,
            tier_bytes: done.bytes,
            ..Level0Flush::default()
        };
        st.merge_done = Some(done);
        Ok(Some(out))
    }

    /// True if the region has the free pages for a row from a memtable of `bytes`. Beyond
    /// what the version counts, pages may be held by a running table merge's outputs, or
    /// by rows a version deleted that a reader's view still holds: the flush then waits
    /// for them.
    pub(in crate::level0::matrix) fn region_has_room(&self, bytes: usize) -> bool {
        let guard = self.state.lock();
        guard
            .as_ref()
            .is_none_or(|st| st.region.free_bytes() >= self.row_bytes(bytes))
    }
}

/// A table merge stored on the region, waiting for the database to record it.
pub(in crate::level0::matrix) struct MergeDone {
    /// The group merged.
    group_id: u64,
    plan: MergePlan,
    /// The outputs by number, top first.
    outputs: Vec<(u64, Arc<StoredRow>)>,
    /// The outputs' segment filters, made before the database's lock is taken.
    segments: Vec<Arc<SegmentFilter>>,
    /// The row above the merged range: its old number, its new one and the relinked row.
    above: Option<(u64, u64, Arc<StoredRow>)>,
    /// Metadata of the outputs and the relinked row above.
    pub(in crate::level0::matrix) new_rows: Vec<RowMeta>,
    /// The merged rows and the old row above.
    pub(in crate::level0::matrix) deleted_rows: Vec<u64>,
    /// Bytes written: the outputs, the relinked metadata and the directories.
    pub(in crate::level0::matrix) bytes: u64,
}

/// Runs `plan`, the table merge `group` has due. `metas` are the group's rows in the
/// version (newest first, as in `group`); outputs and the relinked
/// row take numbers from `new_number` and keep every version `snapshots` read. `Ok(None)`
/// if the merge would relink the top row (flushes stack rows on it
/// meanwhile), the group has trimmed rows, or the region has no room for the outputs next
/// to the inputs (held until the edit) and `reserve` bytes (rows flushed meanwhile).
///
/// # Errors
/// `InvalidArgument` if `metas` are not the group's rows; errors reading or storing rows.
pub(in crate::level0::matrix) fn run_merge(
    region: &Arc<PmemRegion>,
    group: &MatrixGroup<Extent>,
    plan: MergePlan,
    metas: &[Arc<RowMeta>],
    snapshots: &[SeqNo],
    new_number: &dyn Fn() -> u64,
    reserve: u64,
) -> Result<Option<MergeDone>> {
    if metas.len() != group.len() {
        return Err(Error::Internal(
            "matrix group differs from its version's rows".into(),
        ));
    }
    // The row above the range is relinked: it must not be the top row.
    if plan.rows.start < 2 {
        return Ok(None);
    }
    // Only an untrimmed group is merged (the active group always is).
    let group_id = metas.first().map_or(0, |m| m.group);
    if metas
        .iter()
        .any(|m| m.trim.is_some() || m.released_chunks != 0 || m.group != group_id)
    {
        return Ok(None);
    }
    let inputs = metas.get(plan.rows.clone()).unwrap_or_default();
    let input_bytes: u64 = inputs.iter().map(|m| m.size).sum();
    if region.free_bytes() < input_bytes + input_bytes / 4 + reserve {
        return Ok(None);
    }
    if key_disjoint(inputs) {
        // Nothing can be dropped (sequential writes): the merge would only copy the rows.
        return Ok(None);
    }
    let smallest_seq = inputs.iter().map(|m| m.smallest_seq).min().unwrap_or(0);
    let largest_seq = inputs.iter().map(|m| m.largest_seq).max().unwrap_or(0);
    if !keeps_stack_order(metas, plan.rows.start, largest_seq) {
        return Ok(None);
    }
    let out = group.merge_rows(&plan, snapshots, &mut || new_number())?;

    let mut outputs = Vec::with_capacity(out.rows.len());
    for built in &out.rows {
        let id = RowHeader::decode(&built.header)?.id;
        match store_row(region, id, built) {
            Ok(s) => outputs.push((id, Arc::new(s))),
            Err(Error::NoSpace { .. }) => return Ok(None),
            Err(e) => return Err(e),
        }
    }
    // Numbers below each output: the next output down, then the row below the range.
    let below_range = metas.get(plan.rows.end).map_or(0, |m| m.number);
    let belows: Vec<u64> = outputs
        .iter()
        .skip(1)
        .map(|(n, _)| *n)
        .chain([below_range])
        .collect();
    // The bottom output's number marks every output as this merge's (`RowMeta::merge`).
    let mark = outputs.last().map_or(0, |(n, _)| *n);
    let mut new_rows = Vec::with_capacity(outputs.len() + 1);
    for ((n, s), below) in outputs.iter().zip(&belows) {
        let tombstones = s.reader.range_tombstones();
        let mut meta = stored_row_meta(
            *n,
            group_id,
            *below,
            s,
            tombstones,
            Some(smallest_seq),
            largest_seq,
        )?;
        meta.merge = mark;
        new_rows.push(meta);
    }
    let mut deleted_rows: Vec<u64> = inputs.iter().map(|m| m.number).collect();
    let mut above = None;
    let mut bytes: u64 = new_rows.iter().map(|m| m.size).sum();
    if let Some(relinked) = &out.above {
        let i = plan.rows.start - 1;
        let (Some(old), Some(old_meta)) = (group.row(i), metas.get(i)) else {
            return Err(Error::Internal("matrix merge: no row above".into()));
        };
        let number = new_number();
        let s = match store_relinked(region, number, relinked, old.data_chunks().to_vec()) {
            Ok(s) => Arc::new(s),
            Err(Error::NoSpace { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let loc = s.location();
        let mut meta = old_meta.as_ref().clone();
        meta.number = number;
        meta.dir_offset = loc.offset;
        meta.dir_len = loc.len;
        meta.dir_checksum = loc.checksum;
        meta.size = s.size();
        meta.below = outputs.first().map_or(below_range, |(n, _)| *n);
        // Relinked metadata and the directory; the shared data chunks were written before.
        let shared: u64 = s.reader.data_chunks().iter().map(Extent::len).sum();
        bytes += meta.size.saturating_sub(shared);
        new_rows.push(meta);
        deleted_rows.push(old_meta.number);
        above = Some((old_meta.number, number, s));
    }
    let readers: Vec<_> = outputs.iter().map(|(_, s)| s.reader.clone()).collect();
    let segments = MatrixGroup::merged_segments(&readers, group.params())?;
    Ok(Some(MergeDone {
        group_id,
        plan,
        outputs,
        segments,
        above,
        new_rows,
        deleted_rows,
        bytes,
    }))
}

/// Takes `done` into the container's groups for the edit that records it, about to be
/// applied on top of `version` (the database's lock is held). Returns false, and drops the
/// merge (its pages return to the region), if its group was frozen meanwhile, or its
/// inputs changed: the merge is then simply not recorded.
///
/// # Errors
/// `InvalidArgument` if the merged group's row numbers do not add up.
pub(in crate::level0::matrix) fn accept(
    st: &mut State,
    done: MergeDone,
    version: &Version,
) -> Result<bool> {
    if done.group_id != st.active_group {
        return Ok(false);
    }
    let unchanged = done.deleted_rows.iter().all(|n| {
        rows_of(version)
            .iter()
            .any(|r| r.number == *n && r.trim.is_none() && r.released_chunks == 0)
    });
    let current = st.groups.iter().find(|g| g.id == done.group_id);
    let in_version = rows_of(version)
        .iter()
        .filter(|r| r.group == done.group_id)
        .map(|r| r.number);
    let Some(current) = current.filter(|c| unchanged && c.numbers().eq(in_version)) else {
        return Ok(false);
    };
    let outputs = done.outputs.iter().map(|(_, s)| s.reader.clone()).collect();
    let above = done.above.as_ref().map(|(_, _, s)| s.reader.clone());
    let Ok(merged) = current
        .group
        .apply_merge_with(&done.plan, outputs, above, done.segments)
    else {
        return Ok(false);
    };
    let first_input = done.deleted_rows.first().copied();
    let mut numbers = Vec::with_capacity(merged.len());
    for n in current.numbers() {
        match &done.above {
            Some((old, new, _)) if *old == n => numbers.push(*new),
            _ if Some(n) == first_input => numbers.extend(done.outputs.iter().map(|(m, _)| *m)),
            _ if done.deleted_rows.contains(&n) => {}
            _ => numbers.push(n),
        }
    }
    if numbers.len() != merged.len() {
        return Err(Error::Internal(
            "matrix merge: row numbers differ from the merged group".into(),
        ));
    }
    st.rows.extend(done.outputs);
    st.rows.extend(done.above.map(|(_, n, s)| (n, s)));
    st.prepared = Some(CachedGroup::untrimmed(done.group_id, numbers, merged));
    Ok(true)
}

/// True if no two of `rows` share a user key: a merge of them would drop nothing.
pub(in crate::level0::matrix) fn key_disjoint(rows: &[Arc<RowMeta>]) -> bool {
    let mut spans: Vec<(&[u8], &[u8])> = rows
        .iter()
        .map(|m| (m.smallest_user_key(), m.largest_user_key()))
        .collect();
    spans.sort_unstable();
    spans.windows(2).all(|w| match w {
        [a, b] => a.1 < b.0,
        _ => true,
    })
}

/// True if the rows a merge of `metas[start..]` with inputs' largest sequence number
/// `largest_seq` writes sort in a version as the merge stacks them: the row above the range
/// sorts above every output, and the relinked row (a fresh, highest number) still below the
/// row above it. Rows recovered from a manifest without merge marks (`RowMeta::merge`)
/// form segments that forget which rows were merged, and a plan may then split an earlier
/// merge's outputs, which share their largest sequence number.
fn keeps_stack_order(metas: &[Arc<RowMeta>], start: usize, largest_seq: SeqNo) -> bool {
    let Some(above) = start.checked_sub(1).and_then(|i| metas.get(i)) else {
        return true;
    };
    let over = start.checked_sub(2).and_then(|i| metas.get(i));
    above.largest_seq > largest_seq && over.is_none_or(|o| o.largest_seq > above.largest_seq)
}
