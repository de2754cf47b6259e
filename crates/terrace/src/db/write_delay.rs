//! The pace of slowed-down writes: while level 0 asks writers to slow down, writes are
//! admitted on a schedule at a rate that starts at the rate writes were arriving at (or
//! `delayed_write_rate`, if that is higher) and adapts to level 0's debt, as RocksDB's
//! write controller does: each new version that holds more level-0 bytes than the last one
//! seen lowers the rate by a fifth, each that holds fewer raises it back towards where it
//! started. A fixed rate above what compaction can sustain only postpones a full stop; one
//! that follows the debt slows writers before it. Starting from the arrival rate rather
//! than a fixed one means that entering the slowdown costs nothing until the debt grows:
//! a level 0 that spends most of its time in the slowdown zone (the matrix container's is
//! a quarter of its capacity) is not capped at `delayed_write_rate` while compaction keeps
//! up.
//!
//! Owns: the schedule and the rate. Must not touch: the decision to slow down (level 0's
//! `backpressure`) or the stop (the write path waits for flushes then).
//! Concurrency: used by the write leader only, under the WAL lock.

use std::time::{Duration, Instant};

/// A leader sleeps once the writes admitted run this far ahead of the rate, so that small
/// writes are paced instead of each paying a whole sleep.
pub(crate) const MIN_DELAY: Duration = Duration::from_millis(1);
/// The longest single sleep.
pub(crate) const MAX_DELAY: Duration = Duration::from_secs(1);
/// The factor applied to the rate when the debt grows while slowed down (its inverse
/// when it shrinks).
pub(crate) const SLOWER: f64 = 0.8;
/// The factor applied when the debt grows while level 0 only eases writes.
pub(crate) const EASE: f64 = 0.9;
/// The slowest rate, in bytes per second (RocksDB's floor too).
const MIN_RATE: u64 = 16 << 10;
/// The arrival rate is measured over windows at least this long.
const WINDOW: Duration = Duration::from_millis(250);

/// The schedule of slowed-down writes.
#[derive(Debug, Default)]
pub(crate) struct WriteDelay {
    /// When the writes admitted so far would have finished at the rate.
    until: Option<Instant>,
    /// Bytes per second; 0 until the first slowed-down write.
    rate: u64,
    /// The rate the schedule started at, and the most it rises back to.
    ceiling: u64,
    /// The version whose debt was seen last (its number), and that debt.
    seen: Option<(u64, u64)>,
    /// The rate writes arrive at, kept across resets.
    arrivals: ArrivalRate,
}

/// The rate writes arrive at: bytes per window, smoothed over the last few windows.
#[derive(Debug, Default)]
struct ArrivalRate {
    /// When the current window started, and the bytes written since.
    window: Option<(Instant, u64)>,
    /// Bytes per second, smoothed; 0 until a window has closed.
    rate: u64,
}

impl ArrivalRate {
    fn record(&mut self, now: Instant, bytes: usize) {
        let (start, total) = self.window.get_or_insert((now, 0));
        *total = total.saturating_add(bytes as u64);
        let elapsed = now.saturating_duration_since(*start);
        if elapsed >= WINDOW {
            let current = (*total as f64 / elapsed.as_secs_f64()) as u64;
            self.rate = if self.rate == 0 {
                current
            } else {
                (self.rate + current) / 2
            };
            self.window = Some((now, 0));
        }
    }
}

impl WriteDelay {
    /// Full speed: forgets the schedule, the rate and the debt seen (not the arrival
    /// rate).
    pub(crate) fn reset(&mut self) {
        let arrivals = std::mem::take(&mut self.arrivals);
        *self = WriteDelay {
            arrivals,
            ..WriteDelay::default()
        };
    }

    /// Counts `bytes` written at `now` into the arrival rate (every write, slowed or not).
    pub(crate) fn record(&mut self, now: Instant, bytes: usize) {
        self.arrivals.record(now, bytes);
    }

    /// The current rate in bytes per second.
    #[cfg(test)]
    pub(crate) fn rate(&self) -> u64 {
        self.rate
    }

    /// Takes the debt of version number `version` into account, at most once per
    /// version: slower if it grew since the last version seen, faster if it shrank, up to
    /// the rate the schedule started at: the higher of `max_rate` and the arrival rate.
    pub(crate) fn observe(&mut self, version: u64, debt: u64, max_rate: u64, slower: f64) {
        if self.rate == 0 {
            self.ceiling = max_rate.max(self.arrivals.rate).max(MIN_RATE);
            self.rate = self.ceiling;
        }
        let max_rate = self.ceiling;
        match self.seen {
            Some((v, _)) if v == version => return,
            Some((_, last)) if debt > last => {
                self.rate = ((self.rate as f64 * slower) as u64).max(MIN_RATE);
            }
            Some((_, last)) if debt < last => {
                self.rate = ((self.rate as f64 / SLOWER) as u64).min(max_rate);
            }
            _ => {}
        }
        self.seen = Some((version, debt));
    }

    /// Schedules `bytes` at the current rate (`observe` first) and returns how long the
    /// leader must sleep now: zero while the schedule is less than [`MIN_DELAY`] ahead.
    pub(crate) fn admit(&mut self, now: Instant, bytes: usize) -> Duration {
        let rate = self.rate.max(MIN_RATE);
        let cost = Duration::from_micros((bytes as u64).saturating_mul(1_000_000) / rate);
        let due = self.until.map_or(now, |d| d.max(now)) + cost;
        self.until = Some(due);
        let ahead = due.saturating_duration_since(now);
        if ahead >= MIN_DELAY {
            ahead.min(MAX_DELAY)
        } else {
            Duration::ZERO
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_follows_the_debt_once_per_version() {
        let max = 16 << 20;
        let mut d = WriteDelay::default();
        d.observe(1, 100, max, SLOWER);
        assert_eq!(d.rate(), max);
        // The same version again changes nothing, whatever its debt.
        d.observe(1, 500, max, SLOWER);
        assert_eq!(d.rate(), max);
        d.observe(2, 200, max, SLOWER);
        assert_eq!(d.rate(), (max as f64 * 0.8) as u64);
        d.observe(3, 300, max, SLOWER);
        let slower = d.rate();
        assert!(slower < (max as f64 * 0.8) as u64);
        // Equal debt: unchanged; shrinking debt: faster, never past the maximum.
        d.observe(4, 300, max, SLOWER);
        assert_eq!(d.rate(), slower);
        for v in 5..20 {
            d.observe(v, 300 - v, max, SLOWER);
        }
        assert_eq!(d.rate(), max);
        // Growing debt for long: down to the floor, not below.
        for v in 20..200 {
            d.observe(v, v * 1000, max, SLOWER);
        }
        assert_eq!(d.rate(), MIN_RATE);
        d.reset();
        assert_eq!(d.rate(), 0);
    }

    #[test]
    fn the_schedule_starts_at_the_arrival_rate_when_that_is_higher() {
        let max = 1_000_000;
        let mut d = WriteDelay::default();
        // 5 MB in each of four quarter-second windows: 20 MB/s.
        let t = Instant::now();
        d.record(t, 0);
        for i in 1..=4u32 {
            d.record(t + WINDOW * i, 5_000_000);
        }
        d.observe(1, 100, max, SLOWER);
        let start = d.rate();
        assert!((19_000_000..=21_000_000).contains(&start), "{start}");
        // The debt grows and shrinks: the rate falls, then rises back to where it started.
        d.observe(2, 200, max, SLOWER);
        assert!(d.rate() < start);
        for v in 3..30 {
            d.observe(v, 200 - v, max, SLOWER);
        }
        assert_eq!(d.rate(), start);
        // Eased, growing debt lowers the rate by a tenth, not a fifth.
        d.observe(30, 1_000, max, EASE);
        assert_eq!(d.rate(), (start as f64 * EASE) as u64);
        // A reset keeps the arrival rate; a slower arrival rate than the setting is ignored.
        d.reset();
        d.observe(40, 0, 50_000_000, SLOWER);
        assert_eq!(d.rate(), 50_000_000);
    }

    #[test]
    fn small_writes_are_paced_with_a_sleep_per_millisecond() {
        let mut d = WriteDelay::default();
        // 1 MB/s: 1,000 bytes cost a millisecond, 100 bytes a tenth.
        d.observe(1, 0, 1_000_000, SLOWER);
        let t = Instant::now();
        let waits: Vec<Duration> = (0..10).map(|_| d.admit(t, 100)).collect();
        // Nine writes run ahead by less than a millisecond; the tenth sleeps it out.
        assert!(waits[..9].iter().all(Duration::is_zero), "{waits:?}");
        assert_eq!(waits[9], Duration::from_millis(1));
        // Time that passed is credited: a write after the schedule's end waits nothing.
        let later = t + Duration::from_millis(5);
        assert_eq!(d.admit(later, 100), Duration::ZERO);
        // One large write sleeps at most MAX_DELAY at a time.
        assert_eq!(d.admit(later, 10_000_000), MAX_DELAY);
    }
}
