use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use crate::commands::store::stripe_of;
use crate::commands::{Engine, Session};
use crate::config::Config;
use crate::resp::Reply;

fn engine(dir: &std::path::Path) -> Arc<Engine> {
    let config = Config {
        dir: dir.to_path_buf(),
        ..Config::default()
    };
    Engine::open(&config).unwrap()
}

fn words(line: &str) -> Vec<&[u8]> {
    line.split(' ').map(str::as_bytes).collect()
}

/// Runs `lines` as one pipeline; returns the replies' bytes.
fn pipeline(s: &mut Session, lines: &[&str]) -> String {
    let mut out = Vec::new();
    let mut p = s.pipeline();
    for line in lines {
        p.execute(&words(line), &mut out);
    }
    p.finish(&mut out);
    String::from_utf8(out).unwrap()
}

fn run(s: &mut Session, line: &str) -> Reply {
    s.execute(&words(line)).unwrap()
}

fn bulk(s: &str) -> Reply {
    Reply::Bulk(s.as_bytes().to_vec().into())
}

#[test]
fn gathered_writes_reply_in_order_and_are_seen_by_later_commands() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    let seq_before = e.db().latest_sequence();
    let out = pipeline(
        &mut s,
        &[
            "SET a 1",
            "SET b 2 EX 100",
            "SET a 3",
            "GET a",
            "SET c 4 NX",
            "SET c 5 NX",
            "SET d 6 GET",
            "SET e",
            "SET e 7 EX 0",
            "SET f 8",
        ],
    );
    assert_eq!(
        out,
        "+OK\r\n+OK\r\n+OK\r\n$1\r\n3\r\n+OK\r\n$-1\r\n$-1\r\n\
         -ERR wrong number of arguments for 'set' command\r\n\
         -ERR invalid expire time in 'set' command\r\n+OK\r\n"
    );
    assert_eq!(run(&mut s, "GET a"), bulk("3"));
    assert!(matches!(run(&mut s, "TTL b"), Reply::Integer(99..=100)));
    assert_eq!(run(&mut s, "GET c"), bulk("4"));
    assert_eq!(run(&mut s, "GET d"), bulk("6"));
    assert_eq!(run(&mut s, "GET f"), bulk("8"));
    // Six writes in all; the first three were one batch, committed before the GET.
    assert_eq!(e.db().latest_sequence() - seq_before, 6);
    assert_eq!(
        crate::net::metrics_text(&e)
            .lines()
            .find(|l| l.starts_with("terrace_commands_total"))
            .unwrap(),
        "terrace_commands_total 15"
    );
}

#[test]
fn gathered_reads_see_the_writes_before_them_and_count_hits() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    run(&mut s, "SET gone x PX 1");
    std::thread::sleep(Duration::from_millis(5));
    let out = pipeline(
        &mut s,
        &[
            "GET a", "SET a 1", "GET a", "GET b", "GET gone", "SET b 2", "GET b", "GET",
        ],
    );
    assert_eq!(
        out,
        "$-1\r\n+OK\r\n$1\r\n1\r\n$-1\r\n$-1\r\n+OK\r\n$1\r\n2\r\n\
         -ERR wrong number of arguments for 'get' command\r\n"
    );
    // The expired key was deleted when read.
    assert_eq!(e.db().get(b"gone").unwrap(), None);
    let metrics = crate::net::metrics_text(&e);
    let info = run(&mut s, "INFO stats").to_string_lossy();
    assert!(info.contains("keyspace_hits:2"), "{info}");
    assert!(info.contains("keyspace_misses:3"), "{info}");
    assert!(metrics.contains("terrace_commands_total 9"), "{metrics}");
}

#[test]
fn writes_queued_by_multi_or_refused_before_auth_are_not_gathered() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    let out = pipeline(&mut s, &["MULTI", "SET a 1", "SET b 2", "EXEC", "GET b"]);
    assert_eq!(
        out,
        "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+OK\r\n+OK\r\n$1\r\n2\r\n"
    );
    run(&mut s, "CONFIG SET requirepass secret");
    let mut other = e.connect("u".into()).unwrap();
    let out = pipeline(&mut other, &["SET a 9", "AUTH secret", "SET a 10"]);
    assert_eq!(out, "-NOAUTH Authentication required.\r\n+OK\r\n+OK\r\n");
    assert_eq!(run(&mut other, "GET a"), bulk("10"));
}

#[test]
fn a_watched_key_written_by_a_batch_aborts_the_transaction() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut watcher = e.connect("w".into()).unwrap();
    let mut writer = e.connect("p".into()).unwrap();
    assert_eq!(run(&mut watcher, "WATCH k"), Reply::Ok);
    pipeline(&mut writer, &["SET j 1", "SET k 2"]);
    assert_eq!(run(&mut watcher, "MULTI"), Reply::Ok);
    run(&mut watcher, "SET k 3");
    assert_eq!(run(&mut watcher, "EXEC"), Reply::NilArray);
    assert_eq!(run(&mut watcher, "GET k"), bulk("2"));
}

#[test]
fn a_pending_batch_keeps_read_modify_writes_out_until_it_commits() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("a".into()).unwrap();
    let mut other = e.connect("b".into()).unwrap();
    let (tx, rx) = mpsc::channel();
    let mut out = Vec::new();
    let mut p = s.pipeline();
    p.execute(&words("SET k 10"), &mut out);
    std::thread::scope(|scope| {
        scope.spawn(move || {
            tx.send(run(&mut other, "INCR k")).unwrap();
        });
        // The INCR waits for the batch's stripe: it must not read k before the SET.
        assert!(rx.recv_timeout(Duration::from_millis(200)).is_err());
        p.finish(&mut out);
        assert_eq!(rx.recv().unwrap(), Reply::Integer(11));
    });
    assert_eq!(out, b"+OK\r\n");
}

#[test]
fn a_busy_stripe_commits_the_batch_instead_of_waiting_out_of_order() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    // Two keys whose stripes order as low < high.
    let keys: Vec<String> = (0..).map(|i| format!("k{i}")).take(64).collect();
    let (low, high) = keys
        .iter()
        .flat_map(|a| keys.iter().map(move |b| (a, b)))
        .find(|(a, b)| stripe_of(a.as_bytes()) < stripe_of(b.as_bytes()))
        .unwrap();
    let mut s = e.connect("a".into()).unwrap();
    let mut other = e.connect("b".into()).unwrap();
    let mut out = Vec::new();
    let mut p = s.pipeline();
    // The batch holds `high`; MSET locks `low` then waits for `high`.
    p.execute(&words(&format!("SET {high} 1")), &mut out);
    std::thread::scope(|scope| {
        let mset = format!("MSET {low} 2 {high} 2");
        let t = scope.spawn(move || run(&mut other, &mset));
        std::thread::sleep(Duration::from_millis(100));
        // Waiting for `low` here while holding `high` would deadlock.
        p.execute(&words(&format!("SET {low} 1")), &mut out);
        p.finish(&mut out);
        assert_eq!(t.join().unwrap(), Reply::Ok);
    });
    assert_eq!(out, b"+OK\r\n+OK\r\n");
    // Some serial order: the MSET ran between the two SETs, or after both.
    let got = (
        run(&mut s, &format!("GET {low}")),
        run(&mut s, &format!("GET {high}")),
    );
    assert!(
        got == (bulk("1"), bulk("2")) || got == (bulk("2"), bulk("2")),
        "{got:?}"
    );
}
