//! What a flush writes of a memtable, for every kind of level 0: the entries a reader can
//! still tell apart, in internal-key order.
//!
//! Owns: running the memtable through the compaction stream (`compaction::stream`) with
//! the live snapshots, as RocksDB's flush does: of a key's versions that no snapshot
//! tells apart only the newest is written, and no point entry a newer range tombstone of
//! the same stripe covers. Nothing else is dropped (deletions stay: older versions may
//! lie below), and the compaction filter does not run.
//! Must not touch: where the entries go (a table file, a matrix row).

use crate::compaction::stream::{CompactionStream, StreamConfig};
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{SeqNo, MAX_SEQ};
use crate::range_del::{FragmentedTombstones, RangeTombstone};

/// Calls `add` with each entry a flush keeps of the memtable `iter` walks (from its first
/// entry, wherever it stands), given the memtable's range `tombstones` and the live
/// `snapshots`. A snapshot taken after the memtable stopped taking writes
/// reads at or above every sequence number in it, so it splits no pair of versions this
/// drops.
///
/// # Errors
/// The memtable iterator's errors, a key that is not an internal key, and `add`'s.
pub(crate) fn for_each_kept(
    iter: &mut dyn InternalIterator,
    tombstones: &[RangeTombstone],
    snapshots: &[SeqNo],
    mut add: impl FnMut(&[u8], &[u8]) -> Result<()>,
) -> Result<()> {
    let fragmented = FragmentedTombstones::new(tombstones, MAX_SEQ);
    let config = StreamConfig {
        snapshots,
        ..StreamConfig::default()
    };
    let mut stream = CompactionStream::new(iter, &fragmented, config);
    while let Some((k, v)) = stream.next_entry()? {
        add(k, v)?;
    }
    Ok(())
}
