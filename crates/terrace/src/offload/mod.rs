//! Compaction offload: compaction tasks run in a worker process next to the data (the
//! stand-in for a near-data device, docs/techniques/copro.md), reached over a framed
//! protocol on TCP or a Unix socket (docs/formats/compaction-frame.md).
//!
//! Owns: the frame (`frame`), the worker that serves tasks (`worker`, run by `terrace
//! compactd`), the executor that sends them (`remote::RemoteExecutor`) and the settings
//! that join workers to a database (`config::CompactionWorkers`).
//! Must not touch: the database; a worker knows only task descriptions and the table files
//! in the directories it shares with the database, and the database checks every result it
//! gets back (`compaction::checked_edit`) before installing anything.
//! Concurrency: a worker serves each connection on its own thread and runs at most its
//! configured number of tasks at once; a `RemoteExecutor` keeps a pool of connections, one
//! per task in flight.

pub mod config;
pub mod frame;
pub mod remote;
pub mod worker;

pub use config::{CompactionWorkers, Share};
pub use frame::{Frame, FrameType};
pub use remote::{RemoteExecutor, WorkerAddr};
pub use worker::{Worker, WorkerConfig};
