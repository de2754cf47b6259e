//! Table files spread over several volumes by a placement policy: where they land, and
//! that the database reads them back, across a reopen.

use terrace::volume::placement::PlacementPolicy;
use terrace::{Db, Options};

use crate::{scan_all, small_options};

/// Opens a database with three table volumes under `policy`, loads and compacts it, and
/// returns the live files per volume (from `stats().volumes`, checked against the
/// directories) after a reopen that reads every key back.
fn spread(policy: PlacementPolicy) -> Vec<u64> {
    let root = tempfile::tempdir().unwrap();
    let vols: Vec<_> = (1..=3).map(|i| root.path().join(format!("v{i}"))).collect();
    let opts = Options {
        volumes: vols.clone(),
        placement_policy: policy,
        ..small_options()
    };
    let dir = root.path().join("db");
    let db = Db::open(&dir, opts.clone()).unwrap();
    // Keys in a scattered order, so that compactions rewrite overlapping ranges.
    for i in 0..8000u32 {
        let k = (u64::from(i) * 7919) % 8000;
        db.put(format!("k{k:05}").as_bytes(), &[b'v'; 60]).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    db.close().unwrap();
    let db = Db::open(&dir, opts).unwrap();
    assert_eq!(scan_all(&db).len(), 8000, "{policy}");
    let stats = db.stats();
    let files: Vec<u64> = stats.volumes.iter().map(|v| v.files).collect();
    for (v, d) in stats.volumes.iter().zip(std::iter::once(&dir).chain(&vols)) {
        assert_eq!(v.dir, *d);
        assert_eq!(
            v.files as usize,
            count_tables(d),
            "{policy}: volume {}",
            v.id
        );
    }
    files
}

fn count_tables(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "sst"))
            })
            .count()
        })
        .unwrap_or(0)
}

#[test]
fn spreading_policies_use_every_table_volume_and_leave_the_database_directory_to_the_logs() {
    for policy in [
        PlacementPolicy::RoundRobin,
        PlacementPolicy::Hash,
        PlacementPolicy::Tango,
    ] {
        let files = spread(policy);
        assert_eq!(files[0], 0, "{policy}: a table in the database directory");
        assert!(
            files[1..].iter().all(|&n| n > 0),
            "{policy}: a table volume got no file: {files:?}"
        );
    }
}

#[test]
fn single_puts_every_table_on_the_first_table_volume() {
    let files = spread(PlacementPolicy::Single);
    assert_eq!(files[0], 0);
    assert!(files[1] > 0);
    assert_eq!(&files[2..], &[0, 0]);
}

#[test]
fn level_volumes_with_a_spreading_policy_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let opts = Options {
        volumes: vec![root.path().join("v1")],
        level_volumes: vec![1],
        placement_policy: PlacementPolicy::Tango,
        ..small_options()
    };
    let err = Db::open(root.path().join("db"), opts).unwrap_err();
    assert!(err.to_string().contains("level_volumes"), "{err}");
}

#[test]
fn reads_heat_the_files_they_reach_and_the_heat_shows_per_volume() {
    let root = tempfile::tempdir().unwrap();
    let opts = Options {
        volumes: vec![root.path().join("v1"), root.path().join("v2")],
        placement_policy: PlacementPolicy::RoundRobin,
        heat_interval: std::time::Duration::from_millis(20),
        // No block cache: every lookup reaches its table.
        block_cache_bytes: 0,
        ..small_options()
    };
    let db = Db::open(root.path().join("db"), opts).unwrap();
    for i in 0..3000u32 {
        db.put(format!("k{i:05}").as_bytes(), &[b'v'; 60]).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    // Read only the first hundred keys: the file holding them gets hot.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        for i in 0..100u32 {
            assert!(db.get(format!("k{i:05}").as_bytes()).unwrap().is_some());
        }
        let heats = db.file_heat();
        if heats.first().is_some_and(|h| h.heat > 50.0) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no file got hot: {heats:?}"
        );
    }
    let heats = db.file_heat();
    let hottest = &heats[0];
    let stats = db.stats();
    let vol = &stats.volumes[hottest.volume as usize];
    assert!(vol.heat >= hottest.heat, "{vol:?} {hottest:?}");
    assert!(heats.windows(2).all(|w| w[0].heat >= w[1].heat));
    // Every live file is listed once.
    let listed: u64 = stats.volumes.iter().map(|v| v.files).sum();
    assert_eq!(heats.len() as u64, listed);
}
