//! Flushes: writing immutable memtables to level 0 (several at once where the level 0
//! allows it) and installing the results in memtable order.

use std::sync::Arc;

use parking_lot::MutexGuard;

use super::{BuiltFlush, DbInner, DbState};
use crate::error::{Error, Result};
use crate::level0::Level0Env;
use crate::listener::FlushInfo;
use crate::version::VersionEdit;

impl DbInner {
    /// Sets the manifest's last sequence to the newest write and applies `edit`.
    pub(crate) fn apply_edit(&self, st: &mut DbState, edit: VersionEdit) -> Result<()> {
        let seq = self.last_seq.load(std::sync::atomic::Ordering::Acquire);
        if seq > st.versions.last_sequence() {
            st.versions.set_last_sequence(seq);
        }
        st.versions.log_and_apply(edit)
    }

    /// Flushes the oldest immutable memtable no flush has taken yet, and installs every
    /// finished flush it can. Returns whether it did any work. Called by a background
    /// thread holding the state lock.
    ///
    /// Where the level 0 allows it (`Level0::parallel_flushes`), several threads flush
    /// queued memtables at once; the results are installed in memtable order (level 0
    /// is searched newest first, and each edit's log number says which logs are no
    /// longer needed), so a flush that finishes before an older one parks its output,
    /// kept from deletion, and the thread finishing the older one installs both.
    /// Otherwise only the oldest memtable is flushed, one flush at a time.
    pub(crate) fn run_flush(&self, st: &mut MutexGuard<'_, DbState>) -> Result<bool> {
        let pick = if self.level0.parallel_flushes() {
            st.imms.iter().position(|i| !i.flushing)
        } else {
            st.imms.front().filter(|i| !i.flushing).map(|_| 0)
        };
        let Some(mem) = pick.and_then(|i| st.imms.get(i)).map(|i| i.mem.clone()) else {
            return Ok(false);
        };
        if !self
            .level0
            .ready_to_flush(&st.versions.current(), mem.approximate_memory_usage())
        {
            // A flush stall: a compaction must free room in level 0 first.
            return Ok(false);
        }
        set_flushing(st, &mem, true);
        let number = st.versions.new_file_number();
        st.pending_outputs.insert(number);
        let bytes = mem.approximate_memory_usage() as u64;
        let plan = self.placement_plan(st, 0, (None, None), &[], bytes);
        // The flush drops the versions no live snapshot tells apart. A snapshot taken
        // later reads at or above every sequence number of this (immutable) memtable, so
        // it splits no pair of versions the flush sees.
        let snapshots = self.snapshots.all();
        let env = Level0Env {
            placement: plan.as_ref(),
            snapshots: &snapshots,
            ..self.level0_env()
        };
        let built = MutexGuard::unlocked(st, || self.level0.flush(&env, &mem, number));
        match built {
            Ok(m) => {
                if plan.is_some() {
                    self.placer.placed(m.new_files.len());
                }
                if let Some(heat) = self.tables.heat() {
                    heat.add_files(&m.new_files);
                }
                if let Some(imm) = st.imms.iter_mut().find(|i| Arc::ptr_eq(&i.mem, &mem)) {
                    imm.built = Some(BuiltFlush {
                        output: m,
                        file_number: number,
                    });
                }
            }
            Err(e) => {
                st.pending_outputs.remove(&number);
                set_flushing(st, &mem, false);
                return Err(e);
            }
        }
        drop(mem);
        self.install_built_flushes(st)?;
        Ok(true)
    }

    /// Installs the finished flushes at the front of the queue, oldest first, up to the
    /// first memtable not yet flushed.
    fn install_built_flushes(&self, st: &mut MutexGuard<'_, DbState>) -> Result<()> {
        loop {
            let Some(front) = st.imms.front_mut() else {
                return Ok(());
            };
            let Some(built) = front.built.take() else {
                return Ok(());
            };
            let mem = front.mem.clone();
            let flushed = built.output;
            let mut edit = VersionEdit {
                new_files: flushed.new_files.iter().map(|f| (0, f.clone())).collect(),
                level0: flushed.records.clone(),
                ..VersionEdit::default()
            };
            let next_log = st.imms.get(1).map_or(st.mem_wal_number, |i| i.wal_number);
            edit.log_number = Some(next_log);
            // Memtables hold consecutive sequence numbers and are installed oldest first:
            // every external write up to this one's last is in tables now.
            let external = self.opts.external_log.clone();
            if external.is_some() {
                edit.external_flushed = Some(mem.largest_seq());
            }
            let applied = self.apply_edit(st, edit);
            st.pending_outputs.remove(&built.file_number);
            if let Err(e) = applied {
                set_flushing(st, &mem, false);
                return Err(e);
            }
            st.imms.pop_front();
            self.install_super_version(st);
            let bytes = flushed.bytes_written;
            super::stats::add(&self.counters.flush_bytes, bytes);
            super::stats::add(&self.counters.row_bytes, flushed.tier_bytes);
            super::stats::add(&self.counters.flushes, 1);
            let info = FlushInfo {
                file_number: flushed.new_files.first().map(|m| m.number),
                bytes_written: bytes,
                entries: flushed.entries,
                largest_seq: mem.largest_seq(),
            };
            self.bg_done.notify_all();
            self.bg_work.notify_all();
            self.delete_obsolete_files(st);
            for l in &self.listeners {
                l.on_flush_completed(&info);
            }
            // The flushed memtable is freed here, with the lock released, unless a reader
            // still holds it: freeing a memtable's entries one by one takes milliseconds,
            // which under the lock a writer would wait out.
            let flushed_through = st.versions.external_flushed();
            MutexGuard::unlocked(st, move || {
                drop(mem);
                if let Some(log) = external {
                    log.release_through(flushed_through);
                }
            });
        }
    }

    /// Switches the memtable (if it holds anything) and waits until every immutable
    /// memtable is flushed.
    pub(crate) fn flush_and_wait(&self) -> Result<()> {
        {
            let mut wal = self.wal.lock();
            let mut st = self.state.lock();
            if let Some(e) = &st.bg_error {
                return Err(Error::Background(Arc::new(e.clone())));
            }
            if !st.mem.is_empty() || !st.mem.range_tombstones().is_empty() {
                // As on the write path: after a failed log sync, writes must stop.
                if let Err(e) = self.switch_memtable(&mut st, &mut wal) {
                    self.set_bg_error(&mut st, e.clone());
                    return Err(e);
                }
            }
        }
        let mut st = self.state.lock();
        loop {
            if let Some(e) = &st.bg_error {
                return Err(Error::Background(Arc::new(e.clone())));
            }
            if st.imms.is_empty() {
                return Ok(());
            }
            if st.shutting_down {
                return Err(Error::Closed);
            }
            self.bg_work.notify_all();
            self.bg_done.wait(&mut st);
        }
    }
}

/// Marks the queued memtable `mem` as taken by a flush, or as waiting again.
fn set_flushing(st: &mut DbState, mem: &Arc<crate::memtable::MemTable>, on: bool) {
    if let Some(imm) = st.imms.iter_mut().find(|i| Arc::ptr_eq(&i.mem, mem)) {
        imm.flushing = on;
        if !on {
            imm.built = None;
        }
    }
}
