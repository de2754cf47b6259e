use std::path::Path;

use super::*;

fn ops(b: &WriteBatch) -> Vec<BatchOp<'_>> {
    b.iter().collect::<Result<Vec<_>>>().unwrap()
}

fn sample() -> WriteBatch {
    let mut b = WriteBatch::new();
    b.put(b"k1", b"v1");
    b.delete(b"k2");
    b.delete_range(b"a", b"z");
    b.put(b"", b"");
    b.put(&[7u8; 300], &[9u8; 20_000]);
    b.set_sequence(100);
    b
}

#[test]
fn empty_batch() {
    let b = WriteBatch::default();
    assert!(b.is_empty());
    assert_eq!(b.count(), 0);
    assert_eq!(b.sequence(), 0);
    assert_eq!(b.data().len(), HEADER_LEN);
    assert_eq!(b.approximate_size(), HEADER_LEN);
    assert!(ops(&b).is_empty());
}

#[test]
fn layout_matches_leveldb() {
    let mut b = WriteBatch::new();
    b.set_sequence(0x0102);
    b.put(b"ab", b"c");
    b.delete(b"d");
    let want: Vec<u8> = [
        &[0x02, 0x01, 0, 0, 0, 0, 0, 0][..],
        &[2, 0, 0, 0],
        &[1, 2, b'a', b'b', 1, b'c'],
        &[0, 1, b'd'],
    ]
    .concat();
    assert_eq!(b.data(), want.as_slice());
}

#[test]
fn put_parts_is_put_of_the_joined_value() {
    let mut parts = WriteBatch::new();
    parts.put_parts(b"k", &[b"\x00", b"", b"value"]);
    parts.put_parts(b"e", &[]);
    let mut joined = WriteBatch::new();
    joined.put(b"k", b"\x00value");
    joined.put(b"e", b"");
    assert_eq!(parts, joined);
}

#[test]
fn build_and_iterate() {
    let b = sample();
    assert_eq!(b.count(), 5);
    assert_eq!(b.sequence(), 100);
    let got = ops(&b);
    assert_eq!(
        got[..4],
        [
            BatchOp::Put {
                key: b"k1",
                value: b"v1"
            },
            BatchOp::Delete { key: b"k2" },
            BatchOp::DeleteRange {
                start: b"a",
                end: b"z"
            },
            BatchOp::Put {
                key: b"",
                value: b""
            },
        ]
    );
    assert_eq!(
        got[4],
        BatchOp::Put {
            key: &[7u8; 300],
            value: &[9u8; 20_000]
        }
    );
    assert_eq!(got[2].kind(), ValueType::RangeDeletion);
    assert_eq!((&b).into_iter().count(), 5);
}

#[test]
fn record_round_trip() {
    let b = sample();
    let back = WriteBatch::from_record(b.data().to_vec(), Path::new("x.log"), 0).unwrap();
    assert_eq!(back, b);
    assert_eq!(ops(&back), ops(&b));
}

#[test]
fn append_concatenates_and_clear_resets() {
    let mut a = WriteBatch::new();
    a.put(b"a", b"1");
    a.set_sequence(10);
    let mut b = WriteBatch::new();
    b.delete(b"b");
    b.delete_range(b"c", b"d");
    b.set_sequence(99);
    a.append(&b);
    assert_eq!(a.count(), 3);
    assert_eq!(a.sequence(), 10);
    assert_eq!(ops(&a)[1], BatchOp::Delete { key: b"b" });
    a.append(&WriteBatch::new());
    assert_eq!(a.count(), 3);
    a.clear();
    assert!(a.is_empty());
    assert_eq!(a.sequence(), 0);
    assert_eq!(a.data().len(), HEADER_LEN);
}

#[test]
fn varint_round_trip() {
    for v in [
        0u32,
        1,
        127,
        128,
        16_383,
        16_384,
        1 << 21,
        1 << 28,
        u32::MAX,
    ] {
        let mut buf = Vec::new();
        put_varint32(&mut buf, v);
        assert_eq!(get_varint32(&buf, 0).unwrap(), (v, buf.len()));
    }
    assert!(get_varint32(&[0xff, 0xff, 0xff, 0xff, 0x1f], 0).is_err());
    assert!(get_varint32(&[0x80, 0x80], 0).is_err());
}

#[test]
fn short_header_is_corruption() {
    for n in 0..HEADER_LEN {
        let err = WriteBatch::from_record(vec![0; n], Path::new("x.log"), 7).unwrap_err();
        assert!(err.is_corruption());
    }
}

#[test]
fn every_truncation_is_rejected() {
    let data = sample().data().to_vec();
    for n in HEADER_LEN..data.len() {
        let r = WriteBatch::from_record(data[..n].to_vec(), Path::new("x.log"), 40);
        match r {
            Err(Error::Corruption { offset, .. }) => assert_eq!(offset, 40),
            other => panic!("truncated to {n}: {other:?}"),
        }
    }
}

#[test]
fn wrong_count_is_rejected() {
    let mut data = sample().data().to_vec();
    data[8] = 4;
    let err = WriteBatch::from_record(data, Path::new("x.log"), 0).unwrap_err();
    assert!(err.to_string().contains("counts 4"), "{err}");
}

#[test]
fn bad_tag_is_rejected() {
    let mut data = sample().data().to_vec();
    data[HEADER_LEN] = 9;
    assert!(WriteBatch::from_record(data, Path::new("x.log"), 0)
        .unwrap_err()
        .is_corruption());
}

#[test]
fn sequence_overflow_is_rejected() {
    let mut b = sample();
    b.set_sequence(MAX_SEQ - 2);
    assert!(WriteBatch::from_record(b.data().to_vec(), Path::new("x"), 0).is_err());
    b.set_sequence(MAX_SEQ - 4);
    assert!(WriteBatch::from_record(b.data().to_vec(), Path::new("x"), 0).is_ok());
}

#[test]
fn flipped_bytes_never_panic() {
    let data = sample().data().to_vec();
    for i in 0..data.len().min(400) {
        for bit in [0x01u8, 0x80] {
            let mut d = data.clone();
            d[i] ^= bit;
            if let Ok(b) = WriteBatch::from_record(d, Path::new("x"), 0) {
                // Flips inside key or value bytes still decode; every op must iterate.
                assert!(b.iter().all(|op| op.is_ok()));
            }
        }
    }
}

#[test]
fn iterator_reports_bad_bytes_once() {
    let mut b = WriteBatch::new();
    b.rep.extend_from_slice(&[1, 5, b'a']);
    let mut it = b.iter();
    assert!(it.next().unwrap().is_err());
    assert!(it.next().is_none());
}
