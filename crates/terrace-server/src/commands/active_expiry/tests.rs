use super::*;
use crate::commands::tests::{engine, run};
use crate::resp::Reply;

#[test]
fn a_step_deletes_expired_keys_and_counts_them_out() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    for i in 0..10 {
        run(&mut s, &format!("SET gone{i} v PX 1"));
        run(&mut s, &format!("SET kept{i} v"));
        run(&mut s, &format!("SET later{i} v EX 1000"));
    }
    run(&mut s, "HSET ghash f v");
    run(&mut s, "PEXPIRE ghash 1");
    assert_eq!(run(&mut s, "DBSIZE"), Reply::Integer(31));
    std::thread::sleep(std::time::Duration::from_millis(5));
    // Nothing read them: they are still counted, as in Redis before its cycle runs.
    assert_eq!(run(&mut s, "DBSIZE"), Reply::Integer(31));
    let step = e.expire_step(1000).unwrap();
    assert_eq!(
        step,
        ExpireStep {
            walked: 31,
            deleted: 11,
            wrapped: true
        }
    );
    assert_eq!(run(&mut s, "DBSIZE"), Reply::Integer(20));
    let info = run(&mut s, "INFO keyspace");
    let Reply::Bulk(text) = info else {
        panic!("{info:?}")
    };
    assert!(
        String::from_utf8_lossy(text.as_ref()).contains("keys=20,expires=10,"),
        "{info:?}",
        info = String::from_utf8_lossy(text.as_ref())
    );
    assert_eq!(run(&mut s, "EXISTS kept3 later3 gone3"), Reply::Integer(2));
}

#[test]
fn steps_resume_where_the_last_stopped_and_start_over_at_the_end() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    for i in 0..7 {
        run(&mut s, &format!("SET k{i} v"));
    }
    let walked: Vec<(usize, bool)> = (0..4)
        .map(|_| {
            let step = e.expire_step(3).unwrap();
            (step.walked, step.wrapped)
        })
        .collect();
    assert_eq!(walked, [(3, false), (3, false), (1, true), (3, false)]);
}

#[test]
fn a_key_whose_stripe_is_held_is_left_for_the_next_cycle() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    run(&mut s, "SET busy v PX 1");
    std::thread::sleep(std::time::Duration::from_millis(5));
    let guard = e.store.lock_keys(std::iter::once(&b"busy"[..]));
    assert_eq!(e.expire_step(10).unwrap().deleted, 0);
    drop(guard);
    assert_eq!(e.expire_step(10).unwrap().deleted, 1);
    assert_eq!(run(&mut s, "DBSIZE"), Reply::Integer(0));
}

#[test]
fn the_count_survives_a_restart_without_the_keys_that_expired() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    for i in 0..50 {
        run(&mut s, &format!("SET k{i} v"));
    }
    run(&mut s, "SADD set a b c");
    run(&mut s, "SET t v EX 100");
    run(&mut s, "SET short v PX 1");
    std::thread::sleep(std::time::Duration::from_millis(5));
    drop(s);
    let Ok(only) = std::sync::Arc::try_unwrap(e) else {
        panic!("shared")
    };
    only.close().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    // The key that expired while the server was down was deleted at open, as Redis
    // does not load one.
    assert_eq!(run(&mut s, "DBSIZE"), Reply::Integer(52));
    assert_eq!(e.store.counts.expiring(), 1);
    assert_eq!(e.db().get(b"short").unwrap(), None);
}

#[test]
fn a_cycle_walks_nothing_while_no_key_has_an_expiry() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    for i in 0..20 {
        run(&mut s, &format!("SET k{i} v"));
    }
    assert_eq!(e.expire_cycle().unwrap(), ExpireStep::default());
    run(&mut s, "SET gone v PX 1");
    std::thread::sleep(std::time::Duration::from_millis(5));
    let cycle = e.expire_cycle().unwrap();
    assert_eq!((cycle.walked, cycle.deleted, cycle.wrapped), (21, 1, true));
    assert_eq!(e.expire_cycle().unwrap(), ExpireStep::default());
}
