//! Pipelined execution: a transport hands over a connection's commands one at a time, as
//! they parse, and runs of the two commonest commands are executed together:
//! - consecutive blind writes (SET without NX, XX, GET or KEEPTTL) become one engine
//!   batch: one WAL record and one group commit instead of one per command;
//! - consecutive GETs become one multi-get, whose memtable searches overlap their cache
//!   misses.
//!
//! Owns: the pending run, the locks it holds and its deferred replies.
//! Must not touch: sockets or framing; replies are appended to the caller's buffer in
//! request order, a deferred write's reply only after its batch has committed (and, with
//! `--fsync always`, been synced), so the transport never sends a reply before its write
//! is durable to the policy's level.
//! Concurrency: while writes are pending the pipeline holds what a multi-key write
//! command holds: the store's `exclusive` lock shared and the stripes of the keys. Other
//! connections' read-modify-write commands and EXEC therefore see all of a batch or none
//! of it, and a batch commits before this connection runs anything else. Only the first
//! stripe is waited for; later ones are tried, and a busy one commits the batch first,
//! so stripes are never waited for out of order (no deadlock with commands that lock
//! several stripes in index order). Pending reads hold nothing: they run when the run
//! ends, before this connection's next command, as one read at one point in time (which
//! a run of GETs with nothing of this connection's in between may be).

use std::time::Instant;

use parking_lot::{MutexGuard, RwLockReadGuard};
use terrace::WriteBatch;

use super::store::{put_value, stripe_of};
use super::strings::SetOptions;
use super::{execute, Action, Engine, Fail, SessionState};
use crate::resp::{Protocol, Reply};
use crate::value::now_ms;

/// Most commands one run gathers before it is executed.
const MAX_PENDING: usize = 1024;
/// Most batch bytes gathered before a commit (the engine's largest group).
const MAX_PENDING_BYTES: usize = 1 << 20;
/// Words of a bit set over the store's stripes.
const STRIPE_WORDS: usize = super::store::STRIPES.div_ceil(64);

/// A session executing a connection's pipelined commands; see the module docs. Dropping
/// it commits any pending writes (their replies then go nowhere), so call
/// [`Pipeline::finish`] to get them.
pub struct Pipeline<'s> {
    engine: &'s Engine,
    st: &'s mut SessionState,
    /// Gathered writes, when the pending run is one of writes.
    pending: Option<Pending<'s>>,
    /// When each pending command started, for the latency statistics; empty when
    /// nothing is pending.
    started: Vec<Instant>,
    /// The pending commands' keys, back to back, and where each ends.
    keys: Vec<u8>,
    key_ends: Vec<usize>,
}

/// Writes gathered but not yet committed, and the locks that keep them isolated.
struct Pending<'e> {
    batch: WriteBatch,
    /// Stripe guards: dropped after the commit, never before.
    stripes: Vec<MutexGuard<'e, ()>>,
    held: [u64; STRIPE_WORDS],
    _shared: RwLockReadGuard<'e, ()>,
}

impl<'e> Pending<'e> {
    fn holds(&self, stripe: usize) -> bool {
        self.held
            .get(stripe / 64)
            .is_some_and(|w| w & (1 << (stripe % 64)) != 0)
    }

    fn add_stripe(&mut self, stripe: usize, guard: MutexGuard<'e, ()>) {
        if let Some(w) = self.held.get_mut(stripe / 64) {
            *w |= 1 << (stripe % 64);
        }
        self.stripes.push(guard);
    }
}

impl<'s> Pipeline<'s> {
    pub(super) fn new(engine: &'s Engine, st: &'s mut SessionState) -> Self {
        Pipeline {
            engine,
            st,
            pending: None,
            started: Vec::new(),
            keys: Vec::new(),
            key_ends: Vec::new(),
        }
    }

    /// The protocol replies are written in (HELLO may change it between commands).
    pub fn protocol(&self) -> Protocol {
        self.st.protocol
    }

    /// What the transport must do after the replies written so far, if anything.
    pub fn take_action(&mut self) -> Option<Action> {
        self.st.action.take()
    }

    /// Runs one command and appends its reply to `out`, or gathers it into the pending
    /// run if it is a blind write or a GET (its reply follows when the run executes).
    /// An empty command gets no reply, nor does a SHUTDOWN that stops the server; check
    /// [`Pipeline::take_action`] after each command.
    pub fn execute(&mut self, args: &[&[u8]], out: &mut Vec<u8>) {
        if let Some((key, value, expire)) = self.blind_write(args) {
            if self.reads_pending() {
                self.flush(out);
            }
            self.st.stats.count_command();
            self.gather(key, value, expire, out);
            if self.started.len() >= MAX_PENDING
                || self
                    .pending
                    .as_ref()
                    .is_some_and(|p| p.batch.approximate_size() >= MAX_PENDING_BYTES)
            {
                self.flush(out);
            }
            return;
        }
        if let Some(key) = self.plain_get(args) {
            if self.pending.is_some() {
                self.flush(out);
            }
            self.st.stats.count_command();
            self.started.push(Instant::now());
            self.push_key(key);
            if self.started.len() >= MAX_PENDING {
                self.flush(out);
            }
            return;
        }
        self.flush(out);
        let reply = execute(self.engine, self.st, args);
        // Redis closes the connection without a reply to a successful SHUTDOWN.
        if self.st.action != Some(Action::Shutdown) {
            if let Some(reply) = reply {
                reply.write(self.st.protocol, out);
            }
        }
    }

    /// Executes the pending run, appends its replies to `out`, and adds this session's
    /// statistics to the engine's.
    pub fn finish(mut self, out: &mut Vec<u8>) {
        self.flush(out);
        self.st.stats.merge_into(&self.engine.stats);
    }

    /// Whether the pending run is one of GETs.
    fn reads_pending(&self) -> bool {
        self.pending.is_none() && !self.started.is_empty()
    }

    /// Whether `args` may run now, unqueued and authenticated.
    fn runs_now(&self) -> bool {
        self.st.multi.is_none() && (self.st.authenticated || !self.engine.requires_auth())
    }

    /// The key of a GET this pipeline may gather.
    fn plain_get<'a>(&self, args: &[&'a [u8]]) -> Option<&'a [u8]> {
        match args {
            [name, key] if name.eq_ignore_ascii_case(b"get") && self.runs_now() => Some(key),
            _ => None,
        }
    }

    fn push_key(&mut self, key: &[u8]) {
        self.keys.extend_from_slice(key);
        self.key_ends.push(self.keys.len());
    }

    /// Executes the pending run, if any.
    fn flush(&mut self, out: &mut Vec<u8>) {
        if self.pending.is_some() {
            self.commit(out);
        } else if !self.started.is_empty() {
            self.read(out);
        }
        self.started.clear();
        self.keys.clear();
        self.key_ends.clear();
    }

    /// Runs the pending GETs as one multi-get and writes their replies.
    fn read(&mut self, out: &mut Vec<u8>) {
        let engine = self.engine;
        let store = &engine.store;
        let keys: Vec<&[u8]> = split_keys(&self.keys, &self.key_ends).collect();
        let now = now_ms();
        let results = {
            let _shared = store.exclusive.read();
            store.get_many_shared(&keys, now)
        };
        for (i, started) in self.started.iter().enumerate() {
            let result = match &results {
                Ok(values) => Ok(values.get(i).cloned().flatten()),
                // Some read failed: each key again on its own, for its own reply.
                Err(_) => {
                    let _shared = store.exclusive.read();
                    let key = keys.get(i).copied().unwrap_or_default();
                    store.get_shared(key, now).map(|v| v.map(|(_, data)| data))
                }
            };
            let reply = match result {
                Ok(v) => {
                    self.st.stats.hit(v.is_some());
                    Reply::bulk_or_nil(v)
                }
                Err(fail) => fail.into_reply(),
            };
            reply.write(self.st.protocol, out);
            self.st.stats.record_latency(started.elapsed());
        }
    }

    /// `(key, value, expiry)` if `args` is a SET this pipeline may gather: one that would
    /// run now (not queued in MULTI, authenticated) and writes without reading.
    fn blind_write<'a>(&self, args: &[&'a [u8]]) -> Option<(&'a [u8], &'a [u8], Option<u64>)> {
        let [name, key, value, options @ ..] = args else {
            return None;
        };
        if !name.eq_ignore_ascii_case(b"set") || !self.runs_now() {
            return None;
        }
        let expire = if options.is_empty() {
            None
        } else {
            // A SET whose options fail to parse runs normally, to report the error.
            let opts = SetOptions::parse(args, now_ms()).ok()?;
            if !opts.is_blind() {
                return None;
            }
            opts.expire
        };
        Some((key, value, expire))
    }

    /// Adds a put to the pending batch under its stripe's lock.
    fn gather(&mut self, key: &[u8], value: &[u8], expire: Option<u64>, out: &mut Vec<u8>) {
        let engine = self.engine;
        let store = &engine.store;
        let stripe = stripe_of(key);
        if let Some(p) = &mut self.pending {
            if !p.holds(stripe) {
                match store.try_lock_stripe(stripe) {
                    Some(guard) => p.add_stripe(stripe, guard),
                    // Busy: commit what is gathered (releasing its stripes), then wait.
                    None => self.flush(out),
                }
            }
        }
        let started = Instant::now();
        let p = self.pending.get_or_insert_with(|| Pending {
            batch: WriteBatch::new(),
            stripes: Vec::new(),
            held: [0; STRIPE_WORDS],
            _shared: store.exclusive.read(),
        });
        if !p.holds(stripe) {
            if let Some(guard) = store.lock_stripe(stripe) {
                p.add_stripe(stripe, guard);
            }
        }
        put_value(&mut p.batch, key, expire, value);
        self.started.push(started);
        self.push_key(key);
    }

    /// Commits the pending batch, then releases its locks and writes the replies.
    fn commit(&mut self, out: &mut Vec<u8>) {
        let Some(p) = self.pending.take() else {
            return;
        };
        let Pending {
            batch,
            stripes,
            _shared,
            ..
        } = p;
        let result = self
            .engine
            .store
            .write(batch, split_keys(&self.keys, &self.key_ends));
        drop(stripes);
        drop(_shared);
        let reply = result.map_or_else(Fail::into_reply, |()| Reply::Ok);
        for started in &self.started {
            reply.write(self.st.protocol, out);
            self.st.stats.record_latency(started.elapsed());
        }
    }
}

/// The keys stored back to back in `keys`, each ending where `ends` says.
fn split_keys<'a>(keys: &'a [u8], ends: &'a [usize]) -> impl Iterator<Item = &'a [u8]> {
    let mut start = 0;
    ends.iter().map(move |&end| {
        let k = keys.get(start..end).unwrap_or_default();
        start = end;
        k
    })
}

impl Drop for Pipeline<'_> {
    fn drop(&mut self) {
        let mut discarded = Vec::new();
        self.flush(&mut discarded);
        self.st.stats.merge_into(&self.engine.stats);
    }
}

#[cfg(test)]
mod tests;
