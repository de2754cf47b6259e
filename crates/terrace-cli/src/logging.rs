//! Where the engine's and the server's log events go: stderr or a file, at a level from
//! `--log-level` or `RUST_LOG` (which wins, with its full filter syntax).
//!
//! Owns: installing the global `tracing` subscriber, once, at start.
//! Must not touch: what is logged; the library crates only emit events.

use std::fs::OpenOptions;
use std::path::Path;

use anyhow::Context;
use tracing_subscriber::EnvFilter;

/// Installs the subscriber. `level` is a level name or a filter (`info`,
/// `terrace=debug,warn`); `default` applies when neither it nor `RUST_LOG` is given.
///
/// # Errors
/// A filter that does not parse, or a log file that cannot be opened.
pub fn init(level: Option<&str>, file: Option<&Path>, default: &str) -> anyhow::Result<()> {
    let filter = match std::env::var("RUST_LOG").ok().filter(|v| !v.is_empty()) {
        Some(env) => EnvFilter::try_new(&env).with_context(|| format!("RUST_LOG={env}"))?,
        None => {
            let spec = level.unwrap_or(default);
            // A bare word must be a level: a filter would read it as a target name and
            // silently log nothing.
            let bare = !spec.contains(['=', ',']);
            if bare
                && spec
                    .parse::<tracing_subscriber::filter::LevelFilter>()
                    .is_err()
            {
                anyhow::bail!(
                    "--log-level {spec}: not a level (error, warn, info, debug, trace, off) \
                     nor a filter (target=level,...)"
                );
            }
            EnvFilter::try_new(spec).with_context(|| format!("--log-level {spec}"))?
        }
    };
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    let installed = match file {
        Some(path) => {
            let f = OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("opening the log file {}", path.display()))?;
            builder
                .with_ansi(false)
                .with_writer(std::sync::Mutex::new(f))
                .try_init()
        }
        None => builder.with_writer(std::io::stderr).try_init(),
    };
    installed.map_err(|e| anyhow::anyhow!("installing the logger: {e}"))
}
