//! Pops from the first non-empty of several keys: LMPOP and ZMPOP, and the searches that
//! BLMPOP and BZMPOP (`blocking`) run before they block.
//!
//! Owns: parsing `numkeys key [key ...] <side> [COUNT count]` and the replies. Must not
//! touch: the list and sorted-set layouts (`lists::pop` and `zsets::pop_members` pop).

use super::arg::{arg, int, is};
use super::lists::{self, End};
use super::{zsets, CmdResult, Ctx, Fail};
use crate::resp::Reply;

/// Which collection a multi-key pop takes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    List,
    SortedSet,
}

/// A parsed multi-key pop.
#[derive(Debug)]
pub(crate) struct MultiPop<'a> {
    pub(crate) keys: Vec<&'a [u8]>,
    /// RIGHT for a list, MAX for a sorted set.
    pub(crate) high_end: bool,
    pub(crate) count: usize,
}

/// Parses `numkeys key [key ...] <side> [COUNT count]` from `args[at..]`, with Redis's
/// errors.
pub(crate) fn parse<'a>(args: &[&'a [u8]], at: usize, kind: Kind) -> Result<MultiPop<'a>, Fail> {
    let numkeys = int(arg(args, at))
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| Fail::err("numkeys should be greater than 0"))?;
    let numkeys = usize::try_from(numkeys).map_err(|_| Fail::syntax())?;
    let keys_at = at + 1;
    // The keys and the side must be there.
    if numkeys > args.len().saturating_sub(keys_at + 1) {
        return Err(Fail::syntax());
    }
    let keys = args
        .get(keys_at..keys_at + numkeys)
        .ok_or_else(Fail::syntax)?
        .to_vec();
    let side = arg(args, keys_at + numkeys);
    let (low, high) = match kind {
        Kind::List => ("left", "right"),
        Kind::SortedSet => ("min", "max"),
    };
    let high_end = if is(side, low) {
        false
    } else if is(side, high) {
        true
    } else {
        return Err(Fail::syntax());
    };
    let mut count = None;
    let mut i = keys_at + numkeys + 1;
    while let Some(a) = args.get(i) {
        if is(a, "count") && count.is_none() {
            let value = args.get(i + 1).ok_or_else(Fail::syntax)?;
            let n = int(value)
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| Fail::err("count should be greater than 0"))?;
            count = Some(usize::try_from(n).unwrap_or(usize::MAX));
            i += 2;
        } else {
            return Err(Fail::syntax());
        }
    }
    Ok(MultiPop {
        keys,
        high_end,
        count: count.unwrap_or(1),
    })
}

/// Pops from the first key of `pop` that holds a collection of `kind`: `[key, popped]`,
/// or `None` if none does.
pub(crate) fn pop_first(
    ctx: &mut Ctx<'_>,
    pop: &MultiPop<'_>,
    kind: Kind,
) -> Result<Option<Reply>, Fail> {
    for key in &pop.keys {
        let popped = match kind {
            Kind::List => {
                let end = if pop.high_end { End::Right } else { End::Left };
                lists::pop(ctx, key, end, pop.count as u64)?
                    .filter(|v| !v.is_empty())
                    .map(|v| v.into_iter().map(|e| Reply::Bulk(e.into())).collect())
            }
            Kind::SortedSet => zsets::pop_members(ctx, key, pop.high_end, pop.count)?
                .filter(|v| !v.is_empty())
                .map(|v| {
                    v.into_iter()
                        .map(|(score, member)| {
                            Reply::Array(vec![Reply::Bulk(member.into()), Reply::Double(score)])
                        })
                        .collect()
                }),
        };
        if let Some(items) = popped {
            return Ok(Some(Reply::Array(vec![
                Reply::Bulk(key.to_vec().into()),
                Reply::Array(items),
            ])));
        }
    }
    Ok(None)
}

fn run(ctx: &mut Ctx<'_>, args: &[&[u8]], kind: Kind) -> CmdResult {
    let pop = parse(args, 1, kind)?;
    Ok(pop_first(ctx, &pop, kind)?.unwrap_or(Reply::NilArray))
}

pub(crate) fn lmpop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    run(ctx, args, Kind::List)
}

pub(crate) fn zmpop(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    run(ctx, args, Kind::SortedSet)
}
