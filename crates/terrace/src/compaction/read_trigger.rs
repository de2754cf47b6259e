//! Read-triggered compaction of level 0: LevelDB's seek compaction, narrowed to level 0
//! (docs/techniques/leveled-compaction.md, "Compaction triggered by reads").
//!
//! Every level-0 table overlaps the others, so an iterator seek reads one data block from
//! each of them; below the file-count trigger nothing compacts them, however many seeks
//! pay for them. Here each seek charges the view it ran on one block read per level-0
//! table; once level 0 has cost as many reads as compacting it is taken to be worth
//! ([`BYTES_PER_READ`] of its bytes per read, at least [`MIN_READS_PER_FILE`] per table),
//! level 0 is due and the picker compacts all of it into the base level when nothing more
//! urgent is.
//!
//! Owns: the charges and the due mark. Must not touch: versions or the choice of files
//! (`picker::pick_level0_for_reads`).
//! Concurrency: readers charge with relaxed atomics; the seek that takes a view to its
//! budget marks level 0 due, once per view. The mark is an atomic word naming the newest
//! level-0 table of that view, so a mark left by an older view is recognised and dropped
//! once that table has left level 0; it stays while the picker cannot act on it (level 0
//! busy with another compaction).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use crate::version::FileMeta;

/// Bytes of compaction one block read through level 0 is taken to be worth: LevelDB's
/// estimate for a seek (one seek costs about as much as compacting 16 KiB).
pub const BYTES_PER_READ: u64 = 16 << 10;
/// Fewest reads each level-0 table is charged before level 0 is due, so that small
/// tables are not compacted after a handful of seeks.
pub const MIN_READS_PER_FILE: u64 = 100;

/// The charges against one view's level 0; made with each view (super version), so a
/// flush or a compaction starts the count again.
#[derive(Debug)]
pub struct Level0Charges {
    /// Tables in the view's level 0.
    files: u64,
    /// The newest of them (0: level 0 is empty).
    newest: u64,
    /// Block reads after which level 0 is due.
    budget: u64,
    charged: AtomicU64,
}

impl Level0Charges {
    /// Charges for a level 0 of `files` (empty for a level 0 that compacts itself).
    pub fn new(files: &[Arc<FileMeta>]) -> Self {
        let count = files.len() as u64;
        let bytes: u64 = files.iter().map(|f| f.size).sum();
        Level0Charges {
            files: count,
            newest: files.iter().map(|f| f.number).max().unwrap_or(0),
            budget: (bytes / BYTES_PER_READ).max(count.saturating_mul(MIN_READS_PER_FILE)),
            charged: AtomicU64::new(0),
        }
    }

    /// Charges one seek through this level 0: the newest table's number from the seek
    /// that takes the charges to the budget (one seek per view), `None` from the others
    /// and when level 0 is empty. A view marks level 0 due once, so a long-lived iterator
    /// on an old view does not wake the compaction threads again and again.
    pub fn charge_seek(&self) -> Option<u64> {
        if self.files == 0 {
            return None;
        }
        let before = self.charged.fetch_add(self.files, Ordering::Relaxed);
        let now = before.saturating_add(self.files);
        (before < self.budget && now >= self.budget).then_some(self.newest)
    }
}

/// Whether level 0 is due, and how to wake the compaction threads when it becomes due.
#[derive(Default)]
pub struct ReadTrigger {
    /// The newest level-0 table of the view that became due; 0 when none is.
    due: AtomicU64,
    waker: OnceLock<Box<dyn Fn() + Send + Sync>>,
}

impl std::fmt::Debug for ReadTrigger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadTrigger")
            .field("due", &self.due.load(Ordering::Relaxed))
            .finish()
    }
}

impl ReadTrigger {
    /// Sets what wakes the compaction threads (once; later calls are ignored).
    pub fn set_waker(&self, wake: Box<dyn Fn() + Send + Sync>) {
        let _ = self.waker.set(wake);
    }

    /// Marks level 0 due (`newest`: its newest table, from [`Level0Charges::charge_seek`]);
    /// wakes the compaction threads the first time.
    pub fn mark_due(&self, newest: u64) {
        if self.due.swap(newest, Ordering::Relaxed) != newest {
            if let Some(wake) = self.waker.get() {
                wake();
            }
        }
    }

    /// Whether level 0 is due, given the numbers of the tables in it now. A mark whose
    /// table has left level 0 (compacted since) is dropped.
    pub fn is_due(&self, level0: &[Arc<FileMeta>]) -> bool {
        let newest = self.due.load(Ordering::Relaxed);
        if newest == 0 {
            return false;
        }
        if level0.iter().any(|f| f.number == newest) {
            return true;
        }
        let _ = self
            .due
            .compare_exchange(newest, 0, Ordering::Relaxed, Ordering::Relaxed);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(number: u64, size: u64) -> Arc<FileMeta> {
        Arc::new(FileMeta::for_test(number, 0, b"a", b"z", size))
    }

    #[test]
    fn level0_is_due_once_its_seeks_cost_its_budget() {
        // Two 4 MiB tables: 8 MiB / 16 KiB = 512 block reads, 256 seeks.
        let files = [file(7, 4 << 20), file(9, 4 << 20)];
        let charges = Level0Charges::new(&files);
        for _ in 0..255 {
            assert_eq!(charges.charge_seek(), None);
        }
        assert_eq!(charges.charge_seek(), Some(9));
        assert_eq!(charges.charge_seek(), None, "one mark per view");
        // Small tables: at least 100 reads each.
        let small = Level0Charges::new(&[file(3, 1000)]);
        assert_eq!((0..99).filter_map(|_| small.charge_seek()).count(), 0);
        assert_eq!(small.charge_seek(), Some(3));
        // An empty level 0 is never due.
        assert_eq!(Level0Charges::new(&[]).charge_seek(), None);
    }

    #[test]
    fn the_mark_wakes_once_and_is_dropped_when_its_table_leaves_level0() {
        let woken = Arc::new(AtomicU64::new(0));
        let t = ReadTrigger::default();
        let w = woken.clone();
        t.set_waker(Box::new(move || {
            w.fetch_add(1, Ordering::Relaxed);
        }));
        let files = [file(7, 1), file(9, 1)];
        assert!(!t.is_due(&files));
        t.mark_due(9);
        t.mark_due(9);
        assert_eq!(woken.load(Ordering::Relaxed), 1);
        assert!(t.is_due(&files));
        // Level 0 compacted: table 9 is gone, a new flush brought table 12.
        assert!(!t.is_due(&[file(12, 1)]));
        assert!(!t.is_due(&files), "the stale mark was dropped");
        t.mark_due(12);
        assert_eq!(woken.load(Ordering::Relaxed), 2);
    }
}
