//! Commands, pipelining, inline commands, transactions and concurrent clients.

use super::{Client, Server, Value};

#[test]
fn strings_pipelining_and_inline() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start(tmp.path(), &[]);
    let mut c = s.client();
    assert_eq!(c.cmd("PING"), Value::Status("PONG".into()));
    assert_eq!(c.cmd("SET k v EX 100"), Value::Status("OK".into()));
    assert_eq!(c.cmd("GET k"), Value::bulk("v"));
    // 1000 commands in one write; replies in order.
    let mut batch = Vec::new();
    for i in 0..1000 {
        batch.extend(Client::encode(&[b"INCR", b"n"]));
        if i % 100 == 0 {
            batch.extend_from_slice(b"PING\r\n");
        }
    }
    c.send_raw(&batch);
    let mut last = 0;
    for i in 0..1000 {
        let Some(Value::Int(n)) = c.read() else {
            panic!()
        };
        assert_eq!(n, last + 1);
        last = n;
        if i % 100 == 0 {
            assert_eq!(c.read(), Some(Value::Status("PONG".into())));
        }
    }
    let Value::Array(hello) = c.cmd("HELLO 3") else {
        panic!()
    };
    assert!(hello.contains(&Value::Int(3)));
    // RESP3 null.
    assert_eq!(c.cmd("GET missing"), Value::Nil);
    c.send_raw(b"SET inline \"a b\"\r\nGET inline\r\n");
    assert_eq!(c.read(), Some(Value::Status("OK".into())));
    assert_eq!(c.read(), Some(Value::bulk("a b")));
}

#[test]
fn transactions_and_watch_across_connections() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start(tmp.path(), &[]);
    let (mut a, mut b) = (s.client(), s.client());
    assert_eq!(a.cmd("WATCH w"), Value::Status("OK".into()));
    b.cmd("SET w 1");
    a.cmd("MULTI");
    assert_eq!(a.cmd("SET w 2"), Value::Status("QUEUED".into()));
    assert_eq!(a.cmd("EXEC"), Value::Nil);
    a.cmd("MULTI");
    a.cmd("INCR w");
    a.cmd("GET w");
    assert_eq!(
        a.cmd("EXEC"),
        Value::Array(vec![Value::Int(2), Value::bulk("2")])
    );
}

#[test]
fn concurrent_clients_lose_no_increment() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start(tmp.path(), &[]);
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let addr = s.addr.clone();
            std::thread::spawn(move || {
                let mut c = Client::connect(&addr);
                for _ in 0..300 {
                    let Value::Int(_) = c.cmd("INCR counter") else {
                        panic!()
                    };
                    c.cmd("APPEND trail x");
                }
                // A transaction of read-modify-writes interleaves with the others.
                c.cmd("MULTI");
                c.cmd("INCRBY counter 10");
                c.cmd("EXEC");
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut c = s.client();
    assert_eq!(
        c.cmd("GET counter"),
        Value::bulk(&(8 * 300 + 80).to_string())
    );
    assert_eq!(c.cmd("STRLEN trail"), Value::Int(8 * 300));
}

#[test]
fn print_config_shows_defaults() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_terrace"))
        .args(["serve", "--print-config", "--fsync", "always"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("port = 6380"), "{text}");
    assert!(text.contains("bind = \"127.0.0.1\""), "{text}");
    assert!(text.contains("dir = \"terrace-data\""), "{text}");
    assert!(text.contains("fsync = \"always\""), "{text}");
    // Settings whose default depends on the machine show what they come to here.
    assert!(text.contains("reader_threads = "), "{text}");
}

#[test]
fn config_file_is_read_and_flags_override_it() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("terrace.toml");
    std::fs::write(&file, "port = 7000\nmaxclients = 5\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_terrace"))
        .args(["serve", "--print-config", "--port", "7001", "--config"])
        .arg(&file)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("port = 7001") && text.contains("maxclients = 5"),
        "{text}"
    );
}

#[test]
fn metrics_endpoint_serves_prometheus_text() {
    use std::io::{Read, Write};
    let tmp = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let s = Server::start(tmp.path(), &["--metrics-port", &port.to_string()]);
    s.client().cmd("SET k v");
    let mut http = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    http.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    http.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
    assert!(text.contains("terrace_commands_total 1"), "{text}");
    assert!(
        text.contains("terrace_command_latency_seconds_bucket"),
        "{text}"
    );
}

#[test]
fn client_list_shows_the_socket_buffers_and_queued_transaction() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start(tmp.path(), &[]);
    let mut watcher = s.client();
    let mut c = s.client();
    assert_eq!(c.cmd("CLIENT SETNAME queued"), Value::Status("OK".into()));
    assert_eq!(c.cmd("MULTI"), Value::Status("OK".into()));
    assert_eq!(c.cmd("SET key value"), Value::Status("QUEUED".into()));
    let Value::Bulk(list) = watcher.cmd("CLIENT LIST") else {
        panic!("CLIENT LIST answers a bulk string")
    };
    let list = String::from_utf8(list).unwrap();
    let line = list
        .lines()
        .find(|l| l.contains(" name=queued "))
        .unwrap_or_else(|| panic!("{list}"));
    let field = |name: &str| -> String {
        line.split(' ')
            .find_map(|f| f.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("no {name} in {line}"))
            .to_string()
    };
    // The server's own address, a real descriptor, nothing waiting in either buffer,
    // and the queued command's arguments ("SET", "key", "value": 11 bytes).
    assert_eq!(field("laddr"), s.addr);
    assert!(field("fd").parse::<i64>().unwrap() > 2, "{line}");
    assert_eq!(field("qbuf"), "0");
    assert!(field("qbuf-free").parse::<u64>().unwrap() > 0, "{line}");
    assert_eq!(field("obl"), "0");
    assert_eq!(field("multi"), "1");
    assert_eq!(field("multi-mem"), "11");
    assert_eq!(field("events"), "r");
    assert_eq!(field("flags"), "x");
}

#[test]
fn an_idle_client_killed_by_another_is_closed_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start(tmp.path(), &[]);
    let mut idle = s.client();
    let Value::Int(id) = idle.cmd("CLIENT ID") else {
        panic!("CLIENT ID is not an integer");
    };
    let mut admin = s.client();
    assert_eq!(admin.cmd(&format!("CLIENT KILL ID {id}")), Value::Int(1));
    // Closed without waiting for its next request (a read that timed out would also
    // read as the end of the stream, but only after 5 s).
    idle.read_timeout(std::time::Duration::from_secs(5));
    let start = std::time::Instant::now();
    assert_eq!(idle.read(), None);
    assert!(
        start.elapsed() < std::time::Duration::from_secs(4),
        "not closed"
    );
    assert_eq!(admin.cmd("PING"), Value::Status("PONG".into()));
}
