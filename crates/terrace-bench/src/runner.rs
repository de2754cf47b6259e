//! Runs the benchmarks of `--benchmarks` in order against one database: opens it (fresh
//! unless `--use_existing_db`), recreates it before each fill that needs an empty
//! database, starts the workers, the interval reporter and the progress bar, and prints
//! each result as it completes.
//!
//! Owns: the database's lifetime during a run, thread orchestration; the text blocks read
//! from the database (header, `stats`, `--statistics` tables) are in `runner/text.rs`.
//! Must not touch: the engine's internals; only `terrace::Db`'s public API is used.
//! Concurrency: workers run on scoped threads sharing `&Db`; results are built after
//! they join.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::ScopedJoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use parking_lot::Mutex;
use terrace::version::{parse_file_name, FileKind};
use terrace::{Db, WriteOptions};

use crate::error::{BenchError, Result};
use crate::flags::Flags;
use crate::interval::{report_loop, CsvReport, EngineSample, IntervalRow};
use crate::recorder::{Shared, ThreadStats};
use crate::report::{print_statistics, write_json, BenchResult, EngineDelta};
use crate::seed::{BenchSeeds, Seeds};
use crate::workload::{self, Ctx, KeyOrder};
use crate::ycsb::{self, InsertCounter, Workload};

mod text;

pub(crate) use text::print_seed;
use text::{print_compaction_stats, print_header, print_stats};

/// Every benchmark name `--benchmarks` accepts.
pub const BENCHMARKS: &[&str] = &[
    "fillseq",
    "fillrandom",
    "fillsync",
    "overwrite",
    "updaterandom",
    "readrandom",
    "readmissing",
    "readseq",
    "readreverse",
    "seekrandom",
    "deleterandom",
    "readwhilewriting",
    "seekrandomwhilewriting",
    "stats",
    "compact",
    "waitforcompaction",
    "ycsb_load",
    "ycsb_a",
    "ycsb_b",
    "ycsb_c",
    "ycsb_d",
    "ycsb_e",
    "ycsb_f",
];

/// Benchmarks that start from an empty database (skipped with `--use_existing_db`).
const FRESH: &[&str] = &["fillseq", "fillrandom", "fillsync", "ycsb_load"];

/// Benchmarks of one maintenance call, not a stream of operations: they add no rows to the
/// interval report and the plot (a single operation lasting seconds would read as a stall
/// and set the latency axis).
const MAINTENANCE: &[&str] = &["compact", "waitforcompaction"];

/// Runs every benchmark of `flags`, printing to `out`, and returns their results. Writes
/// the report file, JSON and plot that the flags ask for.
///
/// # Errors
/// `UnknownBenchmark` (before anything runs), engine errors, report-file errors.
pub fn run(flags: &Flags, out: &mut dyn Write) -> Result<Vec<BenchResult>> {
    if let Some(target) = &flags.target {
        return crate::server::run(flags, target, out);
    }
    if let Some(target) = &flags.boom_target {
        return crate::boom_target::run(flags, target, out);
    }
    if let Some(bad) = flags
        .benchmarks
        .iter()
        .find(|b| !BENCHMARKS.contains(&b.as_str()))
    {
        return Err(BenchError::UnknownBenchmark(bad.clone()));
    }
    let io = |source| BenchError::Io {
        path: "stdout".into(),
        source,
    };
    if !flags.use_existing_db {
        destroy(flags)?;
    }
    let mut db = Some(Db::open(&flags.db, flags.engine_options())?);
    let mut seeds = Seeds::new(flags.seed);
    print_header(flags, &seeds, out).map_err(io)?;
    let csv = CsvReport::for_run(flags)?;
    let run_start = Instant::now();
    let mut results = Vec::new();
    for name in &flags.benchmarks {
        if FRESH.contains(&name.as_str()) {
            if flags.use_existing_db {
                writeln!(out, "{name:<12} : skipped (--use_existing_db is true)").map_err(io)?;
                continue;
            }
            if let Some(old) = db.take() {
                old.close()?;
            }
            destroy(flags)?;
            db = Some(Db::open(&flags.db, flags.engine_options())?);
        }
        let Some(d) = db.as_ref() else { continue };
        if name == "stats" {
            print_stats(d, out).map_err(io)?;
            continue;
        }
        let bench_seeds = seeds.next_benchmark(name, flags.threads);
        let result = run_one(d, flags, name, bench_seeds, run_start, &csv)?;
        result.print(out, flags.histogram).map_err(io)?;
        if flags.statistics {
            print_compaction_stats(d, out).map_err(io)?;
        }
        out.flush().map_err(io)?;
        results.push(result);
    }
    if let Some(d) = db.as_ref() {
        if flags.statistics {
            print_statistics(out, &d.stats()).map_err(io)?;
        }
    }
    if let Some(d) = db.take() {
        d.close()?;
    }
    write_reports(flags, &seeds, &results)?;
    Ok(results)
}

/// Writes the JSON file and the plot that `flags` ask for.
pub(crate) fn write_reports(flags: &Flags, seeds: &Seeds, results: &[BenchResult]) -> Result<()> {
    if let Some(path) = &flags.json {
        write_json(path, flags, seeds.base(), results)?;
    }
    if let Some(path) = &flags.plot {
        let rows: Vec<IntervalRow> = results.iter().flat_map(|r| r.intervals.clone()).collect();
        let names: Vec<&str> = results.iter().map(|r| r.name.as_str()).collect();
        let title = format!("terrace bench: {}", names.join(", "));
        crate::plot::draw(path, &title, &rows)?;
        if rows.iter().any(|r| !r.volumes.is_empty()) {
            crate::plot::draw_volumes(&crate::plot::volumes_path(path), &title, &rows)?;
        }
    }
    Ok(())
}

/// Deletes the database: its directory and `--level0_dir`, and with `--wal_dir` the
/// logs there (a new database refuses a log directory holding another database's logs),
/// then that directory if it is left empty, as db_bench's `DestroyDB`.
fn destroy(flags: &Flags) -> Result<()> {
    let io = |path: &std::path::Path| {
        let path = path.to_path_buf();
        move |source| BenchError::Io { path, source }
    };
    let not_found = |e: &std::io::Error| e.kind() == std::io::ErrorKind::NotFound;
    for dir in std::iter::once(&flags.db).chain(&flags.level0_dir) {
        match std::fs::remove_dir_all(dir) {
            Err(e) if !not_found(&e) => return Err(io(dir)(e)),
            _ => {}
        }
    }
    let Some(wal) = &flags.wal_dir else {
        return Ok(());
    };
    let entries = match std::fs::read_dir(wal) {
        Err(e) if not_found(&e) => return Ok(()),
        r => r.map_err(io(wal))?,
    };
    for entry in entries {
        let entry = entry.map_err(io(wal))?;
        let name = entry.file_name();
        let is_log = name
            .to_str()
            .and_then(parse_file_name)
            .is_some_and(|(kind, _)| kind == FileKind::Wal);
        if is_log {
            std::fs::remove_file(entry.path()).map_err(io(&entry.path()))?;
        }
    }
    // Left in place when it holds anything else.
    let _ = std::fs::remove_dir(wal);
    Ok(())
}

fn expected_ops(f: &Flags, name: &str) -> u64 {
    let per_thread = match name {
        "fillseq" | "fillrandom" | "overwrite" | "deleterandom" => f.num,
        "fillsync" => f.num / 1000,
        "compact" | "waitforcompaction" => return 1,
        "ycsb_load" => f.num / f.threads as u64 + 1,
        _ => f.reads_per_thread(),
    };
    per_thread * f.threads as u64
}

pub(crate) fn progress_bar(f: &Flags, name: &str) -> Option<ProgressBar> {
    if !f.progress || !std::io::stdout().is_terminal() {
        return None;
    }
    let bar = if f.duration_seconds > 0 {
        ProgressBar::new_spinner()
    } else {
        ProgressBar::new(expected_ops(f, name))
    };
    if let Ok(style) = ProgressStyle::with_template(
        "{prefix:<12} [{elapsed_precise}] {wide_bar} {pos}/{len} {per_sec}",
    ) {
        bar.set_style(style);
    }
    bar.set_prefix(name.to_string());
    Some(bar)
}

fn worker(name: &str, ctx: Ctx<'_>, counter: &InsertCounter) -> Result<ThreadStats> {
    let f = ctx.flags;
    match name {
        "fillseq" => workload::write(ctx, KeyOrder::Sequential, f.num, ctx.write_options()),
        "fillrandom" | "overwrite" => {
            workload::write(ctx, KeyOrder::Random, f.num, ctx.write_options())
        }
        "fillsync" => {
            let sync = WriteOptions {
                sync: true,
                ..ctx.write_options()
            };
            workload::write(ctx, KeyOrder::Random, f.num / 1000, sync)
        }
        "readrandom" | "readwhilewriting" => workload::read_random(ctx, false),
        "readmissing" => workload::read_random(ctx, true),
        "readseq" => workload::read_sequential(ctx, false),
        "readreverse" => workload::read_sequential(ctx, true),
        "seekrandom" | "seekrandomwhilewriting" => workload::seek_random(ctx),
        "deleterandom" => workload::delete_random(ctx),
        "updaterandom" => workload::update_random(ctx),
        "compact" => workload::maintenance(ctx, |db| db.compact_range(None, None)),
        "waitforcompaction" => workload::maintenance(ctx, Db::wait_for_compactions),
        "ycsb_load" => ycsb::load(ctx),
        other => match Workload::from_name(other) {
            Some(w) => ycsb::run(ctx, w, counter),
            None => Err(BenchError::UnknownBenchmark(other.to_string())),
        },
    }
}

pub(crate) fn join<T>(h: std::thread::ScopedJoinHandle<'_, Result<T>>) -> Result<T> {
    h.join()
        .map_err(|_| BenchError::Thread("a worker thread panicked".into()))?
}

/// Waits for a benchmark's threads: the workers, then (told to stop once the workers are
/// done) the background writer, then (told the run is over) the interval reporter. The
/// first worker error wins.
pub(crate) fn finish_threads<'s>(
    workers: Vec<ScopedJoinHandle<'s, Result<ThreadStats>>>,
    writer: Option<ScopedJoinHandle<'s, Result<ThreadStats>>>,
    reporter: Option<ScopedJoinHandle<'s, Result<Vec<IntervalRow>>>>,
    shared: &Shared,
    done: &AtomicBool,
) -> Result<(Vec<ThreadStats>, Vec<IntervalRow>)> {
    let mut stats = Vec::new();
    let mut first_error = None;
    for h in workers {
        match join(h) {
            Ok(st) => stats.push(st),
            Err(e) => first_error = first_error.or(Some(e)),
        }
    }
    shared.stop.store(true, Ordering::Release);
    if let Some(h) = writer {
        match join(h) {
            Ok(st) => stats.push(st),
            Err(e) => first_error = first_error.or(Some(e)),
        }
    }
    done.store(true, Ordering::Release);
    let rows = match reporter {
        Some(h) => join(h)?,
        None => Vec::new(),
    };
    match first_error {
        Some(e) => Err(e),
        None => Ok((stats, rows)),
    }
}

fn run_one(
    db: &Db,
    flags: &Flags,
    name: &str,
    seeds: BenchSeeds,
    run_start: Instant,
    csv: &Mutex<Option<CsvReport>>,
) -> Result<BenchResult> {
    let reporting = flags.report_interval_seconds > 0 && !MAINTENANCE.contains(&name);
    let shared = Shared::new(reporting, progress_bar(flags, name));
    let counter = InsertCounter::new(flags.num);
    let with_writer = name.ends_with("whilewriting");
    let before = db.stats();
    let done = AtomicBool::new(false);
    let (threads, intervals) = std::thread::scope(|s| -> Result<_> {
        let ctx = |tid, seed| Ctx {
            db,
            flags,
            shared: &shared,
            tid,
            seed,
        };
        let reporter = reporting.then(|| {
            let every = Duration::from_secs(flags.report_interval_seconds);
            let (shared, done) = (&shared, &done);
            let sample = || EngineSample::of(&db.stats());
            s.spawn(move || report_loop(shared, every, name, run_start, done, csv, &sample))
        });
        let readers: Vec<_> = (0..flags.threads)
            .map(|tid| {
                let (ctx, counter) = (ctx(tid, seeds.worker(tid)), &counter);
                s.spawn(move || worker(name, ctx, counter))
            })
            .collect();
        let writer = with_writer.then(|| {
            let ctx = ctx(flags.threads, seeds.writer());
            s.spawn(move || workload::background_writer(ctx))
        });
        finish_threads(readers, writer, reporter, &shared, &done)
    })?;
    if let Some(p) = shared.progress() {
        p.finish_and_clear();
    }
    let after = db.stats();
    let gap = shared.max_write_gap().as_secs_f64() * 1e6;
    let engine = EngineDelta {
        before: &before,
        after: &after,
    };
    let mut result = BenchResult::build(name, &threads, engine, gap, shared.slow_seconds(true))?;
    result.intervals = intervals;
    result.message = message(name, &result, &threads);
    Ok(result)
}

pub(crate) fn message(name: &str, r: &BenchResult, threads: &[ThreadStats]) -> String {
    match name {
        "readrandom"
        | "readmissing"
        | "readwhilewriting"
        | "seekrandom"
        | "seekrandomwhilewriting" => format!("({} of {} found)", r.found, r.ops),
        "updaterandom" => format!("( updates:{} found:{})", r.ops, r.found),
        n if n.starts_with("ycsb_") => {
            let mut counts = std::collections::BTreeMap::new();
            for t in threads.iter().filter(|t| !t.excluded()) {
                for (k, c) in &t.counts {
                    *counts.entry(k.label()).or_insert(0u64) += c;
                }
            }
            let parts: Vec<String> = counts.iter().map(|(k, c)| format!("{k}: {c}")).collect();
            format!("({})", parts.join(" "))
        }
        _ => String::new(),
    }
}
