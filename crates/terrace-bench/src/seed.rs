//! The random seeds of a run's worker threads, given out as db_bench gives them, so that
//! one command line is the same workload in both tools.
//!
//! db_bench (RocksDB 7.2 and later, `tools/db_bench_tool.cc`) seeds each thread's
//! generator with `seed_base + n`, where `n` counts every thread the run has started so
//! far, from 1: the counter is never reset between benchmarks, so each benchmark's threads
//! draw fresh sequences. `seed_base` is `--seed`, or the wall clock in microseconds when
//! `--seed` is 0 (printed, so that the run can be replayed). Within a benchmark threads are
//! numbered in db_bench's order: the background writer of a `*whilewriting` benchmark is
//! its thread 0 and the readers follow. Benchmarks that start no threads in db_bench
//! (`stats`, `waitforcompaction`, a fill skipped by `--use_existing_db`) take no seeds.
//!
//! Hence `--benchmarks=fillrandom,readrandom` reads keys drawn independently of the fill's
//! and finds about 1 - 1/e (63%) of them after a fill of `--num` random keys into a space
//! of `--num`; reusing the fill's seeds would replay its keys and find all of them. The
//! generators differ (db_bench's Mersenne Twister, this crate's `StdRng`), so the two tools
//! draw different keys from the same seeds: the same distribution, not the same sequence.
//!
//! Owns: the seed base, the count of threads seeded ([`Seeds`]) and which threads of a
//! benchmark get which seed ([`BenchSeeds`]).
//! Must not touch: how workers use their generators (`workload`, `ycsb`, `server`).
//! Concurrency: owned by the thread running the benchmarks; workers get seeds by value.

use std::time::{SystemTime, UNIX_EPOCH};

use rand::rngs::StdRng;
use rand::SeedableRng;

/// The seeds of one run: a base and the number of threads seeded so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seeds {
    base: u64,
    from_clock: bool,
    started: u64,
}

impl Seeds {
    /// The seeds of a run with `--seed=seed`: that base, or the wall clock in microseconds
    /// when it is 0 (as db_bench).
    pub fn new(seed: u64) -> Seeds {
        if seed != 0 {
            return Seeds::with_base(seed);
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
        Seeds {
            from_clock: true,
            ..Seeds::with_base(now)
        }
    }

    /// The seeds of a run whose base is `base`, whatever its value.
    pub fn with_base(base: u64) -> Seeds {
        Seeds {
            base,
            from_clock: false,
            started: 0,
        }
    }

    /// The base: `--seed`, or the clock's value when `--seed` was 0. Passing it as
    /// `--seed` replays the run.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// True when the base came from the clock (`--seed` was 0).
    pub fn from_clock(&self) -> bool {
        self.from_clock
    }

    /// The seeds of the next benchmark, `name`, run with `threads` worker threads, and
    /// counts the threads db_bench would start for it: none for `waitforcompaction` and
    /// `stats`, one more than `threads` for a `*whilewriting` benchmark (its writer),
    /// `threads` for the others.
    pub fn next_benchmark(&mut self, name: &str, threads: usize) -> BenchSeeds {
        let writer = name.ends_with("whilewriting");
        let seeded = match name {
            "waitforcompaction" | "stats" => 0,
            _ => threads as u64 + u64::from(writer),
        };
        let seeds = BenchSeeds {
            first: self.base.wrapping_add(self.started).wrapping_add(1),
            writer,
        };
        self.started = self.started.wrapping_add(seeded);
        seeds
    }
}

/// The seeds of one benchmark's threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BenchSeeds {
    /// The seed of db_bench's thread 0 of the benchmark.
    first: u64,
    /// Whether thread 0 is a background writer (the readers then start at thread 1).
    writer: bool,
}

impl BenchSeeds {
    /// The seed of worker `tid` (0-based, the background writer not counted).
    pub fn worker(&self, tid: usize) -> u64 {
        self.first
            .wrapping_add(u64::from(self.writer))
            .wrapping_add(tid as u64)
    }

    /// The seed of the background writer: db_bench's thread 0 of the benchmark.
    pub fn writer(&self) -> u64 {
        self.first
    }
}

/// The random numbers of a thread seeded with `seed`.
pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first `n` keys below `num` that a thread seeded `seed` draws, as the random
    /// benchmarks draw them.
    fn keys(seed: u64, n: usize, num: u64) -> Vec<u64> {
        let mut r = rng(seed);
        (0..n)
            .map(|_| crate::workload::random_key(&mut r, num))
            .collect()
    }

    #[test]
    fn benchmarks_of_one_run_draw_different_keys() {
        let mut seeds = Seeds::with_base(7);
        let fill = seeds.next_benchmark("fillrandom", 1);
        let read = seeds.next_benchmark("readrandom", 1);
        assert_ne!(fill.worker(0), read.worker(0));
        assert_ne!(
            keys(fill.worker(0), 100, 1_000_000),
            keys(read.worker(0), 100, 1_000_000)
        );
    }

    #[test]
    fn seeds_count_threads_across_benchmarks_as_db_bench() {
        let mut seeds = Seeds::with_base(100);
        // Two threads: db_bench's ThreadStates 1 and 2.
        let fill = seeds.next_benchmark("fillrandom", 2);
        assert_eq!((fill.worker(0), fill.worker(1)), (101, 102));
        // No threads in db_bench: nothing counted.
        seeds.next_benchmark("waitforcompaction", 2);
        seeds.next_benchmark("stats", 2);
        // The writer is thread 0 (seed 103), the readers follow.
        let rww = seeds.next_benchmark("readwhilewriting", 2);
        assert_eq!(rww.writer(), 103);
        assert_eq!((rww.worker(0), rww.worker(1)), (104, 105));
        let read = seeds.next_benchmark("readrandom", 2);
        assert_eq!(read.worker(0), 106);
    }

    #[test]
    fn a_seed_benchmark_index_and_thread_give_the_same_keys_every_time() {
        let run = |base: u64| {
            let mut seeds = Seeds::new(base);
            let per_bench: Vec<BenchSeeds> = ["fillrandom", "overwrite", "readrandom"]
                .iter()
                .map(|b| seeds.next_benchmark(b, 3))
                .collect();
            per_bench
                .iter()
                .map(|s| (0..3).map(|t| keys(s.worker(t), 50, 1000)).collect())
                .collect::<Vec<Vec<Vec<u64>>>>()
        };
        let a = run(42);
        assert_eq!(a, run(42));
        assert_ne!(a, run(43));
        // Every (benchmark, thread) has its own sequence.
        let all: Vec<&Vec<u64>> = a.iter().flatten().collect();
        for (i, x) in all.iter().enumerate() {
            assert!(all.iter().skip(i + 1).all(|y| x != y));
        }
    }

    #[test]
    fn seed_zero_takes_the_base_from_the_clock() {
        let s = Seeds::new(0);
        assert!(s.from_clock());
        // Microseconds since 1970: far above any small seed given by hand.
        assert!(s.base() > 1_000_000_000_000_000, "{}", s.base());
        let given = Seeds::new(5);
        assert!(!given.from_clock());
        assert_eq!(given.base(), 5);
    }

    #[test]
    fn a_fill_then_a_read_of_fresh_keys_finds_about_63_percent() {
        // The fill writes `num` random keys of a space of `num`; a read with the next
        // seed finds a key with probability 1 - (1 - 1/num)^num, about 1 - 1/e.
        let num = 20_000u64;
        let mut seeds = Seeds::with_base(1);
        let fill = seeds.next_benchmark("fillrandom", 1);
        let read = seeds.next_benchmark("readrandom", 1);
        let written: std::collections::HashSet<u64> = keys(fill.worker(0), num as usize, num)
            .into_iter()
            .collect();
        let found = keys(read.worker(0), num as usize, num)
            .iter()
            .filter(|k| written.contains(k))
            .count();
        let share = found as f64 / num as f64;
        assert!((0.60..0.67).contains(&share), "{share}");
        // Reusing the fill's seed, as the harness once did, finds every key.
        let replay = keys(fill.worker(0), num as usize, num);
        assert!(replay.iter().all(|k| written.contains(k)));
    }
}
