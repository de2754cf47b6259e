use crate::commands::tests::{bulk, engine, err, run, sorted_bulks};
use crate::resp::Reply;

fn ints(v: &[i64]) -> Reply {
    Reply::Array(v.iter().map(|&i| Reply::Integer(i)).collect())
}

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

#[test]
fn fields_are_set_read_counted_and_deleted() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    assert_eq!(run(&mut s, "HSET h a 1 b 2"), Reply::Integer(2));
    assert_eq!(run(&mut s, "HSET h a 10 c 3"), Reply::Integer(1));
    assert_eq!(run(&mut s, "HGET h a"), bulk("10"));
    assert_eq!(run(&mut s, "HGET h zz"), Reply::Nil);
    assert_eq!(run(&mut s, "HGET nokey a"), Reply::Nil);
    assert_eq!(run(&mut s, "HLEN h"), Reply::Integer(3));
    assert_eq!(run(&mut s, "HSTRLEN h a"), Reply::Integer(2));
    assert_eq!(run(&mut s, "HEXISTS h b"), Reply::Integer(1));
    assert_eq!(run(&mut s, "HEXISTS h q"), Reply::Integer(0));
    assert_eq!(run(&mut s, "HSETNX h a x"), Reply::Integer(0));
    assert_eq!(run(&mut s, "HSETNX h d 4"), Reply::Integer(1));
    assert_eq!(
        run(&mut s, "HMGET h a q d"),
        Reply::Array(vec![bulk("10"), Reply::Nil, bulk("4")])
    );
    assert_eq!(sorted_bulks(run(&mut s, "HKEYS h")), ["a", "b", "c", "d"]);
    assert_eq!(sorted_bulks(run(&mut s, "HVALS h")), ["10", "2", "3", "4"]);
    assert_eq!(run(&mut s, "TYPE h"), Reply::Status("hash".into()));
    assert_eq!(run(&mut s, "OBJECT ENCODING h"), bulk("hashtable"));
    assert_eq!(run(&mut s, "OBJECT REFCOUNT h"), Reply::Integer(1));
    run(&mut s, "SET n 123");
    assert_eq!(run(&mut s, "OBJECT ENCODING n"), bulk("int"));
    run(&mut s, "SET n 0123");
    assert_eq!(run(&mut s, "OBJECT ENCODING n"), bulk("embstr"));
    assert_eq!(run(&mut s, "OBJECT ENCODING none"), Reply::Nil);
    assert!(run(&mut s, "OBJECT IDLETIME n").is_error());
    assert_eq!(run(&mut s, "HDEL h a a q"), Reply::Integer(1));
    assert_eq!(run(&mut s, "HLEN h"), Reply::Integer(3));
    assert_eq!(run(&mut s, "HDEL h b c d"), Reply::Integer(3));
    // The last field gone, the key is gone.
    assert_eq!(run(&mut s, "EXISTS h"), Reply::Integer(0));
    assert_eq!(run(&mut s, "TYPE h"), Reply::Status("none".into()));
    assert_eq!(run(&mut s, "HMSET m x 1"), Reply::Ok);
    assert_eq!(
        run(&mut s, "HSET m x"),
        err("ERR wrong number of arguments for 'hset' command")
    );
}

#[test]
fn wrong_types_are_refused_both_ways() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    run(&mut s, "SET str v");
    run(&mut s, "HSET h f v");
    for cmd in [
        "HGET str f",
        "HSET str f v",
        "HLEN str",
        "HGETALL str",
        "HDEL str f",
    ] {
        assert_eq!(run(&mut s, cmd), err(WRONGTYPE), "{cmd}");
    }
    for cmd in ["GET h", "INCR h", "APPEND h x", "STRLEN h", "GETDEL h"] {
        assert_eq!(run(&mut s, cmd), err(WRONGTYPE), "{cmd}");
    }
    // SET replaces a hash whatever its type; NX sees it as existing; GET wants a string.
    assert_eq!(run(&mut s, "SET h x NX"), Reply::Nil);
    assert_eq!(run(&mut s, "SETNX h x"), Reply::Integer(0));
    assert_eq!(run(&mut s, "MSETNX h x other y"), Reply::Integer(0));
    assert_eq!(run(&mut s, "SET h x GET"), err(WRONGTYPE));
    assert_eq!(
        run(&mut s, "HGET h f"),
        bulk("v"),
        "nothing replaced the hash yet"
    );
    // DEL, EXISTS and TYPE see every type.
    assert_eq!(run(&mut s, "EXISTS h str"), Reply::Integer(2));
    assert_eq!(run(&mut s, "SET h now-a-string"), Reply::Ok);
    assert_eq!(run(&mut s, "GET h"), bulk("now-a-string"));
    run(&mut s, "HSET h2 f v");
    assert_eq!(run(&mut s, "DEL h2 str"), Reply::Integer(2));
    assert_eq!(run(&mut s, "HGET h2 f"), Reply::Nil);
}

#[test]
fn a_recreated_hash_never_sees_the_old_fields() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    run(&mut s, "HSET h old 1 other 2");
    run(&mut s, "DEL h");
    run(&mut s, "HSET h new 1");
    assert_eq!(sorted_bulks(run(&mut s, "HKEYS h")), ["new"]);
    assert_eq!(run(&mut s, "HGET h old"), Reply::Nil);
    run(&mut s, "SET h str");
    assert_eq!(run(&mut s, "HSET h again 1"), err(WRONGTYPE));
    run(&mut s, "DEL h");
    run(&mut s, "HSET h again 1");
    assert_eq!(run(&mut s, "HLEN h"), Reply::Integer(1));
    // An expired hash is gone, and so are its fields for a new one.
    run(&mut s, "HSET e f 1");
    assert_eq!(run(&mut s, "PEXPIRE e 1"), Reply::Integer(1));
    std::thread::sleep(std::time::Duration::from_millis(5));
    assert_eq!(run(&mut s, "HGET e f"), Reply::Nil);
    assert_eq!(run(&mut s, "HSET e g 1"), Reply::Integer(1));
    assert_eq!(sorted_bulks(run(&mut s, "HKEYS e")), ["g"]);
}

#[test]
fn expiry_rename_and_copy_work_on_hashes() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    run(&mut s, "HSET h a 1 b 2");
    assert_eq!(run(&mut s, "TTL h"), Reply::Integer(-1));
    assert_eq!(run(&mut s, "EXPIRE h 100"), Reply::Integer(1));
    assert!(matches!(run(&mut s, "TTL h"), Reply::Integer(99..=100)));
    assert_eq!(run(&mut s, "HLEN h"), Reply::Integer(2));
    assert_eq!(run(&mut s, "PERSIST h"), Reply::Integer(1));
    assert_eq!(run(&mut s, "TTL h"), Reply::Integer(-1));
    assert_eq!(run(&mut s, "COPY h c"), Reply::Integer(1));
    assert_eq!(run(&mut s, "HSET c a changed"), Reply::Integer(0));
    assert_eq!(
        run(&mut s, "HGET h a"),
        bulk("1"),
        "the copy is its own hash"
    );
    assert_eq!(run(&mut s, "RENAME h r"), Reply::Ok);
    assert_eq!(run(&mut s, "EXISTS h"), Reply::Integer(0));
    assert_eq!(sorted_bulks(run(&mut s, "HVALS r")), ["1", "2"]);
    assert_eq!(
        run(&mut s, "SCAN 0 TYPE hash"),
        Reply::Array(vec![bulk("0"), Reply::Array(vec![bulk("c"), bulk("r")])])
    );
    assert_eq!(run(&mut s, "DBSIZE"), Reply::Integer(2));
}

#[test]
fn counters_in_fields() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    assert_eq!(run(&mut s, "HINCRBY h n 5"), Reply::Integer(5));
    assert_eq!(run(&mut s, "HINCRBY h n -7"), Reply::Integer(-2));
    assert_eq!(run(&mut s, "HINCRBYFLOAT h f 1.5"), bulk("1.5"));
    assert_eq!(run(&mut s, "HINCRBYFLOAT h f 0.25"), bulk("1.75"));
    assert_eq!(run(&mut s, "HLEN h"), Reply::Integer(2));
    run(&mut s, "HSET h s abc");
    assert_eq!(
        run(&mut s, "HINCRBY h s 1"),
        err("ERR hash value is not an integer")
    );
    assert_eq!(
        run(&mut s, "HINCRBYFLOAT h s 1"),
        err("ERR hash value is not a float")
    );
    run(&mut s, "HSET h big 9223372036854775807");
    assert_eq!(
        run(&mut s, "HINCRBY h big 1"),
        err("ERR increment or decrement would overflow")
    );
    assert_eq!(
        run(&mut s, "HINCRBY h n x"),
        err("ERR value is not an integer or out of range")
    );
}

#[test]
fn hscan_cursors_need_no_server_state() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    for i in 0..250 {
        run(&mut s, &format!("HSET h f{i} v{i}"));
    }
    let mut seen = Vec::new();
    let mut cursor = "0".to_string();
    loop {
        let Reply::Array(parts) = run(&mut s, &format!("HSCAN h {cursor} COUNT 17")) else {
            panic!()
        };
        let (Reply::Bulk(c), Reply::Array(items)) = (&parts[0], &parts[1]) else {
            panic!()
        };
        for pair in items.chunks(2) {
            if let Reply::Bulk(f) = &pair[0] {
                seen.push(String::from_utf8_lossy(f).into_owned());
            }
        }
        cursor = String::from_utf8_lossy(c).into_owned();
        // Another session resumes the same cursor: nothing is kept per client.
        if cursor == "0" {
            break;
        }
    }
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 250);
    let Reply::Array(parts) = run(&mut s, "HSCAN h 0 MATCH f1? COUNT 1000 NOVALUES") else {
        panic!()
    };
    assert_eq!(parts[0], bulk("0"));
    assert_eq!(sorted_bulks(parts[1].clone()).len(), 10);
    assert_eq!(run(&mut s, "HSCAN h x"), err("ERR invalid cursor"));
}

#[test]
fn hrandfield_counts() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    assert_eq!(run(&mut s, "HRANDFIELD none"), Reply::Nil);
    run(&mut s, "HSET h a 1 b 2 c 3");
    assert!(matches!(run(&mut s, "HRANDFIELD h"), Reply::Bulk(_)));
    assert_eq!(
        sorted_bulks(run(&mut s, "HRANDFIELD h 10")),
        ["a", "b", "c"]
    );
    let Reply::Array(v) = run(&mut s, "HRANDFIELD h -7") else {
        panic!()
    };
    assert_eq!(v.len(), 7);
    let Reply::Array(v) = run(&mut s, "HRANDFIELD h 2 WITHVALUES") else {
        panic!()
    };
    assert_eq!(v.len(), 4);
    assert_eq!(run(&mut s, "HRANDFIELD h 2 BAD"), err("ERR syntax error"));
    assert_eq!(ints(&[]), Reply::Array(vec![]));
}

#[test]
fn compaction_drops_the_fields_of_deleted_and_overwritten_hashes() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    for i in 0..50 {
        run(&mut s, &format!("HSET gone f{i} v"));
        run(&mut s, &format!("HSET over f{i} v"));
        run(&mut s, &format!("HSET kept f{i} v"));
    }
    run(&mut s, "DEL gone");
    run(&mut s, "SET over string");
    let count = |e: &crate::commands::Engine| {
        let mut it = e.db().iter(terrace::ReadOptions::default()).unwrap();
        it.seek(&crate::value::keys::RESERVED).unwrap();
        let mut n = 0;
        while it.valid() {
            n += usize::from(crate::value::keys::parse_member(it.key()).is_some());
            it.next().unwrap();
        }
        n
    };
    assert_eq!(count(&e), 150, "members stay until compaction");
    e.db().flush().unwrap();
    e.db().compact_range(None, None).unwrap();
    assert_eq!(count(&e), 50, "only the live hash's fields are left");
    assert_eq!(run(&mut s, "HLEN kept"), Reply::Integer(50));
}
