//! Active expiry: a background walk over the top-level records that deletes the keys
//! whose expiry has passed, as Redis's active expire cycle does, so that a key written
//! once and never read again leaves the keyspace count (and the disk) soon after it
//! expires. The compaction filter cannot do it: it sees one version of a key in one part
//! of the tree, and a drop the counter did not see would make DBSIZE wrong (`keycount`).
//!
//! Redis samples its table of keys with a TTL; the engine has no such table, so the walk
//! visits every top-level record, a bounded number per step, resuming where the last step
//! stopped and starting over at the end. A key is deleted as lazy expiry deletes it: only
//! if its stripe is free (a command holding it overwrites or skips the key) and it is still
//! expired when read again under the stripe.
//!
//! A cycle does nothing while the key count says no key has an expiry. Otherwise each
//! cycle (the transport runs one every [`CYCLE_EVERY`]) walks for about
//! [`CYCLE_TIME`], and goes on, up to [`CYCLE_TIME_BUSY`], while a quarter or more of
//! what it walks has expired: a few percent of a core on a large keyspace, and a small
//! one is walked whole many times a second.
//!
//! Owns: the walk's position and the cycle's budget. Must not touch: scheduling (the
//! transport calls [`Engine::expire_cycle`] on a timer).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::{Engine, Fail};
use crate::value::now_ms;

/// How often the transport runs a cycle.
pub const CYCLE_EVERY: Duration = Duration::from_millis(100);
/// How long a cycle walks.
const CYCLE_TIME: Duration = Duration::from_millis(2);
/// How long a cycle walks while many keys it finds have expired.
const CYCLE_TIME_BUSY: Duration = Duration::from_millis(25);
/// Records one step walks (the walk holds the store shared for a step only).
const STEP_RECORDS: usize = 512;

/// Where the next step of the walk starts (a client key; empty: the first key).
#[derive(Debug, Default)]
pub(crate) struct ActiveExpiry {
    next: Mutex<Vec<u8>>,
    /// Time spent in cycles, microseconds (INFO's `expire_cycle_cpu_milliseconds`).
    busy_micros: AtomicU64,
    /// Passes over the whole keyspace completed.
    passes: AtomicU64,
}

impl ActiveExpiry {
    /// Milliseconds spent in cycles since open.
    pub(crate) fn busy_millis(&self) -> u64 {
        self.busy_micros.load(Ordering::Relaxed) / 1000
    }

    /// Passes over the whole keyspace completed since open.
    pub(crate) fn passes(&self) -> u64 {
        self.passes.load(Ordering::Relaxed)
    }
}

/// What one step did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExpireStep {
    /// Top-level records walked.
    pub walked: usize,
    /// Expired keys deleted.
    pub deleted: usize,
    /// Whether the step reached the last key (the next one starts over).
    pub wrapped: bool,
}

impl Engine {
    /// One cycle of active expiry (see the module docs); what it walked and deleted.
    ///
    /// # Errors
    /// As [`Engine::expire_step`].
    pub fn expire_cycle(&self) -> crate::Result<ExpireStep> {
        let counts = &self.store.counts;
        if counts.enabled() && counts.expiring() == 0 {
            // No key has an expiry: nothing to find (Redis samples only keys with one).
            return Ok(ExpireStep::default());
        }
        let start = Instant::now();
        let mut total = ExpireStep::default();
        loop {
            let step = self.expire_step(STEP_RECORDS)?;
            total.walked += step.walked;
            total.deleted += step.deleted;
            total.wrapped |= step.wrapped;
            let busy = step.deleted * 4 >= step.walked.max(1);
            let limit = if busy { CYCLE_TIME_BUSY } else { CYCLE_TIME };
            // A small keyspace is walked once per cycle, not over and over.
            if step.wrapped || start.elapsed() >= limit {
                let micros = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
                let stats = &self.active_expiry;
                stats.busy_micros.fetch_add(micros, Ordering::Relaxed);
                stats
                    .passes
                    .fetch_add(u64::from(total.wrapped), Ordering::Relaxed);
                return Ok(total);
            }
        }
    }

    /// One step of active expiry: walks at most `budget` top-level records from where
    /// the last step stopped and deletes the expired ones among them.
    ///
    /// # Errors
    /// The engine's read or write errors, or a damaged record.
    pub fn expire_step(&self, budget: usize) -> crate::Result<ExpireStep> {
        Ok(self.expire_step_at(budget, now_ms())?)
    }

    pub(crate) fn expire_step_at(&self, budget: usize, now: u64) -> Result<ExpireStep, Fail> {
        let _shared = self.store.exclusive.read();
        let mut next = self.active_expiry.next.lock();
        let mut expired = Vec::new();
        let mut walked = 0;
        let mut resume = None;
        self.store
            .for_each_record_from(&next, |key, expire_at_ms| {
                if walked == budget {
                    resume = Some(key.to_vec());
                    return false;
                }
                walked += 1;
                if expire_at_ms.is_some_and(|at| at <= now) {
                    expired.push(key.to_vec());
                }
                true
            })?;
        let mut deleted = 0;
        for key in &expired {
            deleted += usize::from(self.store.expire_lazily(key, now)?);
        }
        let wrapped = resume.is_none();
        *next = resume.unwrap_or_default();
        Ok(ExpireStep {
            walked,
            deleted,
            wrapped,
        })
    }
}

#[cfg(test)]
mod tests;
