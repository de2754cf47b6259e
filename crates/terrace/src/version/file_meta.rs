//! What the manifest records about one table file.

use crate::key::{InternalKey, SeqNo};

/// Metadata of one table file in a version. Serializable, because compaction
/// descriptions carry it to wherever a compaction runs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileMeta {
    /// File number; the file is `<volume dir>/<number:06>.sst`.
    pub number: u64,
    /// Volume (directory) holding the file; 0 is the database directory.
    pub volume: u32,
    /// Size in bytes.
    pub size: u64,
    /// Smallest internal key (a range tombstone start counts).
    pub smallest: InternalKey,
    /// Largest internal key (a range tombstone end counts, as `(end, MAX_SEQ, RangeDeletion)`).
    pub largest: InternalKey,
    /// Smallest sequence number in the file.
    pub smallest_seq: SeqNo,
    /// Largest sequence number in the file.
    pub largest_seq: SeqNo,
    /// Point entries (values and deletions).
    pub num_entries: u64,
    /// Point deletions.
    pub num_deletions: u64,
    /// Range tombstones.
    pub num_range_deletions: u64,
    /// CRC32C of the whole file, checked by `terrace inspect --verify` and by remote workers.
    pub file_checksum: u32,
    /// Volumes holding a full copy of the file besides `volume` (load migration's
    /// replicas), in the order they were made; reads go to whichever copy's volume has
    /// the most budget left, and every copy goes when the file does.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<u32>,
}

impl FileMeta {
    /// A file for unit tests: `number` on `volume` holding user keys `lo..=hi` at
    /// sequence 1 in `size` bytes, one entry, no replicas.
    #[cfg(test)]
    pub(crate) fn for_test(number: u64, volume: u32, lo: &[u8], hi: &[u8], size: u64) -> FileMeta {
        use crate::key::{InternalKey, ValueType};
        FileMeta {
            number,
            volume,
            size,
            smallest: InternalKey::new(lo, 1, ValueType::Value),
            largest: InternalKey::new(hi, 1, ValueType::Value),
            smallest_seq: 1,
            largest_seq: 1,
            num_entries: 1,
            num_deletions: 0,
            num_range_deletions: 0,
            file_checksum: 0,
            replicas: Vec::new(),
        }
    }

    /// The smallest user key.
    pub fn smallest_user_key(&self) -> &[u8] {
        self.smallest.user_key()
    }
    /// The largest user key.
    pub fn largest_user_key(&self) -> &[u8] {
        self.largest.user_key()
    }
    /// Every volume holding a copy: `volume` first, then the replicas.
    pub fn copies(&self) -> impl Iterator<Item = u32> + '_ {
        std::iter::once(self.volume).chain(self.replicas.iter().copied())
    }

    /// True if the file's user-key range intersects `[lo, hi]` (inclusive; `None` is unbounded).
    pub fn overlaps(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> bool {
        let before = hi.is_some_and(|h| self.smallest_user_key() > h);
        let after = lo.is_some_and(|l| self.largest_user_key() < l);
        !(before || after)
    }
}
