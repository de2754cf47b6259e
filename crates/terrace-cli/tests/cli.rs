//! The `terrace` binary, run as a user would.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

use terrace::{Db, Options};

fn terrace() -> Command {
    Command::new(env!("CARGO_BIN_EXE_terrace"))
}

fn small() -> Options {
    Options {
        write_buffer_size: 16 << 10,
        ..Options::default()
    }
}

#[test]
fn version_and_help() {
    let out = terrace().arg("version").output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("terrace "));
    let out = terrace().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("inspect"), "{help}");
}

#[test]
fn inspect_reads_a_live_database_without_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    for i in 0..3000u32 {
        db.put(format!("key{i:05}").as_bytes(), b"value").unwrap();
    }
    db.flush().unwrap();
    // The database stays open (and locked) while inspect runs.
    let out = terrace()
        .args(["inspect", "--verify"])
        .arg(dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("level 0:") || text.contains("level 1:"),
        "{text}"
    );
    assert!(text.contains("checksums: ok"), "{text}");
    // The database is unchanged and still writable.
    db.put(b"after", b"inspect").unwrap();
    assert_eq!(db.get(b"key00042").unwrap(), Some(b"value".to_vec()));

    let table = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "sst"))
        .unwrap();
    let out = terrace()
        .args(["inspect", "--keys", "--sst"])
        .arg(&table)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(text.contains("entries:"), "{text}");
    assert!(text.contains("=> value"), "{text}");
}

#[test]
fn bad_input_gets_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = terrace()
        .arg("inspect")
        .arg(dir.path().join("missing"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("terrace: "), "{err}");
    let junk = dir.path().join("junk.sst");
    std::fs::write(&junk, b"this is not a table file at all, not even close").unwrap();
    let out = terrace()
        .args(["inspect", "--sst"])
        .arg(&junk)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("corrupt"));
    let out = terrace().arg("inspect").output().unwrap();
    assert!(!out.status.success());
}

/// A checkpoint of a database whose level 0 is the matrix container: inspect lists the
/// rows it holds and the region file that keeps them.
#[test]
fn inspect_shows_the_rows_of_a_matrix_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let mut matrix = terrace::level0::MatrixOptions {
        region_path: Some(dir.path().join("region.pmem")),
        capacity: 4 << 20,
        page_size: 4096,
        ..Default::default()
    };
    matrix.params.chunk_bytes = 4096;
    let opts = Options {
        level0: std::sync::Arc::new(terrace::level0::MatrixLevel0::new(matrix).unwrap()),
        ..small()
    };
    let db = Db::open(dir.path().join("db"), opts).unwrap();
    for i in 0..3000u32 {
        db.put(format!("key{i:05}").as_bytes(), b"value").unwrap();
    }
    let cp = dir.path().join("cp");
    db.checkpoint(&cp).unwrap();
    let rows = db.stats().levels[0].rows;
    assert!(rows > 0);
    let out = terrace().arg("inspect").arg(&cp).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(&format!(
            "matrix container on persistent memory): {rows} rows"
        )),
        "{text}"
    );
    assert!(text.contains("MATRIX.pmem"), "{text}");
    assert_eq!(text.matches("  row ").count() as u64, rows as u64, "{text}");
}

/// Log events go to stderr or to `--log-file`, at `--log-level`; a bad level is refused.
#[test]
fn log_level_and_log_file() {
    let dir = tempfile::tempdir().unwrap();
    // A log whose tail is damaged: the open drops it and logs a warning.
    let db_dir = dir.path().join("db");
    let db = Db::open(&db_dir, small()).unwrap();
    db.put(b"k", b"v").unwrap();
    db.close().unwrap();
    let log = std::fs::read_dir(&db_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "log"))
        .unwrap();
    let mut bytes = std::fs::read(&log).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&log, &bytes).unwrap();
    let log_file = dir.path().join("terrace.log");
    let out = terrace()
        .args(["--log-level", "warn", "--log-file"])
        .arg(&log_file)
        .args([
            "bench",
            "--use_existing_db=1",
            "--benchmarks=readrandom",
            "--num=10",
        ])
        .arg(format!("--db={}", db_dir.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let logged = std::fs::read_to_string(&log_file).unwrap();
    assert!(logged.contains("WARN"), "{logged}");
    assert!(
        logged.contains("dropping damaged write-ahead-log records"),
        "{logged}"
    );

    let out = terrace()
        .args(["--log-level", "loud", "version"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--log-level loud"));
}

#[test]
fn compactd_refuses_to_run_without_a_secret() {
    let dir = tempfile::tempdir().unwrap();
    let out = terrace()
        .args(["compactd", "--listen", "127.0.0.1:0", "--dir"])
        .arg(dir.path())
        .env_remove("TERRACE_COMPACTD_SECRET")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("shared secret"), "{err}");
}

#[test]
fn a_compactd_process_runs_compactions_and_its_death_loses_nothing() {
    use std::io::BufRead;
    use std::sync::Arc;
    use std::time::Duration;
    use terrace::offload::{RemoteExecutor, WorkerAddr};

    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("compactd.sock");
    let mut worker = terrace()
        .args(["compactd", "--threads", "2", "--pipelined", "--listen"])
        .arg(format!("unix:{}", sock.display()))
        .arg("--dir")
        .arg(dir.path())
        .env("TERRACE_COMPACTD_SECRET", "s3cret")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(worker.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains("listening on unix:"), "{line}");
    let remote = RemoteExecutor::new(
        WorkerAddr::parse(&format!("unix:{}", sock.display())),
        "s3cret",
        Duration::from_secs(30),
    );
    let opts = Options {
        compaction_executor: Arc::new(remote),
        target_file_size_base: 32 << 10,
        max_bytes_for_level_base: 128 << 10,
        level0_file_num_compaction_trigger: 2,
        ..small()
    };
    let value = |i: u32, round: u32| format!("{round}/{i}").repeat(8);
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let load = |round: u32| {
        for i in 0..3000u32 {
            db.put(format!("k{i:05}").as_bytes(), value(i, round).as_bytes())
                .unwrap();
        }
        db.compact_range(None, None).unwrap();
    };
    load(0);
    load(1);
    let before = db.stats();
    assert!(before.compactions > 0);
    assert_eq!(
        before.compaction_fallbacks, 0,
        "the worker ran every compaction"
    );
    // The worker dies: compactions go on, on the host.
    worker.kill().unwrap();
    worker.wait().unwrap();
    load(2);
    assert!(db.stats().compaction_fallbacks > 0);
    drop(db);
    let db = Db::open(dir.path(), opts).unwrap();
    for i in 0..3000u32 {
        let got = db.get(format!("k{i:05}").as_bytes()).unwrap();
        assert_eq!(got.as_deref(), Some(value(i, 2).as_bytes()), "k{i:05}");
    }
}

#[test]
fn inspect_shows_each_table_s_volume_and_replicas() {
    let root = tempfile::tempdir().unwrap();
    let opts = Options {
        volumes: vec![root.path().join("v1"), root.path().join("v2")],
        placement_policy: terrace::volume::placement::PlacementPolicy::Single,
        ..small()
    };
    let dir = root.path().join("db");
    let db = Db::open(&dir, opts).unwrap();
    for i in 0..3000u32 {
        db.put(format!("key{i:05}").as_bytes(), b"value").unwrap();
    }
    db.flush().unwrap();
    let number = db.live_files()[0].1.number;
    assert!(db.copy_table_to(number, 2).unwrap());
    let out = terrace().arg("inspect").arg(&dir).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(&format!("{number:06}.sst vol 1+2 ")),
        "{text}"
    );
}
