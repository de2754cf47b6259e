//! The skiplist's search target: an internal key with its user-key prefix
//! (`key::key_prefix`) computed once per search.

use crate::key::key_prefix;

/// An internal key being searched for, with its prefix computed once per search.
pub(super) struct Target<'a> {
    pub(super) user: &'a [u8],
    pub(super) prefix: [u64; 2],
    pub(super) trailer: u64,
    /// Whether a search compares nodes from the bytes they already share with this
    /// target (`Node::cmp_from`) rather than by the prefix words (`Node::cmp_to`): for
    /// keys longer than [`LONG_KEY`], whose neighbours tend to share more than the
    /// prefix words hold (a collection's members, 30-50 bytes with a common start).
    /// Shorter keys, such as a string's, mostly differ within the prefix words, where
    /// `cmp_to` and a loop without the common-prefix bookkeeping are the cheaper (a
    /// pipelined SET's shard thread ran 7% more instructions with `cmp_from`). A batch
    /// is searched one way or the other (all long, or not).
    pub(super) long: bool,
}

/// User-key length above which a search compares from the shared bytes (see
/// [`Target::long`]).
const LONG_KEY: usize = 24;

impl<'a> Target<'a> {
    #[inline]
    pub(super) fn new(user: &'a [u8], trailer: u64) -> Self {
        Target {
            user,
            prefix: key_prefix(user),
            trailer,
            long: user.len() > LONG_KEY,
        }
    }
}
