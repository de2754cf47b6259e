use proptest::prelude::*;

use super::*;

fn grant() -> SegmentGrant {
    SegmentGrant {
        index: 3,
        generation: 7,
        region_offset: 4096 + 3 * (64 << 20),
        len: 64 << 20,
        start: 128,
    }
}

#[test]
fn every_message_round_trips() {
    let requests = [
        Request::Hello {
            password: b"pw".to_vec(),
            transport: Transport::Remote,
        },
        Request::PutRemote {
            offset: 64,
            next_segment: false,
            entry: vec![1, 2, 3],
        },
        Request::Put {
            offset: 4160,
            next_segment: true,
        },
        Request::Get { key: b"k".to_vec() },
        Request::Segment,
        Request::Alloc { len: 128 },
        Request::Lookup { key: b"k".to_vec() },
        Request::Read { offset: 0, len: 9 },
    ];
    for r in requests {
        assert_eq!(Request::decode(&r.encode()).unwrap(), r);
    }
    let replies = [
        Reply::Welcome {
            grant: grant(),
            region_path: "/x/boom.region".into(),
            region_len: 1 << 30,
            reply_path: "/x/reply-1".into(),
            reply_len: 1 << 20,
        },
        Reply::Put {
            version: 99,
            next: Some(grant()),
        },
        Reply::Put {
            version: 1,
            next: None,
        },
        Reply::Get {
            len: Some(5),
            inline: None,
        },
        Reply::Get {
            len: None,
            inline: None,
        },
        Reply::Get {
            len: Some(2),
            inline: Some(b"vv".to_vec()),
        },
        Reply::Segment { grant: grant() },
        Reply::Alloc { offset: 640 },
        Reply::Data {
            bytes: b"abc".to_vec(),
        },
        Reply::Error {
            message: "no".into(),
            fatal: true,
        },
    ];
    for r in replies {
        assert_eq!(Reply::decode(&r.encode()).unwrap(), r);
    }
}

#[test]
fn frames_round_trip_and_oversized_ones_are_refused() {
    let mut wire = Vec::new();
    write_frame(&mut wire, b"hello").unwrap();
    let mut buf = Vec::new();
    let mut r = &wire[..];
    assert!(read_frame(&mut r, &mut buf).unwrap());
    assert_eq!(buf, b"hello");
    assert!(!read_frame(&mut r, &mut buf).unwrap(), "a clean end");
    let huge = ((MAX_FRAME + 1) as u32).to_le_bytes();
    assert!(read_frame(&mut &huge[..], &mut buf).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
    ))]

    /// Any bytes decode to an error or a message, never a panic.
    #[test]
    fn arbitrary_messages_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let _ = Request::decode(&bytes);
        let _ = Reply::decode(&bytes);
    }
}
