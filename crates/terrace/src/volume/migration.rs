//! Load migration's decisions: which table files to copy (TANGO) or move (the IOPS-only
//! baseline) between volumes after a heat interval, from each volume's measured IOPS and
//! each file's heat.
//!
//! Owns: [`MigrationPolicy`] and [`plan`], a pure function of plain data. Must not
//! touch: files, the manifest or the database: `db::migrate` copies and installs what
//! the plan says.

use std::fmt;
use std::str::FromStr;

/// How hot files are moved between volumes (`Options::migration`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MigrationPolicy {
    /// Never.
    #[default]
    Off,
    /// TANGO's selective replication: when a volume runs at its IOPS limit, copy its
    /// hottest file to the least loaded volume that has no copy; the original stays,
    /// reads spread over the copies, and nothing is ever moved back.
    Tango,
    /// The baseline TANGO is compared with: when the busiest volume runs at its IOPS
    /// limit, move (not copy) its hottest file to the volume with the fewest IOPS.
    IopsOnly,
}

impl MigrationPolicy {
    /// Every policy.
    pub const ALL: [MigrationPolicy; 3] = [
        MigrationPolicy::Off,
        MigrationPolicy::Tango,
        MigrationPolicy::IopsOnly,
    ];

    /// The policy's name as configuration spells it.
    pub fn name(self) -> &'static str {
        match self {
            MigrationPolicy::Off => "off",
            MigrationPolicy::Tango => "tango",
            MigrationPolicy::IopsOnly => "iops_only",
        }
    }
}

impl fmt::Display for MigrationPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for MigrationPolicy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        super::parse_name(s, &MigrationPolicy::ALL, |p| p.name(), "migration policy")
    }
}

/// One volume as the last interval left it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VolumeSample {
    /// The volume's id.
    pub id: u32,
    /// Operations per second it served in the interval.
    pub iops: f64,
    /// Its IOPS limit; 0: unlimited (it never saturates, and is no target either: its
    /// load cannot be compared).
    pub iops_limit: u64,
}

impl VolumeSample {
    fn utilization(&self) -> f64 {
        if self.iops_limit == 0 {
            0.0
        } else {
            self.iops / self.iops_limit as f64
        }
    }
}

/// A table file that may be copied or moved.
#[derive(Debug, Clone, PartialEq)]
pub struct FileSample {
    /// Its number.
    pub number: u64,
    /// Its level.
    pub level: usize,
    /// The volumes of its copies: its own first, then its replicas.
    pub copies: Vec<u32>,
    /// Its heat (of foreground reads: what a copy can take over).
    pub heat: f64,
}

/// One copy or move to make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migration {
    /// The file.
    pub number: u64,
    /// Its level.
    pub level: usize,
    /// The volume that receives the new copy.
    pub to: u32,
    /// The copy it replaces, for a move (`None`: a replica is added).
    pub moved_from: Option<u32>,
}

/// When a volume counts as running at its limit: measured IOPS at or above this share
/// of it (a throttled volume never measures above its limit).
pub const SATURATED: f64 = 0.9;

/// The migrations of one round: at most one per saturated volume for `Tango` (the
/// busiest first), at most one in all for `IopsOnly`. Level-0 files are left alone (a
/// compaction replaces them soon), as are files nobody reads (a volume saturated by
/// compaction gains nothing from copies) and files with a copy on every candidate
/// volume. `volumes` are the table volumes.
pub fn plan(
    policy: MigrationPolicy,
    volumes: &[VolumeSample],
    files: &[FileSample],
) -> Vec<Migration> {
    let mut by_load: Vec<&VolumeSample> = volumes.iter().filter(|v| v.iops_limit > 0).collect();
    by_load.sort_by(|a, b| {
        b.utilization()
            .total_cmp(&a.utilization())
            .then(a.id.cmp(&b.id))
    });
    let saturated: Vec<u32> = by_load
        .iter()
        .take_while(|v| v.utilization() >= SATURATED)
        .map(|v| v.id)
        .collect();
    if saturated.is_empty() {
        return Vec::new();
    }
    let mut hottest: Vec<&FileSample> = files
        .iter()
        .filter(|f| f.level > 0 && f.heat > 0.0)
        .collect();
    hottest.sort_by(|a, b| b.heat.total_cmp(&a.heat).then(a.number.cmp(&b.number)));
    // The least loaded volumes first, as targets.
    let idle: Vec<u32> = by_load
        .iter()
        .rev()
        .filter(|v| v.utilization() < SATURATED)
        .map(|v| v.id)
        .collect();
    let mut out: Vec<Migration> = Vec::new();
    match policy {
        MigrationPolicy::Off => {}
        MigrationPolicy::Tango => {
            // Each round spreads its copies: a target takes one copy per round.
            let mut targets = idle;
            for s in saturated {
                let pick = hottest
                    .iter()
                    .filter(|f| f.copies.contains(&s))
                    .find_map(|f| {
                        let to = targets.iter().position(|t| !f.copies.contains(t))?;
                        Some((f, to))
                    });
                if let Some((f, i)) = pick {
                    out.push(Migration {
                        number: f.number,
                        level: f.level,
                        to: targets.remove(i),
                        moved_from: None,
                    });
                }
            }
        }
        MigrationPolicy::IopsOnly => {
            let (Some(&busiest), Some(&to)) = (saturated.first(), idle.first()) else {
                return out;
            };
            if let Some(f) = hottest
                .iter()
                .find(|f| f.copies.contains(&busiest) && !f.copies.contains(&to))
            {
                out.push(Migration {
                    number: f.number,
                    level: f.level,
                    to,
                    moved_from: Some(busiest),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
