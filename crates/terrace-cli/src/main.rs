//! The `terrace` command: one binary with a subcommand per job.

mod inspect;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Terrace: an LSM-tree key-value store for heterogeneous storage hardware.
#[derive(Parser)]
#[command(name = "terrace", version, about, long_about = None)]
struct Cli {
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
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Version => println!("terrace {}", env!("CARGO_PKG_VERSION")),
        Command::Inspect {
            dir,
            sst,
            keys,
            verify,
        } => match (dir, sst) {
            (_, Some(file)) => inspect::table(&file, keys, verify)?,
            (Some(dir), None) => inspect::database(&dir, verify)?,
            (None, None) => anyhow::bail!("give a database directory or --sst FILE"),
        },
    }
    Ok(())
}
