//! The table merge as the container runs it: inside a flush, on the group new rows join,
//! before the flushed row is built (docs/techniques/matrixkv.md, "Table merge").
//!
//! Owns: when a merge runs (a flush into the active group, never the frozen one that
//! column compaction consumes, never during log replay), storing its outputs and the
//! relinked row above, their row metadata, and the rows the flush's edit deletes.
//! Must not touch: the manifest (the flush's edit records the outputs and deletes the
//! inputs atomically), the merge itself (`level0::matrix::merge`) or other groups.
//! Concurrency: runs without the container's lock on a group shared by `Arc`; only the
//! flush in progress changes the active group, and it holds `State::pending` meanwhile.
//!
//! Rows in a version sort by group, then largest sequence number, then number, newest
//! first. A merge's outputs all take their inputs' sequence bounds and ascending numbers
//! from the bottom output up, so the version stacks them as the merge did: key-disjoint,
//! the smallest keys at the bottom. The row above the merged range keeps its data chunks
//! and its header id (the rows above it keep pointing into it) and gets new metadata
//! chunks, a new directory and a new number; its old number leaves in the same edit.

use std::sync::Arc;

use super::groups::stored_row_meta;
use super::store::{store_relinked, store_row, StoredRow};
use crate::error::{Error, Result};
use crate::key::SeqNo;
use crate::level0::matrix::MatrixGroup;
use crate::pmem::{Extent, PmemRegion};
use crate::version::RowMeta;

/// A table merge stored on the region, waiting for the flush's edit.
pub(super) struct MergeDone {
    /// The group after the merge, without the flushed row.
    pub(super) group: MatrixGroup<Extent>,
    /// Row numbers of `group`, newest first.
    pub(super) numbers: Vec<u64>,
    /// Metadata of the outputs and the relinked row above.
    pub(super) new_rows: Vec<RowMeta>,
    /// The merged rows and the old row above.
    pub(super) deleted_rows: Vec<u64>,
    /// The new rows by number, to load into the container's state.
    pub(super) stored: Vec<(u64, Arc<StoredRow>)>,
    /// Bytes written: the outputs, the relinked metadata and the directories.
    pub(super) bytes: u64,
}

/// Runs the table merge `group` has due, if any. `metas` are the group's rows in the
/// version (newest first, as in `group`); outputs and the relinked row take numbers from
/// `new_number` and keep every version `snapshots` read. `Ok(None)` if no merge is due,
/// the group has trimmed rows, or the region has no room for the outputs next to the
/// inputs (held until the edit) and `reserve` bytes (the flushed row still to come).
///
/// # Errors
/// `InvalidArgument` if `metas` are not the group's rows; errors reading or storing rows.
pub(super) fn run_merge(
    region: &Arc<PmemRegion>,
    group: &MatrixGroup<Extent>,
    metas: &[Arc<RowMeta>],
    snapshots: &[SeqNo],
    new_number: &dyn Fn() -> u64,
    reserve: u64,
) -> Result<Option<MergeDone>> {
    if metas.len() != group.len() {
        return Err(Error::InvalidArgument(
            "matrix group differs from its version's rows".into(),
        ));
    }
    let Some(plan) = group.plan_merge() else {
        return Ok(None);
    };
    // Only an untrimmed group is merged (the active group always is).
    if metas
        .iter()
        .any(|m| m.trim.is_some() || m.released_chunks != 0)
    {
        return Ok(None);
    }
    let inputs = metas.get(plan.rows.clone()).unwrap_or_default();
    let input_bytes: u64 = inputs.iter().map(|m| m.size).sum();
    if region.free_bytes() < input_bytes + input_bytes / 4 + reserve {
        return Ok(None);
    }
    let smallest_seq = inputs.iter().map(|m| m.smallest_seq).min().unwrap_or(0);
    let largest_seq = inputs.iter().map(|m| m.largest_seq).max().unwrap_or(0);
    if !keeps_stack_order(metas, plan.rows.start, largest_seq) {
        return Ok(None);
    }
    let group_id = inputs.first().map_or(0, |m| m.group);
    let out = group.merge_rows(&plan, snapshots, &mut || new_number())?;

    let mut stored = Vec::with_capacity(out.rows.len() + 1);
    for built in &out.rows {
        let id = crate::level0::matrix::RowHeader::decode(&built.header)?.id;
        match store_row(region, id, built) {
            Ok(s) => stored.push((id, Arc::new(s))),
            Err(Error::NoSpace { .. }) => return Ok(None),
            Err(e) => return Err(e),
        }
    }
    // Numbers below each output: the next output down, then the row below the range.
    let below_range = metas.get(plan.rows.end).map_or(0, |m| m.number);
    let belows: Vec<u64> = stored
        .iter()
        .skip(1)
        .map(|(n, _)| *n)
        .chain([below_range])
        .collect();
    let mut new_rows = Vec::with_capacity(stored.len() + 1);
    for ((n, s), below) in stored.iter().zip(&belows) {
        let tombstones = s.reader.range_tombstones();
        new_rows.push(stored_row_meta(
            *n,
            group_id,
            *below,
            s,
            tombstones,
            Some(smallest_seq),
            largest_seq,
        )?);
    }
    let mut deleted_rows: Vec<u64> = inputs.iter().map(|m| m.number).collect();
    let mut above_reader = None;
    let mut above_number = None;
    let above_at = plan.rows.start.checked_sub(1);
    if let (Some(relinked), Some(i)) = (&out.above, above_at) {
        let (Some(old), Some(old_meta)) = (group.row(i), metas.get(i)) else {
            return Err(Error::InvalidArgument("matrix merge: no row above".into()));
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
        meta.below = stored.first().map_or(below_range, |(n, _)| *n);
        new_rows.push(meta);
        deleted_rows.push(old_meta.number);
        above_reader = Some(s.reader.clone());
        above_number = Some(number);
        stored.push((number, s));
    }
    let outputs = stored
        .iter()
        .take(out.rows.len())
        .map(|(_, s)| s.reader.clone())
        .collect();
    let merged = group.apply_merge(&plan, outputs, above_reader)?;
    let mut numbers: Vec<u64> = Vec::with_capacity(merged.len());
    for (i, m) in metas.iter().enumerate() {
        if Some(i) == above_at && above_number.is_some() {
            numbers.extend(above_number);
        } else if i == plan.rows.start {
            numbers.extend(stored.iter().take(out.rows.len()).map(|(n, _)| *n));
        } else if !plan.rows.contains(&i) {
            numbers.push(m.number);
        }
    }
    // Relinked metadata, outputs and directories; the shared data chunks were written before.
    let bytes = new_rows
        .iter()
        .map(|m| m.size)
        .sum::<u64>()
        .saturating_sub(above_reader_data_bytes(&stored, above_number));
    if numbers.len() != merged.len() {
        return Err(Error::InvalidArgument(
            "matrix merge: row numbers differ from the merged group".into(),
        ));
    }
    Ok(Some(MergeDone {
        group: merged,
        numbers,
        new_rows,
        deleted_rows,
        stored,
        bytes,
    }))
}

/// True if the rows a merge of `metas[start..]` with inputs' largest sequence number
/// `largest_seq` writes sort in a version as the merge stacks them: the row above the range
/// sorts above every output, and the relinked row (a fresh, highest number) still below the
/// row above it. After a restart segments forget which rows were merged, and a plan may
/// split an earlier merge's outputs, which share their largest sequence number.
fn keeps_stack_order(metas: &[Arc<RowMeta>], start: usize, largest_seq: SeqNo) -> bool {
    let Some(above) = start.checked_sub(1).and_then(|i| metas.get(i)) else {
        return true;
    };
    let over = start.checked_sub(2).and_then(|i| metas.get(i));
    above.largest_seq > largest_seq && over.is_none_or(|o| o.largest_seq > above.largest_seq)
}

/// Bytes of the data extents the relinked row shares with the row it replaces.
fn above_reader_data_bytes(stored: &[(u64, Arc<StoredRow>)], above: Option<u64>) -> u64 {
    let Some(n) = above else { return 0 };
    stored.iter().find(|(m, _)| *m == n).map_or(0, |(_, s)| {
        s.reader.data_chunks().iter().map(Extent::len).sum()
    })
}
