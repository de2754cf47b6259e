//! Server configuration: defaults, the TOML file (`--config`), command-line flags, and
//! the CONFIG GET/SET view of the settings that can change while running.
//!
//! Owns: [`Config`], [`ServeArgs`], and what each CONFIG SET parameter accepts
//! ([`Config::set`], [`SetError`]).
//! Must not touch: sockets or the engine; `net` and `commands` read the values, and
//! `commands` makes a CONFIG SET take effect.
//! Concurrency: plain values; the running server keeps its copy behind a lock.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// When a write's WAL record is synced (Redis's `appendfsync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Fsync {
    /// Sync before replying to each write.
    Always,
    /// Sync the WAL once a second in the background.
    Everysec,
    /// Never sync explicitly (the engine syncs on memtable switches and close).
    No,
}

impl Fsync {
    /// The name Redis uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Fsync::Always => "always",
            Fsync::Everysec => "everysec",
            Fsync::No => "no",
        }
    }
}

/// The effective configuration. Every field has a default; the TOML file uses these names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Address to listen on.
    pub bind: String,
    /// TCP port (0 picks a free one and prints it).
    pub port: u16,
    /// Database directory.
    pub dir: PathBuf,
    /// Password every client must give with AUTH or HELLO; none if empty.
    pub requirepass: String,
    /// Most connected clients; more get `-ERR max number of clients reached`.
    pub maxclients: u64,
    /// Network threads (shards, each serving its share of the connections; 0: half the
    /// cores, at least one).
    pub threads: usize,
    /// Threads that help the network thread read a large batch of point reads (a
    /// pipelined group's GETs, the key count's reads of a group's writes), chunk by
    /// chunk; 0: none. Default ([`Config::reader_threads`]): one fewer than the
    /// cores, at least one.
    pub reader_threads: Option<usize>,
    /// Refuse to start on a non-loopback address without a password.
    pub protected_mode: bool,
    /// WAL sync policy.
    pub fsync: Fsync,
    /// Largest bulk string a client may send, in bytes.
    pub proto_max_bulk_len: u64,
    /// Most arguments in one command.
    pub max_args: u64,
    /// Most bytes buffered for one client's unfinished commands.
    pub client_query_buffer_limit: u64,
    /// Port of the Prometheus text endpoint; 0 turns it off.
    pub metrics_port: u16,
    /// Address of the Prometheus text endpoint (loopback unless set: it has no password).
    pub metrics_bind: String,
    /// Seconds a client may stay idle (nothing received) before it is closed; 0: never.
    pub timeout: u64,
    /// Keep an exact count of the keys with every write, so that DBSIZE and INFO
    /// keyspace answer in O(1). Off, a blind write (SET) skips the read the count costs
    /// it, and DBSIZE walks the keys when asked (docs/formats/resp-values.md).
    pub keyspace_count: bool,
    /// Memory for the states of recently written keys (absent, present, with an expiry)
    /// that spare the count's read when they are written again; 0: none.
    pub keyspace_count_cache_bytes: u64,
    /// Engine: bytes of one memtable.
    pub write_buffer_size: usize,
    /// Engine: bytes of the block cache. Default: a quarter of the machine's memory (or
    /// of the cgroup's limit, if lower), at most 4 GiB, at least the engine's 32 MiB
    /// ([`default_block_cache_bytes`]).
    pub block_cache_bytes: usize,
    /// Engine: put the data blocks flushes and compactions write into the block cache
    /// while it has room (`Options::warm_block_cache_on_write`), so that reads of a new
    /// table start from memory.
    pub warm_block_cache: bool,
    /// Engine: the size at which compaction outputs are cut (RocksDB's
    /// `target_file_size_base`): smaller files spread more evenly over `volumes`.
    pub target_file_size_base: u64,
    /// Internal, for crash tests only: run the engine on fault-injection storage, which
    /// keeps unsynced bytes in process memory so SIGKILL loses them as a power cut would.
    pub internal_fault_storage: bool,
    /// Engine: which volume receives the table files of each level (level `l` goes to
    /// `level_volumes[l]`; missing levels to volume 0, the database directory).
    pub level_volumes: Vec<u32>,
    /// Engine: how this host runs its compactions.
    pub compaction_mode: CompactionMode,
    /// Engine: the weights and thresholds of `compaction_mode = "auto"`.
    pub compaction_decision: terrace::compaction::DecisionConfig,
    /// Engine: compaction workers (`terrace compactd`) to share compactions with; an
    /// empty `secret` is read from `TERRACE_COMPACTD_SECRET`.
    pub compaction_workers: Option<terrace::offload::CompactionWorkers>,
    /// Engine: further volumes for table files (volume `i` is the `i`-th entry; volume 0 is
    /// `dir`), each with the limits of its device.
    pub volumes: Vec<VolumeConfig>,
    /// Engine: how new table files are spread over `volumes` (`by_level` follows
    /// `level_volumes`; `tango`, `demand`, `round_robin`, `hash`, `raid0` and `single`
    /// place each file).
    pub placement: terrace::volume::placement::PlacementPolicy,
    /// Engine: load migration between `volumes` (`off`, `tango`, `iops_only`).
    pub migration: terrace::volume::migration::MigrationPolicy,
    /// BOOM over shared memory on this host: the Unix socket clients ring (created
    /// 0600); none: off.
    pub boom_socket: Option<PathBuf>,
    /// BOOM over TCP for clients on other hosts (entries and values in the messages), on
    /// `bind`; none: off. Needs `boom_socket` (the region is the same).
    pub boom_port: Option<u16>,
    /// BOOM: the directory of its persistent-memory region and metadata (a DAX mount on
    /// persistent memory; `/dev/shm` to emulate its speed without its durability);
    /// none: `<dir>/boom`.
    pub boom_dir: Option<PathBuf>,
    /// BOOM: bytes per client segment (whole 4 KiB pages).
    pub boom_segment_bytes: u64,
    /// BOOM: segments in the region (clients connected at once, plus the sealed
    /// segments waiting for a flush).
    pub boom_segments: u32,
}

/// One volume of the server's `volumes` list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VolumeConfig {
    /// The volume's directory (created if missing).
    pub path: PathBuf,
    /// I/O operations per second of 256 KiB (cloud volumes' unit); 0 or absent: unlimited.
    #[serde(default)]
    pub iops: u64,
    /// Bytes per second read and written together; 0 or absent: unlimited.
    #[serde(default)]
    pub bandwidth: u64,
}

impl VolumeConfig {
    /// The device limits this volume stands for.
    pub fn limits(&self) -> terrace::storage::ThrottleLimits {
        terrace::storage::ThrottleLimits::bandwidth(self.bandwidth).with_iops(
            self.iops,
            terrace::storage::ThrottleLimits::CLOUD_IO_UNIT_BYTES,
        )
    }
}

/// How the host runs its compactions (`compaction_mode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum CompactionMode {
    /// Read, merge and write in turn.
    #[default]
    Linear,
    /// A read / merge / write pipeline on three threads.
    Pipelined,
    /// Chosen per task from CPU, memory and value sizes (`compaction_decision`).
    Auto,
}

/// Largest default block cache: Kvrocks's default (`rocksdb.block_cache_size 4096`, MB).
const MAX_DEFAULT_BLOCK_CACHE: u64 = 4 << 30;

/// The server's default block cache: a quarter of the memory this process may use (the
/// machine's, or its cgroup's limit if lower), between `floor` (the engine's default) and
/// 4 GiB. A server stands in for Redis, which keeps everything in memory, so it caches
/// as much as a dedicated disk-backed server does (Kvrocks: 4 GiB); the cache fills only
/// as blocks are read. `floor` when the memory cannot be read.
pub fn default_block_cache_bytes(floor: usize) -> usize {
    let mut system = sysinfo::System::new();
    system.refresh_memory();
    let mut total = system.total_memory();
    if let Some(limits) = system.cgroup_limits() {
        if limits.total_memory > 0 {
            total = total.min(limits.total_memory);
        }
    }
    let quarter = (total / 4).min(MAX_DEFAULT_BLOCK_CACHE);
    usize::try_from(quarter).unwrap_or(floor).max(floor)
}

impl Config {
    /// The network threads (shards): `threads`, or half the cores (at least one) when it
    /// is 0. The other half is left to the engine's flush and compaction threads, and a
    /// shard gathers more per group with more connections: on two cores, one shard served
    /// redis-benchmark without pipelining about 10% faster than two, with half their p99
    /// latency (BENCHMARKS.md).
    pub fn network_threads(&self) -> usize {
        if self.threads > 0 {
            return self.threads;
        }
        (cores() / 2).max(1)
    }

    /// The reader threads: `reader_threads`, or one fewer than the cores (at least one).
    /// On two cores the reader thread costs CPU (a wake-up each way, the values' cache
    /// lines moved to the other core) but raises the pipelined GET rate; 0 trades the
    /// rate for the CPU (docs/performance.md, "A reader thread on two cores").
    pub fn reader_threads(&self) -> usize {
        self.reader_threads
            .unwrap_or_else(|| cores().saturating_sub(1).max(1))
    }
}

/// The cores this process may run on (1 if unknown).
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

impl Default for Config {
    fn default() -> Self {
        let engine = terrace::Options::default();
        Config {
            bind: "127.0.0.1".to_string(),
            port: 6380,
            dir: PathBuf::from("terrace-data"),
            requirepass: String::new(),
            maxclients: 10_000,
            threads: 0,
            reader_threads: None,
            protected_mode: true,
            fsync: Fsync::Everysec,
            proto_max_bulk_len: 512 * 1024 * 1024,
            max_args: 1024 * 1024,
            client_query_buffer_limit: 1024 * 1024 * 1024,
            metrics_port: 0,
            metrics_bind: "127.0.0.1".to_string(),
            timeout: 0,
            keyspace_count: true,
            keyspace_count_cache_bytes: 64 << 20,
            write_buffer_size: engine.write_buffer_size,
            block_cache_bytes: default_block_cache_bytes(engine.block_cache_bytes),
            warm_block_cache: true,
            target_file_size_base: engine.target_file_size_base,
            internal_fault_storage: false,
            compaction_mode: CompactionMode::Linear,
            compaction_decision: terrace::compaction::DecisionConfig::default(),
            compaction_workers: None,
            level_volumes: Vec::new(),
            volumes: Vec::new(),
            placement: terrace::volume::placement::PlacementPolicy::ByLevel,
            migration: terrace::volume::migration::MigrationPolicy::Off,
            boom_socket: None,
            boom_port: None,
            boom_dir: None,
            boom_segment_bytes: terrace_boom::StoreConfig::default().segment_bytes,
            boom_segments: terrace_boom::StoreConfig::default().segments,
        }
    }
}

/// `terrace serve` flags; each overrides the config file, which overrides the defaults.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ServeArgs {
    /// TOML configuration file (field names as `--print-config` shows).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Print the effective configuration as TOML and exit.
    #[arg(long)]
    pub print_config: bool,
    /// Address to listen on (default 127.0.0.1).
    #[arg(long)]
    pub bind: Option<String>,
    /// TCP port (default 6380; 0 picks a free port).
    #[arg(long)]
    pub port: Option<u16>,
    /// Database directory (default ./terrace-data).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Require this password (AUTH / HELLO ... AUTH).
    #[arg(long)]
    pub requirepass: Option<String>,
    /// Most connected clients (default 10000).
    #[arg(long)]
    pub maxclients: Option<u64>,
    /// Network threads, each serving its share of the connections (default: half the
    /// cores, at least one).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Threads that help the network thread read a large batch of pipelined GETs, chunk
    /// by chunk; 0: none, which costs less CPU per request but serves fewer requests a
    /// second when a core is free (default: one fewer than the cores, at least one).
    #[arg(long)]
    pub reader_threads: Option<usize>,
    /// `no` allows a non-loopback bind without a password.
    #[arg(long, value_name = "yes|no")]
    pub protected_mode: Option<String>,
    /// WAL sync policy: always (sync before each reply), everysec, no.
    #[arg(long, value_enum)]
    pub fsync: Option<Fsync>,
    /// Largest bulk string accepted, in bytes (default 512 MiB).
    #[arg(long)]
    pub proto_max_bulk_len: Option<u64>,
    /// Most bytes buffered for one client's unfinished commands (default 1 GiB).
    #[arg(long)]
    pub client_query_buffer_limit: Option<u64>,
    /// Prometheus text endpoint port (default off).
    #[arg(long)]
    pub metrics_port: Option<u16>,
    /// Address of the metrics endpoint (default 127.0.0.1; it has no password).
    #[arg(long)]
    pub metrics_bind: Option<String>,
    /// Close a client idle for this many seconds (default 0: never).
    #[arg(long)]
    pub timeout: Option<u64>,
    /// Count the keys with every write (yes, the default: DBSIZE in O(1)) or walk them
    /// when DBSIZE asks (no: blind SETs skip a read).
    #[arg(long, value_name = "yes|no")]
    pub keyspace_count: Option<String>,
    /// Memory for the states of recently written keys, which spare the count's read when
    /// they are written again (default 64 MiB; 0: none).
    #[arg(long)]
    pub keyspace_count_cache_bytes: Option<u64>,
    /// Engine memtable size in bytes.
    #[arg(long)]
    pub write_buffer_size: Option<usize>,
    /// Engine block cache size in bytes (default: a quarter of the memory, at most 4 GiB,
    /// at least 32 MiB).
    #[arg(long)]
    pub block_cache_bytes: Option<usize>,
    /// Put the blocks flushes and compactions write into the block cache while it has
    /// room (yes, the default) or leave them to be read from their files (no).
    #[arg(long, value_name = "yes|no")]
    pub warm_block_cache: Option<String>,
    /// Internal, crash tests only: fault-injection storage (unsynced writes die with the
    /// process).
    #[arg(long, hide = true)]
    pub internal_fault_storage: bool,
    /// How this host runs compactions: linear, pipelined, auto (default linear).
    #[arg(long, value_enum)]
    pub compaction_mode: Option<CompactionMode>,
    /// Compaction workers, HOST:PORT or unix:PATH, comma-separated (`terrace compactd`;
    /// the secret from TERRACE_COMPACTD_SECRET or the config file).
    #[arg(long, value_delimiter = ',', value_name = "ADDR,...")]
    pub compaction_workers: Option<Vec<String>>,
    /// Serve BOOM (one-round-trip persistent-memory protocol) on this Unix socket.
    #[arg(long, value_name = "PATH")]
    pub boom_socket: Option<PathBuf>,
    /// Serve BOOM over TCP on this port too (on --bind; 0 picks one), for clients on other
    /// hosts.
    #[arg(long)]
    pub boom_port: Option<u16>,
    /// BOOM: directory of its persistent-memory region (default DIR/boom).
    #[arg(long, value_name = "PATH")]
    pub boom_dir: Option<PathBuf>,
    /// BOOM: bytes per client segment (default 64 MiB).
    #[arg(long)]
    pub boom_segment_bytes: Option<u64>,
    /// BOOM: segments in the region (default 16).
    #[arg(long)]
    pub boom_segments: Option<u32>,
}

impl ServeArgs {
    /// The effective configuration: defaults, then the file, then the flags.
    ///
    /// # Errors
    /// `Error::Config` for an unreadable or invalid file or a bad flag value.
    pub fn resolve(&self) -> Result<Config> {
        let mut c = match &self.config {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| Error::Config(format!("{}: {e}", path.display())))?;
                toml::from_str(&text)
                    .map_err(|e| Error::Config(format!("{}: {e}", path.display())))?
            }
            None => Config::default(),
        };
        macro_rules! over {
            ($($f:ident),*) => { $( if let Some(v) = &self.$f { c.$f = v.clone(); } )* };
        }
        over!(
            bind,
            port,
            dir,
            requirepass,
            maxclients,
            threads,
            fsync,
            proto_max_bulk_len,
            client_query_buffer_limit,
            metrics_port,
            metrics_bind,
            timeout,
            write_buffer_size,
            block_cache_bytes,
            keyspace_count_cache_bytes,
            boom_segment_bytes,
            boom_segments
        );
        if let Some(n) = self.reader_threads {
            c.reader_threads = Some(n);
        }
        if let Some(p) = &self.boom_socket {
            c.boom_socket = Some(p.clone());
        }
        if let Some(p) = &self.boom_dir {
            c.boom_dir = Some(p.clone());
        }
        if let Some(p) = self.boom_port {
            c.boom_port = Some(p);
        }
        if let Some(v) = &self.warm_block_cache {
            c.warm_block_cache = parse_yes_no(v)?;
        }
        if let Some(v) = &self.keyspace_count {
            c.keyspace_count = parse_yes_no(v)?;
        }
        if let Some(p) = &self.protected_mode {
            c.protected_mode = parse_yes_no(p)?;
        }
        c.internal_fault_storage |= self.internal_fault_storage;
        if let Some(m) = self.compaction_mode {
            c.compaction_mode = m;
        }
        if let Some(addrs) = &self.compaction_workers {
            let workers = c.compaction_workers.get_or_insert_with(Default::default);
            workers.workers.clone_from(addrs);
        }
        if let Some(w) = &mut c.compaction_workers {
            if w.secret.is_empty() {
                w.secret = std::env::var("TERRACE_COMPACTD_SECRET").unwrap_or_default();
            }
            w.validate()
                .map_err(|e| Error::Config(format!("compaction_workers: {e}")))?;
        }
        Ok(c)
    }
}

/// Parses Redis's `yes`/`no`.
///
/// # Errors
/// `Error::Config` for anything else.
pub fn parse_yes_no(s: &str) -> Result<bool> {
    match s.to_ascii_lowercase().as_str() {
        "yes" => Ok(true),
        "no" => Ok(false),
        _ => Err(Error::Config(format!("expected yes or no, got {s:?}"))),
    }
}

impl Config {
    /// The configuration as TOML (what `--print-config` prints).
    ///
    /// # Errors
    /// `Error::Config` if serialisation fails.
    pub fn to_toml(&self) -> Result<String> {
        toml::to_string(self).map_err(|e| Error::Config(e.to_string()))
    }

    /// Whether `bind` is a loopback address (or `localhost`).
    pub fn is_loopback(&self) -> bool {
        self.bind == "localhost"
            || self
                .bind
                .parse::<std::net::IpAddr>()
                .is_ok_and(|a| a.is_loopback())
    }

    /// Whether protected mode forbids this configuration: a non-loopback bind without a
    /// password while protected mode is on.
    pub fn protected_mode_violated(&self) -> bool {
        self.protected_mode && !self.is_loopback() && self.requirepass.is_empty()
    }

    /// Checks the start-up rules: protected mode and the bounds of the limits.
    ///
    /// # Errors
    /// `Error::Config` when a non-loopback bind has no password and protected mode is on,
    /// or a limit is out of its range.
    pub fn validate(&self) -> Result<()> {
        if self.protected_mode_violated() {
            return Err(Error::Config(format!(
                "refusing to listen on non-loopback address {} without a password: set \
                 --requirepass, or --protected-mode no to accept unauthenticated clients",
                self.bind
            )));
        }
        let at_least = |name: &str, v: u64, min: u64| {
            if v < min {
                Err(Error::Config(format!(
                    "{name} must be at least {min}, got {v}"
                )))
            } else {
                Ok(())
            }
        };
        if self.boom_port.is_some() && self.boom_socket.is_none() {
            return Err(Error::Config(
                "boom_port needs boom_socket: BOOM's region and its local clients come first"
                    .into(),
            ));
        }
        at_least("maxclients", self.maxclients, 1)?;
        at_least("max_args", self.max_args, 1)?;
        at_least(
            "proto_max_bulk_len",
            self.proto_max_bulk_len,
            MIN_LIMIT_BYTES,
        )?;
        at_least(
            "client_query_buffer_limit",
            self.client_query_buffer_limit,
            MIN_LIMIT_BYTES,
        )?;
        Ok(())
    }

    /// Applies one CONFIG SET parameter (`name` in lower case) to this configuration.
    /// The caller applies a command's parameters to a copy, checks the result with
    /// [`Config::check_set`], and only then installs it, so a CONFIG SET takes effect
    /// whole or not at all. What each parameter does is in docs/formats/resp.md
    /// ("CONFIG").
    ///
    /// # Errors
    /// [`SetError`] for an unknown parameter, a bad value, or a parameter (or value)
    /// Terrace cannot honour while running.
    pub fn set(&mut self, name: &str, value: &[u8]) -> std::result::Result<(), SetError> {
        let text = std::str::from_utf8(value).map_err(|_| SetError::Invalid {
            name: name.to_string(),
            reason: "argument must be UTF-8".to_string(),
        })?;
        let invalid = |reason: &str| SetError::Invalid {
            name: name.to_string(),
            reason: reason.to_string(),
        };
        let unsupported = |reason: &str| SetError::Unsupported {
            name: name.to_string(),
            reason: reason.to_string(),
        };
        let integer = || -> std::result::Result<u64, SetError> {
            text.parse()
                .map_err(|_| invalid("argument couldn't be parsed into an integer"))
        };
        let memory = || -> std::result::Result<u64, SetError> {
            parse_memory(text).ok_or_else(|| invalid("argument must be a memory value"))
        };
        let at_least = |v: u64, min: u64| -> std::result::Result<u64, SetError> {
            if v < min {
                Err(invalid(&format!("argument must be at least {min}")))
            } else {
                Ok(v)
            }
        };
        match name {
            "requirepass" => self.requirepass = text.to_string(),
            "maxclients" => self.maxclients = at_least(integer()?, 1)?,
            "timeout" => self.timeout = integer()?,
            "proto-max-bulk-len" => {
                self.proto_max_bulk_len = at_least(memory()?, MIN_LIMIT_BYTES)?;
            }
            "client-query-buffer-limit" => {
                self.client_query_buffer_limit = at_least(memory()?, MIN_LIMIT_BYTES)?;
            }
            "protected-mode" => {
                self.protected_mode =
                    parse_yes_no(text).map_err(|_| invalid("argument must be 'yes' or 'no'"))?;
            }
            // Values that say what Terrace does anyway are accepted; others are refused.
            "appendonly" => {
                if !parse_yes_no(text).map_err(|_| invalid("argument must be 'yes' or 'no'"))? {
                    return Err(unsupported("Terrace always writes a write-ahead log"));
                }
            }
            "save" => {
                if !text.trim().is_empty() {
                    return Err(unsupported(
                        "Terrace takes no RDB snapshots (every write goes to the write-ahead \
                         log); only \"\" is accepted",
                    ));
                }
            }
            "maxmemory" => {
                if memory()? != 0 {
                    return Err(unsupported(
                        "Terrace keeps the data on disk and evicts nothing; only 0 is \
                         accepted (the memtable and block cache sizes are set at start)",
                    ));
                }
            }
            "appendfsync" => {
                return Err(unsupported(
                    "the WAL sync policy is chosen at start (--fsync)",
                ))
            }
            "bind"
            | "port"
            | "dir"
            | "io-threads"
            | "keyspace-count"
            | "keyspace-count-cache-bytes" => {
                return Err(unsupported("it is set at start only (terrace serve flags)"))
            }
            "databases" => return Err(unsupported("Terrace has one database")),
            _ => return Err(SetError::Unknown(name.to_string())),
        }
        Ok(())
    }

    /// Checks a configuration CONFIG SET produced: protected mode holds as at start.
    ///
    /// # Errors
    /// [`SetError::Invalid`] naming the parameter that broke the rule.
    pub fn check_set(&self, changed: &[String]) -> std::result::Result<(), SetError> {
        if self.protected_mode_violated() {
            let name = if changed.iter().any(|n| n == "requirepass") {
                "requirepass"
            } else {
                "protected-mode"
            };
            return Err(SetError::Invalid {
                name: name.to_string(),
                reason: format!(
                    "protected mode refuses an empty password while listening on \
                     non-loopback address {}",
                    self.bind
                ),
            });
        }
        Ok(())
    }
}

/// The smallest `proto-max-bulk-len` and `client-query-buffer-limit` accepted.
pub const MIN_LIMIT_BYTES: u64 = 1024;

/// Why CONFIG SET refused a parameter; the reply is `-ERR` and this text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SetError {
    /// No such parameter.
    #[error("Unknown option or number of arguments for CONFIG SET - '{0}'")]
    Unknown(String),
    /// A value the parameter does not accept.
    #[error("CONFIG SET failed (possibly related to argument '{name}') - {reason}")]
    Invalid {
        /// The parameter.
        name: String,
        /// Why.
        reason: String,
    },
    /// A parameter (or value) Terrace does not honour while running.
    #[error("CONFIG SET '{name}' is not supported: {reason}")]
    Unsupported {
        /// The parameter.
        name: String,
        /// Why.
        reason: String,
    },
    /// The same parameter twice in one CONFIG SET.
    #[error("CONFIG SET failed (possibly related to argument '{0}') - duplicate parameter")]
    Duplicate(String),
}

/// Parses a Redis memory value: a count of bytes, optionally with a unit (`k` 1000,
/// `kb` 1024, `m`, `mb`, `g`, `gb`; any case). `None` for anything else or an overflow.
pub fn parse_memory(s: &str) -> Option<u64> {
    let lower = s.to_ascii_lowercase();
    let digits_end = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (digits, unit) = lower.split_at(digits_end);
    let mul: u64 = match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    if digits.is_empty() {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(mul)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reader_threads_default_to_one_fewer_than_the_cores_and_zero_turns_them_off() {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        assert_eq!(
            Config::default().reader_threads(),
            cores.saturating_sub(1).max(1)
        );
        let args = ServeArgs {
            reader_threads: Some(0),
            ..ServeArgs::default()
        };
        let config = args.resolve().unwrap();
        assert_eq!(config.reader_threads(), 0);
        let text = toml::to_string(&config).unwrap();
        assert!(text.contains("reader_threads = 0"), "{text}");
        let back: Config = toml::from_str(&text).unwrap();
        assert_eq!(back.reader_threads(), 0);
    }

    #[test]
    fn the_default_block_cache_is_a_quarter_of_memory_within_its_bounds() {
        let floor = terrace::Options::default().block_cache_bytes;
        let bytes = default_block_cache_bytes(floor);
        assert!(bytes >= floor, "{bytes}");
        assert!(
            bytes as u64 <= MAX_DEFAULT_BLOCK_CACHE.max(floor as u64),
            "{bytes}"
        );
        let mut system = sysinfo::System::new();
        system.refresh_memory();
        let total = system.total_memory();
        if total >= 4 * floor as u64 && total < 4 * MAX_DEFAULT_BLOCK_CACHE {
            // Between the bounds: a quarter of the memory (or of the cgroup's limit).
            assert!(bytes as u64 <= total / 4, "{bytes} of {total}");
        }
        // A floor above everything wins; the flag overrides the default.
        assert_eq!(default_block_cache_bytes(usize::MAX), usize::MAX);
        let args = ServeArgs {
            block_cache_bytes: Some(1 << 20),
            ..ServeArgs::default()
        };
        assert_eq!(args.resolve().unwrap().block_cache_bytes, 1 << 20);
    }

    #[test]
    fn yes_no_switches_are_on_unless_a_flag_or_the_file_turns_them_off() {
        type Flag = fn(&mut ServeArgs) -> &mut Option<String>;
        type Field = fn(&Config) -> bool;
        let switches: [(Flag, Field, &str); 2] = [
            (
                |a| &mut a.keyspace_count,
                |c| c.keyspace_count,
                "keyspace_count = false",
            ),
            (
                |a| &mut a.warm_block_cache,
                |c| c.warm_block_cache,
                "warm_block_cache = false",
            ),
        ];
        for (flag, field, file) in switches {
            assert!(field(&ServeArgs::default().resolve().unwrap()));
            let mut off = ServeArgs::default();
            *flag(&mut off) = Some("no".into());
            assert!(!field(&off.resolve().unwrap()));
            let mut bad = ServeArgs::default();
            *flag(&mut bad) = Some("maybe".into());
            assert!(bad.resolve().is_err());
            let parsed: Config = toml::from_str(file).unwrap();
            assert!(!field(&parsed));
        }
        let mut c = Config::default();
        assert!(matches!(
            c.set("keyspace-count", b"no"),
            Err(SetError::Unsupported { .. })
        ));
    }

    #[test]
    fn compaction_settings_come_from_the_file_and_the_flags_and_print_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("terrace.toml");
        std::fs::write(
            &path,
            "compaction_mode = \"auto\"\n\
             [compaction_decision]\nthreshold = 0.6\n\
             [compaction_workers]\nworkers = [\"127.0.0.1:7400\"]\nsecret = \"s\"\nshare = \"steal:4\"\ndispatch = \"round_robin\"\n",
        )
        .unwrap();
        let args = ServeArgs {
            config: Some(path.clone()),
            ..ServeArgs::default()
        };
        let c = args.resolve().unwrap();
        assert_eq!(c.compaction_mode, CompactionMode::Auto);
        assert!((c.compaction_decision.threshold - 0.6).abs() < 1e-12);
        let w = c.compaction_workers.clone().unwrap();
        assert_eq!(w.workers, vec!["127.0.0.1:7400".to_string()]);
        assert_eq!(w.share.to_string(), "steal:4");
        assert_eq!(w.dispatch, terrace::compaction::DispatchPolicy::RoundRobin);
        // What --print-config prints reads back the same.
        let printed = c.to_toml().unwrap();
        assert_eq!(toml::from_str::<Config>(&printed).unwrap(), c);
        // Flags override: the mode, and the addresses (the file's other settings stay).
        let args = ServeArgs {
            config: Some(path.clone()),
            compaction_mode: Some(CompactionMode::Pipelined),
            compaction_workers: Some(vec!["unix:/w.sock".into(), "h:1".into()]),
            ..ServeArgs::default()
        };
        let c = args.resolve().unwrap();
        assert_eq!(c.compaction_mode, CompactionMode::Pipelined);
        let w = c.compaction_workers.unwrap();
        assert_eq!(w.workers.len(), 2);
        assert_eq!(w.secret, "s");
        // Bad settings are refused with the setting's name.
        for bad in [
            "[compaction_workers]\nworkers = []\n",
            "[compaction_workers]\nworkers = [\"a:1\"]\nshare = \"most\"\n",
            "[compaction_workers]\nworkers = [\"a:1\"]\ndispatch = \"random\"\n",
            "compaction_mode = \"fast\"\n",
            "[compaction_decision]\nthreshhold = 0.5\n",
        ] {
            std::fs::write(&path, bad).unwrap();
            let args = ServeArgs {
                config: Some(path.clone()),
                ..ServeArgs::default()
            };
            assert!(args.resolve().is_err(), "{bad}");
        }
    }

    #[test]
    fn memory_values() {
        assert_eq!(parse_memory("1024"), Some(1024));
        assert_eq!(parse_memory("1k"), Some(1000));
        assert_eq!(parse_memory("1KB"), Some(1024));
        assert_eq!(parse_memory("512mb"), Some(512 << 20));
        assert_eq!(parse_memory("2gb"), Some(2 << 30));
        assert_eq!(parse_memory("3g"), Some(3_000_000_000));
        assert_eq!(parse_memory(""), None);
        assert_eq!(parse_memory("mb"), None);
        assert_eq!(parse_memory("-1"), None);
        assert_eq!(parse_memory("1tb"), None);
        assert_eq!(parse_memory("99999999999999999999gb"), None);
    }

    #[test]
    fn metrics_listen_on_loopback_unless_told() {
        let c = Config::default();
        assert_eq!(c.metrics_bind, "127.0.0.1");
        let args = ServeArgs {
            bind: Some("0.0.0.0".into()),
            ..ServeArgs::default()
        };
        assert_eq!(args.resolve().unwrap().metrics_bind, "127.0.0.1");
        let args = ServeArgs {
            metrics_bind: Some("0.0.0.0".into()),
            timeout: Some(30),
            ..ServeArgs::default()
        };
        let c = args.resolve().unwrap();
        assert_eq!((c.metrics_bind.as_str(), c.timeout), ("0.0.0.0", 30));
    }

    #[test]
    fn start_up_checks_the_limits() {
        let ok = Config::default();
        assert!(ok.validate().is_ok());
        for bad in [
            Config {
                proto_max_bulk_len: 10,
                ..Config::default()
            },
            Config {
                client_query_buffer_limit: 0,
                ..Config::default()
            },
            Config {
                maxclients: 0,
                ..Config::default()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }
}
