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
