//! The whole-file bloom filter over user keys.
//!
//! Owns: the filter block layout `bits[m/8] ++ u8 k` and the probe sequence
//! (64-bit MurmurHash64A, Kirsch–Mitzenmacher double hashing), docs/formats/sst.md.
//! Must not touch: anything else; the builder hands in hashes, the reader asks questions.
//! Concurrency: a `BloomFilter` is immutable and shared freely.

/// Seed of the key hash; part of the format.
const HASH_SEED: u64 = 0xbc9f_1d34_8a3e_55c1;

/// MurmurHash64A of `data`: fast, stable across platforms, good enough mixing for filters.
pub(crate) fn key_hash(data: &[u8]) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = HASH_SEED ^ (data.len() as u64).wrapping_mul(M);
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let mut b = [0u8; 8];
        b.copy_from_slice(c);
        let mut k = u64::from_le_bytes(b).wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut b = [0u8; 8];
        b.iter_mut().zip(rest).for_each(|(d, s)| *d = *s);
        h ^= u64::from_le_bytes(b);
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^ (h >> R)
}

/// The bit positions probed for `hash` in a filter of `m` bits.
#[inline]
fn probes(hash: u64, k: u32, m: u64) -> impl Iterator<Item = u64> {
    let h1 = hash & 0xffff_ffff;
    let h2 = (hash >> 32) | 1;
    (0..u64::from(k)).map(move |i| h1.wrapping_add(i.wrapping_mul(h2)) % m)
}

/// Builds the filter block from the hashes of the distinct user keys.
pub(crate) fn build_filter(hashes: &[u64], bits_per_key: usize) -> Vec<u8> {
    // k = bits_per_key * ln 2, rounded, clamped to [1, 30].
    let k = ((bits_per_key as f64 * std::f64::consts::LN_2).round() as u32).clamp(1, 30);
    let bits = hashes.len().saturating_mul(bits_per_key).max(64);
    let bytes = bits.div_ceil(8);
    let m = (bytes * 8) as u64;
    let mut out = vec![0u8; bytes + 1];
    for &h in hashes {
        for bit in probes(h, k, m) {
            if let Some(b) = out.get_mut((bit / 8) as usize) {
                *b |= 1 << (bit % 8);
            }
        }
    }
    if let Some(last) = out.last_mut() {
        *last = k as u8;
    }
    out
}

/// A decoded filter.
#[derive(Debug, Clone)]
pub(crate) struct BloomFilter {
    bits: bytes::Bytes,
    k: u32,
}

impl BloomFilter {
    /// Decodes a filter block.
    pub fn decode(block: bytes::Bytes) -> Result<BloomFilter, &'static str> {
        let n = block.len().checked_sub(1).ok_or("empty filter block")?;
        let k = u32::from(*block.get(n).ok_or("empty filter block")?);
        if n == 0 || !(1..=30).contains(&k) {
            return Err("bad filter parameters");
        }
        Ok(BloomFilter {
            bits: block.slice(..n),
            k,
        })
    }

    /// False only if `user_key` was certainly not added.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.may_contain_hash(key_hash(user_key))
    }

    /// `may_contain` for a precomputed [`key_hash`].
    pub fn may_contain_hash(&self, hash: u64) -> bool {
        let m = (self.bits.len() as u64) * 8;
        probes(hash, self.k, m).all(|bit| {
            self.bits
                .get((bit / 8) as usize)
                .is_some_and(|b| b & (1 << (bit % 8)) != 0)
        })
    }
}
