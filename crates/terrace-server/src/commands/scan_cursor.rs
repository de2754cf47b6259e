//! SCAN's cursors over the top-level keys: what a cursor number says and how the server
//! turns it back into the key to resume from. Owns the cursor encoding and the bounded
//! table of exact resume keys; it must not touch the store (the caller walks the keys).
//!
//! Keys are stored in byte order (so that TRANGE and prefix walks are range reads), and
//! no 64-bit number can name any position among keys of any length. A cursor therefore
//! carries two things:
//!
//! ```text
//! cursor := 0 prefix:48 serial:15      (bit 63 clear: clients that parse i64 accept it)
//! prefix := the first 6 bytes of the key to resume from, zero-padded
//! serial := 1..=32767, tells apart cursors with the same prefix
//! ```
//!
//! The server remembers the exact resume key of its latest [`MAX_EXACT`] cursors. A cursor
//! it has forgotten (evicted, or issued before a restart) resumes from its prefix, which
//! sorts at or before the key it stood for: the scan may return keys again but never
//! skips one, so Redis's guarantee (every key present for the whole scan is returned)
//! holds whatever the table forgot.

use std::collections::{HashMap, VecDeque};

/// Most exact resume keys remembered; older cursors resume from their prefix.
pub(crate) const MAX_EXACT: usize = 4096;

const PREFIX_BYTES: usize = 6;
const SERIAL_BITS: u32 = 15;
const SERIAL_MASK: u64 = (1 << SERIAL_BITS) - 1;

/// The table of exact resume keys, by cursor.
#[derive(Default)]
pub(crate) struct ScanCursors {
    serial: u64,
    exact: HashMap<u64, Vec<u8>>,
    order: VecDeque<u64>,
}

impl ScanCursors {
    /// The cursor to hand a client whose scan resumes at `key`; never 0.
    pub(crate) fn save(&mut self, key: Vec<u8>) -> u64 {
        self.serial = self.serial % SERIAL_MASK + 1;
        let id = (prefix_bits(&key) << SERIAL_BITS) | self.serial;
        if self.exact.insert(id, key).is_none() {
            self.order.push_back(id);
        }
        while self.order.len() > MAX_EXACT {
            if let Some(old) = self.order.pop_front() {
                self.exact.remove(&old);
            }
        }
        id
    }

    /// The key cursor `id` resumes at: the exact key if remembered, else its prefix
    /// (which sorts at or before it). Cursor 0 starts at the first key.
    pub(crate) fn resume_key(&self, id: u64) -> Vec<u8> {
        if let Some(key) = self.exact.get(&id) {
            return key.clone();
        }
        let prefix = ((id >> SERIAL_BITS) << 16).to_be_bytes();
        let mut key = prefix[..PREFIX_BYTES].to_vec();
        // The padding zeros are not part of the key: "ab" pads to "ab\0\0\0\0", which
        // sorts after "ab" itself.
        while key.last() == Some(&0) {
            key.pop();
        }
        key
    }
}

/// The first [`PREFIX_BYTES`] bytes of `key` as a 48-bit big-endian number, zero-padded.
fn prefix_bits(key: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = key.len().min(PREFIX_BYTES);
    b[2..2 + n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_remembered_cursor_resumes_at_its_exact_key() {
        let mut c = ScanCursors::default();
        let id = c.save(b"user:000123".to_vec());
        assert_ne!(id, 0);
        assert!(id < 1 << 63);
        assert_eq!(c.resume_key(id), b"user:000123");
        assert_eq!(c.resume_key(0), b"");
    }

    #[test]
    fn a_forgotten_cursor_resumes_from_its_prefix() {
        let mut c = ScanCursors::default();
        let first = c.save(b"user:000123".to_vec());
        for i in 0..MAX_EXACT {
            c.save(format!("k{i}").into_bytes());
        }
        assert_eq!(c.exact.len(), MAX_EXACT);
        assert_eq!(c.resume_key(first), b"user:0");
        let fresh = ScanCursors::default();
        assert_eq!(fresh.resume_key(first), b"user:0");
    }

    #[test]
    fn serials_tell_apart_cursors_of_one_prefix() {
        let mut c = ScanCursors::default();
        let a = c.save(b"same-prefix-a".to_vec());
        let b = c.save(b"same-prefix-b".to_vec());
        assert_ne!(a, b);
        assert_eq!(c.resume_key(a), b"same-prefix-a");
        assert_eq!(c.resume_key(b), b"same-prefix-b");
    }

    proptest! {
        // Whatever the table forgot, the resume key never sorts after the key the cursor
        // was issued for, and a cursor is never 0 and fits an i64.
        #[test]
        fn a_forgotten_cursor_never_resumes_past_its_key(
            key in proptest::collection::vec(any::<u8>(), 0..12),
            serials in 0usize..40_000,
        ) {
            let mut c = ScanCursors::default();
            for _ in 0..serials % 100 {
                c.save(Vec::new());
            }
            c.serial = serials as u64 % SERIAL_MASK;
            let id = c.save(key.clone());
            prop_assert!(id != 0 && id < 1 << 63);
            prop_assert_eq!(c.resume_key(id), key.clone());
            let forgotten = ScanCursors::default().resume_key(id);
            prop_assert!(forgotten <= key);
        }
    }
}
