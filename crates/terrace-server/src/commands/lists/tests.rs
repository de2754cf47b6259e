use crate::commands::tests::{bulk, engine, err, run};
use crate::resp::Reply;

fn bulks(items: &[&str]) -> Reply {
    Reply::Array(items.iter().map(|s| bulk(s)).collect())
}

#[test]
fn push_pop_range_and_index() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    assert_eq!(run(&mut s, "RPUSH l b c"), Reply::Integer(2));
    assert_eq!(run(&mut s, "LPUSH l a z"), Reply::Integer(4));
    assert_eq!(run(&mut s, "LRANGE l 0 -1"), bulks(&["z", "a", "b", "c"]));
    assert_eq!(run(&mut s, "LRANGE l 1 2"), bulks(&["a", "b"]));
    assert_eq!(run(&mut s, "LRANGE l -2 100"), bulks(&["b", "c"]));
    assert_eq!(run(&mut s, "LRANGE l 5 10"), bulks(&[]));
    assert_eq!(run(&mut s, "LLEN l"), Reply::Integer(4));
    assert_eq!(run(&mut s, "LINDEX l 0"), bulk("z"));
    assert_eq!(run(&mut s, "LINDEX l -1"), bulk("c"));
    assert_eq!(run(&mut s, "LINDEX l 9"), Reply::Nil);
    assert_eq!(run(&mut s, "LPOP l"), bulk("z"));
    assert_eq!(run(&mut s, "RPOP l"), bulk("c"));
    assert_eq!(run(&mut s, "RPUSH l x y"), Reply::Integer(4));
    assert_eq!(run(&mut s, "LPOP l 2"), bulks(&["a", "b"]));
    assert_eq!(run(&mut s, "RPOP l 5"), bulks(&["y", "x"]));
    assert_eq!(run(&mut s, "EXISTS l"), Reply::Integer(0));
    assert_eq!(run(&mut s, "LPOP l"), Reply::Nil);
    assert_eq!(run(&mut s, "LPOP l 2"), Reply::NilArray);
    assert_eq!(run(&mut s, "LPUSHX l a"), Reply::Integer(0));
    assert_eq!(run(&mut s, "EXISTS l"), Reply::Integer(0));
    run(&mut s, "RPUSH l a");
    assert_eq!(run(&mut s, "RPUSHX l b"), Reply::Integer(2));
    assert_eq!(run(&mut s, "TYPE l"), Reply::Status("list".into()));
    run(&mut s, "SET str x");
    assert_eq!(
        run(&mut s, "LPUSH str a"),
        err("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
}

#[test]
fn set_trim_remove_insert_and_pos() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    run(&mut s, "RPUSH l a b a c a d");
    assert_eq!(run(&mut s, "LSET l 1 B"), Reply::Ok);
    assert_eq!(run(&mut s, "LSET l 10 B"), err("ERR index out of range"));
    assert_eq!(run(&mut s, "LSET nokey 0 B"), err("ERR no such key"));
    assert_eq!(run(&mut s, "LPOS l a"), Reply::Integer(0));
    assert_eq!(run(&mut s, "LPOS l a RANK 2"), Reply::Integer(2));
    assert_eq!(run(&mut s, "LPOS l a RANK -1"), Reply::Integer(4));
    assert_eq!(
        run(&mut s, "LPOS l a COUNT 0"),
        Reply::Array(vec![
            Reply::Integer(0),
            Reply::Integer(2),
            Reply::Integer(4)
        ])
    );
    assert_eq!(
        run(&mut s, "LPOS l a COUNT 2 MAXLEN 2"),
        Reply::Array(vec![Reply::Integer(0)])
    );
    assert_eq!(run(&mut s, "LPOS l zz"), Reply::Nil);
    assert_eq!(run(&mut s, "LREM l -2 a"), Reply::Integer(2));
    assert_eq!(run(&mut s, "LRANGE l 0 -1"), bulks(&["a", "B", "c", "d"]));
    assert_eq!(run(&mut s, "LINSERT l BEFORE c x"), Reply::Integer(5));
    assert_eq!(run(&mut s, "LINSERT l AFTER d y"), Reply::Integer(6));
    assert_eq!(run(&mut s, "LINSERT l AFTER nope y"), Reply::Integer(-1));
    assert_eq!(
        run(&mut s, "LRANGE l 0 -1"),
        bulks(&["a", "B", "x", "c", "d", "y"])
    );
    assert_eq!(run(&mut s, "LTRIM l 1 -2"), Reply::Ok);
    assert_eq!(run(&mut s, "LRANGE l 0 -1"), bulks(&["B", "x", "c", "d"]));
    assert_eq!(run(&mut s, "LPUSH l first"), Reply::Integer(5));
    assert_eq!(run(&mut s, "LINDEX l 0"), bulk("first"));
    assert_eq!(run(&mut s, "LTRIM l 10 20"), Reply::Ok);
    assert_eq!(run(&mut s, "EXISTS l"), Reply::Integer(0));
    run(&mut s, "RPUSH l a a a");
    assert_eq!(run(&mut s, "LREM l 0 a"), Reply::Integer(3));
    assert_eq!(run(&mut s, "EXISTS l"), Reply::Integer(0));
}

#[test]
fn moves_between_lists() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    run(&mut s, "RPUSH a 1 2 3");
    assert_eq!(run(&mut s, "LMOVE a b LEFT RIGHT"), bulk("1"));
    assert_eq!(run(&mut s, "RPOPLPUSH a b"), bulk("3"));
    assert_eq!(run(&mut s, "LRANGE b 0 -1"), bulks(&["3", "1"]));
    assert_eq!(run(&mut s, "LMOVE a a LEFT RIGHT"), bulk("2"));
    assert_eq!(run(&mut s, "LMOVE a b LEFT LEFT"), bulk("2"));
    assert_eq!(run(&mut s, "EXISTS a"), Reply::Integer(0));
    assert_eq!(run(&mut s, "LMOVE a b LEFT LEFT"), Reply::Nil);
    assert_eq!(run(&mut s, "LMOVE b a UP LEFT"), err("ERR syntax error"));
    run(&mut s, "HSET h f v");
    assert_eq!(
        run(&mut s, "RPOPLPUSH b h"),
        err("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
    assert_eq!(run(&mut s, "LLEN b"), Reply::Integer(3), "nothing moved");
}
