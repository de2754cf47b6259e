//! The arithmetic of a throttled device: a clock, token buckets that may go into debt,
//! and the merging of physically sequential I/Os into I/O units.
//!
//! Owns: `Clock` (real or fake time), `DeviceBudget` (the buckets of one device and its
//! wait counters), `IoRun` (how many I/O operations a read or append costs). The
//! persistent-memory region's bandwidth limit (`pmem`) is a `DeviceBudget` too.
//! Must not touch: files; the caller performs the I/O after `DeviceBudget::charge` says
//! how long to wait (or `DeviceBudget::admit` has waited).
//! Concurrency: a `DeviceBudget` is shared by every thread using the device; its state is
//! behind one mutex, held only for the arithmetic, never while sleeping. An `IoRun`
//! belongs to one file handle.

use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::{ThrottleLimits, ThrottleStats};

/// Where a throttle gets the time and how it waits. Tests use a fake clock whose `sleep`
/// only moves its time forward.
pub(crate) trait Clock: Send + Sync + Debug {
    /// Time since an arbitrary fixed origin.
    fn now(&self) -> Duration;
    /// Blocks the calling thread for `d`.
    fn sleep(&self, d: Duration);
}

/// The monotonic clock of the operating system.
#[derive(Debug)]
pub(crate) struct SystemClock {
    origin: Instant,
}

impl SystemClock {
    pub(crate) fn new() -> Self {
        SystemClock {
            origin: Instant::now(),
        }
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d);
    }
}

/// A token bucket that may go into debt: a charge is always taken at once, and the
/// caller waits until the bucket is back at zero. Waiting after taking (rather than
/// before) serves concurrent callers in the order they charged, like a device queue,
/// and lets one I/O cost more than the whole burst.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    /// Tokens per second; 0 means unlimited.
    rate: f64,
    /// Most tokens the bucket holds after idling.
    burst: f64,
    /// Tokens now; negative while in debt.
    tokens: f64,
}

impl Bucket {
    fn new(rate: u64, burst: Duration) -> Self {
        let rate = rate as f64;
        let burst = rate * burst.as_secs_f64();
        Bucket {
            rate,
            burst,
            tokens: burst,
        }
    }

    /// Refills for `elapsed`, takes `cost`, and returns the seconds until the debt is paid.
    /// Seconds the bucket owes at `elapsed` after its last update (negative: seconds of
    /// rate it has saved up); `None` for an unlimited bucket.
    fn backlog(&self, elapsed: f64) -> Option<f64> {
        (self.rate > 0.0).then(|| -(self.tokens + elapsed * self.rate).min(self.burst) / self.rate)
    }

    fn take(&mut self, elapsed: f64, cost: u64) -> f64 {
        if self.rate <= 0.0 {
            return 0.0;
        }
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        self.tokens -= cost as f64;
        if self.tokens < 0.0 {
            -self.tokens / self.rate
        } else {
            0.0
        }
    }
}

#[derive(Debug)]
struct BudgetState {
    last: Duration,
    bytes: Bucket,
    ios: Bucket,
}

/// The shared budget of one device: a byte bucket, an I/O bucket and the counters of what
/// was charged and waited.
#[derive(Debug)]
pub(crate) struct DeviceBudget {
    limits: ThrottleLimits,
    state: Mutex<BudgetState>,
    bytes: AtomicU64,
    ios: AtomicU64,
    waits: AtomicU64,
    wait_micros: AtomicU64,
}

impl DeviceBudget {
    pub(crate) fn new(limits: ThrottleLimits, now: Duration) -> Self {
        DeviceBudget {
            limits,
            state: Mutex::new(BudgetState {
                last: now,
                bytes: Bucket::new(limits.bytes_per_sec, limits.burst),
                ios: Bucket::new(limits.iops, limits.burst),
            }),
            bytes: AtomicU64::new(0),
            ios: AtomicU64::new(0),
            waits: AtomicU64::new(0),
            wait_micros: AtomicU64::new(0),
        }
    }

    pub(crate) fn limits(&self) -> ThrottleLimits {
        self.limits
    }

    /// Charges an I/O of `bytes` bytes costing `ios` operations at time `now` and returns
    /// how long the caller must wait before performing it (zero within the budget).
    pub(crate) fn charge(&self, now: Duration, bytes: u64, ios: u64) -> Duration {
        let wait_secs = {
            let mut st = self.state.lock();
            let elapsed = now.saturating_sub(st.last).as_secs_f64();
            st.last = st.last.max(now);
            let b = st.bytes.take(elapsed, bytes);
            let i = st.ios.take(elapsed, ios);
            b.max(i)
        };
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.ios.fetch_add(ios, Ordering::Relaxed);
        // Whole microseconds, so that equal debts give equal waits on every platform.
        let wait = Duration::from_micros((wait_secs * 1e6).round() as u64);
        if !wait.is_zero() {
            self.waits.fetch_add(1, Ordering::Relaxed);
            let micros = u64::try_from(wait.as_micros()).unwrap_or(u64::MAX);
            self.wait_micros.fetch_add(micros, Ordering::Relaxed);
        }
        wait
    }

    /// Charges an I/O at `clock`'s time, as [`DeviceBudget::charge`], and sleeps on
    /// `clock` for the wait. Returns how long the caller was held: zero within the budget,
    /// else the time the sleep took, at least the wait (a sleep of a few microseconds
    /// takes tens; the budget gives the difference back as tokens).
    /// How far behind the device is at `now`: the larger backlog of its two buckets in
    /// seconds (negative: it has that much of its rates saved up); `None` when it is not
    /// limited at all.
    pub(crate) fn backlog(&self, now: Duration) -> Option<f64> {
        let st = self.state.lock();
        let elapsed = now.saturating_sub(st.last).as_secs_f64();
        match (st.bytes.backlog(elapsed), st.ios.backlog(elapsed)) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    pub(crate) fn admit(&self, clock: &dyn Clock, bytes: u64, ios: u64) -> Duration {
        let now = clock.now();
        let wait = self.charge(now, bytes, ios);
        if wait.is_zero() {
            return Duration::ZERO;
        }
        clock.sleep(wait);
        clock.now().saturating_sub(now).max(wait)
    }

    pub(crate) fn stats(&self, dir: &std::path::Path) -> ThrottleStats {
        ThrottleStats {
            dir: dir.to_path_buf(),
            limits: self.limits,
            bytes: self.bytes.load(Ordering::Relaxed),
            ios: self.ios.load(Ordering::Relaxed),
            waits: self.waits.load(Ordering::Relaxed),
            wait_micros: self.wait_micros.load(Ordering::Relaxed),
        }
    }
}

/// Time that moves only when someone sleeps (or a test advances it), and a log of the
/// sleeps: tests check a budget's waits exactly, without real time.
#[cfg(test)]
#[derive(Debug, Default)]
pub(crate) struct FakeClock {
    now: Mutex<Duration>,
    sleeps: Mutex<Vec<Duration>>,
}

#[cfg(test)]
impl FakeClock {
    /// Moves the time forward by `d`.
    pub(crate) fn advance(&self, d: Duration) {
        *self.now.lock() += d;
    }

    /// Every sleep so far, in order.
    pub(crate) fn slept(&self) -> Vec<Duration> {
        self.sleeps.lock().clone()
    }
}

#[cfg(test)]
impl Clock for FakeClock {
    fn now(&self) -> Duration {
        *self.now.lock()
    }
    fn sleep(&self, d: Duration) {
        self.sleeps.lock().push(d);
        self.advance(d);
    }
}

/// Merges physically sequential I/Os of one file into I/O units, as cloud volumes do:
/// an I/O that starts where the previous one ended fills the rest of that one's last unit
/// for free, and every unit it starts costs one operation.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IoRun {
    /// Where the previous I/O ended.
    next_offset: u64,
    /// Bytes left in the previous I/O's last unit.
    room: u64,
}

impl IoRun {
    /// The operations an I/O of `len` bytes at `offset` costs with units of `unit` bytes
    /// (0: every call is one operation), and records it.
    pub(crate) fn ios(&mut self, offset: u64, len: u64, unit: u64) -> u64 {
        if len == 0 {
            return 0;
        }
        let continues = offset == self.next_offset;
        self.next_offset = offset.saturating_add(len);
        if unit == 0 {
            return 1;
        }
        let free = if continues { self.room.min(len) } else { 0 };
        let rest = len.saturating_sub(free);
        let units = rest.div_ceil(unit);
        self.room = if units == 0 {
            self.room.saturating_sub(free)
        } else {
            units.saturating_mul(unit).saturating_sub(rest)
        };
        units
    }

    /// Ends the current unit: the next I/O starts a new one even if it is sequential
    /// (a sync makes the device write what it has).
    pub(crate) fn close(&mut self) {
        self.room = 0;
    }
}
