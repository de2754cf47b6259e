//! A group of stacked rows (the thesis's group1 or group2): the rows newest first, each
//! with its trim, and the segment bloom filters over them.
//!
//! Owns: [`MatrixGroup`]: which row lies on which, whether each row's `next` pointers
//! refer to the row below it in the group, trims, segments, and the group's iterators.
//! Point lookups are in `search`, table merges in `merge`.
//! Must not touch: row bytes (rows are shared, immutable `RowReader`s) or persistent
//! memory; every change returns a new group and leaves the old one intact for readers.
//! Concurrency: a group is immutable; `Send`/`Sync` when the chunk type is. Cloning it
//! copies a vector of `Arc`s.

use std::sync::Arc;

use super::bloom::{row_hashes, SegmentFilter};
use super::iter::RowIterator;
use super::row::RowReader;
use super::MatrixParams;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{self, SeqNo, MAX_SEQ};
use crate::merge::MergingIterator;
use crate::range_del::RangeTombstone;

/// One row of a group.
pub(in crate::level0::matrix) struct GroupRow<E> {
    pub(in crate::level0::matrix) reader: Arc<RowReader<E>>,
    /// First position still present (entries before it were consumed by compaction).
    pub(in crate::level0::matrix) start: usize,
    /// User keys below this are gone from the row (its tombstones no longer count there).
    pub(in crate::level0::matrix) trim: Option<Arc<[u8]>>,
    /// The row's `next` pointers refer to the next row of the group.
    pub(in crate::level0::matrix) linked: bool,
}

impl<E> Clone for GroupRow<E> {
    fn clone(&self) -> Self {
        GroupRow {
            reader: self.reader.clone(),
            start: self.start,
            trim: self.trim.clone(),
            linked: self.linked,
        }
    }
}

impl<E: AsRef<[u8]>> GroupRow<E> {
    pub(in crate::level0::matrix) fn new(reader: Arc<RowReader<E>>) -> Self {
        GroupRow {
            start: reader.first_live(),
            reader,
            trim: None,
            linked: false,
        }
    }

    /// Appends the row's range tombstones, cut to its trim.
    pub(in crate::level0::matrix) fn tombstones_into(&self, out: &mut Vec<RangeTombstone>) {
        for t in self.reader.range_tombstones() {
            let mut t = t.clone();
            if let Some(trim) = self.trim.as_deref() {
                if t.end.as_slice() <= trim {
                    continue;
                }
                if t.start.as_slice() < trim {
                    t.start = trim.to_vec();
                }
            }
            out.push(t);
        }
    }

    /// The newest tombstone `<= snap` of this row covering `user_key`, or 0.
    pub(in crate::level0::matrix) fn covering_tombstone(
        &self,
        user_key: &[u8],
        snap: SeqNo,
    ) -> SeqNo {
        if self.trim.as_deref().is_some_and(|t| user_key < t) {
            return 0;
        }
        self.reader.max_covering_tombstone(user_key, snap)
    }
}

/// Rows stacked newest first, with segment filters. See the module docs.
pub struct MatrixGroup<E> {
    pub(in crate::level0::matrix) rows: Vec<GroupRow<E>>,
    /// Newest first; their row counts add up to `rows.len()`.
    pub(in crate::level0::matrix) segments: Vec<Arc<SegmentFilter>>,
    pub(in crate::level0::matrix) params: MatrixParams,
}

impl<E> Clone for MatrixGroup<E> {
    fn clone(&self) -> Self {
        MatrixGroup {
            rows: self.rows.clone(),
            segments: self.segments.clone(),
            params: self.params.clone(),
        }
    }
}

impl<E> std::fmt::Debug for MatrixGroup<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MatrixGroup")
            .field("rows", &self.rows.len())
            .field("segments", &self.segments.len())
            .finish()
    }
}

impl<E: AsRef<[u8]>> MatrixGroup<E> {
    /// An empty group.
    ///
    /// # Errors
    /// `InvalidArgument` if `params` are not valid.
    pub fn new(params: MatrixParams) -> Result<Self> {
        params.validate()?;
        Ok(MatrixGroup {
            rows: Vec::new(),
            segments: Vec::new(),
            params,
        })
    }

    /// A group of `rows`, newest first (after a restart, say). Segments are cut from the
    /// bottom every `segment_rows` rows; a shorter top segment stays open. Filters are
    /// built by reading every row's keys still held; a row with released data chunks
    /// starts at its first held entry.
    ///
    /// # Errors
    /// `InvalidArgument` for bad `params`; errors reading the rows.
    pub fn from_rows(rows: Vec<Arc<RowReader<E>>>, params: MatrixParams) -> Result<Self> {
        let marks = vec![0; rows.len()];
        Self::from_marked_rows(rows, &marks, params)
    }

    /// A group of `rows`, newest first, with the table merge that wrote each (`marks`,
    /// newest first; 0 for a flushed row), as a version records them. Each run of rows
    /// with one mark is cut into segments from its bottom every `segment_rows` rows, as
    /// flushes and merges cut them: a merge's segments are closed and marked merged (no
    /// later merge takes them again), and a shorter top segment of flushed rows stays open.
    ///
    /// # Errors
    /// `InvalidArgument` for bad `params` or a mark count that differs from the rows;
    /// errors reading the rows.
    pub fn from_marked_rows(
        rows: Vec<Arc<RowReader<E>>>,
        marks: &[u64],
        params: MatrixParams,
    ) -> Result<Self> {
        if marks.len() != rows.len() {
            return Err(Error::Internal(
                "matrix group: one merge mark per row".into(),
            ));
        }
        let mut g = MatrixGroup::new(params)?;
        let hashes = rows
            .iter()
            .map(|r| row_hashes(r, r.first_live()))
            .collect::<Result<Vec<_>>>()?;
        g.rows = rows.into_iter().map(GroupRow::new).collect();
        let seg = g.params.segment_rows;
        let bits = g.params.bloom_bits_per_key;
        let mut end = g.rows.len();
        while end > 0 {
            let mark = marks.get(end - 1).copied().unwrap_or(0);
            // The run of rows with this mark ends (towards the top) at `run_begin`.
            let run_begin = marks
                .get(..end)
                .unwrap_or_default()
                .iter()
                .rposition(|m| *m != mark)
                .map_or(0, |i| i + 1);
            let begin = end.saturating_sub(seg).max(run_begin);
            let h = hashes.get(begin..end).unwrap_or_default();
            g.segments.push(Arc::new(if mark != 0 {
                SegmentFilter::closed(h, bits, true)
            } else if begin == 0 && end - begin < seg {
                SegmentFilter::open(h.to_vec(), bits)
            } else {
                SegmentFilter::closed(h, bits, false)
            }));
            end = begin;
        }
        g.segments.reverse();
        g.set_links();
        Ok(g)
    }

    /// Recomputes which rows' pointers refer to the row below them in the group.
    pub(in crate::level0::matrix) fn set_links(&mut self) {
        let below: Vec<_> = self
            .rows
            .iter()
            .skip(1)
            .map(|r| (r.reader.id(), r.reader.len() as u64))
            .map(Some)
            .chain(std::iter::once(None))
            .collect();
        for (row, b) in self.rows.iter_mut().zip(below) {
            row.linked = match (row.reader.below(), b) {
                (Some(l), Some((id, n))) => l.row_id == id && l.entries == n,
                _ => false,
            };
        }
    }

    /// This group with `row` (freshly flushed) on top, in the top segment if that is open.
    ///
    /// # Errors
    /// Errors reading the new row's keys.
    pub fn with_row_on_top(&self, row: Arc<RowReader<E>>) -> Result<Self> {
        let mut g = self.clone();
        let hashes = row_hashes(&row, row.first_live())?;
        let (bits, seg) = (g.params.bloom_bits_per_key, g.params.segment_rows);
        g.rows.insert(0, GroupRow::new(row));
        match g.segments.first_mut() {
            Some(top) if top.is_open() => *top = Arc::new(top.with_row(hashes, bits, seg)),
            _ => g.segments.insert(
                0,
                Arc::new(SegmentFilter::open(Vec::new(), bits).with_row(hashes, bits, seg)),
            ),
        }
        g.set_links();
        Ok(g)
    }

    /// This group with every user key below `user_key` gone from every row (column
    /// compaction has moved them down). Trims only grow.
    ///
    /// # Errors
    /// Errors reading the rows.
    pub fn trimmed(&self, user_key: &[u8]) -> Result<Self> {
        let mut g = self.clone();
        let target = key::seek_key(user_key, MAX_SEQ);
        for row in &mut g.rows {
            if row.trim.as_deref().is_some_and(|t| t >= user_key) {
                continue;
            }
            row.start = row
                .reader
                .lower_bound(&target, row.start, row.reader.len())?;
            row.trim = Some(user_key.into());
        }
        Ok(g)
    }

    /// This group without the rows at positions `drop` (newest first; a column
    /// compaction consumed them whole). The other rows keep their starts and trims, the
    /// segments their filters (now covering a row or more than they hold), so nothing is
    /// read; a row whose pointers referred to a dropped row is searched in full.
    ///
    /// # Errors
    /// `InvalidArgument` if a position is past the rows.
    pub fn without_rows(&self, drop: &[usize]) -> Result<Self> {
        if let Some(bad) = drop.iter().find(|&&i| i >= self.rows.len()) {
            return Err(Error::Internal(format!(
                "matrix group: no row {bad} to drop of {}",
                self.rows.len()
            )));
        }
        let mut g = self.clone();
        let bits = g.params.bloom_bits_per_key;
        let mut drop = drop.to_vec();
        drop.sort_unstable();
        drop.dedup();
        // From the bottom up, so the positions above stay valid.
        for &i in drop.iter().rev() {
            let mut first = 0;
            for s in 0..g.segments.len() {
                let n = g.segments.get(s).map_or(0, |seg| seg.rows());
                if i < first + n {
                    match g
                        .segments
                        .get(s)
                        .and_then(|seg| seg.without_row(i - first, bits))
                    {
                        Some(seg) => {
                            if let Some(slot) = g.segments.get_mut(s) {
                                *slot = Arc::new(seg);
                            }
                        }
                        None => {
                            g.segments.remove(s);
                        }
                    }
                    break;
                }
                first += n;
            }
            g.rows.remove(i);
        }
        g.set_links();
        Ok(g)
    }

    /// This group with its rows' readers replaced by `readers` (newest first): the same
    /// rows, some of which gave data chunks back since. Starts, trims, links and segment
    /// filters are kept, so nothing is read.
    ///
    /// # Errors
    /// `InvalidArgument` if `readers` are not the same rows, or one no longer holds an
    /// entry at or after its row's start.
    pub fn with_readers(&self, readers: Vec<Arc<RowReader<E>>>) -> Result<Self> {
        if readers.len() != self.rows.len() {
            return Err(Error::Internal("matrix group: reader count differs".into()));
        }
        let mut g = self.clone();
        for (row, reader) in g.rows.iter_mut().zip(readers) {
            let same = reader.id() == row.reader.id() && reader.len() == row.reader.len();
            if !same || reader.first_live() > row.start {
                return Err(Error::Internal(format!(
                    "matrix group: row {} cannot take the reader of row {}",
                    row.reader.id(),
                    reader.id()
                )));
            }
            row.reader = reader;
        }
        Ok(g)
    }

    /// The parameters.
    pub fn params(&self) -> &MatrixParams {
        &self.params
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True if the group has no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Row `i` (0 is the newest).
    pub fn row(&self, i: usize) -> Option<&Arc<RowReader<E>>> {
        self.rows.get(i).map(|r| &r.reader)
    }

    /// The rows, newest first.
    pub fn rows(&self) -> impl Iterator<Item = &Arc<RowReader<E>>> {
        self.rows.iter().map(|r| &r.reader)
    }

    /// The first position of row `i` still present (0 unless trimmed).
    pub fn row_start(&self, i: usize) -> Option<usize> {
        self.rows.get(i).map(|r| r.start)
    }

    /// The segment filters, newest first; their row counts add up to `len()`.
    pub fn segments(&self) -> &[Arc<SegmentFilter>] {
        &self.segments
    }

    /// True if every row but the bottom one has pointers into the row below it. A row
    /// whose pointers refer to another row still reads correctly: the row below it is
    /// then searched over its full range.
    pub fn fully_linked(&self) -> bool {
        self.rows.iter().rev().skip(1).all(|r| r.linked)
    }

    /// Key and value bytes of all rows (trimmed entries included).
    pub fn data_bytes(&self) -> u64 {
        self.rows.iter().map(|r| r.reader.header().data_bytes).sum()
    }

    /// Every row's range tombstones, each cut to the row's trim.
    pub fn range_tombstones(&self) -> Vec<RangeTombstone> {
        let mut out = Vec::new();
        for row in &self.rows {
            row.tombstones_into(&mut out);
        }
        out
    }
}

impl<E: AsRef<[u8]> + Send + Sync + 'static> MatrixGroup<E> {
    /// One iterator per row (newest first), each starting at the row's trim.
    pub fn iterators(&self) -> Vec<Box<dyn InternalIterator>> {
        self.rows
            .iter()
            .map(|r| {
                Box::new(RowIterator::new(r.reader.clone(), r.start)) as Box<dyn InternalIterator>
            })
            .collect()
    }

    /// A merging iterator over all rows; range tombstones come from
    /// [`MatrixGroup::range_tombstones`].
    pub fn merging_iter(&self) -> MergingIterator {
        MergingIterator::new(self.iterators())
    }
}
