//! [`KeyBuf`]: a key kept inline when short.
//!
//! Owns: the buffer and its two representations. Must not touch: key encoding (the
//! parent module's).

use super::{pack_trailer, SeqNo, TYPE_FOR_SEEK};

/// Key bytes a [`KeyBuf`] holds without allocating: a user key of up to 56 bytes and
/// its 8-byte trailer (a Redis collection's member keys run 30-50 bytes).
const INLINE_KEY: usize = 64;

/// A key built on the stack when short: a block cursor's current key, assembled from
/// prefix-compressed entries (each point lookup positions two fresh cursors), or a point
/// lookup's seek key. Inline up to [`INLINE_KEY`] bytes, on the heap beyond.
#[derive(Debug)]
pub(crate) struct KeyBuf {
    inline: [u8; INLINE_KEY],
    /// The key when it is longer than [`INLINE_KEY`] (then `heap.len() == len`).
    heap: Vec<u8>,
    len: usize,
}

impl Default for KeyBuf {
    fn default() -> Self {
        KeyBuf {
            inline: [0; INLINE_KEY],
            heap: Vec::new(),
            len: 0,
        }
    }
}

impl KeyBuf {
    /// The seek target that finds the newest version of `user_key` visible at `seq`, as
    /// [`super::seek_key`] builds it.
    pub(crate) fn seek_key(user_key: &[u8], seq: SeqNo) -> KeyBuf {
        let mut k = KeyBuf::default();
        let trailer = pack_trailer(seq, TYPE_FOR_SEEK).to_le_bytes();
        if user_key.len() + trailer.len() > INLINE_KEY {
            // One allocation for the whole key, not one per part.
            k.heap.reserve_exact(user_key.len() + trailer.len());
        }
        k.replace_tail(0, user_key);
        k.replace_tail(user_key.len(), &trailer);
        k
    }

    #[inline]
    pub(crate) fn as_slice(&self) -> &[u8] {
        if self.len <= INLINE_KEY {
            self.inline.get(..self.len).unwrap_or_default()
        } else {
            &self.heap
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }

    /// Keeps the first `shared` bytes (at most `len`) and appends `delta`.
    // Always inlined: the block cursor's inner loop, where a call costs a third of it.
    #[inline(always)]
    pub(crate) fn replace_tail(&mut self, shared: usize, delta: &[u8]) {
        debug_assert!(shared <= self.len);
        let new_len = shared + delta.len();
        if new_len <= INLINE_KEY {
            if self.len > INLINE_KEY {
                self.inline[..shared].copy_from_slice(&self.heap[..shared]);
            }
            self.inline[shared..new_len].copy_from_slice(delta);
        } else {
            if self.len <= INLINE_KEY {
                self.heap.clear();
                self.heap.extend_from_slice(&self.inline[..shared]);
            } else {
                self.heap.truncate(shared);
            }
            self.heap.extend_from_slice(delta);
        }
        self.len = new_len;
    }
}
