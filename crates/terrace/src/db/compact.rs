//! Running compactions: picking under the state lock, executing the (sub)tasks with the
//! lock released (on `Options::compaction_executor`, falling back to this host when an
//! untrusted executor fails or answers wrongly), and installing the outputs as one version
//! edit (`install`).

mod install;

use std::sync::Arc;
use std::time::Duration;

use parking_lot::MutexGuard;

use super::{DbInner, DbState};
use crate::compaction::{
    self, CompactionResult, CompactionTask, ExecutorEnv, LevelState, LinearExecutor, OutputSpec,
    PickedCompaction, SplitPolicy,
};
use crate::error::{Error, Result};
use crate::listener::CompactionInfo;
use crate::version::{FileMeta, VersionEdit};

/// Pieces a task's reserved file numbers allow for, at the least.
const MIN_PIECES: u64 = 16;

impl DbInner {
    /// Runs `pick` on the picker's view of the current state (levels, compact pointers,
    /// files being compacted). The version is dropped before this returns, so that garbage
    /// collection after the picked compaction can delete its inputs.
    pub(super) fn with_level_state<T>(
        &self,
        st: &DbState,
        pick: impl FnOnce(&LevelState<'_>) -> T,
    ) -> T {
        let v = st.versions.current();
        let pointers: Vec<_> = (0..v.num_levels())
            .map(|l| st.versions.compact_pointer(l).cloned())
            .collect();
        pick(&LevelState {
            levels: v.levels(),
            compact_pointers: &pointers,
            being_compacted: &st.being_compacted,
            level0_score: self.level0.compaction_score(
                &v,
                &st.being_compacted,
                &self.level0_settings,
            ),
            level1_target_bytes: self.level0.level1_target_bytes(&v, &self.level0_settings),
        })
    }

    /// The most urgent automatic compaction, if any. A level 0 that compacts itself in
    /// columns goes first when its score leads.
    fn pick_auto(&self, st: &DbState) -> Option<PickedCompaction> {
        self.with_level_state(st, |state| {
            let scores = compaction::picker::scores(state, &self.opts);
            let deeper = scores.iter().skip(1).copied().fold(0.0, f64::max);
            if state.level0_score >= 1.0 && state.level0_score >= deeper {
                if let Some(p) = self.pick_level0_column(st, state, false) {
                    return Some(p);
                }
            }
            compaction::pick(state, &self.opts).or_else(|| self.pick_for_reads(state))
        })
    }

    /// All of level 0, when seeks through it have cost as much as compacting it
    /// (`compaction::read_trigger`) and nothing more urgent is due. Only views charged for
    /// their level 0 mark it due (`db::level0_charges` decides which are).
    fn pick_for_reads(&self, state: &LevelState<'_>) -> Option<PickedCompaction> {
        if !self.read_trigger.is_due(state.levels.first()?) {
            return None;
        }
        compaction::picker::pick_level0_for_reads(state, &self.opts)
    }

    /// The next column of a level 0 that compacts itself, as a compaction into the base
    /// level.
    fn pick_level0_column(
        &self,
        st: &DbState,
        state: &LevelState<'_>,
        manual: bool,
    ) -> Option<PickedCompaction> {
        let level0 = self.level0.self_compacting()?;
        let v = st.versions.current();
        let base =
            compaction::picker::base_level(state.levels, &self.opts, state.level1_target_bytes);
        let column = level0.next_column(
            &v,
            state.being_compacted,
            &self.level0_settings,
            base,
            manual,
        )?;
        compaction::pick_into_base_level(state, base, column)
    }

    /// True if the picker would start a compaction now.
    pub(crate) fn needs_compaction(&self, st: &DbState) -> bool {
        self.pick_auto(st).is_some()
    }

    /// Picks and runs one automatic compaction. Returns whether it did any work.
    pub(crate) fn run_auto_compaction(&self, st: &mut MutexGuard<'_, DbState>) -> Result<bool> {
        match self.pick_auto(st) {
            Some(picked) => {
                self.run_compaction(st, picked)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Runs `picked` to completion. Holds the state lock only to prepare and to install.
    pub(crate) fn run_compaction(
        &self,
        st: &mut MutexGuard<'_, DbState>,
        picked: PickedCompaction,
    ) -> Result<()> {
        let units = picked.column.iter().flat_map(|c| c.input.units.iter());
        let inputs: Vec<u64> = picked
            .inputs
            .iter()
            .chain(picked.output_inputs.iter())
            .map(|f| f.number)
            .chain(units.map(|u| u.number))
            .collect();
        st.being_compacted.extend(inputs.iter().copied());
        st.running_compactions += 1;
        let r = self.run_compaction_inner(st, &picked);
        for n in &inputs {
            st.being_compacted.remove(n);
        }
        st.running_compactions -= 1;
        self.bg_done.notify_all();
        self.bg_work.notify_all();
        r
    }

    fn run_compaction_inner(
        &self,
        st: &mut MutexGuard<'_, DbState>,
        picked: &PickedCompaction,
    ) -> Result<()> {
        let out_volume = self.volume_for_level(picked.output_level);
        // A trivial move leaves files where they are: allowed when they are where the
        // output level's new files could go.
        let in_place = picked.inputs.iter().all(|f| {
            if self.placer.spreads() {
                self.placer.allows(f.volume)
            } else {
                f.volume == out_volume
            }
        });
        if picked.trivial_move && in_place {
            let mut edit = VersionEdit::default();
            for f in &picked.inputs {
                edit.deleted_files.push((picked.level as u32, f.number));
                edit.new_files
                    .push((picked.output_level as u32, f.as_ref().clone()));
            }
            if let Some(last) = picked.inputs.last() {
                edit.compact_pointers
                    .push((picked.level as u32, last.largest.clone()));
            }
            self.apply_edit(st, edit)?;
            self.install_super_version(st);
            let moved = picked.inputs.iter().map(|f| f.size).sum();
            self.counters
                .record_trivial_move(picked.output_level, moved);
            let info = CompactionInfo {
                input_level: picked.level,
                output_level: picked.output_level,
                input_files: picked.inputs.iter().map(|f| f.number).collect(),
                output_files: picked.inputs.iter().map(|f| f.number).collect(),
                bytes_read: 0,
                bytes_written: 0,
                trivial_move: true,
            };
            for l in &self.listeners {
                l.on_compaction_completed(&info);
            }
            return Ok(());
        }

        let task = self.describe(st, picked, out_volume);
        let reserved: Vec<u64> = task.output.file_numbers.clone();
        st.pending_outputs.extend(reserved.iter().copied());
        let run = MutexGuard::unlocked(st, || -> Result<_> {
            let subtasks = self.split_task(&task)?;
            let results = self.execute_parallel(&subtasks)?;
            Ok((subtasks, results))
        });
        let outcome = run.map(|(subtasks, results)| {
            self.install_compaction(st, picked, &task, &subtasks, results)
        });
        for n in &reserved {
            st.pending_outputs.remove(n);
        }
        match outcome {
            // A failed install may still be durable (CURRENT may already name the new
            // manifest), so its outputs stay until a later manifest or a reopen settles it.
            Ok(Err(e)) => Err(e),
            Ok(Ok(())) => {
                self.delete_obsolete_files(st);
                Ok(())
            }
            Err(e) => {
                self.delete_obsolete_files(st);
                Err(e)
            }
        }
    }

    /// The serializable description of `picked`, with every live snapshot and
    /// pre-allocated output file numbers.
    fn describe(&self, st: &mut DbState, picked: &PickedCompaction, volume: u32) -> CompactionTask {
        let column_bytes: u64 = picked
            .column
            .iter()
            .flat_map(|c| c.input.units.iter())
            .map(|u| u.bytes)
            .sum();
        let input_bytes: u64 = picked
            .inputs
            .iter()
            .chain(picked.output_inputs.iter())
            .map(|f| f.size)
            .sum::<u64>()
            + column_bytes;
        let target = self.opts.target_file_size_base.max(1);
        // Executors may cut a task further than max_subcompactions (a collaborative
        // executor's stolen pieces): reserve for at least MIN_PIECES pieces.
        let pieces = (self.opts.max_subcompactions as u64).max(MIN_PIECES);
        // Outputs never exceed the inputs' size by much; reserve generously: numbers are cheap.
        let count = 2 * (input_bytes / target + 2) + 2 * pieces;
        let file_numbers: Vec<u64> = (0..count).map(|_| st.versions.new_file_number()).collect();
        let id = file_numbers.first().copied().unwrap_or(0);
        let all_inputs = || {
            let files = picked.inputs.iter().chain(picked.output_inputs.iter());
            let units = picked.column.iter().flat_map(|c| c.input.units.iter());
            files
                .map(|f| (f.smallest_user_key(), f.largest_user_key()))
                .chain(units.map(|u| {
                    (
                        u.smallest_user_key.as_slice(),
                        u.largest_user_key.as_slice(),
                    )
                }))
        };
        let lo = all_inputs().map(|(s, _)| s).min();
        let hi = all_inputs().map(|(_, l)| l).max();
        let placement = self.placement_plan(
            st,
            picked.output_level,
            (lo, hi),
            &picked
                .inputs
                .iter()
                .chain(picked.output_inputs.iter())
                .map(|f| f.number)
                .collect::<Vec<_>>(),
            input_bytes,
        );
        let output = OutputSpec {
            target_file_size: self.opts.target_file_size_base,
            block_size: self.opts.block_size as u64,
            restart_interval: self.opts.block_restart_interval as u32,
            bloom_bits_per_key: self.opts.bloom_bits_per_key as u32,
            compression: self.opts.compression,
            volume,
            file_numbers,
            placement,
        };
        picked.to_task(
            id,
            self.snapshots.all(),
            output,
            self.opts.compaction_filter.clone(),
        )
    }

    /// Cuts `task` into up to `max_subcompactions` pieces of similar input size, at data
    /// block boundaries read from the inputs' indexes.
    fn split_task(&self, task: &CompactionTask) -> Result<Vec<CompactionTask>> {
        let pieces = self.opts.max_subcompactions;
        if pieces <= 1 {
            return Ok(vec![task.clone()]);
        }
        let samples = compaction::split::input_samples(task, &self.tables)?;
        let cuts = compaction::split::boundaries(task, &samples, SplitPolicy::Pieces(pieces));
        Ok(task.split(&cuts))
    }

    /// Runs subtasks in parallel threads; the first error wins.
    fn execute_parallel(&self, subtasks: &[CompactionTask]) -> Result<Vec<CompactionResult>> {
        if subtasks.len() == 1 {
            return subtasks.iter().map(|t| self.execute_task(t)).collect();
        }
        std::thread::scope(|s| {
            let handles: Vec<_> = subtasks
                .iter()
                .map(|t| s.spawn(move || self.execute_task(t)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(Error::Internal("subcompaction thread panicked".into()))
                    })
                })
                .collect()
        })
    }

    /// Compacts everything overlapping `[start, end]` down to the last non-empty level.
    pub(crate) fn compact_range(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.flush_and_wait()?;
        let mut st = self.state.lock();
        st.manual_compactions += 1;
        let r = self.compact_range_locked(&mut st, start, end);
        st.manual_compactions -= 1;
        self.bg_work.notify_all();
        r
    }

    fn compact_range_locked(
        &self,
        st: &mut MutexGuard<'_, DbState>,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Result<()> {
        self.compact_level0_columns_locked(st)?;
        // Level-0 files flushed after the call started are not waited for, so that a
        // steady stream of writes cannot keep this loop going forever.
        let (last, newest_file) = {
            let v = st.versions.current();
            let Some(last) = (0..v.num_levels()).rev().find(|l| !v.files(*l).is_empty()) else {
                return Ok(());
            };
            let newest = v
                .levels()
                .iter()
                .flatten()
                .map(|f| f.number)
                .max()
                .unwrap_or(0);
            (last.max(1), newest)
        };
        for level in 0..last {
            loop {
                if let Some(e) = &st.bg_error {
                    return Err(Error::Background(Arc::new(e.clone())));
                }
                if st.shutting_down {
                    return Err(Error::Closed);
                }
                // The version is dropped before the compaction runs, so that garbage
                // collection after its install can delete the inputs.
                let picked = {
                    let v = st.versions.current();
                    let overlapping = v.overlapping_files(level, start, end);
                    let started_before = |f: &&Arc<FileMeta>| level > 0 || f.number <= newest_file;
                    if !overlapping.iter().any(|f| started_before(&f)) {
                        break;
                    }
                    if overlapping
                        .iter()
                        .any(|f| st.being_compacted.contains(&f.number))
                    {
                        None
                    } else {
                        self.with_level_state(st, |state| {
                            compaction::pick_manual(state, &self.opts, level, start, end)
                        })
                    }
                };
                match picked {
                    Some(picked) => self.run_compaction(st, picked)?,
                    None => {
                        self.bg_done.wait_for(st, Duration::from_millis(50));
                    }
                }
            }
        }
        Ok(())
    }
}

impl DbInner {
    /// For a manual compaction: compacts everything a level 0 that compacts itself holds
    /// now into the base level, column by column (data flushed meanwhile is left for
    /// later).
    fn compact_level0_columns_locked(&self, st: &mut MutexGuard<'_, DbState>) -> Result<()> {
        let Some(level0) = self.level0.self_compacting() else {
            return Ok(());
        };
        let Some(mark) = level0.manual_mark(&st.versions.current()) else {
            return Ok(());
        };
        loop {
            if let Some(e) = &st.bg_error {
                return Err(Error::Background(Arc::new(e.clone())));
            }
            if st.shutting_down {
                return Err(Error::Closed);
            }
            if !level0.holds_marked(&st.versions.current(), mark) {
                return Ok(());
            }
            let picked =
                self.with_level_state(st, |state| self.pick_level0_column(st, state, true));
            match picked {
                Some(picked) => self.run_compaction(st, picked)?,
                None => {
                    self.bg_work.notify_all();
                    self.bg_done.wait_for(st, Duration::from_millis(50));
                }
            }
        }
    }

    /// Runs one (sub)task through the configured executor. An executor that is not
    /// trusted has its result checked in full here (outside the state lock: the check
    /// reads every output); a task it fails or answers wrongly is taken over by this
    /// host from the last output it finished (`compaction::takeover`).
    pub(crate) fn execute_task(&self, task: &CompactionTask) -> Result<CompactionResult> {
        let env = ExecutorEnv {
            storage: self.storage.as_ref(),
            tables: &self.tables,
            filters: &self.filters,
            level0: self
                .level0
                .self_compacting()
                .map(|l| l as &dyn compaction::Level0Source),
            progress: None,
        };
        let executor = &self.opts.compaction_executor;
        compaction::execute_or_take_over(executor.as_ref(), &LinearExecutor, task, &env)
    }
}
