//! Obsolete-file garbage collection.
//!
//! A table file is deleted only when no installed version that is still alive (held by a
//! reader, an iterator or a snapshot's view) references it on its volume (its own or one
//! of its replicas') and no unfinished job is writing a file of that number. Logs older
//! than the manifest's log number (`wal::LogSet::obsolete`) and manifests older than the
//! live one go too (temporary files only on open, where no rename can be in flight). Run after every install and on open, where
//! it also removes the outputs of jobs abandoned by a crash.

use std::path::PathBuf;

use parking_lot::MutexGuard;

use super::{DbInner, DbState};
use crate::error::Error;
use crate::version::{parse_file_name, FileKind};

/// An obsolete table file about to be deleted.
struct Doomed {
    number: u64,
    /// No live version keeps a copy of the table on another volume: its cached blocks go
    /// with it.
    last_copy: bool,
}

impl DbInner {
    /// Lists obsolete files under the state lock and deletes them with the lock released.
    pub(crate) fn delete_obsolete_files(&self, st: &mut MutexGuard<'_, DbState>) {
        let doomed = self.obsolete_files(st);
        if doomed.is_empty() {
            return;
        }
        MutexGuard::unlocked(st, || {
            for (path, table) in doomed {
                match table {
                    Some(t) if t.last_copy => self.tables.evict_deleted(t.number, &path),
                    Some(t) => self.tables.evict(t.number),
                    None => {}
                }
                match self.storage.remove_file(&path) {
                    // Another thread's collection, listing the same files, got there first.
                    Err(Error::Io { source, .. })
                        if source.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => {
                        tracing::warn!(path = %path.display(), error = %e, "could not delete obsolete file");
                    }
                    Ok(()) => {}
                }
            }
        });
    }

    fn obsolete_files(&self, st: &DbState) -> Vec<(PathBuf, Option<Doomed>)> {
        // A table file is live where a live version puts a copy of it (a volume that is
        // not configured reads from the database directory), or, whatever its volume,
        // while a job writes it.
        let volumes = self.tables.volumes();
        let live: std::collections::HashSet<(u32, u64)> = st
            .versions
            .live_copies()
            .into_iter()
            .map(|(v, n)| (volumes.resolve(v), n))
            .collect();
        let live_numbers: std::collections::HashSet<u64> = live.iter().map(|&(_, n)| n).collect();
        let pending = &st.pending_outputs;
        let log_number = st.versions.log_number();
        let manifest = st.versions.manifest_number();
        let mut out = Vec::new();
        for (i, dir) in self.tables.volumes().iter() {
            let Ok(names) = self.storage.list(dir) else {
                continue;
            };
            for name in names {
                let Some((kind, number)) = parse_file_name(&name) else {
                    continue;
                };
                let obsolete = match kind {
                    FileKind::Table => !pending.contains(&number) && !live.contains(&(i, number)),
                    // A newer manifest is left by a switch that failed after CURRENT
                    // may have been renamed onto it: it may be the one CURRENT names. The
                    // next successful switch (every open makes one) removes it.
                    FileKind::Manifest => i == 0 && number < manifest,
                    _ => false,
                };
                if obsolete {
                    // A table still live on another volume (the source of a move, a
                    // dropped replica) keeps its cached blocks.
                    let table = (kind == FileKind::Table).then(|| Doomed {
                        number,
                        last_copy: !live_numbers.contains(&number),
                    });
                    out.push((dir.join(&name), table));
                }
            }
        }
        // Logs, in the log directory and the database directory (where an open without
        // wal_dir left them).
        out.extend(
            self.logs
                .obsolete(self.storage.as_ref(), log_number)
                .into_iter()
                .map(|p| (p, None)),
        );
        out
    }
}
