use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::bucket::{DeviceBudget, FakeClock, IoRun};
use super::*;
use crate::storage::FsStorage;

const KIB: u64 = 1024;
const UNIT: u64 = ThrottleLimits::CLOUD_IO_UNIT_BYTES;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn secs(v: u64) -> Duration {
    Duration::from_secs(v)
}

#[test]
fn a_bucket_starts_full_with_its_burst_and_waits_for_debt() {
    // 1000 B/s with 100 ms of burst: 100 bytes free, then 1 ms per byte.
    let b = DeviceBudget::new(ThrottleLimits::bandwidth(1000), Duration::ZERO);
    assert_eq!(b.charge(Duration::ZERO, 100, 1), Duration::ZERO);
    assert_eq!(b.charge(Duration::ZERO, 50, 1), ms(50));
    // Charges queue: the next caller waits for the earlier debt too.
    assert_eq!(b.charge(Duration::ZERO, 1000, 1), ms(1050));
    // After the debt is paid, time refills the bucket, never beyond the burst.
    assert_eq!(b.charge(secs(100), 150, 1), ms(50));
    let st = b.stats(Path::new("d"));
    assert_eq!((st.bytes, st.ios, st.waits), (1300, 4, 3));
    assert_eq!(st.wait_micros, 1_150_000);
}

#[test]
fn one_io_may_cost_more_than_the_burst() {
    let b = DeviceBudget::new(ThrottleLimits::bandwidth(1000), Duration::ZERO);
    assert_eq!(b.charge(Duration::ZERO, 5100, 1), secs(5));
}

#[test]
fn the_iops_bucket_counts_operations_and_the_slower_bucket_decides() {
    // 10 IOPS, burst 1 s: 10 operations free; bandwidth unlimited.
    let limits = ThrottleLimits::default()
        .with_iops(10, UNIT)
        .with_burst(secs(1));
    let b = DeviceBudget::new(limits, Duration::ZERO);
    assert_eq!(b.charge(Duration::ZERO, 1 << 30, 10), Duration::ZERO);
    assert_eq!(b.charge(Duration::ZERO, 1, 1), ms(100));
    // Both limits: the wait is the longer of the two.
    let both = ThrottleLimits::bandwidth(1000)
        .with_iops(10, UNIT)
        .with_burst(Duration::ZERO);
    let b = DeviceBudget::new(both, Duration::ZERO);
    assert_eq!(b.charge(Duration::ZERO, 100, 5), ms(500));
    assert_eq!(b.charge(secs(10), 2000, 1), secs(2));
}

#[test]
fn unlimited_budgets_never_wait() {
    let b = DeviceBudget::new(ThrottleLimits::default(), Duration::ZERO);
    assert_eq!(
        b.charge(Duration::ZERO, u64::MAX / 2, 1 << 40),
        Duration::ZERO
    );
    assert_eq!(b.stats(Path::new("d")).waits, 0);
}

#[test]
fn io_units_merge_sequential_ios_and_split_large_ones() {
    let mut run = IoRun::default();
    // 64 sequential 4 KiB reads fill one 256 KiB unit.
    let ios: u64 = (0..64).map(|i| run.ios(i * 4 * KIB, 4 * KIB, UNIT)).sum();
    assert_eq!(ios, 1);
    assert_eq!(run.ios(256 * KIB, 4 * KIB, UNIT), 1);
    // A jump starts a new unit; a large I/O costs one operation per unit.
    assert_eq!(run.ios(10 * UNIT, 4 * KIB, UNIT), 1);
    assert_eq!(run.ios(100 * UNIT, 4 * UNIT, UNIT), 4);
    assert_eq!(run.ios(200 * UNIT, 4 * UNIT + 1, UNIT), 5);
    // 300 KiB: two units, and the next 212 KiB fit in the second one's room.
    let mut run = IoRun::default();
    assert_eq!(run.ios(0, 300 * KIB, UNIT), 2);
    assert_eq!(run.ios(300 * KIB, 212 * KIB, UNIT), 0);
    assert_eq!(run.ios(512 * KIB, 1, UNIT), 1);
    // Empty I/Os are free; without a unit every call is one operation.
    assert_eq!(run.ios(0, 0, UNIT), 0);
    let mut run = IoRun::default();
    assert_eq!(run.ios(0, 1, 0) + run.ios(1, 1 << 30, 0), 2);
}

#[test]
fn a_sync_ends_the_unit() {
    let mut run = IoRun::default();
    assert_eq!(run.ios(0, 100, UNIT), 1);
    assert_eq!(run.ios(100, 100, UNIT), 0);
    run.close();
    assert_eq!(run.ios(200, 100, UNIT), 1);
}

fn storage(rules: Vec<(PathBuf, ThrottleLimits)>) -> (ThrottledStorage, Arc<FakeClock>) {
    let clock = Arc::new(FakeClock::default());
    let s = ThrottledStorage::with_clock(Arc::new(FsStorage::new()), rules, clock.clone());
    (s, clock)
}

fn write(s: &dyn Storage, path: &Path, chunks: &[usize], class: IoClass) {
    let mut w = s.create(path, class).unwrap();
    for &n in chunks {
        w.append(&vec![7u8; n]).unwrap();
    }
    w.sync().unwrap();
}

#[test]
fn only_paths_under_a_rule_are_throttled_and_the_deepest_rule_wins() {
    let dir = tempfile::tempdir().unwrap();
    let (slow, deep, near) = (
        dir.path().join("slow"),
        dir.path().join("slow/deep"),
        dir.path().join("slowpoke"),
    );
    for d in [&slow, &deep, &near] {
        std::fs::create_dir_all(d).unwrap();
    }
    let limits = ThrottleLimits::bandwidth(1 << 20);
    let (s, clock) = storage(vec![(slow.clone(), limits), (deep.clone(), limits)]);
    write(&s, &slow.join("a"), &[1000], IoClass::Flush);
    write(&s, &deep.join("b"), &[300, 200], IoClass::Compaction);
    // Not under `slow`: paths are compared by component, not by string prefix.
    write(&s, &near.join("c"), &[5000], IoClass::Flush);
    write(&s, &dir.path().join("d"), &[5000], IoClass::Wal);
    let r = s.open(&deep.join("b")).unwrap();
    let mut buf = [0u8; 100];
    r.read_exact_at(0, &mut buf, IoClass::Foreground).unwrap();
    s.open(&near.join("c"))
        .unwrap()
        .read_exact_at(0, &mut buf, IoClass::Foreground)
        .unwrap();
    let st = s.stats();
    assert_eq!((st[0].dir.as_path(), st[0].bytes), (slow.as_path(), 1000));
    assert_eq!((st[1].dir.as_path(), st[1].bytes), (deep.as_path(), 600));
    assert!(clock.slept().is_empty(), "all within the burst");
}

#[test]
fn a_rule_is_one_budget_shared_by_all_its_files_and_threads() {
    let dir = tempfile::tempdir().unwrap();
    // 1000 B/s, 100 bytes of burst.
    let (s, clock) = storage(vec![(
        dir.path().to_path_buf(),
        ThrottleLimits::bandwidth(1000),
    )]);
    let s = Arc::new(s);
    std::thread::scope(|scope| {
        for name in ["x", "y"] {
            let s = s.clone();
            let p = dir.path().join(name);
            scope.spawn(move || write(&*s, &p, &[550], IoClass::Compaction));
        }
    });
    // 1100 bytes against 100 free: both appends wait, whichever charged first, and the
    // waits are counted in the rule's stats and in the class's I/O counters alike.
    let st = &s.stats()[0];
    assert_eq!(st.bytes, 1100);
    assert_eq!(st.waits, 2);
    assert_eq!(clock.now(), clock.slept().iter().sum::<Duration>());
    let io = s.io_stats().get(IoClass::Compaction);
    assert_eq!(io.throttle_waits, 2);
    assert_eq!(io.throttle_wait_micros, st.wait_micros);
}

#[test]
fn waits_are_slept_before_the_io_and_counted_by_class() {
    let dir = tempfile::tempdir().unwrap();
    let (s, clock) = storage(vec![(
        dir.path().to_path_buf(),
        ThrottleLimits::bandwidth(1000),
    )]);
    write(&s, &dir.path().join("log"), &[100, 1000], IoClass::Wal);
    assert_eq!(clock.slept(), vec![secs(1)]);
    let r = s.open(&dir.path().join("log")).unwrap();
    let mut buf = vec![0u8; 500];
    r.read_exact_at(0, &mut buf, IoClass::Foreground).unwrap();
    assert_eq!(clock.slept(), vec![secs(1), ms(500)]);
    let io = s.io_stats();
    assert_eq!(io.get(IoClass::Wal).throttle_wait_micros, 1_000_000);
    assert_eq!(io.get(IoClass::Foreground).throttle_waits, 1);
    assert_eq!(io.get(IoClass::Foreground).throttle_wait_micros, 500_000);
    assert_eq!(io.get(IoClass::Wal).write_bytes, 1100);
    // The bytes the throttled device stored and served, by class.
    assert_eq!(io.get(IoClass::Wal).throttled_write_bytes, 1100);
    assert_eq!(io.get(IoClass::Wal).throttled_read_bytes, 0);
    assert_eq!(io.get(IoClass::Foreground).throttled_read_bytes, 500);
}

#[test]
fn files_outside_every_rule_are_not_counted_as_throttled() {
    let dir = tempfile::tempdir().unwrap();
    let slow = dir.path().join("slow");
    let (s, _clock) = storage(vec![(slow.clone(), ThrottleLimits::bandwidth(1 << 30))]);
    s.create_dir_all(&slow).unwrap();
    write(&s, &slow.join("t"), &[300], IoClass::Compaction);
    write(&s, &dir.path().join("fast"), &[700], IoClass::Compaction);
    let io = s.io_stats().get(IoClass::Compaction);
    assert_eq!(io.write_bytes, 1000);
    assert_eq!(io.throttled_write_bytes, 300);
}

#[test]
fn appends_and_reads_cost_operations_per_io_unit() {
    let dir = tempfile::tempdir().unwrap();
    let limits = ThrottleLimits::default().with_iops(1_000_000, UNIT);
    let (s, _) = storage(vec![(dir.path().to_path_buf(), limits)]);
    let p = dir.path().join("000001.sst");
    // 150 appends of 4 KiB = 600 KiB: three units. A sync ends the third; the next
    // append starts a fourth.
    let mut w = s.create(&p, IoClass::Flush).unwrap();
    for _ in 0..150 {
        w.append(&[1u8; 4096]).unwrap();
    }
    w.sync().unwrap();
    assert_eq!(s.stats()[0].ios, 3);
    w.append(b"z").unwrap();
    w.sync().unwrap();
    drop(w);
    assert_eq!(s.stats()[0].ios, 4);
    // Sequential 4 KiB reads of the first 512 KiB: two units; a jump back: one more.
    let r = s.open(&p).unwrap();
    let mut buf = [0u8; 4096];
    for i in 0..128u64 {
        r.read_exact_at(i * 4096, &mut buf, IoClass::Compaction)
            .unwrap();
    }
    r.read_exact_at(0, &mut buf, IoClass::Foreground).unwrap();
    assert_eq!(s.stats()[0].ios, 7);
}

#[test]
fn write_atomic_and_directory_operations_pass_through() {
    let dir = tempfile::tempdir().unwrap();
    let (s, clock) = storage(vec![(
        dir.path().to_path_buf(),
        ThrottleLimits::bandwidth(1000).with_burst(Duration::ZERO),
    )]);
    let p = dir.path().join("CURRENT");
    s.write_atomic(&p, b"MANIFEST-000001\n", IoClass::Manifest)
        .unwrap();
    assert_eq!(
        s.read_all(&p, IoClass::Manifest).unwrap(),
        b"MANIFEST-000001\n"
    );
    assert_eq!(s.list(dir.path()).unwrap(), vec!["CURRENT".to_string()]);
    // Only the 16 bytes written and the 16 read were charged.
    assert_eq!(s.stats()[0].bytes, 32);
    assert_eq!(clock.slept(), vec![ms(16), ms(16)]);
}

#[test]
fn the_backlog_is_the_debt_in_seconds_or_the_saved_rate_as_a_negative() {
    // 10 IOPS, burst 1 s: starts with a second saved up.
    let limits = ThrottleLimits::default()
        .with_iops(10, UNIT)
        .with_burst(secs(1));
    let b = DeviceBudget::new(limits, Duration::ZERO);
    assert_eq!(b.backlog(Duration::ZERO), Some(-1.0));
    b.charge(Duration::ZERO, 1, 30);
    // 20 operations of debt at 10 per second.
    assert_eq!(b.backlog(Duration::ZERO), Some(2.0));
    assert_eq!(b.backlog(secs(1)), Some(1.0));
    // Refills never beyond the burst.
    assert_eq!(b.backlog(secs(60)), Some(-1.0));
    // The slower of both buckets; none for an unlimited device.
    let both = ThrottleLimits::bandwidth(1000)
        .with_iops(10, UNIT)
        .with_burst(Duration::ZERO);
    let b = DeviceBudget::new(both, Duration::ZERO);
    b.charge(Duration::ZERO, 3000, 1);
    assert_eq!(b.backlog(Duration::ZERO), Some(3.0));
    let free = DeviceBudget::new(ThrottleLimits::default(), Duration::ZERO);
    assert_eq!(free.backlog(Duration::ZERO), None);
}

// Case count: proptest's default, or PROPTEST_CASES from the environment.
proptest::proptest! {
    /// Whatever the arrivals, the operations a bucket lets through in any window of
    /// admission times are at most its rate times the window, plus its burst, plus the one
    /// I/O that may take the bucket into debt.
    #[test]
    fn a_bucket_never_lets_more_than_its_rate_and_burst_through_any_window(
        arrivals in proptest::collection::vec((0u64..50, 1u64..20), 1..200),
        iops in 10u64..2000,
        burst_ms in 0u64..500,
    ) {
        let limits = ThrottleLimits::default()
            .with_iops(iops, UNIT)
            .with_burst(ms(burst_ms));
        let b = DeviceBudget::new(limits, Duration::ZERO);
        let mut now = Duration::ZERO;
        let mut admitted: Vec<(f64, u64)> = Vec::new();
        for (gap_ms, cost) in arrivals {
            now += ms(gap_ms);
            let wait = b.charge(now, 1, cost);
            admitted.push(((now + wait).as_secs_f64(), cost));
        }
        admitted.sort_by(|x, y| x.0.total_cmp(&y.0));
        let rate = iops as f64;
        let burst = rate * burst_ms as f64 / 1000.0;
        let max_cost = admitted.iter().map(|a| a.1).max().unwrap_or(0) as f64;
        for i in 0..admitted.len() {
            let mut sum = 0.0;
            for k in i..admitted.len() {
                sum += admitted[k].1 as f64;
                let window = admitted[k].0 - admitted[i].0;
                // Waits are rounded to the microsecond.
                let allowed = rate * (window + 1e-6) + burst + max_cost;
                proptest::prop_assert!(
                    sum <= allowed + 1e-9,
                    "{sum} operations in {window} s at {rate}/s, burst {burst}"
                );
            }
        }
    }
}

#[test]
fn a_striped_directory_charges_each_stripe_to_its_member() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, arr) = (
        dir.path().join("a"),
        dir.path().join("b"),
        dir.path().join("arr"),
    );
    let limits = ThrottleLimits::default().with_iops(1000, UNIT);
    let storage = ThrottledStorage::new(
        Arc::new(FsStorage::new()),
        vec![(a.clone(), limits), (b.clone(), limits)],
    )
    .striped(arr.clone(), &[0, 1], 4 * KIB);
    for d in [&a, &arr] {
        storage.create_dir_all(d).unwrap();
    }
    let mut w = storage.create(&arr.join("f"), IoClass::Compaction).unwrap();
    // 16 KiB in one append: four stripes, two on each member, each its own operation.
    w.append(&[1u8; 16 * KIB as usize]).unwrap();
    w.sync().unwrap();
    let ios = |s: &ThrottledStorage| s.stats().iter().map(|x| x.ios).collect::<Vec<_>>();
    let bytes = |s: &ThrottledStorage| s.stats().iter().map(|x| x.bytes).collect::<Vec<_>>();
    assert_eq!(ios(&storage), vec![2, 2]);
    assert_eq!(bytes(&storage), vec![8 * KIB, 8 * KIB]);
    // A read within one stripe costs one member one operation; one across a stripe
    // boundary costs both.
    let r = storage.open(&arr.join("f")).unwrap();
    let mut buf = vec![0u8; 1024];
    r.read_exact_at(0, &mut buf, IoClass::Foreground).unwrap();
    assert_eq!(ios(&storage).iter().sum::<u64>(), 5);
    let mut buf = vec![0u8; 2 * KIB as usize];
    r.read_exact_at(3 * KIB, &mut buf, IoClass::Foreground)
        .unwrap();
    assert_eq!(ios(&storage).iter().sum::<u64>(), 7);
    // Files outside the array keep their own device.
    let mut w = storage.create(&a.join("g"), IoClass::Compaction).unwrap();
    w.append(&[1u8; 100]).unwrap();
    assert_eq!(ios(&storage).iter().sum::<u64>(), 8);
    // An array of no known member is no array.
    let plain = ThrottledStorage::new(Arc::new(FsStorage::new()), vec![(a.clone(), limits)])
        .striped(arr.clone(), &[7], 4 * KIB);
    let mut w = plain.create(&arr.join("h"), IoClass::Compaction).unwrap();
    w.append(&[1u8; 100]).unwrap();
    assert_eq!(ios(&plain), vec![0]);
}
