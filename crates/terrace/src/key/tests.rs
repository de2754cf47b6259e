use super::*;

#[test]
fn newer_versions_sort_first() {
    let a = internal_key(b"k", 5, ValueType::Value);
    let b = internal_key(b"k", 3, ValueType::Value);
    let c = internal_key(b"l", 9, ValueType::Value);
    assert_eq!(compare(&a, &b), Ordering::Less);
    assert_eq!(compare(&b, &c), Ordering::Less);
    assert_eq!(compare(&a, &a), Ordering::Equal);
}

#[test]
fn seek_key_lands_on_visible_version() {
    let target = seek_key(b"k", 4);
    let newer = internal_key(b"k", 5, ValueType::Value);
    let visible = internal_key(b"k", 4, ValueType::Deletion);
    assert_eq!(compare(&newer, &target), Ordering::Less);
    assert_eq!(compare(&target, &visible), Ordering::Less);
}

#[test]
fn round_trip_and_bad_keys() {
    let k = internal_key(b"user", MAX_SEQ, ValueType::RangeDeletion);
    let p = try_parse(&k).unwrap();
    assert_eq!(p.user_key, b"user");
    assert_eq!(p.seq, MAX_SEQ);
    assert_eq!(p.kind, ValueType::RangeDeletion);
    assert!(try_parse(b"short").is_err());
    let mut bad = internal_key(b"x", 1, ValueType::Value);
    let n = bad.len();
    bad[n - 8] = 9;
    assert!(try_parse(&bad).is_err());
    assert!(parse(&bad, std::path::Path::new("f"), 7)
        .unwrap_err()
        .is_corruption());
}

#[test]
fn range_deletion_sentinel_sorts_before_real_entries() {
    // A file whose largest key is a range-deletion end sentinel (e, MAX_SEQ) must sort
    // before any real entry of `e`, so that the next file can start at `e`.
    let sentinel = internal_key(b"e", MAX_SEQ, ValueType::RangeDeletion);
    let real = internal_key(b"e", 100, ValueType::Value);
    assert_eq!(compare(&sentinel, &real), Ordering::Less);
}

#[test]
fn key_prefix_orders_as_bytes() {
    assert_eq!(key_prefix(b""), [0, 0]);
    assert_eq!(key_prefix(b"\x01"), [1 << 56, 0]);
    assert_eq!(
        key_prefix(b"0123456789abcdefXYZ"),
        [
            u64::from_be_bytes(*b"01234567"),
            u64::from_be_bytes(*b"89abcdef")
        ]
    );
}

proptest::proptest! {
    #[test]
    fn compare_bytes_is_slice_order(
        a in proptest::collection::vec(0u8..3, 0..20),
        b in proptest::collection::vec(0u8..3, 0..20),
    ) {
        proptest::prop_assert_eq!(compare_bytes(&a, &b), a.cmp(&b));
        proptest::prop_assert_eq!(compare_bytes(&a, &a), Ordering::Equal);
    }

    /// From any point up to where the keys first differ, `compare_from` gives the slice
    /// order and the common prefix's length (keys sharing a long prefix, as one
    /// collection's members do, and differing in any word or in the tail).
    #[test]
    fn compare_from_is_slice_order_and_common_prefix(
        shared in proptest::collection::vec(0u8..3, 0..30),
        a_tail in proptest::collection::vec(0u8..3, 0..20),
        b_tail in proptest::collection::vec(0u8..3, 0..20),
        skip_share in 0.0f64..=1.0,
    ) {
        let a = [shared.as_slice(), &a_tail].concat();
        let b = [shared.as_slice(), &b_tail].concat();
        let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
        let skip = (common as f64 * skip_share) as usize;
        proptest::prop_assert_eq!(compare_from(&a, &b, skip), (a.cmp(&b), common));
        proptest::prop_assert_eq!(compare_from(&b, &a, skip), (b.cmp(&a), common));
        proptest::prop_assert_eq!(compare_from(&a, &a, skip), (Ordering::Equal, a.len()));
    }
}

#[test]
fn key_buf_seek_key_matches_seek_key_inline_and_on_the_heap() {
    for len in [0, 1, 16, 31, 32, 33, 40, 41, 55, 56, 57, 64, 100] {
        let uk: Vec<u8> = (0..len).map(|i| i as u8).collect();
        for seq in [0, 7, MAX_SEQ] {
            let k = KeyBuf::seek_key(&uk, seq);
            assert_eq!(k.as_slice(), seek_key(&uk, seq).as_slice(), "len {len}");
            assert_eq!(k.len(), len + TRAILER_LEN);
        }
    }
    // Shrinking back from the heap keeps the shared prefix.
    let mut k = KeyBuf::seek_key(&[7u8; 90], 1);
    k.replace_tail(3, b"ab");
    assert_eq!(k.as_slice(), &[7, 7, 7, b'a', b'b']);
    k.clear();
    assert!(k.as_slice().is_empty());
}
