//! What every collection type's commands share: finding a key's collection (or
//! WRONGTYPE), starting a new one under a fresh version, writing its metadata back (or
//! deleting the key when it has no members left), copying one, and stateless scans.
//!
//! Owns: the life cycle of a collection's metadata. Must not touch: the member layout of
//! a type (each type's module builds its member records with `value::keys`).

use terrace::WriteBatch;

use super::arg::{int, is};
use super::glob::glob_match;
use super::store::{delete_top, put_top};
use super::{Ctx, Fail};
use crate::resp::Reply;
use crate::value::keys::{self, Sub};
use crate::value::{CollKind, CollMeta, Top};

/// A new list's head index: the middle of the index range, so that it can grow as far
/// at either end.
pub(crate) const LIST_START: u64 = 1 << 63;

/// `key`'s live collection of `kind`; `None` if the key does not exist; WRONGTYPE if it
/// holds something else.
pub(crate) fn find(ctx: &Ctx<'_>, key: &[u8], kind: CollKind) -> Result<Option<CollMeta>, Fail> {
    match ctx.get_top(key)? {
        None => Ok(None),
        Some(Top::Coll(m)) if m.kind == kind => Ok(Some(m)),
        Some(_) => Err(Fail::wrongtype()),
    }
}

/// `key`'s collection of `kind` for a write: the live one, or a new empty one under a
/// fresh version (members of an earlier collection of this key, deleted or expired, are
/// never seen again).
pub(crate) fn find_or_new(ctx: &Ctx<'_>, key: &[u8], kind: CollKind) -> Result<CollMeta, Fail> {
    match find(ctx, key, kind)? {
        Some(m) => Ok(m),
        None => Ok(CollMeta::new(
            kind,
            ctx.engine.store.new_version()?,
            0,
            if kind == CollKind::List {
                LIST_START
            } else {
                0
            },
        )),
    }
}

/// Adds `meta`, the collection's new state, to `batch`: its metadata, or the key's
/// deletion when it has no members left (Redis deletes empty collections).
pub(crate) fn put_meta(batch: &mut WriteBatch, key: &[u8], meta: &CollMeta) {
    if meta.size == 0 {
        delete_top(batch, key);
    } else {
        put_top(batch, key, &Top::Coll(*meta));
    }
}

/// Adds to `batch` a copy of the collection `meta` of `src` as `dst`'s, under a new
/// version, and returns the copy's metadata (RENAME and COPY). Linear in its members.
pub(crate) fn copy(
    ctx: &Ctx<'_>,
    batch: &mut WriteBatch,
    src: &[u8],
    dst: &[u8],
    meta: &CollMeta,
) -> Result<CollMeta, Fail> {
    let copy = CollMeta {
        version: ctx.engine.store.new_version()?,
        ..*meta
    };
    for &sub in meta.kind.subs() {
        let from = keys::members(sub, src, meta.version);
        let to = keys::members(sub, dst, copy.version);
        ctx.for_each_member(&from, b"", |member, value| {
            let mut k = to.clone();
            k.extend_from_slice(member);
            batch.put(&k, value);
            true
        })?;
    }
    put_top(batch, dst, &Top::Coll(copy));
    Ok(copy)
}

/// The keys and LIMIT of `SINTERCARD`/`ZINTERCARD numkeys key [key ...] [LIMIT limit]`
/// (`args` the whole command); a limit of 0 is none.
pub(crate) fn intercard_args<'a>(args: &[&'a [u8]]) -> Result<(Vec<&'a [u8]>, usize), Fail> {
    let n = int(args.get(1).copied().unwrap_or_default())?;
    if n <= 0 {
        return Err(Fail::err("numkeys should be greater than 0"));
    }
    let n = usize::try_from(n).unwrap_or(usize::MAX);
    let keys = args
        .get(2..2usize.saturating_add(n))
        .filter(|k| k.len() == n)
        .ok_or_else(|| Fail::err("Number of keys can't be greater than number of args"))?;
    let limit = match args.get(2 + n..).unwrap_or_default() {
        [] => 0,
        [opt, value] if is(opt, "limit") => {
            let l = int(value)?;
            if l < 0 {
                return Err(Fail::err("LIMIT can't be negative"));
            }
            usize::try_from(l).unwrap_or(usize::MAX)
        }
        _ => return Err(Fail::syntax()),
    };
    Ok((keys.to_vec(), limit))
}

/// A parsed `HSCAN`/`SSCAN`/`ZSCAN` request: `key cursor [MATCH p] [COUNT n]` plus the
/// flags the caller accepts (`NOVALUES`).
pub(crate) struct ScanArgs<'a> {
    /// Where to resume: the hash of the first member not yet returned (0: the start).
    pub(crate) cursor: u64,
    pub(crate) pattern: Option<&'a [u8]>,
    pub(crate) count: usize,
    pub(crate) novalues: bool,
}

impl<'a> ScanArgs<'a> {
    /// Parses `args` (the command's whole vector), accepting NOVALUES when `novalues_ok`.
    pub(crate) fn parse(args: &[&'a [u8]], novalues_ok: bool) -> Result<ScanArgs<'a>, Fail> {
        let cursor = std::str::from_utf8(args.get(2).copied().unwrap_or_default())
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or_else(|| Fail::err("invalid cursor"))?;
        let mut out = ScanArgs {
            cursor,
            pattern: None,
            count: 10,
            novalues: false,
        };
        let mut i = 3;
        while let Some(opt) = args.get(i) {
            if novalues_ok && is(opt, "novalues") {
                out.novalues = true;
                i += 1;
                continue;
            }
            let Some(value) = args.get(i + 1) else {
                return Err(Fail::syntax());
            };
            if is(opt, "match") {
                out.pattern = Some(*value);
            } else if is(opt, "count") {
                let n = int(value)?;
                if n < 1 {
                    return Err(Fail::syntax());
                }
                out.count = usize::try_from(n).unwrap_or(usize::MAX);
            } else {
                return Err(Fail::syntax());
            }
            i += 2;
        }
        Ok(out)
    }
}

/// One page of a stateless scan over the hashed members of `meta`: members from the
/// cursor's hash on, at least `count` of them (never splitting members of equal hash
/// across pages), and the next cursor (0 when done). `emit` turns each matching member
/// and its value into replies.
pub(crate) fn scan_page(
    ctx: &Ctx<'_>,
    key: &[u8],
    meta: &CollMeta,
    sub: Sub,
    scan: &ScanArgs<'_>,
    mut emit: impl FnMut(&[u8], &[u8], &mut Vec<Reply>),
) -> Result<Reply, Fail> {
    let prefix = keys::members(sub, key, meta.version);
    let mut out = Vec::new();
    let mut seen = 0usize;
    let mut next = 0u64;
    let mut last_hash = None;
    ctx.for_each_member(&prefix, &scan.cursor.to_be_bytes(), |stored, value| {
        let Some((hash, member)) = keys::unhash(stored) else {
            return true;
        };
        if seen >= scan.count && last_hash != Some(hash) {
            next = hash;
            return false;
        }
        seen += 1;
        last_hash = Some(hash);
        if scan.pattern.is_none_or(|p| glob_match(p, member, false)) {
            emit(member, value, &mut out);
        }
        true
    })?;
    Ok(Reply::Array(vec![
        Reply::Bulk(next.to_string().into_bytes().into()),
        Reply::Array(out),
    ]))
}
