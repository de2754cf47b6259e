//! Volumes: the directories that hold table files, each known by an id (0 is the database
//! directory, `i >= 1` is `Options::volumes[i - 1]`), the path of a table on a volume, and
//! where new tables go ([`Placement`] by level, [`placement`] policies over all volumes).
//!
//! Owns: the id-to-directory mapping and the placement of new tables. Must not touch: the
//! files themselves (storage and the table cache do I/O) or the manifest (a table's
//! `FileMeta` names its volume).
//! Concurrency: plain data, shared read-only.

pub mod demand;
pub mod heat;
pub mod migration;
pub mod placement;
pub mod replica;

use std::path::{Path, PathBuf};

use crate::storage::{ThrottleLimits, ThrottleStats};
use crate::version::{table_file_name, Version};

/// The volumes of one database, by id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Volumes {
    /// Index `i` is volume `i`; never empty (volume 0 is the database directory).
    dirs: Vec<PathBuf>,
}

impl Volumes {
    /// The volumes of the database in `db_dir` with `extra` volumes (volume `i >= 1` is
    /// `extra[i - 1]`).
    pub fn new(db_dir: &Path, extra: &[PathBuf]) -> Self {
        let mut dirs = Vec::with_capacity(extra.len() + 1);
        dirs.push(db_dir.to_path_buf());
        dirs.extend(extra.iter().cloned());
        Volumes { dirs }
    }

    /// The directory of volume `id`. A volume that is not configured (a checkpoint opened
    /// elsewhere, say) resolves to the database directory.
    pub fn dir(&self, id: u32) -> &Path {
        self.dirs
            .get(id as usize)
            .or_else(|| self.dirs.first())
            .map_or(Path::new("."), PathBuf::as_path)
    }

    /// The volume whose directory `dir(id)` is: `id` when it is configured, else 0.
    pub fn resolve(&self, id: u32) -> u32 {
        if (id as usize) < self.dirs.len() {
            id
        } else {
            0
        }
    }

    /// The path of table `number` on volume `id`.
    pub fn table_path(&self, id: u32, number: u64) -> PathBuf {
        self.dir(id).join(table_file_name(number))
    }

    /// Every volume as `(id, directory)`, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &Path)> {
        (0u32..).zip(self.dirs.iter().map(PathBuf::as_path))
    }

    /// The database directory (volume 0).
    pub fn db_dir(&self) -> &Path {
        self.dir(0)
    }

    /// The volumes after the database directory (volume `i >= 1` is `extra()[i - 1]`).
    pub fn extra(&self) -> &[PathBuf] {
        self.dirs.get(1..).unwrap_or_default()
    }

    /// How many volumes there are, the database directory included.
    pub fn len(&self) -> usize {
        self.dirs.len()
    }

    /// Never: volume 0 always exists.
    pub fn is_empty(&self) -> bool {
        self.dirs.is_empty()
    }
}

/// The one of `all` whose `name` is `s` (case and `-` for `_` aside), or an error
/// listing the names, for `what` (a policy's kind).
pub(crate) fn parse_name<T: Copy>(
    s: &str,
    all: &[T],
    name: impl Fn(T) -> &'static str,
    what: &str,
) -> Result<T, String> {
    let s = s.trim().to_ascii_lowercase().replace('-', "_");
    all.iter().copied().find(|&p| name(p) == s).ok_or_else(|| {
        let names: Vec<&str> = all.iter().map(|&p| name(p)).collect();
        format!(
            "unknown {what} {s:?} (expected one of {})",
            names.join(", ")
        )
    })
}

/// One volume: its live table files, its device limits, what it was charged since
/// the database opened, and its heat.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct VolumeStats {
    /// The volume's id.
    pub id: u32,
    /// Its directory.
    pub dir: PathBuf,
    /// Live table files with a copy on it (their own, or a replica).
    pub files: u64,
    /// Their bytes.
    pub file_bytes: u64,
    /// True if `Options::volume_limits` names it: the figures below are counted only then.
    pub throttled: bool,
    /// Bytes per second read and written together; 0: unlimited.
    pub bytes_per_sec_limit: u64,
    /// I/O operations per second; 0: unlimited.
    pub iops_limit: u64,
    /// Bytes read and written.
    pub bytes: u64,
    /// I/O operations charged.
    pub ios: u64,
    /// I/Os that waited for the volume's budget.
    pub waits: u64,
    /// Microseconds they waited.
    pub wait_micros: u64,
    /// The summed heat of its files after the last heat interval (0 without heat
    /// statistics).
    pub heat: f64,
    /// Operations per second its table files cost in the last heat interval.
    pub heat_iops: f64,
}

/// Each volume of `volumes` that `limits` names (by id: index 0 is the database
/// directory), as throttle rules in id order, with the ids they stand for.
pub(crate) fn throttle_rules(
    volumes: &Volumes,
    limits: &[ThrottleLimits],
) -> (Vec<u32>, Vec<(PathBuf, ThrottleLimits)>) {
    volumes
        .iter()
        .filter_map(|(id, dir)| {
            limits
                .get(id as usize)
                .map(|l| (id, (dir.to_path_buf(), *l)))
        })
        .unzip()
}

/// Every volume's statistics, in id order: its files in `version`, and for the volumes
/// `throttled` names (ids, and their rules' statistics in the same order) what the
/// throttle charged.
pub(crate) fn volume_stats(
    volumes: &Volumes,
    version: &Version,
    throttled: Option<(&[u32], Vec<ThrottleStats>)>,
    heat: Option<&heat::Heat>,
) -> Vec<VolumeStats> {
    let mut out: Vec<VolumeStats> = volumes
        .iter()
        .map(|(id, dir)| VolumeStats {
            id,
            dir: dir.to_path_buf(),
            files: 0,
            file_bytes: 0,
            throttled: false,
            bytes_per_sec_limit: 0,
            iops_limit: 0,
            bytes: 0,
            ios: 0,
            waits: 0,
            wait_micros: 0,
            heat: heat.map_or(0.0, |h| h.volume_load(id).weight),
            heat_iops: heat.map_or(0.0, |h| h.volume_load(id).iops),
        })
        .collect();
    for f in version.levels().iter().flatten() {
        for copy in f.copies() {
            if let Some(v) = out.get_mut(volumes.resolve(copy) as usize) {
                v.files += 1;
                v.file_bytes += f.size;
            }
        }
    }
    if let Some((ids, stats)) = throttled {
        for (&id, s) in ids.iter().zip(stats) {
            if let Some(v) = out.get_mut(id as usize) {
                v.throttled = true;
                v.bytes_per_sec_limit = s.limits.bytes_per_sec;
                v.iops_limit = s.limits.iops;
                v.bytes = s.bytes;
                v.ios = s.ios;
                v.waits = s.waits;
                v.wait_micros = s.wait_micros;
            }
        }
    }
    out
}

/// Which volume receives a new table. Today: one volume per level
/// (`Options::level_volumes`; levels not named go to volume 0).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placement {
    by_level: Vec<u32>,
}

impl Placement {
    /// New tables of level `l` go to `by_level[l]`, or to volume 0 past its end.
    pub fn by_level(by_level: Vec<u32>) -> Self {
        Placement { by_level }
    }

    /// The volume that receives new tables of `level`.
    pub fn volume_for_level(&self, level: usize) -> u32 {
        self.by_level.get(level).copied().unwrap_or(0)
    }

    /// The highest volume id the placement names (0 when it names none).
    pub fn max_volume(&self) -> u32 {
        self.by_level.iter().copied().max().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_map_to_directories_and_unknown_ids_to_the_database_directory() {
        let v = Volumes::new(
            Path::new("/db"),
            &[PathBuf::from("/v1"), PathBuf::from("/v2")],
        );
        assert_eq!(v.len(), 3);
        assert!(!v.is_empty());
        assert_eq!(v.dir(0), Path::new("/db"));
        assert_eq!(v.dir(2), Path::new("/v2"));
        assert_eq!(v.dir(9), Path::new("/db"));
        assert_eq!(
            v.table_path(1, 7),
            PathBuf::from("/v1").join(table_file_name(7))
        );
        let all: Vec<(u32, &Path)> = v.iter().collect();
        assert_eq!(all[1], (1, Path::new("/v1")));
        assert_eq!(v.extra(), &[PathBuf::from("/v1"), PathBuf::from("/v2")]);
        assert_eq!(v.db_dir(), Path::new("/db"));
    }

    #[test]
    fn placement_by_level_defaults_to_volume_zero() {
        let p = Placement::by_level(vec![0, 2, 1]);
        assert_eq!(p.volume_for_level(1), 2);
        assert_eq!(p.volume_for_level(5), 0);
        assert_eq!(p.max_volume(), 2);
        assert_eq!(Placement::default().volume_for_level(0), 0);
    }
}
