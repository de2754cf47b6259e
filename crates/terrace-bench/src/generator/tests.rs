use rand::rngs::StdRng;
use rand::SeedableRng;

use super::*;

fn counts(n: usize, items: u64, mut draw: impl FnMut(&mut StdRng) -> u64) -> Vec<u64> {
    let mut rng = StdRng::seed_from_u64(7);
    let mut c = vec![0u64; items as usize];
    for _ in 0..n {
        let v = draw(&mut rng);
        assert!(v < items, "{v} out of range");
        c[v as usize] += 1;
    }
    c
}

#[test]
fn zipfian_head_dominates() {
    let mut z = Zipfian::new(1000, ZIPFIAN_CONSTANT);
    let c = counts(200_000, 1000, |r| z.next(r));
    // Item 0 is the most frequent, and frequencies fall with rank.
    assert!(c[0] > c[1] && c[1] > c[10] && c[10] > c[500]);
    // The 10 hottest of 1000 items take a large share (about 39% for theta 0.99).
    let head: u64 = c[..10].iter().sum();
    assert!(head > 200_000 * 30 / 100, "head {head}");
    // Item 0 against item 1 follows 2^theta roughly.
    let ratio = c[0] as f64 / c[1] as f64;
    assert!((1.6..2.4).contains(&ratio), "ratio {ratio}");
}

#[test]
fn scrambled_zipfian_spreads_the_hot_items() {
    let mut z = ScrambledZipfian::new(1000, ZIPFIAN_CONSTANT);
    let c = counts(200_000, 1000, |r| z.next(r));
    let mut ranked: Vec<(u64, usize)> = c.iter().copied().zip(0..).collect();
    ranked.sort_unstable_by(|a, b| b.cmp(a));
    // Still skewed: the ten hottest items take far more than the 1% of a uniform draw
    // (about 11%: the zipfian runs over 10^10 items before hashing, as in YCSB) ...
    let head: u64 = ranked[..10].iter().map(|x| x.0).sum();
    assert!(head > 200_000 * 8 / 100, "head {head}");
    // ... but they are not the lowest key numbers.
    let hot: Vec<usize> = ranked[..10].iter().map(|x| x.1).collect();
    assert!(hot.iter().any(|i| *i > 100), "hot items {hot:?}");
    assert_eq!(fnv_hash64(0), fnv_hash64(0));
    assert_ne!(fnv_hash64(0) % 1000, fnv_hash64(1) % 1000);
}

#[test]
fn latest_prefers_the_newest_and_follows_inserts() {
    let mut l = Latest::new(999, ZIPFIAN_CONSTANT);
    let c = counts(100_000, 1000, |r| l.next(999, r));
    assert!(c[999] + c[998] > c[..900].iter().sum::<u64>() / 10);
    assert!(c[998] > c[500]);
    // After more inserts the newest keys move up with them.
    let mut rng = StdRng::seed_from_u64(1);
    let mut recent = 0;
    for _ in 0..10_000 {
        let v = l.next(1999, &mut rng);
        assert!(v <= 1999);
        if v > 1900 {
            recent += 1;
        }
    }
    assert!(recent > 5_000, "recent {recent}");
}

#[test]
fn chooser_never_picks_an_uninserted_key() {
    let mut rng = StdRng::seed_from_u64(3);
    let mut choosers = [
        KeyChooser::Uniform,
        KeyChooser::Zipfian(ScrambledZipfian::new(2000, ZIPFIAN_CONSTANT)),
        KeyChooser::Latest(Latest::new(999, ZIPFIAN_CONSTANT)),
    ];
    for ch in &mut choosers {
        for _ in 0..5_000 {
            assert!(ch.next(999, &mut rng) <= 999);
        }
    }
}
