use crate::commands::tests::{bulk, engine, err, run};
use crate::commands::{Action, Session};
use crate::resp::Reply;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
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
    let reply = runtime().block_on(a.wait_blocked());
    assert_eq!(reply, Reply::Array(vec![bulk("q2"), bulk("job")]));
    assert_eq!(
        run(&mut b, "EXISTS q2"),
        Reply::Integer(0),
        "the element was taken"
    );
    // BLMOVE blocks on its source and moves what arrives.
    assert_eq!(run_blocking(&mut a, "BLMOVE src dst LEFT RIGHT 5"), None);
    run(&mut b, "LPUSH src x");
    assert_eq!(runtime().block_on(a.wait_blocked()), bulk("x"));
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
    assert_eq!(runtime().block_on(a.wait_blocked()), Reply::NilArray);
    assert!(started.elapsed() >= std::time::Duration::from_millis(50));
    assert_eq!(run_blocking(&mut a, "BRPOPLPUSH nothing d 0.01"), None);
    assert_eq!(runtime().block_on(a.wait_blocked()), Reply::Nil);
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
