//! Server configuration: defaults, the TOML file (`--config`), command-line flags, and
//! the CONFIG GET/SET view of the settings that can change while running.
//!
//! Owns: [`Config`] and [`ServeArgs`].
//! Must not touch: sockets or the engine; `net` and `commands` read the values.
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
    /// Port of the Prometheus text endpoint on `bind`; 0 turns it off.
    pub metrics_port: u16,
    /// Engine: bytes of one memtable.
    pub write_buffer_size: usize,
    /// Engine: bytes of the block cache.
    pub block_cache_bytes: usize,
    /// Internal, for crash tests only: run the engine on fault-injection storage, which
    /// keeps unsynced bytes in process memory so SIGKILL loses them as a power cut would.
    pub internal_fault_storage: bool,
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
            protected_mode: true,
            fsync: Fsync::Everysec,
            proto_max_bulk_len: 512 * 1024 * 1024,
            max_args: 1024 * 1024,
            client_query_buffer_limit: 1024 * 1024 * 1024,
            metrics_port: 0,
            write_buffer_size: engine.write_buffer_size,
            block_cache_bytes: engine.block_cache_bytes,
            internal_fault_storage: false,
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
    /// `no` allows a non-loopback bind without a password.
    #[arg(long, value_name = "yes|no")]
    pub protected_mode: Option<String>,
    /// WAL sync policy: always (sync before each reply), everysec, no.
    #[arg(long, value_enum)]
    pub fsync: Option<Fsync>,
    /// Largest bulk string accepted, in bytes (default 512 MiB).
    #[arg(long)]
    pub proto_max_bulk_len: Option<u64>,
    /// Prometheus text endpoint port (default off).
    #[arg(long)]
    pub metrics_port: Option<u16>,
    /// Engine memtable size in bytes.
    #[arg(long)]
    pub write_buffer_size: Option<usize>,
    /// Engine block cache size in bytes.
    #[arg(long)]
    pub block_cache_bytes: Option<usize>,
    /// Internal, crash tests only: fault-injection storage (unsynced writes die with the
    /// process).
    #[arg(long, hide = true)]
    pub internal_fault_storage: bool,
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
            metrics_port,
            write_buffer_size,
            block_cache_bytes
        );
        if let Some(p) = &self.protected_mode {
            c.protected_mode = parse_yes_no(p)?;
        }
        c.internal_fault_storage |= self.internal_fault_storage;
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

    /// Checks the start-up rules (protected mode).
    ///
    /// # Errors
    /// `Error::Config` when a non-loopback bind has no password and protected mode is on.
    pub fn validate(&self) -> Result<()> {
        if self.protected_mode && !self.is_loopback() && self.requirepass.is_empty() {
            return Err(Error::Config(format!(
                "refusing to listen on non-loopback address {} without a password: set \
                 --requirepass, or --protected-mode no to accept unauthenticated clients",
                self.bind
            )));
        }
        Ok(())
    }
}
