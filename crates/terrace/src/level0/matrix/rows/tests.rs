//! Tests of the matrix container: shared models and generators here, one file per part.

mod iter;
mod release;
mod row;
mod search;

use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::key::{self, SeqNo, ValueType};
use crate::range_del::RangeTombstone;

/// An entry: internal key and value.
pub(crate) type Entry = (Vec<u8>, Vec<u8>);

/// A row as plain data: sorted entries and tombstones.
#[derive(Debug, Clone, Default)]
pub(crate) struct ModelRow {
    pub entries: Vec<Entry>,
    pub tombstones: Vec<RangeTombstone>,
}

/// The user keys the generators draw from: short keys, keys that are prefixes of each
/// other, and keys sharing more than the 8-byte prefix.
pub(crate) fn universe() -> Vec<Vec<u8>> {
    let mut u: Vec<Vec<u8>> = Vec::new();
    for i in 0..12u8 {
        u.push(vec![b'a' + i]);
        u.push(vec![b'a' + i, 0]);
        u.push(format!("{}{i:02}", "long-shared-prefix-").into_bytes());
        u.push(format!("k{i:02}").into_bytes());
    }
    u.sort();
    u.dedup();
    u
}

/// Keys the generators never write: lookups of absent keys.
pub(crate) fn absent_keys() -> Vec<Vec<u8>> {
    vec![
        b"".to_vec(),
        b"0".to_vec(),
        b"b\x01".to_vec(),
        b"k05x".to_vec(),
        b"zzz".to_vec(),
    ]
}

pub(crate) fn put(uk: &[u8], seq: SeqNo, v: &[u8]) -> Entry {
    (key::internal_key(uk, seq, ValueType::Value), v.to_vec())
}

pub(crate) fn del(uk: &[u8], seq: SeqNo) -> Entry {
    (key::internal_key(uk, seq, ValueType::Deletion), Vec::new())
}

/// A generated row: `(key index, is_delete, value length)` per write, and tombstones as
/// `(start index, end index)`.
pub(crate) type RowSpec = (Vec<(usize, bool, usize)>, Vec<(usize, usize)>);

pub(crate) fn row_spec(max_writes: usize) -> impl Strategy<Value = RowSpec> {
    let n = universe().len();
    (
        prop::collection::vec((0..n, prop::bool::weighted(0.2), 0usize..40), 0..max_writes),
        prop::collection::vec((0..n, 0..n), 0..2),
    )
}

/// Turns specs (bottom row first) into model rows with sequence numbers growing upward;
/// returns the rows bottom first and the last sequence number used.
pub(crate) fn model_rows(specs: &[RowSpec]) -> (Vec<ModelRow>, SeqNo) {
    let u = universe();
    let mut seq = 0;
    let mut rows = Vec::new();
    for (writes, tombs) in specs {
        let mut row = ModelRow::default();
        for &(k, is_del, vlen) in writes {
            seq += 1;
            let uk = &u[k % u.len()];
            row.entries.push(if is_del {
                del(uk, seq)
            } else {
                put(uk, seq, &vec![b'v' ^ (seq as u8); vlen])
            });
        }
        for &(a, b) in tombs {
            seq += 1;
            let (a, b) = (a.min(b), a.max(b));
            row.tombstones.push(RangeTombstone {
                start: u[a].clone(),
                end: u[b].clone(),
                seq,
            });
        }
        row.entries.sort_by(|a, b| key::compare(&a.0, &b.0));
        rows.push(row);
    }
    (rows, seq)
}

/// Builds `rows` (bottom first) as a stack, each row linked to the one below; returns
/// the readers newest first.
pub(crate) fn build_stack(rows: &[ModelRow], chunk_bytes: usize) -> Vec<Arc<RowReader<Vec<u8>>>> {
    let mut stack: Vec<Arc<RowReader<Vec<u8>>>> = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let below = stack.last().map(|r| Below::new(r.as_ref(), 0));
        let built = build_row(
            100 + i as u64,
            row.entries.iter().cloned(),
            &row.tombstones,
            below,
            chunk_bytes,
        )
        .unwrap();
        stack.push(Arc::new(built.open().unwrap()));
    }
    stack.reverse();
    stack
}

/// A group over `rows` (bottom first), built row by row on top as flushes would.
pub(crate) fn build_group(rows: &[ModelRow], params: &MatrixParams) -> MatrixGroup<Vec<u8>> {
    let mut g = MatrixGroup::new(params.clone()).unwrap();
    let mut stack = build_stack(rows, params.chunk_bytes);
    stack.reverse();
    for r in stack {
        g = g.with_row_on_top(r).unwrap();
    }
    g
}

/// The brute-force answer of `MatrixGroup::find` over model rows (newest first) trimmed
/// at `trim`: `(row, seq, kind, value)` of the newest visible entry, and the newest
/// visible covering tombstone down to that row.
#[allow(clippy::type_complexity)]
pub(crate) fn brute_find(
    rows_newest_first: &[&ModelRow],
    trim: Option<&[u8]>,
    uk: &[u8],
    snap: SeqNo,
) -> (Option<(usize, SeqNo, ValueType, Vec<u8>)>, SeqNo) {
    let mut max_t = 0;
    let gone = trim.is_some_and(|t| uk < t);
    for (i, row) in rows_newest_first.iter().enumerate() {
        if gone {
            continue;
        }
        for t in &row.tombstones {
            if t.seq <= snap && t.contains(uk) {
                max_t = max_t.max(t.seq);
            }
        }
        let hit = row
            .entries
            .iter()
            .filter_map(|(k, v)| {
                let p = key::try_parse(k).unwrap();
                (p.user_key == uk && p.seq <= snap).then(|| (i, p.seq, p.kind, v.clone()))
            })
            .max_by_key(|h| h.1);
        if hit.is_some() {
            return (hit, max_t);
        }
    }
    (None, max_t)
}

/// What a read of `uk` at `snap` ends with, looking only at the group (data below it is
/// older than any of its tombstones).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    Value(Vec<u8>),
    Deleted,
    Absent,
}

pub(crate) fn outcome(g: &MatrixGroup<Vec<u8>>, uk: &[u8], snap: SeqNo) -> Outcome {
    let r = g.find(uk, snap).unwrap();
    match r.entry {
        Some(e) if e.kind == ValueType::Value && e.seq >= r.max_tombstone_seq => {
            Outcome::Value(e.value.to_vec())
        }
        Some(_) => Outcome::Deleted,
        None if r.max_tombstone_seq > 0 => Outcome::Deleted,
        None => Outcome::Absent,
    }
}
