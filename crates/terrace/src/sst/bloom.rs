//! The whole-file bloom filter over user keys.
//!
//! Owns: the two filter block layouts and their probe sequences (docs/formats/sst.md), over
//! a 64-bit MurmurHash64A of the key:
//! - blocked (`terrace.filter.blocked`, what the builder writes): 64-byte lines, every
//!   probe of a key in one line, so a lookup costs one cache miss and no division;
//! - whole-bit-array (`terrace.filter.bloom`, tables written before): probes anywhere in
//!   `m` bits by Kirsch–Mitzenmacher double hashing, read for compatibility.
//!
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

/// Bytes of a line of the blocked filter: one cache line.
const LINE_BYTES: usize = 64;
/// Bits of a line.
const LINE_BITS: u32 = 512;
/// The multiplier that moves a blocked filter's probe on (the 32-bit golden ratio).
const PROBE_STEP: u32 = 0x9e37_79b9;

/// The number of probes for `bits_per_key`: `round(bits_per_key * ln 2)` in [1, 30].
fn probe_count(bits_per_key: usize) -> u32 {
    ((bits_per_key as f64 * std::f64::consts::LN_2).round() as u32).clamp(1, 30)
}

/// The line of a blocked filter of `lines` lines that `hash` probes, and its bits.
#[inline]
fn blocked_probes(hash: u64, k: u32, lines: usize) -> (usize, impl Iterator<Item = u32>) {
    // Fast range reduction of the upper half: no division.
    let line = ((hash >> 32) * lines as u64) >> 32;
    let mut h = hash as u32;
    let bits = (0..k).map(move |_| {
        let bit = h >> (32 - LINE_BITS.trailing_zeros());
        h = h.wrapping_mul(PROBE_STEP);
        bit
    });
    (line as usize, bits)
}

/// Builds the blocked filter block from the hashes of the distinct user keys:
/// `lines[64 * L] ++ u8 k` with `L = ceil(max(512, n * bits_per_key) / 512)`.
pub(crate) fn build_filter(hashes: &[u64], bits_per_key: usize) -> Vec<u8> {
    let k = probe_count(bits_per_key);
    let bits = hashes
        .len()
        .saturating_mul(bits_per_key)
        .max(LINE_BITS as usize);
    // Lines are addressed from the upper 32 bits of the hash: at most 2^32 of them.
    let lines = bits.div_ceil(LINE_BITS as usize).min(u32::MAX as usize);
    let mut out = vec![0u8; lines * LINE_BYTES + 1];
    for &h in hashes {
        let (line, bits) = blocked_probes(h, k, lines);
        for bit in bits {
            let byte = line * LINE_BYTES + (bit / 8) as usize;
            if let Some(b) = out.get_mut(byte) {
                *b |= 1 << (bit % 8);
            }
        }
    }
    if let Some(last) = out.last_mut() {
        *last = k as u8;
    }
    out
}

/// Builds a whole-bit-array filter block (`bits[m/8] ++ u8 k`), the layout of tables
/// written before the blocked filter; kept to test that they still read.
#[cfg(test)]
pub(crate) fn build_whole_filter(hashes: &[u64], bits_per_key: usize) -> Vec<u8> {
    let k = probe_count(bits_per_key);
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

/// One 64-byte line of a blocked filter, aligned so that it is one cache line.
#[derive(Debug, Clone, Copy)]
#[repr(align(64))]
struct Line([u8; LINE_BYTES]);

/// A filter's bits, by layout.
#[derive(Debug, Clone)]
enum Bits {
    /// Whole-bit-array: probes anywhere in the bits.
    Whole(bytes::Bytes),
    /// Blocked: copied into aligned lines at decode.
    Blocked(std::sync::Arc<[Line]>),
}

/// A decoded filter.
#[derive(Debug, Clone)]
pub(crate) struct BloomFilter {
    bits: Bits,
    k: u32,
}

impl BloomFilter {
    /// Decodes a blocked filter block (see [`build_filter`]).
    pub fn decode(block: bytes::Bytes) -> Result<BloomFilter, &'static str> {
        let (bits, k) = split_k(&block)?;
        if bits.is_empty() || bits.len() % LINE_BYTES != 0 {
            return Err("blocked filter is not whole lines");
        }
        let lines: std::sync::Arc<[Line]> = bits
            .chunks_exact(LINE_BYTES)
            .map(|c| {
                let mut line = Line([0; LINE_BYTES]);
                line.0.copy_from_slice(c);
                line
            })
            .collect();
        Ok(BloomFilter {
            bits: Bits::Blocked(lines),
            k,
        })
    }

    /// Decodes a whole-bit-array filter block (tables written before the blocked filter).
    pub fn decode_whole(block: bytes::Bytes) -> Result<BloomFilter, &'static str> {
        let (bits, k) = split_k(&block)?;
        if bits.is_empty() {
            return Err("bad filter parameters");
        }
        let n = bits.len();
        Ok(BloomFilter {
            bits: Bits::Whole(block.slice(..n)),
            k,
        })
    }

    /// False only if `user_key` was certainly not added.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.may_contain_hash(key_hash(user_key))
    }

    /// Starts loading the bits [`BloomFilter::may_contain_hash`] will read for `hash`
    /// (the one line of a blocked filter; nothing for the whole-bit-array layout, whose
    /// probes are spread out), so that a batch's filter misses overlap.
    pub fn prefetch_hash(&self, hash: u64) {
        if let Bits::Blocked(lines) = &self.bits {
            let (line, _) = blocked_probes(hash, self.k, lines.len());
            if let Some(l) = lines.get(line) {
                crate::prefetch::prefetch_range(&l.0, 0, 1);
            }
        }
    }

    /// `may_contain` for a precomputed [`key_hash`].
    pub fn may_contain_hash(&self, hash: u64) -> bool {
        match &self.bits {
            Bits::Blocked(lines) => {
                let (line, mut bits) = blocked_probes(hash, self.k, lines.len());
                lines.get(line).is_some_and(|l| {
                    bits.all(|bit| l.0[(bit / 8) as usize] & (1 << (bit % 8)) != 0)
                })
            }
            Bits::Whole(bytes) => {
                let m = (bytes.len() as u64) * 8;
                probes(hash, self.k, m).all(|bit| {
                    bytes
                        .get((bit / 8) as usize)
                        .is_some_and(|b| b & (1 << (bit % 8)) != 0)
                })
            }
        }
    }
}

/// A filter block's bits and its trailing probe count, checked.
fn split_k(block: &[u8]) -> Result<(&[u8], u32), &'static str> {
    let (k, bits) = block.split_last().ok_or("empty filter block")?;
    let k = u32::from(*k);
    if !(1..=30).contains(&k) {
        return Err("bad filter parameters");
    }
    Ok((bits, k))
}
