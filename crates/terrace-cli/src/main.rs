//! The `terrace` command: one binary with a subcommand per job.

mod compactd;
mod inspect;
mod logging;

use std::io::Write;
use std::path::PathBuf;

use clap::{Parser, Subcommand};
use compactd::CompactdArgs;

/// mimalloc serves the binary's allocations: the server's request path allocates and frees
/// a few dozen small buffers per request, and glibc's free was a tenth of its instructions
/// (docs/performance.md, "The allocator").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Terrace: an LSM-tree key-value store for heterogeneous storage hardware.
///
/// Subcommands serve the Redis protocol, run benchmarks, and inspect databases and table files.
#[derive(Parser)]
#[command(name = "terrace", version)]
struct Cli {
    /// Log level or filter for the engine's and the server's events (`error`, `warn`,
    /// `info`, `debug`, `trace`, or e.g. `terrace=debug,warn`); `RUST_LOG` overrides it.
    /// Default: `info` for serve, `warn` otherwise.
    #[arg(long, global = true, value_name = "LEVEL")]
    log_level: Option<String>,
    /// Append log events to this file instead of stderr.
    #[arg(long, global = true, value_name = "FILE")]
    log_file: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the version.
    Version,
    /// Show a database's levels and files, or dump one table file (read-only; no lock taken).
    Inspect {
        /// The database directory (omit with --sst).
        dir: Option<PathBuf>,
        /// Dump this table file's properties instead.
        #[arg(long, value_name = "FILE")]
        sst: Option<PathBuf>,
        /// With --sst: also print every entry.
        #[arg(long)]
        keys: bool,
        /// Read every block and check its checksum.
        #[arg(long)]
        verify: bool,
    },
    /// Run db_bench- and YCSB-style benchmarks: `terrace bench --db DIR --benchmarks=...`
    /// with db_bench's flags (`terrace bench --help` lists them), or YCSB against a
    /// Redis-protocol server with `--target redis://HOST:PORT`.
    #[command(disable_help_flag = true)]
    Bench {
        /// db_bench-style flags (`--name=value`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Serve the Redis protocol (RESP2/RESP3) on a database (default 127.0.0.1:6380,
    /// ./terrace-data).
    Serve(Box<terrace_server::ServeArgs>),
    /// Run a compaction worker: serve compaction tasks for a database whose directories this
    /// process shares (default 127.0.0.1:7400; a shared secret is required).
    Compactd(CompactdArgs),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let default_level = match cli.command {
        Command::Serve(_) | Command::Compactd(_) => "info",
        _ => "warn",
    };
    if let Err(e) = logging::init(
        cli.log_level.as_deref(),
        cli.log_file.as_deref(),
        default_level,
    ) {
        eprintln!("terrace: {e:#}");
        return std::process::ExitCode::FAILURE;
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let result = run(cli, &mut out).and_then(|()| Ok(out.flush()?));
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // A closed pipe (`terrace inspect ... | head`) is not a failure.
        Err(e) if is_broken_pipe(&e) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // The engine's errors already name their cause; do not print it twice.
            let mut parts: Vec<String> = Vec::new();
            for cause in e.chain().map(ToString::to_string) {
                if !parts.last().is_some_and(|p| p.contains(&cause)) {
                    parts.push(cause);
                }
            }
            eprintln!("terrace: {}", parts.join(": "));
            std::process::ExitCode::FAILURE
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn run(cli: Cli, out: &mut impl Write) -> anyhow::Result<()> {
    match cli.command {
        Command::Version => writeln!(out, "terrace {}", env!("CARGO_PKG_VERSION"))?,
        Command::Inspect {
            dir,
            sst,
            keys,
            verify,
        } => match (dir, sst) {
            (_, Some(file)) => inspect::table(out, &file, keys, verify)?,
            (Some(dir), None) => inspect::database(out, &dir, verify)?,
            (None, None) => anyhow::bail!("give a database directory or --sst FILE"),
        },
        Command::Bench { args } => {
            if args.iter().any(|a| a == "--help" || a == "-h") {
                writeln!(out, "{}", terrace_bench::flags::HELP)?;
                return Ok(());
            }
            let flags = terrace_bench::Flags::parse(&args)?;
            terrace_bench::run(&flags, out)?;
        }
        Command::Serve(args) => terrace_server::net::serve_command(&args, out)?,
        Command::Compactd(args) => compactd::run(&args, out)?,
    }
    Ok(())
}
