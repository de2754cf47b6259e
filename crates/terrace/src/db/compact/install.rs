//! Installing a finished compaction: one version edit, checked and built by
//! `compaction::checked_edit`, that deletes the inputs and adds the outputs, to which this
//! adds what a finished level-0 column changes in level 0 (the level 0 says what: the
//! matrix level 0 trims or deletes the consumed rows and gives chunks back) and the compact
//! pointer; then the counters (by output level) and listeners.
//!
//! Owns: what the edit of a rewritten compaction records (trivial moves are installed
//! where they are run).
//! Must not touch: the outputs themselves or the obsolete files; the caller collects the
//! inputs and reserved numbers after the install.
//! Concurrency: runs with the state mutex held, on the thread that ran the compaction.

use std::collections::HashSet;

use parking_lot::MutexGuard;

use crate::compaction::{self, CompactionResult, CompactionTask, PickedCompaction, Trust};
use crate::db::stats::{self, CompactionBytes};
use crate::db::{DbInner, DbState};
use crate::error::{Error, Result};
use crate::listener::CompactionInfo;

impl DbInner {
    pub(super) fn install_compaction(
        &self,
        st: &mut MutexGuard<'_, DbState>,
        picked: &PickedCompaction,
        task: &CompactionTask,
        subtasks: &[CompactionTask],
        results: Vec<CompactionResult>,
    ) -> Result<()> {
        let mut edit = compaction::checked_edit(
            task,
            subtasks,
            &results,
            self.storage.as_ref(),
            &self.tables,
            Trust::Local,
        )?;
        let mut bytes = compaction_bytes(picked);
        for r in &results {
            bytes.read_rows += r.stats.level0_bytes;
            bytes.written += r.stats.output_bytes;
        }
        let mut released = 0u64;
        if let Some(column) = &picked.column {
            let level0 = self.level0.self_compacting().ok_or_else(|| {
                Error::Internal(
                    "a level-0 column compaction without a level 0 that has columns".into(),
                )
            })?;
            let done = level0.finish_column(column)?;
            edit.level0 = done.records;
            released = done.released;
        }
        let numbers: HashSet<u64> = edit.new_files.iter().map(|(_, f)| f.number).collect();
        if let Some(heat) = self.tables.heat() {
            heat.add_files(edit.new_files.iter().map(|(_, f)| f));
        }
        if let Some(last) = picked.inputs.last() {
            edit.compact_pointers
                .push((picked.level as u32, last.largest.clone()));
        }
        self.apply_edit(st, edit)?;
        self.install_super_version(st);
        self.placer.placed(numbers.len());
        self.counters.record_compaction(picked.output_level, bytes);
        {
            let mut units = self.counters.compaction_units.lock();
            for run in results.iter().flat_map(|r| r.runs.iter()) {
                units.add(run);
            }
        }
        if picked.column.is_some() {
            stats::add(&self.counters.column_compactions, 1);
            stats::add(&self.counters.row_chunks_released, released);
        }
        let mut output_files: Vec<u64> = numbers.into_iter().collect();
        output_files.sort_unstable();
        let info = CompactionInfo {
            input_level: picked.level,
            output_level: picked.output_level,
            input_files: task
                .inputs
                .iter()
                .flat_map(|i| i.files.iter().map(|f| f.number))
                .collect(),
            output_files,
            bytes_read: bytes.read(),
            bytes_written: bytes.written,
            trivial_move: false,
        };
        for l in &self.listeners {
            l.on_compaction_completed(&info);
        }
        Ok(())
    }
}

/// What `picked` reads of table files, by level, each input file counted once (also when
/// subcompactions split it): the files' sizes. A compaction of a level into itself (the
/// last level, compacted manually) reads only its output level, as RocksDB counts it. The
/// matrix rows' bytes come from the results: only the executor knows what a column read.
fn compaction_bytes(picked: &PickedCompaction) -> CompactionBytes {
    let size = |files: &[std::sync::Arc<crate::version::FileMeta>]| -> u64 {
        files.iter().map(|f| f.size).sum()
    };
    let (input, output) = (size(&picked.inputs), size(&picked.output_inputs));
    let into_itself = picked.level == picked.output_level;
    CompactionBytes {
        read_input: if into_itself { 0 } else { input },
        read_rows: 0,
        read_output: if into_itself { input + output } else { output },
        written: 0,
    }
}
