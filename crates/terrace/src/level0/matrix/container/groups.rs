//! Which rows form which group: the row metadata a flush records, the groups built for
//! each version (reused while their rows and trims do not change), the data chunks given
//! back once a version records them as released, and the column inputs opened from the
//! same groups (`open_column`).
//!
//! Owns: `CachedGroup` and the building of groups from loaded rows.
//! Must not touch: the manifest, the region's pages (rows free them when dropped) or the
//! row format (`level0::matrix`).
//! Concurrency: called with the container's state mutex held; the groups built are
//! immutable and shared with views by `Arc`.

use std::sync::Arc;

use super::store::{DirLocation, StoredRow};
use super::State;
use crate::error::{Error, Result};
use crate::key::{InternalKey, SeqNo, ValueType, MAX_SEQ};
use crate::level0::matrix::rows::{MatrixGroup, MatrixParams};
use crate::level0::matrix::state::{rows_of, RowMeta};
use crate::memtable::MemTable;
use crate::pmem::Extent;
use crate::range_del::RangeTombstone;
use crate::version::Version;

/// A group built for a version, kept to build the next view cheaply.
#[derive(Clone)]
pub(in crate::level0::matrix) struct CachedGroup {
    pub(in crate::level0::matrix) id: u64,
    /// `(number, trim)` of its rows, newest first.
    rows: Vec<(u64, Option<Vec<u8>>)>,
    pub(in crate::level0::matrix) group: Arc<MatrixGroup<Extent>>,
}

impl CachedGroup {
    /// Group `id` of the rows `numbers` (newest first, none trimmed).
    pub(in crate::level0::matrix) fn untrimmed(
        id: u64,
        numbers: Vec<u64>,
        group: MatrixGroup<Extent>,
    ) -> Self {
        CachedGroup {
            id,
            rows: numbers.into_iter().map(|n| (n, None)).collect(),
            group: Arc::new(group),
        }
    }

    /// The numbers of its rows, newest first.
    pub(in crate::level0::matrix) fn numbers(&self) -> impl Iterator<Item = u64> + '_ {
        self.rows.iter().map(|(n, _)| *n)
    }
}

/// The row metadata of a stored row built from `mem`.
pub(in crate::level0::matrix) fn row_meta(
    number: u64,
    group: u64,
    below: u64,
    stored: &StoredRow,
    mem: &MemTable,
    tombstones: &[RangeTombstone],
) -> Result<RowMeta> {
    stored_row_meta(
        number,
        group,
        below,
        stored,
        tombstones,
        None,
        mem.largest_seq(),
    )
}

/// The row metadata of `stored`, a row of `group` whose hints point into row `below`, with
/// range `tombstones`. Its sequence bounds are the header's widened to `smallest_seq` (if
/// given) and `largest_seq`: a flushed row's largest is its memtable's, and a table
/// merge's outputs take their inputs' bounds, so that they sort together in a version.
pub(in crate::level0::matrix) fn stored_row_meta(
    number: u64,
    group: u64,
    below: u64,
    stored: &StoredRow,
    tombstones: &[RangeTombstone],
    smallest_seq: Option<SeqNo>,
    largest_seq: SeqNo,
) -> Result<RowMeta> {
    let h = stored.reader.header();
    let loc: DirLocation = stored.location();
    let mut smallest: Option<InternalKey> = None;
    let mut largest: Option<InternalKey> = None;
    if !stored.reader.is_empty() {
        smallest = Some(InternalKey(h.smallest_key.clone()));
        largest = Some(InternalKey(h.largest_key.clone()));
    }
    for t in tombstones {
        let s = InternalKey::new(&t.start, t.seq, ValueType::RangeDeletion);
        let e = InternalKey::new(&t.end, MAX_SEQ, ValueType::RangeDeletion);
        if smallest
            .as_ref()
            .is_none_or(|k| crate::key::compare(s.encoded(), k.encoded()).is_lt())
        {
            smallest = Some(s);
        }
        if largest
            .as_ref()
            .is_none_or(|k| crate::key::compare(e.encoded(), k.encoded()).is_gt())
        {
            largest = Some(e);
        }
    }
    let (Some(smallest), Some(largest)) = (smallest, largest) else {
        return Err(Error::Internal("an empty row has no metadata".into()));
    };
    let seqs = tombstones.iter().map(|t| t.seq);
    Ok(RowMeta {
        number,
        group,
        dir_offset: loc.offset,
        dir_len: loc.len,
        dir_checksum: loc.checksum,
        size: stored.size(),
        smallest,
        largest,
        smallest_seq: seqs
            .clone()
            .chain([h.smallest_seq])
            .chain(smallest_seq)
            .min()
            .unwrap_or(0),
        largest_seq: seqs.chain([h.largest_seq, largest_seq]).max().unwrap_or(0),
        num_entries: stored.reader.len() as u64,
        num_deletions: h.num_deletions,
        num_range_deletions: tombstones.len() as u64,
        trim: None,
        below,
        released_chunks: 0,
        merge: 0,
    })
}

/// Gives back the data chunks that `version` records as released: each such row's reader
/// is replaced by one without them. Views still holding the old reader keep the pages
/// until they are dropped; then the pages return to the region.
pub(in crate::level0::matrix) fn release_chunks(st: &mut State, version: &Version) -> Result<()> {
    for r in rows_of(version) {
        let want = r.released_chunks as usize;
        if let Some(stored) = st.rows.get_mut(&r.number) {
            if stored.released() < want {
                *stored = Arc::new(stored.release(want)?);
            }
        }
    }
    Ok(())
}

/// The groups of `version`, newest first, reusing the cached ones that did not change.
pub(in crate::level0::matrix) fn build_groups(
    st: &State,
    version: &Version,
    params: &MatrixParams,
) -> Result<Vec<CachedGroup>> {
    let mut ids: Vec<u64> = rows_of(version).iter().map(|r| r.group).collect();
    ids.dedup();
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let metas: Vec<&Arc<RowMeta>> = rows_of(version).iter().filter(|r| r.group == id).collect();
        let sig: Vec<(u64, Option<Vec<u8>>)> =
            metas.iter().map(|r| (r.number, r.trim.clone())).collect();
        let marks: Vec<u64> = metas.iter().map(|r| r.merge).collect();
        let cached = st.groups.iter().find(|g| g.id == id);
        // The group as it was, or as a table merge about to be recorded left it.
        let mut ready = cached.into_iter().chain(st.prepared.as_ref());
        if let Some(c) = ready.find(|c| c.id == id && c.rows == sig) {
            out.push(c.clone());
            continue;
        }
        let reader = |n: u64| {
            st.rows
                .get(&n)
                .map(|r| r.reader.clone())
                .ok_or_else(|| Error::Internal(format!("matrix row {n} is not loaded")))
        };
        // One new row on top of an unchanged group: stack it. The same rows with a new
        // trim (a column compaction): trim the cached group and take the rows' readers,
        // which may have given chunks back, keeping its filters.
        // Rows a column consumed whole leave the group: drop them from the cached one.
        let stacked = cached.filter(|c| sig.get(1..) == Some(c.rows.as_slice()));
        let kept_rows = cached.and_then(|c| dropped_rows(&c.rows, &sig).map(|d| (c, d)));
        let group = match (stacked, kept_rows, sig.first()) {
            (Some(c), _, Some((n, None))) => c.group.with_row_on_top(reader(*n)?)?,
            (_, Some((c, dropped)), _) => {
                let kept = if dropped.is_empty() {
                    (*c.group).clone()
                } else {
                    c.group.without_rows(&dropped)?
                };
                let retrimmed = match sig.iter().filter_map(|(_, t)| t.as_deref()).max() {
                    Some(t) => kept.trimmed(t)?,
                    None => kept,
                };
                let readers = sig
                    .iter()
                    .map(|(n, _)| reader(*n))
                    .collect::<Result<Vec<_>>>()?;
                match retrimmed.with_readers(readers) {
                    Ok(g) => g,
                    Err(_) => group_of(st, &sig, &marks, params)?,
                }
            }
            _ => group_of(st, &sig, &marks, params)?,
        };
        out.push(CachedGroup {
            id,
            rows: sig,
            group: Arc::new(group),
        });
    }
    Ok(out)
}

/// The positions of the rows of `cached` (`(number, trim)`, newest first) that `sig` no
/// longer holds, if `sig` is `cached`'s rows less those, in the same order; `None` if
/// `sig` has a row `cached` lacks or orders them differently.
pub(in crate::level0::matrix) fn dropped_rows(
    cached: &[(u64, Option<Vec<u8>>)],
    sig: &[(u64, Option<Vec<u8>>)],
) -> Option<Vec<usize>> {
    let mut dropped = Vec::new();
    let mut want = sig.iter().peekable();
    for (i, (n, _)) in cached.iter().enumerate() {
        match want.peek() {
            Some((m, _)) if m == n => {
                want.next();
            }
            _ => dropped.push(i),
        }
    }
    want.next().is_none().then_some(dropped)
}

/// The group of the rows `sig` (`(number, trim)`, newest first) from their loaded readers,
/// with segments cut by their merge `marks` (`RowMeta::merge`). Every row of a group is
/// trimmed at the same key (the columns done).
fn group_of(
    st: &State,
    sig: &[(u64, Option<Vec<u8>>)],
    marks: &[u64],
    params: &MatrixParams,
) -> Result<MatrixGroup<Extent>> {
    let readers = sig
        .iter()
        .map(|(n, _)| {
            st.rows
                .get(n)
                .map(|r| r.reader.clone())
                .ok_or_else(|| Error::Internal(format!("matrix row {n} is not loaded")))
        })
        .collect::<Result<Vec<_>>>()?;
    let g = MatrixGroup::from_marked_rows(readers, marks, params.clone())?;
    match sig.iter().filter_map(|(_, t)| t.as_deref()).max() {
        Some(t) => g.trimmed(t),
        None => Ok(g),
    }
}

/// The group of a column's `rows` (newest first): the group the views use when the rows
/// are exactly its rows, else one built from their loaded readers.
///
/// # Errors
/// `Internal` if a row is not loaded; errors reading the rows.
pub(in crate::level0::matrix) fn open_column(
    st: &State,
    rows: &[RowMeta],
    params: &MatrixParams,
) -> Result<Arc<MatrixGroup<Extent>>> {
    let sig: Vec<(u64, Option<Vec<u8>>)> =
        rows.iter().map(|r| (r.number, r.trim.clone())).collect();
    if let Some(c) = st.groups.iter().find(|g| g.rows == sig) {
        return Ok(c.group.clone());
    }
    let marks: Vec<u64> = rows.iter().map(|r| r.merge).collect();
    Ok(Arc::new(group_of(st, &sig, &marks, params)?))
}
