//! Sorted-set commands: ZADD (NX XX GT LT CH INCR), ZREM, ZSCORE, ZMSCORE, ZINCRBY,
//! ZCARD, ZCOUNT, ZLEXCOUNT, ZRANGE (BYSCORE BYLEX REV LIMIT WITHSCORES), ZRANGESTORE,
//! ZRANGEBYSCORE, ZREVRANGE, ZREVRANGEBYSCORE, ZRANGEBYLEX, ZREVRANGEBYLEX, ZRANK,
//! ZREVRANK, ZPOPMIN, ZPOPMAX, ZREMRANGEBYSCORE, ZREMRANGEBYRANK, ZREMRANGEBYLEX,
//! ZUNIONSTORE, ZINTERSTORE, ZRANDMEMBER, ZSCAN.
//!
//! A sorted set is its metadata at its key, one record per member holding its score (in
//! member-hash order, for ZSCORE and ZSCAN), and a score index: one empty record per
//! member keyed by score then member, which every ordered command walks
//! (docs/formats/resp-collections.md). Ranks are counted along the index, so ZRANK and
//! rank ranges cost their offset.

use super::arg::arg;
use std::collections::{BTreeMap, HashSet};

use rand::seq::SliceRandom;

use super::arg::{int, is, parse_f64};
use super::collection::{self, ScanArgs};
use super::{CmdResult, Ctx, Fail};
use crate::resp::{Protocol, Reply};
use crate::value::keys::{self, MemberKeyBuf, Sub};
use crate::value::{CollKind, CollMeta, MemberPrefix};

const ZSET: CollKind = CollKind::Zset;

/// A member with its score.
pub(crate) type Scored = (f64, Vec<u8>);

fn member_key(key: &[u8], meta: &CollMeta, member: &[u8]) -> MemberKeyBuf {
    keys::hashed_member(Sub::ZsetMember, key, meta.version, member)
}

fn index_key(key: &[u8], meta: &CollMeta, score: f64, member: &[u8]) -> MemberKeyBuf {
    let score = keys::score_bytes(score);
    keys::member_of_parts(Sub::ZsetScore, key, meta.version, &[&score, member])
}

fn score_of(
    ctx: &Ctx<'_>,
    key: &[u8],
    meta: &CollMeta,
    member: &[u8],
) -> Result<Option<f64>, Fail> {
    score_at(ctx, &member_key(key, meta, member))
}

/// The score stored under the member record `member_key`, if any.
fn score_at(ctx: &Ctx<'_>, member_key: &[u8]) -> Result<Option<f64>, Fail> {
    Ok(ctx.get_member(member_key)?.and_then(|v| keys::score_of(&v)))
}

/// Writes `member` with `score` (replacing `old`, its current score) into `batch`.
fn put_score(
    batch: &mut terrace::WriteBatch,
    key: &[u8],
    meta: &CollMeta,
    member: &[u8],
    score: f64,
    old: Option<f64>,
) {
    put_score_at(
        batch,
        key,
        meta,
        &member_key(key, meta, member),
        member,
        score,
        old,
    );
}

/// [`put_score`] with the member's record key already built (`member_key`).
fn put_score_at(
    batch: &mut terrace::WriteBatch,
    key: &[u8],
    meta: &CollMeta,
    member_key: &[u8],
    member: &[u8],
    score: f64,
    old: Option<f64>,
) {
    if let Some(old) = old {
        batch.delete(&index_key(key, meta, old, member));
    }
    batch.put(member_key, &keys::score_bytes(score));
    batch.put(&index_key(key, meta, score, member), b"");
}

fn delete_member(
    batch: &mut terrace::WriteBatch,
    key: &[u8],
    meta: &CollMeta,
    member: &[u8],
    score: f64,
) {
    batch.delete(&member_key(key, meta, member));
    batch.delete(&index_key(key, meta, score, member));
}

/// Walks the score index (backwards when `rev`), calling `visit(score, member)` until it
/// returns false.
fn walk(
    ctx: &Ctx<'_>,
    key: &[u8],
    meta: &CollMeta,
    rev: bool,
    mut visit: impl FnMut(f64, &[u8]) -> bool,
) -> Result<(), Fail> {
    let prefix = keys::members(Sub::ZsetScore, key, meta.version);
    let mut step = |entry: &[u8], _: &[u8]| match keys::score_of(entry) {
        Some(score) => visit(score, entry.get(8..).unwrap_or_default()),
        None => true,
    };
    if rev {
        // Up to the tail: every index record above it was popped (deleted).
        ctx.for_each_member_rev(&prefix, meta.tail_bound().as_deref(), step)
    } else {
        // From the head: every index record below it was popped (deleted).
        let mut from = keys::MemberKeyBuf::new();
        from.extend_from_slice(&meta.head.to_be_bytes());
        from.extend_from_slice(meta.head_member.as_bytes());
        ctx.for_each_member(&prefix, &from, &mut step)
    }
}

/// A score bound: `(1.5`, `1.5`, `-inf`, `+inf`.
#[derive(Clone, Copy)]
struct ScoreBound {
    value: f64,
    exclusive: bool,
}

impl ScoreBound {
    fn parse(b: &[u8]) -> Result<ScoreBound, Fail> {
        let (exclusive, rest) = match b.strip_prefix(b"(") {
            Some(rest) => (true, rest),
            None => (false, b),
        };
        let value = parse_f64(rest).ok_or_else(|| Fail::err("min or max is not a float"))?;
        Ok(ScoreBound { value, exclusive })
    }
    fn below(&self, s: f64) -> bool {
        if self.exclusive {
            s > self.value
        } else {
            s >= self.value
        }
    }
    fn above(&self, s: f64) -> bool {
        if self.exclusive {
            s < self.value
        } else {
            s <= self.value
        }
    }
}

/// A lex bound: `[a`, `(a`, `-`, `+`.
#[derive(Clone)]
enum LexBound {
    Min,
    Max,
    Incl(Vec<u8>),
    Excl(Vec<u8>),
}

impl LexBound {
    fn parse(b: &[u8]) -> Result<LexBound, Fail> {
        match b {
            b"-" => Ok(LexBound::Min),
            b"+" => Ok(LexBound::Max),
            [b'[', rest @ ..] => Ok(LexBound::Incl(rest.to_vec())),
            [b'(', rest @ ..] => Ok(LexBound::Excl(rest.to_vec())),
            _ => Err(Fail::err("min or max not valid string range item")),
        }
    }
    /// Whether `m` is at or after this bound taken as a minimum.
    fn min_ok(&self, m: &[u8]) -> bool {
        match self {
            LexBound::Min => true,
            LexBound::Max => false,
            LexBound::Incl(b) => m >= b.as_slice(),
            LexBound::Excl(b) => m > b.as_slice(),
        }
    }
    fn max_ok(&self, m: &[u8]) -> bool {
        match self {
            LexBound::Min => false,
            LexBound::Max => true,
            LexBound::Incl(b) => m <= b.as_slice(),
            LexBound::Excl(b) => m < b.as_slice(),
        }
    }
}

/// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]
pub(crate) fn zadd(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = arg(args, 1);
    let (mut nx, mut xx, mut gt, mut lt, mut ch, mut incr) =
        (false, false, false, false, false, false);
    let mut i = 2;
    while let Some(a) = args.get(i) {
        match () {
            () if is(a, "nx") => nx = true,
            () if is(a, "xx") => xx = true,
            () if is(a, "gt") => gt = true,
            () if is(a, "lt") => lt = true,
            () if is(a, "ch") => ch = true,
            () if is(a, "incr") => incr = true,
            () => break,
        }
        i += 1;
    }
    let rest = args.get(i..).unwrap_or_default();
    if rest.is_empty() || rest.len() % 2 != 0 {
        return Err(Fail::syntax());
    }
    if nx && xx {
        return Err(Fail::err(
            "XX and NX options at the same time are not compatible",
        ));
    }
    if (gt && lt) || (nx && (gt || lt)) {
        return Err(Fail::err(
            "GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if incr && rest.len() != 2 {
        return Err(Fail::err(
            "INCR option supports a single increment-element pair",
        ));
    }
    let mut pairs: smallvec::SmallVec<[(f64, &[u8]); 4]> = smallvec::SmallVec::new();
    for p in rest.chunks(2) {
        let score = parse_f64(p[0]).ok_or_else(|| Fail::err("value is not a valid float"))?;
        pairs.push((score, p[1]));
    }
    let mut meta = collection::find_or_new(ctx, key, ZSET)?;
    let before = meta;
    // A new sorted set's bounds start at its first member, so that removing the member
    // standing at either moves it on (`move_bounds_past`).
    let fresh = meta.size == 0;
    let mut batch = terrace::WriteBatch::new();
    let (mut added, mut changed) = (0i64, 0i64);
    // The scores this command gave its members so far, for a member named again; with
    // one pair there is none to remember.
    let mut pending: BTreeMap<&[u8], f64> = BTreeMap::new();
    let remember = pairs.len() > 1;
    let mut incr_result = None;
    for (score, member) in pairs {
        let mkey = member_key(key, &meta, member);
        let old = match pending.get(member) {
            Some(s) => Some(*s),
            None => score_at(ctx, &mkey)?,
        };
        if (nx && old.is_some()) || (xx && old.is_none()) {
            continue;
        }
        let new = if incr {
            let n = old.unwrap_or(0.0) + score;
            if n.is_nan() {
                return Err(Fail::err("resulting score is not a number (NaN)"));
            }
            n
        } else {
            score
        };
        if let Some(o) = old {
            if (gt && new <= o) || (lt && new >= o) {
                continue;
            }
        }
        incr_result = Some(new);
        match old {
            None => {
                added += 1;
                meta.size += 1;
            }
            Some(o) if o != new => changed += 1,
            Some(_) => {
                if remember {
                    pending.insert(member, new);
                }
                continue;
            }
        }
        // A member added below the head moves the head down to it.
        let bits = score_bits(new);
        let first = fresh && meta.size == 1 && old.is_none();
        if first || (bits, member) < (meta.head, meta.head_member.as_bytes()) {
            set_bound(&mut meta, false, bits, MemberPrefix::of(member));
        }
        // And one added at or past the tail's bound moves the tail up to it.
        if first || meta.at_or_past_tail(bits, member) {
            set_bound(&mut meta, true, bits, MemberPrefix::of(member));
        }
        put_score_at(&mut batch, key, &meta, &mkey, member, new, old);
        if remember {
            pending.insert(member, new);
        }
    }
    if added + changed > 0 {
        // The metadata changes with the size or a lower head only.
        if meta != before {
            collection::put_meta(&mut batch, key, &meta);
        }
        ctx.write(batch, [key])?;
        // Clients blocked in BZPOPMIN and the like on this key try again.
        ctx.wake(key);
    }
    if incr {
        return Ok(incr_result.map_or(Reply::Nil, Reply::Double));
    }
    Ok(Reply::Integer(if ch { added + changed } else { added }))
}

pub(crate) fn zincrby(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let line: Vec<&[u8]> = vec![b"zadd", arg(args, 1), b"INCR", arg(args, 2), arg(args, 3)];
    zadd(ctx, &line)
}

pub(crate) fn zrem(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = arg(args, 1);
    let Some(mut meta) = collection::find(ctx, key, ZSET)? else {
        return Ok(Reply::Integer(0));
    };
    let mut batch = terrace::WriteBatch::new();
    let mut removed: Vec<(f64, &[u8])> = Vec::new();
    for m in args.iter().skip(2) {
        if removed.iter().any(|(_, r)| r == m) {
            continue;
        }
        if let Some(s) = score_of(ctx, key, &meta, m)? {
            delete_member(&mut batch, key, &meta, m, s);
            removed.push((s, m));
        }
    }
    if !removed.is_empty() {
        meta.size -= removed.len() as u64;
        move_bounds_past(ctx, key, &mut meta, &removed)?;
        collection::put_meta(&mut batch, key, &meta);
        ctx.write(batch, [key])?;
    }
    Ok(Reply::Integer(removed.len() as i64))
}

/// After `removed` (score and member) leave the sorted set at `key`, moves a bound that
/// one of them stood at to the first member left past it: the head up, the tail down.
/// A queue drained by ZREM or ZREMRANGEBY* then starts its next walk at its first live
/// member, as one drained by ZPOPMIN does, instead of stepping over the deleted records
/// of every earlier removal. The walk that finds the new bound starts at the old one and
/// skips the removed members (their records are still there until the batch is written);
/// a removal that stood at neither bound costs nothing more.
fn move_bounds_past(
    ctx: &Ctx<'_>,
    key: &[u8],
    meta: &mut CollMeta,
    removed: &[(f64, &[u8])],
) -> Result<(), Fail> {
    if meta.size == 0 {
        return Ok(());
    }
    let removed: Vec<(u64, &[u8])> = removed.iter().map(|(s, m)| (score_bits(*s), *m)).collect();
    let at = |bits: u64, prefix: &MemberPrefix| {
        removed
            .iter()
            .any(|(b, m)| *b == bits && MemberPrefix::of(m) == *prefix)
    };
    let mut gone: Option<HashSet<(u64, &[u8])>> = None;
    for rev in [false, true] {
        let stood_there = if rev {
            meta.has_tail_bound() && at(meta.tail, &meta.tail_member)
        } else {
            at(meta.head, &meta.head_member)
        };
        if !stood_there {
            continue;
        }
        let gone = gone.get_or_insert_with(|| removed.iter().copied().collect());
        let mut first_left = None;
        walk(ctx, key, &*meta, rev, |score, member| {
            let bits = score_bits(score);
            if gone.contains(&(bits, member)) {
                return true;
            }
            first_left = Some((bits, MemberPrefix::of(member)));
            false
        })?;
        if let Some((bits, member)) = first_left {
            set_bound(meta, rev, bits, member);
        }
    }
    Ok(())
}

/// A score's index bytes as a number, as the metadata's bounds keep them.
fn score_bits(score: f64) -> u64 {
    u64::from_be_bytes(keys::score_bytes(score))
}

/// The order of two members' index records: by score bytes, then member.
fn index_order((sa, ma): &Scored, (sb, mb): &Scored) -> std::cmp::Ordering {
    keys::score_bytes(*sa)
        .cmp(&keys::score_bytes(*sb))
        .then_with(|| ma.cmp(mb))
}

/// Moves the sorted set's head bound (its tail bound when `top`) to the member `member`
/// (its first bytes) at the score whose bytes are `score_bits`.
fn set_bound(meta: &mut CollMeta, top: bool, score_bits: u64, member: MemberPrefix) {
    if top {
        meta.tail = score_bits;
        meta.tail_member = member;
    } else {
        meta.head = score_bits;
        meta.head_member = member;
    }
}

pub(crate) fn zscore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = arg(args, 1);
    let s = match collection::find(ctx, key, ZSET)? {
        Some(meta) => score_of(ctx, key, &meta, arg(args, 2))?,
        None => None,
    };
    Ok(s.map_or(Reply::Nil, Reply::Double))
}

pub(crate) fn zmscore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = arg(args, 1);
    let meta = collection::find(ctx, key, ZSET)?;
    let mut out = Vec::new();
    for m in args.iter().skip(2) {
        let s = match &meta {
            Some(meta) => score_of(ctx, key, meta, m)?,
            None => None,
        };
        out.push(s.map_or(Reply::Nil, Reply::Double));
    }
    Ok(Reply::Array(out))
}

pub(crate) fn zcard(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let size = collection::find(ctx, arg(args, 1), ZSET)?.map_or(0, |m| m.size);
    Ok(Reply::Integer(i64::try_from(size).unwrap_or(i64::MAX)))
}

/// What a range selects.
enum Select {
    Rank(i64, i64),
    Score(ScoreBound, ScoreBound),
    Lex(LexBound, LexBound),
}

/// A parsed range request.
struct RangeSpec {
    select: Select,
    rev: bool,
    limit: Option<(usize, usize)>,
    with_scores: bool,
}

/// The (score, member) pairs `spec` selects, in the order it asks for.
fn select(ctx: &Ctx<'_>, key: &[u8], spec: &RangeSpec) -> Result<Vec<Scored>, Fail> {
    let Some(meta) = collection::find(ctx, key, ZSET)? else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    match &spec.select {
        Select::Rank(start, stop) => {
            let len = i64::try_from(meta.size).unwrap_or(i64::MAX);
            let start = if *start < 0 {
                (len + start).max(0)
            } else {
                *start
            };
            let stop = if *stop < 0 {
                len + stop
            } else {
                (*stop).min(len - 1)
            };
            if start > stop || start >= len {
                return Ok(out);
            }
            let mut rank = 0i64;
            walk(ctx, key, &meta, spec.rev, |score, member| {
                if rank >= start {
                    out.push((score, member.to_vec()));
                }
                rank += 1;
                rank <= stop
            })?;
        }
        Select::Score(min, max) => {
            let (mut skip, mut take) = spec.limit.unwrap_or((0, usize::MAX));
            walk(ctx, key, &meta, spec.rev, |score, member| {
                let (lo_ok, hi_ok) = (min.below(score), max.above(score));
                if spec.rev && !lo_ok || !spec.rev && !hi_ok {
                    return false;
                }
                if lo_ok && hi_ok {
                    if skip > 0 {
                        skip -= 1;
                    } else if take > 0 {
                        out.push((score, member.to_vec()));
                        take -= 1;
                    }
                }
                take > 0
            })?;
        }
        Select::Lex(min, max) => {
            let (mut skip, mut take) = spec.limit.unwrap_or((0, usize::MAX));
            walk(ctx, key, &meta, spec.rev, |score, member| {
                if min.min_ok(member) && max.max_ok(member) {
                    if skip > 0 {
                        skip -= 1;
                    } else if take > 0 {
                        out.push((score, member.to_vec()));
                        take -= 1;
                    }
                }
                take > 0
            })?;
        }
    }
    Ok(out)
}

/// Members (and scores) as a range reply: RESP2 flat, RESP3 pairs with doubles.
fn range_reply(protocol: Protocol, items: Vec<Scored>, with_scores: bool) -> Reply {
    let mut out = Vec::with_capacity(items.len() * 2);
    for (score, member) in items {
        match (with_scores, protocol) {
            (false, _) => out.push(Reply::Bulk(member.into())),
            (true, Protocol::Resp2) => {
                out.push(Reply::Bulk(member.into()));
                out.push(Reply::Double(score));
            }
            (true, Protocol::Resp3) => {
                out.push(Reply::Array(vec![
                    Reply::Bulk(member.into()),
                    Reply::Double(score),
                ]));
            }
        }
    }
    Reply::Array(out)
}

/// Parses ZRANGE's arguments after the key (`min max [BYSCORE|BYLEX] [REV] [LIMIT o c]
/// [WITHSCORES]`), or one of the older forms: `by` forces BYSCORE or BYLEX, `rev` REV.
fn parse_range(
    args: &[&[u8]],
    by: Option<&str>,
    rev: bool,
    store: bool,
) -> Result<RangeSpec, Fail> {
    let (a, b) = (arg(args, 0), arg(args, 1));
    let (mut by_score, mut by_lex, mut rev, mut limit, mut with_scores) =
        (by == Some("score"), by == Some("lex"), rev, None, false);
    let mut i = 2;
    while let Some(opt) = args.get(i) {
        if is(opt, "byscore") && by.is_none() {
            by_score = true;
        } else if is(opt, "bylex") && by.is_none() {
            by_lex = true;
        } else if is(opt, "rev") && by.is_none() {
            rev = true;
        } else if is(opt, "withscores") && !store && !by_lex {
            with_scores = true;
        } else if is(opt, "limit") {
            let (o, c) = (int(arg(args, i + 1))?, int(arg(args, i + 2))?);
            if o < 0 {
                limit = Some((0, 0));
            } else {
                let c = if c < 0 {
                    usize::MAX
                } else {
                    usize::try_from(c).unwrap_or(usize::MAX)
                };
                limit = Some((usize::try_from(o).unwrap_or(usize::MAX), c));
            }
            i += 2;
        } else {
            return Err(Fail::syntax());
        }
        i += 1;
    }
    if by_score && by_lex {
        return Err(Fail::syntax());
    }
    if limit.is_some() && !by_score && !by_lex {
        return Err(Fail::err(
            "syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if with_scores && by_lex {
        return Err(Fail::err(
            "syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    // With REV the bounds come max first.
    let (lo, hi) = if rev && (by_score || by_lex) {
        (b, a)
    } else {
        (a, b)
    };
    let select = if by_score {
        Select::Score(ScoreBound::parse(lo)?, ScoreBound::parse(hi)?)
    } else if by_lex {
        Select::Lex(LexBound::parse(lo)?, LexBound::parse(hi)?)
    } else {
        Select::Rank(int(a)?, int(b)?)
    };
    Ok(RangeSpec {
        select,
        rev,
        limit,
        with_scores,
    })
}

fn range_command(ctx: &mut Ctx<'_>, args: &[&[u8]], by: Option<&str>, rev: bool) -> CmdResult {
    let spec = parse_range(args.get(2..).unwrap_or_default(), by, rev, false)?;
    let items = select(ctx, arg(args, 1), &spec)?;
    Ok(range_reply(ctx.st.protocol, items, spec.with_scores))
}

pub(crate) fn zrange(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    range_command(ctx, args, None, false)
}

pub(crate) fn zrevrange(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let spec = parse_range(args.get(2..).unwrap_or_default(), Some("rank"), true, false)?;
    let items = select(ctx, arg(args, 1), &spec)?;
    Ok(range_reply(ctx.st.protocol, items, spec.with_scores))
}

pub(crate) fn zrangebyscore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    range_command(ctx, args, Some("score"), false)
}

pub(crate) fn zrevrangebyscore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    range_command(ctx, args, Some("score"), true)
}

pub(crate) fn zrangebylex(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    range_command(ctx, args, Some("lex"), false)
}

pub(crate) fn zrevrangebylex(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    range_command(ctx, args, Some("lex"), true)
}

/// Replaces `dst` with a sorted set of `items` (deleting it when empty); returns its size.
fn store_set(ctx: &mut Ctx<'_>, dst: &[u8], items: &[Scored]) -> Result<i64, Fail> {
    let mut meta = CollMeta::new(ZSET, ctx.engine.store.new_version()?, items.len() as u64, 0);
    // The bounds start at the first and last members, as a ZADD's to a new set do.
    let lo = items.iter().min_by(|a, b| index_order(a, b));
    let hi = items.iter().max_by(|a, b| index_order(a, b));
    if let (Some(lo), Some(hi)) = (lo, hi) {
        for (top, (score, member)) in [(false, lo), (true, hi)] {
            let bits = score_bits(*score);
            set_bound(&mut meta, top, bits, MemberPrefix::of(member));
        }
    }
    let mut batch = terrace::WriteBatch::new();
    for (score, member) in items {
        put_score(&mut batch, dst, &meta, member, *score, None);
    }
    collection::put_meta(&mut batch, dst, &meta);
    ctx.write(batch, [dst])?;
    if !items.is_empty() {
        ctx.wake(dst);
    }
    Ok(items.len() as i64)
}

pub(crate) fn zrangestore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let spec = parse_range(args.get(3..).unwrap_or_default(), None, false, true)?;
    let items = select(ctx, arg(args, 2), &spec)?;
    Ok(Reply::Integer(store_set(ctx, arg(args, 1), &items)?))
}

pub(crate) fn zcount(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let spec = parse_range(
        args.get(2..4).unwrap_or_default(),
        Some("score"),
        false,
        true,
    )?;
    Ok(Reply::Integer(
        select(ctx, arg(args, 1), &spec)?.len() as i64
    ))
}

pub(crate) fn zlexcount(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let spec = parse_range(args.get(2..4).unwrap_or_default(), Some("lex"), false, true)?;
    Ok(Reply::Integer(
        select(ctx, arg(args, 1), &spec)?.len() as i64
    ))
}

fn rank(ctx: &mut Ctx<'_>, args: &[&[u8]], rev: bool) -> CmdResult {
    let key = arg(args, 1);
    let member = arg(args, 2);
    let with_score = match args.get(3) {
        None => false,
        Some(a) if is(a, "withscore") && args.len() == 4 => true,
        Some(_) => return Err(Fail::syntax()),
    };
    let Some(meta) = collection::find(ctx, key, ZSET)? else {
        return Ok(Reply::Nil);
    };
    let Some(score) = score_of(ctx, key, &meta, member)? else {
        return Ok(Reply::Nil);
    };
    let mut r = 0i64;
    let mut found = false;
    walk(ctx, key, &meta, rev, |_, m| {
        if m == member {
            found = true;
            return false;
        }
        r += 1;
        true
    })?;
    if !found {
        return Ok(Reply::Nil);
    }
    Ok(if with_score {
        Reply::Array(vec![Reply::Integer(r), Reply::Double(score)])
    } else {
        Reply::Integer(r)
    })
}

pub(crate) fn zrank(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    rank(ctx, args, false)
}

pub(crate) fn zrevrank(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    rank(ctx, args, true)
}

/// Removes `items` (score, member) from the sorted set at `key`.
fn remove_items(ctx: &mut Ctx<'_>, key: &[u8], items: &[Scored]) -> Result<(), Fail> {
    if items.is_empty() {
        return Ok(());
    }
    let Some(mut meta) = collection::find(ctx, key, ZSET)? else {
        return Ok(());
    };
    let mut batch = terrace::WriteBatch::new();
    for (score, member) in items {
        delete_member(&mut batch, key, &meta, member, *score);
    }
    meta.size = meta.size.saturating_sub(items.len() as u64);
    let removed: Vec<(f64, &[u8])> = items.iter().map(|(s, m)| (*s, m.as_slice())).collect();
    move_bounds_past(ctx, key, &mut meta, &removed)?;
    collection::put_meta(&mut batch, key, &meta);
    ctx.write(batch, [key])
}

/// Removes up to `count` of the lowest-scoring members of the sorted set at `key` (the
/// highest if `max`); returns them in pop order, or `None` if there is no such key.
pub(crate) fn pop_members(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    max: bool,
    count: usize,
) -> Result<Option<Vec<Scored>>, Fail> {
    let Some(mut meta) = collection::find(ctx, key, ZSET)? else {
        return Ok(None);
    };
    // The popped members, and the first one left (the new head, for ZPOPMIN).
    let mut items = Vec::new();
    let mut next = None;
    if count > 0 {
        walk(ctx, key, &meta, max, |score, member| {
            if items.len() < count {
                items.push((score, member.to_vec()));
                true
            } else {
                next = Some((score, MemberPrefix::of(member)));
                false
            }
        })?;
    }
    if !items.is_empty() {
        let mut batch = terrace::WriteBatch::new();
        for (score, member) in &items {
            delete_member(&mut batch, key, &meta, member, *score);
        }
        meta.size -= items.len() as u64;
        if let Some((score, member)) = next {
            set_bound(&mut meta, max, score_bits(score), member);
        }
        collection::put_meta(&mut batch, key, &meta);
        ctx.write(batch, [key])?;
    }
    Ok(Some(items))
}

fn pop(ctx: &mut Ctx<'_>, args: &[&[u8]], max: bool) -> CmdResult {
    let key = arg(args, 1);
    let count = match args.get(2) {
        None => 1,
        Some(c) => {
            let n = int(c)?;
            if n < 0 {
                return Err(Fail::err("value is out of range, must be positive"));
            }
            n
        }
    };
    if args.len() > 3 {
        return Err(Fail::syntax());
    }
    let want = usize::try_from(count).unwrap_or(usize::MAX);
    let items = pop_members(ctx, key, max, want)?.unwrap_or_default();
    // ZPOPMIN answers a flat list, pairs only under RESP3 with a count.
    let protocol = if args.len() == 3 {
        ctx.st.protocol
    } else {
        Protocol::Resp2
    };
    Ok(range_reply(protocol, items, true))
}

pub(crate) fn zpopmin(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    pop(ctx, args, false)
}

pub(crate) fn zpopmax(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    pop(ctx, args, true)
}

fn remove_range(ctx: &mut Ctx<'_>, args: &[&[u8]], by: &str) -> CmdResult {
    let key = arg(args, 1);
    let spec = match by {
        "rank" => RangeSpec {
            select: Select::Rank(int(arg(args, 2))?, int(arg(args, 3))?),
            rev: false,
            limit: None,
            with_scores: false,
        },
        _ => parse_range(args.get(2..4).unwrap_or_default(), Some(by), false, true)?,
    };
    let items = select(ctx, key, &spec)?;
    remove_items(ctx, key, &items)?;
    Ok(Reply::Integer(items.len() as i64))
}

pub(crate) fn zremrangebyscore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    remove_range(ctx, args, "score")
}

pub(crate) fn zremrangebyrank(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    remove_range(ctx, args, "rank")
}

pub(crate) fn zremrangebylex(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    remove_range(ctx, args, "lex")
}

/// Every member and score of the sorted set at `key`, or of the set there (score 1), as
/// ZUNIONSTORE and ZINTERSTORE read their inputs.
fn all_scores(ctx: &Ctx<'_>, key: &[u8]) -> Result<BTreeMap<Vec<u8>, f64>, Fail> {
    let mut out = BTreeMap::new();
    match ctx.get_top(key)? {
        None => {}
        Some(crate::value::Top::Coll(meta)) if meta.kind == ZSET => {
            walk(ctx, key, &meta, false, |s, m| {
                out.insert(m.to_vec(), s);
                true
            })?;
        }
        Some(crate::value::Top::Coll(meta)) if meta.kind == CollKind::Set => {
            let prefix = keys::members(Sub::SetMember, key, meta.version);
            ctx.for_each_member(&prefix, b"", |stored, _| {
                if let Some((_, m)) = keys::unhash(stored) {
                    out.insert(m.to_vec(), 1.0);
                }
                true
            })?;
        }
        Some(_) => return Err(Fail::wrongtype()),
    }
    Ok(out)
}

/// How ZUNION, ZINTER and ZDIFF (and their STORE forms) combine their inputs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Union,
    Inter,
    Diff,
}

/// Reads `numkeys key... [WEIGHTS w...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]` from
/// `args` (starting at numkeys) and combines the inputs; returns the result ordered by
/// score then member, and whether WITHSCORES was given (only when `reply`).
fn combine(
    ctx: &Ctx<'_>,
    args: &[&[u8]],
    op: Op,
    reply: bool,
) -> Result<(Vec<Scored>, bool), Fail> {
    let n = int(arg(args, 0))?;
    if n <= 0 {
        return Err(Fail::err("at least 1 input key is needed for this command"));
    }
    let n = usize::try_from(n).unwrap_or(usize::MAX);
    let keys = args
        .get(1..1usize.saturating_add(n))
        .filter(|k| k.len() == n)
        .ok_or_else(|| Fail::err("Number of keys can't be greater than number of args"))?;
    let mut weights = vec![1.0; n];
    let mut aggregate = "sum";
    let mut with_scores = false;
    let mut i = 1 + n;
    while let Some(opt) = args.get(i) {
        if is(opt, "weights") && op != Op::Diff {
            for (j, w) in weights.iter_mut().enumerate() {
                *w = parse_f64(arg(args, i + 1 + j))
                    .ok_or_else(|| Fail::err("weight value is not a float"))?;
            }
            i += 1 + n;
        } else if is(opt, "aggregate") && op != Op::Diff {
            let a = arg(args, i + 1);
            aggregate = if is(a, "sum") {
                "sum"
            } else if is(a, "min") {
                "min"
            } else if is(a, "max") {
                "max"
            } else {
                return Err(Fail::syntax());
            };
            i += 2;
        } else if is(opt, "withscores") && reply {
            with_scores = true;
            i += 1;
        } else {
            return Err(Fail::syntax());
        }
    }
    let agg = |a: f64, b: f64| match aggregate {
        "min" => a.min(b),
        "max" => a.max(b),
        _ => {
            let s = a + b;
            if s.is_nan() {
                0.0
            } else {
                s
            }
        }
    };
    let mut result: Option<BTreeMap<Vec<u8>, f64>> = None;
    for (k, w) in keys.iter().zip(&weights) {
        let set: BTreeMap<Vec<u8>, f64> = all_scores(ctx, k)?
            .into_iter()
            .map(|(m, s)| (m, if s == 0.0 || *w == 0.0 { 0.0 } else { s * w }))
            .collect();
        result = Some(match (result, op) {
            (None, _) => set,
            (Some(acc), Op::Inter) => acc
                .into_iter()
                .filter_map(|(m, s)| set.get(&m).map(|t| (m, agg(s, *t))))
                .collect(),
            (Some(acc), Op::Diff) => acc
                .into_iter()
                .filter(|(m, _)| !set.contains_key(m))
                .collect(),
            (Some(mut acc), Op::Union) => {
                for (m, s) in set {
                    let v = acc.get(&m).map_or(s, |a| agg(*a, s));
                    acc.insert(m, v);
                }
                acc
            }
        });
    }
    let mut items: Vec<Scored> = result
        .unwrap_or_default()
        .into_iter()
        .map(|(m, s)| (s, m))
        .collect();
    items.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    Ok((items, with_scores))
}

fn combine_store(ctx: &mut Ctx<'_>, args: &[&[u8]], op: Op) -> CmdResult {
    let (items, _) = combine(ctx, args.get(2..).unwrap_or_default(), op, false)?;
    Ok(Reply::Integer(store_set(ctx, arg(args, 1), &items)?))
}

fn combine_reply(ctx: &mut Ctx<'_>, args: &[&[u8]], op: Op) -> CmdResult {
    let (items, with_scores) = combine(ctx, args.get(1..).unwrap_or_default(), op, true)?;
    Ok(range_reply(ctx.st.protocol, items, with_scores))
}

pub(crate) fn zunionstore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    combine_store(ctx, args, Op::Union)
}

pub(crate) fn zinterstore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    combine_store(ctx, args, Op::Inter)
}

pub(crate) fn zdiffstore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    combine_store(ctx, args, Op::Diff)
}

pub(crate) fn zunion(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    combine_reply(ctx, args, Op::Union)
}

pub(crate) fn zinter(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    combine_reply(ctx, args, Op::Inter)
}

pub(crate) fn zdiff(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    combine_reply(ctx, args, Op::Diff)
}

/// ZINTERCARD numkeys key [key ...] [LIMIT limit].
pub(crate) fn zintercard(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (keys, limit) = collection::intercard_args(args)?;
    let mut upto: Vec<&[u8]> = Vec::with_capacity(keys.len() + 1);
    let numkeys = keys.len().to_string();
    upto.push(numkeys.as_bytes());
    upto.extend(keys);
    let (items, _) = combine(ctx, &upto, Op::Inter, false)?;
    let count = if limit > 0 {
        items.len().min(limit)
    } else {
        items.len()
    };
    Ok(Reply::Integer(count as i64))
}

/// ZRANDMEMBER key [count [WITHSCORES]].
pub(crate) fn zrandmember(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = arg(args, 1);
    let count = match args.get(2) {
        Some(c) => Some(int(c)?),
        None => None,
    };
    let with_scores = match args.get(3) {
        None => false,
        Some(a) if is(a, "withscores") && args.len() == 4 => true,
        Some(_) => return Err(Fail::syntax()),
    };
    let Some(meta) = collection::find(ctx, key, ZSET)? else {
        return Ok(if count.is_some() {
            Reply::Array(Vec::new())
        } else {
            Reply::Nil
        });
    };
    let mut all = Vec::new();
    walk(ctx, key, &meta, false, |s, m| {
        all.push((s, m.to_vec()));
        true
    })?;
    let mut rng = rand::thread_rng();
    let Some(count) = count else {
        return Ok(Reply::bulk_or_nil(
            all.choose(&mut rng).map(|(_, m)| m.clone()),
        ));
    };
    let chosen: Vec<Scored> = if count >= 0 {
        all.shuffle(&mut rng);
        all.truncate(usize::try_from(count).unwrap_or(usize::MAX));
        all
    } else {
        let n = count.unsigned_abs();
        if n > 1 << 24 {
            return Err(Fail::err("value is out of range"));
        }
        (0..n)
            .filter_map(|_| all.choose(&mut rng).cloned())
            .collect()
    };
    Ok(range_reply(ctx.st.protocol, chosen, with_scores))
}

/// ZSCAN key cursor [MATCH pattern] [COUNT count]: the cursor is the member hash to
/// resume from, so it needs no state on the server.
pub(crate) fn zscan(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = arg(args, 1);
    let scan = ScanArgs::parse(args, false)?;
    let Some(meta) = collection::find(ctx, key, ZSET)? else {
        return Ok(Reply::Array(vec![
            Reply::Bulk("0".into()),
            Reply::Array(Vec::new()),
        ]));
    };
    collection::scan_page(
        ctx,
        key,
        &meta,
        Sub::ZsetMember,
        &scan,
        |member, value, out| {
            out.push(Reply::Bulk(member.to_vec().into()));
            let score = keys::score_of(value).unwrap_or(0.0);
            out.push(Reply::Bulk(
                crate::resp::format_double(score).into_bytes().into(),
            ));
        },
    )
}

#[cfg(test)]
mod tests;
