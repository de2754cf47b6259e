//! Server mode against a stand-in Redis: a loopback listener that answers GET, SET and
//! INFO as Redis does (no `engine` section) and TRANGE with Redis's unknown-command
//! error, so that workload E's "unsupported" path and the "-" engine figures are checked
//! without a Redis installation. `terrace serve` itself is driven end to end by
//! terrace-cli's tests/bench_server.rs.

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::io::{BufReader, BufWriter, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use terrace_bench::resp_client::{read_reply, Reply};
use terrace_bench::{run, BenchError, Counters, Flags};

/// Starts the stand-in on an ephemeral port; it lives until the test process ends.
fn stand_in() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let data = Arc::new(Mutex::new(HashMap::<Vec<u8>, Vec<u8>>::new()));
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            let data = data.clone();
            std::thread::spawn(move || {
                let mut r = BufReader::new(conn.try_clone().unwrap());
                let mut w = BufWriter::new(conn);
                while let Ok(Reply::Array(Some(args))) = read_reply(&mut r) {
                    let args: Vec<Vec<u8>> = args
                        .into_iter()
                        .map(|a| match a {
                            Reply::Bulk(Some(b)) => b,
                            _ => Vec::new(),
                        })
                        .collect();
                    let name = String::from_utf8_lossy(&args[0]).to_ascii_uppercase();
                    let reply: Vec<u8> = match name.as_str() {
                        "SET" => {
                            data.lock()
                                .unwrap()
                                .insert(args[1].clone(), args[2].clone());
                            b"+OK\r\n".to_vec()
                        }
                        "GET" => match data.lock().unwrap().get(&args[1]) {
                            Some(v) => {
                                let mut out = format!("${}\r\n", v.len()).into_bytes();
                                out.extend_from_slice(v);
                                out.extend_from_slice(b"\r\n");
                                out
                            }
                            None => b"$-1\r\n".to_vec(),
                        },
                        "INFO" => b"$0\r\n\r\n".to_vec(),
                        _ => format!(
                            "-ERR unknown command '{}', with args beginning with: \r\n",
                            String::from_utf8_lossy(&args[0])
                        )
                        .into_bytes(),
                    };
                    if w.write_all(&reply).and_then(|()| w.flush()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("redis://{addr}")
}

#[test]
fn ycsb_runs_over_resp_and_e_is_unsupported_without_trange() {
    let target = stand_in();
    let flags = Flags::parse([
        format!("--target={target}"),
        "--benchmarks=ycsb_load,ycsb_a,ycsb_e,ycsb_f".into(),
        "--num=100".into(),
        "--reads=50".into(),
        "--threads=2".into(),
        "--pipeline=8".into(),
        "--noprogress".into(),
    ])
    .unwrap();
    let mut out = Vec::new();
    let results = run(&flags, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let names: Vec<&str> = results.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["ycsb_load", "ycsb_a", "ycsb_f"], "{text}");
    assert!(
        text.contains("ycsb_e       : unsupported by the server"),
        "{text}"
    );
    assert_eq!(results[0].ops, 100);
    // Every record was loaded, so every read and read-modify-write finds its key.
    assert_eq!(results[1].ops, 100);
    assert_eq!(results[1].found, results[1].by_op["read"].count);
    assert_eq!(results[2].found, 100);
    for r in &results {
        assert_eq!(r.counters, Counters::None);
    }
    assert!(text.contains("  write amplification: -\n"), "{text}");
    assert!(text.contains("  compaction by output level: -\n"), "{text}");
    assert!(text.contains("  stalls: -;"), "{text}");
}

#[test]
fn server_mode_refuses_engine_benchmarks_and_unreachable_servers() {
    let flags = Flags::parse(["--target=redis://127.0.0.1:1", "--benchmarks=fillrandom"]).unwrap();
    let e = run(&flags, &mut Vec::new()).unwrap_err();
    assert!(matches!(e, BenchError::NotInServerMode(_)), "{e}");

    let free = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let flags = Flags::parse([format!("--target=redis://127.0.0.1:{port}")]).unwrap();
    let flags = Flags {
        benchmarks: vec!["ycsb_load".into()],
        ..flags
    };
    let e = run(&flags, &mut Vec::new()).unwrap_err();
    assert!(matches!(e, BenchError::Connect { .. }), "{e}");
    assert!(
        e.to_string()
            .starts_with("cannot connect to redis://127.0.0.1:"),
        "{e}"
    );

    for bad in [
        "--target=127.0.0.1:6379",
        "--target=redis://h:1/2",
        "--pipeline=0",
    ] {
        assert!(Flags::parse([bad]).is_err(), "{bad}");
    }
}
