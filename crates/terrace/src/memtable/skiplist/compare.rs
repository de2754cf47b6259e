//! Key comparison for the skiplist's searches: the inline user-key prefix and the search
//! target (the bytewise comparison of the rest is `key::compare_bytes`).

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
