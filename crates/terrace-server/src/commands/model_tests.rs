//! Random commands of every type against an in-memory model of Redis's semantics, with
//! restarts of the server in between: every reply must match the model's.
//! Case count: proptest's default, or PROPTEST_CASES from the environment.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use proptest::prelude::*;

use crate::commands::tests::engine;
use crate::resp::Reply;

/// What a key holds in the model.
#[derive(Debug, Clone)]
enum Val {
    Str(Vec<u8>),
    Hash(BTreeMap<Vec<u8>, Vec<u8>>),
    Set(BTreeSet<Vec<u8>>),
    List(VecDeque<Vec<u8>>),
    Zset(BTreeMap<Vec<u8>, i64>),
}

impl Val {
    fn type_name(&self) -> &'static str {
        match self {
            Val::Str(_) => "string",
            Val::Hash(_) => "hash",
            Val::Set(_) => "set",
            Val::List(_) => "list",
            Val::Zset(_) => "zset",
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Set(u8, u8),
    Get(u8),
    Del(u8),
    Type(u8),
    HSet(u8, u8, u8),
    HDel(u8, u8),
    HGetAll(u8),
    SAdd(u8, u8),
    SRem(u8, u8),
    SMembers(u8),
    LPush(u8, u8),
    RPush(u8, u8),
    LPop(u8),
    RPop(u8),
    LRange(u8),
    ZAdd(u8, i8, u8),
    ZRem(u8, u8),
    ZRange(u8),
    ZPopMin(u8),
    SPop(u8),
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0u8..6;
    let m = 0u8..8;
    prop_oneof![
        (k.clone(), m.clone()).prop_map(|(k, v)| Op::Set(k, v)),
        k.clone().prop_map(Op::Get),
        k.clone().prop_map(Op::Del),
        k.clone().prop_map(Op::Type),
        (k.clone(), m.clone(), m.clone()).prop_map(|(k, f, v)| Op::HSet(k, f, v)),
        (k.clone(), m.clone()).prop_map(|(k, f)| Op::HDel(k, f)),
        k.clone().prop_map(Op::HGetAll),
        (k.clone(), m.clone()).prop_map(|(k, v)| Op::SAdd(k, v)),
        (k.clone(), m.clone()).prop_map(|(k, v)| Op::SRem(k, v)),
        k.clone().prop_map(Op::SMembers),
        (k.clone(), m.clone()).prop_map(|(k, v)| Op::LPush(k, v)),
        (k.clone(), m.clone()).prop_map(|(k, v)| Op::RPush(k, v)),
        k.clone().prop_map(Op::LPop),
        k.clone().prop_map(Op::RPop),
        k.clone().prop_map(Op::LRange),
        (k.clone(), -3i8..4, m.clone()).prop_map(|(k, s, v)| Op::ZAdd(k, s, v)),
        (k.clone(), m.clone()).prop_map(|(k, v)| Op::ZRem(k, v)),
        k.clone().prop_map(Op::ZRange),
        k.clone().prop_map(Op::ZPopMin),
        k.prop_map(Op::SPop),
        Just(Op::Restart),
    ]
}

fn b(s: &[u8]) -> Reply {
    Reply::Bulk(s.to_vec().into())
}

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// Applies `op` to the model and returns the reply Redis would give (collections'
/// orderless replies sorted, as the test sorts the server's).
fn model(db: &mut HashMap<Vec<u8>, Val>, op: &Op) -> Reply {
    let key = |k: &u8| format!("k{k}").into_bytes();
    let mem = |m: &u8| format!("m{m}").into_bytes();
    let wrong = || Reply::Error(WRONGTYPE.into());
    match op {
        Op::Set(k, v) => {
            db.insert(key(k), Val::Str(mem(v)));
            Reply::Ok
        }
        Op::Get(k) => match db.get(&key(k)) {
            None => Reply::Nil,
            Some(Val::Str(v)) => b(v),
            Some(_) => wrong(),
        },
        Op::Del(k) => Reply::Integer(i64::from(db.remove(&key(k)).is_some())),
        Op::Type(k) => Reply::Status(db.get(&key(k)).map_or("none", Val::type_name).into()),
        Op::HSet(k, f, v) => match db
            .entry(key(k))
            .or_insert_with(|| Val::Hash(BTreeMap::new()))
        {
            Val::Hash(h) => Reply::Integer(i64::from(h.insert(mem(f), mem(v)).is_none())),
            _ => wrong(),
        },
        Op::HDel(k, f) => match db.get_mut(&key(k)) {
            None => Reply::Integer(0),
            Some(Val::Hash(h)) => {
                let n = i64::from(h.remove(&mem(f)).is_some());
                if h.is_empty() {
                    db.remove(&key(k));
                }
                Reply::Integer(n)
            }
            Some(_) => wrong(),
        },
        Op::HGetAll(k) => match db.get(&key(k)) {
            None => Reply::Map(Vec::new()),
            Some(Val::Hash(h)) => Reply::Map(h.iter().map(|(f, v)| (b(f), b(v))).collect()),
            Some(_) => wrong(),
        },
        Op::SAdd(k, v) => match db
            .entry(key(k))
            .or_insert_with(|| Val::Set(BTreeSet::new()))
        {
            Val::Set(s) => Reply::Integer(i64::from(s.insert(mem(v)))),
            _ => wrong(),
        },
        Op::SRem(k, v) => match db.get_mut(&key(k)) {
            None => Reply::Integer(0),
            Some(Val::Set(s)) => {
                let n = i64::from(s.remove(&mem(v)));
                if s.is_empty() {
                    db.remove(&key(k));
                }
                Reply::Integer(n)
            }
            Some(_) => wrong(),
        },
        Op::SMembers(k) => match db.get(&key(k)) {
            None => Reply::Set(Vec::new()),
            Some(Val::Set(s)) => Reply::Set(s.iter().map(|m| b(m)).collect()),
            Some(_) => wrong(),
        },
        Op::LPush(k, v) | Op::RPush(k, v) => {
            match db
                .entry(key(k))
                .or_insert_with(|| Val::List(VecDeque::new()))
            {
                Val::List(l) => {
                    if matches!(op, Op::LPush(..)) {
                        l.push_front(mem(v));
                    } else {
                        l.push_back(mem(v));
                    }
                    Reply::Integer(l.len() as i64)
                }
                _ => wrong(),
            }
        }
        Op::LPop(k) | Op::RPop(k) => match db.get_mut(&key(k)) {
            None => Reply::Nil,
            Some(Val::List(l)) => {
                let v = if matches!(op, Op::LPop(_)) {
                    l.pop_front()
                } else {
                    l.pop_back()
                };
                if l.is_empty() {
                    db.remove(&key(k));
                }
                v.map_or(Reply::Nil, |v| b(&v))
            }
            Some(_) => wrong(),
        },
        Op::LRange(k) => match db.get(&key(k)) {
            None => Reply::Array(Vec::new()),
            Some(Val::List(l)) => Reply::Array(l.iter().map(|v| b(v)).collect()),
            Some(_) => wrong(),
        },
        Op::ZAdd(k, s, v) => match db
            .entry(key(k))
            .or_insert_with(|| Val::Zset(BTreeMap::new()))
        {
            Val::Zset(z) => Reply::Integer(i64::from(z.insert(mem(v), i64::from(*s)).is_none())),
            _ => wrong(),
        },
        Op::ZRem(k, v) => match db.get_mut(&key(k)) {
            None => Reply::Integer(0),
            Some(Val::Zset(z)) => {
                let n = i64::from(z.remove(&mem(v)).is_some());
                if z.is_empty() {
                    db.remove(&key(k));
                }
                Reply::Integer(n)
            }
            Some(_) => wrong(),
        },
        Op::ZRange(k) => match db.get(&key(k)) {
            None => Reply::Array(Vec::new()),
            Some(Val::Zset(z)) => {
                let mut items: Vec<(i64, &Vec<u8>)> = z.iter().map(|(m, s)| (*s, m)).collect();
                items.sort();
                let mut out = Vec::new();
                for (s, m) in items {
                    out.push(b(m));
                    out.push(Reply::Double(s as f64));
                }
                Reply::Array(out)
            }
            Some(_) => wrong(),
        },
        Op::ZPopMin(k) => match db.get_mut(&key(k)) {
            None => Reply::Array(Vec::new()),
            Some(Val::Zset(z)) => {
                let min = z.iter().map(|(m, s)| (*s, m.clone())).min();
                let Some((s, m)) = min else {
                    return Reply::Array(Vec::new());
                };
                z.remove(&m);
                if z.is_empty() {
                    db.remove(&key(k));
                }
                Reply::Array(vec![b(&m), Reply::Double(s as f64)])
            }
            Some(_) => wrong(),
        },
        // SPOP takes the first member in hash order (`value::keys::member_hash`).
        Op::SPop(k) => match db.get_mut(&key(k)) {
            None => Reply::Nil,
            Some(Val::Set(set)) => {
                let first = set
                    .iter()
                    .min_by_key(|m| (crate::value::keys::member_hash(m), (*m).clone()))
                    .cloned();
                let Some(m) = first else {
                    return Reply::Nil;
                };
                set.remove(&m);
                if set.is_empty() {
                    db.remove(&key(k));
                }
                b(&m)
            }
            Some(_) => wrong(),
        },
        Op::Restart => Reply::Ok,
    }
}

/// The command line of `op`.
fn line(op: &Op) -> String {
    match op {
        Op::Set(k, v) => format!("SET k{k} m{v}"),
        Op::Get(k) => format!("GET k{k}"),
        Op::Del(k) => format!("DEL k{k}"),
        Op::Type(k) => format!("TYPE k{k}"),
        Op::HSet(k, f, v) => format!("HSET k{k} m{f} m{v}"),
        Op::HDel(k, f) => format!("HDEL k{k} m{f}"),
        Op::HGetAll(k) => format!("HGETALL k{k}"),
        Op::SAdd(k, v) => format!("SADD k{k} m{v}"),
        Op::SRem(k, v) => format!("SREM k{k} m{v}"),
        Op::SMembers(k) => format!("SMEMBERS k{k}"),
        Op::LPush(k, v) => format!("LPUSH k{k} m{v}"),
        Op::RPush(k, v) => format!("RPUSH k{k} m{v}"),
        Op::LPop(k) => format!("LPOP k{k}"),
        Op::RPop(k) => format!("RPOP k{k}"),
        Op::LRange(k) => format!("LRANGE k{k} 0 -1"),
        Op::ZAdd(k, s, v) => format!("ZADD k{k} {s} m{v}"),
        Op::ZRem(k, v) => format!("ZREM k{k} m{v}"),
        Op::ZRange(k) => format!("ZRANGE k{k} 0 -1 WITHSCORES"),
        Op::ZPopMin(k) => format!("ZPOPMIN k{k}"),
        Op::SPop(k) => format!("SPOP k{k}"),
        Op::Restart => String::new(),
    }
}

/// Sorts the orderless parts of a reply (hash fields, set members).
fn normalize(r: Reply) -> Reply {
    match r {
        Reply::Map(mut pairs) => {
            pairs.sort_by_key(|(f, _)| f.to_string_lossy());
            Reply::Map(pairs)
        }
        Reply::Set(mut items) => {
            items.sort_by_key(Reply::to_string_lossy);
            Reply::Set(items)
        }
        other => other,
    }
}

proptest! {
    #[test]
    fn every_type_matches_the_model_across_restarts(ops in proptest::collection::vec(op(), 1..60)) {
        let tmp = tempfile::tempdir().unwrap();
        let mut e = engine(tmp.path());
        let mut s = e.connect("model".into()).unwrap();
        let mut db = HashMap::new();
        for op in &ops {
            let want = model(&mut db, op);
            if let Op::Restart = op {
                drop(s);
                let Ok(only) = std::sync::Arc::try_unwrap(e) else {
                    panic!("the engine is still shared at a restart");
                };
                only.close().unwrap();
                e = engine(tmp.path());
                s = e.connect("model".into()).unwrap();
                continue;
            }
            let text = line(op);
            let args: Vec<&[u8]> = text.split(' ').map(str::as_bytes).collect();
            let got = normalize(s.execute(&args).unwrap());
            prop_assert_eq!(got, want, "{}", text);
            prop_assert_eq!(keys_counted(&e), db.len(), "DBSIZE after {}", text);
        }
    }
}

/// The keys the server counts (DBSIZE), after checking it against a walk of them.
fn keys_counted(e: &crate::commands::Engine) -> usize {
    let walked = super::keycount::KeyCounts::recount(&e.store.db).unwrap();
    let counted = e.store.counts.keys();
    assert_eq!(
        counted,
        walked.keys(),
        "the count drifted from the keys stored"
    );
    assert_eq!(e.store.counts.expiring(), walked.expiring());
    usize::try_from(counted).unwrap()
}

/// Whether `op` is a collection command, which a connection gathers into a group.
fn grouped(op: &Op) -> bool {
    !matches!(
        op,
        Op::Set(..) | Op::Get(_) | Op::Del(_) | Op::Type(_) | Op::Restart
    )
}

/// Puts the orderless parts of a reply in the server's order: hash order (see
/// `value::keys::member_hash`), in which hash fields and set members are stored.
fn hash_order(r: Reply) -> Reply {
    let order = |r: &Reply| match r {
        Reply::Bulk(m) => (crate::value::keys::member_hash(m), m.to_vec()),
        _ => (0, Vec::new()),
    };
    match r {
        Reply::Map(mut pairs) => {
            pairs.sort_by_key(|(f, _)| order(f));
            Reply::Map(pairs)
        }
        Reply::Set(mut items) => {
            items.sort_by_key(order);
            Reply::Set(items)
        }
        other => other,
    }
}

proptest! {
    /// Collection commands of three clients run in groups, as the transport runs them
    /// (each client's commands in order, client after client, every write of a group in
    /// one batch, each command reading the group's earlier writes), the other commands
    /// between groups: every reply, as bytes, matches the model's.
    #[test]
    fn grouped_commands_match_the_model(
        steps in proptest::collection::vec((0usize..3, op(), 0u8..5), 1..100),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let mut e = engine(tmp.path());
        let connect = |e: &std::sync::Arc<crate::commands::Engine>| -> Vec<_> {
            (0..3).map(|i| e.connect(format!("model{i}")).unwrap()).collect()
        };
        let mut sessions = connect(&e);
        let mut db = HashMap::new();
        let mut group: Vec<(usize, Op)> = Vec::new();
        let check_group = |group: &mut Vec<(usize, Op)>,
                               sessions: &mut Vec<crate::commands::Session>,
                               e: &crate::commands::Engine,
                               db: &mut HashMap<Vec<u8>, Val>|
         -> Result<(), TestCaseError> {
            group.sort_by_key(|(s, _)| *s);
            let mut runs: Vec<crate::commands::Run> = (0..3).map(|_| crate::commands::Run::new()).collect();
            let mut want: Vec<Vec<u8>> = vec![Vec::new(); 3];
            let mut texts: Vec<String> = Vec::new();
            for (s, op) in group.iter() {
                let text = line(op);
                let args: Vec<&[u8]> = text.split(' ').map(str::as_bytes).collect();
                prop_assert_eq!(
                    sessions[*s].gather(&args, &mut runs[*s]),
                    crate::commands::Gathered::Added,
                    "{}", text
                );
                hash_order(model(db, op)).write(crate::resp::Protocol::Resp2, &mut want[*s]);
                texts.push(format!("client {s}: {text}"));
            }
            e.execute_runs(&mut runs.iter_mut().collect::<Vec<_>>());
            for (s, run) in runs.iter_mut().enumerate() {
                let mut got = Vec::new();
                sessions[s].take_run(run, &mut got);
                prop_assert_eq!(
                    String::from_utf8_lossy(&got),
                    String::from_utf8_lossy(&want[s]),
                    "client {} in the group {:?}", s, texts
                );
            }
            group.clear();
            prop_assert_eq!(keys_counted(e), db.len(), "DBSIZE after the group {:?}", texts);
            Ok(())
        };
        for (s, op, end_group) in &steps {
            if grouped(op) {
                group.push((*s, op.clone()));
                if *end_group == 0 {
                    check_group(&mut group, &mut sessions, &e, &mut db)?;
                }
                continue;
            }
            check_group(&mut group, &mut sessions, &e, &mut db)?;
            let want = model(&mut db, op);
            if let Op::Restart = op {
                sessions.clear();
                let Ok(only) = std::sync::Arc::try_unwrap(e) else {
                    panic!("the engine is still shared at a restart");
                };
                only.close().unwrap();
                e = engine(tmp.path());
                sessions = connect(&e);
                continue;
            }
            let text = line(op);
            let args: Vec<&[u8]> = text.split(' ').map(str::as_bytes).collect();
            let got = normalize(sessions[*s].execute(&args).unwrap());
            prop_assert_eq!(got, want, "{}", text);
            prop_assert_eq!(keys_counted(&e), db.len(), "DBSIZE after {}", text);
        }
        check_group(&mut group, &mut sessions, &e, &mut db)?;
    }
}
