use std::sync::Arc;

use super::glob::glob_match;
use super::*;
use crate::config::Config;

pub(crate) fn engine(dir: &std::path::Path) -> Arc<Engine> {
    let config = Config {
        dir: dir.to_path_buf(),
        ..Config::default()
    };
    Engine::open(&config).unwrap()
}

pub(crate) fn run(s: &mut Session, line: &str) -> Reply {
    let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
    s.execute(&args).unwrap()
}

pub(crate) fn bulk(s: &str) -> Reply {
    Reply::Bulk(s.as_bytes().to_vec().into())
}

/// The bulk strings of an array or set reply, sorted (for replies in no fixed order).
pub(crate) fn sorted_bulks(r: Reply) -> Vec<String> {
    let items = match r {
        Reply::Array(items) | Reply::Set(items) => items,
        other => panic!("not a list: {other:?}"),
    };
    let mut out: Vec<String> = items
        .into_iter()
        .map(|i| match i {
            Reply::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
            other => panic!("not a bulk: {other:?}"),
        })
        .collect();
    out.sort();
    out
}

pub(crate) fn err(s: &str) -> Reply {
    Reply::Error(s.to_string())
}

#[test]
fn set_options_and_get() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("test".into()).unwrap();
    assert_eq!(run(&mut s, "SET k v"), Reply::Ok);
    assert_eq!(run(&mut s, "SET k w NX"), Reply::Nil);
    assert_eq!(run(&mut s, "SET k w XX GET"), bulk("v"));
    assert_eq!(run(&mut s, "SET n w XX"), Reply::Nil);
    assert_eq!(run(&mut s, "SET k v NX XX"), err("ERR syntax error"));
    assert_eq!(
        run(&mut s, "SET k v EX 0"),
        err("ERR invalid expire time in 'set' command")
    );
    assert_eq!(run(&mut s, "SET k v EX 10 PX 5"), err("ERR syntax error"));
    assert_eq!(run(&mut s, "SET k v EX 100"), Reply::Ok);
    assert_eq!(run(&mut s, "SET k v2 KEEPTTL"), Reply::Ok);
    assert!(matches!(run(&mut s, "TTL k"), Reply::Integer(99..=100)));
    assert_eq!(run(&mut s, "SET k v3"), Reply::Ok);
    assert_eq!(run(&mut s, "TTL k"), Reply::Integer(-1));
    assert_eq!(run(&mut s, "TTL nope"), Reply::Integer(-2));
    assert_eq!(run(&mut s, "GET k"), bulk("v3"));
    assert_eq!(
        run(&mut s, "GET"),
        err("ERR wrong number of arguments for 'get' command")
    );
    assert_eq!(
        run(&mut s, "NOSUCH h f v"),
        err("ERR unknown command 'NOSUCH', with args beginning with: 'h' 'f' 'v' ")
    );
}

#[test]
fn command_names_match_in_any_case() {
    assert!(table::COMMANDS.iter().all(|c| c.name.len() <= 32));
    assert_eq!(table::lookup(b"gEt").map(|c| c.name), Some("get"));
    assert_eq!(table::lookup(b"SET").map(|c| c.name), Some("set"));
    assert!(table::lookup(b"").is_none());
    assert!(table::lookup(&[b'a'; 40]).is_none());
    assert!(table::lookup(b"nosuchcommand").is_none());
    // Every command of the table, by its name in upper case, is itself.
    for c in table::COMMANDS {
        let found = table::lookup(c.name.to_ascii_uppercase().as_bytes());
        assert!(found.is_some_and(|f| std::ptr::eq(f, c)), "{}", c.name);
    }
}

#[test]
fn counters_and_ranges() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("test".into()).unwrap();
    assert_eq!(run(&mut s, "INCR c"), Reply::Integer(1));
    assert_eq!(run(&mut s, "INCRBY c 41"), Reply::Integer(42));
    assert_eq!(run(&mut s, "DECRBY c 2"), Reply::Integer(40));
    assert_eq!(run(&mut s, "SET c 9223372036854775807"), Reply::Ok);
    assert_eq!(
        run(&mut s, "INCR c"),
        err("ERR increment or decrement would overflow")
    );
    assert_eq!(run(&mut s, "SET c 01"), Reply::Ok);
    assert_eq!(
        run(&mut s, "INCR c"),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(run(&mut s, "INCRBYFLOAT f 10.5"), bulk("10.5"));
    assert_eq!(run(&mut s, "INCRBYFLOAT f 0.1"), bulk("10.6"));
    assert_eq!(run(&mut s, "SET s Hello"), Reply::Ok);
    assert_eq!(run(&mut s, "APPEND s World"), Reply::Integer(10));
    assert_eq!(run(&mut s, "GETRANGE s -5 -1"), bulk("World"));
    assert_eq!(run(&mut s, "GETRANGE s 0 3"), bulk("Hell"));
    assert_eq!(run(&mut s, "SETRANGE z 3 ab"), Reply::Integer(5));
    assert_eq!(
        run(&mut s, "GET z"),
        Reply::Bulk(b"\0\0\0ab".to_vec().into())
    );
    assert_eq!(run(&mut s, "STRLEN z"), Reply::Integer(5));
    assert_eq!(run(&mut s, "MSETNX z 1 y 2"), Reply::Integer(0));
    assert_eq!(run(&mut s, "MSETNX x 1 y 2"), Reply::Integer(1));
    assert_eq!(
        run(&mut s, "MGET x y q"),
        Reply::Array(vec![bulk("1"), bulk("2"), Reply::Nil])
    );
}

#[test]
fn keyspace_and_expiry() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("test".into()).unwrap();
    for i in 0..25 {
        run(&mut s, &format!("SET key{i:02} v"));
    }
    assert_eq!(run(&mut s, "DBSIZE"), Reply::Integer(25));
    // SCAN visits every key exactly once.
    let mut cursor = "0".to_string();
    let mut seen = Vec::new();
    loop {
        let Reply::Array(parts) = run(&mut s, &format!("SCAN {cursor} COUNT 7 MATCH key1*")) else {
            panic!()
        };
        let [Reply::Bulk(c), Reply::Array(keys)] = parts.as_slice() else {
            panic!()
        };
        seen.extend(keys.iter().cloned());
        cursor = String::from_utf8(c.to_vec()).unwrap();
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(seen.len(), 10);
    assert_eq!(run(&mut s, "PEXPIRE key00 1"), Reply::Integer(1));
    std::thread::sleep(std::time::Duration::from_millis(5));
    assert_eq!(run(&mut s, "EXISTS key00 key01 key01"), Reply::Integer(2));
    assert_eq!(run(&mut s, "DBSIZE"), Reply::Integer(24));
    assert_eq!(run(&mut s, "EXPIRE key01 100 XX"), Reply::Integer(0));
    assert_eq!(run(&mut s, "EXPIRE key01 100 NX"), Reply::Integer(1));
    assert_eq!(run(&mut s, "EXPIRE key01 50 GT"), Reply::Integer(0));
    assert_eq!(run(&mut s, "EXPIRE key01 50 LT"), Reply::Integer(1));
    assert_eq!(
        run(&mut s, "EXPIRE key01 50 NX LT"),
        err("ERR NX and XX, GT or LT options at the same time are not compatible")
    );
    assert_eq!(run(&mut s, "EXPIRE key01 -1"), Reply::Integer(1));
    assert_eq!(run(&mut s, "TYPE key01"), Reply::Status("none".into()));
    assert_eq!(run(&mut s, "RENAME nope x"), err("ERR no such key"));
    assert_eq!(run(&mut s, "RENAME key02 k2"), Reply::Ok);
    assert_eq!(run(&mut s, "RENAMENX key03 k2"), Reply::Integer(0));
    assert_eq!(run(&mut s, "COPY k2 k3"), Reply::Integer(1));
    assert_eq!(run(&mut s, "DEL k2 k3 k3 nope"), Reply::Integer(2));
    assert_eq!(run(&mut s, "FLUSHDB"), Reply::Ok);
    assert_eq!(run(&mut s, "DBSIZE"), Reply::Integer(0));
    assert_eq!(run(&mut s, "RANDOMKEY"), Reply::Nil);
}

#[test]
fn transactions_and_watch() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut a = e.connect("a".into()).unwrap();
    let mut b = e.connect("b".into()).unwrap();
    assert_eq!(run(&mut a, "MULTI"), Reply::Ok);
    assert_eq!(run(&mut a, "INCR n"), Reply::Status("QUEUED".into()));
    assert_eq!(run(&mut a, "INCR n"), Reply::Status("QUEUED".into()));
    assert_eq!(
        run(&mut a, "EXEC"),
        Reply::Array(vec![Reply::Integer(1), Reply::Integer(2)])
    );
    // A write by another client to a watched key aborts EXEC.
    assert_eq!(run(&mut a, "WATCH n"), Reply::Ok);
    assert_eq!(run(&mut b, "SET n 10"), Reply::Ok);
    run(&mut a, "MULTI");
    run(&mut a, "INCR n");
    assert_eq!(run(&mut a, "EXEC"), Reply::NilArray);
    assert_eq!(run(&mut a, "GET n"), bulk("10"));
    // Without interference it runs.
    run(&mut a, "WATCH n");
    run(&mut a, "MULTI");
    run(&mut a, "INCR n");
    assert_eq!(run(&mut a, "EXEC"), Reply::Array(vec![Reply::Integer(11)]));
    // A refused command while queueing aborts the whole transaction.
    run(&mut a, "MULTI");
    run(&mut a, "SET x 1");
    run(&mut a, "NOSUCH");
    assert_eq!(
        run(&mut a, "EXEC"),
        err("EXECABORT Transaction discarded because of previous errors.")
    );
    assert_eq!(run(&mut a, "GET x"), Reply::Nil);
    assert_eq!(run(&mut a, "EXEC"), err("ERR EXEC without MULTI"));
    assert_eq!(run(&mut a, "DISCARD"), err("ERR DISCARD without MULTI"));
}

#[test]
fn auth_and_hello() {
    let tmp = tempfile::tempdir().unwrap();
    let config = Config {
        dir: tmp.path().to_path_buf(),
        requirepass: "secret".into(),
        ..Config::default()
    };
    let e = Engine::open(&config).unwrap();
    let mut s = e.connect("t".into()).unwrap();
    assert_eq!(run(&mut s, "GET k"), err("NOAUTH Authentication required."));
    assert_eq!(
        run(&mut s, "AUTH wrong"),
        err("WRONGPASS invalid username-password pair or user is disabled.")
    );
    assert!(run(&mut s, "HELLO 3 AUTH default secret")
        .to_string_lossy()
        .contains("proto"));
    assert_eq!(s.protocol(), Protocol::Resp3);
    assert_eq!(run(&mut s, "GET k"), Reply::Nil);
    assert_eq!(run(&mut s, "SELECT 1"), err("ERR DB index is out of range"));
}

#[test]
fn maxclients_refuses_extra_sessions() {
    let tmp = tempfile::tempdir().unwrap();
    let config = Config {
        dir: tmp.path().to_path_buf(),
        maxclients: 1,
        ..Config::default()
    };
    let e = Engine::open(&config).unwrap();
    let first = e.connect("a".into()).unwrap();
    assert!(e.connect("b".into()).is_err());
    drop(first);
    assert!(e.connect("c".into()).is_ok());
}

#[test]
fn concurrent_increments_lose_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let e = Arc::clone(&e);
            std::thread::spawn(move || {
                let mut s = e.connect("t".into()).unwrap();
                for _ in 0..500 {
                    run(&mut s, "INCR n");
                    run(&mut s, "APPEND log x");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut s = e.connect("check".into()).unwrap();
    assert_eq!(run(&mut s, "GET n"), bulk("2000"));
    assert_eq!(run(&mut s, "STRLEN log"), Reply::Integer(2000));
}

#[test]
fn glob_patterns() {
    let m = |p: &str, t: &str| glob_match(p.as_bytes(), t.as_bytes(), false);
    assert!(m("*", "anything"));
    assert!(m("h?llo", "hello"));
    assert!(m("h[ae]llo", "hallo"));
    assert!(!m("h[^e]llo", "hello"));
    assert!(m("h[a-b]llo", "hbllo"));
    assert!(m("key1*", "key12"));
    assert!(!m("key1*", "key2"));
    assert!(m("a\\*b", "a*b"));
    assert!(m("*a*b*", "xxaxxbxx"));
    assert!(glob_match(b"SAVE", b"save", true));
}

#[test]
fn expired_keys_leave_the_disk_through_active_expiry_not_compaction() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    run(&mut s, "SET gone v PX 1");
    run(&mut s, "SET kept v EX 1000");
    run(&mut s, "SET plain v");
    std::thread::sleep(std::time::Duration::from_millis(5));
    e.db().flush().unwrap();
    e.db().compact_range(None, None).unwrap();
    // Compaction kept the expired key: a drop the count did not see would make DBSIZE
    // wrong (it still counts `gone`, as Redis does until its expiry cycle runs).
    assert!(e.db().get(b"gone").unwrap().is_some());
    assert_eq!(run(&mut s, "DBSIZE"), Reply::Integer(3));
    assert_eq!(e.expire_step(100).unwrap().deleted, 1);
    assert_eq!(run(&mut s, "DBSIZE"), Reply::Integer(2));
    e.db().flush().unwrap();
    e.db().compact_range(None, None).unwrap();
    assert_eq!(e.db().get(b"gone").unwrap(), None);
    assert!(e.db().get(b"kept").unwrap().is_some());
    assert!(e.db().get(b"plain").unwrap().is_some());
}

#[test]
fn metrics_text_has_the_engine_and_latency() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    run(&mut s, "SET a b");
    let text = crate::net::metrics_text(&e);
    for name in [
        "terrace_commands_total 1",
        "terrace_connected_clients 1",
        "terrace_command_latency_seconds_count 1",
        "terrace_engine_write_amplification",
        "terrace_engine_compaction_bytes_written_total",
        "terrace_engine_stalls_total",
        "terrace_engine_level_bytes{level=\"0\"}",
    ] {
        assert!(text.contains(name), "{name} missing from\n{text}");
    }
}

/// Volumes in the config: level 1 on a limited volume of its own, counted and shown.
#[test]
fn a_placement_policy_in_the_config_spreads_tables_over_the_volumes() {
    let tmp = tempfile::tempdir().unwrap();
    let text = format!(
        "dir = {:?}\nplacement = \"round_robin\"\nmigration = \"tango\"\n\
         target_file_size_base = 4194304\n\
         [[volumes]]\npath = {:?}\niops = 5000\n[[volumes]]\npath = {:?}\niops = 5000\n",
        tmp.path().join("db"),
        tmp.path().join("v1"),
        tmp.path().join("v2"),
    );
    let config: Config = toml::from_str(&text).unwrap();
    assert_eq!(
        config.placement,
        terrace::volume::placement::PlacementPolicy::RoundRobin
    );
    assert_eq!(
        toml::from_str::<Config>(&config.to_toml().unwrap()).unwrap(),
        config
    );
    let e = Engine::open(&config).unwrap();
    let mut s = e.connect("t".into()).unwrap();
    // Two tables: below the level-0 compaction trigger, so that no compaction merges
    // them onto one volume before the count (with four, one did now and then).
    for round in 0..2 {
        for i in 0..100 {
            run(&mut s, &format!("SET k{i:04} v{round}"));
        }
        e.db().flush().unwrap();
    }
    let stats = e.db().stats();
    assert_eq!(
        stats.volumes[0].files, 0,
        "tables only on the table volumes"
    );
    assert!(stats.volumes[1].files > 0 && stats.volumes[2].files > 0);
    // An unknown policy is refused by name.
    let err = toml::from_str::<Config>("placement = \"fastest\"\n").unwrap_err();
    assert!(err.to_string().contains("fastest"), "{err}");
}

#[test]
fn configured_volumes_hold_their_levels_and_show_in_info() {
    let tmp = tempfile::tempdir().unwrap();
    let v1 = tmp.path().join("v1");
    let text = format!(
        "dir = {:?}\nlevel_volumes = [0, 1, 1]\n[[volumes]]\npath = {:?}\niops = 500\nbandwidth = 22020096\n",
        tmp.path().join("db"),
        v1
    );
    let config: Config = toml::from_str(&text).unwrap();
    assert_eq!(config.volumes[0].limits().iops, 500);
    assert_eq!(
        toml::from_str::<Config>(&config.to_toml().unwrap()).unwrap(),
        config
    );
    let e = Engine::open(&config).unwrap();
    let mut s = e.connect("t".into()).unwrap();
    for round in 0..2 {
        for i in 0..200 {
            run(&mut s, &format!("SET k{i:04} v{round}"));
        }
        e.db().flush().unwrap();
    }
    e.db().compact_range(None, None).unwrap();
    let stats = e.db().stats();
    assert_eq!(stats.volumes.len(), 2);
    assert_eq!(stats.volumes[1].iops_limit, 500);
    assert!(stats.volumes[1].bytes > 0, "level 1 lives on volume 1");
    let info = info_text(&mut s, "engine");
    assert!(info.contains("engine_volume1:files="), "{info}");
    assert!(
        info.contains(",bytes=") && info.contains(",heat="),
        "{info}"
    );
    assert!(info.contains("iops_limit=500"), "{info}");
    // An unknown field of a volume is refused.
    assert!(toml::from_str::<Config>("[[volumes]]\npath = \"/x\"\nspeed = 3\n").is_err());
}

#[test]
fn info_and_metrics_show_each_compaction_unit() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    // Two overlapping level-0 files: the manual compaction rewrites them.
    for round in 0..2 {
        for i in 0..200 {
            run(&mut s, &format!("SET k{i:04} v{round}"));
        }
        e.db().flush().unwrap();
    }
    e.db().compact_range(None, None).unwrap();
    let info = info_text(&mut s, "engine");
    assert!(info.contains("engine_compaction_fallbacks:0"), "{info}");
    assert!(
        info.contains("engine_compaction_unit0:unit=host,runs="),
        "{info}"
    );
    assert!(info.contains(",failures=0,fallbacks=0"), "{info}");
    let text = crate::net::metrics_text(&e);
    for name in [
        "terrace_compaction_runs_total{unit=\"host\",mode=\"linear\"}",
        "terrace_compaction_cpu_seconds_total{unit=\"host\"}",
        "terrace_compaction_failures_total{unit=\"host\"} 0",
    ] {
        assert!(text.contains(name), "{name} missing from\n{text}");
    }
}

/// The text of `INFO section`.
fn info_text(s: &mut Session, section: &str) -> String {
    match run(s, &format!("INFO {section}")) {
        Reply::Bulk(b) => String::from_utf8(b.to_vec()).unwrap(),
        other => panic!("{other:?}"),
    }
}

fn config_get(s: &mut Session, name: &str) -> Reply {
    match run(s, &format!("CONFIG GET {name}")) {
        Reply::Map(mut pairs) if pairs.len() == 1 => pairs.remove(0).1,
        other => panic!("{other:?}"),
    }
}

#[test]
fn unauthenticated_clients_get_small_limits_until_auth() {
    let tmp = tempfile::tempdir().unwrap();
    let config = Config {
        dir: tmp.path().to_path_buf(),
        requirepass: "secret".into(),
        ..Config::default()
    };
    let e = Engine::open(&config).unwrap();
    let mut s = e.connect("t".into()).unwrap();
    let pre = s.limits();
    assert!(pre.unauthenticated);
    assert_eq!(
        pre.proto_max_bulk_len,
        crate::resp::UNAUTHENTICATED_MAX_BULK_LEN
    );
    assert_eq!(pre.max_args, crate::resp::UNAUTHENTICATED_MAX_ARGS);
    assert_eq!(run(&mut s, "AUTH secret"), Reply::Ok);
    let after = s.limits();
    assert!(!after.unauthenticated);
    assert_eq!(after.proto_max_bulk_len, config.proto_max_bulk_len);
    // Without a password nobody is narrowed.
    let tmp2 = tempfile::tempdir().unwrap();
    let open = engine(tmp2.path());
    assert!(!open.connect("u".into()).unwrap().limits().unauthenticated);
}

#[test]
fn passwords_compare_whole() {
    use super::server::password_matches;
    assert!(password_matches(b"secret", b"secret"));
    assert!(!password_matches(b"secre", b"secret"));
    assert!(!password_matches(b"secretx", b"secret"));
    assert!(!password_matches(b"Secret", b"secret"));
    assert!(!password_matches(b"", b"secret"));
    assert!(password_matches(b"", b""));
}

#[test]
fn config_set_limits_take_effect_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    let other = e.connect("u".into()).unwrap();
    assert_eq!(run(&mut s, "CONFIG SET proto-max-bulk-len 1000"), err(
        "ERR CONFIG SET failed (possibly related to argument 'proto-max-bulk-len') - argument must be at least 1024"
    ));
    assert_eq!(run(&mut s, "CONFIG SET proto-max-bulk-len 2048"), Reply::Ok);
    assert_eq!(config_get(&mut s, "proto-max-bulk-len"), bulk("2048"));
    assert_eq!(other.limits().proto_max_bulk_len, 2048);
    assert_eq!(run(&mut s, "CONFIG SET proto-max-bulk-len 1mb"), Reply::Ok);
    assert_eq!(other.limits().proto_max_bulk_len, 1024 * 1024);
    assert_eq!(
        run(&mut s, "CONFIG SET client-query-buffer-limit 4kb"),
        Reply::Ok
    );
    assert_eq!(e.query_buffer_limit(), 4096);
    assert_eq!(
        config_get(&mut s, "client-query-buffer-limit"),
        bulk("4096")
    );
    assert_eq!(
        run(&mut s, "CONFIG SET client-query-buffer-limit lots"),
        err("ERR CONFIG SET failed (possibly related to argument 'client-query-buffer-limit') - argument must be a memory value")
    );
    let mut timeout = e.watch_timeout();
    assert_eq!(*timeout.borrow_and_update(), 0);
    assert_eq!(run(&mut s, "CONFIG SET timeout 30"), Reply::Ok);
    assert!(timeout.has_changed().unwrap());
    assert_eq!(*timeout.borrow_and_update(), 30);
    assert_eq!(config_get(&mut s, "timeout"), bulk("30"));
    assert_eq!(run(&mut s, "CONFIG SET maxclients 1"), Reply::Ok);
    assert!(e.connect("v".into()).is_err());
    assert_eq!(
        run(&mut s, "CONFIG SET maxclients 0"),
        err("ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument must be at least 1")
    );
}

#[test]
fn config_set_refuses_what_terrace_does_not_do() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    // Values that describe what Terrace does are accepted.
    assert_eq!(run(&mut s, "CONFIG SET appendonly yes"), Reply::Ok);
    assert_eq!(
        s.execute(&[b"CONFIG", b"SET", b"save", b""]),
        Some(Reply::Ok)
    );
    assert_eq!(run(&mut s, "CONFIG SET maxmemory 0"), Reply::Ok);
    assert_eq!(
        run(&mut s, "CONFIG SET appendonly no"),
        err(
            "ERR CONFIG SET 'appendonly' is not supported: Terrace always writes a write-ahead log"
        )
    );
    for (name, value, why) in [
        ("save", "900 1", "RDB snapshots"),
        ("maxmemory", "100mb", "evicts nothing"),
        ("appendfsync", "always", "--fsync"),
        ("port", "7000", "set at start"),
        ("databases", "16", "one database"),
    ] {
        let cmd: [&[u8]; 4] = [b"CONFIG", b"SET", name.as_bytes(), value.as_bytes()];
        let Some(Reply::Error(e)) = s.execute(&cmd) else {
            panic!("{name} {value} was accepted")
        };
        assert!(e.starts_with(&format!("ERR CONFIG SET '{name}'")), "{e}");
        assert!(e.contains(why), "{name}: {e}");
    }
    assert_eq!(
        run(&mut s, "CONFIG SET no-such-thing 1"),
        err("ERR Unknown option or number of arguments for CONFIG SET - 'no-such-thing'")
    );
    // All or nothing: a refused pair leaves the others unset.
    assert_eq!(
        run(&mut s, "CONFIG SET timeout 7 appendonly no"),
        err(
            "ERR CONFIG SET 'appendonly' is not supported: Terrace always writes a write-ahead log"
        )
    );
    assert_eq!(config_get(&mut s, "timeout"), bulk("0"));
    assert_eq!(
        run(&mut s, "CONFIG SET timeout 7 TIMEOUT 8"),
        err("ERR CONFIG SET failed (possibly related to argument 'timeout') - duplicate parameter")
    );
    assert_eq!(config_get(&mut s, "timeout"), bulk("0"));
}

#[test]
fn protected_mode_refuses_removing_the_password_on_an_open_bind() {
    let tmp = tempfile::tempdir().unwrap();
    let config = Config {
        dir: tmp.path().to_path_buf(),
        bind: "0.0.0.0".into(),
        requirepass: "pw".into(),
        ..Config::default()
    };
    let e = Engine::open(&config).unwrap();
    let mut s = e.connect("t".into()).unwrap();
    assert_eq!(run(&mut s, "AUTH pw"), Reply::Ok);
    let Some(Reply::Error(msg)) = s.execute(&[b"CONFIG", b"SET", b"requirepass", b""]) else {
        panic!("an empty password was accepted")
    };
    assert!(
        msg.contains("'requirepass'") && msg.contains("protected mode"),
        "{msg}"
    );
    assert!(e.requires_auth());
    assert_eq!(config_get(&mut s, "requirepass"), bulk("pw"));
    // With protected mode off in the same command, it is allowed.
    assert_eq!(
        s.execute(&[
            b"CONFIG",
            b"SET",
            b"protected-mode",
            b"no",
            b"requirepass",
            b""
        ]),
        Some(Reply::Ok)
    );
    assert!(!e.requires_auth());
    // Turning protected mode back on without a password is refused.
    let Reply::Error(msg) = run(&mut s, "CONFIG SET protected-mode yes") else {
        panic!("protected mode turned on over an open bind without a password")
    };
    assert!(msg.contains("'protected-mode'"), "{msg}");
}

/// FLUSHDB deletes every key, binary ones at the top of the key space included, and
/// does not slow down as earlier FLUSHDBs pile up deleted keys.
#[test]
fn flushdb_deletes_every_key_and_stays_cheap() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("test".into()).unwrap();
    let high: Vec<Vec<u8>> = vec![
        vec![0xff; 15],
        [vec![0xff; 15], vec![0xfe]].concat(),
        vec![0xff; 16],
        vec![0xff; 40],
        Vec::new(),
    ];
    for round in 0..50 {
        for i in 0..200 {
            let k = format!("r{round}-k{i}");
            assert_eq!(run(&mut s, &format!("SET {k} v")), Reply::Ok);
        }
        for k in &high {
            assert_eq!(s.execute(&[b"SET", k, b"v"]).unwrap(), Reply::Ok);
        }
        assert_eq!(
            run(&mut s, "DBSIZE"),
            Reply::Integer(200 + high.len() as i64)
        );
        assert_eq!(run(&mut s, "FLUSHDB"), Reply::Ok);
        assert_eq!(run(&mut s, "DBSIZE"), Reply::Integer(0), "round {round}");
        for k in &high {
            assert_eq!(s.execute(&[b"EXISTS", k]).unwrap(), Reply::Integer(0));
        }
    }
    assert_eq!(run(&mut s, "FLUSHDB"), Reply::Ok);
    assert_eq!(run(&mut s, "SET after flush"), Reply::Ok);
    assert_eq!(run(&mut s, "GET after"), bulk("flush"));
}

/// INFO and the metrics show whether the engine is read-only after a background error,
/// and the error; a full device clears by itself once space returns.
#[test]
fn info_shows_the_write_status_and_the_last_background_error() {
    use terrace::storage::{FaultOp, FaultRule, InjectedError, IoClass};
    let tmp = tempfile::tempdir().unwrap();
    let config = Config {
        dir: tmp.path().to_path_buf(),
        internal_fault_storage: true,
        write_buffer_size: 64 << 10,
        ..Config::default()
    };
    let e = Engine::open(&config).unwrap();
    let mut s = e.connect("test".into()).unwrap();
    let info = |s: &mut Session| info_text(s, "persistence");
    let text = info(&mut s);
    assert!(text.contains("aof_last_write_status:ok"), "{text}");
    assert!(text.contains("terrace_write_status:ok"), "{text}");
    assert!(text.contains("terrace_background_errors:0"), "{text}");

    let fault = e.fault.clone().unwrap();
    fault.inject(
        FaultRule::new(&[FaultOp::Create], InjectedError::NoSpace).of_class(IoClass::Flush),
    );
    let mut refused = false;
    for i in 0..100_000 {
        if let Reply::Error(_) = run(&mut s, &format!("SET key{i} {}", "v".repeat(100))) {
            refused = true;
            break;
        }
    }
    assert!(refused, "no write was refused on a full device");
    let text = info(&mut s);
    assert!(text.contains("aof_last_write_status:err"), "{text}");
    assert!(text.contains("terrace_write_status:read-only"), "{text}");
    assert!(text.contains("No space left on device"), "{text}");
    assert!(text.contains("terrace_background_errors:1"), "{text}");
    let metrics = crate::net::metrics::render(&e);
    assert!(metrics.contains("terrace_engine_read_only 1"), "{metrics}");

    fault.clear_faults();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !info(&mut s).contains("terrace_resumes:1") {
        assert!(
            std::time::Instant::now() < deadline,
            "no automatic recovery"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(run(&mut s, "SET after recovery"), Reply::Ok);
    assert!(info(&mut s).contains("terrace_write_status:ok"));
}

#[test]
fn a_watched_key_that_expires_aborts_exec() {
    let tmp = tempfile::tempdir().unwrap();
    let e = engine(tmp.path());
    let mut s = e.connect("t".into()).unwrap();
    run(&mut s, "SET k v PX 20");
    run(&mut s, "WATCH k");
    std::thread::sleep(std::time::Duration::from_millis(30));
    run(&mut s, "MULTI");
    run(&mut s, "SET other 1");
    assert_eq!(run(&mut s, "EXEC"), Reply::NilArray);
    // The control: a watched key that does not expire in between lets EXEC run.
    run(&mut s, "SET k v PX 100000");
    run(&mut s, "WATCH k");
    run(&mut s, "MULTI");
    run(&mut s, "SET other 1");
    assert_eq!(run(&mut s, "EXEC"), Reply::Array(vec![Reply::Ok]));
}

/// Three clients of one engine in `dir`, from ports 1111, 2222 and 3333; the first has
/// subscribed to a channel.
fn three_clients(dir: &std::path::Path) -> [Session; 3] {
    let e = engine(dir);
    let mut clients =
        ["1111", "2222", "3333"].map(|port| e.connect(format!("127.0.0.1:{port}")).unwrap());
    run(&mut clients[0], "SUBSCRIBE news");
    clients
}

#[test]
fn client_list_shows_live_fields_and_client_kill_flags_the_victim() {
    let tmp = tempfile::tempdir().unwrap();
    let [a, mut b, mut c] = three_clients(tmp.path());
    run(&mut b, "MULTI");
    run(&mut b, "SET k v");
    let Reply::Bulk(list) = run(&mut c, "CLIENT LIST") else {
        panic!("CLIENT LIST answers a bulk string")
    };
    let text = String::from_utf8_lossy(&list).into_owned();
    let line = |port: &str| text.lines().find(|l| l.contains(port)).unwrap().to_string();
    let (la, lb) = (line("1111"), line("2222"));
    for want in ["flags=P", "sub=1", "psub=0", "multi=-1", "cmd=subscribe"] {
        assert!(la.contains(want), "{want} in {la}");
    }
    for want in ["flags=x", "multi=1", "cmd=set"] {
        assert!(lb.contains(want), "{want} in {lb}");
    }
    let a_id = a.id();
    assert_eq!(
        run(&mut c, &format!("CLIENT KILL ID {a_id}")),
        Reply::Integer(1)
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(a.kill_switch().killed());
    assert_eq!(
        run(&mut c, "CLIENT KILL 127.0.0.1:9"),
        err("ERR No such client")
    );
    assert_eq!(
        run(&mut c, "CLIENT KILL ADDR 127.0.0.1:2222"),
        Reply::Integer(1)
    );
    assert_eq!(
        run(&mut c, "CLIENT KILL ID 999 SKIPME no"),
        Reply::Integer(0)
    );
}

#[test]
fn client_list_filters_by_type_and_id() {
    let tmp = tempfile::tempdir().unwrap();
    let [a, mut b, mut c] = three_clients(tmp.path());
    let lines = |r: Reply| -> Vec<String> {
        let Reply::Bulk(list) = r else {
            panic!("CLIENT LIST answers a bulk string")
        };
        String::from_utf8_lossy(&list)
            .lines()
            .map(str::to_string)
            .collect()
    };
    let pubsub = lines(run(&mut c, "CLIENT LIST TYPE pubsub"));
    assert_eq!(pubsub.len(), 1);
    assert!(pubsub[0].contains("1111"));
    let normal = lines(run(&mut c, "CLIENT LIST TYPE NORMAL"));
    assert_eq!(normal.len(), 2);
    assert!(normal.iter().all(|l| !l.contains("1111")));
    assert!(lines(run(&mut c, "CLIENT LIST TYPE replica")).is_empty());
    // IDs in the order given, unknown ones skipped.
    let (a_id, b_id) = (a.id(), b.id());
    let by_id = lines(run(&mut c, &format!("CLIENT LIST ID {b_id} 999999 {a_id}")));
    assert_eq!(by_id.len(), 2);
    assert!(by_id[0].starts_with(&format!("id={b_id} ")));
    assert!(by_id[1].starts_with(&format!("id={a_id} ")));
    assert_eq!(
        run(&mut c, "CLIENT LIST TYPE bogus"),
        err("ERR Unknown client type 'bogus'")
    );
    assert_eq!(
        run(&mut c, "CLIENT LIST ID x"),
        err("ERR Invalid client ID")
    );
    assert_eq!(run(&mut c, "CLIENT LIST ID"), err("ERR syntax error"));
    assert_eq!(
        run(&mut c, "CLIENT LIST TYPE normal extra"),
        err("ERR syntax error")
    );
    run(&mut b, "PING");
}

/// One SCAN page: the next cursor and the keys.
fn scan_page(s: &mut Session, cursor: &str) -> (String, Vec<String>) {
    let Reply::Array(parts) = run(s, &format!("SCAN {cursor} COUNT 10")) else {
        panic!()
    };
    let [Reply::Bulk(c), keys] = parts.as_slice() else {
        panic!()
    };
    (
        String::from_utf8(c.to_vec()).unwrap(),
        sorted_bulks(keys.clone()),
    )
}

#[test]
fn a_scan_resumes_across_a_restart_and_an_evicted_cursor_without_skipping_a_key() {
    let tmp = tempfile::tempdir().unwrap();
    let mut e = engine(tmp.path());
    let mut s = e.connect("scan".into()).unwrap();
    // Keys that differ in their first six bytes, which a forgotten cursor keeps.
    let keys: Vec<String> = (0..300).map(|i| format!("{i:04}:user")).collect();
    for k in &keys {
        run(&mut s, &format!("SET {k} v"));
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut returned = 0;
    let mut cursor = "0".to_string();
    for page in 0.. {
        let (next, got) = scan_page(&mut s, &cursor);
        returned += got.len();
        seen.extend(got);
        cursor = next;
        if cursor == "0" {
            break;
        }
        if page == 3 {
            // The server forgets every cursor it issued.
            drop(s);
            let Ok(only) = Arc::try_unwrap(e) else {
                panic!("the engine is still shared")
            };
            only.close().unwrap();
            e = engine(tmp.path());
            s = e.connect("scan".into()).unwrap();
        }
        if page == 10 {
            // Other clients' scans push this one's cursor out of the table.
            let mut other = e.connect("other".into()).unwrap();
            for _ in 0..super::scan_cursor::MAX_EXACT {
                scan_page(&mut other, "0");
            }
        }
        assert!(page < 100, "the scan does not end");
    }
    let want: std::collections::BTreeSet<String> = keys.into_iter().collect();
    assert_eq!(seen, want);
    // Resuming from the prefix, not from the start: no key came twice here.
    assert_eq!(returned, 300);
}

#[test]
fn without_the_count_dbsize_walks_the_live_keys() {
    let tmp = tempfile::tempdir().unwrap();
    let config = Config {
        dir: tmp.path().to_path_buf(),
        keyspace_count: false,
        ..Config::default()
    };
    let e = Engine::open(&config).unwrap();
    let mut s = e.connect("t".into()).unwrap();
    for i in 0..5 {
        run(&mut s, &format!("SET k{i} v"));
    }
    run(&mut s, "HSET h f v");
    run(&mut s, "SET gone v PX 1");
    run(&mut s, "SET later v EX 100");
    std::thread::sleep(std::time::Duration::from_millis(5));
    // The walk skips the expired key without deleting it.
    assert_eq!(run(&mut s, "DBSIZE"), Reply::Integer(7));
    assert_eq!(e.store.counts.keys(), 0, "nothing counted");
    let Reply::Bulk(info) = run(&mut s, "INFO keyspace") else {
        panic!()
    };
    assert!(String::from_utf8_lossy(&info).contains("db0:keys=7,expires=1,"));
    run(&mut s, "DEL k0 h");
    assert_eq!(run(&mut s, "DBSIZE"), Reply::Integer(5));
}

#[test]
fn a_failed_write_leaves_the_count_and_the_remembered_states_right() {
    use terrace::storage::{FaultOp, FaultRule, InjectedError, IoClass};
    let tmp = tempfile::tempdir().unwrap();
    let config = Config {
        dir: tmp.path().to_path_buf(),
        internal_fault_storage: true,
        ..Config::default()
    };
    let e = Engine::open(&config).unwrap();
    let mut s = e.connect("t".into()).unwrap();
    run(&mut s, "SET a 1");
    run(&mut s, "SET b 1");
    let fault = e.fault.clone().unwrap();
    fault.inject(FaultRule::new(&[FaultOp::Append], InjectedError::Io).of_class(IoClass::Wal));
    // Neither write lands: the count stays, and the states they recorded are forgotten.
    assert!(matches!(run(&mut s, "SET c 1"), Reply::Error(_)));
    assert!(matches!(run(&mut s, "DEL a"), Reply::Error(_)));
    fault.clear_faults();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !matches!(run(&mut s, "SET probe 1"), Reply::Ok) {
        assert!(std::time::Instant::now() < deadline, "no recovery");
        let _ = e.db().resume();
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(run(&mut s, "EXISTS a c"), Reply::Integer(1));
    assert_eq!(run(&mut s, "DBSIZE"), Reply::Integer(3));
    // Had `c` been remembered as present, this write would not count it.
    run(&mut s, "SET c 2");
    run(&mut s, "DEL a");
    assert_eq!(run(&mut s, "DBSIZE"), Reply::Integer(3));
    let walked = crate::commands::keycount::KeyCounts::recount(e.db()).unwrap();
    assert_eq!(walked.keys(), 3);
}
