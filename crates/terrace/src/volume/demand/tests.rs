use super::*;

fn file(
    number: u64,
    volume: u32,
    replicas: &[u32],
    lo: &str,
    hi: &str,
    size: u64,
) -> Arc<FileMeta> {
    let mut f = FileMeta::for_test(number, volume, lo.as_bytes(), hi.as_bytes(), size);
    f.replicas = replicas.to_vec();
    Arc::new(f)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9 * (1.0 + a.abs().max(b.abs()))
}

#[test]
fn foreground_rates_add_up_per_volume_and_replicas_share_them() {
    let levels = vec![
        vec![],
        vec![
            file(1, 1, &[], "a", "c", 10),
            file(2, 2, &[3], "d", "f", 10),
        ],
        vec![],
    ];
    let rate = |n: u64| if n == 1 { 30.0 } else { 40.0 };
    let d = predict(&levels, &[0.0, 0.0, 0.0], rate, 0.0);
    assert!(close(d.of(1), 30.0));
    assert!(close(d.of(2), 20.0) && close(d.of(3), 20.0), "{d:?}");
    assert_eq!(d.of(9), 0.0);
}

#[test]
fn compaction_reads_fall_on_the_inputs_and_their_next_level_overlaps() {
    // Level 1 is the only level asking for compaction. Its file 1 ("a".."m", on volume 1)
    // overlaps files 3 and 4 of level 2 (volumes 2 and 3); file 2 ("n".."z", volume 1)
    // overlaps file 5 (volume 3).
    let levels = vec![
        vec![],
        vec![
            file(1, 1, &[], "a", "m", 100),
            file(2, 1, &[], "n", "z", 100),
        ],
        vec![
            file(3, 2, &[], "a", "f", 200),
            file(4, 3, &[], "g", "m", 200),
            file(5, 3, &[], "n", "z", 400),
        ],
    ];
    let d = predict(&levels, &[0.0, 2.0, 0.0], |_| 0.0, 120.0);
    // Expected bytes per compaction: volume 1: 0.5*100 + 0.5*100 = 100; volume 2:
    // 0.5*200 = 100; volume 3: 0.5*200 + 0.5*400 = 300. 120 ops/s split 100:100:300, so
    // 24, 24 and 72; no reads measured, so as many again are expected by bytes (120 over
    // 1000 bytes: 200, 200 and 600 bytes).
    assert!(close(d.of(1), 48.0), "{d:?}");
    assert!(close(d.of(2), 48.0), "{d:?}");
    assert!(close(d.of(3), 144.0), "{d:?}");
    let total: f64 = d.by_volume.values().sum();
    assert!(close(total, 240.0));
    // Per byte: level 1 expects 100 of its 200 bytes read, level 2 400 of its 800, at
    // 120 / 500 operations per expected byte; plus 0.12 per byte of unmeasured reads.
    assert!(close(d.new_file_cost(1, 200), 48.0), "{d:?}");
    assert!(close(d.new_file_cost(2, 800), 192.0), "{d:?}");
    assert!(close(d.new_file_cost(0, 100), 12.0), "{d:?}");
}

#[test]
fn only_urgent_levels_count_when_any_is_urgent() {
    let levels = vec![
        vec![file(1, 1, &[], "a", "z", 100)],
        vec![file(2, 2, &[], "a", "z", 100)],
        vec![file(3, 3, &[], "a", "z", 100)],
    ];
    // Level 0 below its trigger, level 1 above: only level 1's compaction is expected
    // (reading volumes 2 and 3), whatever the last level's score says.
    let d = predict(&levels, &[0.5, 1.5, 7.0], |_| 0.0, 10.0);
    let unmeasured = 10.0 / 3.0;
    assert!(close(d.of(1), unmeasured), "{d:?}");
    assert!(close(d.of(2), 5.0 + unmeasured), "{d:?}");
    assert!(close(d.of(3), 5.0 + unmeasured), "{d:?}");
    // Nothing urgent: chances follow the scores (level 0 at 0.5, level 1 at 0.25).
    let d = predict(&levels, &[0.5, 0.25, 0.0], |_| 0.0, 12.0);
    assert!(close(d.of(1), 4.0 + 4.0), "{d:?}");
    assert!(close(d.of(2), 6.0 + 4.0), "{d:?}");
    assert!(close(d.of(3), 2.0 + 4.0), "{d:?}");
}

#[test]
fn reads_not_measured_yet_are_expected_by_bytes_up_to_the_compaction_rate() {
    let levels = vec![
        vec![],
        vec![
            file(1, 1, &[], "a", "c", 300),
            file(2, 2, &[], "d", "f", 100),
        ],
        vec![],
    ];
    // Nothing measured at all: one operation per second, by bytes.
    let d = predict(&levels, &[0.0; 3], |_| 0.0, 0.0);
    assert!(close(d.of(1), 0.75) && close(d.of(2), 0.25), "{d:?}");
    assert!(close(d.new_file_cost(2, 400), 1.0), "{d:?}");
    // 20 compaction reads a second, 8 foreground reads measured on file 2: 12 more are
    // expected, by bytes.
    let d = predict(&levels, &[0.0; 3], |n| if n == 2 { 8.0 } else { 0.0 }, 20.0);
    assert!(close(d.of(1), 9.0) && close(d.of(2), 8.0 + 3.0), "{d:?}");
    // Measured reads beyond the compaction rate: nothing more is expected.
    let d = predict(&levels, &[0.0; 3], |n| n as f64 * 30.0, 20.0);
    assert!(close(d.of(1), 30.0) && close(d.of(2), 60.0), "{d:?}");
    assert_eq!(d.unmeasured_per_byte, 0.0);
}

#[test]
fn odd_scores_and_empty_layouts_predict_nothing_wrong() {
    let empty: Vec<Vec<Arc<FileMeta>>> = vec![vec![], vec![]];
    assert_eq!(predict(&empty, &[5.0], |_| 1.0, 100.0).by_volume.len(), 0);
    let levels = vec![
        vec![file(1, 1, &[], "a", "b", 10)],
        vec![file(2, 2, &[], "a", "b", 10)],
    ];
    for s in [f64::NAN, f64::INFINITY, f64::MAX, -1.0] {
        let d = predict(&levels, &[s, s], |_| 0.0, 10.0);
        let total: f64 = d.by_volume.values().sum();
        assert!(total.is_finite() && total >= 0.0, "{s}: {d:?}");
    }
}
