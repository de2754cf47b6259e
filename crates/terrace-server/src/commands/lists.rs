//! List commands: LPUSH, RPUSH, LPUSHX, RPUSHX, LPOP, RPOP (with counts), LLEN, LRANGE,
//! LINDEX, LSET, LREM, LTRIM, LINSERT, LPOS, LMOVE, RPOPLPUSH.
//!
//! A list is its metadata (`value::CollMeta`: size and head index) at its key and one
//! engine record per element, keyed by its index under the list's version
//! (docs/formats/resp-collections.md). Pushes and pops at either end, LINDEX, LSET and
//! LRANGE touch only the elements they name; LREM and LINSERT, which shift elements,
//! rewrite the list under a new version.

use bytes::Bytes;

use super::arg::arg;
use super::arg::{int, is};
use super::collection::{self, LIST_START};
use super::{CmdResult, Ctx, Fail};
use crate::resp::Reply;
use crate::value::keys::{self, MemberKeyBuf, Sub};
use crate::value::{CollKind, CollMeta};

const LIST: CollKind = CollKind::List;

/// Which end of a list.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    Left,
    Right,
}

impl End {
    pub(crate) fn parse(a: &[u8]) -> Result<End, Fail> {
        if is(a, "left") {
            Ok(End::Left)
        } else if is(a, "right") {
            Ok(End::Right)
        } else {
            Err(Fail::syntax())
        }
    }
}

/// Ranges of at most this many elements are read by point reads, longer ones by a walk.
const POINT_READS: usize = 4;

fn element_key(key: &[u8], meta: &CollMeta, index: u64) -> MemberKeyBuf {
    keys::member(Sub::ListElement, key, meta.version, &index.to_be_bytes())
}

/// The element at absolute index `index`.
fn element(ctx: &Ctx<'_>, key: &[u8], meta: &CollMeta, index: u64) -> Result<Bytes, Fail> {
    ctx.get_member(&element_key(key, meta, index))?
        .ok_or_else(|| Fail::err("list element missing: the list's records are damaged"))
}

/// Elements at positions `from..=to` (0-based, already clamped to the list).
fn range(
    ctx: &Ctx<'_>,
    key: &[u8],
    meta: &CollMeta,
    from: u64,
    to: u64,
) -> Result<Vec<Vec<u8>>, Fail> {
    let mut out = Vec::new();
    range_each(ctx, key, meta, from, to, |v| out.push(v.to_vec()))?;
    Ok(out)
}

/// [`range`], the elements slices of one shared buffer (one allocation for a reply's
/// elements, not one each).
fn range_shared(
    ctx: &Ctx<'_>,
    key: &[u8],
    meta: &CollMeta,
    from: u64,
    to: u64,
) -> Result<Vec<Bytes>, Fail> {
    let (mut buf, mut ends) = (Vec::new(), Vec::new());
    range_each(ctx, key, meta, from, to, |v| {
        buf.extend_from_slice(v);
        ends.push(buf.len());
    })?;
    let buf = Bytes::from(buf);
    let mut start = 0;
    Ok(ends
        .into_iter()
        .map(|end| {
            let element = buf.slice(start..end);
            start = end;
            element
        })
        .collect())
}

/// Calls `each` with the elements at positions `from..=to` in order.
fn range_each(
    ctx: &Ctx<'_>,
    key: &[u8],
    meta: &CollMeta,
    from: u64,
    to: u64,
    mut each: impl FnMut(&[u8]),
) -> Result<(), Fail> {
    let want = usize::try_from(to.saturating_sub(from) + 1).unwrap_or(usize::MAX);
    if want <= POINT_READS {
        // A pop's element or two: point reads (the memtable's point index, bloom
        // filters) cost less than positioning an iterator in every table.
        for i in from..=to {
            each(&element(ctx, key, meta, meta.head + i)?);
        }
        return Ok(());
    }
    let prefix = keys::members(Sub::ListElement, key, meta.version);
    let mut seen = 0;
    ctx.for_each_member(&prefix, &(meta.head + from).to_be_bytes(), |_, value| {
        each(value);
        seen += 1;
        seen < want
    })
}

/// Redis's start/stop pair (negative from the end) clamped to a list of `len`:
/// `None` for an empty range.
fn clamp(start: i64, stop: i64, len: u64) -> Option<(u64, u64)> {
    let len = i64::try_from(len).unwrap_or(i64::MAX);
    let start = if start < 0 {
        (len + start).max(0)
    } else {
        start
    };
    let stop = if stop < 0 {
        len + stop
    } else {
        stop.min(len - 1)
    };
    (start <= stop && start < len).then_some((start as u64, stop as u64))
}

/// Pushes `values` at `end` of the list at `key` (creating it unless `existing_only`);
/// returns the new length (0 when `existing_only` and there is no list).
fn push(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    values: &[&[u8]],
    end: End,
    existing_only: bool,
) -> Result<i64, Fail> {
    let mut meta = match collection::find(ctx, key, LIST)? {
        Some(m) => m,
        None if existing_only => return Ok(0),
        None => collection::find_or_new(ctx, key, LIST)?,
    };
    let mut batch = terrace::WriteBatch::new();
    for v in values {
        match end {
            End::Left => {
                meta.head -= 1;
                batch.put(&element_key(key, &meta, meta.head), v);
            }
            End::Right => {
                batch.put(&element_key(key, &meta, meta.head + meta.size), v);
            }
        }
        meta.size += 1;
    }
    collection::put_meta(&mut batch, key, &meta);
    ctx.write(batch, [key])?;
    // Clients blocked in BLPOP and the like on this key try again.
    ctx.wake(key);
    Ok(i64::try_from(meta.size).unwrap_or(i64::MAX))
}

fn values<'a>(args: &[&'a [u8]]) -> Vec<&'a [u8]> {
    args.iter().skip(2).copied().collect()
}

pub(crate) fn lpush(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    Ok(Reply::Integer(push(
        ctx,
        arg(args, 1),
        &values(args),
        End::Left,
        false,
    )?))
}

pub(crate) fn rpush(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    Ok(Reply::Integer(push(
        ctx,
        arg(args, 1),
        &values(args),
        End::Right,
        false,
    )?))
}

pub(crate) fn lpushx(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    Ok(Reply::Integer(push(
        ctx,
        arg(args, 1),
        &values(args),
        End::Left,
        true,
    )?))
}

pub(crate) fn rpushx(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    Ok(Reply::Integer(push(
        ctx,
        arg(args, 1),
        &values(args),
        End::Right,
        true,
    )?))
}

/// Removes up to `count` elements from `end` of the list; returns them in pop order.
pub(crate) fn pop(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    end: End,
    count: u64,
) -> Result<Option<Vec<Vec<u8>>>, Fail> {
    let Some(mut meta) = collection::find(ctx, key, LIST)? else {
        return Ok(None);
    };
    let n = count.min(meta.size);
    let mut out = match end {
        End::Left => range(ctx, key, &meta, 0, n.saturating_sub(1))?,
        End::Right => range(ctx, key, &meta, meta.size - n, meta.size - 1)?,
    };
    if n == 0 {
        out.clear();
    }
    let mut batch = terrace::WriteBatch::new();
    let first = match end {
        End::Left => meta.head,
        End::Right => meta.head + meta.size - n,
    };
    for i in first..first + n {
        batch.delete(&element_key(key, &meta, i));
    }
    if end == End::Left {
        meta.head += n;
    } else {
        out.reverse();
    }
    meta.size -= n;
    collection::put_meta(&mut batch, key, &meta);
    ctx.write(batch, [key])?;
    Ok(Some(out))
}

fn pop_command(ctx: &mut Ctx<'_>, args: &[&[u8]], end: End) -> CmdResult {
    let key = arg(args, 1);
    let count = match args.get(2) {
        None => None,
        Some(c) => {
            let n = int(c)?;
            if n < 0 {
                return Err(Fail::err("value is out of range, must be positive"));
            }
            Some(n as u64)
        }
    };
    if args.len() > 3 {
        return Err(Fail::syntax());
    }
    let popped = pop(ctx, key, end, count.unwrap_or(1))?;
    Ok(match (popped, count) {
        (None, None) => Reply::Nil,
        (None, Some(_)) => Reply::NilArray,
        (Some(v), None) => Reply::bulk_or_nil(v.into_iter().next()),
        (Some(v), Some(_)) => Reply::Array(v.into_iter().map(|e| Reply::Bulk(e.into())).collect()),
    })
}

pub(crate) fn lpop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    pop_command(ctx, args, End::Left)
}

pub(crate) fn rpop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    pop_command(ctx, args, End::Right)
}

pub(crate) fn llen(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let size = collection::find(ctx, arg(args, 1), LIST)?.map_or(0, |m| m.size);
    Ok(Reply::Integer(i64::try_from(size).unwrap_or(i64::MAX)))
}

pub(crate) fn lrange(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = arg(args, 1);
    let (start, stop) = (int(arg(args, 2))?, int(arg(args, 3))?);
    let Some(meta) = collection::find(ctx, key, LIST)? else {
        return Ok(Reply::Array(Vec::new()));
    };
    let items = match clamp(start, stop, meta.size) {
        Some((from, to)) => range_shared(ctx, key, &meta, from, to)?,
        None => Vec::new(),
    };
    Ok(Reply::Array(items.into_iter().map(Reply::Bulk).collect()))
}

/// The absolute index of position `i` (negative from the end), if inside the list.
fn position(meta: &CollMeta, i: i64) -> Option<u64> {
    let len = i64::try_from(meta.size).ok()?;
    let i = if i < 0 { len + i } else { i };
    (0..len).contains(&i).then(|| meta.head + i as u64)
}

pub(crate) fn lindex(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = arg(args, 1);
    let i = int(arg(args, 2))?;
    let Some(meta) = collection::find(ctx, key, LIST)? else {
        return Ok(Reply::Nil);
    };
    Ok(match position(&meta, i) {
        Some(at) => Reply::Bulk(element(ctx, key, &meta, at)?),
        None => Reply::Nil,
    })
}

pub(crate) fn lset(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = arg(args, 1);
    let i = int(arg(args, 2))?;
    let Some(meta) = collection::find(ctx, key, LIST)? else {
        return Err(Fail::err("no such key"));
    };
    let at = position(&meta, i).ok_or_else(|| Fail::err("index out of range"))?;
    let mut batch = terrace::WriteBatch::new();
    batch.put(&element_key(key, &meta, at), arg(args, 3));
    ctx.write(batch, [key])?;
    Ok(Reply::Ok)
}

pub(crate) fn ltrim(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = arg(args, 1);
    let (start, stop) = (int(arg(args, 2))?, int(arg(args, 3))?);
    let Some(mut meta) = collection::find(ctx, key, LIST)? else {
        return Ok(Reply::Ok);
    };
    let (from, to) = clamp(start, stop, meta.size).unwrap_or((meta.size, meta.size));
    let mut batch = terrace::WriteBatch::new();
    let keep_end = if from < meta.size { to + 1 } else { meta.size };
    for i in (0..from.min(meta.size)).chain(keep_end..meta.size) {
        batch.delete(&element_key(key, &meta, meta.head + i));
    }
    if from >= meta.size {
        meta.size = 0;
    } else {
        meta.head += from;
        meta.size = to - from + 1;
    }
    collection::put_meta(&mut batch, key, &meta);
    ctx.write(batch, [key])?;
    Ok(Reply::Ok)
}

/// Replaces the list at `key` by `items` under a new version (LREM, LINSERT).
fn rewrite(ctx: &mut Ctx<'_>, key: &[u8], old: &CollMeta, items: &[Vec<u8>]) -> Result<(), Fail> {
    let meta = CollMeta {
        version: ctx.engine.store.new_version()?,
        size: items.len() as u64,
        head: LIST_START,
        ..*old
    };
    let mut batch = terrace::WriteBatch::new();
    for (i, v) in (0u64..).zip(items) {
        batch.put(&element_key(key, &meta, meta.head + i), v);
    }
    collection::put_meta(&mut batch, key, &meta);
    ctx.write(batch, [key])
}

fn all(ctx: &Ctx<'_>, key: &[u8], meta: &CollMeta) -> Result<Vec<Vec<u8>>, Fail> {
    if meta.size == 0 {
        return Ok(Vec::new());
    }
    range(ctx, key, meta, 0, meta.size - 1)
}

pub(crate) fn lrem(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = arg(args, 1);
    let count = int(arg(args, 2))?;
    let target = arg(args, 3);
    let Some(meta) = collection::find(ctx, key, LIST)? else {
        return Ok(Reply::Integer(0));
    };
    let mut items = all(ctx, key, &meta)?;
    let limit = if count == 0 {
        usize::MAX
    } else {
        usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX)
    };
    let mut removed = 0usize;
    let mut keep = vec![true; items.len()];
    let order: Box<dyn Iterator<Item = usize>> = if count < 0 {
        Box::new((0..items.len()).rev())
    } else {
        Box::new(0..items.len())
    };
    for i in order {
        if removed == limit {
            break;
        }
        if items[i] == target {
            keep[i] = false;
            removed += 1;
        }
    }
    if removed > 0 {
        let mut k = keep.iter();
        items.retain(|_| *k.next().unwrap_or(&true));
        rewrite(ctx, key, &meta, &items)?;
    }
    Ok(Reply::Integer(removed as i64))
}

pub(crate) fn linsert(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = arg(args, 1);
    let before = if is(arg(args, 2), "before") {
        true
    } else if is(arg(args, 2), "after") {
        false
    } else {
        return Err(Fail::syntax());
    };
    let (pivot, value) = (arg(args, 3), arg(args, 4));
    let Some(meta) = collection::find(ctx, key, LIST)? else {
        return Ok(Reply::Integer(0));
    };
    let mut items = all(ctx, key, &meta)?;
    let Some(at) = items.iter().position(|e| e == pivot) else {
        return Ok(Reply::Integer(-1));
    };
    items.insert(if before { at } else { at + 1 }, value.to_vec());
    rewrite(ctx, key, &meta, &items)?;
    Ok(Reply::Integer(items.len() as i64))
}

/// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len].
pub(crate) fn lpos(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = arg(args, 1);
    let target = arg(args, 2);
    let (mut rank, mut count, mut maxlen) = (1i64, None, 0usize);
    let mut i = 3;
    while let Some(opt) = args.get(i) {
        let value = int(args.get(i + 1).ok_or_else(Fail::syntax)?)?;
        if is(opt, "rank") {
            if value == 0 || value == i64::MIN {
                return Err(Fail::err(
                    "RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
                ));
            }
            rank = value;
        } else if is(opt, "count") {
            if value < 0 {
                return Err(Fail::err("COUNT can't be negative"));
            }
            count = Some(usize::try_from(value).unwrap_or(usize::MAX));
        } else if is(opt, "maxlen") {
            if value < 0 {
                return Err(Fail::err("MAXLEN can't be negative"));
            }
            maxlen = usize::try_from(value).unwrap_or(usize::MAX);
        } else {
            return Err(Fail::syntax());
        }
        i += 2;
    }
    let items = match collection::find(ctx, key, LIST)? {
        Some(meta) => all(ctx, key, &meta)?,
        None => Vec::new(),
    };
    let n = items.len();
    let order: Box<dyn Iterator<Item = usize>> = if rank < 0 {
        Box::new((0..n).rev())
    } else {
        Box::new(0..n)
    };
    let mut skip = rank.unsigned_abs() - 1;
    let want = match count {
        Some(0) => usize::MAX,
        Some(c) => c,
        None => 1,
    };
    let mut found = Vec::new();
    for (scanned, idx) in order.enumerate() {
        if maxlen != 0 && scanned >= maxlen {
            break;
        }
        if items[idx] == target {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            found.push(Reply::Integer(idx as i64));
            if found.len() >= want {
                break;
            }
        }
    }
    Ok(match count {
        Some(_) => Reply::Array(found),
        None => found.into_iter().next().unwrap_or(Reply::Nil),
    })
}

/// Pops from `from`'s `src_end` and pushes to `to`'s `dst_end`; the element moved.
pub(crate) fn move_one(
    ctx: &mut Ctx<'_>,
    from: &[u8],
    to: &[u8],
    src_end: End,
    dst_end: End,
) -> Result<Option<Vec<u8>>, Fail> {
    // The destination's type is checked before anything moves.
    collection::find(ctx, to, LIST)?;
    let Some(mut popped) = pop(ctx, from, src_end, 1)? else {
        return Ok(None);
    };
    let Some(v) = popped.pop() else {
        return Ok(None);
    };
    push(ctx, to, &[&v], dst_end, false)?;
    Ok(Some(v))
}

pub(crate) fn lmove(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (src_end, dst_end) = (End::parse(arg(args, 3))?, End::parse(arg(args, 4))?);
    Ok(Reply::bulk_or_nil(move_one(
        ctx,
        arg(args, 1),
        arg(args, 2),
        src_end,
        dst_end,
    )?))
}

pub(crate) fn rpoplpush(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    Ok(Reply::bulk_or_nil(move_one(
        ctx,
        arg(args, 1),
        arg(args, 2),
        End::Right,
        End::Left,
    )?))
}

#[cfg(test)]
mod tests;
