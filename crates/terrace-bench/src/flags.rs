//! db_bench-compatible flags: the same names, meanings and defaults, parsed from the
//! command line gflags style (`--name=value`, `--name value`, `--flag`, `--noflag`).
//!
//! Owns: `Flags`, its defaults and parsing (value parsers in `values`, `--help` in `help`),
//! and the mapping to `terrace::Options` (`engine`, with `--storage_rate_limit`'s throttle).
//! Must not touch: the database; flags only describe a run.
//! Concurrency: plain data, cloned into each worker thread.

use std::path::PathBuf;

use terrace::volume::migration::MigrationPolicy;
use terrace::volume::placement::PlacementPolicy;
use terrace::{CompactionPri, Compression};

pub use help::HELP;
pub use matrix::{L0Kind, MatrixFlags};

use crate::error::{BenchError, Result};
use crate::resp_client::Target;

mod engine;
mod help;
mod matrix;
#[cfg(test)]
mod tests;
mod values;

use values::{
    bad, compaction_dispatch, compaction_mode, compaction_pri, compaction_workers, compression,
    num, offload_ratio, parse_bool,
};

/// Every setting of a benchmark run. Defaults are db_bench's (RocksDB 7.8), except
/// `compression_type`, which is `none` because Terrace has no snappy.
#[derive(Debug, Clone, PartialEq)]
pub struct Flags {
    /// Benchmarks to run, in order.
    pub benchmarks: Vec<String>,
    /// Database directory.
    pub db: PathBuf,
    /// Directory of the write-ahead logs (`Options::wal_dir`); `None` (db_bench's empty
    /// default) keeps them in `db`.
    pub wal_dir: Option<PathBuf>,
    /// Directory of the level-0 table files (`Options::volumes` with level 0 on it);
    /// `None` keeps them in `db`. Outside `db` it is not throttled: a RocksDB user's small
    /// fast device holding the newest data.
    pub level0_dir: Option<PathBuf>,
    /// Keys in the database (and operations of a fill).
    pub num: u64,
    /// Read operations per thread; -1 means `num`.
    pub reads: i64,
    /// Run each benchmark for this many seconds instead of a count (0: off).
    pub duration_seconds: u64,
    /// Concurrent threads per benchmark.
    pub threads: usize,
    /// Key length in bytes.
    pub key_size: usize,
    /// Value length in bytes.
    pub value_size: usize,
    /// Fraction of a value that is random (the rest repeats it), as db_bench.
    pub compression_ratio: f64,
    /// Table block compression.
    pub compression_type: Compression,
    /// Memtable size in bytes.
    pub write_buffer_size: usize,
    /// Memtables allowed before writes stop.
    pub max_write_buffer_number: usize,
    /// Target size of compaction output files.
    pub target_file_size_base: u64,
    /// Target size of level 1.
    pub max_bytes_for_level_base: u64,
    /// Size ratio between adjacent levels.
    pub max_bytes_for_level_multiplier: f64,
    /// Size level targets from the last level down (RocksDB's dynamic level bytes).
    pub level_compaction_dynamic_level_bytes: bool,
    /// Which file of a level n >= 1 a compaction takes (RocksDB's `compaction_pri`).
    pub compaction_pri: CompactionPri,
    /// How this host runs compaction tasks: in turn on one thread, as a read / merge /
    /// write pipeline on three, or chosen per task (`auto`).
    pub compaction_mode: terrace::compaction::ExecutionMode,
    /// Compaction workers (`terrace compactd`) that share each compaction with this host.
    pub compaction_workers: Vec<String>,
    /// How compactions are shared with the workers (`--offload_ratio`).
    pub offload_ratio: terrace::offload::Share,
    /// How the dispatcher picks among several workers.
    pub compaction_dispatch: terrace::compaction::DispatchPolicy,
    /// Check mode: every worker result is compared with a host run of the same task.
    pub compaction_check: bool,
    /// Number of levels.
    pub num_levels: usize,
    /// Level-0 files that trigger a compaction.
    pub level0_file_num_compaction_trigger: usize,
    /// Level-0 files at which writes slow down.
    pub level0_slowdown_writes_trigger: usize,
    /// Level-0 files at which writes stop.
    pub level0_stop_writes_trigger: usize,
    /// Bloom filter bits per key; negative or 0 means no filter.
    pub bloom_bits: i64,
    /// Block cache bytes; negative means the smallest cache the engine allows.
    pub cache_size: i64,
    /// Table block size in bytes.
    pub block_size: usize,
    /// Background flush plus compaction threads.
    pub max_background_jobs: usize,
    /// Key-range pieces one compaction may be split into.
    pub subcompactions: usize,
    /// Writers of a group insert their own batches into the memtable at once.
    pub allow_concurrent_memtable_write: bool,
    /// Seeks that keep reading level-0 tables compact them (LevelDB's seek compaction,
    /// level 0 only; off in RocksDB, which has no such trigger).
    pub read_triggered_compaction: bool,
    /// Sync the WAL on every write.
    pub sync: bool,
    /// Write without the WAL.
    pub disable_wal: bool,
    /// Keep the database of an earlier run; fills that need a fresh one are skipped.
    pub use_existing_db: bool,
    /// Base of the per-thread random seeds, as db_bench's: the n-th thread the run starts
    /// (counting across benchmarks) draws from `seed + n`; 0 takes the base from the clock
    /// (see `seed::Seeds`).
    pub seed: u64,
    /// Print the full latency histogram of each benchmark.
    pub histogram: bool,
    /// Print engine counters after the benchmarks.
    pub statistics: bool,
    /// Seconds between rows of the report file (0: no report file).
    pub report_interval_seconds: u64,
    /// CSV file of per-interval throughput and latency.
    pub report_file: PathBuf,
    /// File to receive every result as JSON.
    pub json: Option<PathBuf>,
    /// SVG file to draw the report-interval series into.
    pub plot: Option<PathBuf>,
    /// Writes per write batch.
    pub batch_size: usize,
    /// `next` calls after each seek of seekrandom.
    pub seek_nexts: usize,
    /// Bytes per second of the writer of the `*whilewriting` benchmarks (0: unlimited).
    pub benchmark_write_rate_limit: u64,
    /// Bytes per second read plus written of the device holding the table files of
    /// levels 1 and below (0: not throttled). See `Flags::throttled_dirs`.
    pub storage_rate_limit: u64,
    /// I/O operations per second of that device (0: not limited).
    pub storage_iops_limit: u64,
    /// Bytes per I/O operation of `storage_iops_limit` (default 256 KiB, as cloud
    /// volumes count; 0: every read or append call is one operation).
    pub storage_io_unit: u64,
    /// Table volumes: directories `vol1` .. `volN` in `--db`, each a device of its own
    /// (`--volume_iops`, `--volume_rate`); the database directory keeps the log and
    /// MANIFEST. 0: one directory, as before.
    pub volumes: usize,
    /// I/O operations per second of each table volume (0: not limited), in operations
    /// of `--storage_io_unit` bytes.
    pub volume_iops: u64,
    /// Bytes per second read plus written of each table volume (0: not limited).
    pub volume_rate: u64,
    /// How new tables are spread over the volumes (default `tango` with `--volumes`).
    pub placement: Option<PlacementPolicy>,
    /// Milliseconds per heat interval of the volumes' heat statistics.
    pub heat_interval_ms: u64,
    /// Load migration between the volumes (default `tango` with `--placement=tango`,
    /// else `off`).
    pub migration: Option<MigrationPolicy>,
    /// YCSB: fields per record.
    pub ycsb_field_count: usize,
    /// YCSB: bytes per field.
    pub ycsb_field_length: usize,
    /// YCSB: longest scan of workload E.
    pub ycsb_max_scan_length: usize,
    /// YCSB: zipfian constant.
    pub ycsb_zipfian_constant: f64,
    /// YCSB: the share of reads in workloads A, B and C, the rest updates (YCSB's
    /// `readproportion`); `None`: the workload's own (0.5, 0.95, 1).
    pub ycsb_read_proportion: Option<f64>,
    /// Draw a progress bar (only honoured when stdout is a terminal).
    pub progress: bool,
    /// Server mode: the Redis-protocol server to measure instead of an embedded database.
    pub target: Option<Target>,
    /// Server mode over BOOM (`--target boom:///socket` or `boom2:///socket`).
    pub boom_target: Option<crate::boom_target::BoomTarget>,
    /// BOOM: microseconds of modelled wire added to every round trip.
    pub boom_rtt_us: u64,
    /// BOOM: the hybrid (in-place) update; off: every PUT appends.
    pub boom_hybrid: bool,
    /// Server mode: commands sent per connection before reading their replies.
    pub pipeline: usize,
    /// `--l0` and the matrix container's settings.
    pub matrix: MatrixFlags,
}

impl Default for Flags {
    fn default() -> Self {
        Flags {
            benchmarks:
                "fillseq,fillsync,fillrandom,overwrite,readrandom,seekrandom,readseq,readreverse"
                    .split(',')
                    .map(String::from)
                    .collect(),
            db: std::env::temp_dir().join("terrace-bench"),
            wal_dir: None,
            level0_dir: None,
            num: 1_000_000,
            reads: -1,
            duration_seconds: 0,
            threads: 1,
            key_size: 16,
            value_size: 100,
            compression_ratio: 0.5,
            compression_type: Compression::None,
            write_buffer_size: 64 << 20,
            max_write_buffer_number: 2,
            target_file_size_base: 64 << 20,
            max_bytes_for_level_base: 256 << 20,
            max_bytes_for_level_multiplier: 10.0,
            level_compaction_dynamic_level_bytes: false,
            compaction_pri: CompactionPri::MinOverlappingRatio,
            compaction_mode: terrace::compaction::ExecutionMode::Linear,
            compaction_workers: Vec::new(),
            offload_ratio: terrace::offload::CompactionWorkers::default().share,
            compaction_dispatch: terrace::compaction::DispatchPolicy::LeastLoaded,
            compaction_check: false,
            num_levels: 7,
            level0_file_num_compaction_trigger: 4,
            level0_slowdown_writes_trigger: 20,
            level0_stop_writes_trigger: 36,
            bloom_bits: -1,
            cache_size: 8 << 20,
            block_size: 4096,
            max_background_jobs: 2,
            subcompactions: 1,
            allow_concurrent_memtable_write: true,
            read_triggered_compaction: true,
            sync: false,
            disable_wal: false,
            use_existing_db: false,
            seed: 0,
            histogram: false,
            statistics: false,
            report_interval_seconds: 0,
            report_file: PathBuf::from("report.csv"),
            json: None,
            plot: None,
            batch_size: 1,
            seek_nexts: 0,
            benchmark_write_rate_limit: 0,
            storage_rate_limit: 0,
            storage_iops_limit: 0,
            storage_io_unit: 256 << 10,
            volumes: 0,
            volume_iops: 0,
            volume_rate: 0,
            placement: None,
            heat_interval_ms: 1000,
            migration: None,
            ycsb_field_count: 10,
            ycsb_field_length: 100,
            ycsb_max_scan_length: 100,
            ycsb_zipfian_constant: 0.99,
            ycsb_read_proportion: None,
            progress: true,
            target: None,
            boom_target: None,
            boom_rtt_us: 0,
            boom_hybrid: true,
            pipeline: 1,
            matrix: MatrixFlags::default(),
        }
    }
}

/// Flags that take no value (`--sync` means `--sync=true`, `--nosync` means false).
const BOOL_FLAGS: &[&str] = &[
    "sync",
    "disable_wal",
    "use_existing_db",
    "histogram",
    "statistics",
    "progress",
    "level_compaction_dynamic_level_bytes",
    "compaction_check",
    "boom_hybrid",
    "allow_concurrent_memtable_write",
    "read_triggered_compaction",
];

impl Flags {
    /// Parses db_bench-style arguments (without the program name) over the defaults.
    ///
    /// # Errors
    /// `UnknownFlag` for a name db_bench-style parsing does not know, `BadValue` for a
    /// value that does not parse or is out of range (including a missing value).
    pub fn parse<I, S>(args: I) -> Result<Flags>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut flags = Flags::default();
        let args: Vec<String> = args.into_iter().map(|s| s.as_ref().to_string()).collect();
        let mut i = 0;
        while let Some(arg) = args.get(i) {
            i += 1;
            let Some(body) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) else {
                return Err(bad("benchmarks", arg, "arguments are flags: --name=value"));
            };
            let (name, value) = match body.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (body.to_string(), None),
            };
            if BOOL_FLAGS.contains(&name.as_str()) {
                let on = match value.as_deref() {
                    None => true,
                    Some(v) => parse_bool(&name, v)?,
                };
                flags.set_bool(&name, on);
                continue;
            }
            if let Some(neg) = name.strip_prefix("no") {
                if value.is_none() && BOOL_FLAGS.contains(&neg) {
                    flags.set_bool(neg, false);
                    continue;
                }
            }
            let value = match value {
                Some(v) => v,
                None => {
                    if !flags.knows(&name) {
                        return Err(BenchError::UnknownFlag(name));
                    }
                    let v = args
                        .get(i)
                        .cloned()
                        .ok_or_else(|| bad(&name, "", "missing value"))?;
                    i += 1;
                    v
                }
            };
            flags.set(&name, &value)?;
        }
        flags.check()?;
        Ok(flags)
    }

    fn knows(&self, name: &str) -> bool {
        // Setting a clone with a value that parses for every numeric flag tells whether
        // the name exists without a second list of names.
        !matches!(self.clone().set(name, "1"), Err(BenchError::UnknownFlag(_)))
    }

    fn set_bool(&mut self, name: &str, on: bool) {
        match name {
            "sync" => self.sync = on,
            "disable_wal" => self.disable_wal = on,
            "use_existing_db" => self.use_existing_db = on,
            "histogram" => self.histogram = on,
            "compaction_check" => self.compaction_check = on,
            "boom_hybrid" => self.boom_hybrid = on,
            "allow_concurrent_memtable_write" => self.allow_concurrent_memtable_write = on,
            "read_triggered_compaction" => self.read_triggered_compaction = on,
            "statistics" => self.statistics = on,
            "level_compaction_dynamic_level_bytes" => {
                self.level_compaction_dynamic_level_bytes = on
            }
            _ => self.progress = on,
        }
    }

    fn set(&mut self, name: &str, v: &str) -> Result<()> {
        match name {
            "benchmarks" => {
                self.benchmarks = v
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect()
            }
            "db" => self.db = PathBuf::from(v),
            "wal_dir" => self.wal_dir = (!v.is_empty()).then(|| PathBuf::from(v)),
            "level0_dir" => self.level0_dir = (!v.is_empty()).then(|| PathBuf::from(v)),
            "num" => self.num = num(name, v)?,
            "reads" => self.reads = num(name, v)?,
            "duration" => self.duration_seconds = num(name, v)?,
            "threads" => self.threads = num(name, v)?,
            "key_size" => self.key_size = num(name, v)?,
            "value_size" => self.value_size = num(name, v)?,
            "compression_ratio" => self.compression_ratio = num(name, v)?,
            "compression_type" => self.compression_type = compression(v)?,
            "write_buffer_size" => self.write_buffer_size = num(name, v)?,
            "max_write_buffer_number" => self.max_write_buffer_number = num(name, v)?,
            "target_file_size_base" => self.target_file_size_base = num(name, v)?,
            "max_bytes_for_level_base" => self.max_bytes_for_level_base = num(name, v)?,
            "max_bytes_for_level_multiplier" => self.max_bytes_for_level_multiplier = num(name, v)?,
            "compaction_pri" => self.compaction_pri = compaction_pri(v)?,
            "compaction_mode" => self.compaction_mode = compaction_mode(v)?,
            "compaction_workers" => self.compaction_workers = compaction_workers(v)?,
            "offload_ratio" => self.offload_ratio = offload_ratio(v)?,
            "compaction_dispatch" => self.compaction_dispatch = compaction_dispatch(v)?,
            "num_levels" => self.num_levels = num(name, v)?,
            "level0_file_num_compaction_trigger" => {
                self.level0_file_num_compaction_trigger = num(name, v)?
            }
            "level0_slowdown_writes_trigger" => self.level0_slowdown_writes_trigger = num(name, v)?,
            "level0_stop_writes_trigger" => self.level0_stop_writes_trigger = num(name, v)?,
            "bloom_bits" => self.bloom_bits = num(name, v)?,
            "cache_size" => self.cache_size = num(name, v)?,
            "block_size" => self.block_size = num(name, v)?,
            "max_background_jobs" => self.max_background_jobs = num(name, v)?,
            "subcompactions" => self.subcompactions = num(name, v)?,
            "seed" => self.seed = num(name, v)?,
            "report_interval_seconds" => self.report_interval_seconds = num(name, v)?,
            "report_file" => self.report_file = PathBuf::from(v),
            "json" => self.json = Some(PathBuf::from(v)),
            "plot" => self.plot = Some(PathBuf::from(v)),
            "batch_size" => self.batch_size = num(name, v)?,
            "seek_nexts" => self.seek_nexts = num(name, v)?,
            "benchmark_write_rate_limit" => self.benchmark_write_rate_limit = num(name, v)?,
            "storage_rate_limit" => self.storage_rate_limit = num(name, v)?,
            "storage_iops_limit" => self.storage_iops_limit = num(name, v)?,
            "storage_io_unit" => self.storage_io_unit = num(name, v)?,
            "volumes" => self.volumes = num(name, v)?,
            "volume_iops" => self.volume_iops = num(name, v)?,
            "volume_rate" => self.volume_rate = num(name, v)?,
            "placement" => self.placement = Some(v.parse().map_err(|e: String| bad(name, v, &e))?),
            "heat_interval_ms" => self.heat_interval_ms = num(name, v)?,
            "migration" => self.migration = Some(v.parse().map_err(|e: String| bad(name, v, &e))?),
            "ycsb_field_count" => self.ycsb_field_count = num(name, v)?,
            "ycsb_field_length" => self.ycsb_field_length = num(name, v)?,
            "ycsb_max_scan_length" => self.ycsb_max_scan_length = num(name, v)?,
            "ycsb_zipfian_constant" => self.ycsb_zipfian_constant = num(name, v)?,
            "ycsb_read_proportion" => self.ycsb_read_proportion = Some(num(name, v)?),
            "target" => match crate::boom_target::BoomTarget::parse(v)? {
                Some(b) => self.boom_target = Some(b),
                None => self.target = Some(Target::parse(v)?),
            },
            "pipeline" => self.pipeline = num(name, v)?,
            "boom_rtt_us" => self.boom_rtt_us = num(name, v)?,
            _ => match self.matrix.set(name, v) {
                Some(r) => r?,
                None => return Err(BenchError::UnknownFlag(name.to_string())),
            },
        }
        Ok(())
    }

    /// Range checks that need more than one flag or that the parser cannot express.
    fn check(&self) -> Result<()> {
        let positive = [
            ("threads", self.threads),
            ("key_size", self.key_size),
            ("batch_size", self.batch_size),
            ("max_background_jobs", self.max_background_jobs),
            ("subcompactions", self.subcompactions),
            ("ycsb_field_count", self.ycsb_field_count),
            ("ycsb_max_scan_length", self.ycsb_max_scan_length),
            ("pipeline", self.pipeline),
        ];
        for (name, v) in positive {
            if v == 0 {
                return Err(bad(name, "0", "must be at least 1"));
            }
        }
        if !(0.0..=1.0).contains(&self.compression_ratio) {
            return Err(bad(
                "compression_ratio",
                &self.compression_ratio.to_string(),
                "must be between 0 and 1",
            ));
        }
        let z = self.ycsb_zipfian_constant;
        if !(z > 0.0 && z < 1.0) {
            return Err(bad(
                "ycsb_zipfian_constant",
                &z.to_string(),
                "must be in (0, 1)",
            ));
        }
        self.matrix.level0()?;
        if let Some(r) = self.ycsb_read_proportion {
            if !(0.0..=1.0).contains(&r) {
                return Err(bad(
                    "ycsb_read_proportion",
                    &r.to_string(),
                    "must be between 0 and 1",
                ));
            }
        }
        if self.volumes == 0 {
            let volume_flags = [
                ("volume_iops", self.volume_iops > 0),
                ("volume_rate", self.volume_rate > 0),
                ("placement", self.placement.is_some()),
                ("migration", self.migration.is_some()),
            ];
            if let Some((name, _)) = volume_flags.iter().find(|(_, set)| *set) {
                return Err(bad(name, "", "needs --volumes"));
            }
        } else if self.level0_dir.is_some() {
            return Err(bad("level0_dir", "", "cannot be combined with --volumes"));
        } else if self.storage_limits().is_some() {
            return Err(bad(
                "volumes",
                &self.volumes.to_string(),
                "limits each volume with --volume_iops and --volume_rate; \
                 --storage_rate_limit and --storage_iops_limit are for one directory",
            ));
        }
        if self.reads < -1 {
            return Err(bad("reads", &self.reads.to_string(), "must be -1 or more"));
        }
        self.engine_options()
            .validate()
            .map_err(|e| BenchError::BadValue {
                flag: "engine options".into(),
                value: String::new(),
                reason: e.to_string(),
            })
    }

    /// Reads per thread: `--reads`, or `--num` when it is -1.
    pub fn reads_per_thread(&self) -> u64 {
        u64::try_from(self.reads).unwrap_or(self.num)
    }
}
