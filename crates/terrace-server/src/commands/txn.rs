//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH.
//!
//! Queued commands run under the store's exclusive lock, so no other command interleaves
//! (atomic and isolated, as in Redis). WATCH registers the session's dirty flag with the
//! store; any write to a watched key before EXEC sets it and EXEC answers with a null.

use std::sync::atomic::Ordering;

use super::{is_dirty, run_locked, CmdResult, Ctx, Fail};
use crate::resp::Reply;

pub(crate) fn multi(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    if ctx.st.multi.is_some() {
        return Err(Fail::err("MULTI calls can not be nested"));
    }
    ctx.st.multi = Some(Vec::new());
    ctx.st.multi_error = false;
    Ok(Reply::Ok)
}

fn unwatch_all(ctx: &mut Ctx<'_>) {
    let keys = std::mem::take(&mut ctx.st.watched);
    ctx.st.watch_deadline = None;
    ctx.engine.store.unwatch(&keys, &ctx.st.dirty);
    ctx.st.dirty.store(false, Ordering::Release);
}

pub(crate) fn exec(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    let Some(queue) = ctx.st.multi.take() else {
        return Err(Fail::err("EXEC without MULTI"));
    };
    let aborted = std::mem::take(&mut ctx.st.multi_error);
    let expired = ctx.st.watch_deadline.is_some_and(|at| at <= ctx.now_ms);
    let dirty = is_dirty(ctx.st) || expired;
    unwatch_all(ctx);
    if aborted {
        return Err(Fail::Reply(Reply::Error(
            "EXECABORT Transaction discarded because of previous errors.".to_string(),
        )));
    }
    if dirty {
        return Ok(Reply::NilArray);
    }
    // Blocking commands inside a transaction answer at once.
    ctx.st.may_block = false;
    let replies = queue
        .iter()
        .map(|owned| {
            let args: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
            run_locked(ctx, &args)
        })
        .collect();
    Ok(Reply::Array(replies))
}

pub(crate) fn discard(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    if ctx.st.multi.take().is_none() {
        return Err(Fail::err("DISCARD without MULTI"));
    }
    ctx.st.multi_error = false;
    unwatch_all(ctx);
    Ok(Reply::Ok)
}

pub(crate) fn watch(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    if ctx.st.multi.is_some() {
        return Err(Fail::err("WATCH inside MULTI is not allowed"));
    }
    for k in args.iter().skip(1) {
        if !ctx.st.watched.iter().any(|w| w == k) {
            ctx.engine.store.watch(k, &ctx.st.dirty);
            ctx.st.watched.push(k.to_vec());
            if let Some(at) = ctx.get_top(k)?.and_then(|t| t.expire_at_ms()) {
                ctx.st.watch_deadline = Some(ctx.st.watch_deadline.map_or(at, |d| d.min(at)));
            }
        }
    }
    Ok(Reply::Ok)
}

pub(crate) fn unwatch(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    unwatch_all(ctx);
    Ok(Reply::Ok)
}
