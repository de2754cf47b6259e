//! Shards: the threads that run connections. Each has its own single-threaded tokio
//! runtime, its own connections and its own group (`group.rs`), so that a connection's
//! reads, commands, group execution and replies never leave its thread: no wake-up
//! crosses threads on the way from a request to its reply. The engine is shared.
//!
//! Owns: the shard threads and the hand-over of accepted sockets.
//! Must not touch: accepting (the acceptor on the main runtime does) or command semantics.
//! Concurrency: the acceptor sends each accepted socket to the next shard in turn over a
//! channel; the shard registers it with its own runtime. [`Shards::finish`] closes the
//! channels: each shard lets its connections finish (they watch the stop signal), stops
//! its committer and exits, and `finish` waits for the threads.

use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use super::connection;
use super::group::Group;
use crate::commands::Engine;
use crate::error::Result;

/// An accepted socket and its peer address.
type Accepted = (std::net::TcpStream, String);

/// The running shards.
pub(super) struct Shards {
    senders: Vec<mpsc::UnboundedSender<Accepted>>,
    threads: Vec<JoinHandle<()>>,
    next: usize,
}

impl Shards {
    /// Starts `n` shards (at least one) serving `engine`.
    ///
    /// # Errors
    /// Failure to build a runtime or start a thread.
    pub(super) fn start(
        n: usize,
        engine: &Arc<Engine>,
        stop_tx: &watch::Sender<bool>,
        stop_rx: &watch::Receiver<bool>,
    ) -> Result<Shards> {
        let mut shards = Shards {
            senders: Vec::new(),
            threads: Vec::new(),
            next: 0,
        };
        for i in 0..n.max(1) {
            let (tx, rx) = mpsc::unbounded_channel();
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let (engine, stop_tx, stop_rx) = (Arc::clone(engine), stop_tx.clone(), stop_rx.clone());
            let thread = std::thread::Builder::new()
                .name(format!("terrace-net-{i}"))
                .spawn(move || rt.block_on(run_shard(engine, rx, stop_tx, stop_rx)))?;
            shards.senders.push(tx);
            shards.threads.push(thread);
        }
        Ok(shards)
    }

    /// Gives `stream` to the next shard in turn.
    pub(super) fn hand_over(&mut self, stream: TcpStream, addr: String) {
        let stream = match stream.into_std() {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("cannot hand over a connection: {e}");
                return;
            }
        };
        self.next = (self.next + 1) % self.senders.len().max(1);
        if let Some(tx) = self.senders.get(self.next) {
            // A shard that has exited drops the socket, which closes it.
            let _ = tx.send((stream, addr));
        }
    }

    /// Lets every shard finish its connections, then waits for the threads.
    pub(super) async fn finish(self) {
        drop(self.senders);
        let threads = self.threads;
        let _ = tokio::task::spawn_blocking(move || {
            for t in threads {
                if t.join().is_err() {
                    tracing::error!("a network thread panicked");
                }
            }
        })
        .await;
    }
}

async fn run_shard(
    engine: Arc<Engine>,
    mut accepted: mpsc::UnboundedReceiver<Accepted>,
    stop_tx: watch::Sender<bool>,
    stop_rx: watch::Receiver<bool>,
) {
    let group = Arc::new(Group::default());
    let committer = tokio::spawn(Arc::clone(&group).commit_loop(Arc::clone(&engine)));
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            next = accepted.recv() => {
                let Some((stream, addr)) = next else { break };
                match TcpStream::from_std(stream) {
                    Ok(stream) => {
                        connections.spawn(connection::handle(
                            Arc::clone(&engine),
                            Arc::clone(&group),
                            stream,
                            addr,
                            stop_tx.clone(),
                            stop_rx.clone(),
                        ));
                    }
                    Err(e) => tracing::warn!("cannot register a connection: {e}"),
                }
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    // Every connection finishes the commands it has read, replies, and closes.
    while connections.join_next().await.is_some() {}
    group.close();
    let _ = committer.await;
}
