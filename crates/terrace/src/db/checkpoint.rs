//! Checkpoints: a consistent copy of the database in another directory.
//!
//! The memtables are flushed first, so that little is left in logs. Then, holding the log
//! (no write can be appended and no log switched) and the state lock (no version can
//! change and no file can be collected meanwhile), every live table file is hard-linked
//! (or copied) into the target, the MANIFEST is copied up to its current end, the logs a
//! recovery would replay (numbered at or above the manifest's log number: the writes since
//! the flush) are synced and copied from the log directory, and CURRENT is written last.
//! Level 0 takes its own state for the same version under the locks (`Level0::checkpoint`)
//! and writes it after they are released: the matrix container holds its live rows and
//! then writes them into a region file `MATRIX.pmem` of the checkpoint, at the offsets
//! the manifest records, without stopping writers meanwhile.
//!
//! The copy is built in `<target>.checkpoint-tmp` and renamed to the target when whole;
//! files a failed attempt left there are removed by the next attempt.
//!
//! The copy is a self-contained database directory: table files of every volume and the
//! logs land in the target's own directory, so a database opened there without extra
//! volumes and without `wal_dir` finds them (unconfigured volumes fall back to the
//! database directory).

use std::path::Path;

use super::DbInner;
use crate::error::{Error, Result};
use crate::storage::{IoClass, Storage};
use crate::version::{manifest_file_name, table_file_name};

/// Bytes of a log copied per read.
const COPY_CHUNK_BYTES: usize = 1 << 20;

impl DbInner {
    pub(crate) fn checkpoint(&self, target: &Path) -> Result<()> {
        if self.storage.exists(target)? {
            return Err(Error::InvalidArgument(format!(
                "checkpoint directory {} already exists",
                target.display()
            )));
        }
        self.flush_and_wait()?;
        let mut wal = self.wal.lock();
        let mut st = self.state.lock();
        // The live log's bytes must be readable (and durable) before they are copied.
        if let Err(e) = wal.log.sync() {
            self.set_bg_error(&mut st, e.clone());
            return Err(e);
        }
        let tmp = target.with_extension("checkpoint-tmp");
        if self.storage.exists(&tmp)? {
            for name in self.storage.list(&tmp)? {
                self.storage.remove_file(&tmp.join(name))?;
            }
        }
        self.storage.create_dir_all(&tmp)?;
        let version = st.versions.current();
        for level in version.levels() {
            for f in level {
                let name = table_file_name(f.number);
                self.storage
                    .link_or_copy(&self.tables.path(f.volume, f.number), &tmp.join(&name))?;
            }
        }
        // Level 0's own state (the matrix container's rows on persistent memory) for the
        // same version as the table files and the manifest, written once the locks are
        // released.
        let level0 = self.level0.checkpoint(&version)?;
        let manifest = manifest_file_name(st.versions.manifest_number());
        let bytes = self
            .storage
            .read_all(&self.dir.join(&manifest), IoClass::Manifest)?;
        let mut out = self
            .storage
            .create(&tmp.join(&manifest), IoClass::Manifest)?;
        out.append(&bytes)?;
        out.sync()?;
        drop(out);
        let log_number = st.versions.log_number();
        for log in self.logs.live(self.storage.as_ref(), log_number)? {
            self.copy_log(
                &log.path,
                &tmp.join(crate::version::wal_file_name(log.number)),
            )?;
        }
        self.storage.write_atomic(
            &tmp.join("CURRENT"),
            format!("{manifest}\n").as_bytes(),
            IoClass::Manifest,
        )?;
        drop(st);
        drop(wal);
        if let Some(copy) = level0 {
            copy.write_to(&tmp)?;
        }
        self.storage.rename(&tmp, target)?;
        if let Some(parent) = target.parent() {
            self.storage.sync_dir(parent)?;
        }
        Ok(())
    }

    /// Copies a log (never linked: the live one is still appended to) and syncs the copy.
    fn copy_log(&self, from: &Path, to: &Path) -> Result<()> {
        copy_file(self.storage.as_ref(), from, to, IoClass::Wal)
    }
}

/// Copies `from` to a new file `to` in chunks and syncs the copy.
fn copy_file(storage: &dyn Storage, from: &Path, to: &Path, class: IoClass) -> Result<()> {
    let src = storage.open(from)?;
    let mut out = storage.create(to, class)?;
    let mut buf = vec![0u8; COPY_CHUNK_BYTES];
    let mut offset = 0u64;
    while offset < src.len() {
        let n = usize::try_from(src.len() - offset).map_or(buf.len(), |left| left.min(buf.len()));
        let chunk = buf.get_mut(..n).unwrap_or_default();
        src.read_exact_at(offset, chunk, class)?;
        out.append(chunk)?;
        offset += n as u64;
    }
    out.sync()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::FsStorage;

    #[test]
    fn copy_file_copies_every_chunk_of_a_file_longer_than_one() {
        let dir = tempfile::tempdir().unwrap();
        let storage = FsStorage::new();
        for len in [0, 1, COPY_CHUNK_BYTES, 2 * COPY_CHUNK_BYTES + 12_345] {
            let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let from = dir.path().join(format!("from-{len}"));
            let to = dir.path().join(format!("to-{len}"));
            std::fs::write(&from, &bytes).unwrap();
            copy_file(&storage, &from, &to, IoClass::Wal).unwrap();
            assert_eq!(std::fs::read(&to).unwrap(), bytes, "{len} bytes");
        }
    }
}
