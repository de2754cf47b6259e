//! BOOM beside RESP in one `terrace serve`: a BOOM client's PUTs read back over RESP and
//! the other way round, the password, and an acknowledged BOOM PUT surviving SIGKILL on
//! the fault-injection storage (where the engine's own unsynced log dies with the
//! process: the PUT's only durable copy is the client's segment).

use terrace_boom::BoomClient;

use super::{Server, Value};

fn boom_server(dir: &std::path::Path, extra: &[&str]) -> (Server, std::path::PathBuf) {
    let socket = dir.join("boom.sock");
    let mut args = vec![
        "--boom-socket",
        socket.to_str().unwrap(),
        "--boom-segment-bytes",
        "1048576",
    ];
    args.extend_from_slice(extra);
    let s = Server::start(&dir.join("db"), &args);
    assert!(
        s.banner.iter().any(|l| l.starts_with("boom on ")),
        "{:?}",
        s.banner
    );
    (s, socket)
}

#[test]
fn boom_and_resp_read_each_other_s_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let (s, socket) = boom_server(tmp.path(), &["--requirepass", "pw"]);
    assert!(BoomClient::connect_unix(&socket, b"nope").is_err());
    let mut b = BoomClient::connect_unix(&socket, b"pw").unwrap();
    let mut c = s.client();
    assert_eq!(c.cmd("AUTH pw"), Value::Status("OK".into()));
    let v1 = b.put(b"from-boom", b"hello").unwrap();
    assert_eq!(c.cmd("GET from-boom"), Value::bulk("hello"));
    c.cmd("SET from-resp world");
    assert_eq!(b.get(b"from-resp").unwrap().as_deref(), Some(&b"world"[..]));
    let v2 = b.put(b"from-boom", b"again").unwrap();
    assert!(
        v2 > v1 + 1,
        "the RESP write took a sequence number in between"
    );
    assert_eq!(c.cmd("GET from-boom"), Value::bulk("again"));
    assert_eq!(c.cmd("STRLEN from-boom"), Value::Int(5));
    // BOOM's puts are counted as RESP's writes are: a new key once, an overwrite not,
    // and a key that had an expiry no longer has one.
    c.cmd("SET ttl x EX 1000");
    assert_eq!(c.cmd("DBSIZE"), Value::Int(3));
    b.put(b"ttl", b"kept").unwrap();
    assert_eq!(c.cmd("DBSIZE"), Value::Int(3));
    let Value::Bulk(info) = c.cmd("INFO keyspace") else {
        panic!("INFO answers a bulk string")
    };
    let info = String::from_utf8(info).unwrap();
    assert!(info.contains("db0:keys=3,expires=0,"), "{info}");
    c.cmd("DEL ttl");
    // An expired RESP key is not a BOOM value either.
    c.cmd("SET gone x PX 1");
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(b.get(b"gone").unwrap(), None);
    drop(b);
    let status = s.terminate();
    assert!(status.success(), "{status:?}");
}

#[test]
fn a_boom_put_aborts_a_transaction_watching_its_key() {
    let tmp = tempfile::tempdir().unwrap();
    let (s, socket) = boom_server(tmp.path(), &[]);
    let mut b = BoomClient::connect_unix(&socket, b"").unwrap();
    let mut c = s.client();
    c.cmd("SET watched before");
    assert_eq!(c.cmd("WATCH watched"), Value::Status("OK".into()));
    b.put(b"watched", b"boom").unwrap();
    c.cmd("MULTI");
    c.cmd("SET watched resp");
    assert_eq!(c.cmd("EXEC"), Value::Nil, "EXEC must abort");
    assert_eq!(c.cmd("GET watched"), Value::bulk("boom"));
    // The control: without a BOOM write in between, the same transaction runs.
    c.cmd("WATCH watched");
    c.cmd("MULTI");
    c.cmd("SET watched resp");
    assert_eq!(
        c.cmd("EXEC"),
        Value::Array(vec![Value::Status("OK".into())])
    );
    assert_eq!(b.get(b"watched").unwrap().as_deref(), Some(&b"resp"[..]));
    drop(b);
    s.terminate();
}

#[test]
fn acknowledged_boom_puts_survive_sigkill() {
    let tmp = tempfile::tempdir().unwrap();
    let (s, socket) = boom_server(tmp.path(), &["--fsync", "no", "--internal-fault-storage"]);
    let mut b = BoomClient::connect_unix(&socket, b"").unwrap();
    let mut c = s.client();
    for i in 0..2000u32 {
        b.put(format!("k{i}").as_bytes(), format!("v{i}").as_bytes())
            .unwrap();
    }
    c.cmd("SET resp-unsynced x");
    s.kill();
    drop(b);
    let (s, socket) = boom_server(tmp.path(), &[]);
    let mut c = s.client();
    // The control: the engine's own unsynced log died with the process, so what survived
    // came from the segment.
    assert_eq!(c.cmd("GET resp-unsynced"), Value::Nil);
    for i in (0..2000u32).step_by(37).chain([1999]) {
        assert_eq!(
            c.cmd(&format!("GET k{i}")),
            Value::bulk(&format!("v{i}")),
            "k{i}"
        );
    }
    let mut b = BoomClient::connect_unix(&socket, b"").unwrap();
    assert_eq!(b.get(b"k1234").unwrap().as_deref(), Some(&b"v1234"[..]));
    drop(b);
    s.terminate();
}

#[test]
fn boom_over_tcp_reaches_the_same_engine() {
    let tmp = tempfile::tempdir().unwrap();
    let (s, socket) = boom_server(tmp.path(), &["--boom-port", "0"]);
    let addr = s
        .banner
        .iter()
        .find_map(|l| l.strip_prefix("boom tcp on "))
        .expect("the TCP listener's address")
        .to_string();
    assert!(
        addr.starts_with("127.0.0.1:"),
        "loopback by default: {addr}"
    );
    let mut remote = BoomClient::connect_tcp(&addr, b"", Default::default()).unwrap();
    let mut local = BoomClient::connect_unix(&socket, b"").unwrap();
    remote.put(b"from-tcp", b"far").unwrap();
    assert_eq!(
        local.get(b"from-tcp").unwrap().as_deref(),
        Some(&b"far"[..])
    );
    local.put(b"from-shm", b"near").unwrap();
    assert_eq!(
        remote.get(b"from-shm").unwrap().as_deref(),
        Some(&b"near"[..])
    );
    assert_eq!(s.client().cmd("GET from-tcp"), Value::bulk("far"));
    drop((remote, local));
    assert!(s.terminate().success());
}

#[test]
fn a_boom_port_without_a_boom_socket_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_terrace"))
        .args(["serve", "--port", "0", "--boom-port", "0", "--dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("boom_socket"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
