//! Keys and values made the way db_bench makes them, so that numbers are comparable.
//!
//! Owns: db_bench's key format (the number as up to 8 big-endian bytes, padded with `'0'`
//! to the key size) and its value generator (a 1 MiB buffer of pieces that compress to
//! `compression_ratio`, handed out in consecutive slices).
//! Must not touch: the database.
//! Concurrency: one `ValueGenerator` per thread.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[cfg(test)]
mod tests;

/// Writes db_bench's key for `n` into `key` (resized to `key_size`): the low
/// `min(key_size, 8)` bytes of `n` in big-endian order, then `'0'` bytes.
pub fn format_key(n: u64, key_size: usize, key: &mut Vec<u8>) {
    key.clear();
    let fill = key_size.min(8);
    let be = n.to_be_bytes();
    key.extend_from_slice(be.get(8 - fill..).unwrap_or(&[]));
    key.resize(key_size, b'0');
}

/// A key of `key_size` bytes for `n` (see [`format_key`]).
pub fn key_of(n: u64, key_size: usize) -> Vec<u8> {
    let mut k = Vec::with_capacity(key_size);
    format_key(n, key_size, &mut k);
    k
}

/// db_bench's `RandomGenerator`: a buffer of at least 1 MiB made of 100-byte pieces, each
/// a random printable prefix of `ratio * 100` bytes repeated to fill the piece, so that
/// values compress to about `ratio` of their size.
#[derive(Debug, Clone)]
pub struct ValueGenerator {
    data: Vec<u8>,
    pos: usize,
}

impl ValueGenerator {
    /// A generator for values up to `value_size` bytes, seeded like db_bench's (301).
    pub fn new(value_size: usize, ratio: f64) -> Self {
        let mut rng = StdRng::seed_from_u64(301);
        let target = value_size.max(1 << 20);
        let mut data = Vec::with_capacity(target + 100);
        while data.len() < target {
            let raw_len = ((100.0 * ratio) as usize).clamp(1, 100);
            let raw: Vec<u8> = (0..raw_len)
                .map(|_| b' ' + rng.gen_range(0..95u8))
                .collect();
            let mut piece = 0;
            while piece < 100 {
                let take = raw.len().min(100 - piece);
                data.extend_from_slice(raw.get(..take).unwrap_or(&[]));
                piece += take;
            }
        }
        ValueGenerator { data, pos: 0 }
    }

    /// The next `len` bytes of the buffer, wrapping to its start when it runs out.
    pub fn generate(&mut self, len: usize) -> &[u8] {
        if self.pos + len > self.data.len() {
            self.pos = 0;
        }
        let start = self.pos;
        self.pos += len;
        self.data.get(start..start + len).unwrap_or(&[])
    }
}
