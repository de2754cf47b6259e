use std::path::Path;

use super::*;
use crate::key::{seek_key, MAX_SEQ};
use crate::options::Compression;
use crate::storage::{FsStorage, Storage};

#[test]
fn block_cache_serves_repeated_reads() {
    let entries = sample_entries(500);
    let (bytes, _) = build(&entries, &[], small_opts(Compression::Lz4));
    let cache = Arc::new(BlockCache::new(1 << 20));
    let r = open_mem(bytes, Some(cache.clone())).unwrap();
    assert_eq!(
        (cache.hits(), cache.misses(), cache.usage_bytes()),
        (0, 0, 0)
    );
    let target = seek_key(crate::key::user_key(&entries[100].0), MAX_SEQ);

    // Not filling the cache: both reads miss.
    r.get(&target, IoClass::Foreground, false).unwrap().unwrap();
    r.get(&target, IoClass::Foreground, false).unwrap().unwrap();
    assert_eq!((cache.hits(), cache.misses()), (0, 2));
    assert_eq!(cache.usage_bytes(), 0);

    let first = r.get(&target, IoClass::Foreground, true).unwrap().unwrap();
    assert_eq!(cache.misses(), 3);
    assert!(cache.usage_bytes() > 0);
    let second = r.get(&target, IoClass::Foreground, true).unwrap().unwrap();
    assert_eq!(cache.hits(), 1);
    assert_eq!(first, second);
    let newest = entries
        .iter()
        .find(|(k, _)| crate::key::user_key(k) == crate::key::user_key(&entries[100].0))
        .unwrap();
    assert_eq!(
        (
            internal_key(crate::key::user_key(&target), first.0, first.1),
            first.2.as_ref()
        ),
        (newest.0.clone(), newest.1.as_slice())
    );

    // An iterator filling the cache, then a second one reading only from it.
    let r = Arc::new(r);
    let n = collect_all(&r);
    let misses = cache.misses();
    assert_eq!(collect_all(&r), n);
    assert_eq!(cache.misses(), misses);
    assert!(cache.usage_bytes() <= cache.capacity_bytes());
}

fn collect_all(r: &Arc<SstReader>) -> usize {
    use crate::iter::InternalIterator;
    let mut it = r.iter(IoClass::Foreground, true);
    it.seek_to_first().unwrap();
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.next().unwrap();
    }
    n
}

#[test]
fn block_cache_respects_capacity() {
    let entries = sample_entries(2000);
    let (bytes, _) = build(&entries, &[], small_opts(Compression::None));
    let cache = Arc::new(BlockCache::new(4096));
    let r = Arc::new(open_mem(bytes, Some(cache.clone())).unwrap());
    assert_eq!(collect_all(&r), entries.len());
    assert!(cache.usage_bytes() <= 4096, "usage {}", cache.usage_bytes());
}

fn write_table(storage: &dyn Storage, path: &Path, first: u64) {
    let file = storage.create(path, IoClass::Flush).unwrap();
    let mut b = SstBuilder::new(file, path.to_path_buf(), SstOptions::default());
    for i in 0..10u64 {
        let k = internal_key(format!("k{:04}", first + i).as_bytes(), 1, ValueType::Value);
        b.add(&k, b"v").unwrap();
    }
    b.finish().unwrap();
}

#[test]
fn table_cache_keeps_readers_open() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(FsStorage::new());
    let paths: Vec<PathBuf> = (1..=3u64)
        .map(|n| dir.path().join(format!("{n:06}.sst")))
        .collect();
    for (i, p) in paths.iter().enumerate() {
        write_table(storage.as_ref(), p, i as u64 * 100);
    }
    let block_cache = Arc::new(BlockCache::new(1 << 20));
    let tc = TableCache::new(storage.clone(), 2, Some(block_cache));
    let a = tc.get(1, &paths[0]).unwrap();
    let again = tc.get(1, &paths[0]).unwrap();
    assert!(Arc::ptr_eq(&a, &again));
    assert_eq!(a.path(), paths[0].as_path());
    assert_eq!(a.properties().num_entries, 10);
    tc.get(2, &paths[1]).unwrap();
    tc.get(3, &paths[2]).unwrap();
    assert!(tc.len() <= 2);
    tc.evict(1);
    let reopened = tc.get(1, &paths[0]).unwrap();
    assert!(!Arc::ptr_eq(&a, &reopened));
    // A reader handed out before eviction keeps working.
    tc.evict(1);
    let got = a
        .get(&seek_key(b"k0003", MAX_SEQ), IoClass::Foreground, true)
        .unwrap();
    assert!(got.is_some());
    // A missing file is an error, not cached.
    let missing = dir.path().join("000009.sst");
    assert!(tc.get(9, &missing).is_err());
    write_table(storage.as_ref(), &missing, 900);
    assert!(tc.get(9, &missing).is_ok());
}

#[test]
fn readers_and_caches_are_shared_between_threads() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<SstReader>();
    send_sync::<BlockCache>();
    send_sync::<TableCache>();
    send::<SstIterator>();
    send::<SstBuilder>();

    let entries = sample_entries(1000);
    let (bytes, _) = build(&entries, &[], small_opts(Compression::Zstd(1)));
    let cache = Arc::new(BlockCache::new(64 << 10));
    let r = Arc::new(open_mem(bytes, Some(cache)).unwrap());
    std::thread::scope(|s| {
        for t in 0..4 {
            let (r, entries) = (r.clone(), &entries);
            s.spawn(move || {
                for (k, v) in entries.iter().skip(t).step_by(4) {
                    let got = r.get(k, IoClass::Foreground, true).unwrap().unwrap();
                    let uk = crate::key::user_key(k);
                    let got = (internal_key(uk, got.0, got.1), got.2);
                    assert_eq!((&got.0, got.1.as_ref()), (k, v.as_slice()));
                }
            });
        }
    });
}

/// A table of 200 keys in blocks of 256 bytes, every value 40 bytes of `tag`, warming
/// `warm`'s cache under its id if given.
fn write_blocks(
    storage: &dyn Storage,
    path: &Path,
    warm: Option<(&Arc<BlockCache>, u64)>,
    tag: u8,
) {
    let file = storage.create(path, IoClass::Flush).unwrap();
    let opts = SstOptions {
        block_size: 256,
        ..SstOptions::default()
    };
    let mut b = SstBuilder::new(file, path.to_path_buf(), opts);
    if let Some((cache, id)) = warm {
        b = b.warm_cache(cache.clone(), id);
    }
    for i in 0..200u32 {
        let k = internal_key(format!("k{i:05}").as_bytes(), 1, ValueType::Value);
        b.add(&k, &[tag; 40]).unwrap();
    }
    b.finish().unwrap();
}

#[test]
fn a_deleted_tables_blocks_leave_the_block_cache_and_a_moved_tables_stay() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(FsStorage::new());
    let paths: Vec<PathBuf> = (1..=2u64)
        .map(|n| dir.path().join(format!("{n:06}.sst")))
        .collect();
    // Tables of several blocks each.
    for p in &paths {
        write_blocks(storage.as_ref(), p, None, 7);
    }
    let block_cache = Arc::new(BlockCache::new(1 << 24));
    let tc = TableCache::new(storage.clone(), 8, Some(block_cache.clone()));
    let read_all = |n: u64| {
        let t = tc.get(n, &paths[n as usize - 1]).unwrap();
        for i in 0..200u32 {
            let k = seek_key(format!("k{i:05}").as_bytes(), MAX_SEQ);
            assert!(t.get(&k, IoClass::Foreground, true).unwrap().is_some());
        }
    };
    read_all(1);
    let one = block_cache.usage_bytes();
    assert!(one > 0);
    read_all(2);
    let both = block_cache.usage_bytes();
    assert!(both > one);
    // A moved table's blocks stay cached (same number, same contents).
    tc.evict(2);
    assert_eq!(block_cache.usage_bytes(), both);
    read_all(2);
    // A deleted table's go; the other table's stay.
    tc.evict_deleted(1, &paths[0], false);
    assert_eq!(block_cache.usage_bytes(), both - one);
    let misses = block_cache.misses();
    read_all(2);
    assert_eq!(block_cache.misses(), misses, "table 2 is still cached");
    // Evicting a table that is not open changes nothing unless asked to open it.
    read_all(1);
    tc.evict(1);
    tc.evict_deleted(1, &paths[0], false);
    assert_eq!(block_cache.usage_bytes(), both);
    tc.evict_deleted(1, &paths[0], true);
    assert_eq!(block_cache.usage_bytes(), both - one);
}

fn write_warm(storage: &dyn Storage, path: &Path, cache: &Arc<BlockCache>, id: u64, tag: u8) {
    write_blocks(storage, path, Some((cache, id)), tag);
}

#[test]
fn a_warmed_table_is_read_from_the_cache_and_never_from_a_stale_block() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(FsStorage::new());
    let path = dir.path().join("000001.sst");
    // Room for everything: every read of the new table hits.
    let cache = Arc::new(BlockCache::new(1 << 24));
    write_warm(storage.as_ref(), &path, &cache, 1, 7);
    assert!(cache.usage_bytes() > 0);
    let tc = TableCache::new(storage.clone(), 8, Some(cache.clone()));
    let t = tc.get(1, &path).unwrap();
    for i in 0..200u32 {
        let k = seek_key(format!("k{i:05}").as_bytes(), MAX_SEQ);
        let (_, _, v) = t.get(&k, IoClass::Foreground, true).unwrap().unwrap();
        assert_eq!(v.as_ref(), &[7u8; 40][..]);
    }
    assert_eq!(cache.misses(), 0, "every block was warmed");
    // Deleted without ever being opened, a warmed table's blocks still go.
    let unread = dir.path().join("000002.sst");
    write_warm(storage.as_ref(), &unread, &cache, 2, 8);
    let with_unread = cache.usage_bytes();
    tc.evict_deleted(2, &unread, true);
    assert!(cache.usage_bytes() < with_unread);
    tc.evict_deleted(1, &path, true);
    assert_eq!(cache.usage_bytes(), 0);

    // A cache with no room left, holding blocks of an earlier, abandoned build of the
    // same number: the new build removes them instead of leaving them under its
    // offsets.
    let small = Arc::new(BlockCache::new(8192));
    write_warm(storage.as_ref(), &path, &small, 1, 1);
    // The first build filled the cache up to the last block that fitted.
    assert!(small.usage_bytes() > 8192 - 512);
    write_warm(storage.as_ref(), &path, &small, 1, 2);
    let tc = TableCache::new(storage.clone(), 8, Some(small.clone()));
    let t = tc.get(1, &path).unwrap();
    for i in 0..200u32 {
        let k = seek_key(format!("k{i:05}").as_bytes(), MAX_SEQ);
        let (_, _, v) = t.get(&k, IoClass::Foreground, false).unwrap().unwrap();
        assert_eq!(v.as_ref(), &[2u8; 40][..], "no block of the first build");
    }
}
