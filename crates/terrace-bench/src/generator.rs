//! YCSB's number generators, with CoreWorkload's semantics: zipfian (Gray et al.,
//! "Quickly generating billion-record synthetic databases"), scrambled zipfian, skewed
//! latest and uniform, and YCSB's 64-bit FNV hash that scrambles and names keys.
//!
//! Owns: the generators' arithmetic. Must not touch: keys' bytes or the database.
//! Concurrency: a generator is used by one thread; the counter that `latest` follows is
//! shared through an atomic.

use rand::Rng;

#[cfg(test)]
mod tests;

/// YCSB's zipfian constant.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;
/// Items of the zipfian that `ScrambledZipfian` hashes down (YCSB's `ITEM_COUNT`).
const SCRAMBLED_ITEMS: u64 = 10_000_000_000;
/// zeta(10^10, 0.99), precomputed by YCSB.
const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

/// YCSB's `Utils.fnvhash64`: FNV-1a over the 8 little-endian bytes, made non-negative.
pub fn fnv_hash64(v: u64) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for byte in v.to_le_bytes() {
        h ^= u64::from(byte);
        h = h.wrapping_mul(1_099_511_628_211);
    }
    (h as i64).unsigned_abs()
}

/// Draws `0..items` with item `i` about `1 / (i + 1)^theta` as likely as item 0.
#[derive(Debug, Clone)]
pub struct Zipfian {
    items: u64,
    theta: f64,
    alpha: f64,
    zeta2theta: f64,
    zetan: f64,
    eta: f64,
}

fn zeta(from: u64, to: u64, theta: f64, sum: f64) -> f64 {
    (from..to).fold(sum, |s, i| s + 1.0 / ((i + 1) as f64).powf(theta))
}

impl Zipfian {
    /// A zipfian over `0..items` with constant `theta` (computes zeta in O(items)).
    pub fn new(items: u64, theta: f64) -> Self {
        let zetan = zeta(0, items, theta, 0.0);
        Self::with_zetan(items, theta, zetan)
    }

    fn with_zetan(items: u64, theta: f64, zetan: f64) -> Self {
        let zeta2theta = zeta(0, 2, theta, 0.0);
        let mut z = Zipfian {
            items,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zeta2theta,
            zetan,
            eta: 0.0,
        };
        z.eta = z.eta_for(items);
        z
    }

    fn eta_for(&self, items: u64) -> f64 {
        (1.0 - (2.0 / items as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2theta / self.zetan)
    }

    /// The next value in `0..items`; a larger `items` than before extends zeta
    /// incrementally (YCSB's `nextLong(itemcount)`), a smaller one is clamped.
    pub fn next_with(&mut self, items: u64, rng: &mut impl Rng) -> u64 {
        if items > self.items {
            self.zetan = zeta(self.items, items, self.theta, self.zetan);
            self.items = items;
            self.eta = self.eta_for(items);
        }
        let items = items.min(self.items).max(1);
        let u: f64 = rng.gen();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1.min(items - 1);
        }
        let v = (items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        v.min(items - 1)
    }

    /// The next value in `0..items` of construction.
    pub fn next(&mut self, rng: &mut impl Rng) -> u64 {
        self.next_with(self.items, rng)
    }
}

/// YCSB's `ScrambledZipfianGenerator`: a zipfian over 10^10 items hashed into
/// `0..items`, so that the popular items are spread over the key space.
#[derive(Debug, Clone)]
pub struct ScrambledZipfian {
    items: u64,
    zipf: Zipfian,
}

impl ScrambledZipfian {
    /// Over `0..items` with constant `theta` (YCSB's precomputed zeta for 0.99).
    pub fn new(items: u64, theta: f64) -> Self {
        let zipf = if (theta - ZIPFIAN_CONSTANT).abs() < f64::EPSILON {
            Zipfian::with_zetan(SCRAMBLED_ITEMS, theta, SCRAMBLED_ZETAN)
        } else {
            Zipfian::new(items.max(1), theta)
        };
        ScrambledZipfian {
            items: items.max(1),
            zipf,
        }
    }

    /// The next value in `0..items`.
    pub fn next(&mut self, rng: &mut impl Rng) -> u64 {
        fnv_hash64(self.zipf.next(rng)) % self.items
    }
}

/// YCSB's `SkewedLatestGenerator`: recent items (close to the newest) are most likely.
#[derive(Debug, Clone)]
pub struct Latest {
    zipf: Zipfian,
}

impl Latest {
    /// For a key space whose newest item is `newest`.
    pub fn new(newest: u64, theta: f64) -> Self {
        Latest {
            zipf: Zipfian::new(newest.max(1), theta),
        }
    }

    /// The next value in `0..=newest`: `newest - zipfian(newest)`, as YCSB.
    pub fn next(&mut self, newest: u64, rng: &mut impl Rng) -> u64 {
        newest - self.zipf.next_with(newest.max(1), rng).min(newest)
    }
}

/// The key chooser of a YCSB workload.
#[derive(Debug, Clone)]
pub enum KeyChooser {
    /// Every key equally likely.
    Uniform,
    /// Scrambled zipfian over the keys inserted so far plus the expected inserts.
    Zipfian(ScrambledZipfian),
    /// Skewed towards the newest insert.
    Latest(Latest),
}

impl KeyChooser {
    /// The next key number, below or at `newest` (the highest inserted key number).
    pub fn next(&mut self, newest: u64, rng: &mut impl Rng) -> u64 {
        match self {
            KeyChooser::Uniform => rng.gen_range(0..=newest),
            KeyChooser::Latest(l) => l.next(newest, rng),
            // As YCSB: draw again until the key has been inserted.
            KeyChooser::Zipfian(z) => loop {
                let k = z.next(rng);
                if k <= newest {
                    return k;
                }
            },
        }
    }
}
