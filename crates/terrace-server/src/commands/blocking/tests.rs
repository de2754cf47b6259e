use crate::commands::tests::{bulk, engine, err, run};
use crate::commands::{Action, Session};
use crate::resp::Reply;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

/// What the blocked `s` answers once woken or timed out. A client never woken fails the
/// test after a minute instead of hanging the suite.
fn woken(s: &mut Session) -> Reply {
    runtime()
        .block_on(async {
            tokio::time::timeout(std::time::Duration::from_secs(60), s.wait_blocked()).await
        })
        .expect("a blocked client was never woken")
}

/// Runs `line` as the transport does; `None` when the command blocked.
fn run_blocking(s: &mut Session, line: &str) -> Option<Vec<u8>> {
    let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
    let mut out = Vec::new();
    s.execute_into(&args, &mut out);
    match s.take_action() {
        Some(Action::Block) => {
            assert!(out.is_empty(), "a blocked command answers nothing yet");
            None
        }
        _ => Some(out),
    }
}

#[test]
fn a_push_from_another_client_wakes_a_blocked_pop() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut a = e.connect("a".into()).unwrap();
    let mut b = e.connect("b".into()).unwrap();
    assert_eq!(run_blocking(&mut a, "BLPOP q1 q2 0"), None);
    assert_eq!(run(&mut b, "RPUSH q2 job"), Reply::Integer(1));
    let reply = woken(&mut a);
    assert_eq!(reply, Reply::Array(vec![bulk("q2"), bulk("job")]));
    assert_eq!(
        run(&mut b, "EXISTS q2"),
        Reply::Integer(0),
        "the element was taken"
    );
    // BLMOVE blocks on its source and moves what arrives.
    assert_eq!(run_blocking(&mut a, "BLMOVE src dst LEFT RIGHT 5"), None);
    run(&mut b, "LPUSH src x");
    assert_eq!(woken(&mut a), bulk("x"));
    assert_eq!(
        run(&mut b, "LRANGE dst 0 -1"),
        Reply::Array(vec![bulk("x")])
    );
    // Something there already: no blocking.
    run(&mut b, "RPUSH q1 a b");
    let out = run_blocking(&mut a, "BRPOP q1 0").unwrap();
    assert_eq!(out, b"*2\r\n$2\r\nq1\r\n$1\r\nb\r\n");
}

#[test]
fn timeouts_transactions_and_bad_arguments() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut a = e.connect("a".into()).unwrap();
    let started = std::time::Instant::now();
    assert_eq!(run_blocking(&mut a, "BRPOP nothing 0.05"), None);
    assert_eq!(woken(&mut a), Reply::NilArray);
    assert!(started.elapsed() >= std::time::Duration::from_millis(50));
    assert_eq!(run_blocking(&mut a, "BRPOPLPUSH nothing d 0.01"), None);
    assert_eq!(woken(&mut a), Reply::Nil);
    // Inside a transaction a blocking pop answers at once.
    run(&mut a, "MULTI");
    run(&mut a, "BLPOP nothing 0");
    assert_eq!(run(&mut a, "EXEC"), Reply::Array(vec![Reply::NilArray]));
    assert_eq!(run(&mut a, "BLPOP k -1"), err("ERR timeout is negative"));
    assert_eq!(
        run(&mut a, "BLPOP k x"),
        err("ERR timeout is not a float or out of range")
    );
    run(&mut a, "SET str v");
    assert_eq!(
        run(&mut a, "BLPOP str 0"),
        err("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
}

#[test]
fn an_add_from_another_client_wakes_a_blocked_sorted_set_pop() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut a = e.connect("a".into()).unwrap();
    let mut b = e.connect("b".into()).unwrap();
    assert_eq!(run_blocking(&mut a, "BZPOPMIN z1 z2 0"), None);
    assert_eq!(run(&mut b, "ZADD z2 5 m 7 n"), Reply::Integer(2));
    assert_eq!(
        woken(&mut a),
        Reply::Array(vec![bulk("z2"), bulk("m"), Reply::Double(5.0)])
    );
    // BZMPOP takes up to COUNT members of the first key that has any.
    assert_eq!(run_blocking(&mut a, "BZMPOP 5 2 z0 z9 MAX COUNT 3"), None);
    run(&mut b, "ZADD z9 1 x 2 y");
    assert_eq!(
        woken(&mut a),
        Reply::Array(vec![
            bulk("z9"),
            Reply::Array(vec![
                Reply::Array(vec![bulk("y"), Reply::Double(2.0)]),
                Reply::Array(vec![bulk("x"), Reply::Double(1.0)]),
            ]),
        ])
    );
    assert_eq!(run(&mut b, "EXISTS z9"), Reply::Integer(0));
    // A ZUNIONSTORE into the key wakes it too.
    assert_eq!(run_blocking(&mut a, "BZPOPMAX dst 0"), None);
    run(&mut b, "ZUNIONSTORE dst 1 z2");
    assert_eq!(
        woken(&mut a),
        Reply::Array(vec![bulk("dst"), bulk("n"), Reply::Double(7.0)])
    );
    // BLMPOP wakes on a push and pops from the side asked for.
    assert_eq!(run_blocking(&mut a, "BLMPOP 0 1 q RIGHT COUNT 5"), None);
    run(&mut b, "RPUSH q 1 2 3");
    assert_eq!(
        woken(&mut a),
        Reply::Array(vec![
            bulk("q"),
            Reply::Array(vec![bulk("3"), bulk("2"), bulk("1")]),
        ])
    );
    // Timeouts answer a null array.
    assert_eq!(run_blocking(&mut a, "BZMPOP 0.01 1 none MIN"), None);
    assert_eq!(woken(&mut a), Reply::NilArray);
    assert_eq!(run_blocking(&mut a, "BZPOPMAX none 0.01"), None);
    assert_eq!(woken(&mut a), Reply::NilArray);
}

#[test]
fn multi_key_pops_parse_as_redis_does() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut a = e.connect("a".into()).unwrap();
    run(&mut a, "RPUSH l 1 2 3 4 5");
    assert_eq!(
        run(&mut a, "LMPOP 2 none l LEFT COUNT 2"),
        Reply::Array(vec![bulk("l"), Reply::Array(vec![bulk("1"), bulk("2")])])
    );
    assert_eq!(run(&mut a, "LMPOP 1 none RIGHT"), Reply::NilArray);
    assert_eq!(
        run(&mut a, "LMPOP 0 l LEFT"),
        err("ERR numkeys should be greater than 0")
    );
    assert_eq!(
        run(&mut a, "LMPOP x l LEFT"),
        err("ERR numkeys should be greater than 0")
    );
    assert_eq!(run(&mut a, "LMPOP 3 l LEFT"), err("ERR syntax error"));
    assert_eq!(run(&mut a, "LMPOP 1 l UP"), err("ERR syntax error"));
    assert_eq!(run(&mut a, "LMPOP 1 l LEFT COUNT"), err("ERR syntax error"));
    assert_eq!(
        run(&mut a, "LMPOP 1 l LEFT COUNT 0"),
        err("ERR count should be greater than 0")
    );
    assert_eq!(
        run(&mut a, "LMPOP 1 l LEFT COUNT 1 COUNT 1"),
        err("ERR syntax error")
    );
    // ZMPOP: pairs of member and score, lowest or highest first.
    run(&mut a, "ZADD z 1 a 2 b 3 c");
    assert_eq!(
        run(&mut a, "ZMPOP 1 z MIN COUNT 2"),
        Reply::Array(vec![
            bulk("z"),
            Reply::Array(vec![
                Reply::Array(vec![bulk("a"), Reply::Double(1.0)]),
                Reply::Array(vec![bulk("b"), Reply::Double(2.0)]),
            ]),
        ])
    );
    assert_eq!(run(&mut a, "ZMPOP 1 z LEFT"), err("ERR syntax error"));
    assert_eq!(
        run(&mut a, "ZMPOP 1 l MAX"),
        err("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
    // Inside a transaction the blocking forms answer at once.
    run(&mut a, "MULTI");
    run(&mut a, "BZMPOP 0 1 none MIN");
    run(&mut a, "BLMPOP 0 1 none LEFT");
    assert_eq!(
        run(&mut a, "EXEC"),
        Reply::Array(vec![Reply::NilArray, Reply::NilArray])
    );
}
