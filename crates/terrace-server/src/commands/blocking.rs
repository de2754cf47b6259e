//! Blocking pops: BLPOP, BRPOP, BLMOVE, BRPOPLPUSH and BLMPOP of lists, BZPOPMIN,
//! BZPOPMAX and BZMPOP of sorted sets. A blocking command that finds nothing leaves a
//! [`Blocked`] in its session instead of a reply; the transport then waits
//! (`Session::wait_blocked`) until a push or an add to one of its keys from any
//! connection wakes it, tries the command again, and answers; or answers the timeout's
//! nil. Inside MULTI/EXEC, and when tried again, the commands do not block.
//!
//! Owns: the registry of blocked clients by key ([`Waiters`]). Must not touch: the list
//! and sorted-set layouts (`lists`, `zsets` and `mpop` pop, push and add).
//! Concurrency: a push wakes every client blocked on its key (a stored permit, so a push
//! between a client's try and its wait is not lost); the clients then race for the
//! element under the key's lock, and the losers wait again.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::lists::{self, End};
use super::mpop::{self, Kind};
use super::{zsets, CmdResult, Ctx, Fail};
use crate::resp::Reply;

/// The clients blocked on one key, by client id.
type Blockers = HashMap<u64, Arc<Notify>>;

/// Clients blocked on each key.
#[derive(Default)]
pub(crate) struct Waiters {
    map: Mutex<HashMap<Vec<u8>, Blockers>>,
}

impl Waiters {
    /// Wakes the clients blocked on `key` (after a push to it).
    pub(crate) fn wake(&self, key: &[u8]) {
        if let Some(clients) = self.map.lock().get(key) {
            clients.values().for_each(|n| n.notify_one());
        }
    }

    /// Registers client `id`, woken through `notify`, on `keys` (again: idempotent).
    pub(crate) fn register(&self, keys: &[Vec<u8>], id: u64, notify: &Arc<Notify>) {
        let mut map = self.map.lock();
        for k in keys {
            map.entry(k.clone()).or_default().insert(id, notify.clone());
        }
    }

    /// Forgets client `id`'s waits on `keys`.
    pub(crate) fn unregister(&self, keys: &[Vec<u8>], id: u64) {
        let mut map = self.map.lock();
        for k in keys {
            if let Some(clients) = map.get_mut(k) {
                clients.remove(&id);
                if clients.is_empty() {
                    map.remove(k);
                }
            }
        }
    }
}

/// A blocking command waiting for a push.
#[derive(Debug)]
pub(crate) struct Blocked {
    /// The command, to run again when woken.
    pub(crate) args: Vec<Vec<u8>>,
    pub(crate) keys: Vec<Vec<u8>>,
    /// When to give up (`None`: never).
    pub(crate) deadline: Option<Instant>,
    /// What the command answers on timeout (and when it found nothing again).
    pub(crate) timeout_reply: Reply,
    /// Woken by pushes to `keys`.
    pub(crate) notify: Arc<Notify>,
}

/// The timeout argument: seconds, fractional; 0 waits forever.
fn timeout(arg: &[u8]) -> Result<Option<Instant>, Fail> {
    let secs = super::arg::parse_f64(arg)
        .filter(|s| s.is_finite())
        .ok_or_else(|| Fail::err("timeout is not a float or out of range"))?;
    if secs < 0.0 {
        return Err(Fail::err("timeout is negative"));
    }
    if secs == 0.0 {
        return Ok(None);
    }
    let d = std::time::Duration::try_from_secs_f64(secs)
        .map_err(|_| Fail::err("timeout is out of range"))?;
    Ok(Instant::now().checked_add(d))
}

/// Blocks the session on `keys` (when it may), answering `nothing` for now.
fn block(
    ctx: &mut Ctx<'_>,
    args: &[&[u8]],
    keys: &[&[u8]],
    deadline: Option<Instant>,
    nothing: Reply,
) -> CmdResult {
    if ctx.st.may_block {
        ctx.st.blocked = Some(Blocked {
            args: args.iter().map(|a| a.to_vec()).collect(),
            keys: keys.iter().map(|k| k.to_vec()).collect(),
            deadline,
            timeout_reply: nothing.clone(),
            notify: Arc::new(Notify::new()),
        });
    }
    Ok(nothing)
}

fn pop_any(ctx: &mut Ctx<'_>, args: &[&[u8]], end: End) -> CmdResult {
    let deadline = timeout(args.last().copied().unwrap_or_default())?;
    let keys = args.get(1..args.len() - 1).unwrap_or_default();
    for k in keys {
        if let Some(mut v) = lists::pop(ctx, k, end, 1)? {
            if let Some(e) = v.pop() {
                return Ok(Reply::Array(vec![
                    Reply::Bulk(k.to_vec().into()),
                    Reply::Bulk(e.into()),
                ]));
            }
        }
    }
    block(ctx, args, keys, deadline, Reply::NilArray)
}

pub(crate) fn blpop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    pop_any(ctx, args, End::Left)
}

pub(crate) fn brpop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    pop_any(ctx, args, End::Right)
}

fn move_blocking(
    ctx: &mut Ctx<'_>,
    args: &[&[u8]],
    ends: (End, End),
    deadline_arg: &[u8],
) -> CmdResult {
    let deadline = timeout(deadline_arg)?;
    let (src, dst) = (
        args.get(1).copied().unwrap_or_default(),
        args.get(2).copied().unwrap_or_default(),
    );
    match lists::move_one(ctx, src, dst, ends.0, ends.1)? {
        Some(v) => Ok(Reply::Bulk(v.into())),
        None => block(ctx, args, &[src], deadline, Reply::Nil),
    }
}

pub(crate) fn blmove(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let ends = (
        End::parse(args.get(3).copied().unwrap_or_default())?,
        End::parse(args.get(4).copied().unwrap_or_default())?,
    );
    move_blocking(ctx, args, ends, args.get(5).copied().unwrap_or_default())
}

pub(crate) fn brpoplpush(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    move_blocking(
        ctx,
        args,
        (End::Right, End::Left),
        args.get(3).copied().unwrap_or_default(),
    )
}

/// BLMPOP and BZMPOP: `timeout numkeys key [key ...] <side> [COUNT count]`.
fn mpop_blocking(ctx: &mut Ctx<'_>, args: &[&[u8]], kind: Kind) -> CmdResult {
    let deadline = timeout(args.get(1).copied().unwrap_or_default())?;
    let pop = mpop::parse(args, 2, kind)?;
    match mpop::pop_first(ctx, &pop, kind)? {
        Some(reply) => Ok(reply),
        None => block(ctx, args, &pop.keys, deadline, Reply::NilArray),
    }
}

pub(crate) fn blmpop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    mpop_blocking(ctx, args, Kind::List)
}

pub(crate) fn bzmpop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    mpop_blocking(ctx, args, Kind::SortedSet)
}

/// BZPOPMIN and BZPOPMAX: `key [key ...] timeout`; answers `[key, member, score]`.
fn zpop_any(ctx: &mut Ctx<'_>, args: &[&[u8]], max: bool) -> CmdResult {
    let deadline = timeout(args.last().copied().unwrap_or_default())?;
    let keys = args.get(1..args.len() - 1).unwrap_or_default();
    for k in keys {
        if let Some((score, member)) = zsets::pop_members(ctx, k, max, 1)?.and_then(|mut v| v.pop())
        {
            return Ok(Reply::Array(vec![
                Reply::Bulk(k.to_vec().into()),
                Reply::Bulk(member.into()),
                Reply::Double(score),
            ]));
        }
    }
    block(ctx, args, keys, deadline, Reply::NilArray)
}

pub(crate) fn bzpopmin(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    zpop_any(ctx, args, false)
}

pub(crate) fn bzpopmax(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    zpop_any(ctx, args, true)
}

#[cfg(test)]
mod tests;
