//! Runs: a connection's consecutive commands of the two commonest kinds, gathered to be
//! executed together, possibly with other connections' runs:
//! - blind writes (SET without NX, XX, GET or KEEPTTL) become one engine batch: one WAL
//!   record and one group commit for all of them;
//! - GETs become one multi-get, whose memtable searches overlap their cache misses.
//!
//! Owns: [`Run`] (the gathered commands, owned, and their replies once executed) and
//! [`Engine::execute_runs`].
//! Must not touch: sockets or framing; a run's replies are bytes in its connection's
//! protocol, handed back in request order, a write's only after its batch has committed
//! (and, with `--fsync always`, been synced), so the transport never sends a reply
//! before its write is durable to the policy's level.
//! Concurrency: a `Run` is a plain value (`Send`), built by one session and executed by
//! whichever task executes its group. The writes of a group commit under what a
//! multi-key write command holds (the store's `exclusive` lock shared, the stripes of
//! all their keys locked in index order), so read-modify-write commands and EXEC see
//! all of a group's writes or none. The reads of a group run at one point in time, after
//! its writes; a group of many reads ([`PARALLEL_READS`]) reads half of its keys on a
//! scoped second thread, at one snapshot. A session gathers one kind at a time and executes its run before any
//! other command of its connection, so each connection's commands take effect in order.

use std::time::Instant;

use bytes::Bytes;
use terrace::WriteBatch;

use super::engine::LocalStats;
use super::store::{put_value, stripe_of, Store};
use super::strings::SetOptions;
use super::{Engine, Fail, Session};
use crate::resp::{Protocol, Reply};
use crate::value::now_ms;

/// Most commands one run gathers.
const MAX_RUN_COMMANDS: usize = 1024;
/// Most batch bytes one run of writes gathers (the engine's largest group).
const MAX_RUN_BYTES: usize = 1 << 20;
/// Groups reading at least this many keys read half of them on a second thread: enough
/// work (a few hundred microseconds) to be worth starting one.
const PARALLEL_READS: usize = 128;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Writes,
    Reads,
}

/// What [`Session::gather`] did with a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gathered {
    /// Added to the run (execute the run when it [`Run::is_full`] or input runs out).
    Added,
    /// Of the other kind than the run's: execute the run, then gather the command again.
    OtherKind,
    /// Not a command runs take: execute the run, then the command on its own.
    No,
}

/// A connection's gathered commands; see the module docs. Reuse it: it keeps its
/// buffers.
#[derive(Debug)]
pub struct Run {
    kind: Option<Kind>,
    protocol: Protocol,
    batch: WriteBatch,
    /// The commands' keys back to back, and where each ends.
    keys: Vec<u8>,
    key_ends: Vec<usize>,
    /// When the first command was gathered: every command of the run is charged the
    /// time from there to the run's end (one clock read per run, not two per command).
    started: Option<Instant>,
    /// The replies, once executed.
    replies: Vec<u8>,
    /// Hits, misses and latencies of the execution, for the session.
    stats: LocalStats,
}

impl Default for Run {
    fn default() -> Self {
        Run::new()
    }
}

impl Run {
    /// An empty run.
    pub fn new() -> Run {
        Run {
            kind: None,
            protocol: Protocol::Resp2,
            batch: WriteBatch::new(),
            keys: Vec::new(),
            key_ends: Vec::new(),
            started: None,
            replies: Vec::new(),
            stats: LocalStats::default(),
        }
    }

    /// Whether no command is gathered.
    pub fn is_empty(&self) -> bool {
        self.key_ends.is_empty()
    }

    /// Whether the run holds as much as one run may: execute it before gathering more.
    pub fn is_full(&self) -> bool {
        self.key_ends.len() >= MAX_RUN_COMMANDS || self.batch.approximate_size() >= MAX_RUN_BYTES
    }

    fn push_key(&mut self, key: &[u8]) {
        self.keys.extend_from_slice(key);
        self.key_ends.push(self.keys.len());
        self.started.get_or_insert_with(Instant::now);
    }

    /// Records every command's latency: from the first gathered to now.
    fn record_latencies(&mut self) {
        if let Some(started) = self.started {
            self.stats
                .record_latency_n(started.elapsed(), self.key_ends.len() as u64);
        }
    }

    fn keys(&self) -> impl Iterator<Item = &[u8]> {
        let mut start = 0;
        self.key_ends.iter().map(move |&end| {
            let k = self.keys.get(start..end).unwrap_or_default();
            start = end;
            k
        })
    }

    /// Writes `reply` for each command, in the run's protocol.
    fn reply_all(&mut self, reply: &Reply) {
        for _ in &self.key_ends {
            reply.write(self.protocol, &mut self.replies);
        }
        self.record_latencies();
    }
}

impl Session {
    /// Adds `args` to `run` if it is a command runs take, of the run's kind, that would
    /// run now (not queued by MULTI, authenticated). See [`Gathered`].
    pub fn gather(&mut self, args: &[&[u8]], run: &mut Run) -> Gathered {
        let st = &self.st;
        if st.multi.is_some() || (!st.authenticated && self.engine.requires_auth()) {
            return Gathered::No;
        }
        let kind = match args {
            [name, _] if name.eq_ignore_ascii_case(b"get") => Kind::Reads,
            [name, _, _, ..] if name.eq_ignore_ascii_case(b"set") => Kind::Writes,
            _ => return Gathered::No,
        };
        if run.kind.is_some_and(|k| k != kind) {
            return Gathered::OtherKind;
        }
        match (kind, args) {
            (Kind::Reads, [_, key]) => run.push_key(key),
            (Kind::Writes, [_, key, value, options @ ..]) => {
                let expire = if options.is_empty() {
                    None
                } else {
                    // A SET whose options fail to parse runs on its own, to report it.
                    match SetOptions::parse(args, now_ms()) {
                        Ok(o) if o.is_blind() => o.expire,
                        _ => return Gathered::No,
                    }
                };
                put_value(&mut run.batch, key, expire, value);
                run.push_key(key);
            }
            _ => return Gathered::No,
        }
        run.kind = Some(kind);
        run.protocol = self.st.protocol;
        self.st.stats.count_command();
        Gathered::Added
    }

    /// Takes back an executed run: appends its replies to `out`, adds its statistics to
    /// this session's, and empties it for reuse.
    pub fn take_run(&mut self, run: &mut Run, out: &mut Vec<u8>) {
        out.append(&mut run.replies);
        self.st.stats.absorb(&mut run.stats);
        run.kind = None;
        run.batch.clear();
        run.keys.clear();
        run.key_ends.clear();
        run.started = None;
    }
}

impl Engine {
    /// Executes runs of one or more connections together: all their writes as one
    /// engine batch, then all their reads as one multi-get. Each run's replies are
    /// ready for [`Session::take_run`] afterwards.
    pub fn execute_runs(&self, runs: &mut [Run]) {
        if runs.iter().any(|r| r.kind == Some(Kind::Writes)) {
            self.commit_runs(runs);
        }
        if runs.iter().any(|r| r.kind == Some(Kind::Reads)) {
            self.read_runs(runs);
        }
    }

    fn commit_runs(&self, runs: &mut [Run]) {
        let store = &self.store;
        let writes = || runs.iter().filter(|r| r.kind == Some(Kind::Writes));
        let mut stripes: Vec<usize> = writes().flat_map(|r| r.keys().map(stripe_of)).collect();
        stripes.sort_unstable();
        stripes.dedup();
        let result = {
            let _shared = store.exclusive.read();
            let _guards: Vec<_> = stripes
                .iter()
                .filter_map(|&i| store.lock_stripe(i))
                .collect();
            let mut batch =
                WriteBatch::with_capacity(writes().map(|r| r.batch.approximate_size()).sum());
            writes().for_each(|r| batch.append(&r.batch));
            store.write(batch, writes().flat_map(Run::keys))
        };
        let reply = result.map_or_else(Fail::into_reply, |()| Reply::Ok);
        for run in runs.iter_mut().filter(|r| r.kind == Some(Kind::Writes)) {
            run.reply_all(&reply);
        }
    }

    fn read_runs(&self, runs: &mut [Run]) {
        let store = &self.store;
        let now = now_ms();
        let reads = || runs.iter().filter(|r| r.kind == Some(Kind::Reads));
        let keys: Vec<&[u8]> = reads().flat_map(Run::keys).collect();
        let values = {
            let _shared = store.exclusive.read();
            if keys.len() >= PARALLEL_READS {
                read_in_two(store, &keys, now)
            } else {
                store.get_many_shared(&keys, now)
            }
        };
        // Each run's replies, in key order across the runs.
        let mut replies: Vec<Reply> = Vec::with_capacity(keys.len());
        let mut found: Vec<bool> = Vec::with_capacity(keys.len());
        for (i, key) in keys.iter().enumerate() {
            let value = match &values {
                Ok(values) => Ok(values.get(i).cloned().flatten()),
                // Some read failed: each key again on its own, for its own reply.
                Err(_) => {
                    let _shared = store.exclusive.read();
                    store.get_shared(key, now).map(|v| v.map(|(_, data)| data))
                }
            };
            found.push(matches!(value, Ok(Some(_))));
            replies.push(match value {
                Ok(v) => Reply::bulk_or_nil(v),
                Err(fail) => fail.into_reply(),
            });
        }
        drop(keys);
        let mut next = replies.into_iter().zip(found);
        for run in runs.iter_mut().filter(|r| r.kind == Some(Kind::Reads)) {
            for (_, (reply, hit)) in run.key_ends.iter().zip(next.by_ref()) {
                if !matches!(reply, Reply::Error(_)) {
                    run.stats.hit(hit);
                }
                reply.write(run.protocol, &mut run.replies);
            }
            run.record_latencies();
        }
    }
}

/// Reads `keys` at one snapshot, half on this thread and half on a scoped helper thread.
fn read_in_two(store: &Store, keys: &[&[u8]], now: u64) -> Result<Vec<Option<Bytes>>, Fail> {
    // One snapshot for both halves: a run's GETs must not see the store at two points in
    // time, the later one first.
    let snapshot = store.db.snapshot();
    let opts = snapshot.read_options();
    let (first, second) = keys.split_at(keys.len() / 2);
    std::thread::scope(|scope| {
        let helper = scope.spawn(|| store.get_many_shared_at(second, now, &opts));
        let mut values = store.get_many_shared_at(first, now, &opts)?;
        let rest = helper
            .join()
            .map_err(|_| Fail::err("a read thread failed"))??;
        values.extend(rest);
        Ok(values)
    })
}

#[cfg(test)]
mod tests;
