use crate::commands::tests::{bulk, engine, err, run, sorted_bulks};
use crate::resp::Reply;

#[test]
fn members_are_added_tested_counted_and_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    assert_eq!(run(&mut s, "SADD s a b a c"), Reply::Integer(3));
    assert_eq!(run(&mut s, "SADD s c d"), Reply::Integer(1));
    assert_eq!(run(&mut s, "SCARD s"), Reply::Integer(4));
    assert_eq!(run(&mut s, "SISMEMBER s a"), Reply::Integer(1));
    assert_eq!(run(&mut s, "SISMEMBER s z"), Reply::Integer(0));
    assert_eq!(
        run(&mut s, "SMISMEMBER s a z d"),
        Reply::Array(vec![
            Reply::Integer(1),
            Reply::Integer(0),
            Reply::Integer(1)
        ])
    );
    assert_eq!(
        sorted_bulks(run(&mut s, "SMEMBERS s")),
        ["a", "b", "c", "d"]
    );
    assert_eq!(run(&mut s, "TYPE s"), Reply::Status("set".into()));
    assert_eq!(run(&mut s, "SREM s a z a"), Reply::Integer(1));
    assert_eq!(run(&mut s, "SREM s b c d"), Reply::Integer(3));
    assert_eq!(run(&mut s, "EXISTS s"), Reply::Integer(0));
    run(&mut s, "HSET h f v");
    assert_eq!(
        run(&mut s, "SADD h x"),
        err("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
}

#[test]
fn pop_random_and_move() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    for i in 0..20 {
        run(&mut s, &format!("SADD s m{i}"));
    }
    assert!(matches!(run(&mut s, "SRANDMEMBER s"), Reply::Bulk(_)));
    assert_eq!(sorted_bulks(run(&mut s, "SRANDMEMBER s 5")).len(), 5);
    let distinct = sorted_bulks(run(&mut s, "SRANDMEMBER s 15"));
    let mut d = distinct.clone();
    d.dedup();
    assert_eq!(d.len(), 15, "a positive count gives distinct members");
    assert_eq!(sorted_bulks(run(&mut s, "SRANDMEMBER s -30")).len(), 30);
    assert_eq!(run(&mut s, "SCARD s"), Reply::Integer(20));
    let popped = sorted_bulks(run(&mut s, "SPOP s 5"));
    assert_eq!(popped.len(), 5);
    assert_eq!(run(&mut s, "SCARD s"), Reply::Integer(15));
    for m in &popped {
        assert_eq!(run(&mut s, &format!("SISMEMBER s {m}")), Reply::Integer(0));
    }
    assert!(matches!(run(&mut s, "SPOP s"), Reply::Bulk(_)));
    assert_eq!(sorted_bulks(run(&mut s, "SPOP s 100")).len(), 14);
    assert_eq!(run(&mut s, "EXISTS s"), Reply::Integer(0));
    assert_eq!(run(&mut s, "SPOP s"), Reply::Nil);
    run(&mut s, "SADD a x y");
    assert_eq!(run(&mut s, "SMOVE a b x"), Reply::Integer(1));
    assert_eq!(run(&mut s, "SMOVE a b nope"), Reply::Integer(0));
    assert_eq!(sorted_bulks(run(&mut s, "SMEMBERS b")), ["x"]);
    assert_eq!(sorted_bulks(run(&mut s, "SMEMBERS a")), ["y"]);
    assert_eq!(
        run(&mut s, "SPOP a -1"),
        err("ERR value is out of range, must be positive")
    );
}

#[test]
fn algebra_and_its_store_forms() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    run(&mut s, "SADD a 1 2 3 4");
    run(&mut s, "SADD b 3 4 5");
    run(&mut s, "SADD c 4 6");
    assert_eq!(sorted_bulks(run(&mut s, "SINTER a b c")), ["4"]);
    assert_eq!(
        sorted_bulks(run(&mut s, "SUNION a b c")),
        ["1", "2", "3", "4", "5", "6"]
    );
    assert_eq!(sorted_bulks(run(&mut s, "SDIFF a b")), ["1", "2"]);
    assert_eq!(
        sorted_bulks(run(&mut s, "SINTER a missing")),
        Vec::<String>::new()
    );
    assert_eq!(run(&mut s, "SINTERSTORE d a b"), Reply::Integer(2));
    assert_eq!(sorted_bulks(run(&mut s, "SMEMBERS d")), ["3", "4"]);
    run(&mut s, "SET str x");
    assert_eq!(run(&mut s, "SUNIONSTORE str a c"), Reply::Integer(5));
    assert_eq!(run(&mut s, "TYPE str"), Reply::Status("set".into()));
    assert_eq!(run(&mut s, "SDIFFSTORE d c c"), Reply::Integer(0));
    assert_eq!(run(&mut s, "EXISTS d"), Reply::Integer(0));
    assert_eq!(run(&mut s, "SINTERCARD 2 a b"), Reply::Integer(2));
    assert_eq!(run(&mut s, "SINTERCARD 2 a b LIMIT 1"), Reply::Integer(1));
    assert_eq!(
        run(&mut s, "SINTERCARD 3 a b"),
        err("ERR Number of keys can't be greater than number of args")
    );
    run(&mut s, "HSET h f v");
    assert_eq!(
        run(&mut s, "SINTER a h"),
        err("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
    let Reply::Array(page) = run(&mut s, "SSCAN a 0 COUNT 100") else {
        panic!()
    };
    assert_eq!(page[0], bulk("0"));
    assert_eq!(sorted_bulks(page[1].clone()), ["1", "2", "3", "4"]);
}
