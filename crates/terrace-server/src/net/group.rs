//! Groups: the runs of several connections (see [`crate::commands::Run`]) executed
//! together by one committer task, so that one WAL record and one memtable batch serve
//! every connection whose SETs arrived in the same turn of the scheduler, and one
//! multi-get every connection's GETs.
//!
//! Owns: the queue of submitted runs and the committer that executes them.
//! Must not touch: command semantics (`commands` executes the runs).
//! Concurrency: a group serves one shard (`shard.rs`): its connections submit and await
//! their run's return on the shard's thread. The committer, woken by a submission,
//! first yields once, so that the connections the scheduler has ready add theirs, then
//! takes every queued run and executes them as one group, synchronously on the thread
//! (with `--fsync always` the sync blocks the thread, as Redis's `appendfsync always`
//! does), and hands each run back. Each run is returned exactly once; if the committer
//! is gone, a submission returns `None`.

use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::{oneshot, Notify};

use crate::commands::{Engine, Run};

/// A run travels boxed: it is moved into the queue, out to the committer and back, and
/// a pointer moves where the run itself (several hundred bytes) would be copied.
type Queued = (Box<Run>, oneshot::Sender<Box<Run>>);

/// Runs waiting for the committer, and its wake-up.
#[derive(Default)]
pub(super) struct Group {
    queue: Mutex<Queue>,
    notify: Notify,
}

#[derive(Default)]
struct Queue {
    runs: Vec<Queued>,
    /// No more submissions; the committer ends once the queue is empty.
    closed: bool,
}

impl Group {
    /// Executes `run` with whatever other runs are submitted meanwhile; returns it with
    /// its replies, or `None` once the group is closed.
    pub(super) async fn execute(&self, run: Box<Run>) -> Option<Box<Run>> {
        let (tx, rx) = oneshot::channel();
        {
            let mut q = self.queue.lock();
            if q.closed {
                return None;
            }
            q.runs.push((run, tx));
        }
        self.notify.notify_one();
        rx.await.ok()
    }

    /// Stops the committer once it has executed every run already submitted.
    pub(super) fn close(&self) {
        self.queue.lock().closed = true;
        self.notify.notify_one();
    }

    /// The committer: executes queued runs until [`Group::close`].
    pub(super) async fn commit_loop(self: Arc<Self>, engine: Arc<Engine>) {
        let mut queued: Vec<Queued> = Vec::new();
        let mut runs: Vec<Box<Run>> = Vec::new();
        let mut senders: Vec<oneshot::Sender<Box<Run>>> = Vec::new();
        loop {
            let idle = {
                let q = self.queue.lock();
                if q.runs.is_empty() && q.closed {
                    return;
                }
                q.runs.is_empty()
            };
            if idle {
                // A submission between the check and here left a permit: no lost wake-up.
                self.notify.notified().await;
                continue;
            }
            // Let the connections that are ready join this group.
            tokio::task::yield_now().await;
            std::mem::swap(&mut self.queue.lock().runs, &mut queued);
            for (run, tx) in queued.drain(..) {
                runs.push(run);
                senders.push(tx);
            }
            engine.execute_runs(&mut runs);
            for (run, tx) in runs.drain(..).zip(senders.drain(..)) {
                // A connection that went away no longer wants its replies.
                let _ = tx.send(run);
            }
        }
    }
}
