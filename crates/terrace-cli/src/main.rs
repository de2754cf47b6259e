//! The `terrace` command.

use clap::{Parser, Subcommand};

/// Terrace: an LSM-tree key-value store for heterogeneous storage hardware.
#[derive(Parser)]
#[command(name = "terrace", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the version.
    Version,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Version => println!("terrace {}", env!("CARGO_PKG_VERSION")),
    }
    Ok(())
}
