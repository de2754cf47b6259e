//! Pipelined execution: a transport hands over a connection's commands one at a time, as
//! they parse, and consecutive blind writes (SET without NX, XX, GET or KEEPTTL) become
//! one engine batch: one WAL record and one group commit instead of one per command.
//!
//! Owns: the pending batch, the locks it holds and its deferred replies.
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
//! several stripes in index order).

use std::time::Instant;

use parking_lot::{MutexGuard, RwLockReadGuard};
use terrace::WriteBatch;

use super::store::{put_value, stripe_of};
use super::strings::SetOptions;
use super::{execute, Action, Engine, Fail, SessionState};
use crate::resp::{Protocol, Reply};
use crate::value::now_ms;

/// Most writes one batch gathers before it commits.
const MAX_PENDING_WRITES: usize = 1024;
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
    pending: Option<Pending<'s>>,
    /// When each pending write started, for the latency statistics.
    started: Vec<Instant>,
    /// The pending writes' keys, back to back, and where each ends (for WATCH).
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
    /// batch if it is a blind write (its reply follows the batch's commit). An empty
    /// command gets no reply, nor does a SHUTDOWN that stops the server; check
    /// [`Pipeline::take_action`] after each command.
    pub fn execute(&mut self, args: &[&[u8]], out: &mut Vec<u8>) {
        if let Some((key, value, expire)) = self.blind_write(args) {
            let started = Instant::now();
            self.st.stats.count_command();
            self.gather(key, value, expire, out);
            self.started.push(started);
            if self.pending.as_ref().is_some_and(|p| {
                self.started.len() >= MAX_PENDING_WRITES
                    || p.batch.approximate_size() >= MAX_PENDING_BYTES
            }) {
                self.commit(out);
            }
            return;
        }
        self.commit(out);
        let reply = execute(self.engine, self.st, args);
        // Redis closes the connection without a reply to a successful SHUTDOWN.
        if self.st.action != Some(Action::Shutdown) {
            if let Some(reply) = reply {
                reply.write(self.st.protocol, out);
            }
        }
    }

    /// Commits the pending writes, appends their replies to `out`, and adds this
    /// session's statistics to the engine's.
    pub fn finish(mut self, out: &mut Vec<u8>) {
        self.commit(out);
        self.st.stats.merge_into(&self.engine.stats);
    }

    /// `(key, value, expiry)` if `args` is a SET this pipeline may gather: one that would
    /// run now (not queued in MULTI, authenticated) and writes without reading.
    fn blind_write<'a>(&self, args: &[&'a [u8]]) -> Option<(&'a [u8], &'a [u8], Option<u64>)> {
        let [name, key, value, options @ ..] = args else {
            return None;
        };
        if !name.eq_ignore_ascii_case(b"set")
            || self.st.multi.is_some()
            || (!self.st.authenticated && self.engine.requires_auth())
        {
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
        let store = &self.engine.store;
        let stripe = stripe_of(key);
        if let Some(p) = &mut self.pending {
            if !p.holds(stripe) {
                match store.try_lock_stripe(stripe) {
                    Some(guard) => p.add_stripe(stripe, guard),
                    // Busy: commit what is gathered (releasing its stripes), then wait.
                    None => self.commit(out),
                }
            }
        }
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
        self.keys.extend_from_slice(key);
        self.key_ends.push(self.keys.len());
    }

    /// Commits the pending batch, if any, then releases its locks and writes the replies.
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
        let mut start = 0;
        let keys = self.key_ends.iter().map(|&end| {
            let k = self.keys.get(start..end).unwrap_or_default();
            start = end;
            k
        });
        let result = self.engine.store.write(batch, keys);
        drop(stripes);
        drop(_shared);
        let reply = result.map_or_else(Fail::into_reply, |()| Reply::Ok);
        for started in self.started.drain(..) {
            reply.write(self.st.protocol, out);
            self.st.stats.record_latency(started.elapsed());
        }
        self.keys.clear();
        self.key_ends.clear();
    }
}

impl Drop for Pipeline<'_> {
    fn drop(&mut self) {
        let mut discarded = Vec::new();
        self.commit(&mut discarded);
        self.st.stats.merge_into(&self.engine.stats);
    }
}

#[cfg(test)]
mod tests;
