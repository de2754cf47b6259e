use std::sync::Arc;

use super::*;
use crate::key::{InternalKey, ValueType};
use crate::version::{VersionEdit, VersionSet};

fn meta(number: u64, lo: &str, hi: &str, seq: u64) -> FileMeta {
    FileMeta {
        number,
        volume: 0,
        size: 1000,
        smallest: InternalKey::new(lo.as_bytes(), seq, ValueType::Value),
        largest: InternalKey::new(hi.as_bytes(), seq, ValueType::Value),
        smallest_seq: seq,
        largest_seq: seq,
        num_entries: 1,
        num_deletions: 0,
        num_range_deletions: 0,
        file_checksum: 0,
        replicas: Vec::new(),
    }
}

#[test]
fn classic_backpressure_follows_file_count_triggers() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(crate::storage::FsStorage::new());
    let mut vs = VersionSet::create(storage, dir.path(), 7, 1 << 20).unwrap();
    let opts = crate::options::Options {
        level0_slowdown_writes_trigger: 2,
        level0_stop_writes_trigger: 3,
        level0_file_num_compaction_trigger: 1,
        ..crate::options::Options::default()
    }
    .level0_settings();
    let l0 = ClassicLevel0;
    assert_eq!(l0.backpressure(&vs.current(), &opts), Backpressure::None);
    for n in 1..=3u64 {
        let mut e = VersionEdit::default();
        e.new_files.push((0, meta(10 + n, "a", "z", n)));
        vs.log_and_apply(e).unwrap();
    }
    let v = vs.current();
    assert_eq!(l0.backpressure(&v, &opts), Backpressure::Stop);
    assert_eq!(l0.size_bytes(&v), 3000);
    assert_eq!(l0.durable_seq(&v), 3);
    assert_eq!(l0.kind(), "classic");
}
