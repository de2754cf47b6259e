//! Leaving read-only mode after a background error: `Db::resume` and the automatic
//! recovery from retryable errors (a full device), after RocksDB's background error
//! handler.
//!
//! Owns: which errors can be resumed from and which are retried automatically, the
//! resume procedure, and the recovery thread.
//! Must not touch: how flushes and compactions run; resume only clears the error, starts
//! a new write-ahead log and waits for the flushes that make the old one obsolete.
//! Concurrency: `resume` takes the WAL lock, then the state lock, like the write path;
//! it keeps the WAL lock while the flushes run, so no write is admitted before the new
//! log is the only one that can receive records.
//!
//! Why a new log: a failed append may have left a partial record at the end of the
//! current log, and appending after it would put a tear in the middle of the log, which
//! recovery must refuse. The old log is synced on a best-effort basis and abandoned; every
//! memtable holding its writes is flushed before new writes go to the new log, which stays
//! empty until then, so a crash meanwhile leaves the tear at the end of the newest log
//! that holds anything, where recovery drops it (docs/formats/wal.md).

use std::sync::Arc;

use super::{DbInner, DbState};
use crate::error::{Error, Result};
use crate::version::VersionEdit;

/// True if `e` may go away by itself: the device was full (`ENOSPC`, `EDQUOT`) or the
/// process or system ran out of file descriptors (`EMFILE`, `ENFILE`: clients of a server
/// took them). The recovery thread retries `resume` for it.
pub(crate) fn is_retryable(e: &Error) -> bool {
    match e {
        Error::Io { source, .. } => {
            matches!(
                source.raw_os_error(),
                Some(libc::ENOSPC | libc::EDQUOT | libc::EMFILE | libc::ENFILE)
            )
        }
        Error::NoSpace { .. } => true,
        Error::Background(inner) | Error::Volume { error: inner, .. } => is_retryable(inner),
        _ => false,
    }
}

/// True if `resume` may clear `e`: I/O errors. Damaged data and broken invariants stay
/// until the database is reopened (and repaired).
fn is_resumable(e: &Error) -> bool {
    match e {
        Error::Io { .. } | Error::NoSpace { .. } => true,
        Error::Background(inner) | Error::Volume { error: inner, .. } => is_resumable(inner),
        _ => false,
    }
}

impl DbInner {
    /// Clears the background error and makes the database writable again: starts a new
    /// write-ahead log and flushes every memtable, then lets writes in. See the module
    /// docs. `Ok` if there was no error.
    ///
    /// # Errors
    /// `Background` with the error if it cannot be resumed from (corruption), or with
    /// the error that made the attempt fail (the database stays read-only); `Closed`.
    pub(crate) fn resume(&self) -> Result<()> {
        let mut wal = self.wal.lock();
        {
            let mut st = self.state.lock();
            let Some(e) = st.bg_error.clone() else {
                return Ok(());
            };
            if st.shutting_down {
                return Err(Error::Closed);
            }
            if !is_resumable(&e) {
                return Err(Error::Background(Arc::new(e)));
            }
            tracing::info!(error = %e, "resuming after a background error");
            st.bg_error = None;
            // Best effort: the more of the old log is durable, the less a crash before
            // the flushes below loses. Its own error no longer matters.
            if let Err(sync) = wal.log.sync() {
                tracing::warn!(error = %sync, "the abandoned write-ahead log did not sync");
            }
            if let Err(e) = self.start_new_log(&mut st, &mut wal) {
                self.set_bg_error(&mut st, e.clone());
                return Err(Error::Background(Arc::new(e)));
            }
            self.bg_work.notify_all();
        }
        let mut st = self.state.lock();
        loop {
            if let Some(e) = &st.bg_error {
                return Err(Error::Background(Arc::new(e.clone())));
            }
            if st.imms.is_empty() {
                break;
            }
            if st.shutting_down {
                return Err(Error::Closed);
            }
            self.bg_work.notify_all();
            self.bg_done.wait(&mut st);
        }
        super::stats::add(&self.counters.resumes, 1);
        tracing::info!("resumed: the database is writable again");
        drop(st);
        drop(wal);
        Ok(())
    }

    /// Moves writes to a new log without syncing the current one, making the current
    /// memtable immutable if it holds anything; if nothing is left unflushed, records
    /// the new log as the oldest needed.
    fn start_new_log(&self, st: &mut DbState, wal: &mut super::WalState) -> Result<()> {
        let number = self.open_new_log(st, wal)?;
        if st.mem.is_empty() && st.mem.range_tombstones().is_empty() {
            st.mem_wal_number = number;
            if st.imms.is_empty() {
                // No flush will move the manifest past the abandoned log: do it here,
                // so that it is never replayed once the new log holds records.
                self.apply_edit(
                    st,
                    VersionEdit {
                        log_number: Some(number),
                        ..VersionEdit::default()
                    },
                )?;
            }
            self.install_super_version(st);
            return Ok(());
        }
        self.push_memtable(st, number);
        Ok(())
    }

    /// The recovery thread: waits for a retryable background error, then calls `resume`
    /// every `bgerror_resume_retry_interval`, at most `max_bgerror_resume_count` times per
    /// error, until it succeeds, the error is not retryable any more, or the database
    /// shuts down.
    pub(crate) fn run_resume_worker(&self) {
        let interval = self.opts.bgerror_resume_retry_interval;
        let mut st = self.state.lock();
        loop {
            if st.shutting_down {
                return;
            }
            let due = st.bg_error.as_ref().is_some_and(is_retryable) && st.resumes_left > 0;
            if !due {
                self.bg_done.wait(&mut st);
                continue;
            }
            // Wait out the interval (a shutdown cuts it short).
            let until = std::time::Instant::now() + interval;
            while !st.shutting_down && std::time::Instant::now() < until {
                self.bg_done.wait_until(&mut st, until);
            }
            if st.shutting_down || st.bg_error.is_none() {
                continue;
            }
            st.resumes_left -= 1;
            let left = st.resumes_left;
            drop(st);
            match self.resume() {
                Ok(()) => tracing::info!("automatic recovery succeeded"),
                Err(e) => {
                    tracing::warn!(error = %e, attempts_left = left, "automatic recovery failed")
                }
            }
            st = self.state.lock();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(errno: i32) -> Error {
        Error::io("f", std::io::Error::from_raw_os_error(errno))
    }

    #[test]
    fn which_errors_are_retried_and_which_resumed() {
        for errno in [libc::ENOSPC, libc::EDQUOT, libc::EMFILE, libc::ENFILE] {
            assert!(is_retryable(&io(errno)), "{errno}");
            assert!(is_retryable(&Error::Background(Arc::new(io(errno)))));
        }
        assert!(!is_retryable(&io(libc::EIO)));
        assert!(is_resumable(&io(libc::EIO)));
        let corrupt = Error::corruption("f", 0, "bad");
        assert!(!is_retryable(&corrupt) && !is_resumable(&corrupt));
        assert!(!is_resumable(&Error::Internal("x".into())));
    }
}
