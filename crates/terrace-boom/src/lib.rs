//! BOOM for Terrace: a one-round-trip persistent-memory protocol (after "BOOM-KV: an
//! RDMA-enabled high-performance NVM key-value store", Li, Jiang, Xiong and Bao) whose
//! client log segments are the storage engine's own log for the writes in them.
//!
//! A client is handed a segment of the server's persistent-memory region, appends its
//! entries (key, value, lengths, checksum) to it directly, and rings a doorbell with the
//! entry's offset; the server checks the entry, writes it to the engine through
//! `Db::write_external` (which stamps its version, the write's sequence number), persists
//! a commit record and count in its own metadata file before the write is visible, and
//! answers with the version. The entry itself is never copied into another durable log.
//!
//! Modules: [`layout`] (the byte layouts), [`proto`] (the doorbell messages), [`shm`]
//! (the shared mapping, the only `unsafe`), [`store`] (the server's segments, commits,
//! replay and release), [`server`] (connections: handshake, PUT, GET), [`client`] (the
//! client's side).
//! docs/formats/boom.md has the layouts, docs/techniques/boom.md what differs from the
//! paper and what the emulation does not show.

pub mod client;
pub mod error;
pub mod layout;
pub mod proto;
pub mod ring;
pub mod server;
pub mod shm;
pub mod store;

pub use client::{BoomClient, ClientOptions, Mode, SpaceUse, Verbs};
pub use error::{BoomError, Result};
pub use server::{BoomServer, ServerConfig};
pub use store::{BoomStore, DbHandle, RawValues, SegmentGrant, StoreConfig, ValueCodec};
