//! The pace of slowed-down writes: while level 0 asks writers to slow down, writes are
//! admitted on a schedule at a rate that starts at `delayed_write_rate` and adapts to
//! level 0's debt, as RocksDB's write controller does: each new version that holds more
//! level-0 bytes than the last one seen lowers the rate by a fifth, each that holds fewer
//! raises it back towards `delayed_write_rate`. A fixed rate above what compaction can
//! sustain only postpones a full stop; one that follows the debt slows writers before it.
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
/// The factor applied to the rate when the debt grows (its inverse when it shrinks).
const SLOWER: f64 = 0.8;
/// The slowest rate, in bytes per second (RocksDB's floor too).
const MIN_RATE: u64 = 16 << 10;

/// The schedule of slowed-down writes.
#[derive(Debug, Default)]
pub(crate) struct WriteDelay {
    /// When the writes admitted so far would have finished at the rate.
    until: Option<Instant>,
    /// Bytes per second; 0 until the first slowed-down write.
    rate: u64,
    /// The version whose debt was seen last (its number), and that debt.
    seen: Option<(u64, u64)>,
}

impl WriteDelay {
    /// Full speed: forgets the schedule, the rate and the debt seen.
    pub(crate) fn reset(&mut self) {
        *self = WriteDelay::default();
    }

    /// The current rate in bytes per second.
    #[cfg(test)]
    pub(crate) fn rate(&self) -> u64 {
        self.rate
    }

    /// Takes the debt of version number `version` into account, at most once per
    /// version: slower if it grew since the last version seen, faster (up to `max_rate`)
    /// if it shrank.
    pub(crate) fn observe(&mut self, version: u64, debt: u64, max_rate: u64) {
        let max_rate = max_rate.max(MIN_RATE);
        if self.rate == 0 {
            self.rate = max_rate;
        }
        match self.seen {
            Some((v, _)) if v == version => return,
            Some((_, last)) if debt > last => {
                self.rate = ((self.rate as f64 * SLOWER) as u64).max(MIN_RATE);
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
        d.observe(1, 100, max);
        assert_eq!(d.rate(), max);
        // The same version again changes nothing, whatever its debt.
        d.observe(1, 500, max);
        assert_eq!(d.rate(), max);
        d.observe(2, 200, max);
        assert_eq!(d.rate(), (max as f64 * 0.8) as u64);
        d.observe(3, 300, max);
        let slower = d.rate();
        assert!(slower < (max as f64 * 0.8) as u64);
        // Equal debt: unchanged; shrinking debt: faster, never past the maximum.
        d.observe(4, 300, max);
        assert_eq!(d.rate(), slower);
        for v in 5..20 {
            d.observe(v, 300 - v, max);
        }
        assert_eq!(d.rate(), max);
        // Growing debt for long: down to the floor, not below.
        for v in 20..200 {
            d.observe(v, v * 1000, max);
        }
        assert_eq!(d.rate(), MIN_RATE);
        d.reset();
        assert_eq!(d.rate(), 0);
    }

    #[test]
    fn small_writes_are_paced_with_a_sleep_per_millisecond() {
        let mut d = WriteDelay::default();
        // 1 MB/s: 1,000 bytes cost a millisecond, 100 bytes a tenth.
        d.observe(1, 0, 1_000_000);
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
