//! The shared server state behind every session.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use terrace::compaction::{ExecutionMode, FilterSpec};
use terrace::storage::{FaultStorage, FsStorage};
use terrace::{Db, Options};
use tokio::sync::watch;

use super::readers::Readers;
use super::scan_cursor::ScanCursors;
use super::store::Store;
use super::{Session, SessionState};
use crate::config::{CompactionMode, Config, Fsync, SetError};
use crate::error::Result;
use crate::fdlimit;
use crate::resp::{Limits, Reply};
use crate::value::{ExpiryFilterFactory, EXPIRY_FILTER};

/// The table cache's size: the engine's default, which [`Engine::open`] keeps.
fn engine_options_max_open_files() -> u64 {
    Options::default().max_open_files as u64
}

/// The server's shared state: the store, runtime configuration, clients and statistics.
/// `Send + Sync`; share it with an `Arc`.
pub struct Engine {
    pub(crate) store: Store,
    pub(crate) config: RwLock<Config>,
    /// Whether `requirepass` is set (read on every command without taking `config`).
    pub(crate) auth_required: AtomicBool,
    /// `proto-max-bulk-len` and `client-query-buffer-limit`, read on every request.
    pub(crate) proto_max_bulk_len: AtomicU64,
    pub(crate) query_buffer_limit: AtomicU64,
    /// `timeout` in seconds (0: never); connections watch it for their idle timers.
    timeout: watch::Sender<u64>,
    /// Open files set aside beside the clients when the server manages the open-files
    /// limit ([`Engine::reserve_open_files`]); 0 when it does not.
    files_reserved: AtomicU64,
    max_args: u64,
    fsync: Fsync,
    pub(crate) stats: EngineStats,
    pub(crate) clients: Mutex<BTreeMap<u64, ClientInfo>>,
    next_client_id: AtomicU64,
    cursors: Mutex<ScanCursors>,
    /// Where active expiry's walk stands.
    pub(crate) active_expiry: super::active_expiry::ActiveExpiry,
    /// Pub/sub subscriptions of every client.
    pub(crate) pubsub: super::pubsub::PubSub,
    /// Clients blocked in BLPOP and the like, by key.
    pub(crate) waiters: super::blocking::Waiters,
    pub(crate) started: Instant,
    /// The fault-injection storage under the engine (`internal_fault_storage`), for the
    /// tests that make its device fail (read only by them).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fault: Option<FaultStorage>,
    /// BOOM's persistent-memory store (`boom_socket`), the engine's external log.
    pub(crate) boom: Option<Arc<terrace_boom::BoomStore>>,
}

/// What CLIENT LIST shows about one connection.
#[derive(Debug, Clone, Default)]
pub(crate) struct ClientInfo {
    pub(crate) addr: String,
    pub(crate) name: String,
    pub(crate) lib_name: String,
    pub(crate) lib_ver: String,
    pub(crate) connected_at: Option<Instant>,
    /// What the session updates as it runs commands, and the kill switch.
    pub(crate) live: Arc<ClientLive>,
}

/// A connection's state as other clients see it (CLIENT LIST, CLIENT KILL): written by
/// its own session after each command, read by others.
#[derive(Debug)]
pub(crate) struct ClientLive {
    /// The last command's name.
    pub(crate) last_cmd: Mutex<&'static str>,
    /// When the last command ran, Unix milliseconds.
    pub(crate) last_active_ms: AtomicU64,
    /// Channel, pattern and shard-channel subscriptions.
    pub(crate) subs: [AtomicU64; 3],
    /// Commands queued in MULTI, or -1 outside MULTI.
    pub(crate) multi: std::sync::atomic::AtomicI64,
    pub(crate) blocked: AtomicBool,
    /// 2 or 3.
    pub(crate) resp: AtomicU64,
    /// The socket's local address and descriptor, as the transport gave them (empty and
    /// -1 for a session with no socket).
    pub(crate) socket: Mutex<(String, i64)>,
    /// Bytes received and not yet executed, and the room left in that buffer, as the
    /// transport last saw them.
    pub(crate) qbuf: AtomicU64,
    pub(crate) qbuf_free: AtomicU64,
    /// Reply bytes not yet written to the socket.
    pub(crate) obl: AtomicU64,
    /// Bytes of the arguments of the commands queued in MULTI.
    pub(crate) multi_mem: AtomicU64,
    /// Set by CLIENT KILL; the transport closes the connection when woken.
    pub(crate) killed: AtomicBool,
    /// Wakes the transport waiting for the client's next request when it must look up:
    /// CLIENT KILL, the server stopping, a new idle timeout
    /// ([`Engine::alert_clients`]). One per client, so that the wait for a request
    /// registers one waiter, on a `Notify` no other client shares.
    pub(crate) attention: tokio::sync::Notify,
}

impl Default for ClientLive {
    fn default() -> Self {
        ClientLive {
            last_cmd: Mutex::new("NULL"),
            last_active_ms: AtomicU64::new(crate::value::now_ms()),
            subs: Default::default(),
            multi: std::sync::atomic::AtomicI64::new(-1),
            blocked: AtomicBool::new(false),
            resp: AtomicU64::new(2),
            socket: Mutex::new((String::new(), -1)),
            qbuf: AtomicU64::new(0),
            qbuf_free: AtomicU64::new(0),
            obl: AtomicU64::new(0),
            multi_mem: AtomicU64::new(0),
            killed: AtomicBool::new(false),
            attention: tokio::sync::Notify::new(),
        }
    }
}

/// Counters for INFO and the metrics endpoint. `Sync`; all relaxed atomics.
#[derive(Debug)]
pub struct EngineStats {
    /// Commands run (including refused ones).
    pub commands: AtomicU64,
    /// Connections accepted.
    pub connections_received: AtomicU64,
    /// Connections refused by maxclients.
    pub rejected_connections: AtomicU64,
    /// Bytes read from clients.
    pub net_input_bytes: AtomicU64,
    /// Bytes written to clients.
    pub net_output_bytes: AtomicU64,
    /// Reads that found a live key.
    pub keyspace_hits: AtomicU64,
    /// Reads that found none.
    pub keyspace_misses: AtomicU64,
    /// Command latency counts per bucket of [`LATENCY_BOUNDS_MICROS`] (the last bucket
    /// counts everything slower).
    latency: [AtomicU64; LATENCY_BUCKETS],
    latency_sum_micros: AtomicU64,
}

/// Upper bounds of the command latency buckets, in microseconds.
pub const LATENCY_BOUNDS_MICROS: [u64; 13] = [
    10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 50_000, 250_000, 1_000_000,
];
const LATENCY_BUCKETS: usize = LATENCY_BOUNDS_MICROS.len() + 1;

impl EngineStats {
    fn new() -> Self {
        EngineStats {
            commands: AtomicU64::new(0),
            connections_received: AtomicU64::new(0),
            rejected_connections: AtomicU64::new(0),
            net_input_bytes: AtomicU64::new(0),
            net_output_bytes: AtomicU64::new(0),
            keyspace_hits: AtomicU64::new(0),
            keyspace_misses: AtomicU64::new(0),
            latency: Default::default(),
            latency_sum_micros: AtomicU64::new(0),
        }
    }

    /// Command latency as a cumulative histogram: `(upper bound in microseconds,
    /// commands at or under it)` per bound of [`LATENCY_BOUNDS_MICROS`], then the total
    /// count and the sum in microseconds.
    pub fn latency_buckets(&self) -> (Vec<(u64, u64)>, u64, u64) {
        let mut cumulative = 0;
        let mut out = Vec::with_capacity(LATENCY_BOUNDS_MICROS.len());
        for (bound, count) in LATENCY_BOUNDS_MICROS.iter().zip(&self.latency) {
            cumulative += count.load(Ordering::Relaxed);
            out.push((*bound, cumulative));
        }
        let total = cumulative + self.latency.last().map_or(0, |c| c.load(Ordering::Relaxed));
        (out, total, self.latency_sum_micros.load(Ordering::Relaxed))
    }
}

/// One session's counts not yet added to [`EngineStats`]: a command updates these plain
/// integers and the session adds them to the shared atomics after a batch of commands
/// (and before any command that is not fast, such as INFO), so that commands on
/// different cores do not contend for the counters' cache lines.
#[derive(Debug, Default)]
pub(crate) struct LocalStats {
    commands: u64,
    net_input_bytes: u64,
    net_output_bytes: u64,
    hits: u64,
    misses: u64,
    latency: [u64; LATENCY_BUCKETS],
    latency_sum_micros: u64,
}

impl LocalStats {
    pub(crate) fn count_command(&mut self) {
        self.commands += 1;
    }

    pub(crate) fn count_net(&mut self, input: usize, output: usize) {
        self.net_input_bytes += input as u64;
        self.net_output_bytes += output as u64;
    }

    pub(crate) fn record_latency(&mut self, d: Duration) {
        self.record_latency_n(d, 1);
    }

    /// Records `n` commands that each took `d`.
    pub(crate) fn record_latency_n(&mut self, d: Duration, n: u64) {
        let micros = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        let bucket = LATENCY_BOUNDS_MICROS
            .iter()
            .position(|&b| micros <= b)
            .unwrap_or(LATENCY_BOUNDS_MICROS.len());
        if let Some(c) = self.latency.get_mut(bucket) {
            *c += n;
        }
        self.latency_sum_micros = self
            .latency_sum_micros
            .saturating_add(micros.saturating_mul(n));
    }

    pub(crate) fn hit(&mut self, found: bool) {
        if found {
            self.hits += 1;
        } else {
            self.misses += 1;
        }
    }

    /// Adds `other`'s counts to these and zeroes `other`.
    pub(crate) fn absorb(&mut self, other: &mut LocalStats) {
        self.commands += other.commands;
        self.net_input_bytes += other.net_input_bytes;
        self.net_output_bytes += other.net_output_bytes;
        self.hits += other.hits;
        self.misses += other.misses;
        for (a, b) in self.latency.iter_mut().zip(other.latency) {
            *a += b;
        }
        self.latency_sum_micros = self
            .latency_sum_micros
            .saturating_add(other.latency_sum_micros);
        *other = LocalStats::default();
    }

    /// Adds the counts to `shared` and zeroes them.
    pub(crate) fn merge_into(&mut self, shared: &EngineStats) {
        let add = |c: &AtomicU64, v: u64| {
            if v != 0 {
                c.fetch_add(v, Ordering::Relaxed);
            }
        };
        add(&shared.commands, self.commands);
        add(&shared.net_input_bytes, self.net_input_bytes);
        add(&shared.net_output_bytes, self.net_output_bytes);
        add(&shared.keyspace_hits, self.hits);
        add(&shared.keyspace_misses, self.misses);
        for (c, v) in shared.latency.iter().zip(self.latency) {
            add(c, v);
        }
        add(&shared.latency_sum_micros, self.latency_sum_micros);
        *self = LocalStats::default();
    }
}

impl Engine {
    /// Opens the database in `config.dir` with the expiry compaction filter.
    ///
    /// # Errors
    /// The engine's open errors.
    pub fn open(config: &Config) -> Result<Arc<Engine>> {
        let mut opts = Options {
            write_buffer_size: config.write_buffer_size,
            block_cache_bytes: config.block_cache_bytes,
            warm_block_cache_on_write: config.warm_block_cache,
            target_file_size_base: config.target_file_size_base,
            // The server times each command itself (the metrics endpoint's latency
            // histogram) and never reads the engine's timings, which would add four
            // clock reads and two locked histogram updates to a collection write.
            latency_stats: false,
            compaction_filter: Some(FilterSpec {
                name: EXPIRY_FILTER.to_string(),
                params: String::new(),
            }),
            ..Options::default()
        };
        let filter = Arc::new(ExpiryFilterFactory::default());
        opts.compaction_filter_factories.push(filter.clone());
        opts.compaction_executor = match config.compaction_mode {
            CompactionMode::Linear => ExecutionMode::Linear,
            CompactionMode::Pipelined => ExecutionMode::Pipelined,
            CompactionMode::Auto => ExecutionMode::Auto(config.compaction_decision),
        }
        .executor();
        opts.compaction_workers
            .clone_from(&config.compaction_workers);
        if !config.volumes.is_empty() {
            opts.volumes = config.volumes.iter().map(|v| v.path.clone()).collect();
            // Volume 0 (the database directory) counted, the others limited as configured.
            opts.volume_limits = std::iter::once(terrace::storage::ThrottleLimits::default())
                .chain(config.volumes.iter().map(|v| v.limits()))
                .collect();
        }
        opts.level_volumes.clone_from(&config.level_volumes);
        opts.placement_policy = config.placement;
        opts.migration = config.migration;
        let fault = config
            .internal_fault_storage
            .then(|| FaultStorage::new(Arc::new(FsStorage::new())));
        if let Some(f) = &fault {
            opts.storage = Arc::new(f.clone());
        }
        let boom = match &config.boom_socket {
            Some(_) => {
                let boom_dir = config
                    .boom_dir
                    .clone()
                    .unwrap_or_else(|| config.dir.join("boom"));
                let store = terrace_boom::BoomStore::open_with_codec(
                    &boom_dir,
                    terrace_boom::StoreConfig {
                        segment_bytes: config.boom_segment_bytes,
                        segments: config.boom_segments,
                    },
                    Arc::new(crate::net::boom::RespStrings),
                )
                .map_err(terrace::Error::from)?;
                opts.external_log = Some(store.clone());
                Some(store)
            }
            None => None,
        };
        // The reader threads also help insert a large write group into the memtable.
        let readers = Arc::new(Readers::new(config.reader_threads()));
        if config.reader_threads() > 0 {
            opts.memtable_insert_helpers = Some(readers.clone());
        }
        let db = Db::open(&config.dir, opts)?;
        filter.set_reader(db.reader());
        Ok(Arc::new(Engine {
            store: Store::new(
                db,
                config.fsync == Fsync::Always,
                config.keyspace_count,
                config.keyspace_count_cache_bytes,
                readers,
            )?,
            config: RwLock::new(config.clone()),
            auth_required: AtomicBool::new(!config.requirepass.is_empty()),
            proto_max_bulk_len: AtomicU64::new(config.proto_max_bulk_len),
            query_buffer_limit: AtomicU64::new(config.client_query_buffer_limit),
            timeout: watch::Sender::new(config.timeout),
            files_reserved: AtomicU64::new(0),
            max_args: config.max_args,
            fsync: config.fsync,
            stats: EngineStats::new(),
            clients: Mutex::new(BTreeMap::new()),
            next_client_id: AtomicU64::new(1),
            cursors: Mutex::new(ScanCursors::default()),
            active_expiry: super::active_expiry::ActiveExpiry::default(),
            pubsub: super::pubsub::PubSub::default(),
            waiters: super::blocking::Waiters::default(),
            started: Instant::now(),
            fault,
            boom,
        }))
    }

    /// A new client session, or the error reply to send when `maxclients` are connected.
    ///
    /// # Errors
    /// `-ERR max number of clients reached` as a reply value.
    pub fn connect(self: &Arc<Self>, addr: String) -> std::result::Result<Session, Reply> {
        let max = self.config.read().maxclients;
        let mut clients = self.clients.lock();
        if clients.len() as u64 >= max {
            self.stats
                .rejected_connections
                .fetch_add(1, Ordering::Relaxed);
            return Err(Reply::err("max number of clients reached"));
        }
        self.stats
            .connections_received
            .fetch_add(1, Ordering::Relaxed);
        let id = self.next_client_id.fetch_add(1, Ordering::Relaxed);
        let live = Arc::new(ClientLive::default());
        clients.insert(
            id,
            ClientInfo {
                addr,
                connected_at: Some(Instant::now()),
                live: live.clone(),
                ..ClientInfo::default()
            },
        );
        Ok(Session {
            engine: Arc::clone(self),
            st: SessionState::new(id, live),
        })
    }

    pub(crate) fn disconnect(&self, id: u64) {
        self.clients.lock().remove(&id);
    }

    /// Connected clients.
    pub fn client_count(&self) -> usize {
        self.clients.lock().len()
    }

    pub(crate) fn requires_auth(&self) -> bool {
        self.auth_required.load(Ordering::Relaxed)
    }

    /// The request parser's limits from the current configuration.
    pub fn limits(&self) -> Limits {
        Limits {
            proto_max_bulk_len: self.proto_max_bulk_len.load(Ordering::Relaxed),
            max_args: self.max_args,
            ..Limits::default()
        }
    }

    /// Most bytes one client may have buffered.
    pub fn query_buffer_limit(&self) -> u64 {
        self.query_buffer_limit.load(Ordering::Relaxed)
    }

    /// Wakes every connected client's transport from its wait for a request, so that it
    /// looks again at what can end the wait: the server stopping, its kill switch, the
    /// idle timeout.
    pub fn alert_clients(&self) {
        for c in self.clients.lock().values() {
            c.live.attention.notify_one();
        }
    }

    /// The idle timeout in seconds (0: never), as a receiver that sees every change.
    pub fn watch_timeout(&self) -> watch::Receiver<u64> {
        self.timeout.subscribe()
    }

    /// Open files the engine and the server may keep open besides clients' sockets:
    /// [`fdlimit::RESERVED_FDS`], the table cache's `max_open_files`, and the network
    /// threads' event descriptors.
    pub fn open_files_reserve(network_threads: usize) -> u64 {
        fdlimit::RESERVED_FDS
            + engine_options_max_open_files()
            + fdlimit::FDS_PER_NETWORK_THREAD * network_threads as u64
    }

    /// Makes CONFIG SET maxclients check the open-files limit: a value needing more than
    /// `reserve` + maxclients files is refused unless the soft limit can be raised.
    pub fn reserve_open_files(&self, reserve: u64) {
        self.files_reserved.store(reserve, Ordering::Relaxed);
    }

    /// CONFIG SET: applies every `(parameter, value)` pair, or none. Each takes effect at
    /// once for every connection (docs/formats/resp.md, "CONFIG").
    ///
    /// # Errors
    /// [`SetError`] for the first pair refused; nothing changed then.
    pub fn config_set(&self, pairs: &[(&[u8], &[u8])]) -> std::result::Result<(), SetError> {
        let mut config = self.config.write();
        let mut next = config.clone();
        let mut changed: Vec<String> = Vec::with_capacity(pairs.len());
        for (name, value) in pairs {
            let name = String::from_utf8_lossy(name).to_ascii_lowercase();
            if changed.contains(&name) {
                return Err(SetError::Duplicate(name));
            }
            next.set(&name, value)?;
            changed.push(name);
        }
        next.check_set(&changed)?;
        let reserve = self.files_reserved.load(Ordering::Relaxed);
        if reserve != 0 && next.maxclients > config.maxclients {
            let room = fdlimit::make_room(next.maxclients, reserve);
            if room.clients < next.maxclients {
                return Err(SetError::Invalid {
                    name: "maxclients".to_string(),
                    reason: format!(
                        "the open-files limit (ulimit -n) is {} and {reserve} files are kept \
                         for the engine, which leaves room for at most {} clients",
                        room.soft_limit, room.clients
                    ),
                });
            }
        }
        self.auth_required
            .store(!next.requirepass.is_empty(), Ordering::Relaxed);
        self.proto_max_bulk_len
            .store(next.proto_max_bulk_len, Ordering::Relaxed);
        self.query_buffer_limit
            .store(next.client_query_buffer_limit, Ordering::Relaxed);
        if next.timeout != config.timeout {
            self.timeout.send_replace(next.timeout);
            // Clients waiting for a request restart their idle timers with it.
            self.alert_clients();
        }
        *config = next;
        Ok(())
    }

    /// The WAL sync policy.
    pub fn fsync(&self) -> Fsync {
        self.fsync
    }

    /// The engine database (for statistics).
    pub fn db(&self) -> &Db {
        &self.store.db
    }

    /// Syncs the WAL (the `everysec` policy's tick).
    ///
    /// # Errors
    /// The engine's sync error.
    pub fn sync_wal(&self) -> Result<()> {
        Ok(self.store.db.sync_wal()?)
    }

    /// Closes the database (stops background work, syncs the WAL).
    ///
    /// # Errors
    /// The engine's close error.
    pub fn close(self) -> Result<()> {
        Ok(self.store.db.close()?)
    }

    /// The keys and the keys with an expiry (DBSIZE, INFO keyspace): the kept count, or
    /// a walk of the keys when it is not kept (`keyspace_count = false`).
    pub(crate) fn key_counts(&self, now_ms: u64) -> std::result::Result<(u64, u64), super::Fail> {
        let counts = &self.store.counts;
        if counts.enabled() {
            return Ok((counts.keys(), counts.expiring()));
        }
        let (mut keys, mut expires) = (0u64, 0u64);
        self.store.for_each_from(b"", now_ms, |_, v| {
            keys += 1;
            expires += u64::from(v.expire_at_ms().is_some());
            true
        })?;
        Ok((keys, expires))
    }

    /// Remembers where a SCAN stopped; returns the cursor to hand the client.
    pub(crate) fn save_cursor(&self, next_key: Vec<u8>) -> u64 {
        self.cursors.lock().save(next_key)
    }

    /// The key cursor `id` resumes at (see `scan_cursor`).
    pub(crate) fn cursor(&self, id: u64) -> Vec<u8> {
        self.cursors.lock().resume_key(id)
    }
}
