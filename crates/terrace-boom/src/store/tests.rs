use std::path::Path;

use terrace::{Db, Options};

use super::*;
use crate::layout::{encode_entry, entry_alloc_len};

fn small() -> StoreConfig {
    StoreConfig {
        segment_bytes: 64 << 10,
        segments: 4,
    }
}

/// A database using `store` as its external log.
fn db_on(dir: &Path, store: &Arc<BoomStore>) -> Db {
    let opts = Options {
        external_log: Some(store.clone()),
        write_buffer_size: 64 << 10,
        ..Options::default()
    };
    Db::open(dir.join("db"), opts).unwrap()
}

/// A client's view: the region file mapped on its own, and where it appends next.
struct Client {
    region: SharedFile,
    grant: SegmentGrant,
    at: u64,
}

impl Client {
    fn new(store: &BoomStore) -> Client {
        let region =
            SharedFile::open_or_create(store.region_path(), store.config().region_len()).unwrap();
        Client {
            region,
            grant: store.allocate().unwrap(),
            at: 0,
        }
    }

    /// Appends an entry and returns its offset.
    fn append(&mut self, key: &[u8], value: &[u8]) -> u64 {
        let len = entry_alloc_len(key.len(), value.len()).unwrap();
        let e = encode_entry(key, value, self.at as u32, len).unwrap();
        let offset = self.at;
        self.region
            .write(self.grant.region_offset + offset, &e)
            .unwrap();
        self.at += u64::from(len);
        offset
    }

    fn put(&mut self, store: &Arc<BoomStore>, db: &Db, key: &[u8], value: &[u8]) -> Result<u64> {
        let offset = self.append(key, value);
        store.commit_put(db, &self.grant, offset)
    }
}

#[test]
fn committed_entries_are_read_through_the_engine_and_replayed_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let store = BoomStore::open(dir.path(), small()).unwrap();
    let db = db_on(dir.path(), &store);
    let mut c = Client::new(&store);
    let v1 = c.put(&store, &db, b"a", b"1").unwrap();
    let v2 = c.put(&store, &db, b"b", b"22").unwrap();
    db.put(b"c", b"resp").unwrap();
    let v3 = c.put(&store, &db, b"a", b"333").unwrap();
    assert!(v1 < v2 && v2 + 1 < v3, "{v1} {v2} {v3}");
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"333"[..]));
    // The version slot tells the client its version.
    let slot = c.region.read_vec(c.grant.region_offset + 24, 8).unwrap();
    assert_eq!(u64::from_le_bytes(slot.try_into().unwrap()), v1);
    drop(db);
    drop(c);
    drop(store);
    // Restarted: nothing was flushed, so the segment is replayed; it was active, so it
    // is sealed now (its client is gone).
    let store = BoomStore::open(dir.path(), small()).unwrap();
    assert_eq!(store.segment_counts(), (3, 0, 1));
    let db = db_on(dir.path(), &store);
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"333"[..]));
    assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"22"[..]));
    assert_eq!(db.get(b"c").unwrap().as_deref(), Some(&b"resp"[..]));
    assert_eq!(
        store.segment_counts(),
        (4, 0, 0),
        "the open flushed what it replayed, and freed the segment"
    );
}

#[test]
fn garbage_out_of_place_or_foreign_entries_are_refused_and_apply_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = BoomStore::open(dir.path(), small()).unwrap();
    let db = db_on(dir.path(), &store);
    let mut c = Client::new(&store);
    let mut other = Client::new(&store);
    c.put(&store, &db, b"k", b"v").unwrap();
    // Not at the append point.
    let offset = c.append(b"x", b"1");
    assert!(matches!(
        store.commit_put(&db, &c.grant, offset + 64),
        Err(BoomError::BadEntry(_))
    ));
    // Garbage where the entry should be.
    c.region
        .write(c.grant.region_offset + offset, &[0xAB; 64])
        .unwrap();
    assert!(matches!(
        store.commit_put(&db, &c.grant, offset),
        Err(BoomError::BadEntry(_))
    ));
    // A torn body: checksum mismatch.
    let e = encode_entry(b"x", b"1", offset as u32, 64).unwrap();
    c.region.write(c.grant.region_offset + offset, &e).unwrap();
    c.region
        .write(c.grant.region_offset + offset + 33, b"Z")
        .unwrap();
    assert!(matches!(
        store.commit_put(&db, &c.grant, offset),
        Err(BoomError::BadEntry(_))
    ));
    // Past the segment's end.
    assert!(store
        .commit_put(&db, &c.grant, small().segment_bytes)
        .is_err());
    // Another client's segment, or an old generation of this one.
    let stale = SegmentGrant {
        generation: c.grant.generation + 1,
        ..c.grant
    };
    assert!(matches!(
        store.commit_put(&db, &stale, 0),
        Err(BoomError::InvalidArgument(_))
    ));
    // None of it reached the engine; the other client goes on.
    assert_eq!(db.get(b"x").unwrap(), None);
    other.put(&store, &db, b"o", b"ok").unwrap();
    assert_eq!(db.get(b"o").unwrap().as_deref(), Some(&b"ok"[..]));
}

#[test]
fn sealed_segments_are_freed_once_tables_hold_their_writes() {
    let dir = tempfile::tempdir().unwrap();
    let store = BoomStore::open(dir.path(), small()).unwrap();
    let db = db_on(dir.path(), &store);
    let mut c = Client::new(&store);
    for i in 0..20u32 {
        c.put(&store, &db, format!("k{i}").as_bytes(), &[b'v'; 100])
            .unwrap();
    }
    store.seal(&c.grant).unwrap();
    assert_eq!(store.segment_counts(), (3, 0, 1));
    assert!(
        store.commit_put(&db, &c.grant, c.at).is_err(),
        "a sealed segment takes no more"
    );
    db.flush().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while store.segment_counts().2 > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(store.segment_counts(), (4, 0, 0));
    // An active segment is never freed, whatever the engine flushed.
    let mut c = Client::new(&store);
    c.put(&store, &db, b"z", b"1").unwrap();
    db.flush().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(store.segment_counts(), (3, 1, 0));
    // Every segment handed out: the next client is refused.
    for _ in 0..3 {
        store.allocate().unwrap();
    }
    assert!(matches!(store.allocate(), Err(BoomError::NoFreeSegment)));
}

#[test]
fn a_full_segment_refuses_the_entry_that_does_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    let store = BoomStore::open(dir.path(), small()).unwrap();
    let db = db_on(dir.path(), &store);
    let mut c = Client::new(&store);
    let value = vec![b'v'; 4000];
    let mut n = 0;
    while c.at + 4096 <= small().segment_bytes {
        c.put(&store, &db, format!("k{n}").as_bytes(), &value)
            .unwrap();
        n += 1;
    }
    assert_eq!(n, 16);
    // The next entry would run past the end: the client cannot even write it there, and
    // a header claiming it is refused.
    let e = encode_entry(b"big", &value, c.at as u32, 4096).unwrap();
    c.region
        .write(c.grant.region_offset + c.at, &e[..64])
        .unwrap();
    assert!(store.commit_put(&db, &c.grant, c.at).is_err());
}

#[test]
fn settings_that_differ_from_the_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    drop(BoomStore::open(dir.path(), small()).unwrap());
    let other = StoreConfig {
        segments: 8,
        ..small()
    };
    assert!(BoomStore::open(dir.path(), other).is_err());
    let odd = StoreConfig {
        segment_bytes: 1000,
        ..small()
    };
    assert!(matches!(
        BoomStore::open(dir.path(), odd),
        Err(BoomError::InvalidArgument(_))
    ));
}

#[test]
fn a_sealed_segment_with_room_is_handed_out_again_and_both_clients_entries_replay() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        segment_bytes: 64 << 10,
        segments: 2,
    };
    let store = BoomStore::open(dir.path(), config).unwrap();
    let db = db_on(dir.path(), &store);
    let mut first = Client::new(&store);
    first.put(&store, &db, b"a", b"1").unwrap();
    first.put(&store, &db, b"b", b"2").unwrap();
    store.seal(&first.grant).unwrap();
    let _busy = Client::new(&store);
    // No free segment: the sealed one, which has room, continues after its entries.
    let grant = store.allocate().unwrap();
    assert_eq!(grant.index, first.grant.index);
    assert_eq!(grant.generation, first.grant.generation + 1);
    assert_eq!(grant.start, first.at);
    let mut second = Client {
        region: SharedFile::open_or_create(store.region_path(), config.region_len()).unwrap(),
        at: grant.start,
        grant,
    };
    second.put(&store, &db, b"c", b"3").unwrap();
    // The old grant is dead.
    assert!(store.commit_put(&db, &first.grant, second.at).is_err());
    drop((db, first, second, _busy));
    drop(store);
    let store = BoomStore::open(dir.path(), config).unwrap();
    let db = db_on(dir.path(), &store);
    for (k, v) in [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")] {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(&v[..]));
    }
}
