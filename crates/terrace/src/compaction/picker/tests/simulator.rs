//! A compaction simulator in the spirit of mini-lsm's: synthetic flushes go through
//! `pick`, compactions are applied to the level state without any I/O, and the level
//! invariants are checked after every step, under each `CompactionPri`.
//!
//! Owns: the simulated levels and their invariants.
//! Must not touch: anything but the picker's pure functions.

use super::*;

struct Sim {
    fx: Fixture,
    opts: Options,
    next_number: u64,
    flushed: u64,
    written: u64,
    compactions: usize,
    trivial_moves: usize,
}

fn key(x: u32) -> Vec<u8> {
    x.to_be_bytes().to_vec()
}

fn unkey(k: &[u8]) -> u32 {
    u32::from_be_bytes(k.try_into().unwrap())
}

impl Sim {
    fn new(dynamic: bool, compaction_pri: CompactionPri) -> Self {
        let opts = Options {
            compaction_pri,
            max_bytes_for_level_base: 4 << 20,
            max_bytes_for_level_multiplier: 4.0,
            level0_file_num_compaction_trigger: 4,
            target_file_size_base: 1 << 20,
            level_compaction_dynamic_level_bytes: dynamic,
            num_levels: 5,
            ..Options::default()
        };
        Sim {
            fx: Fixture::new(vec![Vec::new(); 5]),
            opts,
            next_number: 1,
            flushed: 0,
            written: 0,
            compactions: 0,
            trivial_moves: 0,
        }
    }

    fn flush(&mut self, lo: u32, hi: u32) {
        let n = self.next_number;
        self.next_number += 1;
        self.fx.levels[0].push(meta(n, &key(lo), &key(hi), 1 << 20, n));
        self.flushed += 1 << 20;
    }

    fn apply(&mut self, p: &PickedCompaction) {
        let gone: HashSet<u64> = p.all_files().map(|f| f.number).collect();
        for level in &mut self.fx.levels {
            level.retain(|f| !gone.contains(&f.number));
        }
        let outputs = if p.trivial_move {
            self.trivial_moves += 1;
            p.inputs.clone()
        } else {
            self.compactions += 1;
            let all: Vec<_> = p.all_files().cloned().collect();
            let (lo, hi) = user_range(&all).unwrap();
            let (lo, hi) = (u64::from(unkey(lo)), u64::from(unkey(hi)));
            let total: u64 = all.iter().map(|f| f.size).sum();
            let seq = all.iter().map(|f| f.largest_seq).max().unwrap();
            let pieces = total
                .div_ceil(self.opts.target_file_size_base)
                .clamp(1, hi - lo + 1);
            self.written += total;
            (0..pieces)
                .map(|i| {
                    let a = lo + i * (hi - lo + 1) / pieces;
                    let b = lo + (i + 1) * (hi - lo + 1) / pieces - 1;
                    let n = self.next_number;
                    self.next_number += 1;
                    meta(n, &key(a as u32), &key(b as u32), total / pieces, seq)
                })
                .collect()
        };
        let out = &mut self.fx.levels[p.output_level];
        out.extend(outputs);
        out.sort_by(|a, b| a.smallest.cmp(&b.smallest));
        self.fx.pointers[p.level] = p.compact_pointer();
    }

    fn check_invariants(&self) {
        for (i, level) in self.fx.levels.iter().enumerate().skip(1) {
            for w in level.windows(2) {
                assert!(
                    w[0].largest_user_key() < w[1].smallest_user_key(),
                    "level {i} overlaps: {:?} / {:?}",
                    w[0],
                    w[1]
                );
            }
        }
    }

    fn compact_until_quiet(&mut self) {
        for _ in 0..1000 {
            let Some(p) = pick(&self.fx.state(&self.opts), &self.opts) else {
                return;
            };
            assert!(p.all_files().all(|f| {
                self.fx.levels[p.level].contains(f) || self.fx.levels[p.output_level].contains(f)
            }));
            if self.opts.compaction_pri == CompactionPri::MinOverlappingRatio
                && p.level > 0
                && !p.trivial_move
            {
                // Ratio 0 goes first: no file of the level could have moved down instead
                // (simulated levels never share a user key between files, so a file with
                // no overlap is always a trivial move).
                let below = &self.fx.levels[p.level + 1];
                assert!(self.fx.levels[p.level].iter().all(|f| below
                    .iter()
                    .any(|g| g.overlaps(Some(f.smallest_user_key()), Some(f.largest_user_key())))));
            }
            self.apply(&p);
            self.check_invariants();
        }
        panic!("compaction never settles");
    }
}

fn run(dynamic: bool, pri: CompactionPri) {
    let mut sim = Sim::new(dynamic, pri);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..300 {
        // xorshift: deterministic synthetic flushes of random key ranges.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let lo = (x % 900_000) as u32;
        let span = ((x >> 32) % 100_000) as u32;
        sim.flush(lo, lo + span);
        sim.compact_until_quiet();
        assert!(sim.fx.levels[0].len() < sim.opts.level0_file_num_compaction_trigger);
    }
    let sizes: Vec<u64> = sim
        .fx
        .levels
        .iter()
        .map(|l| l.iter().map(|f| f.size).sum::<u64>() >> 20)
        .collect();
    println!(
        "{pri:?}, dynamic={dynamic}: write amplification {:.2} ({} compactions, {} trivial moves), level MiB {:?}",
        (sim.flushed + sim.written) as f64 / sim.flushed as f64,
        sim.compactions,
        sim.trivial_moves,
        sizes
    );
}

#[test]
fn static_levels_stay_sorted_and_level0_drains() {
    run(false, CompactionPri::RoundRobin);
}

#[test]
fn dynamic_levels_stay_sorted_and_level0_drains() {
    run(true, CompactionPri::RoundRobin);
}

#[test]
fn static_levels_stay_sorted_and_level0_drains_min_overlap() {
    run(false, CompactionPri::MinOverlappingRatio);
}

#[test]
fn dynamic_levels_stay_sorted_and_level0_drains_min_overlap() {
    run(true, CompactionPri::MinOverlappingRatio);
}
