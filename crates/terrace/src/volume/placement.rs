//! Placement policies: which volume receives each new table file, chosen by name
//! ([`PlacementPolicy`]) and carried as plain data ([`PlacementPlan`]) in a compaction
//! task, so that a compaction worker in another process places its outputs exactly as
//! the database would.
//!
//! Owns: the policies and the decision for one file. Must not touch: files, the manifest
//! or live database state: a plan is a snapshot the database takes when it describes a
//! flush or a compaction (docs/techniques/tango.md says what each policy does).

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};

use super::demand::Demand;
use crate::version::Version;

/// A placement policy by name (`Options::placement_policy`, the server's `placement`,
/// `terrace bench --placement`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlacementPolicy {
    /// Each level on the volume `Options::level_volumes` names (volume 0 where it names
    /// none): tier placement, and the only policy before volumes existed.
    #[default]
    ByLevel,
    /// Every table on the first table volume.
    Single,
    /// Table volumes in turn, one per new file.
    RoundRobin,
    /// The volume a hash of the file number picks.
    Hash,
    /// TANGO's write decision: the volume holding the fewest files of the next level that
    /// overlap the new file's key range, then the lowest weight (heat), then at random
    /// (a hash of the file number, so that a worker and the host agree).
    Tango,
    /// RAID 0: the table volumes as one striped array. Every table is written to the
    /// first table volume's directory, and each I/O is charged to the volume whose
    /// stripe ([`RAID0_STRIPE_BYTES`]) it falls in (with `Options::volume_limits` on
    /// the table volumes; docs/techniques/tango.md says what this emulates).
    Raid0,
    /// Beyond TANGO: the volume whose predicted demand (its files' foreground read rates
    /// plus the compaction reads they are expected to cause, `volume::demand`) against
    /// its provisioned IOPS is lowest once the new file's own demand is added, so that
    /// the highest ratio over all volumes stays as low as it can; ties by a hash of the
    /// file number.
    Demand,
}

/// Bytes per stripe of the `raid0` policy's array.
pub const RAID0_STRIPE_BYTES: u64 = 64 << 10;

impl PlacementPolicy {
    /// Every policy with its name, in the order the docs list them.
    pub const ALL: [PlacementPolicy; 7] = [
        PlacementPolicy::ByLevel,
        PlacementPolicy::Single,
        PlacementPolicy::RoundRobin,
        PlacementPolicy::Hash,
        PlacementPolicy::Tango,
        PlacementPolicy::Raid0,
        PlacementPolicy::Demand,
    ];

    /// The policy's name as configuration spells it.
    pub fn name(self) -> &'static str {
        match self {
            PlacementPolicy::ByLevel => "by_level",
            PlacementPolicy::Single => "single",
            PlacementPolicy::RoundRobin => "round_robin",
            PlacementPolicy::Hash => "hash",
            PlacementPolicy::Tango => "tango",
            PlacementPolicy::Raid0 => "raid0",
            PlacementPolicy::Demand => "demand",
        }
    }

    /// True if the policy spreads files over the table volumes (every policy but the
    /// level map), so that a plan is needed per file.
    pub fn spreads(self) -> bool {
        self != PlacementPolicy::ByLevel
    }

    /// True if the policy reads the next level's layout (what a plan must carry).
    pub fn needs_layout(self) -> bool {
        self == PlacementPolicy::Tango
    }

    /// True if the policy weighs the volumes' load (`tango`, `demand`): the policies
    /// load migration goes with by default.
    pub fn balances_load(self) -> bool {
        matches!(self, PlacementPolicy::Tango | PlacementPolicy::Demand)
    }

    /// True if the policy places by predicted demand (what a plan must carry).
    pub fn needs_demand(self) -> bool {
        self == PlacementPolicy::Demand
    }
}

impl fmt::Display for PlacementPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PlacementPolicy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        super::parse_name(s, &PlacementPolicy::ALL, |p| p.name(), "placement policy")
    }
}

/// A file of the level below the new files, as a placement decision sees it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PlacedRange {
    /// The volume holding the file.
    pub volume: u32,
    /// Its smallest user key.
    pub smallest: Vec<u8>,
    /// Its largest user key.
    pub largest: Vec<u8>,
}

/// Everything a policy needs to place the files of one flush or compaction, as plain
/// data: the candidates, and for TANGO the next level's layout and the volumes' weights.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PlacementPlan {
    /// The policy.
    pub policy: PlacementPolicy,
    /// The volumes that may receive files, in id order; never empty in a plan the
    /// database builds (a plan with none places everything on volume 0).
    pub candidates: Vec<u32>,
    /// Round robin: the turn of the first file (the next file takes the next turn).
    #[serde(default)]
    pub first_turn: u64,
    /// TANGO: the files of the level below the new files that overlap the task, sorted by
    /// smallest key.
    #[serde(default)]
    pub next_level: Vec<PlacedRange>,
    /// TANGO: the weight (summed heat) of each candidate, in `candidates` order.
    #[serde(default)]
    pub weights: Vec<u64>,
    /// TANGO: the weight each file placed with this plan adds to its volume, so that
    /// the files of one compaction spread instead of all going to the lightest volume.
    #[serde(default)]
    pub new_file_weight: u64,
    /// Demand: each candidate's predicted operations per second, in thousandths, in
    /// `candidates` order.
    #[serde(default)]
    pub demands: Vec<u64>,
    /// Demand: each candidate's provisioned IOPS, in `candidates` order; 0: unlimited.
    #[serde(default)]
    pub rates: Vec<u64>,
    /// Demand: the operations per second, in thousandths, each file placed with this
    /// plan is expected to add to its volume.
    #[serde(default)]
    pub new_file_demand: u64,
}

impl PlacementPlan {
    /// A plan that names only `policy` and its candidates.
    pub fn new(policy: PlacementPolicy, candidates: Vec<u32>) -> Self {
        PlacementPlan {
            policy,
            candidates,
            first_turn: 0,
            next_level: Vec::new(),
            weights: Vec::new(),
            new_file_weight: 0,
            demands: Vec::new(),
            rates: Vec::new(),
            new_file_demand: 0,
        }
    }

    /// Fills in what the `demand` policy needs: each candidate's predicted demand, its
    /// provisioned IOPS (`rate`, 0 unlimited) and the operations per second each new
    /// file is expected to add.
    pub fn set_demand(&mut self, demand: &Demand, rate: impl Fn(u32) -> u64, new_file: f64) {
        let milli = |x: f64| (x.max(0.0) * 1000.0).min(u64::MAX as f64) as u64;
        self.demands = self
            .candidates
            .iter()
            .map(|&v| milli(demand.of(v)))
            .collect();
        self.rates = self.candidates.iter().map(|&v| rate(v)).collect();
        // At least a thousandth: every new file adds something, so that the files of one
        // compaction spread even where nothing predicts their reads.
        self.new_file_demand = milli(new_file).max(1);
    }

    /// True if `volume` is one this plan may choose.
    pub fn allows(&self, volume: u32) -> bool {
        self.candidates.contains(&volume) || (self.candidates.is_empty() && volume == 0)
    }

    /// The volume of the next file placed with this plan, numbered `number`, whose user
    /// keys are expected to span `[smallest, largest]`; `placed` are the volumes of the
    /// files placed with it before, in order.
    pub fn choose(&self, placed: &[u32], number: u64, smallest: &[u8], largest: &[u8]) -> u32 {
        let index = placed.len();
        let n = self.candidates.len() as u64;
        if n == 0 {
            return 0;
        }
        let at = |i: u64| self.candidates[(i % n) as usize];
        match self.policy {
            PlacementPolicy::ByLevel | PlacementPolicy::Single | PlacementPolicy::Raid0 => at(0),
            PlacementPolicy::RoundRobin => at(self.first_turn.wrapping_add(index as u64)),
            PlacementPolicy::Hash => at(mix64(number)),
            PlacementPolicy::Tango => self.tango(placed, number, smallest, largest),
            PlacementPolicy::Demand => self.demand(placed, number),
        }
    }

    /// The candidate that keeps the highest demand-to-rate ratio over all candidates
    /// lowest once the new file's demand is on it, then the one whose own ratio is
    /// lowest, then a hash of `number` among the ties.
    fn demand(&self, placed: &[u32], number: u64) -> u32 {
        let unlimited = self.rates.iter().all(|&r| r == 0);
        // A volume without a limit counts as one of rate 1 when none has a limit (the
        // demands alone balance), and as never loaded when others have limits.
        let rate = |i: usize| match self.rates.get(i).copied().unwrap_or(0) {
            0 if unlimited => 1.0,
            0 => f64::INFINITY,
            r => r as f64,
        };
        let load = |i: usize, v: u32| {
            let added = placed.iter().filter(|&&p| p == v).count() as f64;
            self.demands.get(i).copied().unwrap_or(0) as f64 + added * self.new_file_demand as f64
        };
        let ratios: Vec<f64> = (0..self.candidates.len())
            .map(|i| load(i, self.candidates[i]) / rate(i))
            .collect();
        let with_new =
            |i: usize| (load(i, self.candidates[i]) + self.new_file_demand as f64) / rate(i);
        let score = |i: usize| {
            let others = ratios
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(_, &r)| r)
                .fold(0.0, f64::max);
            (others.max(with_new(i)), with_new(i))
        };
        let scored: Vec<(f64, f64)> = (0..self.candidates.len()).map(score).collect();
        let Some(best) = scored
            .iter()
            .copied()
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)))
        else {
            return 0;
        };
        let ties: Vec<u32> = scored
            .iter()
            .zip(&self.candidates)
            .filter(|(s, _)| **s == best)
            .map(|(_, &v)| v)
            .collect();
        ties[(mix64(number) % ties.len() as u64) as usize]
    }

    /// Fewest overlapping next-level files, then lowest weight, then a hash of `number`
    /// among the ties.
    fn tango(&self, placed: &[u32], number: u64, smallest: &[u8], largest: &[u8]) -> u32 {
        let score = |i: usize, v: u32| {
            let overlaps = self
                .next_level
                .iter()
                .take_while(|f| f.smallest.as_slice() <= largest)
                .filter(|f| f.volume == v && f.largest.as_slice() >= smallest)
                .count();
            let added = placed.iter().filter(|&&p| p == v).count() as u64;
            let weight = self.weights.get(i).copied().unwrap_or(0);
            (overlaps, weight + added * self.new_file_weight)
        };
        let scored: Vec<((usize, u64), u32)> = self
            .candidates
            .iter()
            .enumerate()
            .map(|(i, &v)| (score(i, v), v))
            .collect();
        let Some(best) = scored.iter().map(|(s, _)| *s).min() else {
            return 0;
        };
        let ties: Vec<u32> = scored
            .iter()
            .filter(|(s, _)| *s == best)
            .map(|(_, v)| *v)
            .collect();
        ties[(mix64(number) % ties.len() as u64) as usize]
    }
}

/// The database's side of placement: its policy, the volumes it spreads over, and the
/// round-robin turn; builds a [`PlacementPlan`] for each flush and compaction.
#[derive(Debug)]
pub struct Placer {
    policy: PlacementPolicy,
    candidates: Vec<u32>,
    turn: AtomicU64,
}

impl Placer {
    /// A placer spreading over the table volumes of a database with `extra_volumes`
    /// volumes besides its directory: volumes `1..=extra_volumes`, or volume 0 when there
    /// are none (the database directory, with the logs and MANIFEST, holds tables only
    /// when it is the only volume).
    pub fn new(policy: PlacementPolicy, extra_volumes: usize) -> Self {
        let candidates = if extra_volumes == 0 {
            vec![0]
        } else {
            (1..=u32::try_from(extra_volumes).unwrap_or(u32::MAX)).collect()
        };
        Placer {
            policy,
            candidates,
            turn: AtomicU64::new(0),
        }
    }

    /// The policy.
    pub fn policy(&self) -> PlacementPolicy {
        self.policy
    }

    /// True if the policy places each file itself (not by level).
    pub fn spreads(&self) -> bool {
        self.policy.spreads()
    }

    /// True if a file on `volume` is where this policy may have put it.
    pub fn allows(&self, volume: u32) -> bool {
        self.candidates.contains(&volume)
    }

    /// The plan for new files of `level` within user keys `[lo, hi]` (`None`:
    /// unbounded), given the current `version`, each volume's `weight` and the weight
    /// each new file will add. `None` when the policy places by level.
    pub fn plan(
        &self,
        version: &Version,
        level: usize,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
        weight: impl Fn(u32) -> u64,
        new_file_weight: u64,
    ) -> Option<PlacementPlan> {
        if !self.spreads() {
            return None;
        }
        let mut plan = PlacementPlan::new(self.policy, self.candidates.clone());
        plan.first_turn = self.turn.load(Ordering::Relaxed);
        if self.policy.needs_layout() {
            let next = level + 1;
            if next < version.num_levels() {
                plan.next_level = version
                    .overlapping_files(next, lo, hi)
                    .iter()
                    .map(|f| PlacedRange {
                        volume: f.volume,
                        smallest: f.smallest_user_key().to_vec(),
                        largest: f.largest_user_key().to_vec(),
                    })
                    .collect();
                plan.next_level.sort_by(|a, b| a.smallest.cmp(&b.smallest));
            }
            plan.weights = self.candidates.iter().map(|&v| weight(v)).collect();
            plan.new_file_weight = new_file_weight;
        }
        Some(plan)
    }

    /// Records that `files` files were placed with a plan, so the next plan's round
    /// robin starts at the following turn.
    pub fn placed(&self, files: usize) {
        self.turn.fetch_add(files as u64, Ordering::Relaxed);
    }
}

/// A fixed 64-bit mix (the finalizer of SplitMix64): the same on every host, so a
/// worker's choice equals the database's.
fn mix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests;
