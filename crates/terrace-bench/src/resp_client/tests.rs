use super::*;

fn parse(bytes: &[u8]) -> std::io::Result<Reply> {
    read_reply(&mut &bytes[..])
}

fn bulk(s: &str) -> Reply {
    Reply::Bulk(Some(s.as_bytes().to_vec()))
}

#[test]
fn parses_every_reply_type() {
    assert_eq!(parse(b"+OK\r\n").unwrap(), Reply::Status("OK".into()));
    assert_eq!(
        parse(b"-ERR unknown command 'trange'\r\n").unwrap(),
        Reply::Error("ERR unknown command 'trange'".into())
    );
    assert_eq!(parse(b":-42\r\n").unwrap(), Reply::Integer(-42));
    assert_eq!(parse(b"$5\r\nhe\r\no\r\n").unwrap(), bulk("he\r\no"));
    assert_eq!(parse(b"$0\r\n\r\n").unwrap(), bulk(""));
    assert_eq!(parse(b"$-1\r\n").unwrap(), Reply::Bulk(None));
    assert_eq!(parse(b"*-1\r\n").unwrap(), Reply::Array(None));
    assert_eq!(
        parse(b"*3\r\n$1\r\na\r\n:1\r\n*1\r\n+x\r\n").unwrap(),
        Reply::Array(Some(vec![
            bulk("a"),
            Reply::Integer(1),
            Reply::Array(Some(vec![Reply::Status("x".into())]))
        ]))
    );
}

#[test]
fn replies_are_read_in_order_from_one_stream() {
    let mut r = &b"+OK\r\n$1\r\nv\r\n$-1\r\n"[..];
    assert_eq!(read_reply(&mut r).unwrap(), Reply::Status("OK".into()));
    assert_eq!(read_reply(&mut r).unwrap(), bulk("v"));
    assert_eq!(read_reply(&mut r).unwrap(), Reply::Bulk(None));
    let end = read_reply(&mut r).unwrap_err();
    assert_eq!(end.kind(), std::io::ErrorKind::UnexpectedEof);
}

#[test]
fn malformed_replies_are_errors_not_panics() {
    let cases: &[&[u8]] = &[
        b"",
        b"+OK\n",
        b"?what\r\n",
        b"\r\n",
        b":12a\r\n",
        b"$abc\r\n",
        b"$-2\r\n",
        b"$3\r\nab",
        b"$3\r\nabcd\r\n",
        b"$99999999999\r\n",
        b"*2\r\n+a\r\n",
        b"*99999999999\r\n",
    ];
    for c in cases {
        assert!(parse(c).is_err(), "{:?}", String::from_utf8_lossy(c));
    }
    let deep = "*1\r\n".repeat(MAX_DEPTH + 1);
    assert!(parse(deep.as_bytes()).is_err());
}

#[test]
fn commands_are_arrays_of_bulk_strings() {
    let mut out = Vec::new();
    encode(&[b"SET", b"k", b"a b"], &mut out);
    assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\na b\r\n");
}

#[test]
fn targets_are_redis_host_port_only() {
    let t = Target::parse("redis://127.0.0.1:6379").unwrap();
    assert_eq!((t.host.as_str(), t.port), ("127.0.0.1", 6379));
    assert_eq!(t.to_string(), "redis://127.0.0.1:6379");
    assert_eq!(
        Target::parse("redis://[::1]:7000").unwrap().addr(),
        "[::1]:7000"
    );
    for bad in [
        "127.0.0.1:6379",
        "http://h:1",
        "redis://h",
        "redis://:1",
        "redis://h:0",
        "redis://h:70000",
        "redis://u:p@h:1",
        "redis://h:1/0",
    ] {
        assert!(Target::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_refused_connection_names_the_target() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let t = Target::parse(&format!("redis://127.0.0.1:{port}")).unwrap();
    let e = Client::connect(&t).unwrap_err().to_string();
    assert!(e.contains(&format!("redis://127.0.0.1:{port}")), "{e}");
}
