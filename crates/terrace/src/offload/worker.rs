//! The compaction worker: accepts connections, checks each client's shared secret, then
//! runs the tasks it is sent on the table files of its directories and answers with their
//! results. It holds no database state: no manifest, no log, nothing between tasks.
//!
//! Owns: the accept loops, the handshake and the limit on tasks run at once.
//! Must not touch: anything but the directories it was given.

use std::collections::{HashSet, VecDeque};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use super::frame::{Frame, FrameType};
use crate::compaction::{
    CompactionExecutor, CompactionFilterFactory, CompactionTask, ExecutionMode, ExecutorEnv,
    FilterRegistry, FinishedOutput, ProgressSink,
};
use crate::error::{Error, Result};
use crate::storage::{FsStorage, Storage, ThrottleLimits, ThrottledStorage};
use crate::tables::Tables;

/// How a worker is set up (`terrace compactd`'s flags).
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// The database directory as this worker sees it (volume 0).
    pub dir: PathBuf,
    /// Further volumes, in the database's order (volume `i` is `volumes[i - 1]`).
    pub volumes: Vec<PathBuf>,
    /// What a client must present in its first frame.
    pub secret: String,
    /// Tasks run at once; further tasks wait.
    pub threads: usize,
    /// How tasks run here: in turn, as a read / merge / write pipeline, or chosen per
    /// task by the decision component (from this process's CPUs, memory and the task's
    /// value sizes).
    pub mode: ExecutionMode,
    /// Bytes per second this worker may read and write of its directories together
    /// (0: unlimited): the device's own path to the data, throttled as the database's
    /// table tier is (`storage::ThrottledStorage`).
    pub rate_limit: u64,
}

/// A compaction worker; see the module documentation.
pub struct Worker {
    config: WorkerConfig,
    storage: Arc<dyn Storage>,
    tables: Tables,
    filters: FilterRegistry,
    executor: Arc<dyn CompactionExecutor>,
    running: Mutex<usize>,
    slot_free: Condvar,
    /// The first reserved output number of each task taken recently (each (sub)task's
    /// numbers are its own): a task frame seen again is a replay and is refused.
    taken: Mutex<RecentTasks>,
}

/// A bounded set of recent task identities, oldest forgotten first.
#[derive(Default)]
struct RecentTasks {
    order: VecDeque<u64>,
    set: HashSet<u64>,
}

/// Task identities remembered for replay refusal: far more than a database has in flight.
const RECENT_TASKS: usize = 4096;

impl RecentTasks {
    /// Records `id`; false if it was already there.
    fn insert(&mut self, id: u64) -> bool {
        if !self.set.insert(id) {
            return false;
        }
        self.order.push_back(id);
        if self.order.len() > RECENT_TASKS {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
        true
    }
}

impl Worker {
    /// A worker over `config`'s directories.
    pub fn new(config: WorkerConfig) -> Worker {
        let fs: Arc<dyn Storage> = Arc::new(FsStorage::new());
        let storage: Arc<dyn Storage> = if config.rate_limit > 0 {
            let limits = ThrottleLimits::bandwidth(config.rate_limit);
            let rules = std::iter::once(&config.dir)
                .chain(config.volumes.iter())
                .map(|d| (d.clone(), limits))
                .collect();
            Arc::new(ThrottledStorage::new(fs, rules))
        } else {
            fs
        };
        let tables = Tables::new(
            storage.clone(),
            &config.dir,
            config.volumes.clone(),
            256,
            None,
        );
        Worker {
            executor: config.mode.executor(),
            config,
            storage,
            tables,
            filters: FilterRegistry::new(),
            running: Mutex::new(0),
            slot_free: Condvar::new(),
            taken: Mutex::new(RecentTasks::default()),
        }
    }

    /// Makes a compaction filter available to the tasks this worker runs, as
    /// `Options::compaction_filter_factories` does for a database: a task names its
    /// filter, and a worker without it refuses the task (the host then runs it).
    pub fn register_filter(&self, factory: Arc<dyn CompactionFilterFactory>) {
        self.filters.register(factory);
    }

    /// Serves TCP connections until the listener fails, each on its own thread.
    ///
    /// # Errors
    /// An accept error.
    pub fn serve_tcp(self: &Arc<Self>, listener: &TcpListener) -> Result<()> {
        loop {
            let (stream, peer) = listener.accept().map_err(|e| Error::io("accept", e))?;
            let _ = stream.set_nodelay(true);
            self.spawn_connection(stream, peer.to_string());
        }
    }

    /// Serves Unix-socket connections until the listener fails, each on its own thread.
    ///
    /// # Errors
    /// An accept error.
    pub fn serve_unix(self: &Arc<Self>, listener: &UnixListener) -> Result<()> {
        loop {
            let (stream, _) = listener.accept().map_err(|e| Error::io("accept", e))?;
            self.spawn_connection(stream, "unix client".to_string());
        }
    }

    fn spawn_connection<S: Read + Write + Send + 'static>(
        self: &Arc<Self>,
        stream: S,
        peer: String,
    ) {
        let worker = self.clone();
        std::thread::spawn(move || {
            if let Err(e) = worker.serve_connection(stream, &peer) {
                tracing::debug!(peer, error = %e, "compaction client connection ended");
            }
        });
    }

    /// Serves one connection: the handshake, then tasks until the client hangs up. A bad
    /// secret or a damaged frame ends the connection (after an `Error` frame where one
    /// can still be sent); a task that fails is answered with an `Error` frame.
    ///
    /// # Errors
    /// The reason the connection ended, other than the client closing it.
    pub fn serve_connection<S: Read + Write + Send>(
        &self,
        mut stream: S,
        peer: &str,
    ) -> Result<()> {
        let hello = Frame::read_from(&mut stream, peer)?;
        if hello.kind != FrameType::Hello || !same_secret(&hello.payload, &self.config.secret) {
            let refusal = Frame::new(FrameType::Error, b"authentication failed".to_vec());
            let _ = refusal.write_to(&mut stream, peer);
            return Err(Error::InvalidArgument(format!(
                "{peer}: authentication failed"
            )));
        }
        let about = serde_json::json!({
            "threads": self.config.threads,
            "mode": self.executor.name(),
        });
        Frame::new(FrameType::Welcome, about.to_string().into_bytes())
            .write_to(&mut stream, peer)?;
        loop {
            let frame = match Frame::read_from(&mut stream, peer) {
                Ok(f) => f,
                Err(Error::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::UnexpectedEof =>
                {
                    return Ok(());
                }
                Err(e) => {
                    let msg = Frame::new(FrameType::Error, e.to_string().into_bytes());
                    let _ = msg.write_to(&mut stream, peer);
                    return Err(e);
                }
            };
            let reply = match frame.kind {
                FrameType::Task => {
                    let sink = FrameSink {
                        stream: Mutex::new(&mut stream),
                        peer,
                    };
                    self.run_task(&frame.payload, &sink)
                }
                other => Err(Error::InvalidArgument(format!(
                    "unexpected {other:?} frame"
                ))),
            };
            let reply = match reply.map(|bytes| Frame::new(FrameType::Result, bytes)) {
                Ok(f) => f,
                Err(e) => Frame::new(FrameType::Error, e.to_string().into_bytes()),
            };
            reply.write_to(&mut stream, peer)?;
        }
    }

    /// Runs one encoded task and returns its encoded result.
    fn run_task(&self, payload: &[u8], progress: &dyn ProgressSink) -> Result<Vec<u8>> {
        let task = CompactionTask::decode(payload)?;
        if task.level0.is_some() {
            return Err(Error::Unsupported(
                "level-0 columns run on the database's host".into(),
            ));
        }
        // Running a task twice would write its numbers twice, perhaps over outputs the
        // database has installed by then.
        if let Some(&first) = task.output.file_numbers.first() {
            if !self.taken.lock().insert(first) {
                return Err(Error::InvalidArgument(format!(
                    "task {} (output {first}) was already taken: a replayed frame",
                    task.id
                )));
            }
        }
        let _slot = self.take_slot();
        let env = ExecutorEnv {
            storage: self.storage.as_ref(),
            tables: &self.tables,
            filters: &self.filters,
            level0: None,
            progress: Some(progress),
        };
        let result = self.executor.execute(&task, &env);
        // Inputs are deleted by the database once the result is installed: forget them.
        for f in task.input_files() {
            self.tables.evict(f.number);
        }
        let result = result?;
        tracing::info!(
            task = task.id,
            read_bytes = result.stats.input_bytes,
            written_bytes = result.stats.output_bytes,
            outputs = result.outputs.len(),
            micros = result.stats.elapsed_micros,
            "compaction task done"
        );
        result.encode()
    }

    fn take_slot(&self) -> Slot<'_> {
        let mut running = self.running.lock();
        while *running >= self.config.threads.max(1) {
            self.slot_free.wait(&mut running);
        }
        *running += 1;
        Slot(self)
    }
}

/// One of the worker's task slots, given back on drop.
struct Slot<'a>(&'a Worker);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        *self.0.running.lock() -= 1;
        self.0.slot_free.notify_one();
    }
}

/// Compares a presented secret with the configured one in constant time.
fn same_secret(presented: &[u8], secret: &str) -> bool {
    use subtle::ConstantTimeEq;
    presented.ct_eq(secret.as_bytes()).into()
}

/// Sends each finished output to the client as a `Progress` frame. A frame that cannot be
/// sent is dropped: the client that stopped listening no longer needs it, and the task's
/// answer reports the failure.
struct FrameSink<'a, S> {
    stream: Mutex<&'a mut S>,
    peer: &'a str,
}

impl<S: Write + Send> ProgressSink for FrameSink<'_, S> {
    fn finished(&self, output: &FinishedOutput) {
        let Ok(payload) = serde_json::to_vec(output) else {
            return;
        };
        let mut stream = self.stream.lock();
        let _ = Frame::new(FrameType::Progress, payload).write_to(&mut **stream, self.peer);
    }
}
