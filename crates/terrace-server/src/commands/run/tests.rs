use std::sync::Arc;
use std::time::Duration;

use crate::commands::{Engine, Gathered, Run, Session};
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

/// Executes `run` alone and takes it back into `out`.
fn flush(e: &Engine, s: &mut Session, run: &mut Run, out: &mut Vec<u8>) {
    if !run.is_empty() {
        e.execute_runs(&mut [&mut *run]);
        s.take_run(run, out);
    }
}

/// Runs `lines` as the transport does one read's commands; returns the replies.
fn pipeline(e: &Engine, s: &mut Session, lines: &[&str]) -> String {
    let mut out = Vec::new();
    let mut run = Run::new();
    for line in lines {
        let args = words(line);
        loop {
            match s.gather(&args, &mut run) {
                Gathered::Added => break,
                Gathered::OtherKind => flush(e, s, &mut run, &mut out),
                Gathered::No => {
                    flush(e, s, &mut run, &mut out);
                    s.execute_into(&args, &mut out);
                    break;
                }
            }
        }
    }
    flush(e, s, &mut run, &mut out);
    s.publish_stats();
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
        &e,
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
        &e,
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
    let out = pipeline(
        &e,
        &mut s,
        &["MULTI", "SET a 1", "SET b 2", "EXEC", "GET b"],
    );
    assert_eq!(
        out,
        "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+OK\r\n+OK\r\n$1\r\n2\r\n"
    );
    run(&mut s, "CONFIG SET requirepass secret");
    let mut other = e.connect("u".into()).unwrap();
    let out = pipeline(&e, &mut other, &["SET a 9", "AUTH secret", "SET a 10"]);
    assert_eq!(out, "-NOAUTH Authentication required.\r\n+OK\r\n+OK\r\n");
    assert_eq!(run(&mut other, "GET a"), bulk("10"));
}

#[test]
fn a_watched_key_written_by_a_run_aborts_the_transaction() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut watcher = e.connect("w".into()).unwrap();
    let mut writer = e.connect("p".into()).unwrap();
    assert_eq!(run(&mut watcher, "WATCH k"), Reply::Ok);
    pipeline(&e, &mut writer, &["SET j 1", "SET k 2"]);
    assert_eq!(run(&mut watcher, "MULTI"), Reply::Ok);
    run(&mut watcher, "SET k 3");
    assert_eq!(run(&mut watcher, "EXEC"), Reply::NilArray);
    assert_eq!(run(&mut watcher, "GET k"), bulk("2"));
}

#[test]
fn runs_of_several_sessions_execute_as_one_group() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut a = e.connect("a".into()).unwrap();
    let mut b = e.connect("b".into()).unwrap();
    let mut c = e.connect("c".into()).unwrap();
    run(&mut c, "SET x old");
    run(&mut c, "HELLO 3");
    let mut runs = vec![Run::new(), Run::new(), Run::new()];
    let [ra, rb, rc] = &mut runs[..] else {
        unreachable!()
    };
    for (session, run, lines) in [
        (&mut a, ra, &["SET x 1", "SET y 2"][..]),
        (&mut b, rb, &["SET z 3"][..]),
        (&mut c, rc, &["GET x", "GET nope"][..]),
    ] {
        for line in lines {
            assert_eq!(session.gather(&words(line), run), Gathered::Added);
        }
    }
    assert_eq!(a.gather(&words("GET x"), &mut runs[0]), Gathered::OtherKind);
    let seq_before = e.db().latest_sequence();
    e.execute_runs(&mut runs.iter_mut().collect::<Vec<&mut Run>>());
    // One batch for the three writes; the reads ran after it.
    assert_eq!(e.db().latest_sequence() - seq_before, 3);
    let mut outs = Vec::new();
    for (session, run) in [&mut a, &mut b, &mut c].into_iter().zip(&mut runs) {
        let mut out = Vec::new();
        session.take_run(run, &mut out);
        assert!(run.is_empty());
        outs.push(String::from_utf8(out).unwrap());
    }
    assert_eq!(
        outs,
        ["+OK\r\n+OK\r\n", "+OK\r\n", "$1\r\n1\r\n_\r\n"].map(String::from)
    );
    assert_eq!(run(&mut a, "GET z"), bulk("3"));
}

#[test]
fn a_large_read_group_split_over_two_threads_replies_in_order_and_keeps_its_reader() {
    let tmp = tempfile::tempdir().unwrap();
    let config = Config {
        dir: tmp.path().to_path_buf(),
        reader_threads: Some(1),
        ..Config::default()
    };
    let e = Engine::open(&config).unwrap();
    let mut s = e.connect("t".into()).unwrap();
    let sets: Vec<String> = (0..300)
        .step_by(3)
        .map(|i| format!("SET k{i} v{i}"))
        .collect();
    let gets: Vec<String> = (0..300).map(|i| format!("GET k{i}")).collect();
    let lines: Vec<&str> = sets.iter().chain(&gets).map(String::as_str).collect();
    let out = pipeline(&e, &mut s, &lines);
    let mut want = "+OK\r\n".repeat(100);
    let mut got = String::new();
    for i in 0..300 {
        if i % 3 == 0 {
            let v = format!("v{i}");
            got.push_str(&format!("${}\r\n{v}\r\n", v.len()));
        } else {
            got.push_str("$-1\r\n");
        }
    }
    want.push_str(&got);
    assert_eq!(out, want);
    // The group's second half was read on the store's reader thread, which stays for
    // the next large group.
    let reader = e.store.readers.started();
    assert!(reader.is_some(), "no reader thread started");
    let again: Vec<&str> = gets.iter().map(String::as_str).collect();
    assert_eq!(pipeline(&e, &mut s, &again), got);
    assert_eq!(e.store.readers.started(), reader);
}

/// Collection commands gathered into one run read the run's own writes: a member it
/// deleted is gone from a later walk, one it changed shows its new value, one it added is
/// there; the run commits as one engine batch, before the next command.
#[test]
fn gathered_collection_commands_read_the_writes_before_them() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    run(&mut s, "ZADD z 1 a 2 b 3 c");
    run(&mut s, "RPUSH l x y z");
    let seq_before = e.db().latest_sequence();
    let out = pipeline(
        &e,
        &mut s,
        &[
            "ZREM z b",
            "ZRANGE z 0 -1",
            "ZADD z 0 new",
            "ZRANGE z 0 -1 REV",
            "LSET l 1 Y",
            "RPUSH l w",
            "LPOP l",
            "LRANGE l 0 -1",
            "HSET h f 1",
            "HINCRBY h f 2",
            "DEL z",
            "ZCARD z",
        ],
    );
    assert_eq!(
        out,
        ":1\r\n*2\r\n$1\r\na\r\n$1\r\nc\r\n:1\r\n*3\r\n$1\r\nc\r\n$1\r\na\r\n$3\r\nnew\r\n\
         +OK\r\n:4\r\n$1\r\nx\r\n*3\r\n$1\r\nY\r\n$1\r\nz\r\n$1\r\nw\r\n:1\r\n:3\r\n:1\r\n:0\r\n"
    );
    // The ten commands before DEL were one batch: one sequence number per distinct
    // record written, fewer than the writes their commands made one by one.
    let in_one_batch = e.db().latest_sequence() - seq_before;
    run(&mut s, "ZADD z 1 a 2 b 3 c");
    run(&mut s, "RPUSH l x y z");
    let seq_before = e.db().latest_sequence();
    for line in [
        "ZREM z b",
        "ZADD z 0 new",
        "LSET l 1 Y",
        "RPUSH l w",
        "LPOP l",
        "HSET h2 f 1",
        "HINCRBY h2 f 2",
        "DEL z",
    ] {
        run(&mut s, line);
    }
    let one_by_one = e.db().latest_sequence() - seq_before;
    assert!(
        in_one_batch < one_by_one,
        "{in_one_batch} records in the group, {one_by_one} one by one"
    );
}

/// A grouped write marks its key's watchers: their EXEC aborts.
#[test]
fn a_grouped_write_marks_watchers() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut watcher = e.connect("w".into()).unwrap();
    let mut writer = e.connect("x".into()).unwrap();
    assert_eq!(run(&mut watcher, "WATCH l"), Reply::Ok);
    assert_eq!(pipeline(&e, &mut writer, &["RPUSH l a"]), ":1\r\n");
    assert_eq!(run(&mut watcher, "MULTI"), Reply::Ok);
    run(&mut watcher, "LLEN l");
    assert_eq!(run(&mut watcher, "EXEC"), Reply::NilArray);
}

/// A group of pops walks one engine iterator per collection, stepping from each pop's
/// member to the next: the pops come out in order, in and out of the tables.
#[test]
fn a_groups_pops_step_through_the_collection_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    for i in 0..40 {
        run(&mut s, &format!("ZADD z {i} m{i:02}"));
    }
    e.db().flush().unwrap();
    // Some members in the memtable too, and a few removed there.
    for i in 40..50 {
        run(&mut s, &format!("ZADD z {i} m{i:02}"));
    }
    for i in [3, 4, 20, 45] {
        run(&mut s, &format!("ZREM z m{i:02}"));
    }
    let lines: Vec<String> = (0..30).map(|_| "ZPOPMIN z".to_string()).collect();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let out = pipeline(&e, &mut s, &lines);
    let mut want = String::new();
    for i in (0..50).filter(|i| ![3, 4, 20, 45].contains(i)).take(30) {
        want.push_str(&format!(
            "*2\r\n$3\r\nm{i:02}\r\n${}\r\n{i}\r\n",
            i.to_string().len()
        ));
    }
    assert_eq!(out, want);
    assert_eq!(run(&mut s, "ZCARD z"), Reply::Integer(16));
}

/// A group of many SETs reads the states of its keys for the key count on two threads
/// (nothing remembered here, so every key is read): the count comes out exact.
#[test]
fn a_large_write_group_counts_its_keys_with_a_split_read() {
    let tmp = tempfile::tempdir().unwrap();
    let config = Config {
        dir: tmp.path().to_path_buf(),
        keyspace_count_cache_bytes: 0,
        reader_threads: Some(1),
        ..Config::default()
    };
    let e = Engine::open(&config).unwrap();
    let mut s = e.connect("t".into()).unwrap();
    let sets = |range: std::ops::Range<u32>| -> Vec<String> {
        range.map(|i| format!("SET key:{i:06} v")).collect()
    };
    let first = sets(0..100);
    let lines: Vec<&str> = first.iter().map(String::as_str).collect();
    pipeline(&e, &mut s, &lines);
    assert_eq!(
        e.store.readers.started(),
        None,
        "100 keys read on one thread"
    );
    let second = sets(50..350);
    let lines: Vec<&str> = second.iter().map(String::as_str).collect();
    assert_eq!(pipeline(&e, &mut s, &lines), "+OK\r\n".repeat(300));
    assert!(e.store.readers.started().is_some(), "300 keys split");
    assert_eq!(run(&mut s, "DBSIZE"), Reply::Integer(350));
}
