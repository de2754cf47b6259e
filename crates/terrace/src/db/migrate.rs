//! Load migration (`Options::migration`): after each heat interval, the volumes' measured
//! IOPS and the files' heat go to `volume::migration::plan`, and each copy it asks for is
//! made here and installed in the manifest.
//!
//! A copy is written under the file's own name on the target volume, synced with its
//! directory, and only then named in the manifest (an edit that replaces the file's
//! metadata with one listing the new copy). A crash before the edit leaves a copy no
//! version names, which gc removes at the next open; the file's number is a pending
//! output while the copy is made, so gc leaves it alone until then. A move (the IOPS-only
//! baseline) is the same edit naming the new copy in place of the old one, which gc then
//! removes.
//!
//! Must not touch: placement of new files, or the decision itself.

use std::sync::atomic::Ordering;
use std::time::Instant;

use parking_lot::MutexGuard;

use super::DbInner;
use crate::error::{Error, Result};
use crate::storage::IoClass;
use crate::version::{FileMeta, VersionEdit};
use crate::volume::migration::{self, FileSample, Migration, VolumeSample};

/// Bytes per read and append of a copy.
const COPY_CHUNK: usize = 1 << 20;

impl DbInner {
    /// One round: plans from `volumes` (the table volumes' last interval) and the
    /// current files' heat, then makes and installs each copy. Returns the migrations
    /// installed.
    ///
    /// # Errors
    /// I/O errors of a copy and manifest errors (the copy is then left to gc).
    pub(crate) fn run_migration_round(&self, volumes: &[VolumeSample]) -> Result<usize> {
        let policy = self.opts.migration;
        let Some(heat) = self.tables.heat() else {
            return Ok(0);
        };
        // A copy takes reads off a volume, nothing else: files rank by their read heat.
        let heats: std::collections::HashMap<u64, f64> = heat
            .files()
            .into_iter()
            .map(|h| (h.number, h.read_heat))
            .collect();
        let version = self.state.lock().versions.current();
        let files: Vec<FileSample> = version
            .levels()
            .iter()
            .enumerate()
            .flat_map(|(level, files)| files.iter().map(move |f| (level, f)))
            .map(|(level, f)| FileSample {
                number: f.number,
                level,
                copies: f.copies().collect(),
                heat: heats.get(&f.number).copied().unwrap_or(0.0),
            })
            .collect();
        let mut done = 0;
        for m in migration::plan(policy, volumes, &files) {
            let Some(meta) = version
                .files(m.level)
                .iter()
                .find(|f| f.number == m.number)
                .cloned()
            else {
                continue;
            };
            if self.migrate(&meta, m)? {
                done += 1;
            }
        }
        Ok(done)
    }

    /// Adds a copy of live table `number` on `volume` (`Db::copy_table_to`).
    pub(crate) fn copy_table_to(&self, number: u64, volume: u32) -> Result<bool> {
        if !self.placer.allows(volume) {
            return Err(Error::InvalidArgument(format!(
                "volume {volume} is not a table volume of this database"
            )));
        }
        let version = self.state.lock().versions.current();
        let found = version
            .levels()
            .iter()
            .enumerate()
            .find_map(|(level, files)| {
                files
                    .iter()
                    .find(|f| f.number == number)
                    .map(|f| (level, f.clone()))
            });
        let Some((level, meta)) = found else {
            return Err(Error::InvalidArgument(format!(
                "table {number} is not live"
            )));
        };
        if meta.copies().any(|v| v == volume) {
            return Ok(false);
        }
        let m = Migration {
            number,
            level,
            to: volume,
            moved_from: None,
        };
        self.migrate(&meta, m)
    }

    /// Copies `f` to `m.to` and installs the copy; false if the file was gone (or its
    /// copies changed) by the time the copy was made.
    fn migrate(&self, f: &FileMeta, m: Migration) -> Result<bool> {
        // One copy at a time: two copies of one file to one volume would write the same
        // path, and the second could truncate a copy the first installed.
        let _one_at_a_time = self.migration_lock.lock();
        let f = {
            let mut st = self.state.lock();
            if st.shutting_down || st.bg_error.is_some() {
                return Ok(false);
            }
            // What the file is now: `f` may be from before another copy was installed.
            let current = st.versions.current();
            let Some(now) = current.files(m.level).iter().find(|g| g.number == f.number) else {
                return Ok(false);
            };
            if now.copies().any(|v| v == m.to) {
                return Ok(false);
            }
            st.pending_outputs.insert(f.number);
            now.as_ref().clone()
        };
        let f = &f;
        let started = Instant::now();
        let copied = self.copy_table(f, m.to);
        let mut st = self.state.lock();
        let installed = copied.and_then(|()| {
            stats_add(
                &self.counters.migration_micros,
                started.elapsed().as_micros(),
            );
            self.install_copy(&mut st, f, m)
        });
        st.pending_outputs.remove(&f.number);
        // A move's old copy, or a copy that was not installed, goes now.
        self.delete_obsolete_files(&mut st);
        installed
    }

    /// Writes a copy of `f` on volume `to`, read from the copy its volumes' budgets
    /// favour, checked against the file's checksum, synced with its directory.
    fn copy_table(&self, f: &FileMeta, to: u32) -> Result<()> {
        let copies: Vec<u32> = f.copies().collect();
        let from = copies
            .get(self.tables.chooser().choose(&copies))
            .copied()
            .unwrap_or(f.volume);
        let src_path = self.tables.path(from, f.number);
        let dst_path = self.tables.path(to, f.number);
        let src = self.storage.open(&src_path)?;
        if src.len() != f.size {
            return Err(Error::corruption(
                &src_path,
                0,
                format!("table is {} bytes, the manifest says {}", src.len(), f.size),
            ));
        }
        let mut dst = self.storage.create(&dst_path, IoClass::Migration)?;
        let mut buf = vec![0u8; COPY_CHUNK];
        let mut crc = 0u32;
        let mut at = 0u64;
        while at < f.size {
            let n = usize::try_from(f.size - at).map_or(COPY_CHUNK, |left| left.min(COPY_CHUNK));
            let chunk = &mut buf[..n];
            src.read_exact_at(at, chunk, IoClass::Migration)?;
            crc = crc32c::crc32c_append(crc, chunk);
            dst.append(chunk)?;
            at += n as u64;
        }
        if f.file_checksum != 0 && crc != f.file_checksum {
            return Err(Error::corruption(
                &src_path,
                0,
                format!(
                    "table has checksum {crc:#010x}, the manifest says {:#010x}",
                    f.file_checksum
                ),
            ));
        }
        dst.sync()?;
        self.storage.sync_dir(&self.tables.dir(to))?;
        stats_add(&self.counters.migrated_bytes, u128::from(f.size));
        Ok(())
    }

    /// Names the copy on `m.to` in the manifest (in place of `m.moved_from` for a move),
    /// if `f` is still live with the same copies.
    fn install_copy(
        &self,
        st: &mut MutexGuard<'_, super::DbState>,
        f: &FileMeta,
        m: Migration,
    ) -> Result<bool> {
        let current = st.versions.current();
        let still = current
            .files(m.level)
            .iter()
            .any(|g| g.number == f.number && g.volume == f.volume && g.replicas == f.replicas);
        if !still || st.shutting_down {
            return Ok(false);
        }
        let mut meta = f.clone();
        match m.moved_from {
            Some(old) => {
                if meta.volume == old {
                    meta.volume = m.to;
                } else {
                    meta.replicas.retain(|&v| v != old);
                    meta.replicas.push(m.to);
                }
            }
            None => meta.replicas.push(m.to),
        }
        let edit = VersionEdit {
            deleted_files: vec![(m.level as u32, f.number)],
            new_files: vec![(m.level as u32, meta)],
            ..VersionEdit::default()
        };
        if let Err(e) = self.apply_edit(st, edit) {
            // The manifest is in doubt, as after a failed flush install.
            self.set_bg_error(st, e.clone());
            return Err(e);
        }
        self.install_super_version(st);
        // New readers see the new copy; readers already open keep theirs.
        self.tables.evict(f.number);
        self.counters.migrations.fetch_add(1, Ordering::Relaxed);
        Ok(true)
    }
}

fn stats_add(counter: &std::sync::atomic::AtomicU64, v: u128) {
    counter.fetch_add(u64::try_from(v).unwrap_or(u64::MAX), Ordering::Relaxed);
}
