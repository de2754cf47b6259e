//! Set commands: SADD, SREM, SISMEMBER, SMISMEMBER, SCARD, SMEMBERS, SPOP, SRANDMEMBER,
//! SMOVE, SINTER, SUNION, SDIFF and their STORE forms, SINTERCARD, SSCAN.
//!
//! A set is its metadata (`value::CollMeta`) at its key and one empty engine record per
//! member, in member-hash order under its version (docs/formats/resp-collections.md).
//! SCARD reads the metadata alone. SRANDMEMBER seeks to random hashes instead of reading
//! the whole set; SPOP removes the members first in hash order from the set's head (a
//! fixed function of the member, so the order does not change from call to call, as
//! Redis's random choice would), which keeps each pop from stepping over the deletions
//! of earlier ones.

use super::arg::arg;
use std::collections::BTreeSet;

use rand::seq::SliceRandom;
use rand::Rng;

use super::arg::int;
use super::collection::{self, ScanArgs};
use super::{CmdResult, Ctx, Fail};
use crate::resp::Reply;
use crate::value::keys::{self, MemberKeyBuf, Sub};
use crate::value::{CollKind, CollMeta};

const SET: CollKind = CollKind::Set;

fn member_key(key: &[u8], meta: &CollMeta, member: &[u8]) -> MemberKeyBuf {
    keys::hashed_member(Sub::SetMember, key, meta.version, member)
}

fn has(ctx: &Ctx<'_>, key: &[u8], meta: &CollMeta, member: &[u8]) -> Result<bool, Fail> {
    Ok(ctx.get_member(&member_key(key, meta, member))?.is_some())
}

/// Every member of the set at `key` (empty when absent), in storage order.
fn members_of(ctx: &Ctx<'_>, key: &[u8]) -> Result<Vec<Vec<u8>>, Fail> {
    let Some(meta) = collection::find(ctx, key, SET)? else {
        return Ok(Vec::new());
    };
    let prefix = keys::members(Sub::SetMember, key, meta.version);
    let mut out = Vec::new();
    ctx.for_each_member(&prefix, b"", |stored, _| {
        if let Some((_, m)) = keys::unhash(stored) {
            out.push(m.to_vec());
        }
        true
    })?;
    Ok(out)
}

/// The member at or after a random hash (wrapping round), or `None` for an empty set.
fn random_member(ctx: &Ctx<'_>, key: &[u8], meta: &CollMeta) -> Result<Option<Vec<u8>>, Fail> {
    let prefix = keys::members(Sub::SetMember, key, meta.version);
    let start: u64 = rand::thread_rng().gen();
    for from in [start.to_be_bytes(), 0u64.to_be_bytes()] {
        let mut found = None;
        ctx.for_each_member(&prefix, &from, |stored, _| {
            found = keys::unhash(stored).map(|(_, m)| m.to_vec());
            false
        })?;
        if found.is_some() {
            return Ok(found);
        }
    }
    Ok(None)
}

/// `want` (at most the set's size) distinct random members: by seeks to random hashes
/// while they are few against the set, else (or when seeks keep finding the same
/// members) from the whole set, shuffled.
fn distinct_random(
    ctx: &Ctx<'_>,
    key: &[u8],
    meta: &CollMeta,
    want: u64,
) -> Result<Vec<Vec<u8>>, Fail> {
    let mut chosen: BTreeSet<Vec<u8>> = BTreeSet::new();
    if want <= meta.size / 4 {
        let mut tries = 4 * want + 16;
        while (chosen.len() as u64) < want && tries > 0 {
            tries -= 1;
            if let Some(m) = random_member(ctx, key, meta)? {
                chosen.insert(m);
            }
        }
    }
    if (chosen.len() as u64) < want {
        let mut all = members_of(ctx, key)?;
        all.shuffle(&mut rand::thread_rng());
        all.truncate(usize::try_from(want).unwrap_or(usize::MAX));
        return Ok(all);
    }
    Ok(chosen.into_iter().collect())
}

fn bulks(members: impl IntoIterator<Item = Vec<u8>>) -> Vec<Reply> {
    members.into_iter().map(|m| Reply::Bulk(m.into())).collect()
}

pub(crate) fn sadd(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = arg(args, 1);
    let mut meta = collection::find_or_new(ctx, key, SET)?;
    let mut batch = terrace::WriteBatch::new();
    let mut added: Vec<&[u8]> = Vec::new();
    for m in args.iter().skip(2) {
        if added.contains(m) || has(ctx, key, &meta, m)? {
            continue;
        }
        batch.put(&member_key(key, &meta, m), b"");
        meta.head = meta.head.min(keys::member_hash(m));
        added.push(m);
    }
    if !added.is_empty() {
        meta.size += added.len() as u64;
        collection::put_meta(&mut batch, key, &meta);
        ctx.write(batch, [key])?;
    }
    Ok(Reply::Integer(added.len() as i64))
}

/// Removes `members` from the set at `key`; returns how many were there.
fn remove(ctx: &mut Ctx<'_>, key: &[u8], members: &[&[u8]]) -> Result<i64, Fail> {
    let Some(mut meta) = collection::find(ctx, key, SET)? else {
        return Ok(0);
    };
    let mut batch = terrace::WriteBatch::new();
    let mut removed: Vec<&[u8]> = Vec::new();
    for m in members {
        if !removed.contains(m) && has(ctx, key, &meta, m)? {
            batch.delete(&member_key(key, &meta, m));
            removed.push(m);
        }
    }
    if !removed.is_empty() {
        meta.size = meta.size.saturating_sub(removed.len() as u64);
        collection::put_meta(&mut batch, key, &meta);
        ctx.write(batch, [key])?;
    }
    Ok(removed.len() as i64)
}

pub(crate) fn srem(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    Ok(Reply::Integer(remove(
        ctx,
        arg(args, 1),
        args.get(2..).unwrap_or_default(),
    )?))
}

pub(crate) fn sismember(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = arg(args, 1);
    let found = match collection::find(ctx, key, SET)? {
        Some(meta) => has(ctx, key, &meta, arg(args, 2))?,
        None => false,
    };
    Ok(Reply::Integer(i64::from(found)))
}

pub(crate) fn smismember(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = arg(args, 1);
    let meta = collection::find(ctx, key, SET)?;
    let mut out = Vec::new();
    for m in args.iter().skip(2) {
        let found = match &meta {
            Some(meta) => has(ctx, key, meta, m)?,
            None => false,
        };
        out.push(Reply::Integer(i64::from(found)));
    }
    Ok(Reply::Array(out))
}

pub(crate) fn scard(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let size = collection::find(ctx, arg(args, 1), SET)?.map_or(0, |m| m.size);
    Ok(Reply::Integer(i64::try_from(size).unwrap_or(i64::MAX)))
}

pub(crate) fn smembers(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    Ok(Reply::Set(bulks(members_of(ctx, arg(args, 1))?)))
}

/// The optional count argument of SPOP and SRANDMEMBER.
fn count_arg(args: &[&[u8]]) -> Result<Option<i64>, Fail> {
    match args.len() {
        2 => Ok(None),
        3 => int(arg(args, 2)).map(Some),
        _ => Err(Fail::syntax()),
    }
}

pub(crate) fn spop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = arg(args, 1);
    let count = count_arg(args)?;
    if count.is_some_and(|c| c < 0) {
        return Err(Fail::err("value is out of range, must be positive"));
    }
    let Some(mut meta) = collection::find(ctx, key, SET)? else {
        return Ok(match count {
            None => Reply::Nil,
            Some(_) => Reply::Set(Vec::new()),
        });
    };
    let want = count
        .map_or(1, |c| u64::try_from(c).unwrap_or(0))
        .min(meta.size);
    // The members first in hash order from the head: each pop seeks past the ones before
    // it instead of stepping over their deletions (docs/formats/resp-collections.md).
    let prefix = keys::members(Sub::SetMember, key, meta.version);
    let want = usize::try_from(want).unwrap_or(usize::MAX);
    let mut chosen = Vec::new();
    let mut next = None;
    ctx.for_each_member(&prefix, &meta.head.to_be_bytes(), |stored, _| {
        let Some((hash, m)) = keys::unhash(stored) else {
            return true;
        };
        if chosen.len() < want {
            chosen.push(m.to_vec());
            true
        } else {
            next = Some(hash);
            false
        }
    })?;
    let mut batch = terrace::WriteBatch::new();
    for m in &chosen {
        batch.delete(&member_key(key, &meta, m));
    }
    if let Some(hash) = next {
        meta.head = hash;
    }
    if !chosen.is_empty() {
        meta.size = meta.size.saturating_sub(chosen.len() as u64);
        collection::put_meta(&mut batch, key, &meta);
        ctx.write(batch, [key])?;
    }
    Ok(match count {
        None => Reply::bulk_or_nil(chosen.into_iter().next()),
        Some(_) => Reply::Set(bulks(chosen)),
    })
}

pub(crate) fn srandmember(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = arg(args, 1);
    let count = count_arg(args)?;
    let Some(meta) = collection::find(ctx, key, SET)? else {
        return Ok(match count {
            None => Reply::Nil,
            Some(_) => Reply::Array(Vec::new()),
        });
    };
    let Some(count) = count else {
        return Ok(Reply::bulk_or_nil(random_member(ctx, key, &meta)?));
    };
    if count < 0 {
        let n = count.unsigned_abs();
        if n > 1 << 24 {
            return Err(Fail::err("value is out of range"));
        }
        let mut out = Vec::new();
        for _ in 0..n {
            if let Some(m) = random_member(ctx, key, &meta)? {
                out.push(Reply::Bulk(m.into()));
            }
        }
        return Ok(Reply::Array(out));
    }
    let want = u64::try_from(count).unwrap_or(0).min(meta.size);
    let chosen = distinct_random(ctx, key, &meta, want)?;
    Ok(Reply::Array(bulks(chosen)))
}

pub(crate) fn smove(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (src, dst, member) = (arg(args, 1), arg(args, 2), arg(args, 3));
    let src_meta = collection::find(ctx, src, SET)?;
    // The destination's type is checked even when nothing moves, as Redis does.
    let dst_meta = collection::find(ctx, dst, SET)?;
    let Some(mut src_meta) = src_meta else {
        return Ok(Reply::Integer(0));
    };
    if !has(ctx, src, &src_meta, member)? {
        return Ok(Reply::Integer(0));
    }
    if src == dst {
        return Ok(Reply::Integer(1));
    }
    let mut dst_meta = match dst_meta {
        Some(m) => m,
        None => collection::find_or_new(ctx, dst, SET)?,
    };
    let mut batch = terrace::WriteBatch::new();
    batch.delete(&member_key(src, &src_meta, member));
    src_meta.size -= 1;
    collection::put_meta(&mut batch, src, &src_meta);
    if !has(ctx, dst, &dst_meta, member)? {
        batch.put(&member_key(dst, &dst_meta, member), b"");
        dst_meta.head = dst_meta.head.min(keys::member_hash(member));
        dst_meta.size += 1;
        collection::put_meta(&mut batch, dst, &dst_meta);
    }
    ctx.write(batch, [src, dst])?;
    Ok(Reply::Integer(1))
}

/// What SINTER, SUNION and SDIFF compute.
#[derive(Clone, Copy)]
enum Algebra {
    Inter,
    Union,
    Diff,
}

/// The result of `op` over the sets at `keys` (absent keys are empty sets).
fn combine(ctx: &Ctx<'_>, op: Algebra, keys: &[&[u8]]) -> Result<BTreeSet<Vec<u8>>, Fail> {
    let mut sets = Vec::with_capacity(keys.len());
    for k in keys {
        // Every key's type is checked before any result, as Redis does.
        collection::find(ctx, k, SET)?;
    }
    for k in keys {
        sets.push(members_of(ctx, k)?.into_iter().collect::<BTreeSet<_>>());
    }
    let mut it = sets.into_iter();
    let first = it.next().unwrap_or_default();
    Ok(it.fold(first, |acc, s| match op {
        Algebra::Inter => acc.intersection(&s).cloned().collect(),
        Algebra::Union => acc.union(&s).cloned().collect(),
        Algebra::Diff => acc.difference(&s).cloned().collect(),
    }))
}

fn algebra(ctx: &mut Ctx<'_>, args: &[&[u8]], op: Algebra) -> CmdResult {
    let result = combine(ctx, op, args.get(1..).unwrap_or_default())?;
    Ok(Reply::Set(bulks(result)))
}

/// The STORE forms: the result replaces whatever `dst` held; an empty one deletes it.
fn algebra_store(ctx: &mut Ctx<'_>, args: &[&[u8]], op: Algebra) -> CmdResult {
    let dst = arg(args, 1);
    let result = combine(ctx, op, args.get(2..).unwrap_or_default())?;
    let meta = CollMeta::new(SET, ctx.engine.store.new_version()?, result.len() as u64, 0);
    let mut batch = terrace::WriteBatch::new();
    for m in &result {
        batch.put(&member_key(dst, &meta, m), b"");
    }
    collection::put_meta(&mut batch, dst, &meta);
    ctx.write(batch, [dst])?;
    Ok(Reply::Integer(result.len() as i64))
}

pub(crate) fn sinter(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    algebra(ctx, args, Algebra::Inter)
}

pub(crate) fn sunion(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    algebra(ctx, args, Algebra::Union)
}

pub(crate) fn sdiff(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    algebra(ctx, args, Algebra::Diff)
}

pub(crate) fn sinterstore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    algebra_store(ctx, args, Algebra::Inter)
}

pub(crate) fn sunionstore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    algebra_store(ctx, args, Algebra::Union)
}

pub(crate) fn sdiffstore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    algebra_store(ctx, args, Algebra::Diff)
}

/// SINTERCARD numkeys key [key ...] [LIMIT limit].
pub(crate) fn sintercard(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (keys, limit) = collection::intercard_args(args)?;
    let count = combine(ctx, Algebra::Inter, &keys)?.len();
    let count = if limit > 0 { count.min(limit) } else { count };
    Ok(Reply::Integer(count as i64))
}

/// SSCAN key cursor [MATCH pattern] [COUNT count]: the cursor is the member hash to
/// resume from, so it needs no state on the server.
pub(crate) fn sscan(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = arg(args, 1);
    let scan = ScanArgs::parse(args, false)?;
    let Some(meta) = collection::find(ctx, key, SET)? else {
        return Ok(Reply::Array(vec![
            Reply::Bulk("0".into()),
            Reply::Array(Vec::new()),
        ]));
    };
    collection::scan_page(ctx, key, &meta, Sub::SetMember, &scan, |member, _, out| {
        out.push(Reply::Bulk(member.to_vec().into()));
    })
}

#[cfg(test)]
mod tests;
