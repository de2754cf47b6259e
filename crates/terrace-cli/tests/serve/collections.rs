//! Collections at scale through `terrace serve`: a hash of a million fields created with
//! pipelined HSETs, read by HSCAN ranges and HLEN, then deleted in one DEL while another
//! connection goes on being answered. A soak run: `cargo test -- --ignored`.

use super::{Server, Value};

#[test]
#[ignore = "soak: a million-field hash (a few minutes); run with --ignored"]
fn a_million_field_hash_is_created_scanned_and_deleted_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start(tmp.path(), &[]);
    let mut c = s.client();
    const FIELDS: usize = 1_000_000;
    const PER_COMMAND: usize = 1000;
    let mut pipelined = Vec::new();
    for chunk in 0..FIELDS / PER_COMMAND {
        let mut args: Vec<Vec<u8>> = vec![b"HSET".to_vec(), b"big".to_vec()];
        for i in chunk * PER_COMMAND..(chunk + 1) * PER_COMMAND {
            args.push(format!("field:{i:07}").into_bytes());
            args.push(format!("value:{i}").into_bytes());
        }
        let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        pipelined.extend_from_slice(&super::Client::encode(&refs));
        if chunk % 50 == 49 {
            c.send_raw(&pipelined);
            pipelined.clear();
            for _ in 0..50 {
                assert_eq!(c.read(), Some(Value::Int(PER_COMMAND as i64)));
            }
        }
    }
    assert_eq!(c.cmd("HLEN big"), Value::Int(FIELDS as i64));
    assert_eq!(c.cmd("HGET big field:0765432"), Value::bulk("value:765432"));
    // A stateless HSCAN walks every field once (or more: never fewer).
    let mut cursor = "0".to_string();
    let mut seen = 0usize;
    loop {
        let Value::Array(parts) = c.cmd(&format!("HSCAN big {cursor} COUNT 5000 NOVALUES")) else {
            panic!("HSCAN answers an array")
        };
        let (Value::Bulk(next), Value::Array(items)) = (&parts[0], &parts[1]) else {
            panic!("HSCAN answers a cursor and a page")
        };
        seen += items.len();
        cursor = String::from_utf8_lossy(next).into_owned();
        if cursor == "0" {
            break;
        }
    }
    assert!(seen >= FIELDS, "HSCAN returned {seen} of {FIELDS} fields");
    // Deleting it writes one record; another client is answered meanwhile.
    let mut other = s.client();
    assert_eq!(c.cmd("DEL big"), Value::Int(1));
    assert_eq!(other.cmd("PING"), Value::Status("PONG".into()));
    assert_eq!(c.cmd("HLEN big"), Value::Int(0));
    assert_eq!(c.cmd("HSET big f v"), Value::Int(1));
    assert_eq!(
        c.cmd("HLEN big"),
        Value::Int(1),
        "the new hash sees none of the old fields"
    );
    assert!(s.terminate().success());
}
