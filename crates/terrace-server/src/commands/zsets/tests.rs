use crate::commands::tests::{bulk, engine, err, run};
use crate::resp::Reply;

fn bulks(items: &[&str]) -> Reply {
    Reply::Array(items.iter().map(|s| bulk(s)).collect())
}

#[test]
fn add_score_rank_and_ranges() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    assert_eq!(run(&mut s, "ZADD z 1 a 2 b 3 c"), Reply::Integer(3));
    assert_eq!(run(&mut s, "ZADD z 10 a 4 d"), Reply::Integer(1));
    assert_eq!(run(&mut s, "ZADD z CH 11 a 4 d"), Reply::Integer(1));
    assert_eq!(run(&mut s, "ZADD z NX 0 a"), Reply::Integer(0));
    assert_eq!(run(&mut s, "ZADD z XX 0 new"), Reply::Integer(0));
    assert_eq!(run(&mut s, "ZADD z GT CH 5 a"), Reply::Integer(0));
    assert_eq!(run(&mut s, "ZADD z LT CH 5 a"), Reply::Integer(1));
    assert_eq!(run(&mut s, "ZADD z INCR 1.5 a"), Reply::Double(6.5));
    assert_eq!(run(&mut s, "ZINCRBY z -0.5 a"), Reply::Double(6.0));
    assert_eq!(run(&mut s, "ZSCORE z a"), Reply::Double(6.0));
    assert_eq!(run(&mut s, "ZSCORE z zz"), Reply::Nil);
    assert_eq!(run(&mut s, "ZCARD z"), Reply::Integer(4));
    // b 2, c 3, d 4, a 6
    assert_eq!(run(&mut s, "ZRANGE z 0 -1"), bulks(&["b", "c", "d", "a"]));
    assert_eq!(run(&mut s, "ZRANGE z 0 1 REV"), bulks(&["a", "d"]));
    assert_eq!(run(&mut s, "ZREVRANGE z 0 0"), bulks(&["a"]));
    assert_eq!(
        run(&mut s, "ZRANGE z 0 0 WITHSCORES"),
        Reply::Array(vec![bulk("b"), Reply::Double(2.0)])
    );
    assert_eq!(run(&mut s, "ZRANGEBYSCORE z (2 4"), bulks(&["c", "d"]));
    assert_eq!(run(&mut s, "ZRANGE z 4 (2 BYSCORE REV"), bulks(&["d", "c"]));
    assert_eq!(
        run(&mut s, "ZREVRANGEBYSCORE z +inf -inf LIMIT 1 2"),
        bulks(&["d", "c"])
    );
    assert_eq!(run(&mut s, "ZCOUNT z -inf 3"), Reply::Integer(2));
    assert_eq!(run(&mut s, "ZRANK z d"), Reply::Integer(2));
    assert_eq!(run(&mut s, "ZREVRANK z d"), Reply::Integer(1));
    assert_eq!(run(&mut s, "ZRANK z nope"), Reply::Nil);
    assert_eq!(
        run(&mut s, "ZMSCORE z a nope"),
        Reply::Array(vec![Reply::Double(6.0), Reply::Nil])
    );
    assert_eq!(run(&mut s, "ZREM z a nope"), Reply::Integer(1));
    assert_eq!(run(&mut s, "TYPE z"), Reply::Status("zset".into()));
    assert_eq!(run(&mut s, "ZADD z 1 a x"), err("ERR syntax error"));
    assert_eq!(
        run(&mut s, "ZADD z nan a"),
        err("ERR value is not a valid float")
    );
    assert_eq!(
        run(&mut s, "ZRANGE z 0 1 LIMIT 0 1"),
        err(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
        )
    );
}

#[test]
fn lex_pop_remove_ranges_and_store() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    run(&mut s, "ZADD l 0 a 0 b 0 c 0 d 0 e");
    assert_eq!(run(&mut s, "ZRANGEBYLEX l [b (d"), bulks(&["b", "c"]));
    assert_eq!(run(&mut s, "ZREVRANGEBYLEX l + [d"), bulks(&["e", "d"]));
    assert_eq!(run(&mut s, "ZLEXCOUNT l - +"), Reply::Integer(5));
    assert_eq!(run(&mut s, "ZREMRANGEBYLEX l [a [b"), Reply::Integer(2));
    assert_eq!(
        run(&mut s, "ZPOPMIN l"),
        Reply::Array(vec![bulk("c"), Reply::Double(0.0)])
    );
    assert_eq!(
        run(&mut s, "ZPOPMAX l 5"),
        Reply::Array(vec![
            bulk("e"),
            Reply::Double(0.0),
            bulk("d"),
            Reply::Double(0.0)
        ])
    );
    assert_eq!(run(&mut s, "EXISTS l"), Reply::Integer(0));
    run(&mut s, "ZADD n 1 a 2 b 3 c 4 d");
    assert_eq!(run(&mut s, "ZREMRANGEBYRANK n 0 1"), Reply::Integer(2));
    assert_eq!(run(&mut s, "ZREMRANGEBYSCORE n 4 4"), Reply::Integer(1));
    assert_eq!(run(&mut s, "ZRANGE n 0 -1"), bulks(&["c"]));
    run(&mut s, "ZADD x 1 a 2 b");
    run(&mut s, "ZADD y 10 b 20 c");
    run(&mut s, "SADD plain a");
    assert_eq!(run(&mut s, "ZUNIONSTORE u 2 x y"), Reply::Integer(3));
    assert_eq!(
        run(&mut s, "ZRANGE u 0 -1 WITHSCORES"),
        Reply::Array(vec![
            bulk("a"),
            Reply::Double(1.0),
            bulk("b"),
            Reply::Double(12.0),
            bulk("c"),
            Reply::Double(20.0)
        ])
    );
    assert_eq!(
        run(&mut s, "ZINTERSTORE i 2 x y WEIGHTS 2 1 AGGREGATE MAX"),
        Reply::Integer(1)
    );
    assert_eq!(run(&mut s, "ZSCORE i b"), Reply::Double(10.0));
    assert_eq!(run(&mut s, "ZUNIONSTORE v 2 x plain"), Reply::Integer(2));
    assert_eq!(run(&mut s, "ZSCORE v a"), Reply::Double(2.0));
    assert_eq!(run(&mut s, "ZRANGESTORE r u 1 -1"), Reply::Integer(2));
    assert_eq!(run(&mut s, "ZRANGE r 0 -1"), bulks(&["b", "c"]));
    assert!(matches!(run(&mut s, "ZRANDMEMBER u"), Reply::Bulk(_)));
    let Reply::Array(v) = run(&mut s, "ZRANDMEMBER u -5 WITHSCORES") else {
        panic!()
    };
    assert_eq!(v.len(), 10);
    let Reply::Array(page) = run(&mut s, "ZSCAN u 0") else {
        panic!()
    };
    assert_eq!(page[0], bulk("0"));
    let Reply::Array(items) = &page[1] else {
        panic!()
    };
    assert_eq!(items.len(), 6);
}

#[test]
fn copies_keep_the_score_index_and_compaction_keeps_it_too() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    for i in 0..30 {
        run(&mut s, &format!("ZADD z {i} m{i}"));
    }
    assert_eq!(run(&mut s, "COPY z c"), Reply::Integer(1));
    assert_eq!(run(&mut s, "RENAME z r"), Reply::Ok);
    e.db().flush().unwrap();
    e.db().compact_range(None, None).unwrap();
    assert_eq!(run(&mut s, "ZRANGE c 0 2"), bulks(&["m0", "m1", "m2"]));
    assert_eq!(run(&mut s, "ZRANGE r -1 -1"), bulks(&["m29"]));
    assert_eq!(run(&mut s, "ZCARD r"), Reply::Integer(30));
    assert_eq!(run(&mut s, "ZRANGE z 0 -1"), bulks(&[]));
}

#[test]
fn pops_of_members_sharing_a_score_keep_their_order_as_members_come_and_go() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    assert_eq!(run(&mut s, "ZADD q 0 m1 0 m2 0 m3 0 m4"), Reply::Integer(4));
    assert_eq!(
        run(&mut s, "ZPOPMIN q"),
        Reply::Array(vec![bulk("m1"), Reply::Double(0.0)])
    );
    assert_eq!(
        run(&mut s, "ZPOPMIN q"),
        Reply::Array(vec![bulk("m2"), Reply::Double(0.0)])
    );
    // The head is now m3 at score 0: members added before it, at that score or below,
    // come out first.
    assert_eq!(run(&mut s, "ZADD q 0 m25 0 a"), Reply::Integer(2));
    assert_eq!(
        run(&mut s, "ZRANGE q 0 -1"),
        bulks(&["a", "m25", "m3", "m4"])
    );
    assert_eq!(
        run(&mut s, "ZPOPMIN q"),
        Reply::Array(vec![bulk("a"), Reply::Double(0.0)])
    );
    assert_eq!(run(&mut s, "ZADD q -1 z"), Reply::Integer(1));
    assert_eq!(
        run(&mut s, "ZPOPMIN q 2"),
        Reply::Array(vec![
            bulk("z"),
            Reply::Double(-1.0),
            bulk("m25"),
            Reply::Double(0.0)
        ])
    );
    // Members longer than the bound the metadata keeps: its prefix still bounds them.
    let long = "x".repeat(30);
    run(&mut s, &format!("ZADD l 0 {long}1 0 {long}2 0 {long}3"));
    assert_eq!(
        run(&mut s, "ZPOPMIN l"),
        Reply::Array(vec![bulk(&format!("{long}1")), Reply::Double(0.0)])
    );
    run(&mut s, &format!("ZADD l 0 {long}0"));
    assert_eq!(
        run(&mut s, "ZPOPMIN l"),
        Reply::Array(vec![bulk(&format!("{long}0")), Reply::Double(0.0)])
    );
    assert_eq!(
        run(&mut s, "ZPOPMIN l"),
        Reply::Array(vec![bulk(&format!("{long}2")), Reply::Double(0.0)])
    );
    // The head survives COPY and RENAME with the members.
    assert_eq!(run(&mut s, "COPY q q2"), Reply::Integer(1));
    assert_eq!(run(&mut s, "RENAME q q3"), Reply::Ok);
    for k in ["q2", "q3"] {
        assert_eq!(
            run(&mut s, &format!("ZRANGE {k} 0 -1")),
            bulks(&["m3", "m4"])
        );
    }
}

#[test]
fn pops_from_the_top_keep_their_order_as_members_come_and_go() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    let pair = |m: &str, score: f64| Reply::Array(vec![bulk(m), Reply::Double(score)]);
    assert_eq!(run(&mut s, "ZADD q 1 a 2 b 2 c 2 d 3 e"), Reply::Integer(5));
    assert_eq!(run(&mut s, "ZPOPMAX q"), pair("e", 3.0));
    assert_eq!(run(&mut s, "ZPOPMAX q"), pair("d", 2.0));
    // The tail is now c at score 2: members added above it come out first, members
    // below it after the ones above them.
    assert_eq!(run(&mut s, "ZADD q 2 cc 5 z 2 bb"), Reply::Integer(3));
    assert_eq!(
        run(&mut s, "ZREVRANGE q 0 -1"),
        bulks(&["z", "cc", "c", "bb", "b", "a"])
    );
    assert_eq!(
        run(&mut s, "ZPOPMAX q 2"),
        Reply::Array(vec![
            bulk("z"),
            Reply::Double(5.0),
            bulk("cc"),
            Reply::Double(2.0)
        ])
    );
    assert_eq!(run(&mut s, "ZRANGE q 0 -1"), bulks(&["a", "b", "bb", "c"]));
    // Members longer than the bound the metadata keeps: the tail covers every member
    // that starts with its bytes.
    let long = "x".repeat(30);
    run(&mut s, &format!("ZADD l 0 {long}a 0 {long}z 0 {long}m"));
    assert_eq!(run(&mut s, "ZPOPMAX l"), pair(&format!("{long}z"), 0.0));
    run(&mut s, &format!("ZADD l 0 {long}y"));
    assert_eq!(run(&mut s, "ZPOPMAX l"), pair(&format!("{long}y"), 0.0));
    assert_eq!(run(&mut s, "ZPOPMAX l"), pair(&format!("{long}m"), 0.0));
    // Both ends at once, and through COPY.
    assert_eq!(run(&mut s, "ZPOPMIN q"), pair("a", 1.0));
    assert_eq!(run(&mut s, "COPY q q2"), Reply::Integer(1));
    assert_eq!(run(&mut s, "ZRANGE q2 0 -1 REV"), bulks(&["c", "bb", "b"]));
    assert_eq!(run(&mut s, "ZADD q2 9 top 0 bottom"), Reply::Integer(2));
    assert_eq!(
        run(&mut s, "ZRANGE q2 0 -1"),
        bulks(&["bottom", "b", "bb", "c", "top"])
    );
}

/// The bounds a sorted set's metadata keeps: head score and member prefix, then tail.
fn bounds(e: &crate::commands::Engine, key: &str) -> ((f64, String), Option<(f64, String)>) {
    let Some(crate::value::Top::Coll(m)) = e.store.get_top(key.as_bytes(), 0).unwrap() else {
        panic!("{key} is not a collection");
    };
    let score = |bits: u64| {
        let b = bits.to_be_bytes();
        [-1e9, -5.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
            .into_iter()
            .find(|s| crate::value::keys::score_bytes(*s) == b)
            .expect("a score the test used")
    };
    let text = |p: &crate::value::MemberPrefix| String::from_utf8(p.as_bytes().to_vec()).unwrap();
    let tail = m
        .tail_bound()
        .map(|_| (score(m.tail), text(&m.tail_member)));
    ((score(m.head), text(&m.head_member)), tail)
}

#[test]
fn removals_at_a_bound_move_it_to_the_first_member_left() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    run(&mut s, "ZADD q 1 a 2 b 3 c 4 d 5 e 6 f 7 g");
    assert_eq!(bounds(&e, "q").0, (1.0, "a".into()));
    // A queue drained by ZREM of its first member (after ZRANGEBYSCORE ... LIMIT 0 1).
    assert_eq!(
        run(&mut s, "ZRANGEBYSCORE q -inf +inf LIMIT 0 1"),
        bulks(&["a"])
    );
    assert_eq!(run(&mut s, "ZREM q a"), Reply::Integer(1));
    assert_eq!(bounds(&e, "q").0, (2.0, "b".into()));
    // A removal elsewhere, or of a member that is not there, leaves the head.
    assert_eq!(run(&mut s, "ZREM q d nope"), Reply::Integer(1));
    assert_eq!(bounds(&e, "q").0, (2.0, "b".into()));
    // Several at once, the head among them: the head skips all of them.
    assert_eq!(run(&mut s, "ZREM q c b"), Reply::Integer(2));
    assert_eq!(bounds(&e, "q").0, (5.0, "e".into()));
    assert_eq!(run(&mut s, "ZADD q 0 z"), Reply::Integer(1));
    assert_eq!(run(&mut s, "ZREMRANGEBYRANK q 0 1"), Reply::Integer(2));
    assert_eq!(bounds(&e, "q").0, (6.0, "f".into()));
    assert_eq!(run(&mut s, "ZRANGE q 0 -1"), bulks(&["f", "g"]));
    // The tail: set at the set's creation and raised by ZADD, moved down by ZPOPMAX and
    // by removing the member at it.
    run(&mut s, "ZADD q 1 a 2 b 3 c");
    assert_eq!(bounds(&e, "q").0, (1.0, "a".into()));
    assert_eq!(bounds(&e, "q").1, Some((7.0, "g".into())));
    assert_eq!(
        run(&mut s, "ZPOPMAX q"),
        Reply::Array(vec![bulk("g"), Reply::Double(7.0)])
    );
    assert_eq!(bounds(&e, "q").1, Some((6.0, "f".into())));
    assert_eq!(run(&mut s, "ZREMRANGEBYSCORE q 5 6"), Reply::Integer(1));
    assert_eq!(bounds(&e, "q").1, Some((3.0, "c".into())));
    assert_eq!(run(&mut s, "ZREM q c a"), Reply::Integer(2));
    assert_eq!(
        bounds(&e, "q"),
        ((2.0, "b".into()), Some((2.0, "b".into())))
    );
    assert_eq!(run(&mut s, "ZRANGE q 0 -1"), bulks(&["b"]));
    assert_eq!(run(&mut s, "ZREVRANGE q 0 -1"), bulks(&["b"]));
    // A new set's bounds are its first and last members, from ZADD or a STORE.
    run(&mut s, "ZADD t 2 y 1 x 3 z");
    assert_eq!(
        bounds(&e, "t"),
        ((1.0, "x".into()), Some((3.0, "z".into())))
    );
    assert_eq!(run(&mut s, "ZREM t z"), Reply::Integer(1));
    assert_eq!(bounds(&e, "t").1, Some((2.0, "y".into())));
    assert_eq!(run(&mut s, "ZADD t 5 w"), Reply::Integer(1));
    assert_eq!(bounds(&e, "t").1, Some((5.0, "w".into())));
    assert_eq!(run(&mut s, "ZRANGESTORE u t 0 -1 REV"), Reply::Integer(3));
    assert_eq!(
        bounds(&e, "u"),
        ((1.0, "x".into()), Some((5.0, "w".into())))
    );
    assert_eq!(run(&mut s, "ZREVRANGE u 0 -1"), bulks(&["w", "y", "x"]));
    // Members sharing a score and longer than the prefix the bound keeps.
    let long = "x".repeat(30);
    run(&mut s, &format!("ZADD l 0 {long}1 0 {long}2 0 {long}3"));
    assert_eq!(run(&mut s, &format!("ZREM l {long}1")), Reply::Integer(1));
    assert_eq!(
        run(&mut s, "ZRANGE l 0 -1"),
        bulks(&[&format!("{long}2"), &format!("{long}3")])
    );
    assert_eq!(run(&mut s, "ZREMRANGEBYLEX l - +"), Reply::Integer(2));
    assert_eq!(run(&mut s, "EXISTS l"), Reply::Integer(0));
}
