//! Keyspace commands: DEL, EXISTS, TYPE, RENAME, COPY, SCAN, KEYS, RANDOMKEY, DBSIZE,
//! FLUSHDB, and Terrace's ordered TRANGE.

use super::arg::arg;
use rand::Rng;

use super::arg::{int, is};
use super::glob::glob_match;
use super::{CmdResult, Ctx, Fail};
use crate::resp::Reply;
use crate::value::Top;
use terrace::WriteBatch;

use super::collection;
use super::store::{delete_top, put_top};

pub(crate) fn del(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let mut gone = Vec::new();
    for k in args.iter().skip(1) {
        if !gone.contains(k) && ctx.get_top(k)?.is_some() {
            gone.push(*k);
        }
    }
    let n = gone.len() as i64;
    if n > 0 {
        ctx.engine
            .store
            .apply(gone.into_iter().map(|k| (k.to_vec(), None)).collect())?;
    }
    Ok(Reply::Integer(n))
}

/// EXISTS and TOUCH: how many of the keys exist (repeats count again, as in Redis).
pub(crate) fn exists(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let mut n = 0;
    for k in args.iter().skip(1) {
        if ctx.get_top(k)?.is_some() {
            n += 1;
        }
    }
    Ok(Reply::Integer(n))
}

pub(crate) fn type_of(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let t = match ctx.get_top(arg(args, 1))? {
        Some(t) => t.type_name(),
        None => "none",
    };
    Ok(Reply::Status(t.to_string()))
}

fn rename_inner(ctx: &mut Ctx<'_>, args: &[&[u8]], nx: bool) -> CmdResult {
    let (src, dst) = (arg(args, 1), arg(args, 2));
    let Some(v) = ctx.get_top(src)? else {
        return Err(Fail::err("no such key"));
    };
    if src == dst {
        return Ok(if nx { Reply::Integer(0) } else { Reply::Ok });
    }
    if nx && ctx.get_top(dst)?.is_some() {
        return Ok(Reply::Integer(0));
    }
    let mut batch = WriteBatch::new();
    copy_top(ctx, &mut batch, src, dst, &v)?;
    delete_top(&mut batch, src);
    ctx.write(batch, [src, dst])?;
    Ok(if nx { Reply::Integer(1) } else { Reply::Ok })
}

pub(crate) fn rename(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    rename_inner(ctx, args, false)
}

pub(crate) fn renamenx(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    rename_inner(ctx, args, true)
}

pub(crate) fn copy(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let mut replace = false;
    let mut i = 3;
    while let Some(opt) = args.get(i) {
        if is(opt, "replace") {
            replace = true;
        } else if is(opt, "db") && args.get(i + 1).is_some() {
            if int(arg(args, i + 1))? != 0 {
                return Err(Fail::err("DB index is out of range"));
            }
            i += 1;
        } else {
            return Err(Fail::syntax());
        }
        i += 1;
    }
    let (src, dst) = (arg(args, 1), arg(args, 2));
    if src == dst {
        return Err(Fail::err("source and destination objects are the same"));
    }
    let Some(v) = ctx.get_top(src)? else {
        return Ok(Reply::Integer(0));
    };
    if !replace && ctx.get_top(dst)?.is_some() {
        return Ok(Reply::Integer(0));
    }
    let mut batch = WriteBatch::new();
    copy_top(ctx, &mut batch, src, dst, &v)?;
    ctx.write(batch, [dst])?;
    Ok(Reply::Integer(1))
}

/// Adds to `batch` `src`'s record `v` (and a collection's members) as `dst`'s.
fn copy_top(
    ctx: &Ctx<'_>,
    batch: &mut WriteBatch,
    src: &[u8],
    dst: &[u8],
    v: &Top,
) -> Result<(), Fail> {
    match v {
        Top::String(_) => put_top(batch, dst, v),
        Top::Coll(meta) => {
            collection::copy(ctx, batch, src, dst, meta)?;
        }
    }
    Ok(())
}

/// DBSIZE: the keys counted with every write (`keycount`), as Redis's, expired keys not
/// yet deleted included; or, when the count is not kept, the live keys walked.
pub(crate) fn dbsize(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    let (n, _) = ctx.engine.key_counts(ctx.now_ms)?;
    Ok(Reply::Integer(i64::try_from(n).unwrap_or(i64::MAX)))
}

pub(crate) fn flushdb(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    match args.get(1) {
        None => {}
        Some(a) if args.len() == 2 && (is(a, "sync") || is(a, "async")) => {}
        Some(_) => return Err(Fail::syntax()),
    }
    ctx.engine.store.clear()?;
    Ok(Reply::Ok)
}

pub(crate) fn keys(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let pattern = arg(args, 1);
    let mut out = Vec::new();
    ctx.engine.store.for_each_from(b"", ctx.now_ms, |k, _| {
        if glob_match(pattern, k, false) {
            out.push(Reply::Bulk(k.to_vec().into()));
        }
        true
    })?;
    Ok(Reply::Array(out))
}

/// SCAN cursor [MATCH pattern] [COUNT n] [TYPE type]: walks the keys in order; the cursor
/// names the key to resume from, exactly while the server remembers it and by its first
/// bytes after that (`scan_cursor`), so a scan never skips a key.
pub(crate) fn scan(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let cursor = std::str::from_utf8(arg(args, 1))
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(|| Fail::err("invalid cursor"))?;
    let (mut pattern, mut count, mut type_filter) = (None, 10usize, None);
    let mut i = 2;
    while let Some(opt) = args.get(i) {
        let Some(value) = args.get(i + 1) else {
            return Err(Fail::syntax());
        };
        if is(opt, "match") {
            pattern = Some(*value);
        } else if is(opt, "count") {
            let n = int(value)?;
            if n < 1 {
                return Err(Fail::syntax());
            }
            count = usize::try_from(n).unwrap_or(usize::MAX);
        } else if is(opt, "type") {
            type_filter = Some(value.to_ascii_lowercase());
        } else {
            return Err(Fail::syntax());
        }
        i += 2;
    }
    let start = ctx.engine.cursor(cursor);
    let mut out = Vec::new();
    let mut visited = 0usize;
    let mut resume: Option<Vec<u8>> = None;
    ctx.engine.store.for_each_from(&start, ctx.now_ms, |k, v| {
        if visited == count {
            resume = Some(k.to_vec());
            return false;
        }
        visited += 1;
        let type_ok = type_filter
            .as_deref()
            .is_none_or(|t| t == v.type_name().as_bytes());
        if type_ok && pattern.is_none_or(|p| glob_match(p, k, false)) {
            out.push(Reply::Bulk(k.to_vec().into()));
        }
        true
    })?;
    let next = resume.map_or(0, |k| ctx.engine.save_cursor(k));
    Ok(Reply::Array(vec![
        Reply::Bulk(next.to_string().into_bytes().into()),
        Reply::Array(out),
    ]))
}

pub(crate) fn randomkey(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    let probe: [u8; 8] = rand::thread_rng().gen();
    let mut found = None;
    for start in [probe.as_slice(), b""] {
        ctx.engine.store.for_each_from(start, ctx.now_ms, |k, _| {
            found = Some(k.to_vec());
            false
        })?;
        if found.is_some() {
            break;
        }
    }
    Ok(Reply::bulk_or_nil(found))
}

/// TRANGE start count: up to `count` live string keys from `start` (inclusive) in byte
/// order, as a flat array of key, value, key, value... (YCSB workload E's scan).
pub(crate) fn trange(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    if args.len() != 3 {
        return Err(Fail::syntax());
    }
    let count = usize::try_from(int(arg(args, 2))?).map_err(|_| Fail::not_integer())?;
    let mut out = Vec::new();
    if count > 0 {
        ctx.engine
            .store
            .for_each_from(arg(args, 1), ctx.now_ms, |k, v| {
                // Strings only: a collection has no one value to show.
                if let Top::String(v) = v {
                    out.push(Reply::Bulk(k.to_vec().into()));
                    out.push(Reply::Bulk(v.data.clone().into()));
                }
                out.len() < count * 2
            })?;
    }
    Ok(Reply::Array(out))
}

/// The encoding OBJECT ENCODING reports: Redis's names. Strings as Redis chooses (`int`
/// for a 64-bit integer, `embstr` up to 44 bytes, `raw` beyond); every collection has one
/// encoding on the engine whatever its size, reported as Redis's general one.
fn encoding_name(t: &Top) -> &'static str {
    match t {
        Top::String(v) => {
            let canonical_int = std::str::from_utf8(&v.data)
                .ok()
                .and_then(|s| s.parse::<i64>().ok().filter(|n| n.to_string() == s));
            if canonical_int.is_some() {
                "int"
            } else if v.data.len() <= 44 {
                "embstr"
            } else {
                "raw"
            }
        }
        Top::Coll(m) => match m.kind {
            crate::value::CollKind::Hash | crate::value::CollKind::Set => "hashtable",
            crate::value::CollKind::Zset => "skiplist",
            crate::value::CollKind::List => "quicklist",
        },
    }
}

/// OBJECT ENCODING key | REFCOUNT key. (IDLETIME and FREQ need access times and
/// frequencies, which Terrace does not keep: they are refused rather than invented.)
pub(crate) fn object(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let sub = String::from_utf8_lossy(arg(args, 1)).to_ascii_lowercase();
    match (sub.as_str(), args.len()) {
        ("encoding", 3) => Ok(match ctx.get_top(arg(args, 2))? {
            Some(t) => Reply::Bulk(encoding_name(&t).as_bytes().to_vec().into()),
            None => Reply::Nil,
        }),
        // Values are never shared between keys.
        ("refcount", 3) => Ok(match ctx.get_top(arg(args, 2))? {
            Some(_) => Reply::Integer(1),
            None => Reply::Nil,
        }),
        ("idletime" | "freq", 3) => Err(Fail::err(format!(
            "OBJECT {}: Terrace does not track key access times or frequencies",
            sub.to_ascii_uppercase()
        ))),
        _ => Err(Fail::err(format!(
            "unknown subcommand or wrong number of arguments for '{sub}'. Try OBJECT HELP."
        ))),
    }
}
