//! Key comparison for the skiplist's searches: the inline user-key prefix, the search
//! target, and a bytewise comparison tuned for short keys.

use std::cmp::Ordering;

/// Leading user-key bytes a node keeps inline, big-endian in two words, zero-padded.
pub(super) const PREFIX_BYTES: usize = 16;

/// The first [`PREFIX_BYTES`] of `user` as two big-endian words (zero-padded), so that
/// comparing prefixes as integers orders them as bytes.
#[inline]
pub(super) fn key_prefix(user: &[u8]) -> [u64; 2] {
    let mut b = [0u8; PREFIX_BYTES];
    let n = user.len().min(PREFIX_BYTES);
    if let (Some(dst), Some(src)) = (b.get_mut(..n), user.get(..n)) {
        dst.copy_from_slice(src);
    }
    let (hi, lo) = b.split_at(8);
    [
        u64::from_be_bytes(hi.try_into().unwrap_or_default()),
        u64::from_be_bytes(lo.try_into().unwrap_or_default()),
    ]
}

/// An internal key being searched for, with its prefix computed once per search.
pub(super) struct Target<'a> {
    pub(super) user: &'a [u8],
    pub(super) prefix: [u64; 2],
    pub(super) trailer: u64,
}

impl<'a> Target<'a> {
    #[inline]
    pub(super) fn new(user: &'a [u8], trailer: u64) -> Self {
        Target {
            user,
            prefix: key_prefix(user),
            trailer,
        }
    }
}

/// Bytewise order, as `<[u8]>::cmp`, eight bytes at a time and inline: the user keys of
/// the hot comparison are short, where a `memcmp` call costs more than the comparison.
#[inline]
pub(super) fn compare_bytes(a: &[u8], b: &[u8]) -> Ordering {
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        let x = u64::from_be_bytes(x.try_into().unwrap_or_default());
        let y = u64::from_be_bytes(y.try_into().unwrap_or_default());
        if x != y {
            return x.cmp(&y);
        }
    }
    // At least one side ran out of whole words; both consumed the same number.
    let done = a.len().min(b.len()) & !7;
    let (rest_a, rest_b) = (
        a.get(done..).unwrap_or_default(),
        b.get(done..).unwrap_or_default(),
    );
    for (x, y) in rest_a.iter().zip(rest_b) {
        if x != y {
            return x.cmp(y);
        }
    }
    rest_a.len().cmp(&rest_b.len())
}
