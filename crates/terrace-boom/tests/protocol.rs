//! BOOM end to end on one host: a server thread on a Unix socket over a real database,
//! clients mapping the region themselves.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;

use common::Running;
use terrace_boom::proto::{read_frame, write_frame, Reply, Request};
use terrace_boom::{BoomClient, BoomError, StoreConfig};

fn small() -> StoreConfig {
    StoreConfig {
        segment_bytes: 64 << 10,
        segments: 8,
    }
}

#[test]
fn puts_and_gets_from_several_clients_across_segments_and_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let run = Running::start(dir.path(), small(), b"pw");
    let mut a = BoomClient::connect_unix(&run.socket, b"pw").unwrap();
    let mut b = BoomClient::connect_unix(&run.socket, b"pw").unwrap();
    assert_ne!(a.segment().index, b.segment().index);
    let first = a.segment();
    let mut last = 0;
    // 64 KiB segments, 1 KiB values: the clients move on to new segments as they fill.
    for i in 0..150u32 {
        let v = a
            .put(format!("a{i}").as_bytes(), &vec![b'a'; 1000])
            .unwrap();
        assert!(v > last, "versions grow");
        last = v;
        b.put(format!("b{i}").as_bytes(), format!("value {i}").as_bytes())
            .unwrap();
    }
    assert_ne!(
        a.segment().index,
        first.index,
        "a full segment got a successor"
    );
    assert_eq!(a.get(b"b7").unwrap().as_deref(), Some(&b"value 7"[..]));
    assert_eq!(b.get(b"a149").unwrap().unwrap().len(), 1000);
    assert_eq!(b.get(b"missing").unwrap(), None);
    // The engine's own API sees them too.
    assert_eq!(
        run.db.get(b"b149").unwrap().as_deref(),
        Some(&b"value 149"[..])
    );
    drop((a, b));
    let db = run.db.clone();
    run.stop();
    drop(db);
    // Restarted on the same files: every acknowledged PUT is there.
    let run = Running::start(dir.path(), small(), b"pw");
    let mut c = BoomClient::connect_unix(&run.socket, b"pw").unwrap();
    for i in 0..150u32 {
        assert_eq!(
            c.get(format!("a{i}").as_bytes()).unwrap().unwrap().len(),
            1000
        );
        assert_eq!(
            c.get(format!("b{i}").as_bytes()).unwrap(),
            Some(format!("value {i}").into_bytes())
        );
    }
    assert!(c.put(b"after", b"restart").unwrap() > last);
    drop(c);
    run.stop();
}

#[test]
fn a_wrong_password_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let run = Running::start(dir.path(), small(), b"secret");
    let err = BoomClient::connect_unix(&run.socket, b"guess").unwrap_err();
    assert!(err.to_string().contains("WRONGPASS"), "{err}");
    assert_eq!(run.store.segment_counts().1, 0, "no segment handed out");
    run.stop();
}

fn raw_call(s: &mut UnixStream, req: &[u8]) -> Option<Reply> {
    write_frame(s, req).ok()?;
    let mut frame = Vec::new();
    if !read_frame(s, &mut frame).ok()? {
        return None;
    }
    Some(Reply::decode(&frame).unwrap())
}

#[test]
fn a_client_ringing_for_garbage_is_cut_off_and_the_others_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let run = Running::start(dir.path(), small(), b"");
    let mut good = BoomClient::connect_unix(&run.socket, b"").unwrap();
    good.put(b"k", b"v").unwrap();
    let cases: Vec<Vec<u8>> = vec![
        // A doorbell before the handshake.
        Request::Put {
            offset: 0,
            next_segment: false,
        }
        .encode(),
        // An unknown message.
        vec![99, 1, 2, 3],
    ];
    for case in cases {
        let mut s = UnixStream::connect(&run.socket).unwrap();
        match raw_call(&mut s, &case) {
            Some(Reply::Error { fatal: true, .. }) => {}
            other => panic!("{other:?}"),
        }
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty(), "the server closed the connection");
    }
    // After a handshake: a doorbell for an entry that is not there, then one far out
    // of its segment.
    for offset in [0u64, 1 << 40] {
        let mut s = UnixStream::connect(&run.socket).unwrap();
        let hello = Request::Hello {
            password: vec![],
            transport: terrace_boom::proto::Transport::Socket,
        }
        .encode();
        assert!(matches!(
            raw_call(&mut s, &hello),
            Some(Reply::Welcome { .. })
        ));
        let put = Request::Put {
            offset,
            next_segment: false,
        }
        .encode();
        match raw_call(&mut s, &put) {
            Some(Reply::Error { fatal: true, .. }) => {}
            other => panic!("{other:?}"),
        }
    }
    // An oversized frame: the connection ends.
    let mut s = UnixStream::connect(&run.socket).unwrap();
    s.write_all(&u32::MAX.to_le_bytes()).unwrap();
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    // The good client never noticed.
    assert!(good.put(b"k2", b"v2").is_ok());
    assert_eq!(good.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    // Every refused client's segment was sealed, not left active.
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(
        run.store.segment_counts().1,
        1,
        "only the good client's is active"
    );
    drop(good);
    run.stop();
}

#[test]
fn clients_get_no_segment_when_none_is_free_and_others_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        segment_bytes: 64 << 10,
        segments: 2,
    };
    let run = Running::start(dir.path(), config, b"");
    let mut a = BoomClient::connect_unix(&run.socket, b"").unwrap();
    let _b = BoomClient::connect_unix(&run.socket, b"").unwrap();
    let err = BoomClient::connect_unix(&run.socket, b"").unwrap_err();
    assert!(matches!(err, BoomError::NoFreeSegment), "{err}");
    a.put(b"still", b"works").unwrap();
    drop((a, _b));
    run.stop();
}

#[test]
fn boom_takes_one_round_trip_per_request_and_the_two_phase_baseline_two() {
    use terrace_boom::{Mode, Verbs};
    let dir = tempfile::tempdir().unwrap();
    let run = Running::start(dir.path(), small(), b"");
    // One over the ring, one over the socket: the same round trips and verbs.
    let mut boom = BoomClient::connect_unix(&run.socket, b"").unwrap();
    let mut two = BoomClient::connect_unix_with(
        &run.socket,
        b"",
        terrace_boom::ClientOptions {
            mode: Mode::TwoPhase,
            transport: terrace_boom::proto::Transport::Socket,
            ..Default::default()
        },
    )
    .unwrap();
    for c in [&mut boom, &mut two] {
        assert_eq!(c.round_trips(), 1, "the handshake");
    }
    for i in 0..10u32 {
        boom.put(format!("b{i}").as_bytes(), b"x").unwrap();
        two.put(format!("t{i}").as_bytes(), b"y").unwrap();
    }
    for i in 0..10u32 {
        assert_eq!(
            two.get(format!("b{i}").as_bytes()).unwrap().as_deref(),
            Some(&b"x"[..])
        );
        assert_eq!(
            boom.get(format!("t{i}").as_bytes()).unwrap().as_deref(),
            Some(&b"y"[..])
        );
    }
    assert_eq!(boom.round_trips(), 1 + 20);
    assert_eq!(two.round_trips(), 1 + 40);
    assert_eq!(
        boom.verbs(),
        Verbs {
            sends: 20,
            writes: 0,
            write_imms: 20,
            reads: 0
        }
    );
    assert_eq!(
        two.verbs(),
        Verbs {
            sends: 50,
            writes: 0,
            write_imms: 10,
            reads: 10
        }
    );
    // The two-phase client moves to a new segment when the server says it is full.
    let big = vec![b'z'; 30_000];
    for i in 0..5u32 {
        two.put(format!("big{i}").as_bytes(), &big).unwrap();
    }
    assert_eq!(boom.get(b"big4").unwrap().unwrap().len(), 30_000);
    drop((boom, two));
    run.stop();
}

#[test]
fn garbage_in_the_ring_cuts_the_client_off() {
    use terrace_boom::ring::{channel_len, Ring};
    use terrace_boom::shm::SharedFile;
    let dir = tempfile::tempdir().unwrap();
    let run = Running::start(dir.path(), small(), b"");
    let mut good = BoomClient::connect_unix(&run.socket, b"").unwrap();
    let mut s = UnixStream::connect(&run.socket).unwrap();
    let hello = Request::Hello {
        password: vec![],
        transport: terrace_boom::proto::Transport::Ring,
    }
    .encode();
    let Some(Reply::Welcome {
        reply_path,
        reply_len,
        ..
    }) = raw_call(&mut s, &hello)
    else {
        panic!("no welcome")
    };
    assert_eq!(reply_len, channel_len(1 << 20));
    let chan = SharedFile::open_range(Path::new(&reply_path), 0, reply_len).unwrap();
    let ring = Ring::new(&chan);
    let last = ring.response_seq().unwrap();
    ring.post_request(&[42, 0, 0]).unwrap();
    let (_, frame) = ring
        .wait_response(
            last,
            std::time::Duration::ZERO,
            std::time::Duration::from_secs(10),
        )
        .unwrap()
        .unwrap();
    assert!(matches!(
        Reply::decode(&frame).unwrap(),
        Reply::Error { fatal: true, .. }
    ));
    // The server let the connection go: its socket closes and its channel file is gone.
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while Path::new(&reply_path).exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(!Path::new(&reply_path).exists());
    good.put(b"fine", b"yes").unwrap();
    drop(good);
    run.stop();
}

#[test]
fn hybrid_updates_reuse_the_older_version_s_bytes_and_a_torn_one_keeps_the_newest() {
    use terrace_boom::ClientOptions;
    let dir = tempfile::tempdir().unwrap();
    let run = Running::start(dir.path(), small(), b"");
    let mut hybrid = BoomClient::connect_unix(&run.socket, b"").unwrap();
    let mut append = BoomClient::connect_unix_with(
        &run.socket,
        b"",
        ClientOptions {
            hybrid: false,
            ..Default::default()
        },
    )
    .unwrap();
    for i in 0..100u32 {
        hybrid.put(b"hot", format!("h{i}").as_bytes()).unwrap();
        append.put(b"cold", format!("c{i}").as_bytes()).unwrap();
    }
    // Two versions' worth of space against a hundred.
    assert_eq!(hybrid.space().appended_bytes, 2 * 64);
    assert_eq!(hybrid.space().in_place_bytes, 98 * 64);
    assert_eq!(append.space().appended_bytes, 100 * 64);
    assert_eq!(hybrid.get(b"hot").unwrap().as_deref(), Some(&b"h99"[..]));
    // A bigger value does not fit the old bytes: it appends.
    hybrid.put(b"hot", &[b'x'; 100]).unwrap();
    assert_eq!(hybrid.space().appended_bytes, 2 * 64 + 192);
    hybrid.put(b"hot", b"last").unwrap();
    // A torn in-place write (the client dies mid-write, never rings): the older slot
    // holds garbage, and the newest version is still whole.
    let grant = hybrid.segment();
    let region = terrace_boom::shm::SharedFile::open_range(
        run.store.region_path(),
        grant.region_offset,
        grant.len,
    )
    .unwrap();
    region.write(128, &[0xEE; 40]).unwrap();
    drop((hybrid, append, region));
    let db = run.db.clone();
    run.stop();
    drop(db);
    let run = Running::start(dir.path(), small(), b"");
    assert_eq!(run.db.get(b"hot").unwrap().as_deref(), Some(&b"last"[..]));
    assert_eq!(run.db.get(b"cold").unwrap().as_deref(), Some(&b"c99"[..]));
    run.stop();
}

#[test]
fn an_in_place_write_over_the_newest_version_or_another_key_is_refused() {
    use terrace_boom::layout::encode_entry;
    let dir = tempfile::tempdir().unwrap();
    let run = Running::start(dir.path(), small(), b"");
    let mut c = BoomClient::connect_unix(&run.socket, b"").unwrap();
    c.put(b"k", b"1").unwrap(); // at 0
    c.put(b"k", b"2").unwrap(); // at 64, the newest
    c.put(b"j", b"3").unwrap(); // at 128
    let grant = c.segment();
    let region = terrace_boom::shm::SharedFile::open_range(
        run.store.region_path(),
        grant.region_offset,
        grant.len,
    )
    .unwrap();
    // Over the newest version of k.
    let e = encode_entry(b"k", b"9", 64, 64).unwrap();
    region.write(64, &e).unwrap();
    assert!(run.store.commit_put(run.db.as_ref(), &grant, 64).is_err());
    // Over k's older version, but as another key.
    let e = encode_entry(b"z", b"9", 0, 64).unwrap();
    region.write(0, &e).unwrap();
    assert!(run.store.commit_put(run.db.as_ref(), &grant, 0).is_err());
    // Over j's only version.
    let e = encode_entry(b"j", b"9", 128, 64).unwrap();
    region.write(128, &e).unwrap();
    assert!(run.store.commit_put(run.db.as_ref(), &grant, 128).is_err());
    assert_eq!(run.db.get(b"k").unwrap().as_deref(), Some(&b"2"[..]));
    drop((c, region));
    run.stop();
}

#[test]
fn remote_clients_over_tcp_put_and_get_in_one_round_trip_each() {
    use terrace_boom::{ClientOptions, Mode};
    let dir = tempfile::tempdir().unwrap();
    let run = Running::start(dir.path(), small(), b"pw");
    assert!(BoomClient::connect_tcp(&run.tcp, b"no", ClientOptions::default()).is_err());
    let mut r = BoomClient::connect_tcp(&run.tcp, b"pw", ClientOptions::default()).unwrap();
    let mut local = BoomClient::connect_unix(&run.socket, b"pw").unwrap();
    for i in 0..300u32 {
        r.put(format!("r{i}").as_bytes(), &vec![b'r'; 500]).unwrap();
    }
    // Over segments, with hybrid updates, values coming back inline.
    for i in 0..50u32 {
        r.put(b"hot", format!("{i}").as_bytes()).unwrap();
    }
    assert!(r.space().in_place_bytes > 0);
    assert_eq!(r.get(b"hot").unwrap().as_deref(), Some(&b"49"[..]));
    assert_eq!(local.get(b"r299").unwrap().unwrap().len(), 500);
    local.put(b"l", b"local").unwrap();
    assert_eq!(r.get(b"l").unwrap().as_deref(), Some(&b"local"[..]));
    let before = r.round_trips();
    r.put(b"once", b"1").unwrap();
    assert_eq!(r.get(b"once").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(
        r.round_trips(),
        before + 2,
        "one round trip per PUT and per GET"
    );
    // The two-phase baseline over TCP too.
    let mut two = BoomClient::connect_tcp(
        &run.tcp,
        b"pw",
        ClientOptions {
            mode: Mode::TwoPhase,
            ..Default::default()
        },
    )
    .unwrap();
    two.put(b"t", b"2").unwrap();
    assert_eq!(two.get(b"t").unwrap().as_deref(), Some(&b"2"[..]));
    // A TCP client asking for shared memory is refused.
    let mut s = std::net::TcpStream::connect(&run.tcp).unwrap();
    let hello = Request::Hello {
        password: b"pw".to_vec(),
        transport: terrace_boom::proto::Transport::Ring,
    }
    .encode();
    write_frame(&mut s, &hello).unwrap();
    let mut frame = Vec::new();
    assert!(read_frame(&mut s, &mut frame).unwrap());
    assert!(matches!(
        Reply::decode(&frame).unwrap(),
        Reply::Error { fatal: true, .. }
    ));
    drop((r, local, two));
    run.stop();
}
