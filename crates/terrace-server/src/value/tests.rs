use terrace::compaction::{CompactionFilter, FilterDecision};

use super::*;

#[test]
fn round_trip_and_layout() {
    let plain = StoredValue::new(b"hi".to_vec());
    assert_eq!(plain.encode(), b"\x00hi");
    let timed = StoredValue {
        expire_at_ms: Some(0x0102),
        data: b"v".to_vec(),
    };
    assert_eq!(timed.encode(), b"\x01\0\0\0\0\0\0\x01\x02v");
    for v in [plain, timed] {
        assert_eq!(StoredValue::decode(&v.encode()), Ok(v));
    }
}

#[test]
fn header_and_split_agree_with_encode() {
    for v in [
        StoredValue::new(b"hi".to_vec()),
        StoredValue {
            expire_at_ms: Some(u64::MAX),
            data: b"".to_vec(),
        },
    ] {
        let mut joined = ValueHeader::new(v.expire_at_ms).as_bytes().to_vec();
        joined.extend_from_slice(&v.data);
        assert_eq!(joined, v.encode());
        let (at, start) = split_header(&joined).unwrap();
        assert_eq!((at, &joined[start..]), (v.expire_at_ms, v.data.as_slice()));
    }
    assert_eq!(split_header(b"\x01\0"), Err(ValueError::Truncated));
}

#[test]
fn bad_bytes_are_errors() {
    assert_eq!(StoredValue::decode(b""), Err(ValueError::Empty));
    assert_eq!(StoredValue::decode(b"\x07"), Err(ValueError::UnknownTag(7)));
    assert_eq!(StoredValue::decode(b"\x01\0\0"), Err(ValueError::Truncated));
}

#[test]
fn filter_keeps_top_level_records() {
    let f = ExpiryFilter::default();
    let past = StoredValue {
        expire_at_ms: Some(1),
        data: vec![],
    };
    let future = StoredValue {
        expire_at_ms: Some(now_ms() + 60_000),
        data: vec![],
    };
    // Expired keys leave through the server's counted deletes, not compaction.
    assert_eq!(f.filter(1, b"k", &past.encode()), FilterDecision::Keep);
    assert_eq!(f.filter(1, b"k", &future.encode()), FilterDecision::Keep);
    assert_eq!(f.filter(1, b"k", b"\x00x"), FilterDecision::Keep);
    assert_eq!(f.filter(1, b"k", b"\x09"), FilterDecision::Keep);
}

#[test]
fn the_longest_metadata_fits_its_inline_buffer() {
    let longest = CollMeta {
        kind: CollKind::Zset,
        expire_at_ms: Some(u64::MAX),
        version: u64::MAX,
        size: u64::MAX,
        head: 1,
        head_member: MemberPrefix::of(&[b'h'; 64]),
        tail: 2,
        tail_member: MemberPrefix::of(&[b't'; 64]),
    };
    let encoded = longest.encoded();
    assert_eq!(encoded.len(), MAX_COLL_META_BYTES);
    assert!(!encoded.spilled());
    assert_eq!(Top::decode(&encoded), Ok(Top::Coll(longest)));
}

#[test]
fn a_sorted_sets_bounds_round_trip_and_older_records_read_without_them() {
    let meta = CollMeta {
        kind: CollKind::Zset,
        expire_at_ms: None,
        version: 7,
        size: 3,
        head: 9,
        head_member: MemberPrefix::of(b"m3"),
        tail: 12,
        tail_member: MemberPrefix::of(b"m9"),
    };
    let bytes = meta.encode();
    assert_eq!(bytes.len(), HEADED_META_BYTES + 1 + 2 + 8 + 1 + 2);
    assert_eq!(Top::decode(&bytes), Ok(Top::Coll(meta)));
    // Only one bound set: the other reads back as none.
    let head_only = CollMeta {
        tail: u64::MAX,
        tail_member: MemberPrefix::default(),
        ..meta
    };
    assert_eq!(Top::decode(&head_only.encode()), Ok(Top::Coll(head_only)));
    assert_eq!(head_only.tail_bound(), None);
    // No bounds, as every record written before they existed: 33 bytes.
    let plain = CollMeta {
        head_member: MemberPrefix::default(),
        ..head_only
    };
    assert_eq!(plain.encode().len(), HEADED_META_BYTES);
    assert_eq!(
        Top::decode(&bytes[..HEADED_META_BYTES]),
        Ok(Top::Coll(plain))
    );
    // The tail bound is past every member starting with the tail's bytes.
    let mut bound = 12u64.to_be_bytes().to_vec();
    bound.extend_from_slice(b"m:");
    assert_eq!(meta.tail_bound(), Some(bound));
    // Only the first bytes of a long member are kept.
    let long = [b'x'; 40];
    assert_eq!(
        MemberPrefix::of(&long).as_bytes(),
        &long[..BOUND_MEMBER_BYTES]
    );
    // Short, long, or over-long fields, and bounds after a set's metadata: errors.
    for cut in HEADED_META_BYTES + 1..bytes.len() {
        assert_eq!(
            Top::decode(&bytes[..cut]),
            Err(ValueError::Truncated),
            "{cut}"
        );
    }
    // An extension that bounds nothing is not what encode writes: refused, so that a
    // record that decodes re-encodes to its bytes (found by the stored_value fuzz target).
    let mut nothing = bytes[..HEADED_META_BYTES].to_vec();
    nothing.push(0);
    nothing.extend_from_slice(&u64::MAX.to_be_bytes());
    nothing.push(0);
    assert_eq!(Top::decode(&nothing), Err(ValueError::TrailingBytes));
    let mut long_tail = bytes.clone();
    long_tail.push(b'!');
    assert_eq!(Top::decode(&long_tail), Err(ValueError::TrailingBytes));
    let mut too_long = bytes[..HEADED_META_BYTES].to_vec();
    too_long.push(BOUND_MEMBER_BYTES as u8 + 1);
    too_long.extend_from_slice(&[b'x'; BOUND_MEMBER_BYTES + 1 + 9]);
    assert_eq!(Top::decode(&too_long), Err(ValueError::Truncated));
    let mut set = CollMeta {
        kind: CollKind::Set,
        ..plain
    }
    .encode();
    set.extend_from_slice(&bytes[HEADED_META_BYTES..]);
    assert_eq!(Top::decode(&set), Err(ValueError::TrailingBytes));
}

#[test]
fn at_or_past_tail_agrees_with_the_tail_bound() {
    // Scores near the tail's, members over a small alphabet with 0xff, and tails with
    // no bound among them (none recorded, all 0xff).
    let members: Vec<Vec<u8>> = [&b""[..], b"a", b"ab", b"b", b"\xff", b"a\xff", b"\xff\xff"]
        .iter()
        .map(|m| m.to_vec())
        .collect();
    let scores = [0u64, 5, 6, 7, u64::MAX - 1, u64::MAX];
    for &tail in &scores {
        for tail_member in &members {
            let mut meta = CollMeta::new(CollKind::Zset, 1, 1, 0);
            meta.tail = tail;
            meta.tail_member = MemberPrefix::of(tail_member);
            let bound = meta.tail_bound();
            for &score in &scores {
                for member in &members {
                    let mut entry = score.to_be_bytes().to_vec();
                    entry.extend_from_slice(member);
                    let expected = bound.as_ref().is_some_and(|b| entry >= *b);
                    assert_eq!(
                        meta.at_or_past_tail(score, member),
                        expected,
                        "tail {tail} {tail_member:?}, entry {score} {member:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn member_keys_are_their_pieces_joined_inline_or_not() {
    for member_len in [0, 10, 40, 200] {
        let member = vec![b'm'; member_len];
        let built = keys::member_of_parts(keys::Sub::ZsetScore, b"zkey", 7, &[b"score", &member]);
        let mut joined = b"score".to_vec();
        joined.extend_from_slice(&member);
        // Read back by the parser, which knows the layout on its own.
        let parsed = keys::parse_member(&built).map(|m| (m.sub, m.key, m.version, m.member));
        assert_eq!(
            parsed,
            Some((keys::Sub::ZsetScore, &b"zkey"[..], 7, joined.as_slice())),
            "member of {member_len} bytes"
        );
        assert_eq!(built.spilled(), built.len() > 64);
        assert!(built.starts_with(&keys::members(keys::Sub::ZsetScore, b"zkey", 7)));
    }
}
