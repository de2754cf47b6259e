//! A simulated power supply for crash tests, shared by a [`FaultStorage`] and the
//! persistent-memory regions of one database, so that a crash stops both tiers at the
//! same instant.
//!
//! Every durability point (a file sync, a directory sync, a region persist) asks the
//! supply first. A test can cut the power at the n-th point matching a filter (a kind of
//! point, on threads whose name starts with a prefix, such as the flush thread): that point
//! and every later one, of any kind on any thread, fail, and so do file creations,
//! renames and removals, as nothing happens on a machine without power. A crash landed
//! this way falls between two durability steps of the chosen job, wherever its code has
//! them, without naming the steps in the engine.
//!
//! A test can also make matching points lie (return success and make nothing durable), a
//! device that acknowledges a flush it never did: the negative controls of the crash tests
//! use it to show that the checker notices a missing sync or persist.
//!
//! [`FaultStorage`]: super::FaultStorage
//!
//! Owns: the switch, the cut and lie rules, and their counters.
//! Must not touch: files or regions; storages and regions act on its verdict.
//! Concurrency: one mutex; points are asked from any thread.

use parking_lot::Mutex;

use super::IoClass;

/// What a durability point makes durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointKind {
    /// A sync of a file written for this class of I/O.
    Sync(IoClass),
    /// A sync of a directory (file creations and renames in it).
    DirSync,
    /// A persist of a range of a persistent-memory region.
    Persist,
}

/// Which durability points a rule applies to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PointFilter {
    /// Only points asked on threads whose name starts with this (`None`: any thread).
    pub thread_prefix: Option<String>,
    /// Only points of these kinds (empty: any kind).
    pub kinds: Vec<PointKind>,
}

impl PointFilter {
    /// Every point.
    pub fn any() -> Self {
        PointFilter::default()
    }

    /// Points asked on threads whose name starts with `prefix`.
    pub fn on_thread(prefix: &str) -> Self {
        PointFilter {
            thread_prefix: Some(prefix.to_string()),
            kinds: Vec::new(),
        }
    }

    /// Narrows the filter to `kinds`.
    pub fn of_kinds(mut self, kinds: &[PointKind]) -> Self {
        self.kinds = kinds.to_vec();
        self
    }

    fn matches(&self, kind: PointKind, thread: Option<&str>) -> bool {
        let thread_ok = match &self.thread_prefix {
            None => true,
            Some(p) => thread.is_some_and(|t| t.starts_with(p.as_str())),
        };
        thread_ok && (self.kinds.is_empty() || self.kinds.contains(&kind))
    }
}

/// What a durability point must do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Make the bytes durable, as without a supply.
    Durable,
    /// Return success without making anything durable (a lying device).
    Lie,
    /// Fail: the power is out, or the point was made to fail.
    Fail,
}

#[derive(Debug, Default)]
struct State {
    /// Points still to pass before the cut, and which points count.
    cut: Option<(PointFilter, u64)>,
    /// Whether the power is out.
    out: bool,
    /// Whether the cut came from the countdown (a matching point), not from `cut_now`.
    cut_by_filter: bool,
    lie: Option<PointFilter>,
    /// Matching points that fail, and how many more will, without cutting the power.
    fail: Option<(PointFilter, u64)>,
    /// Points asked while the power was on.
    points: u64,
}

/// The simulated power supply. See the module docs.
#[derive(Debug, Default)]
pub struct PowerSupply {
    state: Mutex<State>,
}

impl PowerSupply {
    /// A supply with the power on and no rules.
    pub fn new() -> Self {
        PowerSupply::default()
    }

    /// Cuts the power at the `n`-th (0-based) point matching `filter` from now on; that
    /// point fails, and so does everything after it.
    pub fn cut_at(&self, filter: PointFilter, n: u64) {
        self.state.lock().cut = Some((filter, n));
    }

    /// Forgets a pending [`PowerSupply::cut_at`] that has not happened (a clean shutdown
    /// follows); the power stays as it is.
    pub fn disarm(&self) {
        self.state.lock().cut = None;
    }

    /// Cuts the power now.
    pub fn cut_now(&self) {
        let mut st = self.state.lock();
        st.out = true;
        st.cut = None;
    }

    /// Makes points matching `filter` lie from now on (until [`PowerSupply::restore`]).
    pub fn lie(&self, filter: PointFilter) {
        self.state.lock().lie = Some(filter);
    }

    /// Makes the next `times` points matching `filter` fail, with the power left on: a
    /// device that fails an operation (an I/O error on a region persist) and then works.
    pub fn fail_points(&self, filter: PointFilter, times: u64) {
        self.state.lock().fail = (times > 0).then_some((filter, times));
    }

    /// Whether the power is out.
    pub fn is_out(&self) -> bool {
        self.state.lock().out
    }

    /// Whether the power went out at a point matching the filter of
    /// [`PowerSupply::cut_at`] (rather than by [`PowerSupply::cut_now`]).
    pub fn cut_by_filter(&self) -> bool {
        self.state.lock().cut_by_filter
    }

    /// Durability points asked while the power was on.
    pub fn points(&self) -> u64 {
        self.state.lock().points
    }

    /// Power back on, every rule and counter cleared (the machine restarts).
    pub fn restore(&self) {
        *self.state.lock() = State::default();
    }

    /// The verdict for a durability point of `kind` asked on the current thread.
    pub fn point(&self, kind: PointKind) -> Verdict {
        let mut st = self.state.lock();
        if st.out {
            return Verdict::Fail;
        }
        let current = std::thread::current();
        let thread = current.name();
        if let Some((filter, left)) = &mut st.cut {
            if filter.matches(kind, thread) {
                if *left == 0 {
                    st.out = true;
                    st.cut_by_filter = true;
                    st.cut = None;
                    return Verdict::Fail;
                }
                *left -= 1;
            }
        }
        if let Some((filter, left)) = &mut st.fail {
            if filter.matches(kind, thread) {
                *left -= 1;
                if *left == 0 {
                    st.fail = None;
                }
                return Verdict::Fail;
            }
        }
        st.points += 1;
        match &st.lie {
            Some(f) if f.matches(kind, thread) => Verdict::Lie,
            _ => Verdict::Durable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nth_matching_point_cuts_the_power_for_every_thread() {
        let p = PowerSupply::new();
        let wal = PointKind::Sync(IoClass::Wal);
        p.cut_at(PointFilter::any().of_kinds(&[PointKind::Persist]), 2);
        assert_eq!(p.point(wal), Verdict::Durable, "not a matching kind");
        assert_eq!(p.point(PointKind::Persist), Verdict::Durable);
        assert_eq!(p.point(PointKind::Persist), Verdict::Durable);
        assert!(!p.is_out());
        assert_eq!(
            p.point(PointKind::Persist),
            Verdict::Fail,
            "the third persist"
        );
        assert!(p.is_out() && p.cut_by_filter());
        assert_eq!(p.point(wal), Verdict::Fail, "everything after the cut");
        assert_eq!(p.points(), 3);
        p.restore();
        assert_eq!(p.point(wal), Verdict::Durable);
        assert!(!p.cut_by_filter());
        p.cut_now();
        assert_eq!(p.point(wal), Verdict::Fail);
        assert!(!p.cut_by_filter());
        p.restore();
        p.cut_at(PointFilter::any(), 0);
        p.disarm();
        assert_eq!(
            p.point(wal),
            Verdict::Durable,
            "a disarmed cut never happens"
        );
    }

    #[test]
    fn failing_points_fail_a_number_of_times_with_the_power_on() {
        let p = PowerSupply::new();
        p.fail_points(PointFilter::any().of_kinds(&[PointKind::Persist]), 2);
        assert_eq!(p.point(PointKind::DirSync), Verdict::Durable);
        assert_eq!(p.point(PointKind::Persist), Verdict::Fail);
        assert_eq!(p.point(PointKind::Persist), Verdict::Fail);
        assert!(!p.is_out());
        assert_eq!(p.point(PointKind::Persist), Verdict::Durable);
    }

    #[test]
    fn filters_match_by_thread_name_prefix() {
        let p = std::sync::Arc::new(PowerSupply::new());
        p.lie(PointFilter::on_thread("worker-"));
        assert_eq!(
            p.point(PointKind::DirSync),
            Verdict::Durable,
            "the test's own thread"
        );
        let q = p.clone();
        let v = std::thread::Builder::new()
            .name("worker-3".into())
            .spawn(move || q.point(PointKind::DirSync))
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(v, Verdict::Lie);
        p.cut_at(PointFilter::on_thread("other"), 0);
        assert_eq!(p.point(PointKind::Persist), Verdict::Durable);
        assert!(!p.is_out());
    }
}
