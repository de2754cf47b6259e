//! The TCP transport: the listener, one task per connection, pipelining, maxclients,
//! protected mode, the `everysec` WAL sync, and graceful shutdown on SIGTERM/SIGINT or
//! SHUTDOWN.
//!
//! Owns: sockets, the tokio runtime, the shutdown sequence.
//! Must not touch: command semantics (`commands`) or framing rules (`resp`).
//! Concurrency: one tokio task per connection; commands run synchronously on the task's
//! worker thread (in `block_in_place` when every write syncs), so a connection's replies
//! stay in request order. Shutdown: stop accepting, let every connection finish the
//! commands it has already read, close the engine (which syncs the WAL), return.

mod connection;
mod metrics;

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::commands::Engine;
use crate::config::{Config, Fsync, ServeArgs};
use crate::error::{Error, Result};

/// The Prometheus text the `--metrics-port` endpoint serves.
pub fn metrics_text(engine: &Engine) -> String {
    metrics::render(engine)
}

/// `terrace serve`: resolves the configuration, then prints it (`--print-config`) or
/// serves until a signal or SHUTDOWN. Writes `listening on ADDR` to `out` once ready.
///
/// # Errors
/// Configuration errors (including protected mode), engine open/close errors, and
/// failure to bind.
pub fn serve_command(args: &ServeArgs, out: &mut dyn Write) -> Result<()> {
    let config = args.resolve()?;
    if args.print_config {
        write!(out, "{}", config.to_toml()?)?;
        return Ok(());
    }
    config.validate()?;
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    rt.enable_all();
    if config.threads > 0 {
        rt.worker_threads(config.threads);
    }
    rt.build()?.block_on(serve(config, out))
}

/// Serves `config` on the current tokio runtime until SIGTERM, SIGINT or SHUTDOWN.
///
/// # Errors
/// As [`serve_command`].
pub async fn serve(config: Config, out: &mut dyn Write) -> Result<()> {
    let engine = Engine::open(&config)?;
    let listener = TcpListener::bind((config.bind.as_str(), config.port))
        .await
        .map_err(|e| {
            Error::Config(format!(
                "cannot listen on {}:{}: {e}",
                config.bind, config.port
            ))
        })?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut background = JoinSet::new();
    if config.metrics_port != 0 {
        let metrics = TcpListener::bind((config.bind.as_str(), config.metrics_port)).await?;
        writeln!(out, "metrics on {}", metrics.local_addr()?)?;
        background.spawn(metrics::serve(
            Arc::clone(&engine),
            metrics,
            stop_rx.clone(),
        ));
    }
    if config.fsync == Fsync::Everysec {
        background.spawn(sync_every_second(Arc::clone(&engine), stop_rx.clone()));
    }
    writeln!(out, "listening on {}", listener.local_addr()?)?;
    out.flush()?;
    accept_loop(&engine, &listener, &stop_tx, stop_rx).await;
    drop(listener);
    while background.join_next().await.is_some() {}
    close_engine(engine)
}

async fn accept_loop(
    engine: &Arc<Engine>,
    listener: &TcpListener,
    stop_tx: &watch::Sender<bool>,
    mut stop_rx: watch::Receiver<bool>,
) {
    let mut connections = JoinSet::new();
    let signals = wait_for_signal(stop_tx.clone());
    tokio::pin!(signals);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, addr)) => {
                    let _ = stream.set_nodelay(true);
                    connections.spawn(connection::handle(
                        Arc::clone(engine),
                        stream,
                        addr.to_string(),
                        stop_tx.clone(),
                        stop_rx.clone(),
                    ));
                }
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            () = &mut signals => {}
            _ = stop_rx.changed() => {}
        }
        if *stop_rx.borrow() {
            break;
        }
    }
    // Every connection finishes the commands it has read, replies, and closes.
    while connections.join_next().await.is_some() {}
}

/// Resolves on SIGTERM or SIGINT, after telling every task to stop.
async fn wait_for_signal(stop_tx: watch::Sender<bool>) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        std::future::pending::<()>().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    let _ = stop_tx.send(true);
}

async fn sync_every_second(engine: Arc<Engine>, mut stop: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = tick.tick() => {
                let e = Arc::clone(&engine);
                match tokio::task::spawn_blocking(move || e.sync_wal()).await {
                    Ok(Ok(())) => {}
                    Ok(Err(err)) => tracing::error!("WAL sync failed: {err}"),
                    Err(err) => tracing::error!("WAL sync task failed: {err}"),
                }
            }
            _ = stop.changed() => return,
        }
    }
}

/// Closes the engine if this is the last reference (it syncs the WAL either way).
fn close_engine(engine: Arc<Engine>) -> Result<()> {
    match Arc::try_unwrap(engine) {
        Ok(engine) => engine.close(),
        Err(shared) => shared.sync_wal(),
    }
}
