//! The in-process power cut: BOOM clients PUT and overwrite their keys (in place too,
//! by the hybrid update) while the engine flushes and releases segments; one cut then
//! stops the engine's storage and the region's persists at the same instant, and each
//! line of the region and of the server's metadata written since it was last persisted
//! survives or not, at random. After recovery every acknowledged PUT must be there and
//! no value torn. The negative control makes persists lie (succeed without making
//! anything durable) and must see acknowledged PUTs lost.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::Running;
use terrace::storage::{FaultStorage, FsStorage, PointFilter, PointKind, PowerSupply};
use terrace::{Db, Options};
use terrace_boom::{BoomClient, BoomStore, ClientOptions, StoreConfig};

/// Every value of a key has the same length, so a new version fits an older one's bytes.
fn value(key: &str, n: u64) -> Vec<u8> {
    let mut v = format!("{key}:{n}:").into_bytes();
    let len = 24 + key.bytes().map(usize::from).sum::<usize>() % 64;
    v.resize(len, b'a' + (n % 26) as u8);
    v
}

/// Which write of `key` `v` is; panics on a torn or foreign value.
fn parse(key: &str, v: &[u8]) -> u64 {
    let text = String::from_utf8_lossy(v);
    let n = text
        .strip_prefix(&format!("{key}:"))
        .and_then(|rest| rest.split(':').next())
        .and_then(|n| n.parse().ok());
    match n {
        Some(n) if v == value(key, n).as_slice() => n,
        _ => panic!("{key} holds a value no client wrote: {text:?}"),
    }
}

fn config() -> StoreConfig {
    StoreConfig {
        segment_bytes: 64 << 10,
        segments: 32,
    }
}

/// A key's last acknowledged write and a later one in flight at the cut.
#[derive(Debug, Default, Clone, Copy)]
struct Expect {
    acked: Option<u64>,
    in_flight: Option<u64>,
}

/// Runs clients until the cut, recovers, and returns (acknowledged PUTs, keys whose
/// last acknowledged write is missing). A store that cannot be opened lost everything.
fn power_cut(seed: u64, lie: bool) -> (usize, usize) {
    let dir = tempfile::tempdir().unwrap();
    let power = Arc::new(PowerSupply::new());
    let store = BoomStore::open(&dir.path().join("boom"), config()).unwrap();
    store.set_power(power.clone()).unwrap();
    let fault = FaultStorage::with_power(Arc::new(FsStorage::new()), power.clone());
    let opts = Options {
        storage: Arc::new(fault.clone()),
        write_buffer_size: 32 << 10,
        ..Options::default()
    };
    if lie {
        power.lie(PointFilter::any().of_kinds(&[PointKind::Persist]));
    }
    let run = Running::serve(dir.path(), store.clone(), opts.clone(), b"");
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..3u64)
        .map(|t| {
            let (socket, stop) = (run.socket.clone(), stop.clone());
            std::thread::spawn(move || {
                let options = ClientOptions {
                    hybrid: true,
                    ..ClientOptions::default()
                };
                let mut c = BoomClient::connect_unix_with(&socket, b"", options).unwrap();
                let mut expect: BTreeMap<String, Expect> = BTreeMap::new();
                let mut acked = 0;
                for n in 0u64.. {
                    if stop.load(Ordering::Acquire) {
                        break;
                    }
                    let key = format!("c{t}k{}", (n * 7 + seed) % 30);
                    let e = expect.entry(key.clone()).or_default();
                    e.in_flight = Some(n);
                    if c.put(key.as_bytes(), &value(&key, n)).is_err() {
                        break;
                    }
                    *e = Expect {
                        acked: Some(n),
                        in_flight: None,
                    };
                    acked += 1;
                }
                eprintln!("client {t}: {acked} acknowledged");
                (expect, acked)
            })
        })
        .collect();
    // Flushes and segment releases under way, then the cut at a point the seed picks.
    let start = std::time::Instant::now();
    while run.db.stats().flushes < 2 && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(seed * 37 % 150));
    power.cut_now();
    stop.store(true, Ordering::Release);
    let mut expect = BTreeMap::new();
    let mut acked = 0;
    for c in clients {
        let (e, n) = c.join().unwrap();
        expect.extend(e);
        acked += n;
    }
    assert!(
        run.db.stats().flushes > 0,
        "the test needs flushes before the cut"
    );
    let db = run.db.clone();
    run.stop();
    drop(db);
    // Nothing writes the files any more: now the cut takes what was not persisted.
    let lost_lines = store.lose_unpersisted(seed).unwrap();
    drop(store);
    power.restore();
    fault.simulate_crash().unwrap();
    eprintln!("seed {seed}: {acked} PUTs acknowledged, {lost_lines} unpersisted lines lost");

    let reopened = BoomStore::open(&dir.path().join("boom"), config()).and_then(|store| {
        let opts = Options {
            external_log: Some(store.clone()),
            ..opts
        };
        Db::open(dir.path().join("db"), opts).map_err(terrace_boom::BoomError::from)
    });
    let Ok(db) = reopened else {
        return (acked, expect.len());
    };
    let lost = expect
        .iter()
        .filter(|(k, e)| {
            let got = db.get(k.as_bytes()).unwrap().map(|v| parse(k, &v));
            let bad = !(got == e.acked || (got.is_some() && got == e.in_flight));
            if bad {
                eprintln!("seed {seed}: {k} holds {got:?}, expected {e:?}");
            }
            bad
        })
        .count();
    (acked, lost)
}

#[test]
fn a_power_cut_loses_no_acknowledged_put_and_tears_no_value() {
    for seed in [1, 2, 3] {
        let (acked, lost) = power_cut(seed, false);
        assert!(acked > 200, "seed {seed}: only {acked} PUTs before the cut");
        assert_eq!(lost, 0, "seed {seed}");
    }
}

#[test]
fn negative_control_persists_that_lie_lose_acknowledged_puts() {
    let lost: usize = [1, 2, 3].iter().map(|&s| power_cut(s, true).1).sum();
    assert!(lost > 0, "the checker saw nothing lost with lying persists");
}
