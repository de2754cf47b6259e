//! Server mode: YCSB's load phase and workloads A–F over RESP against any Redis-protocol
//! server (`--target redis://HOST:PORT`), one connection per `--threads` worker and
//! `--pipeline` commands in flight per connection.
//!
//! A record is one string value per key, its fields side by side as engine mode stores
//! them. Reads are GET, updates and inserts a SET of the whole record, a read-modify-write
//! a GET and then a SET of the record with one field replaced, and workload E's scan is
//! Terrace's ordered `TRANGE start count`. A server that answers TRANGE with an
//! unknown-command error (Redis) gets E reported as unsupported: SCAN has no order, so
//! nothing else is the same operation. With pipelining, a batch of operations is sent
//! before their replies are read; each operation's latency runs from the sending of its
//! batch to the arrival of its last reply, and read-modify-writes send their SETs in a
//! second round trip of the batch. Write amplification and stalls come from the `engine`
//! section of `INFO` when the server has one (`terrace serve`) and are "-" otherwise.
//!
//! Owns: the server-mode run. Must not touch: keys other than the benchmark's own
//! (`user...`); the server is not emptied before ycsb_load.
//! Concurrency: scoped worker threads, each with its own `Client`; measurement state is
//! shared as in engine mode.

use std::io::Write;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rand::Rng;
use terrace::DbStats;

use crate::error::{BenchError, Result};
use crate::flags::Flags;
use crate::interval::{report_loop, CsvReport, EngineSample};
use crate::keys::ValueGenerator;
use crate::recorder::{Budget, OpKind, Shared, ThreadStats};
use crate::report::{BenchResult, Counters, EngineDelta};
use crate::resp_client::{Client, Reply, Target};
use crate::runner::{finish_threads, message, print_seed, progress_bar, write_reports, BENCHMARKS};
use crate::seed::{self, BenchSeeds, Seeds};
use crate::ycsb::{chooser, load_share, pick, record_key, InsertCounter, Workload};

/// Runs the YCSB benchmarks of `flags` against `target`, printing to `out`.
///
/// # Errors
/// `NotInServerMode` or `UnknownBenchmark` (before anything runs), `Connect` when the
/// server cannot be reached, `Net` and `Server` when it fails mid-run, report-file errors.
pub fn run(flags: &Flags, target: &Target, out: &mut dyn Write) -> Result<Vec<BenchResult>> {
    if let Some(bad) = flags
        .benchmarks
        .iter()
        .find(|b| *b != "ycsb_load" && Workload::from_name(b).is_none())
    {
        return Err(if BENCHMARKS.contains(&bad.as_str()) {
            BenchError::NotInServerMode(bad.clone())
        } else {
            BenchError::UnknownBenchmark(bad.clone())
        });
    }
    let io = |source| BenchError::Io {
        path: "stdout".into(),
        source,
    };
    let mut probe = Client::connect(target)?;
    let mut seeds = Seeds::new(flags.seed);
    print_header(flags, target, &seeds, out).map_err(io)?;
    let csv = CsvReport::for_run(flags)?;
    let run_start = Instant::now();
    let mut results = Vec::new();
    for name in &flags.benchmarks {
        if name == "ycsb_e" {
            if let Some(error) = trange_unsupported(&mut probe)? {
                writeln!(
                    out,
                    "{name:<12} : unsupported by the server (no ordered range read; TRANGE: {error})"
                )
                .map_err(io)?;
                continue;
            }
        }
        let bench_seeds = seeds.next_benchmark(name, flags.threads);
        let result = run_one(
            flags,
            target,
            name,
            bench_seeds,
            run_start,
            &csv,
            &mut probe,
        )?;
        result.print(out, flags.histogram).map_err(io)?;
        out.flush().map_err(io)?;
        results.push(result);
    }
    write_reports(flags, &seeds, &results)?;
    Ok(results)
}

fn print_header(
    f: &Flags,
    target: &Target,
    seeds: &Seeds,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    writeln!(
        out,
        "Terrace:    version {} (server mode)",
        env!("CARGO_PKG_VERSION")
    )?;
    writeln!(out, "Target:     {target}")?;
    writeln!(
        out,
        "Records:    {} of {} fields x {} bytes",
        f.num, f.ycsb_field_count, f.ycsb_field_length
    )?;
    writeln!(out, "Connections: {}", f.threads)?;
    writeln!(out, "Pipeline:   {}", f.pipeline)?;
    print_seed(seeds, out)?;
    writeln!(out, "{}", "-".repeat(48))
}

/// The server's error text if it does not know TRANGE.
fn trange_unsupported(probe: &mut Client) -> Result<Option<String>> {
    match probe.call(&[b"TRANGE", b"user", b"1"])? {
        Reply::Error(e) if e.to_ascii_lowercase().contains("unknown command") => Ok(Some(e)),
        Reply::Array(Some(_)) => Ok(None),
        other => Err(unexpected("TRANGE", &other)),
    }
}

fn unexpected(command: &str, reply: &Reply) -> BenchError {
    let reply = match reply {
        Reply::Error(e) => e.clone(),
        other => format!("unexpected reply {other:?}"),
    };
    BenchError::Server {
        command: command.to_string(),
        reply,
    }
}

/// The engine counters of `INFO engine`, or `None` when the server has no such section.
fn engine_stats(probe: &mut Client) -> Result<Option<DbStats>> {
    let text = match probe.call(&[b"INFO", b"engine"])? {
        Reply::Bulk(Some(t)) => String::from_utf8_lossy(&t).into_owned(),
        _ => return Ok(None),
    };
    let mut s = DbStats::default();
    let mut seen = false;
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let Ok(v) = v.trim().parse::<u64>() else {
            continue;
        };
        let slot = match k {
            "engine_user_bytes_written" => &mut s.user_bytes_written,
            "engine_flush_bytes_written" => &mut s.flush_bytes_written,
            "engine_compaction_bytes_written" => &mut s.compaction_bytes_written,
            "engine_stall_micros" => &mut s.stall_micros,
            "engine_stall_count" => &mut s.stall_count,
            _ => continue,
        };
        *slot = v;
        seen = true;
    }
    Ok(seen.then_some(s))
}

fn run_one(
    flags: &Flags,
    target: &Target,
    name: &str,
    seeds: BenchSeeds,
    run_start: Instant,
    csv: &Mutex<Option<CsvReport>>,
    probe: &mut Client,
) -> Result<BenchResult> {
    measure(
        flags,
        name,
        seeds,
        run_start,
        csv,
        &mut || engine_stats(probe),
        &|tid, seed, shared, counter| worker(flags, target, shared, tid, seed, name, counter),
    )
}

/// A server-mode worker: thread `tid` with `seed`, recording into the run's shared
/// state and taking insert numbers from its counter.
pub(crate) type Worker<'a> =
    dyn Fn(usize, u64, &Shared, &InsertCounter) -> Result<ThreadStats> + Sync + 'a;

/// Runs benchmark `name` with one `worker` per `--threads` connection and measures it
/// as engine mode does; `engine_stats` reads the server's engine counters before and
/// after (`None`: the server has none to give).
pub(crate) fn measure(
    flags: &Flags,
    name: &str,
    seeds: BenchSeeds,
    run_start: Instant,
    csv: &Mutex<Option<CsvReport>>,
    engine_stats: &mut dyn FnMut() -> Result<Option<DbStats>>,
    worker: &Worker<'_>,
) -> Result<BenchResult> {
    let reporting = flags.report_interval_seconds > 0;
    let shared = Shared::new(reporting, progress_bar(flags, name));
    let counter = InsertCounter::new(flags.num);
    let before = engine_stats()?;
    let done = AtomicBool::new(false);
    let (threads, intervals) = std::thread::scope(|s| -> Result<_> {
        let reporter = reporting.then(|| {
            let every = Duration::from_secs(flags.report_interval_seconds);
            let (shared, done) = (&shared, &done);
            s.spawn(move || {
                report_loop(
                    shared,
                    every,
                    name,
                    run_start,
                    done,
                    csv,
                    &EngineSample::default,
                )
            })
        });
        let workers: Vec<_> = (0..flags.threads)
            .map(|tid| {
                let (shared, counter) = (&shared, &counter);
                let seed = seeds.worker(tid);
                s.spawn(move || worker(tid, seed, shared, counter))
            })
            .collect();
        finish_threads(workers, None, reporter, &shared, &done)
    })?;
    if let Some(p) = shared.progress() {
        p.finish_and_clear();
    }
    let after = engine_stats()?;
    let none = DbStats::default();
    let (b, a, counters) = match (&before, &after) {
        (Some(b), Some(a)) => (b, a, Counters::ServerInfo),
        _ => (&none, &none, Counters::None),
    };
    let gap = shared.max_write_gap().as_secs_f64() * 1e6;
    let engine = EngineDelta {
        before: b,
        after: a,
    };
    let mut result = BenchResult::build(name, &threads, engine, gap, shared.slow_seconds(true))?;
    result.counters = counters;
    result.tree_depth = None;
    result.intervals = intervals;
    result.message = message(name, &result, &threads);
    Ok(result)
}

/// One operation of a pipelined batch.
struct Op {
    kind: OpKind,
    key: Vec<u8>,
    number: u64,
}

fn worker(
    f: &Flags,
    target: &Target,
    shared: &Shared,
    tid: usize,
    seed: u64,
    name: &str,
    counter: &InsertCounter,
) -> Result<ThreadStats> {
    let mut client = Client::connect(target)?;
    let record_len = f.ycsb_field_count * f.ycsb_field_length;
    let mut values = ValueGenerator::new(record_len, f.compression_ratio);
    let mut picker = OpPicker::new(f, name, tid, seed);
    let workload = picker.workload;
    let mut st = ThreadStats::new(shared)?;
    let mut batch: Vec<Op> = Vec::with_capacity(f.pipeline);
    let mut second: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    while !picker.budget.done(st.done) {
        let n = match (workload, f.duration_seconds) {
            (Some(_), d) if d > 0 => f.pipeline as u64,
            _ => (f.pipeline as u64).min(picker.ops.saturating_sub(st.done)),
        };
        let began = Instant::now();
        batch.clear();
        for _ in 0..n {
            let op = picker.next(counter);
            let (kind, key, number) = op;
            match kind {
                OpKind::Read | OpKind::ReadModifyWrite => client.queue(&[b"GET", &key])?,
                OpKind::Scan => {
                    let len = picker.rng.gen_range(1..=f.ycsb_max_scan_length).to_string();
                    client.queue(&[b"TRANGE", &key, len.as_bytes()])?
                }
                _ => client.queue(&[b"SET", &key, values.generate(record_len)])?,
            }
            batch.push(Op { kind, key, number });
        }
        client.flush()?;
        second.clear();
        for op in &batch {
            let reply = client.read()?;
            let bytes = match (op.kind, &reply) {
                (OpKind::Read, Reply::Bulk(v)) => {
                    st.found += u64::from(v.is_some());
                    op.key.len() + v.as_ref().map_or(0, Vec::len)
                }
                (OpKind::Scan, Reply::Array(Some(items))) => {
                    st.found += u64::from(!items.is_empty());
                    items
                        .iter()
                        .map(|i| match i {
                            Reply::Bulk(Some(b)) => b.len(),
                            _ => 0,
                        })
                        .sum()
                }
                (OpKind::ReadModifyWrite, Reply::Bulk(v)) => {
                    st.found += u64::from(v.is_some());
                    let mut record = v.clone().unwrap_or_default();
                    record.resize(record_len, b' ');
                    let field = picker.rng.gen_range(0..f.ycsb_field_count) * f.ycsb_field_length;
                    let new = values.generate(f.ycsb_field_length);
                    if let Some(slot) = record.get_mut(field..field + f.ycsb_field_length) {
                        slot.copy_from_slice(new);
                    }
                    second.push((op.key.clone(), record));
                    continue;
                }
                (OpKind::Update | OpKind::Insert, Reply::Status(s)) if s == "OK" => {
                    if op.kind == OpKind::Insert && workload.is_some() {
                        counter.ack(op.number);
                    }
                    op.key.len() + record_len
                }
                (kind, other) => return Err(unexpected(command_of(kind), other)),
            };
            st.finished(shared, op.kind, began, 1, bytes as u64)?;
        }
        if second.is_empty() {
            continue;
        }
        for (key, record) in &second {
            client.queue(&[b"SET", key, record])?;
        }
        client.flush()?;
        for (key, _) in &second {
            match client.read()? {
                Reply::Status(s) if s == "OK" => {}
                other => return Err(unexpected("SET", &other)),
            }
            let bytes = 2 * (key.len() + record_len) as u64;
            st.finished(shared, OpKind::ReadModifyWrite, began, 1, bytes)?;
        }
    }
    st.stop(shared);
    Ok(st)
}

/// Which operation a server-mode worker does next, and on which record: the load's
/// share of inserts, or the workload's mix over its key chooser.
pub(crate) struct OpPicker {
    /// The workload (`None`: the load).
    pub(crate) workload: Option<Workload>,
    chooser: Option<crate::generator::KeyChooser>,
    mix: Option<[(OpKind, f64); 5]>,
    todo: std::ops::Range<u64>,
    /// Operations this worker does (without a duration).
    pub(crate) ops: u64,
    /// When the worker is done.
    pub(crate) budget: Budget,
    /// The worker's random numbers.
    pub(crate) rng: rand::rngs::StdRng,
}

impl OpPicker {
    pub(crate) fn new(f: &Flags, name: &str, tid: usize, seed: u64) -> OpPicker {
        let workload = Workload::from_name(name);
        let todo = load_share(f, tid);
        let ops = match workload {
            Some(_) => f.reads_per_thread(),
            None => todo.end - todo.start,
        };
        let duration = if workload.is_some() {
            f.duration_seconds
        } else {
            0
        };
        OpPicker {
            workload,
            chooser: workload.map(|w| chooser(f, w)),
            mix: workload.map(|w| w.mix_with(f.ycsb_read_proportion)),
            todo,
            ops,
            budget: Budget::new(ops, duration),
            rng: seed::rng(seed),
        }
    }

    /// The next operation, its record's key and number.
    pub(crate) fn next(&mut self, counter: &InsertCounter) -> (OpKind, Vec<u8>, u64) {
        match (&self.mix, &mut self.chooser) {
            (Some(mix), Some(chooser)) => match pick(mix, self.rng.gen()) {
                OpKind::Insert => {
                    let number = counter.take();
                    (OpKind::Insert, record_key(number), number)
                }
                kind => {
                    let number = chooser.next(counter.newest(), &mut self.rng);
                    (kind, record_key(number), number)
                }
            },
            _ => {
                let number = self.todo.next().unwrap_or(0);
                (OpKind::Insert, record_key(number), number)
            }
        }
    }
}

fn command_of(kind: OpKind) -> &'static str {
    match kind {
        OpKind::Read | OpKind::ReadModifyWrite => "GET",
        OpKind::Scan => "TRANGE",
        _ => "SET",
    }
}
