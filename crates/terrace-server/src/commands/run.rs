//! Runs: a connection's consecutive commands of three kinds, gathered to be executed
//! together, possibly with other connections' runs:
//! - blind writes (SET without NX, XX, GET or KEEPTTL) become one engine batch: one WAL
//!   record and one group commit for all of them;
//! - GETs become one multi-get, whose memtable searches overlap their cache misses;
//! - collection commands (flag `GROUP`: hashes, sets, sorted sets, non-blocking lists)
//!   run one after another, their writes gathered in one overlay (`pending.rs`) that the
//!   later ones read through, and committed as one engine batch.
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
//! all of a group's writes or none. A group's collection commands run under the stripes
//! of every key its writing commands name, held until their batch has committed, and
//! their replies (and the wake-ups of blocked clients) wait for the commit; if it fails,
//! every one of them answers with its error. The reads of a group run at one point in
//! time, after its writes; a group of many reads is read in chunks by
//! the connection thread and the reader threads (`readers.rs`), at one snapshot. A session gathers one kind at a time and executes its run before any
//! other command of its connection, so each connection's commands take effect in order.

use std::ops::DerefMut;
use std::time::Instant;

use terrace::WriteBatch;

use super::engine::LocalStats;
use super::pending::Pending;
use super::store::{put_value, stripe_of};
use super::strings::SetOptions;
use super::table::{self, CommandSpec, GROUP, WRITE};
use super::{pubsub, Ctx, Engine, Fail, Session, SessionState};
use crate::resp::{ArgList, Protocol, Reply};
use crate::value::now_ms;

/// Most commands one run gathers.
const MAX_RUN_COMMANDS: usize = 1024;
/// Most batch bytes one run of writes gathers (the engine's largest group).
const MAX_RUN_BYTES: usize = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Writes,
    Reads,
    Commands,
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
pub struct Run {
    kind: Option<Kind>,
    protocol: Protocol,
    batch: WriteBatch,
    /// The commands' keys back to back, and where each ends.
    keys: Vec<u8>,
    key_ends: Vec<usize>,
    /// Collection commands: every argument back to back, where each ends, and each
    /// command's spec and number of arguments.
    args: Vec<u8>,
    arg_ends: Vec<usize>,
    commands: Vec<(&'static CommandSpec, usize)>,
    /// The connection's state as its collection commands see it (id, protocol,
    /// statistics, what CLIENT LIST shows), made on first use.
    st: Option<SessionState>,
    /// When the first command was gathered: every command of the run is charged the
    /// time from there to the run's end (one clock read per run, not two per command).
    started: Option<Instant>,
    /// The replies, once executed.
    replies: Vec<u8>,
    /// Hits, misses and latencies of the execution, for the session.
    stats: LocalStats,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("kind", &self.kind)
            .field("commands", &self.len())
            .field("reply_bytes", &self.replies.len())
            .finish_non_exhaustive()
    }
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
            args: Vec::new(),
            arg_ends: Vec::new(),
            commands: Vec::new(),
            st: None,
            started: None,
            replies: Vec::new(),
            stats: LocalStats::default(),
        }
    }

    /// Whether no command is gathered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of commands gathered.
    fn len(&self) -> usize {
        self.key_ends.len() + self.commands.len()
    }

    /// Whether the run holds as much as one run may: execute it before gathering more.
    pub fn is_full(&self) -> bool {
        self.len() >= MAX_RUN_COMMANDS
            || self.batch.approximate_size() >= MAX_RUN_BYTES
            || self.args.len() >= MAX_RUN_BYTES
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
                .record_latency_n(started.elapsed(), self.len() as u64);
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

    /// Each collection command's spec and arguments.
    fn command_args(&self) -> impl Iterator<Item = (&'static CommandSpec, ArgList<'_>)> {
        split_commands(&self.args, &self.arg_ends, &self.commands)
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
            _ => return self.gather_command(args, run),
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

    /// [`Session::gather`] for a command other than GET and SET: a collection command
    /// (flag `GROUP`) with the right number of arguments, outside RESP2's subscribed
    /// mode, joins a run of its kind.
    fn gather_command(&mut self, args: &[&[u8]], run: &mut Run) -> Gathered {
        let Some(spec) = args.first().and_then(|name| table::lookup(name)) else {
            return Gathered::No;
        };
        let subscribed = self
            .st
            .pubsub
            .as_ref()
            .is_some_and(pubsub::Subscriber::active);
        if spec.flags & GROUP == 0 || !spec.arity_ok(args.len()) || subscribed {
            return Gathered::No;
        }
        if run.kind.is_some_and(|k| k != Kind::Commands) {
            return Gathered::OtherKind;
        }
        for a in args {
            run.args.extend_from_slice(a);
            run.arg_ends.push(run.args.len());
        }
        run.commands.push((spec, args.len()));
        run.started.get_or_insert_with(Instant::now);
        let st = run.st.get_or_insert_with(|| self.st.detached());
        st.protocol = self.st.protocol;
        run.kind = Some(Kind::Commands);
        run.protocol = self.st.protocol;
        self.st.stats.count_command();
        Gathered::Added
    }

    /// Takes back an executed run: appends its replies to `out`, adds its statistics to
    /// this session's, and empties it for reuse.
    pub fn take_run(&mut self, run: &mut Run, out: &mut Vec<u8>) {
        out.append(&mut run.replies);
        self.st.stats.absorb(&mut run.stats);
        if let Some(st) = &mut run.st {
            self.st.stats.absorb(&mut st.stats);
        }
        run.kind = None;
        run.batch.clear();
        run.keys.clear();
        run.key_ends.clear();
        run.args.clear();
        run.arg_ends.clear();
        run.commands.clear();
        run.started = None;
    }
}

impl Engine {
    /// Executes runs of one or more connections together: all their writes as one
    /// engine batch, then all their reads as one multi-get. Each run's replies are
    /// ready for [`Session::take_run`] afterwards.
    pub fn execute_runs<R: DerefMut<Target = Run>>(&self, runs: &mut [R]) {
        if runs.iter().any(|r| r.kind == Some(Kind::Writes)) {
            self.commit_runs(runs);
        }
        if runs.iter().any(|r| r.kind == Some(Kind::Commands)) {
            self.run_commands(runs);
        }
        if runs.iter().any(|r| r.kind == Some(Kind::Reads)) {
            self.read_runs(runs);
        }
    }

    fn commit_runs<R: DerefMut<Target = Run>>(&self, runs: &mut [R]) {
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
            store.write(batch, writes().flat_map(|r| r.keys()))
        };
        let reply = result.map_or_else(Fail::into_reply, |()| Reply::Ok);
        for run in runs.iter_mut().filter(|r| r.kind == Some(Kind::Writes)) {
            run.reply_all(&reply);
        }
    }

    /// Runs the collection commands of `runs`, run after run, through one overlay, and
    /// commits their writes as one batch (see the module docs).
    fn run_commands<R: DerefMut<Target = Run>>(&self, runs: &mut [R]) {
        let store = &self.store;
        let mut stripes: Vec<usize> = Vec::new();
        for run in runs.iter().filter(|r| r.kind == Some(Kind::Commands)) {
            for (spec, args) in run.command_args() {
                if spec.flags & WRITE != 0 {
                    let keys = spec.key_positions(args.len()).filter_map(|i| args.get(i));
                    stripes.extend(keys.map(|k| stripe_of(k)));
                }
            }
        }
        stripes.sort_unstable();
        stripes.dedup();
        let now = now_ms();
        let mut pending = Pending::default();
        // Every run's replies back to back, and where each run's end (one vector for
        // the group, not one per run).
        let mut replies: Vec<Reply> = Vec::new();
        let mut ends: Vec<usize> = Vec::with_capacity(runs.len());
        let committed = {
            let _shared = store.exclusive.read();
            let _guards: Vec<_> = stripes
                .iter()
                .filter_map(|&i| store.lock_stripe(i))
                .collect();
            for run in runs.iter_mut() {
                if run.kind == Some(Kind::Commands) {
                    let Run {
                        args,
                        arg_ends,
                        commands,
                        st,
                        ..
                    } = &mut **run;
                    let Some(st) = st.as_mut() else {
                        // Never so (gathering sets it); no replies, and the runs after
                        // it keep their own.
                        ends.push(replies.len());
                        continue;
                    };
                    for (spec, args) in split_commands(args, arg_ends, commands) {
                        let mut ctx = Ctx {
                            engine: self,
                            st,
                            now_ms: now,
                            pending: Some(&mut pending),
                        };
                        let reply = (spec.handler)(&mut ctx, &args);
                        replies.push(reply.unwrap_or_else(Fail::into_reply));
                        st.show(spec.name);
                    }
                }
                ends.push(replies.len());
            }
            if pending.is_empty() {
                Ok(())
            } else {
                store.write(pending.batch(), pending.written())
            }
        };
        let failed = committed.err().map(Fail::into_reply);
        if failed.is_none() {
            pending.pushed().for_each(|k| self.waiters.wake(k));
        }
        let mut start = 0;
        for (run, &end) in runs.iter_mut().zip(&ends) {
            for reply in replies.get(start..end).unwrap_or_default() {
                failed
                    .as_ref()
                    .unwrap_or(reply)
                    .write(run.protocol, &mut run.replies);
            }
            start = end;
            if run.kind == Some(Kind::Commands) {
                run.record_latencies();
            }
        }
    }

    fn read_runs<R: DerefMut<Target = Run>>(&self, runs: &mut [R]) {
        let store = &self.store;
        let now = now_ms();
        let reads = || runs.iter().filter(|r| r.kind == Some(Kind::Reads));
        let keys: Vec<&[u8]> = reads().flat_map(|r| r.keys()).collect();
        let mut values = {
            let _shared = store.exclusive.read();
            if store.readers.splits(keys.len()) {
                // One snapshot for every chunk of a shared read: a run's GETs must not
                // see the store at two points in time, the later one first.
                let snapshot = store.db.snapshot();
                let opts = snapshot.read_options();
                store
                    .readers
                    .read_split(&keys, |chunk| store.get_many_shared_at(chunk, now, &opts))
            } else {
                store.get_many_shared(&keys, now)
            }
        };
        // Each run's replies, in key order across the runs.
        let mut replies: Vec<Reply> = Vec::with_capacity(keys.len());
        let mut found: Vec<bool> = Vec::with_capacity(keys.len());
        for (i, key) in keys.iter().enumerate() {
            let value = match &mut values {
                // Taken, not cloned: a value shares its block's memory, and each clone
                // and drop is an atomic update of the block's count.
                Ok(values) => Ok(values.get_mut(i).and_then(Option::take)),
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
            let run = &mut **run;
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

/// The commands gathered as `args` (every argument back to back), `arg_ends` (where
/// each ends) and `commands` (each one's spec and number of arguments).
fn split_commands<'a>(
    args: &'a [u8],
    arg_ends: &'a [usize],
    commands: &'a [(&'static CommandSpec, usize)],
) -> impl Iterator<Item = (&'static CommandSpec, ArgList<'a>)> {
    let mut ends = arg_ends.iter();
    let mut start = 0;
    commands.iter().map(move |&(spec, argc)| {
        let command = ends
            .by_ref()
            .take(argc)
            .map(|&end| {
                let a = args.get(start..end).unwrap_or_default();
                start = end;
                a
            })
            .collect();
        (spec, command)
    })
}

#[cfg(test)]
mod tests;
