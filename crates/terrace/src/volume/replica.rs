//! Reading a table file that has copies on several volumes (load migration's replicas):
//! each read goes to the copy whose volume is least behind its budget.
//!
//! Owns: [`ReplicatedFile`] and the choice of copy ([`CopyChooser`]). Must not touch:
//! making or deleting copies (`db::migrate` and gc do) or the manifest.
//! Concurrency: a chooser is shared by every reader; its state is atomics and the
//! throttle's own locks.

use std::fmt::Debug;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::error::Result;
use crate::storage::{IoClass, ReadableFile, ThrottledStorage};

/// Picks which copy of a file a read goes to.
pub trait CopyChooser: Send + Sync + Debug {
    /// The index into `volumes` (the volumes of a file's copies, never empty) of the copy
    /// to read.
    fn choose(&self, volumes: &[u32]) -> usize;
}

/// Copies in turn: the choice where no volume reports its budget.
#[derive(Debug, Default)]
pub struct RotatingChooser {
    turn: AtomicUsize,
}

impl CopyChooser for RotatingChooser {
    fn choose(&self, volumes: &[u32]) -> usize {
        self.turn.fetch_add(1, Ordering::Relaxed) % volumes.len().max(1)
    }
}

/// The copy on the volume least behind its throttle budget (the most tokens left);
/// a volume without limits is never behind. Ties go in turn.
#[derive(Debug)]
pub struct BacklogChooser {
    /// The volume id of each throttle rule, in rule order.
    ids: Vec<u32>,
    storage: Arc<ThrottledStorage>,
    turn: AtomicUsize,
}

impl BacklogChooser {
    /// A chooser over `storage`'s rules, which stand for volumes `ids` (in rule order).
    pub fn new(ids: Vec<u32>, storage: Arc<ThrottledStorage>) -> Self {
        BacklogChooser {
            ids,
            storage,
            turn: AtomicUsize::new(0),
        }
    }
}

impl CopyChooser for BacklogChooser {
    fn choose(&self, volumes: &[u32]) -> usize {
        let backlogs = self.storage.backlogs();
        let backlog = |v: u32| {
            self.ids
                .iter()
                .position(|&id| id == v)
                .and_then(|i| backlogs.get(i).copied().flatten())
                .unwrap_or(f64::NEG_INFINITY)
        };
        let n = volumes.len().max(1);
        let start = self.turn.fetch_add(1, Ordering::Relaxed) % n;
        let mut best = start;
        let mut best_backlog = f64::INFINITY;
        for k in 0..n {
            let i = (start + k) % n;
            let b = volumes.get(i).map_or(f64::INFINITY, |&v| backlog(v));
            if b < best_backlog {
                best = i;
                best_backlog = b;
            }
        }
        best
    }
}

/// A table file read through whichever of its copies the chooser picks; a read that
/// fails on one copy is tried on the others (a volume that failed does not fail the
/// read while a copy elsewhere is good).
pub struct ReplicatedFile {
    volumes: Vec<u32>,
    copies: Vec<Arc<dyn ReadableFile>>,
    chooser: Arc<dyn CopyChooser>,
}

impl ReplicatedFile {
    /// Reads `copies` (on `volumes`, in the same order; equal lengths, not empty) as
    /// `chooser` picks.
    pub fn new(
        volumes: Vec<u32>,
        copies: Vec<Arc<dyn ReadableFile>>,
        chooser: Arc<dyn CopyChooser>,
    ) -> Self {
        ReplicatedFile {
            volumes,
            copies,
            chooser,
        }
    }
}

impl ReadableFile for ReplicatedFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8], class: IoClass) -> Result<()> {
        let n = self.copies.len();
        let first = self.chooser.choose(&self.volumes);
        let mut failure = None;
        for k in 0..n {
            let Some(copy) = self.copies.get((first + k) % n) else {
                continue;
            };
            match copy.read_exact_at(offset, buf, class) {
                Ok(()) => return Ok(()),
                Err(e) => {
                    failure.get_or_insert(e);
                }
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Err(crate::error::Error::Internal(
                "a replicated file with no copy".into(),
            )),
        }
    }

    fn len(&self) -> u64 {
        self.copies.first().map_or(0, |c| c.len())
    }
}

#[cfg(test)]
mod tests;
