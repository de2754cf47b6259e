//! The skiplist's search target: an internal key with its user-key prefix
//! (`key::key_prefix`) computed once per search.

use crate::key::key_prefix;

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
