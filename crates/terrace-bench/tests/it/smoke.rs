use terrace_bench::{run, Flags, BENCHMARKS};

#[test]
fn every_benchmark_runs_on_a_tiny_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let json = dir.path().join("out.json");
    let csv = dir.path().join("out.csv");
    let svg = dir.path().join("out.svg");
    let all = BENCHMARKS.join(",");
    let args = [
        format!("--db={}", db.display()),
        format!("--benchmarks={all}"),
        "--num=200".into(),
        "--threads=2".into(),
        "--write_buffer_size=65536".into(),
        "--histogram".into(),
        "--statistics".into(),
        "--report_interval_seconds=1".into(),
        format!("--report_file={}", csv.display()),
        format!("--json={}", json.display()),
        format!("--plot={}", svg.display()),
        "--noprogress".into(),
    ];
    let flags = Flags::parse(&args).unwrap();
    let mut out = Vec::new();
    let results = run(&flags, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();

    // One result per benchmark except `stats`, in order.
    let names: Vec<&str> = results.iter().map(|r| r.name.as_str()).collect();
    let expected: Vec<&str> = BENCHMARKS
        .iter()
        .copied()
        .filter(|b| *b != "stats")
        .collect();
    assert_eq!(names, expected);
    assert!(text.contains("** Terrace stats **"));
    assert!(text.contains("STATISTICS:\nterrace.bytes.written COUNT : "));

    for r in &results {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{:<12} : ", r.name)))
            .unwrap_or_else(|| panic!("no result line for {}", r.name));
        for field in [" micros/op ", " ops/sec ", " seconds ", " operations;"] {
            assert!(line.contains(field), "{line}");
        }
        assert!(line.contains(&format!(" {} operations;", r.ops)), "{line}");
        // Counts add up: per-kind counts sum to the total, as do the histograms.
        let by_kind: u64 = r.by_op.values().map(|l| l.count).sum();
        assert_eq!(by_kind, r.ops, "{}", r.name);
        assert_eq!(r.latency.count, r.ops, "{}", r.name);
        assert!(r.found <= r.ops, "{}", r.name);
        assert!(r.latency.p50 <= r.latency.p99 && r.latency.p99 <= r.latency.max);
        let expected_ops = match r.name.as_str() {
            "fillsync" => 0, // --num / 1000 per thread
            "readseq" | "readreverse" => r.ops,
            "compact" | "waitforcompaction" => 1, // once, by the first thread
            "ycsb_load" => 200,                   // --num records, shared by the threads
            _ => 400,
        };
        assert_eq!(r.ops, expected_ops, "{}", r.name);
    }
    let get = |n: &str| results.iter().find(|r| r.name == n).unwrap();
    assert_eq!(get("readmissing").found, 0);
    assert!(text.contains("(0 of 400 found)"));
    assert!(get("readrandom").found > 0);
    assert!(get("ycsb_load").found == 0 && get("ycsb_c").found == 400);
    // Both threads read the whole database once.
    assert_eq!(get("readseq").ops, get("readreverse").ops);
    assert!(get("fillrandom").user_bytes_written > 0);
    assert!(text.contains("Percentiles: P50: "));
    assert!(text.contains("  write amplification: "));
    assert!(text.contains("  compaction by output level: "));
    // `--statistics`: the compaction table after every benchmark.
    assert_eq!(
        text.matches("** Compaction stats (since open) **\nLevel ")
            .count(),
        results.len()
    );
    assert!(text.contains("  level bytes: "));
    assert!(text.contains("  stalls: "));
    assert!(text.contains("  tree depth: "));
    assert!(text.contains("  slow seconds: "));
    // The depth counts the non-empty levels the result lists (none if nothing was
    // flushed yet).
    let fill = get("fillrandom");
    assert_eq!(fill.tree_depth, Some(fill.levels.len()));

    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let benches = doc["benchmarks"].as_array().unwrap();
    assert_eq!(benches.len(), results.len());
    for b in benches {
        for field in [
            "ops_per_sec",
            "micros_per_op",
            "mb_per_sec",
            "latency",
            "write_amplification",
            "stall_micros",
            "stall_count",
            "longest_write_gap_micros",
            "slow_seconds",
            "tree_depth",
            "throttle_wait_micros",
            "throttled_write_amplification",
        ] {
            assert!(b.get(field).is_some(), "{field}");
        }
    }
    let report = std::fs::read_to_string(&csv).unwrap();
    let mut lines = report.lines();
    assert_eq!(
        lines.next(),
        Some(
            "secs_elapsed,interval_qps,p50_micros,p99_micros,max_micros,benchmark,\
             tree_depth,slow_second_share"
        )
    );
    for row in report.lines().skip(1) {
        assert_eq!(row.split(',').count(), 8, "{row}");
    }
    // A row per benchmark (its final partial interval at least), but none for the
    // maintenance calls, whose one long operation would read as a stall.
    let rows: Vec<&str> = lines.collect();
    let streamed = results
        .iter()
        .filter(|r| !matches!(r.name.as_str(), "compact" | "waitforcompaction"))
        .count();
    assert!(rows.len() >= streamed - 1, "{report}");
    assert!(
        rows.iter()
            .all(|r| !r.contains(",compact,") && !r.contains(",waitforcompaction,")),
        "{report}"
    );
    assert!(results
        .iter()
        .filter(|r| r.name.contains("compact"))
        .all(|r| r.intervals.is_empty()));
    let picture = std::fs::read_to_string(&svg).unwrap();
    assert!(picture.starts_with("<svg") && picture.contains("polyline"));
}

#[test]
fn unknown_benchmarks_fail_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let flags = Flags::parse([
        format!("--db={}", dir.path().join("db").display()),
        "--benchmarks=fillseq,nosuch".into(),
    ])
    .unwrap();
    let err = run(&flags, &mut Vec::new()).unwrap_err();
    assert!(err.to_string().contains("nosuch"));
    assert!(!dir.path().join("db").exists());
}

/// Each benchmark of a run draws fresh keys, as db_bench seeds them: a read after a
/// random fill of `--num` keys into a space of `--num` finds about 1 - 1/e of its keys,
/// not all of them (which replaying the fill's keys would). The header and the JSON name
/// the seed, so a run can be replayed.
#[test]
fn a_read_after_a_random_fill_draws_fresh_keys() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let flags = Flags::parse([
        format!("--db={}", dir.path().join("db").display()),
        "--benchmarks=fillrandom,readrandom".into(),
        "--num=4000".into(),
        "--seed=3".into(),
        format!("--json={}", json.display()),
        "--noprogress".into(),
    ])
    .unwrap();
    let mut out = Vec::new();
    let results = run(&flags, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("Seed:       3\n"), "{text}");
    let share = results[1].found as f64 / results[1].ops as f64;
    assert!((0.55..0.70).contains(&share), "{share}");
    // The same seed is the same workload.
    let again = run(&flags, &mut Vec::new()).unwrap();
    assert_eq!(again[1].found, results[1].found);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["flags"]["seed"], 3);
}

#[test]
fn use_existing_db_skips_fills_and_keeps_data() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("--db={}", dir.path().join("db").display());
    let fill = Flags::parse([db.as_str(), "--benchmarks=fillseq", "--num=100"]).unwrap();
    run(&fill, &mut Vec::new()).unwrap();
    let read = Flags::parse([
        db.as_str(),
        "--benchmarks=fillrandom,readrandom",
        "--num=100",
        "--use_existing_db",
    ])
    .unwrap();
    let mut out = Vec::new();
    let results = run(&read, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("fillrandom   : skipped (--use_existing_db is true)"));
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].found, 100);
}

#[test]
fn a_run_on_throttled_storage_reports_its_device_and_depth() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let flags = Flags::parse([
        format!("--db={}", dir.path().join("db").display()),
        "--benchmarks=fillseq,overwrite,readrandom".into(),
        "--num=3000".into(),
        "--write_buffer_size=65536".into(),
        "--target_file_size_base=65536".into(),
        "--storage_rate_limit=4194304".into(),
        "--storage_iops_limit=2000".into(),
        format!("--json={}", json.display()),
        "--noprogress".into(),
    ])
    .unwrap();
    let mut out = Vec::new();
    let results = run(&flags, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("Storage:    throttled to 4.0 MB/s and 2000 IOPS of 256 KiB on "),
        "{text}"
    );
    assert_eq!(results[2].found, 3000, "every key of fillseq reads back");
    // The whole database is behind the throttle: its tables and its log (at least the
    // user bytes) count as the throttled tier's.
    let fill = &results[0];
    assert!(
        fill.throttled_bytes_written
            >= fill.flush_bytes_written + fill.compaction_bytes_written + fill.user_bytes_written,
        "{fill:?}"
    );
    assert!(fill.throttled_write_amplification > fill.write_amplification);
    assert!(
        text.contains("  write amplification of the throttled tier: "),
        "{text}"
    );
    let depth = results[1].tree_depth.unwrap();
    assert!(depth >= 1 && depth == results[1].levels.len(), "{depth}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["flags"]["storage_rate_limit"], 4194304);
    assert_eq!(doc["flags"]["storage_iops_limit"], 2000);
}

/// `--wal_dir` keeps the logs out of `--db`; each fresh fill deletes them with the
/// database (a new database refuses a log directory holding another's logs).
#[test]
fn wal_dir_holds_the_logs_and_is_emptied_with_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let (db, wal) = (dir.path().join("db"), dir.path().join("pmem").join("wal"));
    let flags = Flags::parse([
        format!("--db={}", db.display()),
        format!("--wal_dir={}", wal.display()),
        "--benchmarks=fillrandom,fillseq,readrandom".into(),
        "--num=500".into(),
        "--noprogress".into(),
    ])
    .unwrap();
    let mut out = Vec::new();
    let results = run(&flags, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        results.iter().all(|r| r.throttled_bytes_written == 0),
        "no throttle"
    );
    assert!(
        text.contains(&format!("WAL dir:    {}", wal.display())),
        "{text}"
    );
    assert_eq!(results[2].found, 500);
    let logs = |d: &std::path::Path| {
        std::fs::read_dir(d)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "log")
            })
            .count()
    };
    assert_eq!(logs(&wal), 1);
    assert_eq!(logs(&db), 0);
    // A second run starts over: the old logs are deleted, not refused or replayed.
    run(&flags, &mut Vec::new()).unwrap();
    assert_eq!(logs(&wal), 1);
}

/// The matrix level 0 with a bandwidth limit on its region: the header names the limit and
/// the run completes (the limit is far above what the run moves, so it never waits).
#[test]
fn a_matrix_run_with_a_pmem_rate_limit_names_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("pmem")).unwrap();
    let flags = Flags::parse([
        format!("--db={}", dir.path().join("db").display()),
        format!("--pmem_path={}", dir.path().join("pmem").display()),
        "--l0=matrix".into(),
        "--matrix_capacity=4194304".into(),
        "--pmem_rate_limit=10485760000".into(),
        "--benchmarks=fillseq,readrandom".into(),
        "--num=2000".into(),
        "--write_buffer_size=65536".into(),
        "--noprogress".into(),
    ])
    .unwrap();
    let mut out = Vec::new();
    let results = run(&flags, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("PMem:       rate-limited to 10000.0 MB/s persisted plus read"),
        "{text}"
    );
    assert_eq!(results[1].found, 2000);
}
