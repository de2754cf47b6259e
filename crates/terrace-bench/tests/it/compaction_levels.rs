//! The report's compaction figures by output level on a database small enough to compact
//! into levels 1 and 2. Whether level 2 is reached while the fill is still writing depends
//! on how the compaction thread is scheduled, so a `waitforcompaction` between the fill and
//! the overwrite lets the tree settle, and level 2 is looked for in either.

use terrace_bench::{run, Flags};

#[test]
fn compaction_by_output_level_adds_up_to_each_benchmarks_compaction_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let flags = Flags::parse([
        format!("--db={}", dir.path().join("db").display()),
        "--benchmarks=fillrandom,waitforcompaction,overwrite".into(),
        "--num=6000".into(),
        "--threads=1".into(),
        "--value_size=100".into(),
        "--write_buffer_size=32768".into(),
        "--target_file_size_base=32768".into(),
        "--max_bytes_for_level_base=131072".into(),
        "--level0_file_num_compaction_trigger=2".into(),
        "--compression_type=none".into(),
        "--statistics".into(),
        "--noprogress".into(),
    ])
    .unwrap();
    let mut out = Vec::new();
    let results = run(&flags, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(results.len(), 3);
    for r in &results {
        // The levels split the benchmark's own compaction bytes (a difference of engine
        // counters, like the total).
        let written: u64 = r.compaction_by_level.iter().map(|l| l.written_bytes).sum();
        assert_eq!(written, r.compaction_bytes_written, "{}", r.name);
        assert!(
            r.compaction_by_level
                .windows(2)
                .all(|w| w[0].level < w[1].level),
            "{:?}",
            r.compaction_by_level
        );
        for l in &r.compaction_by_level {
            assert!(l.level >= 1 && l.compactions > 0, "{l:?}");
            assert!(l.written_bytes > 0 || l.moved_bytes > 0, "{l:?}");
            assert_eq!(l.read_row_bytes, 0, "no matrix: {l:?}");
        }
    }
    let fill = &results[0];
    assert!(fill.compaction_bytes_written > 0, "no compaction: {text}");
    // 6000 entries of about 116 bytes cannot settle within a 128 KiB level 1.
    let settled = &results[..2];
    assert!(
        settled
            .iter()
            .flat_map(|r| &r.compaction_by_level)
            .any(|l| l.level == 2),
        "nothing reached level 2: {:?}",
        settled
            .iter()
            .map(|r| &r.compaction_by_level)
            .collect::<Vec<_>>()
    );
    let line = text
        .lines()
        .find(|l| l.starts_with("  compaction by output level: "))
        .unwrap();
    let l1 = &fill.compaction_by_level[0];
    assert!(
        line.starts_with(&format!(
            "  compaction by output level: L1 W {:.1} MB (R {:.1}+",
            l1.written_bytes as f64 / 1_048_576.0,
            l1.read_input_bytes as f64 / 1_048_576.0
        )),
        "{line}"
    );
    // The --statistics table after each benchmark has a row per level and a sum.
    let tables = text.matches("** Compaction stats (since open) **").count();
    assert_eq!(tables, 3, "{text}");
    assert!(text.contains("\n   L2 "), "{text}");
    assert!(text.contains("\n  Sum "), "{text}");
}
