//! Predicted demand: how many billed I/O operations per second each volume's files are
//! expected to cost, for the `demand` placement policy (docs/techniques/tango.md).
//!
//! A file costs its volume two kinds of reads: foreground reads and compaction reads.
//! Foreground reads are its measured read heat, as a rate, plus the reads not measured
//! yet: the tree is expected to be read at least as often as compactions read it (at
//! least one operation per second), and what the measured rates fall short of that is
//! spread over the files by their bytes, as reads of keys spread in a key space nobody
//! has read yet. So a load that only writes places files as much by their size as by
//! their compactions, and once reads are measured they decide. A compaction that picks
//! file `f` of level `L` reads `f` and every file of level `L + 1` overlapping it, each
//! from its own volume; so the compaction reads a file will cause are spread over the
//! volumes of its next-level overlaps, weighted by how likely `f` is to be picked next:
//! the level's share of the picker's scores, split evenly over the level's files. The
//! expected bytes each volume reads per compaction, as shares of all of them, divide the
//! measured compaction read rate among the volumes.
//!
//! Owns: that arithmetic, on a version's layout and plain numbers. Must not touch: heat
//! counters, the picker or files (the database passes the rates and scores in).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::version::FileMeta;

/// What each volume is expected to cost, and what a new file would add.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Demand {
    /// Per volume id, predicted operations per second (foreground and compaction).
    pub by_volume: BTreeMap<u32, f64>,
    /// Per level, the compaction operations per second one byte of a file there is
    /// expected to cost (as an input and as a next-level overlap).
    pub per_byte: Vec<f64>,
    /// The foreground operations per second one byte of a file is expected to cost
    /// beyond the measured reads (see the module docs).
    pub unmeasured_per_byte: f64,
}

impl Demand {
    /// The predicted operations per second of `volume` (0 for one holding nothing).
    pub fn of(&self, volume: u32) -> f64 {
        self.by_volume.get(&volume).copied().unwrap_or(0.0)
    }

    /// The operations per second a new file of `bytes` bytes on `level` is expected to
    /// cost its volume, beyond the reads it takes over from its inputs: its compaction
    /// reads and its share of the reads not measured yet.
    pub fn new_file_cost(&self, level: usize, bytes: u64) -> f64 {
        (self.per_byte.get(level).copied().unwrap_or(0.0) + self.unmeasured_per_byte) * bytes as f64
    }
}

/// The demand of every volume holding files of `levels`, given the picker's `scores`
/// (one per level), each file's foreground `read_rate` (operations per second, by file
/// number) and the measured `compaction_rate` (compaction read operations per second
/// over all volumes). A file with replicas spreads both kinds of reads evenly over its
/// copies.
pub fn predict(
    levels: &[Vec<Arc<FileMeta>>],
    scores: &[f64],
    read_rate: impl Fn(u64) -> f64,
    compaction_rate: f64,
) -> Demand {
    let mut demand = Demand {
        by_volume: BTreeMap::new(),
        per_byte: vec![0.0; levels.len()],
        unmeasured_per_byte: 0.0,
    };
    let compaction_rate = compaction_rate.max(0.0);
    let all = || levels.iter().flatten();
    let measured: f64 = all().map(|f| read_rate(f.number).max(0.0)).sum();
    let total_bytes: u64 = all().map(|f| f.size).sum();
    let unmeasured = compaction_rate.max(1.0) - measured;
    if unmeasured > 0.0 && total_bytes > 0 {
        demand.unmeasured_per_byte = unmeasured / total_bytes as f64;
    }
    // Expected bytes read from each volume (and by files of each level) by the next
    // compaction.
    let mut bytes_by_volume: BTreeMap<u32, f64> = BTreeMap::new();
    let mut bytes_by_level = vec![0.0f64; levels.len()];
    let spread = |into: &mut BTreeMap<u32, f64>, f: &FileMeta, amount: f64| {
        let copies = 1 + f.replicas.len();
        for v in f.copies() {
            *into.entry(v).or_insert(0.0) += amount / copies as f64;
        }
    };
    let chances = pick_chances(levels, scores);
    for (level, files) in levels.iter().enumerate() {
        for f in files {
            let reads = read_rate(f.number).max(0.0) + demand.unmeasured_per_byte * f.size as f64;
            spread(&mut demand.by_volume, f, reads);
        }
        let chance = chances[level];
        if chance <= 0.0 || files.is_empty() {
            continue;
        }
        let per_file = chance / files.len() as f64;
        let next = levels.get(level + 1).map_or(&[][..], Vec::as_slice);
        for f in files {
            spread(&mut bytes_by_volume, f, per_file * f.size as f64);
            bytes_by_level[level] += per_file * f.size as f64;
            let (lo, hi) = (f.smallest_user_key(), f.largest_user_key());
            for g in next.iter().filter(|g| g.overlaps(Some(lo), Some(hi))) {
                spread(&mut bytes_by_volume, g, per_file * g.size as f64);
                bytes_by_level[level + 1] += per_file * g.size as f64;
            }
        }
    }
    let total: f64 = bytes_by_volume.values().sum();
    if total <= 0.0 {
        return demand;
    }
    let per_expected_byte = compaction_rate / total;
    for (v, bytes) in bytes_by_volume {
        *demand.by_volume.entry(v).or_insert(0.0) += bytes * per_expected_byte;
    }
    for (level, files) in levels.iter().enumerate() {
        let level_bytes: u64 = files.iter().map(|f| f.size).sum();
        if level_bytes > 0 {
            demand.per_byte[level] = bytes_by_level[level] * per_expected_byte / level_bytes as f64;
        }
    }
    demand
}

/// Each level's chance of being compacted next: its share of the positive scores (all
/// of them when none reaches 1, those of 1 or more otherwise, as the picker only picks
/// those). The last level never compacts.
fn pick_chances(levels: &[Vec<Arc<FileMeta>>], scores: &[f64]) -> Vec<f64> {
    let n = levels.len();
    let score = |l: usize| {
        let s = scores.get(l).copied().unwrap_or(0.0);
        // An empty target scores f64::MAX: urgent, but not so large that sums overflow.
        if l + 1 < n && s > 0.0 {
            s.min(1e9)
        } else {
            0.0
        }
    };
    let urgent = (0..n).any(|l| score(l) >= 1.0);
    let counted = |l: usize| {
        let s = score(l);
        if !urgent || s >= 1.0 {
            s
        } else {
            0.0
        }
    };
    let sum: f64 = (0..n).map(counted).sum();
    (0..n)
        .map(|l| if sum > 0.0 { counted(l) / sum } else { 0.0 })
        .collect()
}

#[cfg(test)]
mod tests;
