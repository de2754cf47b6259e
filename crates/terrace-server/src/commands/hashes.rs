//! Hash commands: HSET, HSETNX, HMSET, HGET, HMGET, HDEL, HEXISTS, HLEN, HSTRLEN, HKEYS,
//! HVALS, HGETALL, HINCRBY, HINCRBYFLOAT, HRANDFIELD, HSCAN.
//!
//! A hash is its metadata (`value::CollMeta`: expiry, version, field count) at its key
//! and one engine record per field, in field-hash order under its version
//! (docs/formats/resp-collections.md). HLEN reads the metadata alone; deleting or
//! overwriting a hash of any size writes only its metadata.

use super::arg::arg;
use rand::seq::SliceRandom;
use rand::Rng;

use super::arg::{int, parse_f64, parse_i64};
use super::collection::{self, ScanArgs};
use super::{CmdResult, Ctx, Fail};
use crate::resp::{format_double, Protocol, Reply};
use crate::value::keys::{self, MemberKeyBuf, Sub};
use crate::value::{CollKind, CollMeta};

const HASH: CollKind = CollKind::Hash;

/// A field and its value, owned.
type FieldValue = (Vec<u8>, Vec<u8>);

/// The engine key of `field` of the hash `key` at `meta`'s version.
fn field_key(key: &[u8], meta: &CollMeta, field: &[u8]) -> MemberKeyBuf {
    keys::hashed_member(Sub::HashField, key, meta.version, field)
}

/// The value of `field`, if the hash has it.
fn get_field(
    ctx: &Ctx<'_>,
    key: &[u8],
    meta: &CollMeta,
    field: &[u8],
) -> Result<Option<bytes::Bytes>, Fail> {
    ctx.get_member(&field_key(key, meta, field))
}

/// Every field and value of the hash, in storage (field-hash) order.
fn all_fields(ctx: &Ctx<'_>, key: &[u8], meta: &CollMeta) -> Result<Vec<FieldValue>, Fail> {
    let prefix = keys::members(Sub::HashField, key, meta.version);
    let mut out = Vec::with_capacity(usize::try_from(meta.size).unwrap_or(0).min(1 << 16));
    ctx.for_each_member(&prefix, b"", |stored, value| {
        if let Some((_, field)) = keys::unhash(stored) {
            out.push((field.to_vec(), value.to_vec()));
        }
        true
    })?;
    Ok(out)
}

/// Sets `pairs` (field, value, field, value, ...) in the hash `key`, only absent fields when `only_new`;
/// returns how many fields were new.
fn set_fields(ctx: &mut Ctx<'_>, key: &[u8], pairs: &[&[u8]], only_new: bool) -> Result<i64, Fail> {
    let mut meta = collection::find_or_new(ctx, key, HASH)?;
    let mut batch = terrace::WriteBatch::new();
    let mut added = 0i64;
    // Fields this command adds, so that one named twice counts once (on the stack: a
    // command sets few).
    let mut fresh: smallvec::SmallVec<[&[u8]; 4]> = smallvec::SmallVec::new();
    for pair in pairs.chunks_exact(2) {
        let [field, value] = pair else { continue };
        let fk = field_key(key, &meta, field);
        let exists = fresh.contains(field) || ctx.get_member(&fk)?.is_some();
        if exists && only_new {
            continue;
        }
        if !exists {
            added += 1;
            meta.size += 1;
            fresh.push(field);
        }
        batch.put(&fk, value);
    }
    if added > 0 {
        // Only a new field changes the metadata (its size).
        collection::put_meta(&mut batch, key, &meta);
    }
    if added > 0 || !only_new {
        ctx.write(batch, [key])?;
    }
    Ok(added)
}

/// The field, value, field, value, ... arguments after the key, or the arity error.
fn pairs<'a, 'b>(args: &'b [&'a [u8]], cmd: &str) -> Result<&'b [&'a [u8]], Fail> {
    let rest = args.get(2..).unwrap_or_default();
    if rest.is_empty() || rest.len() % 2 != 0 {
        return Err(Fail::err(format!(
            "wrong number of arguments for '{cmd}' command"
        )));
    }
    Ok(rest)
}

pub(crate) fn hset(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let pairs = pairs(args, "hset")?;
    Ok(Reply::Integer(set_fields(ctx, arg(args, 1), pairs, false)?))
}

pub(crate) fn hmset(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let pairs = pairs(args, "hmset")?;
    set_fields(ctx, arg(args, 1), pairs, false)?;
    Ok(Reply::Ok)
}

pub(crate) fn hsetnx(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let added = set_fields(ctx, arg(args, 1), &[arg(args, 2), arg(args, 3)], true)?;
    Ok(Reply::Integer(added))
}

pub(crate) fn hget(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = arg(args, 1);
    let v = match collection::find(ctx, key, HASH)? {
        Some(meta) => get_field(ctx, key, &meta, arg(args, 2))?,
        None => None,
    };
    ctx.st.stats.hit(v.is_some());
    Ok(Reply::bulk_or_nil(v))
}

pub(crate) fn hmget(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = arg(args, 1);
    let meta = collection::find(ctx, key, HASH)?;
    let mut out = Vec::with_capacity(args.len().saturating_sub(2));
    for field in args.iter().skip(2) {
        let v = match &meta {
            Some(m) => get_field(ctx, key, m, field)?,
            None => None,
        };
        out.push(Reply::bulk_or_nil(v));
    }
    Ok(Reply::Array(out))
}

pub(crate) fn hdel(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = arg(args, 1);
    let Some(mut meta) = collection::find(ctx, key, HASH)? else {
        return Ok(Reply::Integer(0));
    };
    let mut batch = terrace::WriteBatch::new();
    let mut removed: Vec<&[u8]> = Vec::new();
    for field in args.iter().skip(2) {
        if removed.contains(field) {
            continue;
        }
        let fk = field_key(key, &meta, field);
        if ctx.get_member(&fk)?.is_some() {
            batch.delete(&fk);
            removed.push(field);
        }
    }
    if !removed.is_empty() {
        meta.size = meta.size.saturating_sub(removed.len() as u64);
        collection::put_meta(&mut batch, key, &meta);
        ctx.write(batch, [key])?;
    }
    Ok(Reply::Integer(removed.len() as i64))
}

pub(crate) fn hexists(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = arg(args, 1);
    let found = match collection::find(ctx, key, HASH)? {
        Some(meta) => get_field(ctx, key, &meta, arg(args, 2))?.is_some(),
        None => false,
    };
    Ok(Reply::Integer(i64::from(found)))
}

pub(crate) fn hlen(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let size = collection::find(ctx, arg(args, 1), HASH)?.map_or(0, |m| m.size);
    Ok(Reply::Integer(i64::try_from(size).unwrap_or(i64::MAX)))
}

pub(crate) fn hstrlen(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = arg(args, 1);
    let len = match collection::find(ctx, key, HASH)? {
        Some(meta) => get_field(ctx, key, &meta, arg(args, 2))?.map_or(0, |v| v.len()),
        None => 0,
    };
    Ok(Reply::Integer(len as i64))
}

/// HKEYS, HVALS and HGETALL: what of each field to show.
fn listing(ctx: &mut Ctx<'_>, args: &[&[u8]], fields: bool, values: bool) -> CmdResult {
    let key = arg(args, 1);
    let all = match collection::find(ctx, key, HASH)? {
        Some(meta) => all_fields(ctx, key, &meta)?,
        None => Vec::new(),
    };
    Ok(match (fields, values) {
        (true, true) => Reply::Map(
            all.into_iter()
                .map(|(f, v)| (Reply::Bulk(f.into()), Reply::Bulk(v.into())))
                .collect(),
        ),
        (true, false) => Reply::Array(
            all.into_iter()
                .map(|(f, _)| Reply::Bulk(f.into()))
                .collect(),
        ),
        _ => Reply::Array(
            all.into_iter()
                .map(|(_, v)| Reply::Bulk(v.into()))
                .collect(),
        ),
    })
}

pub(crate) fn hkeys(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    listing(ctx, args, true, false)
}

pub(crate) fn hvals(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    listing(ctx, args, false, true)
}

pub(crate) fn hgetall(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    listing(ctx, args, true, true)
}

/// Reads `field` of `key` as a number with `parse`, applies `step`, stores the result
/// as `format` prints it and returns that text.
fn increment<T>(
    ctx: &mut Ctx<'_>,
    args: &[&[u8]],
    parse: impl Fn(&[u8]) -> Option<T>,
    not_a_number: &str,
    step: impl FnOnce(T) -> Result<T, Fail>,
    format: impl FnOnce(&T) -> String,
) -> Result<(T, String), Fail> {
    let (key, field) = (arg(args, 1), arg(args, 2));
    let mut meta = collection::find_or_new(ctx, key, HASH)?;
    let fk = field_key(key, &meta, field);
    let current = ctx.get_member(&fk)?;
    let cur = match &current {
        Some(v) => parse(v).ok_or_else(|| Fail::err(not_a_number))?,
        None => parse(b"0").ok_or_else(|| Fail::err(not_a_number))?,
    };
    let next = step(cur)?;
    let text = format(&next);
    let mut batch = terrace::WriteBatch::new();
    batch.put(&fk, text.as_bytes());
    if current.is_none() {
        meta.size += 1;
        collection::put_meta(&mut batch, key, &meta);
    }
    ctx.write(batch, [key])?;
    Ok((next, text))
}

pub(crate) fn hincrby(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let delta = int(arg(args, 3))?;
    let (next, _) = increment(
        ctx,
        args,
        parse_i64,
        "hash value is not an integer",
        |cur: i64| {
            cur.checked_add(delta)
                .ok_or_else(|| Fail::err("increment or decrement would overflow"))
        },
        i64::to_string,
    )?;
    Ok(Reply::Integer(next))
}

pub(crate) fn hincrbyfloat(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let delta = parse_f64(arg(args, 3)).ok_or_else(|| Fail::err("value is not a valid float"))?;
    let (_, text) = increment(
        ctx,
        args,
        parse_f64,
        "hash value is not a float",
        |cur: f64| {
            let next = cur + delta;
            if next.is_finite() {
                Ok(next)
            } else {
                Err(Fail::err("increment would produce NaN or Infinity"))
            }
        },
        |v| format_double(*v),
    )?;
    Ok(Reply::Bulk(text.into_bytes().into()))
}

/// HRANDFIELD key [count [WITHVALUES]].
pub(crate) fn hrandfield(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = arg(args, 1);
    let count = match args.get(2) {
        Some(c) => Some(int(c)?),
        None => None,
    };
    let with_values = match args.get(3) {
        Some(a) if args.len() == 4 && super::arg::is(a, "withvalues") => true,
        None => false,
        Some(_) => return Err(Fail::syntax()),
    };
    let meta = collection::find(ctx, key, HASH)?;
    let Some(meta) = meta else {
        return Ok(match count {
            None => Reply::Nil,
            Some(_) => Reply::Array(Vec::new()),
        });
    };
    let mut all = all_fields(ctx, key, &meta)?;
    let mut rng = rand::thread_rng();
    let Some(count) = count else {
        let pick = rng.gen_range(0..all.len().max(1));
        return Ok(Reply::bulk_or_nil(
            all.into_iter().nth(pick).map(|(f, _)| f),
        ));
    };
    let chosen: Vec<FieldValue> = if count >= 0 {
        all.shuffle(&mut rng);
        all.truncate(usize::try_from(count).unwrap_or(usize::MAX));
        all
    } else {
        let n = usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX);
        if n > 1 << 24 {
            return Err(Fail::err("value is out of range"));
        }
        (0..n)
            .filter_map(|_| all.get(rng.gen_range(0..all.len())).cloned())
            .collect()
    };
    Ok(pairs_reply(ctx.st.protocol, chosen, with_values))
}

/// Fields (and values) as HRANDFIELD answers: RESP2 flat, RESP3 pairs.
fn pairs_reply(protocol: Protocol, items: Vec<FieldValue>, with_values: bool) -> Reply {
    let mut out = Vec::with_capacity(items.len() * 2);
    for (f, v) in items {
        match (with_values, protocol) {
            (false, _) => out.push(Reply::Bulk(f.into())),
            (true, Protocol::Resp2) => {
                out.push(Reply::Bulk(f.into()));
                out.push(Reply::Bulk(v.into()));
            }
            (true, Protocol::Resp3) => {
                out.push(Reply::Array(vec![
                    Reply::Bulk(f.into()),
                    Reply::Bulk(v.into()),
                ]));
            }
        }
    }
    Reply::Array(out)
}

/// HSCAN key cursor [MATCH pattern] [COUNT count] [NOVALUES]: the cursor is the field
/// hash to resume from, so it needs no state on the server.
pub(crate) fn hscan(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = arg(args, 1);
    let scan = ScanArgs::parse(args, true)?;
    let Some(meta) = collection::find(ctx, key, HASH)? else {
        return Ok(Reply::Array(vec![
            Reply::Bulk("0".into()),
            Reply::Array(Vec::new()),
        ]));
    };
    let novalues = scan.novalues;
    collection::scan_page(
        ctx,
        key,
        &meta,
        Sub::HashField,
        &scan,
        |field, value, out| {
            out.push(Reply::Bulk(field.to_vec().into()));
            if !novalues {
                out.push(Reply::Bulk(value.to_vec().into()));
            }
        },
    )
}

#[cfg(test)]
mod tests;
