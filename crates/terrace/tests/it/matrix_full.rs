//! Logs that hold more than a matrix container can take (it was full when the database
//! closed, or the memtables were large): the open keeps the memtables level 0 has no room
//! for in memory, and their logs on disk, until compaction makes room.

use std::collections::BTreeMap;

use terrace::pmem::PmemMode;
use terrace::{Db, Options};

fn options(dir: &std::path::Path, write_buffer_size: usize) -> Options {
    let mut o = crate::small_options();
    o.write_buffer_size = write_buffer_size;
    o.max_write_buffer_number = 4;
    o.level0 = crate::matrix_level0(dir, 64 << 10, PmemMode::Mapped);
    o
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    assert_eq!(
        crate::scan_all(db),
        model
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<Vec<_>>()
    );
}

#[test]
fn logs_larger_than_the_container_replay_into_memtables_that_wait_for_room() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let mut model = BTreeMap::new();
    // One large memtable that is never flushed: about 150 KiB stay in the log at close,
    // more than the 64 KiB container (an 80 KiB region) can take.
    let db = Db::open(&dir, options(tmp.path(), 1 << 20)).unwrap();
    for i in 0..1400u32 {
        let v = vec![b'a' + (i % 26) as u8; 100];
        db.put(&key(i), &v).unwrap();
        model.insert(key(i), v);
    }
    assert_eq!(db.stats().flushes, 0);
    db.close().unwrap();

    // Replayed into 8 KiB memtables: the open flushes what fits and keeps the rest in
    // memory (and its logs on disk); reads see all of it.
    let db = Db::open(&dir, options(tmp.path(), 8 << 10)).unwrap();
    check(&db, &model);
    db.put(&key(5000), b"after").unwrap();
    model.insert(key(5000), b"after".to_vec());
    db.close().unwrap();

    // Again, then once compaction has made room for every memtable.
    let db = Db::open(&dir, options(tmp.path(), 8 << 10)).unwrap();
    check(&db, &model);
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    check(&db, &model);
    assert!(db.stats().levels[1].files > 0, "nothing reached level 1");
    db.close().unwrap();
    let db = Db::open(&dir, options(tmp.path(), 8 << 10)).unwrap();
    check(&db, &model);
}
