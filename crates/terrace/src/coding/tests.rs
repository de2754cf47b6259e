use proptest::prelude::*;

use super::*;

/// Values at every varint length boundary.
const EDGES: [u64; 14] = [
    0,
    1,
    127,
    128,
    16_383,
    16_384,
    (1 << 21) - 1,
    1 << 21,
    (1 << 28) - 1,
    1 << 28,
    u32::MAX as u64,
    1 << 35,
    (1 << 63) - 1,
    u64::MAX,
];

fn varint64(v: u64) -> Vec<u8> {
    let mut b = Vec::new();
    put_varint64(&mut b, v);
    b
}

#[test]
fn varints_round_trip_at_every_length() {
    for v in EDGES {
        let b = varint64(v);
        assert_eq!(get_varint64(&b, 0), Ok((v, b.len())));
        if let Ok(v32) = u32::try_from(v) {
            let mut b32 = Vec::new();
            put_varint32(&mut b32, v32);
            assert_eq!(b32, b, "varint32 and varint64 bytes differ for {v}");
            assert_eq!(get_varint32(&b32, 0), Ok((v32, b.len())));
        } else {
            assert_eq!(get_varint32(&b, 0), Err(VarintError::Overflow));
        }
    }
    assert_eq!(varint64(u64::from(u32::MAX)).len(), MAX_VARINT32_LEN);
    assert_eq!(varint64(u64::MAX).len(), MAX_VARINT64_LEN);
}

#[test]
fn decoding_starts_at_pos_and_returns_the_end() {
    let mut b = vec![0xaa, 0xbb];
    put_varint64(&mut b, 300);
    b.push(0x7f);
    assert_eq!(get_varint64(&b, 2), Ok((300, 4)));
    assert_eq!(get_varint32(&b, 4), Ok((0x7f, 5)));
    assert_eq!(get_varint32(&b, 5), Err(VarintError::Truncated));
    assert_eq!(get_varint64(&b, usize::MAX), Err(VarintError::Truncated));
}

/// Bytes the encoders wrote before this module existed (sst `format`, version `field`
/// and `batch` each had a copy): the same bytes, and they still decode.
#[test]
fn bytes_of_the_former_encoders_still_decode() {
    let golden: [(u64, &[u8]); 6] = [
        (0, &[0x00]),
        (300, &[0xac, 0x02]),
        (u64::from(u32::MAX), &[0xff, 0xff, 0xff, 0xff, 0x0f]),
        (1 << 35, &[0x80, 0x80, 0x80, 0x80, 0x80, 0x01]),
        (
            u64::MAX,
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
        ),
        (
            (1 << 63) - 1,
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f],
        ),
    ];
    for (v, bytes) in golden {
        assert_eq!(varint64(v), bytes);
        assert_eq!(get_varint64(bytes, 0), Ok((v, bytes.len())));
    }
    // Padded (non-minimal) forms within the length bound were accepted and still are.
    assert_eq!(get_varint32(&[0x80, 0x00], 0), Ok((0, 2)));
    assert_eq!(get_varint64(&[0x81, 0x80, 0x00], 0), Ok((1, 3)));
}

#[test]
fn truncated_varints_are_rejected() {
    for v in EDGES {
        let b = varint64(v);
        for cut in 0..b.len() {
            assert_eq!(get_varint64(&b[..cut], 0), Err(VarintError::Truncated));
            if v <= u64::from(u32::MAX) {
                assert_eq!(get_varint32(&b[..cut], 0), Err(VarintError::Truncated));
            }
        }
    }
}

#[test]
fn overlong_or_too_large_varints_are_rejected() {
    // varint32: a 5th byte above 0x0f passes 2^32; a 6th byte is too long, even if the
    // value would fit (the format pages allow at most 5 bytes).
    assert_eq!(
        get_varint32(&[0xff, 0xff, 0xff, 0xff, 0x1f], 0),
        Err(VarintError::Overflow)
    );
    assert_eq!(
        get_varint32(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x00], 0),
        Err(VarintError::Overflow)
    );
    // varint64: a 10th byte above 1 passes 2^64; an 11th byte is too long.
    let mut b = vec![0xff; 9];
    b.push(0x02);
    assert_eq!(get_varint64(&b, 0), Err(VarintError::Overflow));
    assert_eq!(get_varint64(&[0xff; 11], 0), Err(VarintError::Overflow));
    let mut b = vec![0x80; 10];
    b.push(0x00);
    assert_eq!(get_varint64(&b, 0), Err(VarintError::Overflow));
}

#[test]
fn fixed_width_integers_are_little_endian_and_bounded() {
    let mut b = Vec::new();
    put_fixed32(&mut b, 0x0403_0201);
    put_fixed64(&mut b, 0x0c0b_0a09_0807_0605);
    assert_eq!(b, (1..=12).collect::<Vec<u8>>());
    assert_eq!(get_fixed32(&b, 0), Some(0x0403_0201));
    assert_eq!(get_fixed64(&b, 4), Some(0x0c0b_0a09_0807_0605));
    assert_eq!(get_fixed32(&b, 9), None);
    assert_eq!(get_fixed64(&b, 5), None);
    assert_eq!(get_fixed32(&b, usize::MAX - 1), None);
    assert_eq!(get_fixed64(&b, usize::MAX), None);
}

proptest! {
    // The case count comes from PROPTEST_CASES (proptest's default configuration).
    #[test]
    fn any_bytes_decode_or_fail_within_bounds(data in proptest::collection::vec(any::<u8>(), 0..16), pos in 0usize..18) {
        if let Ok((v, end)) = get_varint64(&data, pos) {
            prop_assert!(end > pos && end - pos <= MAX_VARINT64_LEN && end <= data.len());
            // Re-encoding gives the minimal form, never longer than what was read.
            prop_assert!(varint64(v).len() <= end - pos);
        }
        if let Ok((v, end)) = get_varint32(&data, pos) {
            prop_assert!(end > pos && end - pos <= MAX_VARINT32_LEN && end <= data.len());
            prop_assert_eq!(get_varint64(&data, pos), Ok((u64::from(v), end)));
        }
    }

    #[test]
    fn any_value_round_trips(v in any::<u64>(), prefix in 0usize..4) {
        let mut b = vec![0u8; prefix];
        put_varint64(&mut b, v);
        prop_assert_eq!(get_varint64(&b, prefix), Ok((v, b.len())));
        let mut f = vec![0u8; prefix];
        put_fixed64(&mut f, v);
        put_fixed32(&mut f, v as u32);
        prop_assert_eq!(get_fixed64(&f, prefix), Some(v));
        prop_assert_eq!(get_fixed32(&f, prefix + 8), Some(v as u32));
    }
}
