use super::*;

#[test]
fn sixteen_byte_keys_are_big_endian_then_zero_padded() {
    let k = key_of(0x0102_0304_0506_0708, 16);
    assert_eq!(&k[..8], &[1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(&k[8..], b"00000000");
    assert_eq!(key_of(1, 16), b"\0\0\0\0\0\0\0\x0100000000".to_vec());
}

#[test]
fn keys_sort_like_their_numbers() {
    let mut last = key_of(0, 16);
    for n in [1u64, 255, 256, 65_535, 1 << 40, u64::MAX] {
        let k = key_of(n, 16);
        assert!(k > last, "{n}");
        last = k;
    }
}

#[test]
fn short_keys_keep_the_low_bytes_and_long_keys_pad() {
    assert_eq!(key_of(0x0102_0304, 2), vec![3, 4]);
    let k = key_of(7, 20);
    assert_eq!(k.len(), 20);
    assert_eq!(k[7], 7);
    assert!(k[8..].iter().all(|b| *b == b'0'));
}

#[test]
fn values_have_the_asked_length_and_wrap() {
    let mut g = ValueGenerator::new(100, 0.5);
    let first = g.generate(100).to_vec();
    assert_eq!(first.len(), 100);
    // Half of each 100-byte piece repeats its first half.
    assert_eq!(&first[..50], &first[50..]);
    for _ in 0..20_000 {
        assert_eq!(g.generate(100).len(), 100);
    }
    let big = ValueGenerator::new(3 << 20, 0.5).generate(3 << 20).len();
    assert_eq!(big, 3 << 20);
}
