//! The skiplist's search target: an internal key split into user key and trailer.

/// An internal key being searched for.
pub(super) struct Target<'a> {
    pub(super) user: &'a [u8],
    pub(super) trailer: u64,
}

impl<'a> Target<'a> {
    #[inline]
    pub(super) fn new(user: &'a [u8], trailer: u64) -> Self {
        Target { user, trailer }
    }
}
