//! Per-volume I/O during one benchmark, as iostat shows a device: operations, bytes and
//! throttle wait per second of each volume, and the spread of the table volumes' IOPS
//! (the figure placement policies are compared by).
//!
//! Owns: [`VolumeDelta`], [`VolumeSpread`] and their report lines. Must not touch: the
//! database (it is given `DbStats`). Concurrency: plain data.

use terrace::volume::VolumeStats;
use terrace::DbStats;

/// One volume's work between two statistics snapshots.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct VolumeDelta {
    /// The volume's id (0: the database directory, with the log and MANIFEST).
    pub id: u32,
    /// Its I/O operations per second limit (0: none).
    pub iops_limit: u64,
    /// Its bytes per second limit (0: none).
    pub bytes_per_sec_limit: u64,
    /// I/O operations charged.
    pub ios: u64,
    /// Bytes read and written.
    pub bytes: u64,
    /// I/Os that waited for the volume's budget.
    pub waits: u64,
    /// Microseconds they waited.
    pub wait_micros: u64,
    /// Operations per second over the interval.
    pub iops: f64,
    /// Megabytes (10^6) per second over the interval.
    pub mb_per_sec: f64,
    /// Milliseconds of throttle wait per second over the interval (summed over threads).
    pub wait_ms_per_sec: f64,
    /// Live table files at the end.
    pub files: u64,
    /// The volume's summed file heat at the end.
    pub heat: f64,
}

/// What each throttled volume did between `before` and `after`, `seconds` apart.
pub fn volume_deltas(before: &DbStats, after: &DbStats, seconds: f64) -> Vec<VolumeDelta> {
    after
        .volumes
        .iter()
        .filter(|a| a.throttled)
        .map(|a| {
            let b = before.volumes.iter().find(|b| b.id == a.id);
            delta(b, a, seconds)
        })
        .collect()
}

/// `a` less `b` (absent: zero), over `seconds`.
pub fn delta(b: Option<&VolumeStats>, a: &VolumeStats, seconds: f64) -> VolumeDelta {
    let d = |f: fn(&VolumeStats) -> u64| f(a).saturating_sub(b.map_or(0, f));
    let per_sec = |x: f64| if seconds > 0.0 { x / seconds } else { 0.0 };
    let (ios, bytes, wait_micros) = (d(|v| v.ios), d(|v| v.bytes), d(|v| v.wait_micros));
    VolumeDelta {
        id: a.id,
        iops_limit: a.iops_limit,
        bytes_per_sec_limit: a.bytes_per_sec_limit,
        ios,
        bytes,
        waits: d(|v| v.waits),
        wait_micros,
        iops: per_sec(ios as f64),
        mb_per_sec: per_sec(bytes as f64 / 1e6),
        wait_ms_per_sec: per_sec(wait_micros as f64 / 1e3),
        files: a.files,
        heat: a.heat,
    }
}

/// How evenly the table volumes (every volume but 0) carried the I/O.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct VolumeSpread {
    /// Table volumes.
    pub volumes: usize,
    /// Their summed operations per second.
    pub total_iops: f64,
    /// Their summed IOPS limits (0 if any is unlimited).
    pub iops_limit: u64,
    /// `total_iops / iops_limit` (0 without limits).
    pub limit_share: f64,
    /// The population standard deviation of their operations per second.
    pub iops_stddev: f64,
}

/// The spread of `deltas`' table volumes; `None` when there are none.
pub fn spread(deltas: &[VolumeDelta]) -> Option<VolumeSpread> {
    let table: Vec<&VolumeDelta> = deltas.iter().filter(|d| d.id > 0).collect();
    if table.is_empty() {
        return None;
    }
    let n = table.len() as f64;
    let total: f64 = table.iter().map(|d| d.iops).sum();
    let mean = total / n;
    let var = table.iter().map(|d| (d.iops - mean).powi(2)).sum::<f64>() / n;
    let limit = if table.iter().all(|d| d.iops_limit > 0) {
        table.iter().map(|d| d.iops_limit).sum()
    } else {
        0
    };
    Some(VolumeSpread {
        volumes: table.len(),
        total_iops: total,
        iops_limit: limit,
        limit_share: if limit > 0 { total / limit as f64 } else { 0.0 },
        iops_stddev: var.sqrt(),
    })
}

/// One volume's line.
pub fn volume_line(d: &VolumeDelta) -> String {
    format!(
        "{}: {:.0} IOPS (limit {}), {:.1} MB/s, {:.1} ms waited per second, {} files, heat {:.0}",
        d.id,
        d.iops,
        if d.iops_limit > 0 {
            d.iops_limit.to_string()
        } else {
            "none".to_string()
        },
        d.mb_per_sec,
        d.wait_ms_per_sec,
        d.files,
        d.heat
    )
}

/// The spread's line.
pub fn spread_line(s: &VolumeSpread) -> String {
    let share = if s.iops_limit > 0 {
        format!(
            " = {:.1}% of their summed limit {}",
            s.limit_share * 100.0,
            s.iops_limit
        )
    } else {
        String::new()
    };
    format!(
        "{} table volumes: {:.0} IOPS{share}, standard deviation {:.1} IOPS",
        s.volumes, s.total_iops, s.iops_stddev
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(id: u32, iops: f64, limit: u64) -> VolumeDelta {
        VolumeDelta {
            id,
            iops,
            iops_limit: limit,
            ..VolumeDelta::default()
        }
    }

    #[test]
    fn the_spread_covers_table_volumes_only() {
        let s = spread(&[d(0, 999.0, 0), d(1, 100.0, 200), d(2, 300.0, 200)]).unwrap();
        assert_eq!(s.volumes, 2);
        assert_eq!(s.total_iops, 400.0);
        assert_eq!(s.iops_limit, 400);
        assert_eq!(s.limit_share, 1.0);
        assert_eq!(s.iops_stddev, 100.0);
        assert!(spread_line(&s).contains("100.0% of their summed limit 400"));
        assert!(spread(&[d(0, 1.0, 0)]).is_none());
        let unlimited = spread(&[d(1, 5.0, 0), d(2, 5.0, 10)]).unwrap();
        assert_eq!((unlimited.iops_limit, unlimited.limit_share), (0, 0.0));
    }

    #[test]
    fn deltas_are_rates_over_the_interval() {
        let stats = |ios: u64, bytes: u64| VolumeStats {
            id: 1,
            dir: "v1".into(),
            files: 3,
            file_bytes: 0,
            throttled: true,
            bytes_per_sec_limit: 0,
            iops_limit: 50,
            bytes,
            ios,
            waits: ios / 2,
            wait_micros: ios * 100,
            heat: 7.0,
            heat_iops: 0.0,
        };
        let v = delta(Some(&stats(100, 1_000_000)), &stats(300, 5_000_000), 2.0);
        assert_eq!(v.ios, 200);
        assert_eq!(v.iops, 100.0);
        assert_eq!(v.mb_per_sec, 2.0);
        assert_eq!(v.wait_ms_per_sec, 10.0);
        assert_eq!((v.files, v.heat), (3, 7.0));
        assert!(volume_line(&v).starts_with("1: 100 IOPS (limit 50)"));
    }
}
