use proptest::prelude::*;

use super::*;

#[test]
fn an_entry_round_trips_and_takes_whole_lines() {
    let e = encode_entry(b"key", b"value", 128, 64).unwrap();
    assert_eq!(e.len(), 64);
    let d = decode_entry(&e).unwrap();
    assert_eq!((d.key, d.value), (&b"key"[..], &b"value"[..]));
    assert_eq!(d.header.alloc_len, 64);
    assert_eq!(d.header.next_offset, 192);
    assert_eq!(entry_alloc_len(3, 29), Some(64));
    assert_eq!(entry_alloc_len(3, 30), Some(128));
    // A larger allocation (an in-place overwrite of a bigger entry) is kept.
    let big = encode_entry(b"k", b"v", 0, 256).unwrap();
    assert_eq!(decode_entry(&big).unwrap().header.alloc_len, 256);
}

#[test]
fn bad_entries_are_refused_with_a_reason() {
    assert!(encode_entry(&[0u8; 70_000], b"", 0, 1 << 20).is_err());
    assert!(encode_entry(b"k", b"v", 0, 32).is_err(), "too small");
    assert!(encode_entry(b"k", b"v", 0, 96).is_err(), "not whole lines");
    let e = encode_entry(b"key", b"value", 0, 64).unwrap();
    let mut flipped = e.clone();
    flipped[36] ^= 1;
    assert!(decode_entry(&flipped)
        .unwrap_err()
        .to_string()
        .contains("checksum"));
    let mut magic = e.clone();
    magic[0] = 0;
    assert!(decode_entry(&magic).is_err());
    // An entry claiming more than the segment has left.
    assert!(decode_header(&e, 32)
        .unwrap_err()
        .to_string()
        .contains("past its segment"));
    assert!(decode_header(&e[..10], 64).is_err());
    // The version slot is outside the checksum: the server may fill it.
    let mut versioned = e;
    versioned[24..32].copy_from_slice(&7u64.to_le_bytes());
    assert!(decode_entry(&versioned).is_ok());
}

#[test]
fn commit_records_and_slots_round_trip_and_detect_damage() {
    let r = CommitRecord {
        offset: 4096,
        alloc_len: 128,
        version: 1 << 40,
        entry_crc: 0xdead_beef,
    };
    let mut b = r.encode();
    assert_eq!(CommitRecord::decode(&b), Some(r));
    b[9] ^= 1;
    assert_eq!(CommitRecord::decode(&b), None);
    assert_eq!(CommitRecord::decode(&[0u8; COMMIT_RECORD_BYTES]), None);

    for state in [
        SegmentState::Free,
        SegmentState::Active,
        SegmentState::Sealed,
    ] {
        let s = SegmentSlot {
            state,
            generation: 9,
        };
        assert_eq!(SegmentSlot::decode(&s.encode()).unwrap(), s);
    }
    let zero = SegmentSlot::decode(&[0u8; 16]).unwrap();
    assert_eq!(zero.state, SegmentState::Free);
    let mut bad = SegmentSlot {
        state: SegmentState::Active,
        generation: 1,
    }
    .encode();
    bad[5] ^= 1;
    assert!(SegmentSlot::decode(&bad).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
    ))]

    /// Any bytes decode to an error or to an entry whose parts lie inside them: never a
    /// panic, never a read out of bounds.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300), room in 0u64..400) {
        let _ = decode_header(&bytes, room);
        if let Ok(e) = decode_entry(&bytes) {
            prop_assert!(e.key.len() + e.value.len() + ENTRY_HEADER_BYTES <= bytes.len());
        }
        let _ = CommitRecord::decode(&bytes);
        let _ = SegmentSlot::decode(&bytes);
    }

    #[test]
    fn entries_round_trip(key in prop::collection::vec(any::<u8>(), 0..100), value in prop::collection::vec(any::<u8>(), 0..300), offset in 0u32..1_000_000) {
        let len = entry_alloc_len(key.len(), value.len()).unwrap();
        let e = encode_entry(&key, &value, offset, len).unwrap();
        let d = decode_entry(&e).unwrap();
        prop_assert_eq!(d.key, &key[..]);
        prop_assert_eq!(d.value, &value[..]);
        prop_assert_eq!(d.header.next_offset, offset + len);
    }
}
