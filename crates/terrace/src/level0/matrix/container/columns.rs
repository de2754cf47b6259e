//! The container as a level 0 that compacts itself: choosing the next column of the frozen
//! group, opening a column for the compaction executor, what the edit installing a
//! finished column records (trims, deletions, chunks given back), and the table merge as
//! the database drives it.
//!
//! Owns: the `SelfCompacting` and `Level0Source` implementations of [`MatrixLevel0`], and
//! the payload of the container's level-0 inputs (its rows' metadata, as JSON).
//! Must not touch: where a column ends (`column_cut`), the merge itself (`table_merge`) or
//! the manifest; the database records the returned records.
//! Concurrency: every method takes the container's state mutex; `rewrite` runs the merge
//! without it.

use std::collections::HashSet;
use std::sync::Arc;

use super::groups::open_column;
use super::{frozen_group, group_bytes, MatrixLevel0};
use crate::compaction::{Level0Column, Level0Input, Level0Source, Level0Unit};
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::level0::matrix::column_cut::{next_column, MatrixColumn};
use crate::level0::matrix::state::{rows_of, RowEdit, RowMeta};
use crate::level0::matrix::table_merge::accept_merge;
use crate::level0::{ColumnDone, Level0Env, Level0Flush, Level0Settings, SelfCompacting};
use crate::range_del::RangeTombstone;
use crate::version::Version;

/// The compaction's view of a column: its rows as units, and their metadata as payload.
fn to_level0_column(column: MatrixColumn) -> Result<Level0Column> {
    let rows: Vec<RowMeta> = column.rows.iter().map(|r| r.as_ref().clone()).collect();
    let units = rows
        .iter()
        .map(|r| Level0Unit {
            number: r.number,
            smallest_user_key: r.smallest_user_key().to_vec(),
            largest_user_key: r.largest_user_key().to_vec(),
            bytes: r.size,
        })
        .collect();
    let payload = serde_json::to_value(&rows)
        .map_err(|e| Error::Internal(format!("matrix column rows do not encode: {e}")))?;
    Ok(Level0Column {
        input: Level0Input { units, payload },
        lo: column.lo,
        hi: column.hi,
    })
}

/// The rows a level-0 input names, newest first.
///
/// # Errors
/// `InvalidArgument` if the input is not a matrix level 0's.
fn input_rows(input: &Level0Input) -> Result<Vec<RowMeta>> {
    let rows: Vec<RowMeta> = serde_json::from_value(input.payload.clone())
        .map_err(|e| Error::InvalidArgument(format!("not a matrix level-0 input: {e}")))?;
    let numbers = input.units.iter().map(|u| u.number);
    if !rows.iter().map(|r| r.number).eq(numbers) {
        return Err(Error::InvalidArgument(
            "matrix level-0 input: units and rows differ".into(),
        ));
    }
    Ok(rows)
}

impl Level0Source for MatrixLevel0 {
    fn open_input(
        &self,
        input: &Level0Input,
        out: &mut Vec<Box<dyn InternalIterator>>,
        tombstones: &mut Vec<RangeTombstone>,
    ) -> Result<()> {
        let rows = input_rows(input)?;
        let guard = self.state.lock();
        let st = guard.as_ref().ok_or_else(Self::not_open)?;
        let group = open_column(st, &rows, &self.opts.params)?;
        tombstones.extend(group.range_tombstones());
        out.extend(group.iterators());
        Ok(())
    }
}

impl SelfCompacting for MatrixLevel0 {
    fn next_column(
        &self,
        version: &Version,
        busy: &HashSet<u64>,
        settings: &Level0Settings,
        base_level: usize,
        manual: bool,
    ) -> Option<Level0Column> {
        let mut guard = self.state.lock();
        let st = guard.as_mut()?;
        let full = group_bytes(version, st.active_group) >= self.trigger_bytes()
            || !self.has_room(version, settings.write_buffer_size);
        if (manual || full)
            && st.pending.is_none()
            && frozen_group(version, st.active_group).is_none()
            && !rows_of(version).is_empty()
        {
            // Freeze every row now (a flush freezes too, but flushes may be stalled
            // waiting for room); later flushes start a new group.
            let newest = rows_of(version).iter().map(|r| r.group).max().unwrap_or(0);
            if st.active_group <= newest {
                st.active_group = newest + 1;
            }
        }
        let frozen = frozen_group(version, st.active_group)?;
        let rows: Vec<Arc<RowMeta>> = rows_of(version)
            .iter()
            .filter(|r| r.group == frozen)
            .cloned()
            .collect();
        if rows.iter().any(|r| busy.contains(&r.number)) {
            return None;
        }
        let group = st.groups.iter().find(|g| g.id == frozen)?.group.clone();
        let files = version.files(base_level);
        let column = next_column(rows, &group, files, self.column_bytes())?;
        match to_level0_column(column) {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::error!(error = %e, "matrix column cannot be described");
                None
            }
        }
    }

    fn finish_column(&self, column: &Level0Column) -> Result<ColumnDone> {
        let rows = input_rows(&column.input).map_err(|e| Error::Internal(e.to_string()))?;
        let mut edit = RowEdit::default();
        let mut released = 0u64;
        for r in &rows {
            match &column.hi {
                Some(hi) if r.largest_user_key() >= hi.as_slice() => {
                    edit.trimmed.push((r.number, hi.clone()));
                    // Giving chunks back is optional: a row that cannot say what it may
                    // release keeps all of them.
                    match self.releasable(r, hi) {
                        Ok(Some((chunks, size))) => {
                            released += u64::from(chunks.saturating_sub(r.released_chunks));
                            edit.released.push((r.number, chunks, size));
                        }
                        Ok(None) => {}
                        Err(e) => {
                            tracing::warn!(row = r.number, error = %e, "matrix row keeps its chunks");
                        }
                    }
                }
                _ => edit.deleted.push(r.number),
            }
        }
        Ok(ColumnDone {
            records: edit.into_records(),
            released,
        })
    }

    fn manual_mark(&self, version: &Version) -> Option<u64> {
        rows_of(version).iter().map(|r| r.group).max()
    }

    fn holds_marked(&self, version: &Version, mark: u64) -> bool {
        rows_of(version).iter().any(|r| r.group <= mark)
    }

    fn rewrite(&self, env: &Level0Env<'_>) -> Result<Option<Level0Flush>> {
        self.background_merge(env)
    }

    fn accept_rewrite(&self, version: &Version) -> Result<bool> {
        let mut guard = self.state.lock();
        let st = guard.as_mut().ok_or_else(Self::not_open)?;
        match st.merge_done.take() {
            Some(done) => accept_merge(st, done, version),
            None => Ok(false),
        }
    }
}

impl MatrixLevel0 {
    /// Once everything below the user key `trim` of `row` has moved to the base level:
    /// the leading data chunks the row can give back in all, and the bytes it then
    /// occupies, recorded in the same edit as the trim; `None` if no more than already
    /// released.
    fn releasable(&self, row: &RowMeta, trim: &[u8]) -> Result<Option<(u32, u64)>> {
        let guard = self.state.lock();
        let st = guard.as_ref().ok_or_else(Self::not_open)?;
        let stored = st
            .rows
            .get(&row.number)
            .ok_or_else(|| Error::Internal(format!("matrix row {} is not loaded", row.number)))?;
        let n = stored.releasable(trim)?;
        if n <= row.released_chunks as usize {
            return Ok(None);
        }
        let chunks =
            u32::try_from(n).map_err(|_| Error::Internal("too many matrix row chunks".into()))?;
        Ok(Some((chunks, stored.release(n)?.size())))
    }
}
