//! The version set: the current version, the counters the manifest keeps (file numbers,
//! last sequence, log number, compact pointers), and the manifest that makes them durable.
//!
//! Owns: creating, replaying, appending to and rolling over the MANIFEST; switching CURRENT;
//! tracking which older versions readers still hold.
//! Must not touch: table or log contents; deleting table files (callers use `live_files`).
//! Concurrency: not synchronised; the database keeps its `VersionSet` under its mutex.
//! Versions handed out by `current` are immutable and may be used from any thread.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use super::file_name::{manifest_file_name, CURRENT_FILE_NAME};
use super::level0_state::{Level0State, NoLevel0State};
use super::manifest::{write_current, ManifestWriter};
use super::replay::replay_manifest;
use super::{Version, VersionEdit};
use crate::error::{Error, Result};
use crate::key::{InternalKey, SeqNo};
use crate::storage::Storage;

/// The live versions and the manifest of one database. `Send` but not `Sync`: the
/// database keeps it under its mutex.
pub struct VersionSet {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    max_manifest_bytes: u64,
    current: Arc<Version>,
    /// Every version installed so far that may still be alive; pruned on install.
    installed: Vec<Weak<Version>>,
    /// The number the next installed version gets.
    next_version_number: u64,
    /// The manifest being appended to; `None` after recovery or after a failed write, in
    /// which case the next edit starts a new manifest.
    manifest: Option<ManifestWriter>,
    /// The manifest CURRENT names.
    manifest_number: u64,
    next_file_number: u64,
    last_sequence: SeqNo,
    log_number: u64,
    /// `VersionEdit::external_flushed` so far (0: none).
    external_flushed: SeqNo,
    compact_pointers: Vec<Option<InternalKey>>,
}

impl VersionSet {
    fn empty(
        storage: Arc<dyn Storage>,
        dir: &Path,
        num_levels: usize,
        max_manifest_bytes: u64,
        level0: Arc<dyn Level0State>,
    ) -> Result<Self> {
        if num_levels == 0 {
            return Err(Error::InvalidArgument(
                "num_levels must be at least 1".into(),
            ));
        }
        let mut first = Version::with_level0(num_levels, level0);
        first.set_number(1);
        let current = Arc::new(first);
        Ok(VersionSet {
            storage,
            dir: dir.to_path_buf(),
            max_manifest_bytes,
            installed: vec![Arc::downgrade(&current)],
            next_version_number: 2,
            current,
            manifest: None,
            manifest_number: 0,
            next_file_number: 1,
            last_sequence: 0,
            log_number: 0,
            external_flushed: 0,
            compact_pointers: vec![None; num_levels],
        })
    }

    /// Creates a new database's metadata in `dir`: writes `MANIFEST-000001` holding a
    /// snapshot edit, then CURRENT.
    ///
    /// # Errors
    /// `InvalidArgument` if `num_levels` is 0 or `dir` already holds a CURRENT file;
    /// I/O errors.
    pub fn create(
        storage: Arc<dyn Storage>,
        dir: &Path,
        num_levels: usize,
        max_manifest_bytes: u64,
    ) -> Result<Self> {
        Self::create_with_level0(
            storage,
            dir,
            num_levels,
            max_manifest_bytes,
            Arc::new(NoLevel0State),
        )
    }

    /// [`VersionSet::create`] for a level 0 whose empty state is `level0`.
    ///
    /// # Errors
    /// As `create`.
    pub fn create_with_level0(
        storage: Arc<dyn Storage>,
        dir: &Path,
        num_levels: usize,
        max_manifest_bytes: u64,
        level0: Arc<dyn Level0State>,
    ) -> Result<Self> {
        let mut set = Self::empty(storage, dir, num_levels, max_manifest_bytes, level0)?;
        set.storage.create_dir_all(dir)?;
        if set.storage.exists(&dir.join(CURRENT_FILE_NAME))? {
            return Err(Error::InvalidArgument(format!(
                "{} already holds a database",
                dir.display()
            )));
        }
        let v = set.current.clone();
        let cps = set.compact_pointers.clone();
        set.start_manifest(&v, set.log_number, set.last_sequence, &cps)?;
        Ok(set)
    }

    /// Opens an existing database's metadata: reads CURRENT and replays the manifest it
    /// names. An incomplete final record (cut off by the end of the file: a write that was
    /// never acknowledged) is dropped. The manifest is not written to; the first
    /// `log_and_apply` starts a new one (see docs/formats/manifest.md, "Recovery").
    ///
    /// # Errors
    /// `Corruption { file, offset }` for any damaged record, a record that contradicts the
    /// ones before it, or a manifest without a complete record or next file number;
    /// `Unsupported` for a field written by a newer release that may not be skipped;
    /// `InvalidArgument` if the manifest uses more levels than `num_levels`; I/O errors.
    pub fn recover(
        storage: Arc<dyn Storage>,
        dir: &Path,
        num_levels: usize,
        max_manifest_bytes: u64,
    ) -> Result<Self> {
        Self::recover_with_level0(
            storage,
            dir,
            num_levels,
            max_manifest_bytes,
            Arc::new(NoLevel0State),
        )
    }

    /// [`VersionSet::recover`] for a level 0 whose empty state is `level0`: its records
    /// in the manifest are applied to it.
    ///
    /// # Errors
    /// As `recover`; `Corruption` also for level-0 records the state refuses.
    pub fn recover_with_level0(
        storage: Arc<dyn Storage>,
        dir: &Path,
        num_levels: usize,
        max_manifest_bytes: u64,
        level0: Arc<dyn Level0State>,
    ) -> Result<Self> {
        let mut set = Self::empty(storage, dir, num_levels, max_manifest_bytes, level0.clone())?;
        let r = replay_manifest(set.storage.as_ref(), dir, num_levels, level0)?;
        set.next_file_number = r.next_file_number;
        set.last_sequence = r.last_sequence;
        set.log_number = r.log_number;
        set.external_flushed = r.external_flushed;
        set.compact_pointers = r.compact_pointers;
        set.manifest_number = r.manifest_number;
        set.mark_file_number_used(r.manifest_number);
        set.mark_file_number_used(r.log_number);
        let numbers: Vec<u64> = r.version.numbers_in_use().collect();
        for n in numbers {
            set.mark_file_number_used(n);
        }
        set.install(r.version);
        Ok(set)
    }

    /// The current version.
    pub fn current(&self) -> Arc<Version> {
        self.current.clone()
    }

    /// Applies `edit` to the current version, makes it durable, then installs the result.
    ///
    /// Marks the edit's file numbers (and log number) as used, fills in `next_file_number`
    /// and `last_sequence` from the set (keeping the edit's `last_sequence` if larger) and
    /// `log_number` if unset, appends the edit to the manifest and syncs it. If the manifest
    /// has grown past `max_manifest_bytes` (or none is open, as after recovery), writes a
    /// new manifest holding a snapshot instead, switches CURRENT crash-safely and deletes the
    /// old manifest. Nothing is installed on error, and the next edit starts a new manifest.
    ///
    /// # Errors
    /// `InvalidArgument` if the edit deletes a file that is not in the named level, adds a
    /// live file number, makes files overlap in a level from 1 on, names a level out of
    /// range, or moves the log number backwards; I/O errors of the manifest or CURRENT.
    pub fn log_and_apply(&mut self, mut edit: VersionEdit) -> Result<()> {
        if let Some(n) = edit.log_number {
            if n < self.log_number {
                return Err(Error::InvalidArgument(format!(
                    "log number {n} is below the current {}",
                    self.log_number
                )));
            }
            self.mark_file_number_used(n);
        }
        for (_, f) in &edit.new_files {
            self.mark_file_number_used(f.number);
        }
        let version = self
            .current
            .apply(&edit)
            .map_err(|e| Error::InvalidArgument(e.reason()))?;
        if !edit.level0.is_empty() {
            for n in version.level0().numbers() {
                self.mark_file_number_used(n);
            }
        }
        let log_number = edit.log_number.unwrap_or(self.log_number);
        let last_sequence = edit.last_sequence.unwrap_or(0).max(self.last_sequence);
        let external_flushed = edit
            .external_flushed
            .unwrap_or(0)
            .max(self.external_flushed);
        let mut cps = self.compact_pointers.clone();
        for (level, k) in &edit.compact_pointers {
            if let Some(slot) = usize::try_from(*level).ok().and_then(|l| cps.get_mut(l)) {
                *slot = Some(k.clone());
            }
        }
        let roll = self
            .manifest
            .as_ref()
            .is_none_or(|m| m.len() > self.max_manifest_bytes);
        if roll {
            let previous = std::mem::replace(&mut self.external_flushed, external_flushed);
            if let Err(e) = self.start_manifest(&version, log_number, last_sequence, &cps) {
                self.external_flushed = previous;
                return Err(e);
            }
        } else {
            edit.external_flushed = (external_flushed > 0).then_some(external_flushed);
            edit.log_number = Some(log_number);
            edit.last_sequence = Some(last_sequence);
            edit.next_file_number = Some(self.next_file_number);
            let payload = edit.encode();
            let written = match self.manifest.as_mut() {
                Some(m) => m.append_synced(&payload),
                None => Err(Error::Internal("no manifest open".into())),
            };
            if let Err(e) = written {
                // The file may now end in a partial record: never append to it again.
                self.manifest = None;
                return Err(e);
            }
        }
        self.log_number = log_number;
        self.last_sequence = last_sequence;
        self.external_flushed = external_flushed;
        self.compact_pointers = cps;
        self.install(version);
        Ok(())
    }

    /// Allocates a file number. It becomes durable with the next logged edit.
    pub fn new_file_number(&mut self) -> u64 {
        let n = self.next_file_number;
        self.next_file_number = n.saturating_add(1);
        n
    }

    /// Makes sure `n` is never allocated again.
    pub fn mark_file_number_used(&mut self, n: u64) {
        if n >= self.next_file_number {
            self.next_file_number = n.saturating_add(1);
        }
    }

    /// The largest sequence number written.
    pub fn last_sequence(&self) -> SeqNo {
        self.last_sequence
    }

    /// Records the largest sequence number written; durable with the next logged edit.
    pub fn set_last_sequence(&mut self, s: SeqNo) {
        self.last_sequence = s;
    }

    /// Write-ahead logs numbered below this are obsolete.
    pub fn log_number(&self) -> u64 {
        self.log_number
    }

    /// Every write of the external log with sequence numbers at or below this is in
    /// table files (0: none, or no external log).
    pub fn external_flushed(&self) -> SeqNo {
        self.external_flushed
    }

    /// The number of the manifest CURRENT names.
    pub fn manifest_number(&self) -> u64 {
        self.manifest_number
    }

    /// Numbers of the table files of the current version and of every older version a
    /// reader still holds: the files that must not be deleted.
    pub fn live_files(&self) -> HashSet<u64> {
        let mut live: HashSet<u64> = self.current.file_numbers().collect();
        for v in self.installed.iter().filter_map(Weak::upgrade) {
            live.extend(v.file_numbers());
        }
        live
    }

    /// Every copy of a table file that any live version references, as
    /// `(volume, number)`: each file's volume and its replicas'.
    pub fn live_copies(&self) -> HashSet<(u32, u64)> {
        let mut live = HashSet::new();
        let versions = std::iter::once(self.current.clone())
            .chain(self.installed.iter().filter_map(Weak::upgrade));
        for v in versions {
            for f in v.levels().iter().flatten() {
                live.extend(f.copies().map(|vol| (vol, f.number)));
            }
        }
        live
    }

    /// Where the next compaction of `level` starts, if one was recorded.
    pub fn compact_pointer(&self, level: usize) -> Option<&InternalKey> {
        self.compact_pointers.get(level).and_then(Option::as_ref)
    }

    fn install(&mut self, mut version: Version) {
        version.set_number(self.next_version_number);
        self.next_version_number += 1;
        self.current = Arc::new(version);
        self.installed.retain(|w| w.strong_count() > 0);
        self.installed.push(Arc::downgrade(&self.current));
    }

    /// Writes a new manifest holding a snapshot of `version` and the given counters, points
    /// CURRENT at it and deletes the previous manifest.
    fn start_manifest(
        &mut self,
        version: &Version,
        log_number: u64,
        last_sequence: SeqNo,
        cps: &[Option<InternalKey>],
    ) -> Result<()> {
        self.manifest = None;
        let number = self.new_file_number();
        let snapshot = VersionEdit {
            log_number: Some(log_number),
            next_file_number: Some(self.next_file_number),
            last_sequence: Some(last_sequence),
            external_flushed: (self.external_flushed > 0).then_some(self.external_flushed),
            deleted_files: Vec::new(),
            new_files: version
                .levels()
                .iter()
                .enumerate()
                .flat_map(|(l, files)| files.iter().map(move |f| (l as u32, (**f).clone())))
                .collect(),
            level0: version.level0().records(),
            compact_pointers: cps
                .iter()
                .enumerate()
                .filter_map(|(l, k)| k.clone().map(|k| (l as u32, k)))
                .collect(),
            unknown_fields: Vec::new(),
        };
        let storage = self.storage.clone();
        let mut writer = ManifestWriter::create(storage.as_ref(), &self.dir, number)?;
        if let Err(e) = writer.append_synced(&snapshot.encode()) {
            let path = writer.path.clone();
            drop(writer);
            if let Err(rm) = storage.remove_file(&path) {
                tracing::warn!(manifest = %path.display(), error = %rm, "cannot remove unused manifest");
            }
            return Err(e);
        }
        // If this fails, CURRENT may name either manifest: keep both files.
        write_current(storage.as_ref(), &self.dir, number)?;
        let old = std::mem::replace(&mut self.manifest_number, number);
        self.manifest = Some(writer);
        if old != 0 && old != number {
            let old_path = self.dir.join(manifest_file_name(old));
            if let Err(e) = storage.remove_file(&old_path) {
                tracing::warn!(manifest = %old_path.display(), error = %e, "cannot remove old manifest");
            }
        }
        Ok(())
    }
}
