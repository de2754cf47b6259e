//! The check mode of the offload driver (docs/techniques/xengine-offload.md): each task
//! runs on the executor under test and again on a reference executor whose outputs go to
//! a scratch directory; the two sets of outputs must be the same bytes, cut at the same
//! places. A difference refuses the result, and the database runs the task on the host.
//! The linear, pipelined and remote executors all write identical tables for one task, so
//! any difference is a fault of the executor under test (or of its device).
//!
//! Owns: the scratch directory's files (written and removed per task) and the comparison.
//! Must not touch: the outputs of the executor under test (the database installs or
//! collects them).

use std::path::PathBuf;
use std::sync::Arc;

use super::{CompactionExecutor, CompactionResult, CompactionTask, ExecutorEnv, Trust};
use crate::error::{Error, Result};
use crate::storage::{FsStorage, IoClass, Storage};
use crate::tables::Tables;

/// Runs every task twice and compares; see the module documentation.
pub struct CheckingExecutor {
    tested: Arc<dyn CompactionExecutor>,
    reference: Arc<dyn CompactionExecutor>,
    scratch: PathBuf,
    storage: Arc<dyn Storage>,
    name: String,
}

impl CheckingExecutor {
    /// Checks `tested` against `reference` (normally `LinearExecutor`), whose outputs go to
    /// `scratch` (created if missing; it must not be a database directory).
    pub fn new(
        tested: Arc<dyn CompactionExecutor>,
        reference: Arc<dyn CompactionExecutor>,
        scratch: PathBuf,
    ) -> Self {
        let name = format!("{} checked against {}", tested.name(), reference.name());
        CheckingExecutor {
            tested,
            reference,
            scratch,
            storage: Arc::new(FsStorage::new()),
            name,
        }
    }

    /// Runs `task` on the reference into the scratch directory and compares its outputs
    /// with `got`'s; removes the scratch outputs either way.
    fn compare(
        &self,
        task: &CompactionTask,
        env: &ExecutorEnv<'_>,
        got: &CompactionResult,
    ) -> Result<()> {
        self.storage.create_dir_all(&self.scratch)?;
        let volumes = env.tables.volumes();
        let mut dirs = volumes.extra().to_vec();
        dirs.push(self.scratch.clone());
        let scratch_volume = u32::try_from(dirs.len())
            .map_err(|_| Error::InvalidArgument("too many volumes to add a scratch one".into()))?;
        let tables = Tables::new(self.storage.clone(), volumes.db_dir(), dirs, 64, None);
        let mut copy = task.clone();
        copy.output.volume = scratch_volume;
        copy.output.placement = None;
        let scratch_env = ExecutorEnv {
            storage: self.storage.as_ref(),
            tables: &tables,
            filters: env.filters,
            level0: env.level0,
            progress: None,
        };
        let want = self.reference.execute(&copy, &scratch_env);
        let verdict = want.and_then(|want| {
            let same = want.outputs.len() == got.outputs.len()
                && want.outputs.iter().zip(&got.outputs).all(|(w, g)| {
                    (w.number, &w.smallest, &w.largest, w.size, w.file_checksum)
                        == (g.number, &g.smallest, &g.largest, g.size, g.file_checksum)
                });
            if !same {
                return Err(Error::ResultRefused(format!(
                    "check mode: the outputs of task {} differ from the reference's in \
                     number, bounds, size or checksum",
                    task.id
                )));
            }
            for (w, g) in want.outputs.iter().zip(&got.outputs) {
                let mine = env
                    .storage
                    .read_all(&env.tables.path(g.volume, g.number), IoClass::Compaction)?;
                let theirs = self
                    .storage
                    .read_all(&tables.path(scratch_volume, w.number), IoClass::Compaction)?;
                if mine != theirs {
                    return Err(Error::ResultRefused(format!(
                        "check mode: output {} of task {} differs from the reference's bytes",
                        g.number, task.id
                    )));
                }
            }
            Ok(())
        });
        for n in &copy.output.file_numbers {
            let path = tables.path(scratch_volume, *n);
            if self.storage.exists(&path).unwrap_or(false) {
                let _ = self.storage.remove_file(&path);
            }
        }
        verdict
    }
}

impl CompactionExecutor for CheckingExecutor {
    fn name(&self) -> &str {
        &self.name
    }

    /// Not trusted, so that a refused check makes the database run the task itself.
    fn trust(&self) -> Trust {
        Trust::Remote
    }

    fn execute(&self, task: &CompactionTask, env: &ExecutorEnv<'_>) -> Result<CompactionResult> {
        let got = self.tested.execute(task, env)?;
        self.compare(task, env, &got)?;
        Ok(got)
    }
}

#[cfg(test)]
mod tests;
