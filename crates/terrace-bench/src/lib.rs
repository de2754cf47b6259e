//! `terrace bench`: db_bench- and YCSB-style benchmarks of the Terrace engine, with
//! db_bench's flag names, key and value formats and output shape, so that one command
//! line measures Terrace and RocksDB the same way.
//!
//! ```no_run
//! let flags = terrace_bench::Flags::parse(["--benchmarks=fillrandom,readrandom", "--num=1000"])?;
//! let results = terrace_bench::run(&flags, &mut std::io::stdout())?;
//! println!("{} ops/sec", results[0].ops_per_sec);
//! # Ok::<(), terrace_bench::BenchError>(())
//! ```
//!
//! Modules: `flags` (db_bench's flags), `keys` (key format, value generator),
//! `generator` (YCSB's zipfian, latest, uniform), `workload` (db_bench's benchmarks),
//! `ycsb` (CoreWorkload A–F), `seed` (each thread's random seed, as db_bench gives them),
//! `recorder` (per-thread measurement), `report` (result lines, JSON), `interval` (CSV
//! series), `plot` (SVG), `runner` (the run), `server` (the YCSB
//! workloads over RESP against a Redis-protocol server, `--target`), `resp_client` (its
//! RESP2 client).

pub mod boom_target;
pub mod error;
pub mod flags;
pub mod generator;
pub mod interval;
pub mod keys;
pub mod plot;
pub mod recorder;
pub mod report;
pub mod resp_client;
pub mod runner;
pub mod seed;
pub mod server;
pub mod workload;
pub mod ycsb;

pub use error::{BenchError, Result};
pub use flags::Flags;
pub use report::{BenchResult, Counters, Latency};
pub use runner::{run, BENCHMARKS};
