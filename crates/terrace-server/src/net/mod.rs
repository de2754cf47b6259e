//! The TCP transport: the listener, the shard threads that run connections, pipelining,
//! maxclients (clamped to the open-files limit at start, `fdlimit`), idle timeouts,
//! protected mode, the `everysec` WAL sync, and graceful shutdown on
//! SIGTERM/SIGINT or SHUTDOWN.
//!
//! Owns: sockets, the tokio runtimes, the shutdown sequence.
//! Must not touch: command semantics (`commands`) or framing rules (`resp`).
//! Concurrency: the main thread's runtime accepts, handles signals, serves metrics and
//! runs the `everysec` sync; each accepted socket goes to one of `--threads` shards
//! (`shard`; half the cores by default), a thread with its own single-threaded runtime,
//! its connections (one task each) and one group committer (`group`). A connection
//! parses the commands of one read, their arguments borrowed from the read buffer;
//! consecutive SETs and GETs are gathered into a [`crate::commands::Run`] that its
//! shard's group executes together with the runs of the shard's other ready
//! connections, any other command runs at once on the shard's thread. A connection's
//! replies stay in request order and go out in one write. Shutdown: stop accepting, let
//! every connection finish the commands it has already read, close the engine (which
//! syncs the WAL), return.

pub(crate) mod boom;
mod connection;
mod group;
pub(crate) mod metrics;
mod shard;

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::commands::{Engine, ACTIVE_EXPIRE_EVERY};
use crate::config::{Config, Fsync, ServeArgs};
use crate::error::{Error, Result};
use crate::fdlimit;
use shard::Shards;

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
        // The reader threads as they would run here, not left out when unset.
        let shown = Config {
            reader_threads: Some(config.reader_threads()),
            ..config
        };
        write!(out, "{}", shown.to_toml()?)?;
        return Ok(());
    }
    config.validate()?;
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(serve(config, out))
}

/// Serves `config` until SIGTERM, SIGINT or SHUTDOWN: accepts, signals, metrics and the
/// `everysec` sync on the current tokio runtime, connections on the shard threads.
///
/// # Errors
/// As [`serve_command`].
pub async fn serve(mut config: Config, out: &mut dyn Write) -> Result<()> {
    let threads = config.network_threads();
    let reserve = Engine::open_files_reserve(threads);
    let room = fdlimit::make_room(config.maxclients, reserve);
    config.maxclients = clamp_maxclients(config.maxclients, room, reserve)?;
    let engine = Engine::open(&config)?;
    engine.reserve_open_files(reserve);
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
        let metrics = TcpListener::bind((config.metrics_bind.as_str(), config.metrics_port))
            .await
            .map_err(|e| {
                Error::Config(format!(
                    "cannot serve metrics on {}:{}: {e}",
                    config.metrics_bind, config.metrics_port
                ))
            })?;
        writeln!(out, "metrics on {}", metrics.local_addr()?)?;
        background.spawn(metrics::serve(
            Arc::clone(&engine),
            metrics,
            stop_rx.clone(),
        ));
    }
    background.spawn(expire_actively(Arc::clone(&engine), stop_rx.clone()));
    if config.fsync == Fsync::Everysec {
        background.spawn(sync_every_second(Arc::clone(&engine), stop_rx.clone()));
    }
    let mut shards = Shards::start(threads, &engine, &stop_tx, &stop_rx)?;
    let boom = boom::Boom::start(&engine)?;
    if let Some(b) = &boom {
        writeln!(out, "boom on {}", b.socket().display())?;
        if let Some(addr) = b.tcp_addr() {
            writeln!(out, "boom tcp on {addr}")?;
        }
    }
    writeln!(out, "listening on {}", listener.local_addr()?)?;
    out.flush()?;
    accept_loop(&mut shards, &listener, &stop_tx, stop_rx).await;
    drop(listener);
    // Connections waiting for a request look up, see the stop and end.
    engine.alert_clients();
    if let Some(b) = boom {
        b.stop();
    }
    shards.finish().await;
    while background.join_next().await.is_some() {}
    close_engine(engine)
}

/// The maxclients that fits the open-files limit `room` leaves beside `reserve` files;
/// warns on stderr when it is below the configured one.
///
/// # Errors
/// `Error::Config` when the limit leaves room for no client at all.
fn clamp_maxclients(maxclients: u64, room: fdlimit::Room, reserve: u64) -> Result<u64> {
    if room.clients == 0 {
        return Err(Error::Config(format!(
            "the open-files limit (ulimit -n) is {} and cannot be raised, but the engine and \
             server may keep {reserve} files open: no room for clients; raise the limit",
            room.soft_limit
        )));
    }
    if room.clients < maxclients {
        let warning = format!(
            "maxclients lowered from {maxclients} to {}: the open-files limit (ulimit -n) is {} \
             and cannot be raised further, and {reserve} files are kept for the engine and \
             server",
            room.clients, room.soft_limit
        );
        eprintln!("warning: {warning}");
        tracing::warn!("{warning}");
        return Ok(room.clients);
    }
    Ok(maxclients)
}

async fn accept_loop(
    shards: &mut Shards,
    listener: &TcpListener,
    stop_tx: &watch::Sender<bool>,
    mut stop_rx: watch::Receiver<bool>,
) {
    let signals = wait_for_signal(stop_tx.clone());
    tokio::pin!(signals);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, addr)) => {
                    let _ = stream.set_nodelay(true);
                    shards.hand_over(stream, addr.to_string());
                }
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            () = &mut signals => {}
            _ = stop_rx.changed() => {}
        }
        if *stop_rx.borrow() {
            break;
        }
    }
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

/// Runs an active expiry cycle every [`ACTIVE_EXPIRE_EVERY`] (`commands::active_expiry`).
async fn expire_actively(engine: Arc<Engine>, mut stop: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(ACTIVE_EXPIRE_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {
                let e = Arc::clone(&engine);
                match tokio::task::spawn_blocking(move || e.expire_cycle()).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(err)) => tracing::error!("active expiry failed: {err}"),
                    Err(err) => tracing::error!("active expiry task failed: {err}"),
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
