//! Server mode over BOOM (`--target boom:///path/to/socket`, or `boom2:///...` for the
//! two-phase baseline; `boom+tcp://host:port` and `boom2+tcp://` over TCP): YCSB's load and workloads A, B, C, D and F against
//! `terrace serve --boom-socket`, one BOOM connection per `--threads` worker and one
//! request at a time on each (BOOM has no pipelining: each request is one round trip).
//!
//! Reads are BOOM GETs, updates and inserts PUTs of the whole record, a
//! read-modify-write a GET and then a PUT. Workload E (scans) is refused: BOOM has no
//! range read. Each result line ends with the RDMA verbs and round trips per operation
//! the same exchanges would take on real hardware (`terrace_boom::Verbs`).
//! `--boom_rtt_us` adds a modelled network round trip to every request (shared memory
//! has no wire; an RDMA round trip is a few microseconds).
//!
//! Owns: the BOOM run. Must not touch: the RESP client or engine mode.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use parking_lot::Mutex;
use terrace_boom::{BoomClient, Mode, SpaceUse, Verbs};

use crate::error::{BenchError, Result};
use crate::flags::Flags;
use crate::interval::CsvReport;
use crate::keys::ValueGenerator;
use crate::recorder::{OpKind, Shared, ThreadStats};
use crate::report::BenchResult;
use crate::runner::{print_seed, write_reports, BENCHMARKS};
use crate::seed::Seeds;
use crate::server::{measure, OpPicker};
use crate::ycsb::{InsertCounter, Workload};

/// A BOOM server to measure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoomTarget {
    /// Its Unix socket (shared memory on this host), or its TCP address (`host:port`).
    pub address: BoomAddress,
    /// BOOM, or the two-phase baseline.
    pub mode: Mode,
}

/// Where a BOOM server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BoomAddress {
    /// `boom:///path`: the Unix socket, shared memory on this host.
    Local(PathBuf),
    /// `boom+tcp://host:port`: TCP, entries and values in the messages.
    Tcp(String),
}

impl BoomTarget {
    /// Parses `boom:///path`, `boom2:///path` (the two-phase baseline),
    /// `boom+tcp://host:port` or `boom2+tcp://host:port`; `None` for another scheme.
    ///
    /// # Errors
    /// `BadValue` for a BOOM address without a path or host.
    pub fn parse(text: &str) -> Result<Option<BoomTarget>> {
        let schemes = [
            ("boom2+tcp://", Mode::TwoPhase, true),
            ("boom+tcp://", Mode::Boom, true),
            ("boom2://", Mode::TwoPhase, false),
            ("boom://", Mode::Boom, false),
        ];
        let Some((rest, mode, tcp)) = schemes
            .iter()
            .find_map(|&(p, m, t)| text.strip_prefix(p).map(|r| (r, m, t)))
        else {
            return Ok(None);
        };
        if rest.is_empty() || (tcp && !rest.contains(':')) {
            return Err(BenchError::BadValue {
                flag: "target".into(),
                value: text.into(),
                reason: "expected boom:///path/to/socket or boom+tcp://host:port".into(),
            });
        }
        let address = match tcp {
            true => BoomAddress::Tcp(rest.to_string()),
            false => BoomAddress::Local(PathBuf::from(rest)),
        };
        Ok(Some(BoomTarget { address, mode }))
    }
}

impl std::fmt::Display for BoomTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = match self.mode {
            Mode::Boom => "boom",
            Mode::TwoPhase => "boom2",
        };
        match &self.address {
            BoomAddress::Local(p) => write!(f, "{scheme}://{}", p.display()),
            BoomAddress::Tcp(a) => write!(f, "{scheme}+tcp://{a}"),
        }
    }
}

fn connect(f: &Flags, target: &BoomTarget) -> Result<BoomClient> {
    let options = terrace_boom::ClientOptions {
        mode: target.mode,
        round_trip_delay: std::time::Duration::from_micros(f.boom_rtt_us),
        hybrid: f.boom_hybrid,
        ..Default::default()
    };
    let connected = match &target.address {
        BoomAddress::Local(p) => BoomClient::connect_unix_with(p, b"", options),
        BoomAddress::Tcp(a) => BoomClient::connect_tcp(a, b"", options),
    };
    connected.map_err(|e| match e {
        terrace_boom::BoomError::Io { source, .. } => BenchError::Connect {
            target: target.to_string(),
            source,
        },
        other => boom_error(target, other),
    })
}

fn boom_error(target: &BoomTarget, e: terrace_boom::BoomError) -> BenchError {
    BenchError::Server {
        command: target.to_string(),
        reply: e.to_string(),
    }
}

/// Runs the YCSB benchmarks of `flags` against the BOOM server `target`.
///
/// # Errors
/// `NotInServerMode`, `UnknownBenchmark` or `BadValue` (a scan workload, pipelining)
/// before anything runs; `Connect` and `Server` errors; report-file errors.
pub fn run(flags: &Flags, target: &BoomTarget, out: &mut dyn Write) -> Result<Vec<BenchResult>> {
    for b in &flags.benchmarks {
        if b == "ycsb_e" {
            return Err(BenchError::BadValue {
                flag: "benchmarks".into(),
                value: b.clone(),
                reason: "BOOM has no range read".into(),
            });
        }
        if b != "ycsb_load" && Workload::from_name(b).is_none() {
            return Err(if BENCHMARKS.contains(&b.as_str()) {
                BenchError::NotInServerMode(b.clone())
            } else {
                BenchError::UnknownBenchmark(b.clone())
            });
        }
    }
    if flags.pipeline > 1 {
        return Err(BenchError::BadValue {
            flag: "pipeline".into(),
            value: flags.pipeline.to_string(),
            reason: "BOOM has one request in flight per connection".into(),
        });
    }
    let io = |source| BenchError::Io {
        path: "stdout".into(),
        source,
    };
    drop(connect(flags, target)?);
    let mut seeds = Seeds::new(flags.seed);
    writeln!(
        out,
        "Terrace:    version {} (server mode)",
        env!("CARGO_PKG_VERSION")
    )
    .map_err(io)?;
    writeln!(out, "Target:     {target}").map_err(io)?;
    writeln!(
        out,
        "Records:    {} of {} fields x {} bytes",
        flags.num, flags.ycsb_field_count, flags.ycsb_field_length
    )
    .map_err(io)?;
    writeln!(out, "Connections: {}", flags.threads).map_err(io)?;
    writeln!(
        out,
        "Wire:       {} us added per round trip",
        flags.boom_rtt_us
    )
    .map_err(io)?;
    print_seed(&seeds, out).map_err(io)?;
    writeln!(out, "{}", "-".repeat(48)).map_err(io)?;
    let csv = CsvReport::for_run(flags)?;
    let run_start = Instant::now();
    let mut results = Vec::new();
    for name in &flags.benchmarks {
        let bench_seeds = seeds.next_benchmark(name, flags.threads);
        let totals = Mutex::new(Totals::default());
        let mut result = measure(
            flags,
            name,
            bench_seeds,
            run_start,
            &csv,
            &mut || Ok(None),
            &|tid, seed, shared, counter| {
                worker(flags, target, shared, tid, seed, name, counter, &totals)
            },
        )?;
        let t = *totals.lock();
        if t.ops > 0 {
            let per = |n: u64| n as f64 / t.ops as f64;
            result.message = format!(
                "{}{}verbs/op {:.2} (send {:.2}, write_imm {:.2}, read {:.2}), round trips/op {:.2}",
                result.message,
                if result.message.is_empty() { "" } else { "; " },
                per(t.verbs.total()),
                per(t.verbs.sends),
                per(t.verbs.write_imms),
                per(t.verbs.reads),
                per(t.round_trips),
            );
            if t.puts > 0 {
                result.message = format!(
                    "{}; segment bytes appended {} ({:.1}/put), written in place {}",
                    result.message,
                    t.space.appended_bytes,
                    t.space.appended_bytes as f64 / t.puts as f64,
                    t.space.in_place_bytes,
                );
            }
        }
        result.print(out, flags.histogram).map_err(io)?;
        out.flush().map_err(io)?;
        results.push(result);
    }
    write_reports(flags, &seeds, &results)?;
    Ok(results)
}

/// What a benchmark's workers did, summed.
#[derive(Debug, Clone, Copy, Default)]
struct Totals {
    verbs: Verbs,
    round_trips: u64,
    /// Requests (a read-modify-write counts two).
    ops: u64,
    puts: u64,
    space: SpaceUse,
}

#[allow(clippy::too_many_arguments)]
fn worker(
    f: &Flags,
    target: &BoomTarget,
    shared: &Shared,
    tid: usize,
    seed: u64,
    name: &str,
    counter: &InsertCounter,
    totals: &Mutex<Totals>,
) -> Result<ThreadStats> {
    use rand::Rng;
    let mut client = connect(f, target)?;
    let (verbs0, trips0, space0) = (client.verbs(), client.round_trips(), client.space());
    let mut puts = 0u64;
    let record_len = f.ycsb_field_count * f.ycsb_field_length;
    let mut values = ValueGenerator::new(record_len, f.compression_ratio);
    let mut picker = OpPicker::new(f, name, tid, seed);
    let mut st = ThreadStats::new(shared)?;
    let mut ops = 0u64;
    let err = |e| boom_error(target, e);
    while !picker.budget.done(st.done) {
        let (kind, key, number) = picker.next(counter);
        let began = Instant::now();
        let bytes = match kind {
            OpKind::Read => {
                let v = client.get(&key).map_err(err)?;
                st.found += u64::from(v.is_some());
                key.len() + v.map_or(0, |v| v.len())
            }
            OpKind::ReadModifyWrite => {
                let v = client.get(&key).map_err(err)?;
                st.found += u64::from(v.is_some());
                let mut record = v.unwrap_or_default();
                record.resize(record_len, b' ');
                let field = picker.rng.gen_range(0..f.ycsb_field_count) * f.ycsb_field_length;
                let new = values.generate(f.ycsb_field_length);
                if let Some(slot) = record.get_mut(field..field + f.ycsb_field_length) {
                    slot.copy_from_slice(new);
                }
                client.put(&key, &record).map_err(err)?;
                puts += 1;
                2 * (key.len() + record_len)
            }
            OpKind::Scan => {
                return Err(BenchError::BadValue {
                    flag: "benchmarks".into(),
                    value: name.into(),
                    reason: "BOOM has no range read".into(),
                })
            }
            _ => {
                client.put(&key, values.generate(record_len)).map_err(err)?;
                puts += 1;
                if kind == OpKind::Insert && picker.workload.is_some() {
                    counter.ack(number);
                }
                key.len() + record_len
            }
        };
        ops += 1 + u64::from(kind == OpKind::ReadModifyWrite);
        st.finished(shared, kind, began, 1, bytes as u64)?;
    }
    st.stop(shared);
    let (v, trips, space) = (client.verbs(), client.round_trips(), client.space());
    let mut t = totals.lock();
    t.verbs.sends += v.sends - verbs0.sends;
    t.verbs.writes += v.writes - verbs0.writes;
    t.verbs.write_imms += v.write_imms - verbs0.write_imms;
    t.verbs.reads += v.reads - verbs0.reads;
    t.round_trips += trips - trips0;
    t.ops += ops;
    t.puts += puts;
    t.space.appended_bytes += space.appended_bytes - space0.appended_bytes;
    t.space.in_place_bytes += space.in_place_bytes - space0.in_place_bytes;
    Ok(st)
}
