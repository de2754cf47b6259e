//! `terrace bench --target` against a real `terrace serve`: both are the built binary,
//! the server on an ephemeral loopback port over a temporary directory.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// A running `terrace serve`, killed when dropped.
struct Server {
    child: Child,
    port: String,
}

impl Server {
    fn start(dir: &std::path::Path) -> Server {
        Self::start_with(dir, &[])
    }

    fn start_with(dir: &std::path::Path, extra: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_terrace"))
            .args(["serve", "--port", "0", "--dir"])
            .arg(dir)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let port = loop {
            let line = lines
                .next()
                .expect("server exited before listening")
                .unwrap();
            if let Some(a) = line.strip_prefix("listening on ") {
                break a.rsplit(':').next().unwrap().to_string();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        Server { child, port }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn bench_drives_terrace_serve_over_resp() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("db"));
    let json = dir.path().join("out.json");
    let out = Command::new(env!("CARGO_BIN_EXE_terrace"))
        .arg("bench")
        .arg(format!("--target=redis://127.0.0.1:{}", server.port))
        .args([
            "--benchmarks=ycsb_load,ycsb_a,ycsb_e",
            "--num=200",
            "--reads=200",
            "--threads=2",
            "--pipeline=4",
        ])
        .arg(format!("--json={}", json.display()))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("Target:     redis://127.0.0.1:"), "{text}");
    assert!(text.contains("Connections: 2"), "{text}");
    // One db_bench line per benchmark, with the operation counts of the run.
    let line = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{name:<12} : ")))
            .unwrap_or_else(|| panic!("no {name} line in\n{text}"))
            .to_string()
    };
    assert!(line("ycsb_load").contains(" 200 operations;"), "{text}");
    assert!(line("ycsb_load").contains("(insert: 200)"), "{text}");
    assert!(line("ycsb_a").contains(" 400 operations;"), "{text}");
    let e = line("ycsb_e");
    assert!(
        e.contains(" 400 operations;") && e.contains("scan: "),
        "{e}"
    );
    assert_eq!(text.matches("  latency micros: p50 ").count(), 3, "{text}");
    // terrace serve has an engine section in INFO: write amplification is a number.
    assert!(!text.contains("write amplification: -"), "{text}");

    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let benches = doc["benchmarks"].as_array().unwrap();
    assert_eq!(benches.len(), 3);
    assert_eq!(benches[1]["ops"], 400);
    assert_eq!(benches[1]["counters"], "server_info");
    // Every loaded record is found by workload A's reads.
    assert_eq!(benches[1]["found"], benches[1]["by_op"]["read"]["count"]);
}

#[test]
fn bench_reports_a_refused_connection() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let out = Command::new(env!("CARGO_BIN_EXE_terrace"))
        .args(["bench", &format!("--target=redis://127.0.0.1:{port}")])
        .args(["--benchmarks=ycsb_load", "--num=10"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("cannot connect to redis://127.0.0.1:{port}")),
        "{err}"
    );
}

#[test]
fn bench_drives_terrace_serve_over_boom_and_its_two_phase_baseline() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("boom.sock");
    let _server = Server::start_with(
        &dir.path().join("db"),
        &[
            "--boom-socket",
            socket.to_str().unwrap(),
            "--boom-segment-bytes",
            "1048576",
        ],
    );
    for (scheme, verbs, trips) in [
        ("boom", "verbs/op 2.00", "round trips/op 1.00"),
        ("boom2", "verbs/op", "round trips/op 2.00"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_terrace"))
            .arg("bench")
            .arg(format!("--target={scheme}://{}", socket.display()))
            .args([
                "--benchmarks=ycsb_load,ycsb_c,ycsb_f",
                "--num=300",
                "--reads=300",
                "--threads=2",
                "--noprogress",
            ])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let c = text.lines().find(|l| l.starts_with("ycsb_c")).unwrap();
        assert!(
            c.contains("read: 600") && c.contains(verbs) && c.contains(trips),
            "{c}"
        );
        assert!(c.contains("600 operations"), "{c}");
    }
    // A scan workload and pipelining are refused before anything runs.
    for bad in ["--benchmarks=ycsb_e", "--pipeline=4"] {
        let out = Command::new(env!("CARGO_BIN_EXE_terrace"))
            .arg("bench")
            .arg(format!("--target=boom://{}", socket.display()))
            .arg(bad)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{bad}");
    }
}
