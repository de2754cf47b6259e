//! Background rewrites of level-0 data: the matrix container's table merge, run on a
//! thread of its own so that flushes never wait for it.
//!
//! Owns: calling `SelfCompacting::rewrite` without the state lock, asking
//! `accept_rewrite` under it, and recording the accepted changes in one version edit.
//! Must not touch: what is rewritten (level 0 decides) or the flush and compaction queues.

use parking_lot::MutexGuard;

use super::{DbInner, DbState};
use crate::error::Result;
use crate::level0::Level0Env;
use crate::version::VersionEdit;

impl DbInner {
    /// Runs one background rewrite of level 0 if one is due and records it. Returns
    /// whether it did any work. Called by the rewrite thread holding the state lock.
    pub(crate) fn run_level0_rewrite(&self, st: &mut MutexGuard<'_, DbState>) -> Result<bool> {
        let Some(level0) = self.level0.self_compacting() else {
            return Ok(false);
        };
        // The rewrite keeps what live snapshots read; a snapshot taken later reads at or
        // above every sequence number level 0 holds now.
        let snapshots = self.snapshots.all();
        let new_number = || self.state.lock().versions.new_file_number();
        let env = Level0Env {
            snapshots: &snapshots,
            new_number: Some(&new_number),
            ..self.level0_env()
        };
        let before = st.versions.current();
        st.running_rewrite = true;
        let done = MutexGuard::unlocked(st, || level0.rewrite(&env));
        st.running_rewrite = false;
        let Some(changes) = done? else {
            // Nothing was due, so no room was held and nobody waits for this thread
            // (`wait_idle` polls): no wake-up. Waking the writers here made a writer
            // waiting for a flush and this thread wake each other every few microseconds,
            // each turn taking the state lock the flush needs. Look again at once if the
            // state changed meanwhile (its wake-up went by while the lock was released).
            let changed = before.number() != st.versions.current().number();
            return Ok(changed || st.shutting_down);
        };
        // A flush waiting for the room the rewrite held may go on now.
        if st.imms.front().is_some_and(|i| !i.flushing) {
            self.bg_work.notify_all();
        }
        self.bg_done.notify_all();
        if !level0.accept_rewrite(&st.versions.current())? {
            // Its group changed meanwhile (column compaction took it): nothing recorded.
            return Ok(true);
        }
        let edit = VersionEdit {
            new_files: changes.new_files.into_iter().map(|f| (0, f)).collect(),
            level0: changes.records,
            ..VersionEdit::default()
        };
        self.apply_edit(st, edit)?;
        self.install_super_version(st);
        super::stats::add(&self.counters.flush_bytes, changes.bytes_written);
        super::stats::add(&self.counters.row_bytes, changes.tier_bytes);
        super::stats::add(&self.counters.row_merges, changes.merges);
        self.bg_done.notify_all();
        self.bg_work.notify_all();
        Ok(true)
    }
}
