//! CONFIG SET on a running server: limits and the idle timeout reach the connections
//! already open.

use std::time::Duration;

use super::{Server, Value};

#[test]
fn limits_set_at_runtime_apply_to_open_connections() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start(tmp.path(), &[]);
    let mut admin = s.client();
    let mut open = s.client();
    assert_eq!(open.cmd("PING"), Value::Status("PONG".into()));
    let value = vec![b'v'; 5000];
    assert_eq!(
        open.cmd_args(&[b"SET", b"k", &value]),
        Value::Status("OK".into())
    );
    assert_eq!(
        admin.cmd("CONFIG SET proto-max-bulk-len 2048"),
        Value::Status("OK".into())
    );
    // The connection opened before the change: its next 5,000-byte bulk is refused.
    open.send_raw(&super::Client::encode(&[b"SET", b"k", &value]));
    assert_eq!(
        open.read(),
        Some(Value::Error(
            "ERR Protocol error: invalid bulk length".into()
        ))
    );
    assert_eq!(open.read(), None);
    assert_eq!(
        admin.cmd("CONFIG SET proto-max-bulk-len 512mb client-query-buffer-limit 4096"),
        Value::Status("OK".into())
    );
    // A command that would leave more than 4096 bytes buffered unfinished.
    let mut c = s.client();
    let mut partial = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000\r\n".to_vec();
    partial.extend(vec![b'x'; 8000]);
    c.send_raw(&partial);
    assert_eq!(
        c.read(),
        Some(Value::Error(
            "ERR Protocol error: query buffer limit exceeded".into()
        ))
    );
    assert_eq!(admin.cmd("GET k"), Value::Bulk(value));
}

#[test]
fn idle_clients_are_closed_after_the_timeout() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start(tmp.path(), &["--timeout", "1"]);
    let mut c = s.client();
    assert_eq!(c.cmd("PING"), Value::Status("PONG".into()));
    std::thread::sleep(Duration::from_millis(2500));
    // Closed without a reply.
    assert_eq!(c.read(), None);
    drop(s);
    // Set while running: a connection idle since before the change is closed too, and
    // timeout 0 turns it off again.
    let s = Server::start(tmp.path(), &[]);
    let mut idle = s.client();
    assert_eq!(idle.cmd("PING"), Value::Status("PONG".into()));
    let mut admin = s.client();
    assert_eq!(
        admin.cmd("CONFIG SET timeout 1"),
        Value::Status("OK".into())
    );
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(idle.read(), None);
    let mut admin = s.client();
    assert_eq!(
        admin.cmd("CONFIG SET timeout 0"),
        Value::Status("OK".into())
    );
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(admin.cmd("PING"), Value::Status("PONG".into()));
}
