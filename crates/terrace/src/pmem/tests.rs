use std::path::{Path, PathBuf};
use std::sync::Arc;

use proptest::prelude::*;

use super::alloc::{ClaimError, FreeRuns};
use super::header::{Header, HEADER_BYTES};
use super::*;
use crate::storage::FakeClock;

const PAGE: u32 = 4096;
const P: u64 = PAGE as u64;

fn opts(capacity: u64, mode: PmemMode) -> PmemOptions {
    PmemOptions {
        capacity,
        page_size: PAGE,
        mode,
        rate_limit: 0,
    }
}

fn region_path(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("region.pmem")
}

fn open(path: &Path, capacity: u64, mode: PmemMode) -> Arc<PmemRegion> {
    PmemRegion::open(path, opts(capacity, mode)).unwrap()
}

fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| seed.wrapping_add((i % 251) as u8))
        .collect()
}

// ---- header ----

#[test]
fn create_then_reopen_keeps_the_header() {
    let dir = tempfile::tempdir().unwrap();
    let path = region_path(&dir);
    let r = open(&path, 10 * P + 1, PmemMode::Mapped);
    assert_eq!(r.page_size(), PAGE);
    assert_eq!(r.capacity(), 11 * P, "capacity rounds up to pages");
    assert_eq!(r.data_offset(), P);
    assert_eq!(r.free_bytes(), 11 * P);
    assert_eq!(r.path(), path);
    assert_eq!(r.mode(), PmemMode::Mapped);
    let id = r.creation_id();
    drop(r);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 12 * P);
    // A different capacity on reopen is ignored: the file keeps its own.
    let r = open(&path, 3 * P, PmemMode::Shadow);
    assert_eq!(r.capacity(), 11 * P);
    assert_eq!(r.creation_id(), id);
    assert_eq!(r.free_bytes(), 11 * P, "every page is free after open");
}

/// The worked example of docs/formats/pmem.md, byte for byte.
#[test]
fn header_bytes_match_the_format_page() {
    let h = Header {
        page_size: 65536,
        capacity: 64 << 20,
        creation_id: 0x0123_4567_89ab_cdef,
    };
    let want = "54 52 43 50 4d 45 4d 00 01 00 00 00 00 00 01 00 00 00 00 04 00 00 00 00 \
                ef cd ab 89 67 45 23 01 a1 fd 91 09";
    let want: Vec<u8> = want
        .split_whitespace()
        .map(|b| u8::from_str_radix(b, 16).unwrap())
        .collect();
    assert_eq!(h.encode(), want);
    let path = Path::new("example.pmem");
    assert_eq!(Header::decode(path, &want, h.file_len()).unwrap(), h);
}

#[test]
fn new_files_get_different_creation_ids() {
    let dir = tempfile::tempdir().unwrap();
    let a = open(&dir.path().join("a"), P, PmemMode::Mapped);
    let b = open(&dir.path().join("b"), P, PmemMode::Mapped);
    assert_ne!(a.creation_id(), b.creation_id());
}

#[test]
fn bad_options_are_invalid_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let path = region_path(&dir);
    for page_size in [0, 1, 2048, 4095, 5000, 3 << 12, u32::MAX] {
        let o = PmemOptions {
            capacity: P,
            page_size,
            ..PmemOptions::default()
        };
        let err = PmemRegion::open(&path, o).unwrap_err();
        assert!(
            matches!(err, Error::InvalidArgument(_)),
            "{page_size}: {err}"
        );
    }
    let err = PmemRegion::open(&path, opts(0, PmemMode::Mapped)).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert!(!path.exists(), "nothing is created for bad options");
    assert_eq!(PmemOptions::default().page_size, 64 * 1024);
}

#[test]
fn reopen_with_another_page_size_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = region_path(&dir);
    drop(open(&path, 4 * P, PmemMode::Mapped));
    let o = PmemOptions {
        capacity: 4 * P,
        page_size: 2 * PAGE,
        ..PmemOptions::default()
    };
    let err = PmemRegion::open(&path, o).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
}

#[test]
fn every_corrupt_header_byte_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let good_path = region_path(&dir);
    drop(open(&good_path, 2 * P, PmemMode::Mapped));
    let good = std::fs::read(&good_path).unwrap();
    let positions = (0..HEADER_BYTES).chain([HEADER_BYTES, 100, PAGE as usize - 1]);
    for i in positions {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut bad = good.clone();
            bad[i] ^= flip;
            let path = dir.path().join(format!("bad-{i}-{flip}"));
            std::fs::write(&path, &bad).unwrap();
            let err = PmemRegion::open(&path, opts(2 * P, PmemMode::Mapped)).unwrap_err();
            assert!(err.is_corruption(), "byte {i} ^ {flip:#x}: {err}");
            assert!(
                err.to_string().contains(&format!("bad-{i}-{flip}")),
                "{err}"
            );
        }
    }
}

#[test]
fn short_and_truncated_files_are_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let good_path = region_path(&dir);
    drop(open(&good_path, 2 * P, PmemMode::Mapped));
    let good = std::fs::read(&good_path).unwrap();
    for len in [0, 10, HEADER_BYTES, PAGE as usize, good.len() - 1] {
        let path = dir.path().join(format!("short-{len}"));
        std::fs::write(&path, &good[..len]).unwrap();
        let err = PmemRegion::open(&path, opts(2 * P, PmemMode::Mapped)).unwrap_err();
        assert!(err.is_corruption(), "{len}: {err}");
    }
}

#[test]
fn a_second_open_of_the_same_file_is_locked_out() {
    let dir = tempfile::tempdir().unwrap();
    let path = region_path(&dir);
    let r = open(&path, 2 * P, PmemMode::Mapped);
    let err = PmemRegion::open(&path, opts(2 * P, PmemMode::Shadow)).unwrap_err();
    assert!(matches!(err, Error::Locked(_)), "{err}");
    drop(r);
    drop(open(&path, 2 * P, PmemMode::Shadow));
}

// ---- allocation ----

#[test]
fn alloc_rounds_to_pages_and_frees_on_drop() {
    let dir = tempfile::tempdir().unwrap();
    let r = open(&region_path(&dir), 8 * P, PmemMode::Mapped);
    let a = r.alloc(1).unwrap();
    assert_eq!((a.offset(), a.len()), (P, P));
    assert!(!a.is_empty());
    let b = r.alloc(P + 1).unwrap();
    assert_eq!((b.offset(), b.len()), (2 * P, 2 * P));
    assert_eq!(r.free_bytes(), 5 * P);
    assert!(Arc::ptr_eq(a.region(), &r));
    drop(a);
    assert_eq!(r.free_bytes(), 6 * P);
    let c = r.alloc(P).unwrap();
    assert_eq!(c.offset(), P, "first fit reuses the freed page");
    let err = r.alloc(0).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
}

#[test]
fn freed_neighbours_coalesce() {
    let dir = tempfile::tempdir().unwrap();
    let r = open(&region_path(&dir), 6 * P, PmemMode::Mapped);
    let a = r.alloc(P).unwrap();
    let b = r.alloc(P).unwrap();
    let c = r.alloc(P).unwrap();
    let _d = r.alloc(3 * P).unwrap();
    drop(a);
    drop(c);
    assert!(matches!(r.alloc(2 * P), Err(Error::NoSpace { .. })));
    drop(b);
    let abc = r.alloc(3 * P).unwrap();
    assert_eq!(abc.offset(), P);
}

#[test]
fn exhaustion_is_no_space() {
    let dir = tempfile::tempdir().unwrap();
    let r = open(&region_path(&dir), 4 * P, PmemMode::Mapped);
    let all = r.alloc(4 * P).unwrap();
    assert_eq!(r.free_bytes(), 0);
    match r.alloc(1).unwrap_err() {
        Error::NoSpace { needed, what } => {
            assert_eq!(needed, P);
            assert!(what.contains("region.pmem"), "{what}");
        }
        e => panic!("{e}"),
    }
    drop(all);
    assert!(matches!(r.alloc(5 * P), Err(Error::NoSpace { .. })));
    drop(r.alloc(4 * P).unwrap());
}

#[test]
fn free_runs_split_and_merge() {
    let mut f = FreeRuns::new(10);
    assert_eq!(f.alloc(3), Some(0));
    assert_eq!(f.alloc(3), Some(3));
    assert_eq!(f.alloc(5), None);
    assert_eq!(f.largest_run(), 4);
    f.release(0, 3);
    assert_eq!(f.runs(), vec![(0, 3), (6, 4)]);
    f.release(3, 3);
    assert_eq!(f.runs(), vec![(0, 10)]);
    assert_eq!(f.claim(2, 2), Ok(()));
    assert_eq!(f.runs(), vec![(0, 2), (4, 6)]);
    assert_eq!(f.claim(3, 2), Err(ClaimError::Overlap));
    assert_eq!(f.claim(9, 2), Err(ClaimError::OutOfRange));
    assert_eq!(f.claim(1, 0), Err(ClaimError::OutOfRange));
    f.release(0, 1); // already free: ignored
    assert_eq!(f.free_pages(), 8);
    assert_eq!(f.alloc(0), None);
}

#[test]
fn claim_checks_alignment_range_and_overlap() {
    let dir = tempfile::tempdir().unwrap();
    let r = open(&region_path(&dir), 8 * P, PmemMode::Mapped);
    let w = r.alloc(2 * P).unwrap(); // pages at P, 2P
    for (offset, len) in [
        (P + 1, P),            // misaligned offset
        (3 * P, P - 1),        // misaligned length
        (3 * P, 0),            // empty
        (0, P),                // the header page
        (8 * P, 2 * P),        // past the end
        (9 * P, P),            // entirely past the end
        (2 * P, P),            // overlaps the writer
        (u64::MAX - P + 1, P), // overflow
    ] {
        let err = r.claim(offset, len).unwrap_err();
        assert!(
            matches!(err, Error::InvalidArgument(_)),
            "{offset} {len}: {err}"
        );
    }
    let e = r.claim(3 * P, 2 * P).unwrap();
    assert!(r.claim(4 * P, P).is_err(), "overlaps a claimed extent");
    assert_eq!(r.free_bytes(), 4 * P);
    let e2 = e.clone();
    drop(e);
    assert_eq!(r.free_bytes(), 4 * P, "a clone keeps the pages");
    drop(e2);
    drop(w);
    assert_eq!(r.free_bytes(), 8 * P);
}

// ---- persistence ----

fn write_seal_reopen(mode: PmemMode) {
    let dir = tempfile::tempdir().unwrap();
    let path = region_path(&dir);
    let r = open(&path, 8 * P, mode);
    let data = pattern(7, 3 * PAGE as usize / 2);
    let mut w = r.alloc(data.len() as u64).unwrap();
    w.write(0, &data).unwrap();
    let mut w2 = r.alloc(P).unwrap();
    w2.as_mut_slice()[..5].copy_from_slice(b"hello");
    let e = w.seal().unwrap();
    let e2 = w2.seal().unwrap();
    let (offset, len, crc) = (e.offset(), e.len(), e.crc32c());
    assert_eq!(&e.bytes()[..data.len()], &data[..]);
    assert_eq!(e.as_ref(), e.bytes());
    let (offset2, len2) = (e2.offset(), e2.len());
    drop((e, e2, r));
    let r = open(&path, 8 * P, mode);
    let e = r.claim(offset, len).unwrap();
    assert_eq!(e.crc32c(), crc);
    assert_eq!(&e.bytes()[..data.len()], &data[..]);
    let e2 = r.claim(offset2, len2).unwrap();
    assert_eq!(&e2.bytes()[..5], b"hello");
}

#[test]
fn sealed_data_survives_reopen_mapped() {
    write_seal_reopen(PmemMode::Mapped);
}

#[test]
fn sealed_data_survives_reopen_shadow() {
    write_seal_reopen(PmemMode::Shadow);
}

/// The negative control the crash tests rely on: in Shadow mode, what was not persisted
/// is gone after the region is dropped, and what was persisted in the same extent is not.
#[test]
fn shadow_loses_unpersisted_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = region_path(&dir);
    let r = open(&path, 4 * P, PmemMode::Shadow);
    let mut w = r.alloc(2 * P).unwrap();
    let (offset, len) = (w.offset(), w.len());
    let page = PAGE as usize;
    w.write(0, &pattern(1, 2 * page)).unwrap();
    w.persist(100..page).unwrap();
    assert_eq!(
        w.bytes(),
        &pattern(1, 2 * page)[..],
        "the writer reads its own writes"
    );
    // Before `persist` nothing reached the file; after it, exactly the range did.
    let file = std::fs::read(&path).unwrap();
    let at = offset as usize;
    assert!(file[at..at + 100].iter().all(|&b| b == 0));
    assert_eq!(&file[at + 100..at + page], &pattern(1, 2 * page)[100..page]);
    assert!(file[at + page..at + 2 * page].iter().all(|&b| b == 0));
    drop(w); // unsealed
    drop(r);

    let r = open(&path, 4 * P, PmemMode::Shadow);
    let e = r.claim(offset, len).unwrap();
    let b = e.bytes();
    assert!(
        b[..100].iter().all(|&x| x == 0),
        "unpersisted prefix is lost"
    );
    assert_eq!(
        &b[100..page],
        &pattern(1, 2 * page)[100..page],
        "persisted range survives"
    );
    assert!(
        b[page..].iter().all(|&x| x == 0),
        "unpersisted page is lost"
    );
}

/// The fault switch of the crash tests' negative control: while persists are skipped,
/// `persist` and `seal` return `Ok` and count, yet a shadow region loses the bytes, as if
/// the program had never persisted them; persists before and after the switch survive.
#[test]
fn skipped_persists_are_lost_in_shadow_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = region_path(&dir);
    let page = PAGE as usize;
    let r = open(&path, 8 * P, PmemMode::Shadow);
    let mut kept = r.alloc(P).unwrap();
    kept.write(0, &pattern(1, page)).unwrap();
    kept.persist(0..page / 2).unwrap();

    r.set_skip_persists(true);
    kept.persist(page / 2..page).unwrap();
    let mut skipped = r.alloc(2 * P).unwrap();
    skipped.write(0, &pattern(2, 2 * page)).unwrap();
    let skipped = skipped.seal().unwrap();
    assert_eq!(
        skipped.bytes(),
        &pattern(2, 2 * page)[..],
        "reads see the writes"
    );
    let err = kept.persist(0..page + 1).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert_eq!(r.stats().persist_calls, 3, "skipped persists still count");

    r.set_skip_persists(false);
    let mut late = r.alloc(P).unwrap();
    late.write(0, &pattern(3, page)).unwrap();
    let late = late.seal().unwrap();
    let file = std::fs::read(&path).unwrap();
    let at = skipped.offset() as usize;
    assert!(file[at..at + 2 * page].iter().all(|&b| b == 0));

    let spans = [
        (kept.offset(), kept.len()),
        (skipped.offset(), skipped.len()),
        (late.offset(), late.len()),
    ];
    drop((kept, skipped, late, r));
    let r = open(&path, 8 * P, PmemMode::Shadow);
    let [kept, skipped, late] = spans.map(|(o, l)| r.claim(o, l).unwrap());
    assert_eq!(
        &kept.bytes()[..page / 2],
        &pattern(1, page)[..page / 2],
        "persisted before the switch"
    );
    assert!(
        kept.bytes()[page / 2..].iter().all(|&b| b == 0),
        "skipped persist of a range is lost"
    );
    assert!(
        skipped.bytes().iter().all(|&b| b == 0),
        "skipped seal is lost"
    );
    assert_eq!(
        late.bytes(),
        &pattern(3, page)[..],
        "persisted after the switch"
    );
}

/// The `msync` path of a mapped region on an ordinary file (not DAX).
#[test]
fn mapped_persist_on_an_ordinary_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = region_path(&dir);
    let r = open(&path, 4 * P, PmemMode::Mapped);
    // A temporary directory is not a DAX mount here; if it is somewhere, the flush path runs.
    eprintln!("is_dax: {}", r.is_dax());
    let mut w = r.alloc(2 * P).unwrap();
    let data = pattern(9, 1000);
    w.write(5000, &data).unwrap();
    w.persist(5000..6000).unwrap();
    w.persist(0..0).unwrap();
    let file = std::fs::read(&path).unwrap();
    let at = w.offset() as usize + 5000;
    assert_eq!(&file[at..at + 1000], &data[..]);
    let _ = w.as_mut_slice();
    let _ = w.as_mut_slice();
    let e = w.seal().unwrap();
    assert_eq!(
        r.stats(),
        PmemStats {
            bytes_written: 1000 + 2 * P,
            bytes_persisted: 1000 + 2 * P,
            persist_calls: 3,
        }
    );
    drop(e);
}

#[test]
fn out_of_range_writes_and_persists_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let r = open(&region_path(&dir), 4 * P, PmemMode::Shadow);
    let mut w = r.alloc(P).unwrap();
    let page = PAGE as usize;
    for (at, n) in [(page, 1), (page - 1, 2), (usize::MAX, 2)] {
        let err = w.write(at, &vec![1; n]).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    }
    w.write(page - 1, &[1]).unwrap();
    #[allow(clippy::reversed_empty_ranges)]
    for range in [0..page + 1, 10..5, page + 1..page + 2] {
        let err = w.persist(range.clone()).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{range:?}: {err}");
    }
    assert_eq!(r.stats().bytes_written, 1);
}

#[cfg(target_arch = "x86_64")]
#[test]
fn cache_line_write_back_with_each_instruction() {
    use super::map::{LineFlush, Mapping};
    let dir = tempfile::tempdir().unwrap();
    let path = region_path(&dir);
    drop(open(&path, 2 * P, PmemMode::Mapped));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let (m, _dax) = Mapping::shared(&file, 3 * PAGE as usize).unwrap();
    let chosen = super::map::line_flush();
    assert!(chosen.supported());
    assert!(LineFlush::Clflush.supported());
    for kind in [LineFlush::Clwb, LineFlush::Clflushopt, LineFlush::Clflush] {
        let res = m.write_back_with(kind, 4096 + 3, 200);
        if kind.supported() {
            res.unwrap();
            m.write_back_with(kind, 0, 3 * PAGE as usize).unwrap();
            m.write_back_with(kind, 100, 0).unwrap();
        } else {
            assert!(res.is_err(), "{kind:?} is refused where unsupported");
        }
    }
    m.write_back(0, 64).unwrap();
    assert!(m.write_back(3 * PAGE as usize - 10, 11).is_err());
    assert!(m.msync(3 * PAGE as usize, 1).is_err());
    m.msync(4097, 10).unwrap();
}

// ---- concurrency ----

#[test]
fn region_and_extents_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<PmemRegion>();
    send_sync::<Arc<PmemRegion>>();
    send_sync::<ExtentWriter>();
    send_sync::<Extent>();
}

#[test]
fn concurrent_alloc_write_seal_and_read() {
    let dir = tempfile::tempdir().unwrap();
    let r = open(&region_path(&dir), 64 * P, PmemMode::Shadow);
    let shared: Arc<parking_lot::Mutex<Vec<(Extent, u8)>>> = Arc::default();
    let threads: Vec<_> = (0..4u8)
        .map(|t| {
            let r = Arc::clone(&r);
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || {
                for i in 0..200u32 {
                    let seed = t.wrapping_mul(61).wrapping_add(i as u8);
                    let size = u64::from(1 + (i * 7 + u32::from(t)) % 3) * P;
                    let Ok(mut w) = r.alloc(size) else { continue };
                    w.as_mut_slice()
                        .copy_from_slice(&pattern(seed, size as usize));
                    assert_eq!(w.bytes(), &pattern(seed, size as usize)[..]);
                    if i % 5 == 0 {
                        let e = w.seal().unwrap();
                        let mut s = shared.lock();
                        s.push((e, seed));
                        if s.len() > 6 {
                            s.remove(0);
                        }
                    }
                    // Read extents sealed by any thread, without the region's lock.
                    let sample: Vec<_> = shared.lock().iter().cloned().collect();
                    for (e, seed) in sample {
                        assert_eq!(e.bytes(), &pattern(seed, e.len() as usize)[..]);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    shared.lock().clear();
    assert_eq!(r.free_bytes(), 64 * P);
}

// ---- model ----

#[derive(Debug, Clone)]
enum Op {
    Alloc(u64),
    Release(usize),
    Claim(u64, u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (1u64..6).prop_map(Op::Alloc),
        any::<usize>().prop_map(Op::Release),
        (0u64..34, 0u64..5).prop_map(|(s, n)| Op::Claim(s, n)),
    ]
}

/// First fit over a page map: the lowest start of `n` consecutive free pages.
fn model_first_fit(used: &[bool], n: u64) -> Option<u64> {
    let n = n as usize;
    (0..used.len().saturating_sub(n - 1))
        .find(|&s| used[s..s + n].iter().all(|u| !u))
        .map(|s| s as u64)
}

fn model_runs(used: &[bool]) -> Vec<(u64, u64)> {
    let mut runs = Vec::new();
    let mut i = 0;
    while i < used.len() {
        if used[i] {
            i += 1;
            continue;
        }
        let s = i;
        while i < used.len() && !used[i] {
            i += 1;
        }
        runs.push((s as u64, (i - s) as u64));
    }
    runs
}

proptest! {
    // The case count comes from PROPTEST_CASES (proptest's default configuration).
    #[test]
    fn free_runs_match_a_page_map(ops in proptest::collection::vec(op(), 1..80)) {
        const TOTAL: usize = 32;
        let mut f = FreeRuns::new(TOTAL as u64);
        let mut used = vec![false; TOTAL];
        let mut live: Vec<(u64, u64)> = Vec::new();
        for op in ops {
            match op {
                Op::Alloc(n) => {
                    let got = f.alloc(n);
                    prop_assert_eq!(got, model_first_fit(&used, n));
                    if let Some(s) = got {
                        used[s as usize..(s + n) as usize].fill(true);
                        live.push((s, n));
                    }
                }
                Op::Release(i) => {
                    if !live.is_empty() {
                        let (s, n) = live.swap_remove(i % live.len());
                        f.release(s, n);
                        used[s as usize..(s + n) as usize].fill(false);
                    }
                }
                Op::Claim(s, n) => {
                    let end = (s + n) as usize;
                    let want = if n == 0 || end > TOTAL {
                        Err(ClaimError::OutOfRange)
                    } else if used[s as usize..end].iter().any(|&u| u) {
                        Err(ClaimError::Overlap)
                    } else {
                        Ok(())
                    };
                    prop_assert_eq!(f.claim(s, n), want);
                    if want.is_ok() {
                        used[s as usize..end].fill(true);
                        live.push((s, n));
                    }
                }
            }
            prop_assert_eq!(f.runs(), model_runs(&used));
            prop_assert_eq!(f.free_pages(), used.iter().filter(|&&u| !u).count() as u64);
        }
    }
}

/// A header whose capacity would overflow the file length (with a valid checksum) reads
/// as a truncated file, not an arithmetic overflow.
#[test]
fn a_capacity_past_the_address_space_is_corrupt() {
    let h = Header {
        page_size: 4096,
        capacity: u64::MAX - 4095,
        creation_id: 1,
    };
    let err = Header::decode(Path::new("huge.pmem"), &h.encode(), 1 << 20).unwrap_err();
    assert!(err.to_string().contains("truncated"), "{err}");
}

/// A region on a simulated power supply: persists go through while the power is on,
/// those after a cut fail and leave the file as it was, and a second supply is refused.
#[test]
fn persists_after_a_power_cut_fail_and_reach_nothing() {
    use crate::storage::{PointFilter, PointKind, PowerSupply};
    let dir = tempfile::tempdir().unwrap();
    let path = region_path(&dir);
    let page = PAGE as usize;
    let r = open(&path, 8 * P, PmemMode::Shadow);
    let power = Arc::new(PowerSupply::new());
    r.set_power(power.clone()).unwrap();
    assert!(r.set_power(power.clone()).is_err(), "one supply per region");
    power.cut_at(PointFilter::any().of_kinds(&[PointKind::Persist]), 1);
    let mut first = r.alloc(P).unwrap();
    first.write(0, &pattern(4, page)).unwrap();
    let first = first.seal().unwrap();
    let mut second = r.alloc(P).unwrap();
    second.write(0, &pattern(5, page)).unwrap();
    let err = second.seal().unwrap_err();
    assert!(
        matches!(&err, Error::Io { source, .. } if source.raw_os_error() == Some(libc::EIO)),
        "{err}"
    );
    assert!(power.is_out() && power.cut_by_filter());
    let file = std::fs::read(&path).unwrap();
    let at = first.offset() as usize;
    assert_eq!(
        &file[at..at + page],
        &pattern(4, page)[..],
        "persisted before the cut"
    );
    assert!(
        file[at + page..at + 2 * page].iter().all(|&b| b == 0),
        "nothing of the extent sealed after the cut"
    );
}

// ---- copies (checkpoints) ----

#[test]
fn a_copy_holds_the_given_extents_at_their_offsets_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let path = region_path(&dir);
    let r = open(&path, 16 * P, PmemMode::Shadow);
    let mut kept = r.alloc(2 * P).unwrap();
    kept.write(0, &pattern(3, 2 * PAGE as usize)).unwrap();
    let kept = kept.seal().unwrap();
    let mut other = r.alloc(P).unwrap();
    other.write(0, &pattern(9, PAGE as usize)).unwrap();
    let other = other.seal().unwrap();
    let copy = dir.path().join("copy.pmem");
    r.copy_to(&copy, &[&kept]).unwrap();

    let c = open(&copy, P, PmemMode::Mapped);
    assert_eq!(c.creation_id(), r.creation_id());
    assert_eq!(c.capacity(), r.capacity());
    let got = c.claim(kept.offset(), kept.len()).unwrap();
    assert_eq!(got.bytes(), kept.bytes());
    // An extent not named is zero in the copy.
    let skipped = c.claim(other.offset(), other.len()).unwrap();
    assert!(skipped.bytes().iter().all(|&b| b == 0));
    // No temporary file is left beside it.
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn a_copy_refuses_a_foreign_extent_and_an_existing_target() {
    let dir = tempfile::tempdir().unwrap();
    let r = open(&region_path(&dir), 4 * P, PmemMode::Mapped);
    let s = open(&dir.path().join("other.pmem"), 4 * P, PmemMode::Mapped);
    let foreign = s.alloc(P).unwrap().seal().unwrap();
    let target = dir.path().join("copy.pmem");
    let err = r.copy_to(&target, &[&foreign]).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert!(!target.exists());
    std::fs::write(&target, b"mine").unwrap();
    let err = r.copy_to(&target, &[]).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert_eq!(
        std::fs::read(&target).unwrap(),
        b"mine",
        "an existing file is kept"
    );
}

// ---- rate limit ----

/// A region limited to `rate` bytes per second whose waits go to a fake clock.
fn limited(dir: &tempfile::TempDir, rate: u64) -> (Arc<PmemRegion>, Arc<FakeClock>) {
    let clock = Arc::new(FakeClock::default());
    let o = PmemOptions {
        rate_limit: rate,
        ..opts(4 * P, PmemMode::Mapped)
    };
    let r = PmemRegion::open_with_clock(&region_path(dir), o, clock.clone()).unwrap();
    (r, clock)
}

fn ms(v: u64) -> std::time::Duration {
    std::time::Duration::from_millis(v)
}

#[test]
fn a_rate_limit_charges_every_persisted_byte_and_waits_for_the_debt() {
    let dir = tempfile::tempdir().unwrap();
    // 1000 B/s with the throttle's 100 ms of burst: 100 bytes free, then 1 ms per byte.
    let (r, clock) = limited(&dir, 1000);
    assert_eq!(r.rate_limit(), 1000);
    let mut w = r.alloc(P).unwrap();
    w.write(0, &[7; 100]).unwrap();
    w.persist(0..100).unwrap();
    assert!(clock.slept().is_empty(), "within the burst");
    w.persist(100..1100).unwrap();
    assert_eq!(clock.slept(), vec![ms(1000)]);
    // Sealing persists the whole page; the bucket refilled nothing (the sleep paid the
    // debt exactly), so all of it is debt.
    let e = w.seal().unwrap();
    assert_eq!(clock.slept(), vec![ms(1000), ms(4096)]);
    let st = r.rate_limit_stats().unwrap();
    assert_eq!(st.bytes, 100 + 1000 + P);
    assert_eq!(st.bytes, r.stats().bytes_persisted);
    assert_eq!((st.waits, st.wait_micros, st.ios), (2, 5_096_000, 0));
    assert_eq!(st.limits.bytes_per_sec, 1000);
    assert_eq!(st.dir, region_path(&dir));
    drop(e);
}

#[test]
fn reads_are_charged_in_whole_quanta_by_the_read_that_completes_one() {
    let dir = tempfile::tempdir().unwrap();
    let (r, clock) = limited(&dir, 1 << 20);
    r.charge_read(100);
    r.charge_read(READ_QUANTUM - 101);
    assert_eq!(
        r.rate_limit_stats().unwrap().bytes,
        0,
        "no quantum complete"
    );
    r.charge_read(1);
    assert_eq!(r.rate_limit_stats().unwrap().bytes, READ_QUANTUM);
    // One read may complete several quanta; the rest waits for the next.
    r.charge_read(3 * READ_QUANTUM + 10);
    assert_eq!(r.rate_limit_stats().unwrap().bytes, 4 * READ_QUANTUM);
    // 1 MiB/s holds 104857 bytes of burst: 16 KiB took no wait.
    assert!(clock.slept().is_empty());
    // A checkpoint's copy reads its extents.
    let e = r.alloc(2 * P).unwrap().seal().unwrap();
    let before = r.rate_limit_stats().unwrap().bytes;
    r.copy_to(&dir.path().join("copy.pmem"), &[&e]).unwrap();
    let after = r.rate_limit_stats().unwrap().bytes;
    assert_eq!(after - before, 2 * P);
}

#[test]
fn without_a_rate_limit_nothing_is_charged_or_waited() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(FakeClock::default());
    let r = PmemRegion::open_with_clock(
        &region_path(&dir),
        opts(4 * P, PmemMode::Mapped),
        clock.clone(),
    )
    .unwrap();
    assert_eq!(r.rate_limit(), 0);
    let mut w = r.alloc(P).unwrap();
    w.write(0, &[1; 10]).unwrap();
    w.persist(0..10).unwrap();
    let _e = w.seal().unwrap();
    r.charge_read(64 * READ_QUANTUM);
    assert!(r.rate_limit_stats().is_none());
    assert!(clock.slept().is_empty());
    assert_eq!(r.stats().bytes_persisted, 10 + P);
}
