//! Table files spread over several volumes by a placement policy: where they land, and
//! that the database reads them back, across a reopen.

use std::sync::Arc;

use terrace::volume::placement::PlacementPolicy;
use terrace::{Db, Options};

use crate::{scan_all, small_options};

/// Opens a database with three table volumes under `policy`, loads and compacts it, and
/// returns the live files per volume (from `stats().volumes`, checked against the
/// directories) after a reopen that reads every key back.
fn spread(policy: PlacementPolicy) -> Vec<u64> {
    spread_limited(policy, Vec::new())
}

/// [`spread`] with `volume_limits`.
fn spread_limited(
    policy: PlacementPolicy,
    volume_limits: Vec<terrace::storage::ThrottleLimits>,
) -> Vec<u64> {
    let root = tempfile::tempdir().unwrap();
    let vols: Vec<_> = (1..=3).map(|i| root.path().join(format!("v{i}"))).collect();
    let opts = Options {
        volumes: vols.clone(),
        placement_policy: policy,
        volume_limits,
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
        PlacementPolicy::Demand,
    ] {
        let files = spread(policy);
        assert_eq!(files[0], 0, "{policy}: a table in the database directory");
        assert!(
            files[1..].iter().all(|&n| n > 0),
            "{policy}: a table volume got no file: {files:?}"
        );
    }
    // TANGO puts a file where the next level has the fewest files overlapping it, so a
    // small tree may leave a volume empty; it still spreads.
    let files = spread(PlacementPolicy::Tango);
    assert_eq!(files[0], 0, "tango: a table in the database directory");
    assert!(
        files[1..].iter().filter(|&&n| n > 0).count() >= 2,
        "tango: {files:?}"
    );
}

#[test]
fn demand_puts_far_fewer_files_on_a_volume_provisioned_for_far_less() {
    // Limits high enough never to throttle the test, but volume 1 has a hundredth of the
    // IOPS of the others: it takes a file only while the demand predicted for it is
    // under a hundredth of theirs.
    let limits = [100_000_000, 100_000, 10_000_000, 10_000_000]
        .map(|iops| terrace::storage::ThrottleLimits::default().with_iops(iops, 4096));
    let files = spread_limited(PlacementPolicy::Demand, limits.to_vec());
    assert_eq!(files[0], 0, "a table in the database directory");
    assert!(
        files[1] * 4 <= files[2].min(files[3]),
        "the slow volume got a fair share: {files:?}"
    );
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

/// A database whose tables all start on volume 1 of `n` table volumes limited to 40
/// IOPS each, under `migration`, loaded with 4000 keys compacted below level 0.
fn hot_single_volume(
    root: &std::path::Path,
    n: usize,
    migration: terrace::volume::migration::MigrationPolicy,
) -> (Db, Options) {
    hot_volumes(root, n, Options::default().storage, migration)
}

/// As [`hot_single_volume`] with two volumes on `storage`.
fn hot_single_volume_on(
    root: &std::path::Path,
    storage: Arc<dyn terrace::storage::Storage>,
    migration: terrace::volume::migration::MigrationPolicy,
) -> (Db, Options) {
    hot_volumes(root, 2, storage, migration)
}

fn hot_volumes(
    root: &std::path::Path,
    n: usize,
    storage: Arc<dyn terrace::storage::Storage>,
    migration: terrace::volume::migration::MigrationPolicy,
) -> (Db, Options) {
    use terrace::storage::ThrottleLimits;
    let limits = ThrottleLimits::default()
        .with_iops(40, ThrottleLimits::CLOUD_IO_UNIT_BYTES)
        .with_burst(std::time::Duration::from_millis(50));
    let opts = Options {
        volumes: (1..=n).map(|i| root.join(format!("v{i}"))).collect(),
        volume_limits: std::iter::once(ThrottleLimits::default())
            .chain(std::iter::repeat_n(limits, n))
            .collect(),
        placement_policy: PlacementPolicy::Single,
        heat_interval: std::time::Duration::from_millis(100),
        migration: terrace::volume::migration::MigrationPolicy::Off,
        block_cache_bytes: 0,
        storage,
        ..small_options()
    };
    let dir = root.join("db");
    let db = Db::open(&dir, opts.clone()).unwrap();
    for i in 0..4000u32 {
        db.put(format!("k{i:05}").as_bytes(), &[b'v'; 60]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    let opts = Options { migration, ..opts };
    (Db::open(&dir, opts.clone()).unwrap(), opts)
}

/// Reads keys spread over the whole range from 4 threads until `done` says so or 20
/// seconds pass; every read must find its key.
fn read_until(db: &Db, done: impl Fn(&Db) -> bool + Sync) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    std::thread::scope(|s| {
        for t in 0..4u32 {
            let done = &done;
            s.spawn(move || {
                let mut i = t;
                while !done(db) && std::time::Instant::now() < deadline {
                    let k = format!("k{:05}", (i * 37) % 4000);
                    assert!(db.get(k.as_bytes()).unwrap().is_some(), "{k}");
                    i += 4;
                }
            });
        }
    });
}

#[test]
fn tango_migration_copies_hot_files_off_a_saturated_volume_and_the_copies_survive_a_reopen() {
    let root = tempfile::tempdir().unwrap();
    let (db, opts) = hot_single_volume(
        root.path(),
        2,
        terrace::volume::migration::MigrationPolicy::Tango,
    );
    assert_eq!(
        db.stats().volumes[2].files,
        0,
        "everything starts on volume 1"
    );
    read_until(&db, |db| db.stats().migrations >= 2);
    let stats = db.stats();
    assert!(stats.migrations >= 2, "no migration: {:?}", stats.volumes);
    assert!(stats.migrated_bytes > 0);
    // Copies, not moves: volume 1 keeps every file, volume 2 holds the replicas.
    let live: u64 = stats.levels.iter().map(|l| l.files as u64).sum();
    assert_eq!(stats.volumes[1].files, live);
    assert!(stats.volumes[2].files >= 2);
    // Reads now reach volume 2 too.
    assert!(stats.volumes[2].ios > 0);
    db.close().unwrap();
    let opts = Options {
        migration: terrace::volume::migration::MigrationPolicy::Off,
        ..opts
    };
    let db = Db::open(root.path().join("db"), opts).unwrap();
    let again = db.stats();
    assert!(
        again.volumes[2].files >= 2,
        "the replicas are in the manifest"
    );
    assert_eq!(
        again.volumes[2].files as usize,
        count_tables(&root.path().join("v2"))
    );
    assert_eq!(scan_all(&db).len(), 4000);
    // Rewriting every key replaces every file: the replicas die with their files.
    for i in 0..4000u32 {
        db.put(format!("k{i:05}").as_bytes(), &[b'w'; 60]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    assert_eq!(db.stats().volumes[2].files, 0);
    assert_eq!(count_tables(&root.path().join("v2")), 0);
    assert_eq!(scan_all(&db).len(), 4000);
}

#[test]
fn iops_only_migration_moves_the_hottest_file_to_the_idlest_volume() {
    let root = tempfile::tempdir().unwrap();
    let (db, opts) = hot_single_volume(
        root.path(),
        2,
        terrace::volume::migration::MigrationPolicy::IopsOnly,
    );
    read_until(&db, |db| db.stats().migrations >= 1);
    let stats = db.stats();
    assert!(stats.migrations >= 1);
    // Moves: the files change volume, none is on both.
    let live: u64 = stats.levels.iter().map(|l| l.files as u64).sum();
    assert_eq!(stats.volumes[1].files + stats.volumes[2].files, live);
    assert!(stats.volumes[2].files >= 1);
    // The old copies go once no reader's view names them (at the latest at the next
    // open).
    db.close().unwrap();
    let db = Db::open(root.path().join("db"), opts).unwrap();
    let stats = db.stats();
    for v in 1..=2 {
        assert_eq!(
            stats.volumes[v].files as usize,
            count_tables(&root.path().join(format!("v{v}")))
        );
    }
    assert_eq!(scan_all(&db).len(), 4000);
}

#[test]
fn migration_without_heat_statistics_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let opts = Options {
        migration: terrace::volume::migration::MigrationPolicy::Tango,
        ..small_options()
    };
    let err = Db::open(root.path().join("db"), opts).unwrap_err();
    assert!(err.to_string().contains("heat"), "{err}");
}

/// How a migration crash test cuts the power.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Cut {
    /// At the `n`-th durability point of the heat thread (which makes the copies).
    AtPoint(u64),
    /// Negative control: the copies' syncs (data and directory) lie, the manifest's do
    /// not, and the power goes after the first migration: the manifest names a copy
    /// that is not there.
    LyingCopies,
}

/// Loads two volumes (everything on volume 1, reads saturating it), migrates with TANGO
/// until `cut` takes the power, crashes, and reopens. Returns whether the reopened
/// database is whole: every key readable with its value, and every copy the manifest
/// names present on its volume, with no other table file there.
fn migration_survives(cut: Cut) -> bool {
    use terrace::storage::{FaultStorage, FsStorage, IoClass, PointFilter, PointKind, PowerSupply};
    let root = tempfile::tempdir().unwrap();
    let power = Arc::new(PowerSupply::new());
    let fault = FaultStorage::with_power(Arc::new(FsStorage::new()), power.clone());
    let (db, opts) = {
        let (db, opts) = hot_single_volume_on(
            root.path(),
            Arc::new(fault.clone()),
            terrace::volume::migration::MigrationPolicy::Tango,
        );
        (db, opts)
    };
    let heat = || PointFilter::on_thread("terrace-heat");
    match cut {
        Cut::AtPoint(n) => power.cut_at(heat(), n),
        Cut::LyingCopies => {
            power.lie(heat().of_kinds(&[PointKind::Sync(IoClass::Migration), PointKind::DirSync]))
        }
    }
    read_until(&db, |db| power.is_out() || db.stats().migrations >= 2);
    power.cut_now();
    drop(db);
    fault.simulate_crash().unwrap();
    power.restore();
    let opts = Options {
        migration: terrace::volume::migration::MigrationPolicy::Off,
        ..opts
    };
    let db = Db::open(root.path().join("db"), opts).unwrap();
    let whole = scan_all(&db).len() == 4000;
    let stats = db.stats();
    let named_present = (1..=2).all(|v| {
        stats.volumes[v].files as usize == count_tables(&root.path().join(format!("v{v}")))
    });
    whole && named_present
}

#[test]
fn a_power_cut_during_migration_leaves_no_copy_or_a_whole_one() {
    // Points of one migration: the copy's sync, its directory's, the manifest's; the
    // later ones fall in the next migrations.
    for n in 0..4 {
        assert!(migration_survives(Cut::AtPoint(n)), "cut at point {n}");
    }
    assert!(
        !migration_survives(Cut::LyingCopies),
        "the negative control was not detected"
    );
}

#[test]
fn a_failing_volume_makes_the_database_read_only_with_an_error_naming_it() {
    use terrace::storage::{FaultOp, FaultRule, FaultStorage, FsStorage, InjectedError};
    for disappear in [false, true] {
        let root = tempfile::tempdir().unwrap();
        let fault = FaultStorage::new(Arc::new(FsStorage::new()));
        let v2 = root.path().join("v2");
        let opts = Options {
            volumes: vec![root.path().join("v1"), v2.clone()],
            placement_policy: PlacementPolicy::RoundRobin,
            storage: Arc::new(fault.clone()),
            ..small_options()
        };
        let db = Db::open(root.path().join("db"), opts).unwrap();
        db.put(b"before", b"1").unwrap();
        db.flush().unwrap();
        if disappear {
            std::fs::remove_dir_all(&v2).unwrap();
        } else {
            fault.inject(
                FaultRule::new(
                    &[
                        FaultOp::Create,
                        FaultOp::Append,
                        FaultOp::Sync,
                        FaultOp::Read,
                    ],
                    InjectedError::Io,
                )
                .on_paths("v2"),
            );
        }
        let mut failed = None;
        for i in 0..20_000u32 {
            if let Err(e) = db.put(format!("k{i:05}").as_bytes(), &[0u8; 64]) {
                failed = Some(e);
                break;
            }
        }
        let err = failed.expect("writes kept succeeding with volume 2 gone");
        let msg = err.to_string();
        assert!(msg.contains("volume 2"), "{msg}");
        assert!(msg.contains("read-only"), "{msg}");
        let stats = db.stats();
        assert!(
            stats
                .background_error
                .is_some_and(|e| e.contains("volume 2")),
            "{:?}",
            db.stats().background_error
        );
    }
}

/// A database with two table volumes, every table on volume 1, holding 2000 keys compacted
/// below level 0; with its options and directory.
fn two_volumes_on_the_first(root: &std::path::Path) -> (Db, Options, std::path::PathBuf) {
    let opts = Options {
        volumes: vec![root.join("v1"), root.join("v2")],
        placement_policy: PlacementPolicy::Single,
        ..small_options()
    };
    let dir = root.join("db");
    let db = Db::open(&dir, opts.clone()).unwrap();
    for i in 0..2000u32 {
        db.put(format!("k{i:05}").as_bytes(), &[b'v'; 60]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    // A compaction the range compaction left due (level 1 over its target) would
    // replace the files the tests copy while they copy them.
    db.wait_for_compactions().unwrap();
    (db, opts, dir)
}

#[test]
fn copy_table_to_adds_a_replica_that_reads_and_reopens_use() {
    let root = tempfile::tempdir().unwrap();
    let (db, opts, dir) = two_volumes_on_the_first(root.path());
    let files = db.live_files();
    let (_, first) = files.first().unwrap().clone();
    assert_eq!(first.volume, 1);
    assert!(db.copy_table_to(first.number, 2).unwrap());
    assert!(!db.copy_table_to(first.number, 2).unwrap(), "already there");
    assert!(
        !db.copy_table_to(first.number, 1).unwrap(),
        "its own volume"
    );
    assert!(
        db.copy_table_to(first.number, 0).is_err(),
        "not a table volume"
    );
    assert!(db.copy_table_to(first.number, 9).is_err());
    assert!(db.copy_table_to(999_999, 2).is_err(), "not live");
    let replicated = db
        .live_files()
        .into_iter()
        .find(|(_, f)| f.number == first.number)
        .unwrap()
        .1;
    assert_eq!(replicated.replicas, vec![2]);
    assert_eq!(count_tables(&root.path().join("v2")), 1);
    // Deleting the original copy: reads fall over to the replica.
    std::fs::remove_file(
        root.path()
            .join("v1")
            .join(format!("{:06}.sst", first.number)),
    )
    .unwrap();
    db.close().unwrap();
    let db = Db::open(&dir, opts).unwrap();
    assert_eq!(scan_all(&db).len(), 2000);
}

#[test]
fn raid0_keeps_tables_in_one_directory_and_charges_every_volume_by_stripe() {
    use terrace::storage::ThrottleLimits;
    let root = tempfile::tempdir().unwrap();
    let limits = ThrottleLimits::default().with_iops(100_000, ThrottleLimits::CLOUD_IO_UNIT_BYTES);
    let opts = Options {
        volumes: (1..=3).map(|i| root.path().join(format!("v{i}"))).collect(),
        volume_limits: vec![ThrottleLimits::default(), limits, limits, limits],
        placement_policy: PlacementPolicy::Raid0,
        target_file_size_base: 256 << 10,
        block_cache_bytes: 0,
        ..small_options()
    };
    let db = Db::open(root.path().join("db"), opts).unwrap();
    for i in 0..6000u32 {
        db.put(format!("k{i:05}").as_bytes(), &[b'v'; 100]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    for i in 0..6000u32 {
        assert!(db.get(format!("k{i:05}").as_bytes()).unwrap().is_some());
    }
    let stats = db.stats();
    // Every table in the array's directory (volume 1) ...
    assert!(stats.volumes[1].files > 0);
    assert_eq!(stats.volumes[2].files + stats.volumes[3].files, 0);
    assert_eq!(count_tables(&root.path().join("v2")), 0);
    // ... and every member volume charged for its stripes.
    for v in 1..=3 {
        assert!(stats.volumes[v].ios > 0, "{:?}", stats.volumes[v]);
    }
}

#[test]
fn concurrent_copies_of_one_table_to_one_volume_make_one_whole_copy() {
    let root = tempfile::tempdir().unwrap();
    let (db, opts, dir) = two_volumes_on_the_first(root.path());
    let number = db.live_files()[0].1.number;
    let made: Vec<bool> = std::thread::scope(|s| {
        let copies: Vec<_> = (0..4)
            .map(|_| s.spawn(|| db.copy_table_to(number, 2).unwrap()))
            .collect();
        copies.into_iter().map(|c| c.join().unwrap()).collect()
    });
    assert_eq!(made.iter().filter(|&&m| m).count(), 1, "{made:?}");
    db.close().unwrap();
    // The copy is whole: with the original gone, every key reads from it.
    std::fs::remove_file(root.path().join("v1").join(format!("{number:06}.sst"))).unwrap();
    let db = Db::open(&dir, opts).unwrap();
    assert_eq!(scan_all(&db).len(), 2000);
}
