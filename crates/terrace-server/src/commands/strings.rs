//! String commands: GET, SET and its variants, MGET/MSET, counters, ranges.

use super::arg::{int, is, parse_f64, parse_i64};
use super::store::Op;
use super::{CmdResult, Ctx, Fail};
use crate::resp::format_double;
use crate::resp::Reply;
use crate::value::{StoredValue, Top};

/// Redis's largest string (and SETRANGE/APPEND target), 512 MiB.
const MAX_STRING_BYTES: u64 = 512 * 1024 * 1024;

fn key<'a>(args: &[&'a [u8]]) -> &'a [u8] {
    args.get(1).copied().unwrap_or_default()
}

fn val<'a>(args: &[&'a [u8]], i: usize) -> &'a [u8] {
    args.get(i).copied().unwrap_or_default()
}

pub(crate) fn get(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let v = ctx.engine.store.get_shared(key(args), ctx.now_ms)?;
    ctx.st.stats.hit(v.is_some());
    Ok(Reply::bulk_or_nil(v.map(|(_, data)| data)))
}

/// An expiry option's absolute time in milliseconds.
fn expire_at(now: u64, unit: &[u8], amount: &[u8], cmd: &str) -> Result<u64, Fail> {
    let n = int(amount)?;
    let invalid = || Fail::err(format!("invalid expire time in '{cmd}' command"));
    if n <= 0 {
        return Err(invalid());
    }
    let n = u64::try_from(n).map_err(|_| invalid())?;
    let at = if is(unit, "ex") {
        n.checked_mul(1000).and_then(|ms| ms.checked_add(now))
    } else if is(unit, "px") {
        n.checked_add(now)
    } else if is(unit, "exat") {
        n.checked_mul(1000)
    } else {
        Some(n)
    };
    at.filter(|&a| a <= i64::MAX as u64).ok_or_else(invalid)
}

/// SET's options.
#[derive(Debug, Default)]
pub(crate) struct SetOptions {
    nx: bool,
    xx: bool,
    keepttl: bool,
    get_old: bool,
    /// Absolute expiry in milliseconds (EX, PX, EXAT, PXAT).
    pub(crate) expire: Option<u64>,
}

impl SetOptions {
    /// Parses the options after `SET key value`, expiries relative to `now_ms`.
    pub(crate) fn parse(args: &[&[u8]], now_ms: u64) -> Result<SetOptions, Fail> {
        let mut o = SetOptions::default();
        let mut i = 3;
        while let Some(opt) = args.get(i) {
            let next = args.get(i + 1);
            if is(opt, "nx") && !o.xx {
                o.nx = true;
            } else if is(opt, "xx") && !o.nx {
                o.xx = true;
            } else if is(opt, "get") {
                o.get_old = true;
            } else if is(opt, "keepttl") && o.expire.is_none() {
                o.keepttl = true;
            } else if ["ex", "px", "exat", "pxat"].iter().any(|n| is(opt, n))
                && !o.keepttl
                && o.expire.is_none()
                && next.is_some()
            {
                o.expire = Some(expire_at(
                    now_ms,
                    opt,
                    next.copied().unwrap_or_default(),
                    "set",
                )?);
                i += 1;
            } else {
                return Err(Fail::syntax());
            }
            i += 1;
        }
        Ok(o)
    }

    /// Whether the SET neither reads the old value nor depends on it: a blind write.
    pub(crate) fn is_blind(&self) -> bool {
        !(self.nx || self.xx || self.keepttl || self.get_old)
    }
}

pub(crate) fn set(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let SetOptions {
        nx,
        xx,
        keepttl,
        get_old,
        expire,
    } = SetOptions::parse(args, ctx.now_ms)?;
    let k = key(args);
    // Any type counts for NX, XX and KEEPTTL (SET replaces a collection); GET needs a string.
    let top = if nx || xx || get_old || keepttl {
        ctx.get_top(k)?
    } else {
        None
    };
    if get_old && matches!(top, Some(Top::Coll(_))) {
        return Err(Fail::wrongtype());
    }
    let old: Option<StoredValue> = match &top {
        Some(Top::String(v)) => Some(v.clone()),
        _ => None,
    };
    let reply_old = |old: &Option<StoredValue>| {
        if get_old {
            Reply::bulk_or_nil(old.as_ref().map(|v| v.data.clone()))
        } else {
            Reply::Nil
        }
    };
    if (nx && top.is_some()) || (xx && top.is_none()) {
        return Ok(reply_old(&old));
    }
    let expire_at_ms = if keepttl {
        top.as_ref().and_then(Top::expire_at_ms)
    } else {
        expire
    };
    ctx.engine.store.put_data(k, expire_at_ms, val(args, 2))?;
    Ok(if get_old { reply_old(&old) } else { Reply::Ok })
}

pub(crate) fn setnx(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    if ctx.get_top(key(args))?.is_some() {
        return Ok(Reply::Integer(0));
    }
    ctx.engine.store.put_data(key(args), None, val(args, 2))?;
    Ok(Reply::Integer(1))
}

fn set_with_expiry(ctx: &mut Ctx<'_>, args: &[&[u8]], unit: &str, cmd: &str) -> CmdResult {
    let at = expire_at(ctx.now_ms, unit.as_bytes(), val(args, 2), cmd)?;
    ctx.engine
        .store
        .put_data(key(args), Some(at), val(args, 3))?;
    Ok(Reply::Ok)
}

pub(crate) fn setex(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    set_with_expiry(ctx, args, "ex", "setex")
}

pub(crate) fn psetex(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    set_with_expiry(ctx, args, "px", "psetex")
}

pub(crate) fn getset(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let old = ctx.engine.store.get(key(args), ctx.now_ms)?;
    ctx.engine.store.put_data(key(args), None, val(args, 2))?;
    Ok(Reply::bulk_or_nil(old.map(|v| v.data)))
}

pub(crate) fn getdel(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let old = ctx.engine.store.get(key(args), ctx.now_ms)?;
    if old.is_some() {
        ctx.engine.store.delete(key(args))?;
    }
    Ok(Reply::bulk_or_nil(old.map(|v| v.data)))
}

pub(crate) fn getex(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let mut change: Option<Option<u64>> = None;
    let mut i = 2;
    while let Some(opt) = args.get(i) {
        if is(opt, "persist") && change.is_none() {
            change = Some(None);
        } else if ["ex", "px", "exat", "pxat"].iter().any(|n| is(opt, n))
            && change.is_none()
            && args.get(i + 1).is_some()
        {
            change = Some(Some(expire_at(ctx.now_ms, opt, val(args, i + 1), "getex")?));
            i += 1;
        } else {
            return Err(Fail::syntax());
        }
        i += 1;
    }
    let Some(mut v) = ctx.engine.store.get(key(args), ctx.now_ms)? else {
        return Ok(Reply::Nil);
    };
    if let Some(at) = change {
        if at != v.expire_at_ms {
            v.expire_at_ms = at;
            ctx.engine.store.put(key(args), &v)?;
        }
    }
    Ok(Reply::Bulk(v.data.into()))
}

pub(crate) fn mget(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let keys = args.get(1..).unwrap_or_default();
    let values = ctx.engine.store.get_many_shared(keys, ctx.now_ms)?;
    let mut out = Vec::with_capacity(values.len());
    for v in values {
        ctx.st.stats.hit(v.is_some());
        out.push(Reply::bulk_or_nil(v));
    }
    Ok(Reply::Array(out))
}

fn pairs(args: &[&[u8]], cmd: &str) -> Result<Vec<Op>, Fail> {
    if args.len().is_multiple_of(2) {
        return Err(Fail::err(format!(
            "wrong number of arguments for '{cmd}' command"
        )));
    }
    Ok(args
        .get(1..)
        .unwrap_or_default()
        .chunks(2)
        .filter_map(|p| match p {
            [k, v] => Some((k.to_vec(), Some(StoredValue::new(v.to_vec())))),
            _ => None,
        })
        .collect())
}

pub(crate) fn mset(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let ops = pairs(args, "mset")?;
    ctx.engine.store.apply(ops)?;
    Ok(Reply::Ok)
}

pub(crate) fn msetnx(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let ops = pairs(args, "msetnx")?;
    for (k, _) in &ops {
        if ctx.get_top(k)?.is_some() {
            return Ok(Reply::Integer(0));
        }
    }
    ctx.engine.store.apply(ops)?;
    Ok(Reply::Integer(1))
}

pub(crate) fn append(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let mut v = ctx
        .engine
        .store
        .get(key(args), ctx.now_ms)?
        .unwrap_or_else(|| StoredValue::new(Vec::new()));
    let add = val(args, 2);
    check_size((v.data.len() + add.len()) as u64)?;
    v.data.extend_from_slice(add);
    ctx.engine.store.put(key(args), &v)?;
    Ok(Reply::Integer(v.data.len() as i64))
}

fn check_size(len: u64) -> Result<(), Fail> {
    if len > MAX_STRING_BYTES {
        return Err(Fail::err(
            "string exceeds maximum allowed size (proto-max-bulk-len)",
        ));
    }
    Ok(())
}

pub(crate) fn strlen(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let v = ctx.engine.store.get(key(args), ctx.now_ms)?;
    Ok(Reply::Integer(v.map_or(0, |v| v.data.len() as i64)))
}

pub(crate) fn getrange(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (start, end) = (int(val(args, 2))?, int(val(args, 3))?);
    let data = ctx
        .engine
        .store
        .get(key(args), ctx.now_ms)?
        .map(|v| v.data)
        .unwrap_or_default();
    let len = data.len() as i64;
    if len == 0 || (start < 0 && end < 0 && start > end) {
        return Ok(Reply::Bulk(Vec::new().into()));
    }
    let norm = |i: i64| if i < 0 { (len + i).max(0) } else { i };
    let (s, e) = (norm(start), norm(end).min(len - 1));
    if s > e || s >= len {
        return Ok(Reply::Bulk(Vec::new().into()));
    }
    let (s, e) = (s as usize, e as usize);
    Ok(Reply::Bulk(
        data.get(s..=e).unwrap_or_default().to_vec().into(),
    ))
}

pub(crate) fn setrange(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let offset = int(val(args, 2))?;
    if offset < 0 {
        return Err(Fail::err("offset is out of range"));
    }
    let patch = val(args, 3);
    let existing = ctx.engine.store.get(key(args), ctx.now_ms)?;
    if patch.is_empty() {
        return Ok(Reply::Integer(existing.map_or(0, |v| v.data.len() as i64)));
    }
    let offset = offset as u64;
    check_size(offset + patch.len() as u64)?;
    let mut v = existing.unwrap_or_else(|| StoredValue::new(Vec::new()));
    let (off, end) = (offset as usize, offset as usize + patch.len());
    if v.data.len() < end {
        v.data.resize(end, 0);
    }
    if let Some(dst) = v.data.get_mut(off..end) {
        dst.copy_from_slice(patch);
    }
    ctx.engine.store.put(key(args), &v)?;
    Ok(Reply::Integer(v.data.len() as i64))
}

fn incr_by(ctx: &mut Ctx<'_>, k: &[u8], delta: i64) -> CmdResult {
    let mut v = ctx
        .engine
        .store
        .get(k, ctx.now_ms)?
        .unwrap_or_else(|| StoredValue::new(b"0".to_vec()));
    let cur = parse_i64(&v.data).ok_or_else(Fail::not_integer)?;
    let next = cur
        .checked_add(delta)
        .ok_or_else(|| Fail::err("increment or decrement would overflow"))?;
    v.data = next.to_string().into_bytes();
    ctx.engine.store.put(k, &v)?;
    Ok(Reply::Integer(next))
}

pub(crate) fn incr(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    incr_by(ctx, key(args), 1)
}

pub(crate) fn decr(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    incr_by(ctx, key(args), -1)
}

pub(crate) fn incrby(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let d = int(val(args, 2))?;
    incr_by(ctx, key(args), d)
}

pub(crate) fn decrby(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let d = int(val(args, 2))?;
    let neg = d
        .checked_neg()
        .ok_or_else(|| Fail::err("decrement would overflow"))?;
    incr_by(ctx, key(args), neg)
}

pub(crate) fn incrbyfloat(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let not_float = || Fail::err("value is not a valid float");
    let delta = parse_f64(val(args, 2)).ok_or_else(not_float)?;
    let mut v = ctx
        .engine
        .store
        .get(key(args), ctx.now_ms)?
        .unwrap_or_else(|| StoredValue::new(b"0".to_vec()));
    let cur = parse_f64(&v.data).ok_or_else(not_float)?;
    let next = cur + delta;
    if !next.is_finite() {
        return Err(Fail::err("increment would produce NaN or Infinity"));
    }
    v.data = format_double(next).into_bytes();
    ctx.engine.store.put(key(args), &v)?;
    Ok(Reply::Bulk(v.data.into()))
}
