//! BOOM with several client processes at once: each process PUTs, GETs and overwrites
//! (in place, by the hybrid update) its own keys and checks every GET against its own
//! model, and reads the other processes' keys; clients and the server are SIGKILLed at
//! random points. After each crash a fresh server must hold, for every key, the last
//! acknowledged value or the one write that was in flight, and never a torn value.
//!
//! A client process is this test binary run again with `TERRACE_BOOM_CHILD` set: it
//! prints `W key n` before it sends a PUT and `A key n version` once it is
//! acknowledged, so the parent knows what was acknowledged even of a process it killed.
//! Seeds come from the clock unless `TERRACE_CRASH_SEED` is set; a failure prints them.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use terrace_boom::{BoomClient, ClientOptions};

use super::{Server, Value};

/// Keys per client process per round: few, so keys are overwritten often and the hybrid
/// update writes in place.
const KEYS: u64 = 40;

/// A small deterministic generator (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

fn key(round: u32, client: u32, j: u64) -> String {
    format!("r{round}c{client}k{j}")
}

/// Every value of `key` has the same length, so a new version fits the bytes of an
/// older one and may be written in place.
fn value_len(key: &str) -> usize {
    let h = key.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    32 + (h % 96) as usize
}

/// The `n`th value a client writes to `key`: `key:n:` then filler that depends on `n`.
fn value(key: &str, n: u64) -> Vec<u8> {
    let mut v = format!("{key}:{n}:").into_bytes();
    v.resize(value_len(key), b'a' + (n % 26) as u8);
    v
}

/// Which write of `key` `v` is; panics on a value no client wrote (a torn or foreign one).
fn parse_value(key: &str, v: &[u8]) -> u64 {
    let text = String::from_utf8_lossy(v);
    let mut parts = text.splitn(3, ':');
    let (k, n) = (parts.next(), parts.next().and_then(|n| n.parse().ok()));
    match (k, n) {
        (Some(k), Some(n)) if k == key && v == value(key, n).as_slice() => n,
        _ => panic!("{key} holds a value no client wrote: {text:?}"),
    }
}

/// Run by the crash tests as a client process; alone it has nothing to do.
#[test]
#[ignore = "a client process of the BOOM crash tests, run with TERRACE_BOOM_CHILD set"]
fn boom_client_process() {
    let spec = std::env::var("TERRACE_BOOM_CHILD").expect("TERRACE_BOOM_CHILD");
    let f: Vec<&str> = spec.split('|').collect();
    let socket = PathBuf::from(f[0]);
    let (client, round, clients): (u32, u32, u32) = (
        f[1].parse().unwrap(),
        f[2].parse().unwrap(),
        f[3].parse().unwrap(),
    );
    let (ops, seed): (u64, u64) = (f[4].parse().unwrap(), f[5].parse().unwrap());
    // A lost server is what the crash tests do to it: exit quietly with code 3.
    let lost = |e: terrace_boom::BoomError| -> ! {
        eprintln!("client {client}: the server is gone: {e}");
        std::process::exit(3)
    };
    let options = ClientOptions {
        hybrid: true,
        ..ClientOptions::default()
    };
    let mut c = BoomClient::connect_unix_with(&socket, b"", options).unwrap_or_else(|e| lost(e));
    let mut rng = Rng(seed);
    let mut model: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for n in 0..ops {
        let r = rng.next();
        let k = key(round, client, r % KEYS);
        match (r >> 32) % 10 {
            0..=5 => {
                let v = value(&k, n);
                println!("W {k} {n}");
                let version = c.put(k.as_bytes(), &v).unwrap_or_else(|e| lost(e));
                println!("A {k} {n} {version}");
                model.insert(k, v);
            }
            6..=8 => {
                let got = c.get(k.as_bytes()).unwrap_or_else(|e| lost(e));
                assert_eq!(got.as_ref(), model.get(&k), "client {client}: GET {k}");
            }
            _ => {
                let other = key(round, (r >> 40) as u32 % clients, r % KEYS);
                if let Some(v) = c.get(other.as_bytes()).unwrap_or_else(|e| lost(e)) {
                    parse_value(&other, &v);
                }
            }
        }
    }
    println!("DONE");
}

/// A client process and the whole lines it printed.
struct ClientProcess {
    child: std::process::Child,
    lines: Arc<Mutex<Vec<String>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl ClientProcess {
    fn start(socket: &Path, client: u32, round: u32, clients: u32, ops: u64, seed: u64) -> Self {
        let spec = format!(
            "{}|{client}|{round}|{clients}|{ops}|{seed}",
            socket.display()
        );
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "boom_crash::boom_client_process",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
                "-q",
            ])
            .env("TERRACE_BOOM_CHILD", spec)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let sink = lines.clone();
        let reader = std::thread::spawn(move || {
            let mut line = Vec::new();
            // A line cut off by a kill has no newline: it was never printed whole.
            while matches!(out.read_until(b'\n', &mut line), Ok(n) if n > 0) {
                if line.ends_with(b"\n") {
                    let text = String::from_utf8_lossy(&line).trim_end().to_string();
                    sink.lock().unwrap().push(text);
                }
                line.clear();
            }
        });
        ClientProcess {
            child,
            lines,
            reader: Some(reader),
        }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
    }

    /// Waits for the process; returns its exit code (None when killed) and its lines.
    fn finish(mut self) -> (Option<i32>, Vec<String>) {
        let status = self.child.wait().unwrap();
        if let Some(r) = self.reader.take() {
            r.join().unwrap();
        }
        let lines = std::mem::take(&mut *self.lines.lock().unwrap());
        (status.code(), lines)
    }
}

impl Drop for ClientProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What may be found under a key: its last acknowledged write and a later write that
/// was in flight when its client or the server died.
#[derive(Debug, Default, Clone, Copy)]
struct Expect {
    acked: Option<u64>,
    in_flight: Option<u64>,
}

/// Folds a client's lines into `expect`.
fn record(expect: &mut BTreeMap<String, Expect>, lines: &[String]) {
    for line in lines {
        let f: Vec<&str> = line.split(' ').collect();
        match f.as_slice() {
            ["W", k, n] => {
                expect.entry(k.to_string()).or_default().in_flight = Some(n.parse().unwrap());
            }
            ["A", k, n, _version] => {
                let e = expect.entry(k.to_string()).or_default();
                e.acked = Some(n.parse().unwrap());
                e.in_flight = None;
            }
            _ => {}
        }
    }
}

/// Reads every key of `expect` with a fresh client and checks it.
fn verify(socket: &Path, expect: &BTreeMap<String, Expect>, seed: u64) {
    let mut c = BoomClient::connect_unix(socket, b"").unwrap();
    for (k, e) in expect {
        let got = c.get(k.as_bytes()).unwrap().map(|v| parse_value(k, &v));
        let ok = got == e.acked || (got.is_some() && got == e.in_flight);
        assert!(ok, "seed {seed}: {k} holds write {got:?}, expected {e:?}");
    }
}

fn boom_server(dir: &Path, extra: &[&str]) -> (Server, PathBuf) {
    let socket = dir.join("boom.sock");
    let mut args = vec![
        "--boom-socket",
        socket.to_str().unwrap(),
        "--boom-segment-bytes",
        "262144",
        "--boom-segments",
        "64",
    ];
    args.extend_from_slice(extra);
    (Server::start(&dir.join("db"), &args), socket)
}

fn seed() -> u64 {
    let seed = std::env::var("TERRACE_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
    eprintln!("seed {seed} (TERRACE_CRASH_SEED reruns it)");
    seed
}

#[test]
fn client_processes_agree_with_their_models_and_killed_ones_lose_no_acknowledged_put() {
    let seed = seed();
    let mut rng = Rng(seed);
    let tmp = tempfile::tempdir().unwrap();
    let (s, socket) = boom_server(tmp.path(), &[]);
    let clients = 4;
    let mut procs: Vec<ClientProcess> = (0..clients)
        .map(|c| ClientProcess::start(&socket, c, 0, clients, 3000, rng.next()))
        .collect();
    // Two of them die at random points, mid-write or not.
    std::thread::sleep(Duration::from_millis(50 + rng.next() % 250));
    procs[1].kill();
    std::thread::sleep(Duration::from_millis(rng.next() % 100));
    procs[3].kill();
    let mut expect = BTreeMap::new();
    for (i, p) in procs.into_iter().enumerate() {
        let (code, lines) = p.finish();
        if i % 2 == 0 {
            assert_eq!(code, Some(0), "seed {seed}: client {i} failed");
            assert!(lines.iter().any(|l| l == "DONE"), "seed {seed}: client {i}");
        }
        record(&mut expect, &lines);
    }
    assert!(expect.len() > 40, "seed {seed}: too few keys written");
    verify(&socket, &expect, seed);
    // And after a clean restart.
    assert!(s.terminate().success());
    let (s, socket) = boom_server(tmp.path(), &[]);
    verify(&socket, &expect, seed);
    assert!(s.terminate().success());
}

#[test]
fn server_sigkilled_at_random_points_loses_no_acknowledged_put() {
    let seed = seed();
    let mut rng = Rng(seed);
    let tmp = tempfile::tempdir().unwrap();
    let mut expect = BTreeMap::new();
    let mut acked = 0;
    for round in 0..4u32 {
        // The engine's own unsynced files die with the process: what survives of BOOM's
        // writes is what their segments kept.
        let (s, socket) = boom_server(tmp.path(), &["--fsync", "no", "--internal-fault-storage"]);
        verify(&socket, &expect, seed);
        // The control: a RESP write the engine's own unsynced log holds dies with the
        // process, so the BOOM writes found after a restart came from their segments.
        if round > 0 {
            let key = format!("GET resp-unsynced-{}", round - 1);
            assert_eq!(s.client().cmd(&key), Value::Nil, "seed {seed}");
        }
        s.client().cmd(&format!("SET resp-unsynced-{round} x"));
        let clients = 3;
        let mut procs: Vec<ClientProcess> = (0..clients)
            .map(|c| ClientProcess::start(&socket, c, round, clients, 1_000_000, rng.next()))
            .collect();
        std::thread::sleep(Duration::from_millis(200 + rng.next() % 500));
        if rng.next().is_multiple_of(2) {
            procs[0].kill();
        }
        std::thread::sleep(Duration::from_millis(rng.next() % 100));
        s.kill();
        for (i, p) in procs.into_iter().enumerate() {
            let (code, lines) = p.finish();
            assert!(
                code.is_none() || code == Some(3),
                "seed {seed}: client {i} of round {round} exited with {code:?}"
            );
            acked += lines.iter().filter(|l| l.starts_with("A ")).count();
            record(&mut expect, &lines);
        }
    }
    eprintln!("{acked} PUTs acknowledged over {} keys", expect.len());
    assert!(
        acked > 100,
        "seed {seed}: only {acked} PUTs were acknowledged"
    );
    let (s, socket) = boom_server(tmp.path(), &[]);
    verify(&socket, &expect, seed);
    assert!(s.terminate().success());
}
