//! The executor that sends tasks to a compaction worker (`terrace compactd`) and brings
//! back their results. Its trust is `Remote`: the database reads every output it reports
//! before installing it, and runs the task itself when the worker fails, hangs past the
//! deadline, answers with an error or with a result that does not check out.
//!
//! Owns: connections to one worker (a pool, one per task in flight) and the deadline.
//! Must not touch: the install (the database's) or the worker's side.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use parking_lot::Mutex;

use super::frame::{Frame, FrameType};
use crate::compaction::{
    CompactionExecutor, CompactionResult, CompactionTask, ExecutorEnv, FinishedOutput, Trust,
};
use crate::error::{Error, Result};

/// Where a worker listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkerAddr {
    /// A TCP address, `host:port`.
    Tcp(String),
    /// A Unix socket's path.
    Unix(PathBuf),
}

impl WorkerAddr {
    /// `unix:PATH` or `host:port`.
    pub fn parse(s: &str) -> WorkerAddr {
        match s.strip_prefix("unix:") {
            Some(path) => WorkerAddr::Unix(PathBuf::from(path)),
            None => WorkerAddr::Tcp(s.to_string()),
        }
    }
}

impl std::fmt::Display for WorkerAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorkerAddr::Tcp(a) => write!(f, "{a}"),
            WorkerAddr::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

trait Conn: Read + Write + Send {}
impl<T: Read + Write + Send> Conn for T {}

/// Sends compaction tasks to one worker; see the module documentation.
pub struct RemoteExecutor {
    addr: WorkerAddr,
    name: String,
    secret: String,
    deadline: Duration,
    idle: Mutex<Vec<Box<dyn Conn>>>,
}

impl RemoteExecutor {
    /// An executor for the worker at `addr`, presenting `secret`; a task that takes longer
    /// than `deadline` (or a connection that stalls that long) is given up on and runs on
    /// the host.
    pub fn new(addr: WorkerAddr, secret: impl Into<String>, deadline: Duration) -> Self {
        RemoteExecutor {
            name: format!("remote {addr}"),
            addr,
            secret: secret.into(),
            deadline,
            idle: Mutex::new(Vec::new()),
        }
    }

    fn peer(&self) -> String {
        self.addr.to_string()
    }

    /// A connection that has passed the handshake: an idle one or a new one.
    fn connection(&self) -> Result<Box<dyn Conn>> {
        if let Some(c) = self.idle.lock().pop() {
            return Ok(c);
        }
        let peer = self.peer();
        let io = |e| Error::io(&peer, e);
        let timeout = Some(self.deadline);
        let mut conn: Box<dyn Conn> = match &self.addr {
            WorkerAddr::Tcp(a) => {
                let s = TcpStream::connect(a).map_err(io)?;
                s.set_read_timeout(timeout).map_err(io)?;
                s.set_write_timeout(timeout).map_err(io)?;
                let _ = s.set_nodelay(true);
                Box::new(s)
            }
            WorkerAddr::Unix(p) => {
                let s = UnixStream::connect(p).map_err(io)?;
                s.set_read_timeout(timeout).map_err(io)?;
                s.set_write_timeout(timeout).map_err(io)?;
                Box::new(s)
            }
        };
        Frame::new(FrameType::Hello, self.secret.clone().into_bytes())
            .write_to(&mut conn, &peer)?;
        let reply = Frame::read_from(&mut conn, &peer)?;
        match reply.kind {
            FrameType::Welcome => Ok(conn),
            _ => Err(Error::InvalidArgument(format!(
                "worker {peer} refused the connection: {}",
                String::from_utf8_lossy(&reply.payload)
            ))),
        }
    }
}

impl CompactionExecutor for RemoteExecutor {
    fn name(&self) -> &str {
        &self.name
    }

    fn trust(&self) -> Trust {
        Trust::Remote
    }

    fn execute(&self, task: &CompactionTask, env: &ExecutorEnv<'_>) -> Result<CompactionResult> {
        if task.level0.is_some() {
            return Err(Error::Unsupported(
                "level-0 columns run on the database's host".into(),
            ));
        }
        let peer = self.peer();
        let mut conn = self.connection()?;
        Frame::new(FrameType::Task, task.encode()?).write_to(&mut conn, &peer)?;
        // A connection that fails or times out mid-task is dropped, never reused. The
        // deadline is per frame: a worker that keeps reporting finished outputs is alive.
        let reply = loop {
            let frame = Frame::read_from(&mut conn, &peer)?;
            if frame.kind != FrameType::Progress {
                break frame;
            }
            let output: FinishedOutput = serde_json::from_slice(&frame.payload).map_err(|e| {
                Error::corruption(&peer, 0, format!("a progress frame that is not JSON: {e}"))
            })?;
            if let Some(progress) = env.progress {
                progress.finished(&output);
            }
        };
        match reply.kind {
            FrameType::Result => {
                let mut result = CompactionResult::decode(&reply.payload)?;
                self.idle.lock().push(conn);
                // The worker's runs were on its side, whatever it calls them.
                for run in &mut result.runs {
                    run.unit.clone_from(&self.name);
                }
                Ok(result)
            }
            FrameType::Error => {
                self.idle.lock().push(conn);
                Err(Error::Unsupported(format!(
                    "worker {peer}: {}",
                    String::from_utf8_lossy(&reply.payload)
                )))
            }
            other => Err(Error::corruption(
                &peer,
                0,
                format!("a {other:?} frame where a result was due"),
            )),
        }
    }
}
