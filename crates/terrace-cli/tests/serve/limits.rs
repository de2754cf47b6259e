//! Bad input, limits and security: protocol errors, big values, maxclients, requirepass,
//! protected mode.

use super::{Client, Server, Value};

#[test]
fn malformed_request_closes_only_that_connection() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start(tmp.path(), &[]);
    let mut good = s.client();
    let mut bad = s.client();
    bad.send_raw(b"*1\r\n+PING\r\n");
    let Some(Value::Error(e)) = bad.read() else {
        panic!()
    };
    assert!(e.starts_with("ERR Protocol error"), "{e}");
    assert_eq!(bad.read(), None);
    assert_eq!(good.cmd("PING"), Value::Status("PONG".into()));
}

#[test]
fn oversized_claims_are_refused_without_allocating() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start(tmp.path(), &["--proto-max-bulk-len", "1024"]);
    let mut c = s.client();
    // Claims 4 GiB and 2^40 arguments; refused at the header.
    c.send_raw(b"*1\r\n$4294967296\r\n");
    let Some(Value::Error(e)) = c.read() else {
        panic!()
    };
    assert!(e.contains("invalid bulk length"), "{e}");
    let mut c = s.client();
    c.send_raw(b"*1099511627776\r\n");
    let Some(Value::Error(e)) = c.read() else {
        panic!()
    };
    assert!(e.contains("invalid multibulk length"), "{e}");
    assert_eq!(s.client().cmd("PING"), Value::Status("PONG".into()));
}

#[test]
fn a_64_mib_value_round_trips() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start(tmp.path(), &[]);
    let mut c = s.client();
    let value: Vec<u8> = (0..64u32 << 20).map(|i| (i % 251) as u8).collect();
    assert_eq!(
        c.cmd_args(&[b"SET", b"big", &value]),
        Value::Status("OK".into())
    );
    assert_eq!(c.cmd("STRLEN big"), Value::Int(64 << 20));
    assert_eq!(c.cmd_args(&[b"GET", b"big"]), Value::Bulk(value));
}

#[test]
fn maxclients_refuses_extra_connections() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start(tmp.path(), &["--maxclients", "2"]);
    let mut a = s.client();
    let mut b = s.client();
    a.cmd("PING");
    b.cmd("PING");
    let mut c = s.client();
    assert_eq!(
        c.read(),
        Some(Value::Error("ERR max number of clients reached".into()))
    );
    drop(a);
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(s.client().cmd("PING"), Value::Status("PONG".into()));
}

#[test]
fn requirepass_refuses_until_authenticated() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start(tmp.path(), &["--requirepass", "pw"]);
    let mut c = s.client();
    assert_eq!(
        c.cmd("SET k v"),
        Value::Error("NOAUTH Authentication required.".into())
    );
    assert_eq!(c.cmd("AUTH pw"), Value::Status("OK".into()));
    assert_eq!(c.cmd("SET k v"), Value::Status("OK".into()));
}

#[test]
fn protected_mode_refuses_an_open_bind_without_password() {
    let tmp = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_terrace"))
        .args(["serve", "--port", "0", "--bind", "0.0.0.0", "--dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("protected-mode"), "{err}");
    let _ = Client::encode(&[]);
}

#[test]
fn unauthenticated_clients_cannot_make_the_server_buffer_big_requests() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start(tmp.path(), &["--requirepass", "pw"]);
    // A 300 MB claim before AUTH: an error at once, then the connection closes; the
    // server does not wait for (or buffer) the body.
    let mut c = s.client();
    c.read_timeout(std::time::Duration::from_secs(10));
    c.send_raw(b"*1\r\n$300000000\r\n");
    assert_eq!(
        c.read(),
        Some(Value::Error(
            "ERR Protocol error: unauthenticated bulk length".into()
        ))
    );
    assert_eq!(c.read(), None);
    // More than ten arguments before AUTH.
    let mut c = s.client();
    c.read_timeout(std::time::Duration::from_secs(10));
    c.send_raw(b"*11\r\n");
    assert_eq!(
        c.read(),
        Some(Value::Error(
            "ERR Protocol error: unauthenticated multibulk length".into()
        ))
    );
    assert_eq!(c.read(), None);
    // Small commands still get their NOAUTH reply.
    let mut c = s.client();
    assert_eq!(
        c.cmd("GET k"),
        Value::Error("NOAUTH Authentication required.".into())
    );
    // Once authenticated, the configured limits apply: a 1 MiB value, even pipelined
    // right behind the AUTH.
    let value = vec![b'v'; 1 << 20];
    let mut batch = Client::encode(&[b"AUTH", b"pw"]);
    batch.extend(Client::encode(&[b"SET", b"big", &value]));
    c.send_raw(&batch);
    assert_eq!(c.read(), Some(Value::Status("OK".into())));
    assert_eq!(c.read(), Some(Value::Status("OK".into())));
    assert_eq!(c.cmd("STRLEN big"), Value::Int(1 << 20));
}

#[test]
fn metrics_listen_on_loopback_unless_told_otherwise() {
    let free_port = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
            .to_string()
    };
    let tmp = tempfile::tempdir().unwrap();
    // The server on another loopback address: the metrics stay on 127.0.0.1.
    let port = free_port();
    let s = Server::start(
        tmp.path(),
        &["--bind", "127.0.0.2", "--metrics-port", &port],
    );
    assert_eq!(s.banner, vec![format!("metrics on 127.0.0.1:{port}")]);
    drop(s);
    let port = free_port();
    let s = Server::start(
        tmp.path(),
        &["--metrics-port", &port, "--metrics-bind", "127.0.0.3"],
    );
    assert_eq!(s.banner, vec![format!("metrics on 127.0.0.3:{port}")]);
}

#[test]
fn maxclients_is_clamped_to_the_open_files_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let stderr = tmp.path().join("stderr");
    // Soft and hard limit 1100: no raise possible, room for a few dozen clients only.
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c")
        .arg("ulimit -n 1100 && exec \"$0\" serve --port 0 --threads 1 --maxclients 10000 --dir \"$1\"")
        .arg(env!("CARGO_BIN_EXE_terrace"))
        .arg(tmp.path().join("db"))
        .stderr(std::fs::File::create(&stderr).unwrap());
    let s = Server::spawn(cmd);
    let warning = std::fs::read_to_string(&stderr).unwrap();
    assert!(
        warning.contains("maxclients lowered from 10000") && warning.contains("open-files"),
        "{warning}"
    );
    let mut c = s.client();
    let Value::Array(got) = c.cmd("CONFIG GET maxclients") else {
        panic!()
    };
    let Some(Value::Bulk(n)) = got.get(1) else {
        panic!("{got:?}")
    };
    let n: u64 = String::from_utf8_lossy(n).parse().unwrap();
    assert!(n > 0 && n < 1100, "maxclients {n}");
    let Value::Error(e) = c.cmd("CONFIG SET maxclients 10000") else {
        panic!("maxclients over the open-files limit accepted")
    };
    assert!(e.contains("open-files limit"), "{e}");
    assert_eq!(
        c.cmd(&format!("CONFIG SET maxclients {}", n - 1)),
        Value::Status("OK".into())
    );
}
