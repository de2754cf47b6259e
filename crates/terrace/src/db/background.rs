//! Background threads: flush workers, compaction workers, and the level-0 rewrite worker
//! of a level 0 that rewrites its own data (`db::rewrite`).
//!
//! Each worker sleeps on `bg_work` until there is something for it, runs it with the
//! state lock released during I/O, and records any failure as the database's background
//! error (which makes it read-only).

use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::MutexGuard;

use super::{DbInner, DbState};
use crate::error::Result;
use crate::volume::migration::{MigrationPolicy, VolumeSample};

/// How long a flush that found no room in level 0 waits before looking again.
const FLUSH_RETRY: std::time::Duration = std::time::Duration::from_millis(50);
/// How often `wait_idle` looks again when no wake-up comes (a rewrite that found nothing
/// due sends none).
const IDLE_POLL: std::time::Duration = std::time::Duration::from_millis(10);

#[derive(Clone, Copy)]
enum Kind {
    Flush,
    Compaction,
    Rewrite,
    /// Automatic recovery from retryable background errors (`db::resume`).
    Resume,
    /// Heat statistics of the volumes (`volume::heat`).
    Heat,
}

/// Starts the configured flush and compaction threads.
pub(crate) fn spawn(inner: &Arc<DbInner>) -> Result<Vec<JoinHandle<()>>> {
    let mut out = Vec::new();
    let rewrites = usize::from(inner.level0.self_compacting().is_some());
    let kinds = std::iter::repeat_n(Kind::Flush, inner.opts.max_background_flushes)
        .chain(std::iter::repeat_n(
            Kind::Compaction,
            inner.opts.max_background_compactions,
        ))
        .chain(std::iter::repeat_n(Kind::Rewrite, rewrites))
        .chain(std::iter::repeat_n(
            Kind::Resume,
            usize::from(inner.opts.max_bgerror_resume_count > 0),
        ))
        .chain(std::iter::repeat_n(
            Kind::Heat,
            usize::from(inner.tables.heat().is_some()),
        ));
    for (i, kind) in kinds.enumerate() {
        let db = inner.clone();
        let name = match kind {
            Kind::Flush => format!("terrace-flush-{i}"),
            Kind::Compaction => format!("terrace-compact-{i}"),
            Kind::Rewrite => format!("terrace-l0-rewrite-{i}"),
            Kind::Resume => "terrace-resume".to_string(),
            Kind::Heat => "terrace-heat".to_string(),
        };
        let h = std::thread::Builder::new()
            .name(name)
            .spawn(move || worker(&db, kind))
            .map_err(|e| crate::Error::io(&inner.dir, e))?;
        out.push(h);
    }
    Ok(out)
}

fn worker(db: &DbInner, kind: Kind) {
    match kind {
        Kind::Resume => return db.run_resume_worker(),
        Kind::Heat => return db.run_heat_worker(),
        _ => {}
    }
    let mut st = db.state.lock();
    loop {
        if st.shutting_down {
            return;
        }
        if st.bg_error.is_some() {
            db.bg_work.wait(&mut st);
            continue;
        }
        if std::mem::take(&mut st.presync_wanted) {
            // The active log's sync ahead of its switch (`DbInner::ask_presync`).
            let synced = MutexGuard::unlocked(&mut st, || db.presync_wal());
            if let Err(e) = synced {
                db.set_bg_error(&mut st, e);
            }
            continue;
        }
        let did = match kind {
            Kind::Flush => db.run_flush(&mut st),
            Kind::Compaction => run_compaction_step(db, &mut st),
            Kind::Rewrite => db.run_level0_rewrite(&mut st),
            Kind::Resume | Kind::Heat => Ok(false),
        };
        match did {
            Ok(true) => continue,
            // A flush waiting for level 0 to make room may get it without a signal (a
            // reader dropping the last view of deleted rows): look again now and then.
            Ok(false) if matches!(kind, Kind::Flush) && st.imms.iter().any(|i| !i.flushing) => {
                db.bg_work.wait_for(&mut st, FLUSH_RETRY);
            }
            Ok(false) => db.bg_work.wait(&mut st),
            Err(e) => db.set_bg_error(&mut st, e),
        }
    }
}

fn run_compaction_step(db: &DbInner, st: &mut MutexGuard<'_, DbState>) -> Result<bool> {
    // Flushes go first: while a memtable waits for a flush thread, a compaction thread
    // flushes it (alongside a running flush where the level 0 allows it). A flush that
    // waits for level 0 to make room (a flush stall) leaves the thread to compact.
    if st.imms.iter().any(|i| !i.flushing) && db.run_flush(st)? {
        return Ok(true);
    }
    db.run_auto_compaction(st)
}

impl DbInner {
    /// Closes a heat interval every `Options::heat_interval` until shutdown.
    fn run_heat_worker(&self) {
        let Some(heat) = self.tables.heat().cloned() else {
            return;
        };
        let interval = self.opts.heat_interval;
        let mut last = std::time::Instant::now();
        let mut ios_before = self.volume_ios();
        let mut st = self.state.lock();
        loop {
            let until = last + interval;
            while !st.shutting_down && std::time::Instant::now() < until {
                self.bg_done.wait_until(&mut st, until);
            }
            if st.shutting_down {
                return;
            }
            let version = st.versions.current();
            let now = std::time::Instant::now();
            let elapsed = now - last;
            last = now;
            MutexGuard::unlocked(&mut st, || {
                heat.tick(&version, elapsed);
                let ios = self.volume_ios();
                if self.opts.migration != MigrationPolicy::Off {
                    let samples = self.volume_samples(&ios_before, &ios, elapsed);
                    if let Err(e) = self.run_migration_round(&samples) {
                        tracing::warn!(error = %e, "load migration failed; the copy was dropped");
                    }
                }
                ios_before = ios;
            });
        }
    }

    /// Each throttled volume's I/O operations so far, by id.
    fn volume_ios(&self) -> Vec<(u32, u64, u64)> {
        match &self.volume_throttle {
            Some((ids, t)) => ids
                .iter()
                .zip(t.stats())
                .map(|(&id, s)| (id, s.ios, s.limits.iops))
                .collect(),
            None => Vec::new(),
        }
    }

    /// The table volumes' IOPS over an interval of `elapsed` from `before` to `after`
    /// (from `volume_ios`).
    fn volume_samples(
        &self,
        before: &[(u32, u64, u64)],
        after: &[(u32, u64, u64)],
        elapsed: std::time::Duration,
    ) -> Vec<VolumeSample> {
        let secs = elapsed.as_secs_f64().max(1e-3);
        after
            .iter()
            .filter(|(id, _, _)| self.placer.allows(*id))
            .map(|&(id, ios, limit)| {
                let was = before.iter().find(|b| b.0 == id).map_or(0, |b| b.1);
                VolumeSample {
                    id,
                    iops: ios.saturating_sub(was) as f64 / secs,
                    iops_limit: limit,
                }
            })
            .collect()
    }

    /// Waits until nothing is left to flush or compact.
    pub(crate) fn wait_idle(&self) -> Result<()> {
        let mut st = self.state.lock();
        loop {
            if let Some(e) = &st.bg_error {
                return Err(crate::Error::Background(Arc::new(e.clone())));
            }
            if st.shutting_down {
                return Err(crate::Error::Closed);
            }
            if st.imms.is_empty()
                && st.running_compactions == 0
                && !st.running_rewrite
                && !self.needs_compaction(&st)
            {
                return Ok(());
            }
            self.bg_work.notify_all();
            // A rewrite that finds nothing due ends without a wake-up: look again soon.
            self.bg_done.wait_for(&mut st, IDLE_POLL);
        }
    }
}
