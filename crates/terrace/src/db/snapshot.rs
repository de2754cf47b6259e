//! Snapshots: pinned sequence numbers that reads can use and compactions must respect.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::key::SeqNo;

/// The live snapshots of a database, with a reference count per sequence number.
#[derive(Debug, Default)]
pub(crate) struct SnapshotList {
    seqs: Mutex<BTreeMap<SeqNo, usize>>,
}

impl SnapshotList {
    /// Registers a snapshot at the current value of `last_seq`, read under the list's lock:
    /// a compaction reads the list under the same lock, so it either sees this snapshot or
    /// started before it and holds nothing newer than the sequence it reads at.
    pub(crate) fn acquire_current(&self, last_seq: &AtomicU64) -> SeqNo {
        let mut m = self.seqs.lock();
        let seq = last_seq.load(Ordering::Acquire);
        *m.entry(seq).or_insert(0) += 1;
        seq
    }

    pub(crate) fn release(&self, seq: SeqNo) {
        let mut m = self.seqs.lock();
        if let Some(c) = m.get_mut(&seq) {
            *c -= 1;
            if *c == 0 {
                m.remove(&seq);
            }
        }
    }

    /// Every live snapshot, ascending.
    pub(crate) fn all(&self) -> Vec<SeqNo> {
        self.seqs.lock().keys().copied().collect()
    }
}

/// A consistent point-in-time view of the database. Reads with
/// `ReadOptions { snapshot_seq: Some(snapshot.seq()), .. }` see exactly the writes
/// acknowledged before it was taken. Released on drop. `Send + Sync`.
pub struct Snapshot {
    pub(crate) seq: SeqNo,
    pub(crate) list: Arc<SnapshotList>,
}

impl Snapshot {
    /// The sequence number this snapshot reads at.
    pub fn seq(&self) -> SeqNo {
        self.seq
    }

    /// Read options that read at this snapshot.
    pub fn read_options(&self) -> crate::options::ReadOptions {
        crate::options::ReadOptions {
            snapshot_seq: Some(self.seq),
            ..Default::default()
        }
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        self.list.release(self.seq);
    }
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot").field("seq", &self.seq).finish()
    }
}
