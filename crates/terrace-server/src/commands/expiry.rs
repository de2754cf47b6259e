//! Expiry commands: EXPIRE family (NX XX GT LT), TTL, PTTL, EXPIRETIME, PERSIST.

use super::arg::{int, is};
use super::{CmdResult, Ctx, Fail};
use crate::resp::Reply;

fn key<'a>(args: &[&'a [u8]]) -> &'a [u8] {
    args.get(1).copied().unwrap_or_default()
}

/// How the EXPIRE family reads its time argument.
#[derive(Clone, Copy)]
enum Unit {
    RelSeconds,
    RelMillis,
    AbsSeconds,
    AbsMillis,
}

fn expire_generic(ctx: &mut Ctx<'_>, args: &[&[u8]], unit: Unit, cmd: &str) -> CmdResult {
    let n = int(args.get(2).copied().unwrap_or_default())?;
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for opt in args.iter().skip(3) {
        if is(opt, "nx") {
            nx = true;
        } else if is(opt, "xx") {
            xx = true;
        } else if is(opt, "gt") {
            gt = true;
        } else if is(opt, "lt") {
            lt = true;
        } else {
            return Err(Fail::err(format!(
                "Unsupported option {}",
                String::from_utf8_lossy(opt)
            )));
        }
    }
    if nx && (xx || gt || lt) {
        return Err(Fail::err(
            "NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if gt && lt {
        return Err(Fail::err(
            "GT and LT options at the same time are not compatible",
        ));
    }
    let invalid = || Fail::err(format!("invalid expire time in '{cmd}' command"));
    let now = i64::try_from(ctx.now_ms).map_err(|_| invalid())?;
    let at: i64 = match unit {
        Unit::RelSeconds => n.checked_mul(1000).and_then(|ms| ms.checked_add(now)),
        Unit::RelMillis => n.checked_add(now),
        Unit::AbsSeconds => n.checked_mul(1000),
        Unit::AbsMillis => Some(n),
    }
    .ok_or_else(invalid)?;
    let Some(v) = ctx.get_top(key(args))? else {
        return Ok(Reply::Integer(0));
    };
    let current = v
        .expire_at_ms()
        .map(|c| i64::try_from(c).unwrap_or(i64::MAX));
    let allowed = match current {
        None => !(xx || gt),
        Some(c) => !nx && (!gt || at > c) && (!lt || at < c),
    };
    if !allowed {
        return Ok(Reply::Integer(0));
    }
    if at <= now {
        ctx.engine.store.delete(key(args))?;
    } else {
        let at = u64::try_from(at).map_err(|_| invalid())?;
        ctx.put_top(key(args), &v.with_expiry(Some(at)))?;
    }
    Ok(Reply::Integer(1))
}

pub(crate) fn expire(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    expire_generic(ctx, args, Unit::RelSeconds, "expire")
}

pub(crate) fn pexpire(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    expire_generic(ctx, args, Unit::RelMillis, "pexpire")
}

pub(crate) fn expireat(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    expire_generic(ctx, args, Unit::AbsSeconds, "expireat")
}

pub(crate) fn pexpireat(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    expire_generic(ctx, args, Unit::AbsMillis, "pexpireat")
}

/// -2 for a missing key, -1 for a persistent one, else `f(expire_at_ms)`.
fn ttl_generic(ctx: &mut Ctx<'_>, args: &[&[u8]], f: impl Fn(u64, u64) -> i64) -> CmdResult {
    Ok(Reply::Integer(match ctx.get_top(key(args))? {
        None => -2,
        Some(v) => v.expire_at_ms().map_or(-1, |at| f(at, ctx.now_ms)),
    }))
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

pub(crate) fn ttl(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    ttl_generic(ctx, args, |at, now| {
        to_i64((at.saturating_sub(now) + 500) / 1000)
    })
}

pub(crate) fn pttl(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    ttl_generic(ctx, args, |at, now| to_i64(at.saturating_sub(now)))
}

pub(crate) fn expiretime(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    ttl_generic(ctx, args, |at, _| to_i64(at / 1000))
}

pub(crate) fn pexpiretime(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    ttl_generic(ctx, args, |at, _| to_i64(at))
}

pub(crate) fn persist(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    match ctx.get_top(key(args))? {
        Some(v) if v.expire_at_ms().is_some() => {
            ctx.put_top(key(args), &v.with_expiry(None))?;
            Ok(Reply::Integer(1))
        }
        _ => Ok(Reply::Integer(0)),
    }
}
