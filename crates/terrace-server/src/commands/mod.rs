//! Command execution: the command table and every command's semantics, against the
//! engine, independent of RESP framing and of the transport.
//!
//! Owns: [`Engine`] (the store, runtime configuration, clients, statistics) and
//! [`Session`] (one client's state: protocol, authentication, MULTI queue, WATCHed keys).
//! Must not touch: sockets or byte framing; a transport feeds argument vectors to
//! [`Session::execute`] and writes the [`Reply`] it returns, or gathers a connection's
//! consecutive SETs and GETs into a [`Run`] ([`Session::gather`]) that
//! [`Engine::execute_runs`] executes with other connections' runs, and runs the other
//! commands with [`Session::execute_into`].
//! Concurrency: `Engine` is `Send + Sync` and shared by every session. Every command holds
//! the store's `exclusive` lock shared (EXEC and FLUSHDB hold it exclusively, which makes
//! transactions atomic and isolated); write commands also lock the stripes of their keys,
//! so read-modify-write commands never lose updates; a group of runs commits its
//! writes under the stripes of all their keys. No lock is held across I/O waits of the
//! transport: commands and run executions are synchronous. Statistics are counted per session and added to
//! the shared counters after each batch of commands.

mod active_expiry;
mod arg;
mod blocking;
mod collection;
mod engine;
mod expiry;
mod glob;
mod hashes;
mod info;
mod key_states;
mod keycount;
mod keyspace;
mod lists;
mod mpop;
mod pending;
mod pubsub;
mod readers;
mod run;
mod scan_cursor;
mod server;
mod sets;
mod store;
mod strings;
mod table;
mod txn;
mod zsets;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

pub use active_expiry::{ExpireStep, CYCLE_EVERY as ACTIVE_EXPIRE_EVERY};
use engine::LocalStats;
pub use engine::{Engine, EngineStats};
pub use run::{Gathered, Run};
use table::{CommandSpec, EXCLUSIVE, FAST, NOAUTH, NOQUEUE, WRITE};

use crate::resp::{Limits, Protocol, Reply};
use crate::value::{now_ms, ValueError};

/// What the transport must do after sending a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Close this connection (QUIT).
    Close,
    /// Stop the server gracefully (SHUTDOWN).
    Shutdown,
    /// A blocking command (BLPOP, ...) found nothing: wait with
    /// [`Session::wait_blocked`], which gives its reply.
    Block,
}

/// Resolves when another client kills this one (CLIENT KILL): the transport then closes
/// the connection.
#[derive(Debug, Clone)]
pub struct KillSwitch(Arc<engine::ClientLive>);

impl KillSwitch {
    /// Waits until the connection is killed.
    pub async fn killed(&self) {
        loop {
            if self.is_killed() {
                return;
            }
            self.0.attention.notified().await;
        }
    }

    /// Whether another client has killed this one.
    pub fn is_killed(&self) -> bool {
        self.0.killed.load(Ordering::Acquire)
    }

    /// Resolves when the transport must look up from its wait for a request: the client
    /// was killed, the server is stopping, or the idle timeout changed
    /// ([`Engine::alert_clients`]). A wake-up that came while nobody waited is kept for
    /// the next wait.
    pub async fn attention(&self) {
        self.0.attention.notified().await;
    }
}

/// One client's state. `Send`, not shared: one transport task owns it.
pub struct Session {
    engine: Arc<Engine>,
    st: SessionState,
}

pub(crate) struct SessionState {
    pub(crate) id: u64,
    pub(crate) protocol: Protocol,
    pub(crate) authenticated: bool,
    /// Queued commands while in MULTI.
    pub(crate) multi: Option<Vec<Vec<Vec<u8>>>>,
    /// A command was refused while queueing: EXEC aborts.
    pub(crate) multi_error: bool,
    pub(crate) watched: Vec<Vec<u8>>,
    /// The earliest expiry among the watched keys when they were watched: once it has
    /// passed, a watched key expired, which aborts EXEC as in Redis.
    pub(crate) watch_deadline: Option<u64>,
    /// Set by the store when a watched key is written.
    pub(crate) dirty: Arc<AtomicBool>,
    pub(crate) action: Option<Action>,
    /// Counts not yet added to the engine's statistics.
    pub(crate) stats: LocalStats,
    /// Pub/sub subscriptions and the mailbox, from the first SUBSCRIBE on.
    pub(crate) pubsub: Option<pubsub::Subscriber>,
    /// Whether the command running may block (a client's own command; not one inside
    /// EXEC, not a blocked command tried again).
    pub(crate) may_block: bool,
    /// The blocking command waiting for a push, if any.
    pub(crate) blocked: Option<blocking::Blocked>,
    /// What CLIENT LIST shows of this session, and CLIENT KILL's switch.
    pub(crate) live: Arc<engine::ClientLive>,
}

/// What a command handler sees.
pub(crate) struct Ctx<'a> {
    pub(crate) engine: &'a Engine,
    pub(crate) st: &'a mut SessionState,
    pub(crate) now_ms: u64,
    /// The uncommitted writes of the group this command runs in, if it runs in one
    /// (`pending.rs`): read and write through `Ctx`'s accessors, never the store.
    pub(crate) pending: Option<&'a mut pending::Pending>,
}

/// A command's failure: an error reply, an engine error or a value this server cannot read.
#[derive(Debug)]
pub(crate) enum Fail {
    Reply(Reply),
    Engine(terrace::Error),
}

impl From<terrace::Error> for Fail {
    fn from(e: terrace::Error) -> Self {
        Fail::Engine(e)
    }
}

impl From<Fail> for crate::Error {
    fn from(f: Fail) -> Self {
        match f {
            Fail::Engine(e) => crate::Error::Engine(e),
            Fail::Reply(Reply::Error(text)) => crate::Error::Data(text),
            Fail::Reply(other) => crate::Error::Data(format!("{other:?}")),
        }
    }
}

impl Fail {
    pub(crate) fn err(text: impl std::fmt::Display) -> Fail {
        Fail::Reply(Reply::err(text))
    }
    pub(crate) fn syntax() -> Fail {
        Fail::err("syntax error")
    }
    pub(crate) fn not_integer() -> Fail {
        Fail::err("value is not an integer or out of range")
    }
    pub(crate) fn wrongtype() -> Fail {
        Fail::Reply(Reply::Error(
            "WRONGTYPE Operation against a key holding the wrong kind of value".into(),
        ))
    }
    pub(crate) fn corrupt(key: &[u8], e: ValueError) -> Fail {
        if let ValueError::NotAString(_) = e {
            return Fail::wrongtype();
        }
        Fail::err(format!(
            "stored value of key {:?} is unreadable: {e}",
            String::from_utf8_lossy(key)
        ))
    }
    fn into_reply(self) -> Reply {
        match self {
            Fail::Reply(r) => r,
            Fail::Engine(e) => Reply::err(format!("engine: {e}")),
        }
    }
}

/// The result of a command handler.
pub(crate) type CmdResult = Result<Reply, Fail>;

impl Session {
    /// This client's id (CLIENT ID).
    pub fn id(&self) -> u64 {
        self.st.id
    }

    /// The protocol replies must be written in.
    pub fn protocol(&self) -> Protocol {
        self.st.protocol
    }

    /// The request parser's limits for this client's next request: the configured ones,
    /// narrowed to [`Limits::unauthenticated`] while a password is required and the
    /// client has not given it (so an unauthenticated client cannot make the server
    /// buffer a large request).
    pub fn limits(&self) -> Limits {
        let limits = self.engine.limits();
        if !self.st.authenticated && self.engine.requires_auth() {
            limits.unauthenticated()
        } else {
            limits
        }
    }

    /// What the transport must do after the last reply, if anything.
    pub fn take_action(&mut self) -> Option<Action> {
        self.st.action.take()
    }

    /// Runs one command; `None` for an empty command, which gets no reply.
    pub fn execute(&mut self, args: &[&[u8]]) -> Option<Reply> {
        let reply = execute(&self.engine, &mut self.st, args);
        self.st.stats.merge_into(&self.engine.stats);
        reply
    }

    /// Runs one command and appends its reply to `out` in the session's protocol. An
    /// empty command gets no reply, nor does a SHUTDOWN that stops the server: check
    /// [`Session::take_action`] after each command. Execute any gathered [`Run`] first.
    pub fn execute_into(&mut self, args: &[&[u8]], out: &mut Vec<u8>) {
        self.st.may_block = true;
        let reply = execute(&self.engine, &mut self.st, args);
        self.st.may_block = false;
        if self.st.blocked.is_some() {
            // No reply yet: the transport waits (`wait_blocked`).
            self.st.action = Some(Action::Block);
            return;
        }
        // Redis closes the connection without a reply to a successful SHUTDOWN.
        if self.st.action != Some(Action::Shutdown) {
            if let Some(reply) = reply {
                reply.write(self.st.protocol, out);
            }
        }
    }

    /// Waits for the blocking command that left the last [`Action::Block`] to find
    /// something (woken by pushes to its keys) or time out, and returns its reply.
    /// Cancel-safe: dropped before it finishes, it leaves the command waiting, and the
    /// next call goes on.
    pub async fn wait_blocked(&mut self) -> Reply {
        loop {
            let Some(b) = self.st.blocked.as_ref() else {
                return Reply::Nil;
            };
            let (notify, deadline) = (b.notify.clone(), b.deadline);
            self.engine.waiters.register(&b.keys, self.st.id, &notify);
            let args: Vec<Vec<u8>> = b.args.clone();
            let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
            let timeout_reply = b.timeout_reply.clone();
            // Tried again without blocking: its nil means still nothing.
            let reply = execute(&self.engine, &mut self.st, &refs).unwrap_or(Reply::Nil);
            let timed_out = deadline.is_some_and(|d| tokio::time::Instant::now() >= d);
            if reply != timeout_reply || timed_out {
                if let Some(b) = self.st.blocked.take() {
                    self.engine.waiters.unregister(&b.keys, self.st.id);
                }
                self.st.live.blocked.store(false, Ordering::Relaxed);
                self.st.stats.merge_into(&self.engine.stats);
                return reply;
            }
            match deadline {
                Some(d) => {
                    tokio::select! {
                        () = notify.notified() => {}
                        () = tokio::time::sleep_until(d) => {}
                    }
                }
                None => notify.notified().await,
            }
        }
    }

    /// The next pub/sub message for this client: never, while it subscribes to nothing;
    /// `None` when it let its mailbox overflow (close the connection).
    pub async fn next_message(&mut self) -> Option<pubsub::Message> {
        match self.st.pubsub.as_mut() {
            Some(sub) => sub.next().await,
            None => std::future::pending().await,
        }
    }

    /// Tells CLIENT LIST the connection's local address and socket descriptor.
    pub fn note_socket(&self, laddr: String, fd: i64) {
        *self.st.live.socket.lock() = (laddr, fd);
    }

    /// Tells CLIENT LIST the connection's buffers: `qbuf` bytes received and not yet
    /// executed, `qbuf_free` bytes of room after them, `pending` reply bytes not yet
    /// written.
    pub fn note_buffers(&self, qbuf: usize, qbuf_free: usize, pending: usize) {
        let live = &self.st.live;
        live.qbuf.store(qbuf as u64, Ordering::Relaxed);
        live.qbuf_free.store(qbuf_free as u64, Ordering::Relaxed);
        live.obl.store(pending as u64, Ordering::Relaxed);
    }

    /// What resolves when another client kills this one (CLIENT KILL).
    pub fn kill_switch(&self) -> KillSwitch {
        KillSwitch(self.st.live.clone())
    }

    /// Counts `bytes` read from the client (INFO's `total_net_input_bytes`).
    pub fn count_input(&mut self, bytes: usize) {
        self.st.stats.count_net(bytes, 0);
    }

    /// Counts `bytes` written to the client (INFO's `total_net_output_bytes`).
    pub fn count_output(&mut self, bytes: usize) {
        self.st.stats.count_net(0, bytes);
    }

    /// Adds this session's statistics to the engine's (after a batch of commands).
    pub fn publish_stats(&mut self) {
        self.st.stats.merge_into(&self.engine.stats);
    }
}

impl SessionState {
    fn flag_multi_error(&mut self) {
        if self.multi.is_some() {
            self.multi_error = true;
        }
    }
}

/// Runs one command for `st`: the checks every command passes (known name, arity,
/// authentication, MULTI queueing), then its handler under its locks.
fn execute(engine: &Engine, st: &mut SessionState, args: &[&[u8]]) -> Option<Reply> {
    let name = args.first()?;
    st.stats.count_command();
    let Some(spec) = table::lookup(name) else {
        st.flag_multi_error();
        return Some(Reply::err(unknown_command(args)));
    };
    if !spec.arity_ok(args.len()) {
        st.flag_multi_error();
        return Some(Reply::err(format!(
            "wrong number of arguments for '{}' command",
            spec.name
        )));
    }
    // RESP2's subscribed mode: a connection that subscribes takes only the pub/sub
    // commands, PING (answered as a push) and QUIT (RESP3 takes every command).
    if st.protocol == Protocol::Resp2 && st.pubsub.as_ref().is_some_and(pubsub::Subscriber::active)
    {
        if !pubsub::allowed_while_subscribed(spec.name) {
            return Some(Reply::err(format!(
                "Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
                spec.name
            )));
        }
        if spec.name == "ping" {
            let payload = args.get(1).map_or(Vec::new(), |a| a.to_vec());
            return Some(Reply::Push(vec![
                Reply::Bulk(b"pong".to_vec().into()),
                Reply::Bulk(payload.into()),
            ]));
        }
    }
    if !st.authenticated && spec.flags & NOAUTH == 0 && engine.requires_auth() {
        st.flag_multi_error();
        return Some(Reply::Error("NOAUTH Authentication required.".to_string()));
    }
    if let Some(queue) = &mut st.multi {
        if spec.flags & NOQUEUE == 0 {
            queue.push(args.iter().map(|a| a.to_vec()).collect());
            st.show(spec.name);
            return Some(Reply::Status("QUEUED".to_string()));
        }
    }
    if spec.flags & FAST == 0 {
        // Slow commands (INFO among them) see this session's counts so far.
        st.stats.merge_into(&engine.stats);
    }
    let started = Instant::now();
    let reply = run(engine, st, spec, args);
    st.stats.record_latency(started.elapsed());
    st.show(spec.name);
    Some(reply)
}

impl SessionState {
    /// A new client's state: RESP2, not authenticated, nothing queued, watched,
    /// subscribed or blocked.
    pub(crate) fn new(id: u64, live: Arc<engine::ClientLive>) -> SessionState {
        SessionState {
            id,
            protocol: Protocol::Resp2,
            authenticated: false,
            multi: None,
            multi_error: false,
            watched: Vec::new(),
            watch_deadline: None,
            dirty: Arc::new(AtomicBool::new(false)),
            action: None,
            stats: LocalStats::default(),
            pubsub: None,
            may_block: false,
            blocked: None,
            live,
        }
    }

    /// This session as its commands run in a group see it (`run.rs`): the same id,
    /// protocol and CLIENT LIST entry; authenticated (only such sessions gather);
    /// nothing queued, watched, subscribed or blocked; its own statistics, handed back
    /// with the run.
    pub(crate) fn detached(&self) -> SessionState {
        SessionState {
            protocol: self.protocol,
            authenticated: true,
            ..SessionState::new(self.id, Arc::clone(&self.live))
        }
    }

    /// Updates what CLIENT LIST shows of this session after running `command`.
    fn show(&self, command: &'static str) {
        let live = &self.live;
        *live.last_cmd.lock() = command;
        live.last_active_ms.store(now_ms(), Ordering::Relaxed);
        live.multi.store(
            self.multi.as_ref().map_or(-1, |q| q.len() as i64),
            Ordering::Relaxed,
        );
        let multi_mem: usize = self.multi.as_ref().map_or(0, |q| {
            q.iter()
                .map(|args| args.iter().map(Vec::len).sum::<usize>())
                .sum()
        });
        live.multi_mem.store(multi_mem as u64, Ordering::Relaxed);
        let (c, p, s) = self
            .pubsub
            .as_ref()
            .map_or((0, 0, 0), pubsub::Subscriber::counts);
        for (slot, n) in live.subs.iter().zip([c, p, s]) {
            slot.store(n, Ordering::Relaxed);
        }
        let resp = if self.protocol == Protocol::Resp3 {
            3
        } else {
            2
        };
        live.resp.store(resp, Ordering::Relaxed);
        live.blocked
            .store(self.blocked.is_some(), Ordering::Relaxed);
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(b) = &self.st.blocked {
            self.engine.waiters.unregister(&b.keys, self.st.id);
        }
        if let Some(sub) = &self.st.pubsub {
            self.engine.pubsub.forget(self.st.id, sub);
        }
        self.st.stats.merge_into(&self.engine.stats);
        self.engine.store.unwatch(&self.st.watched, &self.st.dirty);
        self.engine.disconnect(self.st.id);
    }
}

/// Runs `spec` under the locks its flags ask for.
fn run(engine: &Engine, st: &mut SessionState, spec: &CommandSpec, args: &[&[u8]]) -> Reply {
    let mut ctx = Ctx {
        engine,
        st,
        now_ms: now_ms(),
        pending: None,
    };
    let result = if spec.flags & EXCLUSIVE != 0 {
        let _all = engine.store.exclusive.write();
        (spec.handler)(&mut ctx, args)
    } else {
        let _shared = engine.store.exclusive.read();
        let _keys = if spec.flags & WRITE != 0 {
            engine.store.lock_keys(
                spec.key_positions(args.len())
                    .filter_map(|i| args.get(i))
                    .copied(),
            )
        } else {
            Vec::new()
        };
        (spec.handler)(&mut ctx, args)
    };
    result.unwrap_or_else(Fail::into_reply)
}

/// Runs a command with no locking: the caller (EXEC) holds the store exclusively.
pub(crate) fn run_locked(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> Reply {
    match table::lookup(args.first().copied().unwrap_or_default()) {
        Some(spec) => (spec.handler)(ctx, args).unwrap_or_else(Fail::into_reply),
        None => Reply::err(unknown_command(args)),
    }
}

fn unknown_command(args: &[&[u8]]) -> String {
    let name = args
        .first()
        .map(|a| String::from_utf8_lossy(a))
        .unwrap_or_default();
    let mut rest = String::new();
    for a in args.iter().skip(1) {
        let a = String::from_utf8_lossy(a);
        if rest.len() + a.len() > 128 {
            break;
        }
        rest.push_str(&format!("'{a}' "));
    }
    format!("unknown command '{name}', with args beginning with: {rest}")
}

/// The session's dirty flag, for WATCH.
pub(crate) fn is_dirty(st: &SessionState) -> bool {
    st.dirty.load(Ordering::Acquire)
}

#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod tests;
