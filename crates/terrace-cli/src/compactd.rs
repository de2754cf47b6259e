//! `terrace compactd`: a compaction worker process (the near-data device stand-in,
//! docs/techniques/copro.md) serving tasks over TCP or a Unix socket.

use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context};
use terrace::compaction::ExecutionMode;
use terrace::offload::{Worker, WorkerAddr, WorkerConfig};

/// `terrace compactd`'s flags.
#[derive(clap::Args, Debug)]
pub struct CompactdArgs {
    /// Where to listen: `HOST:PORT` or `unix:PATH`.
    #[arg(long, default_value = "127.0.0.1:7400")]
    pub listen: String,
    /// The database directory, as this process sees it (volume 0).
    #[arg(long)]
    pub dir: PathBuf,
    /// A further volume directory, in the database's order (repeat for more).
    #[arg(long = "volume")]
    pub volumes: Vec<PathBuf>,
    /// A file holding the shared secret clients must present (trailing newline ignored);
    /// without it, TERRACE_COMPACTD_SECRET.
    #[arg(long)]
    pub secret_file: Option<PathBuf>,
    /// Tasks run at once.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// How tasks run: linear (in turn), pipelined (read / merge / write threads), or auto
    /// (chosen per task from this process's CPUs, memory and the task's value sizes).
    #[arg(long, default_value = "linear", value_parser = ["linear", "pipelined", "auto"])]
    pub mode: String,
    /// Same as `--mode pipelined`.
    #[arg(long, conflicts_with = "mode")]
    pub pipelined: bool,
    /// Bytes per second of reads and writes together this worker may use (0: unlimited),
    /// like `terrace bench --storage_rate_limit` for the database's table tier.
    #[arg(long, default_value_t = 0)]
    pub storage_rate_limit: u64,
    /// Run only on these CPUs, e.g. `1` or `2,3` (a weaker device than the host).
    #[arg(long, value_delimiter = ',')]
    pub cpus: Vec<usize>,
}

/// Runs the worker until its listener fails.
pub fn run(args: &CompactdArgs, out: &mut impl std::io::Write) -> anyhow::Result<()> {
    let secret = match &args.secret_file {
        Some(f) => std::fs::read_to_string(f)
            .with_context(|| format!("reading the secret file {}", f.display()))?
            .trim_end_matches(['\n', '\r'])
            .to_string(),
        None => std::env::var("TERRACE_COMPACTD_SECRET").unwrap_or_default(),
    };
    if secret.is_empty() {
        bail!("a compaction worker needs a shared secret: --secret-file FILE or TERRACE_COMPACTD_SECRET");
    }
    if !args.dir.is_dir() {
        bail!("{} is not a directory", args.dir.display());
    }
    if args.threads == 0 {
        bail!("--threads must be at least 1");
    }
    if !args.cpus.is_empty() {
        let mut set = rustix::thread::CpuSet::new();
        for &cpu in &args.cpus {
            if cpu >= rustix::thread::CpuSet::MAX_CPU {
                bail!("no CPU {cpu}");
            }
            set.set(cpu);
        }
        // Threads started later inherit the set.
        rustix::thread::sched_setaffinity(None, &set)
            .with_context(|| format!("pinning to CPUs {:?}", args.cpus))?;
    }
    let worker = Arc::new(Worker::new(WorkerConfig {
        dir: args.dir.clone(),
        volumes: args.volumes.clone(),
        secret,
        threads: args.threads,
        rate_limit: args.storage_rate_limit,
        mode: if args.pipelined {
            ExecutionMode::Pipelined
        } else {
            ExecutionMode::parse(&args.mode)?
        },
    }));
    // The server's filter (expired keys dropped in compaction), so that the tasks of a
    // `terrace serve` database run here too.
    worker.register_filter(Arc::new(
        terrace_server::value::ExpiryFilterFactory::default(),
    ));
    match WorkerAddr::parse(&args.listen) {
        WorkerAddr::Tcp(addr) => {
            let listener =
                TcpListener::bind(&addr).with_context(|| format!("listening on {addr}"))?;
            writeln!(out, "compactd: listening on {}", listener.local_addr()?)?;
            out.flush()?;
            worker.serve_tcp(&listener)?;
        }
        WorkerAddr::Unix(path) => {
            let listener = UnixListener::bind(&path)
                .with_context(|| format!("listening on {}", path.display()))?;
            // Only this user may connect.
            std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
            writeln!(out, "compactd: listening on unix:{}", path.display())?;
            out.flush()?;
            worker.serve_unix(&listener)?;
        }
    }
    Ok(())
}
