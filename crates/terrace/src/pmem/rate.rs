//! A region's optional bandwidth limit ([`PmemOptions::rate_limit`](super::PmemOptions)):
//! one token bucket over the bytes persisted and the bytes read, so that a region emulated
//! in DRAM can be made as slow as a device (docs/formats/pmem.md, "What the emulation
//! is"). It is a budget of bytes per second, not a model of the media.
//!
//! Owns: [`RateLimit`]: the bucket (the throttled storage's `DeviceBudget`, with no I/O
//! limit), the clock it waits on, and the read bytes not yet charged.
//! Must not touch: the mapping. The region charges a persist before making it durable;
//! its users charge the bytes they read through `PmemRegion::charge_read`.
//! Concurrency: shared by every thread of the region. The bucket's mutex is held only
//! for its arithmetic and a thread sleeps with no lock held; a read is gathered with one
//! atomic add and takes the mutex only when it completes a quantum.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::storage::{Clock, DeviceBudget, ThrottleLimits, ThrottleStats};

/// Reads are charged in whole quanta of this many bytes, by the thread whose read
/// completes one: a point lookup reads dozens of metadata entries of a few dozen bytes
/// each, and taking the bucket's lock for each would cost more than the reads.
pub const READ_QUANTUM: u64 = 4096;

/// The bucket of a rate-limited region.
#[derive(Debug)]
pub(super) struct RateLimit {
    budget: DeviceBudget,
    clock: Arc<dyn Clock>,
    /// Read bytes counted since the region opened; the quanta they complete are charged.
    reads: AtomicU64,
}

impl RateLimit {
    /// A bucket of `bytes_per_sec` (not 0) with the throttle's default burst, on `clock`.
    pub(super) fn new(bytes_per_sec: u64, clock: Arc<dyn Clock>) -> RateLimit {
        RateLimit {
            budget: DeviceBudget::new(ThrottleLimits::bandwidth(bytes_per_sec), clock.now()),
            clock,
            reads: AtomicU64::new(0),
        }
    }

    /// The limit, in bytes per second.
    pub(super) fn bytes_per_sec(&self) -> u64 {
        self.budget.limits().bytes_per_sec
    }

    /// Takes `bytes` from the bucket and waits until its debt is paid.
    pub(super) fn charge(&self, bytes: u64) {
        self.budget.admit(&*self.clock, bytes, 0);
    }

    /// Counts `bytes` read, and charges the quanta they complete.
    pub(super) fn charge_read(&self, bytes: u64) {
        let before = self.reads.fetch_add(bytes, Ordering::Relaxed);
        let after = before.wrapping_add(bytes);
        let quanta = (after / READ_QUANTUM).saturating_sub(before / READ_QUANTUM);
        if quanta > 0 {
            self.charge(quanta.saturating_mul(READ_QUANTUM));
        }
    }

    /// What the bucket was charged and how long charges waited, as a throttled device
    /// reports it (`dir` names the region file; `ios` is always 0).
    pub(super) fn stats(&self, region: &Path) -> ThrottleStats {
        self.budget.stats(region)
    }
}
