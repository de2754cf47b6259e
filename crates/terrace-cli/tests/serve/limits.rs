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
