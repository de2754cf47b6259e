//! The table merge inside the matrix container: a run of old segments is merged into
//! fewer, larger, key-disjoint rows without the versions no snapshot can see. This file
//! merges rows of a group; `background` runs a merge as the container does, on a thread
//! of its own, and hands its outputs to the database.
//!
//! Owns: [`MergePlan`] (which segments: the oldest `merge_segments` consecutive segments
//! not yet merged, all within the bottom `merge_bottom_fraction` of segments), the cut of
//! outputs (at `merge_output_ratio` times the inputs' average row size, only between user
//! keys), their stacking and linking, and the relinked metadata of the row above.
//! Must not touch: persistent memory or other groups. The keep/drop rules are
//! `compaction::stream`'s, never at the bottom (level 1 lies below level 0).
//! Concurrency: `merge_rows` reads an immutable group and may run in the background while
//! rows are added on top; `apply_merge` then returns a new group and locates the merged
//! rows by id.
//!
//! Stacking. Outputs are cut in key order and stacked with the smallest keys at the
//! bottom: each output's pointers are built against the output below it (all `len` of it,
//! since its keys are all smaller) and the bottom output's against the row below the
//! merged range. The row right above the range had pointers into the old top input; its
//! metadata is rebuilt against the new top output (its data chunks do not change).

mod background;

#[cfg(test)]
pub(in crate::level0::matrix) use background::key_disjoint;
pub(in crate::level0::matrix) use background::{accept as accept_merge, MergeDone};

use std::ops::Range;
use std::sync::Arc;

use super::rows::{
    relink, row_hashes, Below, BuiltRow, GroupRow, MatrixGroup, MatrixParams, RelinkedMeta,
    RowBuilder, RowIterator, RowReader, SegmentFilter,
};
use crate::compaction::stream::{tombstones_to_keep, CompactionStream, StreamConfig};
use crate::compaction::StreamCounters;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{self, SeqNo, MAX_SEQ};
use crate::merge::MergingIterator;
use crate::range_del::FragmentedTombstones;

/// A table merge chosen by [`MatrixGroup::plan_merge`].
#[derive(Debug, Clone, PartialEq)]
pub struct MergePlan {
    /// Positions (0 is the newest row) of the rows to merge when planned.
    pub rows: Range<usize>,
    /// Their ids, newest first.
    pub row_ids: Vec<u64>,
    /// Positions of the segments they form when planned, newest first.
    pub segments: Range<usize>,
    /// An output row is cut once it holds this many key and value bytes.
    pub target_row_bytes: u64,
}

/// The rows a table merge wrote, in DRAM, to be copied into extents.
#[derive(Debug)]
pub struct MergeOutput {
    /// The new rows in stack order (top first): key-disjoint, the smallest keys at the
    /// bottom, each linked to the next and the last to the row below the merged range.
    pub rows: Vec<BuiltRow>,
    /// New metadata for the row right above the merged range (its id is in the header),
    /// if there is one.
    pub above: Option<RelinkedMeta>,
    /// What the merge kept and dropped.
    pub counters: StreamCounters,
}

/// Finishes `b` with the kept tombstones inside `[lower, upper)` and opens it in DRAM.
fn finish_output(
    mut b: RowBuilder<'_>,
    keep: &FragmentedTombstones,
    lower: Option<&[u8]>,
    upper: Option<&[u8]>,
) -> Result<(Vec<u8>, RowReader<Vec<u8>>)> {
    for t in keep.clipped(lower, upper) {
        b.add_range_tombstone(&t)?;
    }
    let built = b.finish()?;
    let header = built.header.clone();
    Ok((header, built.open()?))
}

impl<E: AsRef<[u8]> + Send + Sync + 'static> MatrixGroup<E> {
    /// The next table merge, if one is due: the oldest run of `merge_segments` consecutive
    /// closed segments not made by an earlier merge, lying within the bottom
    /// `merge_bottom_fraction` of the segments.
    pub fn plan_merge(&self) -> Option<MergePlan> {
        let m = self.segments.len();
        let eligible = ((m as f64) * self.params.merge_bottom_fraction).floor() as usize;
        let want = self.params.merge_segments;
        let lowest = m - eligible.min(m);
        let mut run_end = m;
        for i in (lowest..m).rev() {
            let s = self.segments.get(i)?;
            if s.is_open() || s.is_merged() {
                run_end = i;
            } else if run_end - i == want {
                let first_row = self.segments.get(..i)?.iter().map(|s| s.rows()).sum();
                let n: usize = self
                    .segments
                    .get(i..run_end)?
                    .iter()
                    .map(|s| s.rows())
                    .sum();
                let rows = first_row..first_row + n;
                let bytes: u64 = self
                    .rows
                    .get(rows.clone())?
                    .iter()
                    .map(|r| r.reader.header().data_bytes)
                    .sum();
                let avg = bytes as f64 / n.max(1) as f64;
                return Some(MergePlan {
                    row_ids: self
                        .rows
                        .get(rows.clone())?
                        .iter()
                        .map(|r| r.reader.id())
                        .collect(),
                    rows,
                    segments: i..run_end,
                    target_row_bytes: ((avg * self.params.merge_output_ratio).ceil() as u64).max(1),
                });
            }
        }
        None
    }

    /// Runs `plan`: merges its rows, drops what none of `snapshots` (nor a reader of the
    /// latest data) can see, keeps deletions and tombstones, and cuts the output into
    /// rows with ids from `next_id`.
    ///
    /// # Errors
    /// `InvalidArgument` if `plan` does not fit this group; errors reading the rows.
    pub fn merge_rows(
        &self,
        plan: &MergePlan,
        snapshots: &[SeqNo],
        next_id: &mut dyn FnMut() -> u64,
    ) -> Result<MergeOutput> {
        let inputs = self
            .rows
            .get(plan.rows.clone())
            .filter(|r| {
                r.iter()
                    .map(|r| r.reader.id())
                    .eq(plan.row_ids.iter().copied())
            })
            .ok_or_else(|| Error::Internal("merge plan does not fit the group".into()))?;
        let mut tombstones = Vec::new();
        for row in inputs {
            row.tombstones_into(&mut tombstones);
        }
        let all = FragmentedTombstones::new(&tombstones, MAX_SEQ);
        let keep = tombstones_to_keep(&all, snapshots, false);
        let children = inputs
            .iter()
            .map(|r| {
                Box::new(RowIterator::new(r.reader.clone(), r.start)) as Box<dyn InternalIterator>
            })
            .collect();
        let mut merged = MergingIterator::new(children);
        let config = StreamConfig {
            snapshots,
            ..StreamConfig::default()
        };
        let mut stream = CompactionStream::new(&mut merged, &all, config);

        let chunk = self.params.chunk_bytes;
        let below_row = self.rows.get(plan.rows.end);
        let first_below = below_row.map(|r| Below::new(&r.reader, r.start));
        // Outputs bottom first, with their headers.
        let mut outputs: Vec<(Vec<u8>, RowReader<Vec<u8>>)> = Vec::new();
        let mut lower: Option<Vec<u8>> = None;
        let mut builder = RowBuilder::new(next_id(), first_below, chunk)?;
        while let Some((k, v)) = stream.next_entry()? {
            let uk = key::user_key(k);
            if builder.data_bytes() >= plan.target_row_bytes
                && key::user_key(builder.last_key()) != uk
            {
                let upper = uk.to_vec();
                outputs.push(finish_output(
                    builder,
                    &keep,
                    lower.as_deref(),
                    Some(&upper),
                )?);
                lower = Some(upper);
                let below = outputs.last().map(|(_, r)| Below::new(r, 0));
                builder = RowBuilder::new(next_id(), below, chunk)?;
            }
            builder.add(k, v)?;
        }
        if builder.entries() > 0 || (outputs.is_empty() && !keep.is_empty()) {
            outputs.push(finish_output(builder, &keep, lower.as_deref(), None)?);
        }
        let counters = stream.counters();

        let above = match plan
            .rows
            .start
            .checked_sub(1)
            .and_then(|i| self.rows.get(i))
        {
            Some(a) => {
                let below = match outputs.last() {
                    Some((_, r)) => Some(Below::new(r, 0)),
                    None => below_row.map(|r| Below::new(&r.reader, r.start)),
                };
                Some(relink(&a.reader, a.start, below)?)
            }
            None => None,
        };
        let rows = outputs
            .into_iter()
            .rev()
            .map(|(header, r)| {
                let (meta_chunks, data_chunks) = r.into_chunks();
                BuiltRow {
                    header,
                    meta_chunks,
                    data_chunks,
                }
            })
            .collect();
        Ok(MergeOutput {
            rows,
            above,
            counters,
        })
    }

    /// This group with the rows of `plan` replaced by `outputs` (the opened rows of a
    /// [`MergeOutput`], top first) in segments of their own, marked as merged, and the row
    /// above replaced by `above` (opened from [`MergeOutput::above`] with that row's data
    /// chunks). Rows added on top since planning are kept. Without `above`, the row above
    /// keeps its old pointers and the top output is searched over its full range.
    ///
    /// # Errors
    /// `InvalidArgument` if the merged rows are no longer in the group as planned, or
    /// `above` is not the row above them; errors reading the outputs' keys.
    pub fn apply_merge(
        &self,
        plan: &MergePlan,
        outputs: Vec<Arc<RowReader<E>>>,
        above: Option<Arc<RowReader<E>>>,
    ) -> Result<Self> {
        let segments = Self::merged_segments(&outputs, &self.params)?;
        self.apply_merge_with(plan, outputs, above, segments)
    }

    /// The segment filters of a merge's `outputs` (top first): closed, marked merged, cut
    /// every `segment_rows` rows from the bottom. It reads every output key, so a caller
    /// that must not hold a lock while it does computes them first and hands them to
    /// [`MatrixGroup::apply_merge_with`].
    ///
    /// # Errors
    /// Errors reading the outputs' keys.
    pub fn merged_segments(
        outputs: &[Arc<RowReader<E>>],
        params: &MatrixParams,
    ) -> Result<Vec<Arc<SegmentFilter>>> {
        let hashes = outputs
            .iter()
            .map(|r| row_hashes(r, 0))
            .collect::<Result<Vec<_>>>()?;
        let (seg_rows, bits) = (params.segment_rows, params.bloom_bits_per_key);
        let mut new_segments = Vec::new();
        let mut end_at = hashes.len();
        while end_at > 0 {
            let begin = end_at.saturating_sub(seg_rows);
            let h = hashes.get(begin..end_at).unwrap_or_default();
            new_segments.push(Arc::new(SegmentFilter::closed(h, bits, true)));
            end_at = begin;
        }
        new_segments.reverse();
        Ok(new_segments)
    }

    /// [`MatrixGroup::apply_merge`] with the outputs' segment filters already made by
    /// [`MatrixGroup::merged_segments`] (with this group's parameters): reads nothing.
    ///
    /// # Errors
    /// As [`MatrixGroup::apply_merge`]; `InvalidArgument` if `segments` do not hold
    /// the outputs' rows.
    pub fn apply_merge_with(
        &self,
        plan: &MergePlan,
        outputs: Vec<Arc<RowReader<E>>>,
        above: Option<Arc<RowReader<E>>>,
        new_segments: Vec<Arc<SegmentFilter>>,
    ) -> Result<Self> {
        let bad = |r: &str| Error::Internal(format!("table merge: {r}"));
        let first_id = plan.row_ids.first().ok_or_else(|| bad("empty plan"))?;
        let start = self
            .rows
            .iter()
            .position(|r| r.reader.id() == *first_id)
            .ok_or_else(|| bad("merged rows are gone"))?;
        let end = start + plan.row_ids.len();
        let same = self.rows.get(start..end).is_some_and(|rs| {
            rs.iter()
                .map(|r| r.reader.id())
                .eq(plan.row_ids.iter().copied())
        });
        if !same {
            return Err(bad("merged rows changed"));
        }
        let (mut seg_start, mut seg_end, mut at) = (None, None, 0);
        for (i, s) in self.segments.iter().enumerate() {
            if at == start {
                seg_start = Some(i);
            }
            at += s.rows();
            if at == end {
                seg_end = Some(i + 1);
            }
        }
        let (Some(seg_start), Some(seg_end)) = (seg_start, seg_end) else {
            return Err(bad("merged rows do not fill whole segments"));
        };
        let mut g = self.clone();
        if let Some(a) = above {
            let slot = start.checked_sub(1).and_then(|i| g.rows.get_mut(i));
            match slot {
                Some(row) if row.reader.id() == a.id() && row.reader.len() == a.len() => {
                    row.reader = a;
                }
                _ => return Err(bad("relinked row is not the row above")),
            }
        }
        if new_segments.iter().map(|s| s.rows()).sum::<usize>() != outputs.len() {
            return Err(bad("segments do not hold the outputs"));
        }
        g.rows
            .splice(start..end, outputs.into_iter().map(GroupRow::new));
        g.segments.splice(seg_start..seg_end, new_segments);
        g.set_links();
        Ok(g)
    }
}

#[cfg(test)]
mod tests;
