use super::*;

#[test]
fn no_whole_second_has_no_figure() {
    assert_eq!(slow_seconds(&[]), None);
}

#[test]
fn seconds_below_a_fifth_of_the_median_are_slow() {
    // Median of ten seconds: (1000 + 1000) / 2; a fifth of it is 200.
    let s = slow_seconds(&[1000, 1100, 0, 1010, 199, 200, 1000, 1200, 50, 1000]).unwrap();
    assert_eq!(s.seconds, 10);
    assert_eq!(s.median_ops_per_sec, 1000.0);
    // 0, 199 and 50 are below 200; 200 itself is not.
    assert_eq!(s.slow_seconds, 3);
    assert_eq!(s.share, 0.3);
}

#[test]
fn the_median_of_an_odd_count_is_the_middle_second() {
    let s = slow_seconds(&[500, 10, 100]).unwrap();
    assert_eq!(s.median_ops_per_sec, 100.0);
    assert_eq!((s.slow_seconds, s.share), (1, 1.0 / 3.0));
    let steady = slow_seconds(&[7]).unwrap();
    assert_eq!(
        (steady.seconds, steady.slow_seconds, steady.share),
        (1, 0, 0.0)
    );
}

#[test]
fn a_median_of_zero_makes_no_second_slow() {
    let s = slow_seconds(&[0, 0, 0, 900]).unwrap();
    assert_eq!(s.median_ops_per_sec, 0.0);
    assert_eq!(s.slow_seconds, 0);
}

#[test]
fn volume_intervals_are_per_second_differences_of_the_samples() {
    let before = EngineSample {
        tree_depth: None,
        volumes: vec![(1, 100, 1_000_000, 0), (2, 50, 0, 1000)],
    };
    let after = EngineSample {
        tree_depth: Some(2),
        volumes: vec![(1, 300, 3_000_000, 4000), (2, 50, 0, 1000), (3, 10, 0, 0)],
    };
    let v = volume_intervals(&before, &after, 2.0);
    assert_eq!(v.len(), 3);
    assert_eq!((v[0].id, v[0].iops, v[0].mb_per_sec), (1, 100.0, 1.0));
    assert_eq!(v[0].wait_ms_per_sec, 2.0);
    assert_eq!((v[1].iops, v[1].wait_ms_per_sec), (0.0, 0.0));
    // A volume the earlier sample lacks counts from zero.
    assert_eq!(v[2].iops, 5.0);
}

#[test]
fn rows_with_volumes_go_to_the_volumes_file_beside_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.csv");
    let mut csv = CsvReport::create(&path).unwrap();
    let row = |volumes| IntervalRow {
        secs_elapsed: 1.0,
        interval_qps: 10.0,
        p50_micros: 1.0,
        p99_micros: 2.0,
        max_micros: 3.0,
        benchmark: "ycsb_c".into(),
        tree_depth: None,
        slow_second_share: None,
        volumes,
    };
    csv.append(&row(Vec::new())).unwrap();
    assert!(!volumes_path(&path).exists(), "no volumes, no file");
    let v = |id| VolumeInterval {
        id,
        iops: 500.0,
        mb_per_sec: 2.5,
        wait_ms_per_sec: 10.0,
    };
    csv.append(&row(vec![v(1), v(2)])).unwrap();
    let text = std::fs::read_to_string(volumes_path(&path)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "secs_elapsed,benchmark,volume,iops,mb_per_sec,wait_ms_per_sec"
    );
    assert_eq!(lines[1], "1.000,ycsb_c,1,500.0,2.500,10.0");
    assert_eq!(lines.len(), 3);
    assert!(volumes_path(&path).ends_with("report.volumes.csv"));
}
