use std::sync::Arc;

use super::*;
use crate::error::Error;

#[test]
fn fs_round_trip_and_accounting() {
    let dir = tempfile::tempdir().unwrap();
    let s = FsStorage::new();
    let p = dir.path().join("a");
    let mut w = s.create(&p, IoClass::Flush).unwrap();
    w.append(b"hello ").unwrap();
    w.append(b"world").unwrap();
    w.sync().unwrap();
    assert_eq!(w.len(), 11);
    drop(w);
    let r = s.open(&p).unwrap();
    let mut buf = [0u8; 5];
    r.read_exact_at(6, &mut buf, IoClass::Foreground).unwrap();
    assert_eq!(&buf, b"world");
    assert!(r.read_exact_at(8, &mut buf, IoClass::Foreground).is_err());
    // Into a new vector (no zeroed buffer first): the same bytes, the same errors.
    assert_eq!(r.read_vec_at(6, 5, IoClass::Foreground).unwrap(), b"world");
    assert_eq!(
        r.read_vec_at(0, 11, IoClass::Foreground).unwrap(),
        b"hello world"
    );
    assert!(r.read_vec_at(0, 0, IoClass::Foreground).unwrap().is_empty());
    match r.read_vec_at(8, 5, IoClass::Foreground) {
        Err(Error::Io { source, .. }) => {
            assert_eq!(source.kind(), std::io::ErrorKind::UnexpectedEof)
        }
        other => panic!("{other:?}"),
    }
    let st = s.io_stats().get(IoClass::Flush);
    assert_eq!(st.write_bytes, 11);
    assert_eq!(st.sync_ops, 1);
    assert_eq!(s.io_stats().get(IoClass::Foreground).read_bytes, 5 + 5 + 11);
    assert_eq!(s.list(dir.path()).unwrap(), vec!["a".to_string()]);
}

#[test]
fn write_atomic_replaces() {
    let dir = tempfile::tempdir().unwrap();
    let s = FsStorage::new();
    let p = dir.path().join("CURRENT");
    s.write_atomic(&p, b"one", IoClass::Manifest).unwrap();
    s.write_atomic(&p, b"two", IoClass::Manifest).unwrap();
    assert_eq!(s.read_all(&p, IoClass::Manifest).unwrap(), b"two");
    assert_eq!(s.list(dir.path()).unwrap(), vec!["CURRENT".to_string()]);
}

#[test]
fn lock_is_exclusive() {
    let dir = tempfile::tempdir().unwrap();
    let s = FsStorage::new();
    let p = dir.path().join("LOCK");
    let held = s.lock(&p).unwrap();
    assert!(matches!(s.lock(&p), Err(crate::Error::Locked(_))));
    drop(held);
    s.lock(&p).unwrap();
}

#[test]
fn fault_storage_loses_unsynced_data_and_undurable_files() {
    let dir = tempfile::tempdir().unwrap();
    let f = FaultStorage::new(Arc::new(FsStorage::new()));
    let synced = dir.path().join("synced");
    let mut w = f.create(&synced, IoClass::Wal).unwrap();
    w.append(b"kept").unwrap();
    w.sync().unwrap();
    w.append(b"lost").unwrap();
    w.flush().unwrap();
    drop(w);
    f.sync_dir(dir.path()).unwrap();
    let fresh = dir.path().join("fresh");
    let mut w = f.create(&fresh, IoClass::Wal).unwrap();
    w.append(b"x").unwrap();
    w.sync().unwrap();
    drop(w);
    f.simulate_crash().unwrap();
    assert_eq!(f.read_all(&synced, IoClass::Wal).unwrap(), b"kept");
    assert!(!f.exists(&fresh).unwrap());
}

/// A rename over a durable file that its directory never made durable is undone by a
/// crash: the old content comes back (as CURRENT must, or the database is lost); once the
/// directory is synced the new content stays.
#[test]
fn fault_storage_undoes_an_unsynced_rename_over_a_durable_file() {
    let dir = tempfile::tempdir().unwrap();
    let f = FaultStorage::new(Arc::new(FsStorage::new()));
    let current = dir.path().join("CURRENT");
    let tmp = dir.path().join("CURRENT.tmp");
    let replace = |data: &[u8]| {
        let mut w = f.create(&tmp, IoClass::Manifest).unwrap();
        w.append(data).unwrap();
        w.sync().unwrap();
        drop(w);
        f.rename(&tmp, &current).unwrap();
    };
    replace(b"MANIFEST-1");
    f.sync_dir(dir.path()).unwrap();
    replace(b"MANIFEST-2");
    replace(b"MANIFEST-3");
    f.simulate_crash().unwrap();
    assert_eq!(
        f.read_all(&current, IoClass::Manifest).unwrap(),
        b"MANIFEST-1"
    );
    replace(b"MANIFEST-4");
    f.sync_dir(dir.path()).unwrap();
    f.simulate_crash().unwrap();
    assert_eq!(
        f.read_all(&current, IoClass::Manifest).unwrap(),
        b"MANIFEST-4"
    );
}

/// Once the simulated power is out, syncs, creations, renames and removals fail.
#[test]
fn fault_storage_stops_when_its_power_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    let power = Arc::new(PowerSupply::new());
    let f = FaultStorage::with_power(Arc::new(FsStorage::new()), power.clone());
    let p = dir.path().join("x");
    let mut w = f.create(&p, IoClass::Flush).unwrap();
    w.append(b"a").unwrap();
    power.cut_at(PointFilter::any().of_kinds(&[PointKind::DirSync]), 0);
    w.sync().unwrap();
    assert!(f.sync_dir(dir.path()).is_err());
    assert!(power.is_out());
    w.append(b"b").unwrap();
    assert!(w.sync().is_err());
    assert!(f.create(&dir.path().join("y"), IoClass::Flush).is_err());
    assert!(f.rename(&p, &dir.path().join("z")).is_err());
    assert!(f.remove_file(&p).is_err());
    drop(w);
    power.restore();
    f.simulate_crash().unwrap();
    assert!(!f.exists(&p).unwrap(), "its directory was never synced");
}

#[test]
fn fault_storage_injects_errors() {
    let dir = tempfile::tempdir().unwrap();
    let f = FaultStorage::new(Arc::new(FsStorage::new()));
    let p = dir.path().join("x");
    let mut w = f.create(&p, IoClass::Flush).unwrap();
    f.set_fail_syncs(true);
    w.append(b"a").unwrap();
    assert!(w.sync().is_err());
    f.set_fail_syncs(false);
    f.set_fail_writes(true);
    assert!(w.append(b"b").is_err());
    assert!(f.create(&dir.path().join("y"), IoClass::Flush).is_err());
}

#[test]
fn fault_rules_fail_chosen_operations_with_the_chosen_errno() {
    let dir = tempfile::tempdir().unwrap();
    let f = FaultStorage::new(Arc::new(FsStorage::new()));
    let errno = |e: &Error| match e {
        Error::Io { source, .. } => source.raw_os_error(),
        _ => None,
    };
    // Appends to logs fail with ENOSPC after two go through, twice; tables are untouched.
    f.inject(
        FaultRule::new(&[FaultOp::Append], InjectedError::NoSpace)
            .on_paths(".log")
            .after(2)
            .times(2),
    );
    let mut log = f
        .create(&dir.path().join("000001.log"), IoClass::Wal)
        .unwrap();
    let mut sst = f
        .create(&dir.path().join("000002.sst"), IoClass::Flush)
        .unwrap();
    log.append(b"a").unwrap();
    log.append(b"b").unwrap();
    let e = log.append(b"c").unwrap_err();
    assert_eq!(errno(&e), Some(libc::ENOSPC), "{e}");
    assert!(e.to_string().contains("000001.log"), "{e}");
    sst.append(b"table").unwrap();
    assert!(log.append(b"d").is_err());
    log.append(b"e").unwrap(); // disarmed after two failures
    assert_eq!(f.injected_faults(), 2);

    // Reads of one class fail with EIO; other classes still read.
    sst.sync().unwrap();
    drop(sst);
    f.inject(FaultRule::new(&[FaultOp::Read], InjectedError::Io).of_class(IoClass::Foreground));
    let r = f.open(&dir.path().join("000002.sst")).unwrap();
    let mut buf = [0u8; 5];
    let e = r
        .read_exact_at(0, &mut buf, IoClass::Foreground)
        .unwrap_err();
    assert_eq!(errno(&e), Some(libc::EIO), "{e}");
    r.read_exact_at(0, &mut buf, IoClass::Compaction).unwrap();
    assert_eq!(&buf, b"table");
    f.clear_faults();
    r.read_exact_at(0, &mut buf, IoClass::Foreground).unwrap();

    // Creations, renames and directory syncs.
    f.inject(FaultRule::new(
        &[FaultOp::Create, FaultOp::DirSync],
        InjectedError::NoSpace,
    ));
    assert!(f.create(&dir.path().join("x"), IoClass::Manifest).is_err());
    assert!(f.sync_dir(dir.path()).is_err());
    f.clear_faults();
    f.sync_dir(dir.path()).unwrap();
}

/// Writes `data` to a new file `name` of `dir` through `f`, syncs it and its directory.
fn durable_file(f: &FaultStorage, dir: &std::path::Path, name: &str, data: &[u8]) {
    let mut w = f.create(&dir.join(name), IoClass::Flush).unwrap();
    w.append(data).unwrap();
    w.sync().unwrap();
    drop(w);
    f.sync_dir(dir).unwrap();
}

/// Reads see unsynced bytes (the page cache), also after the writer is closed; the crash
/// takes them away.
#[test]
fn fault_storage_reads_see_unsynced_bytes_until_the_crash() {
    let dir = tempfile::tempdir().unwrap();
    let f = FaultStorage::new(Arc::new(FsStorage::new()));
    let p = dir.path().join("000001.log");
    let mut w = f.create(&p, IoClass::Wal).unwrap();
    w.append(b"synced ").unwrap();
    w.sync().unwrap();
    w.append(b"cached").unwrap();
    f.sync_dir(dir.path()).unwrap();
    let r = f.open(&p).unwrap();
    assert_eq!(r.len(), 13);
    let mut buf = [0u8; 9];
    r.read_exact_at(4, &mut buf, IoClass::Wal).unwrap();
    assert_eq!(&buf, b"ed cached");
    assert!(
        r.read_exact_at(5, &mut buf, IoClass::Wal).is_err(),
        "past the end"
    );
    drop(w);
    assert_eq!(f.read_all(&p, IoClass::Wal).unwrap(), b"synced cached");
    f.simulate_crash().unwrap();
    assert_eq!(f.read_all(&p, IoClass::Wal).unwrap(), b"synced ");
}

/// A failed sync drops the unsynced bytes (they read back as zeros); a later sync that
/// succeeds writes the zeros, not the data.
#[test]
fn fault_storage_drops_the_unsynced_bytes_of_a_failed_sync() {
    let dir = tempfile::tempdir().unwrap();
    let f = FaultStorage::new(Arc::new(FsStorage::new()));
    let p = dir.path().join("x");
    let mut w = f.create(&p, IoClass::Wal).unwrap();
    w.append(b"one").unwrap();
    w.sync().unwrap();
    w.append(b"two").unwrap();
    f.inject(FaultRule::new(&[FaultOp::Sync], InjectedError::Io).times(1));
    assert!(w.sync().is_err());
    assert_eq!(f.read_all(&p, IoClass::Wal).unwrap(), b"one\0\0\0");
    w.append(b"six").unwrap();
    w.sync().unwrap();
    f.sync_dir(dir.path()).unwrap();
    drop(w);
    f.simulate_crash().unwrap();
    assert_eq!(f.read_all(&p, IoClass::Wal).unwrap(), b"one\0\0\0six");
    // The same through `set_fail_syncs`.
    let mut w = f.create(&p, IoClass::Wal).unwrap();
    w.append(b"lost").unwrap();
    f.set_fail_syncs(true);
    assert!(w.sync().is_err());
    f.set_fail_syncs(false);
    w.sync().unwrap();
    drop(w);
    assert_eq!(f.read_all(&p, IoClass::Wal).unwrap(), b"\0\0\0\0");
}

/// A sync refused because the power is out keeps its bytes pending: the crash mode
/// decides what reaches the file.
#[test]
fn fault_storage_keeps_bytes_pending_when_the_power_is_out() {
    let dir = tempfile::tempdir().unwrap();
    let power = Arc::new(PowerSupply::new());
    let f = FaultStorage::with_power(Arc::new(FsStorage::new()), power.clone());
    f.set_crash_mode(CrashMode::PartialPages { seed: 0 });
    durable_file(&f, dir.path(), "x", b"");
    // Find a crash whose first page survives.
    let p = dir.path().join("x");
    let mut survived = false;
    for _ in 0..64 {
        let mut w = f.create(&p, IoClass::Wal).unwrap();
        f.sync_dir(dir.path()).unwrap();
        w.append(&[7u8; 100]).unwrap();
        power.cut_now();
        assert!(w.sync().is_err());
        drop(w);
        power.restore();
        f.simulate_crash().unwrap();
        let got = f.read_all(&p, IoClass::Wal).unwrap();
        assert!(got.is_empty() || got == [7u8; 100], "{}", got.len());
        survived |= !got.is_empty();
    }
    assert!(survived);
}

/// A removal its directory has not made durable is undone by a crash (the file comes
/// back with its synced content); after a directory sync it stays removed.
#[test]
fn fault_storage_undoes_an_unsynced_removal() {
    let dir = tempfile::tempdir().unwrap();
    let f = FaultStorage::new(Arc::new(FsStorage::new()));
    durable_file(&f, dir.path(), "a.sst", b"table a");
    durable_file(&f, dir.path(), "b.sst", b"table b");
    f.remove_file(&dir.path().join("a.sst")).unwrap();
    f.remove_file(&dir.path().join("b.sst")).unwrap();
    assert!(!f.exists(&dir.path().join("a.sst")).unwrap());
    f.simulate_crash().unwrap();
    assert_eq!(
        f.read_all(&dir.path().join("a.sst"), IoClass::Flush)
            .unwrap(),
        b"table a"
    );
    f.remove_file(&dir.path().join("a.sst")).unwrap();
    f.sync_dir(dir.path()).unwrap();
    f.simulate_crash().unwrap();
    assert!(!f.exists(&dir.path().join("a.sst")).unwrap());
    assert!(f.exists(&dir.path().join("b.sst")).unwrap());
    // A file created and removed between two directory syncs stays removed.
    let mut w = f.create(&dir.path().join("c"), IoClass::Flush).unwrap();
    w.append(b"c").unwrap();
    w.sync().unwrap();
    drop(w);
    f.remove_file(&dir.path().join("c")).unwrap();
    f.simulate_crash().unwrap();
    assert!(!f.exists(&dir.path().join("c")).unwrap());
}

/// A link's new name is a creation: it vanishes at a crash unless its directory was
/// synced; a link over a durable name brings the old content back.
#[test]
fn fault_storage_tracks_link_targets_like_creations() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    let f = FaultStorage::new(Arc::new(FsStorage::new()));
    f.create_dir_all(&src).unwrap();
    f.create_dir_all(&dst).unwrap();
    durable_file(&f, &src, "1.sst", b"one");
    durable_file(&f, &dst, "old", b"old content");
    f.link_or_copy(&src.join("1.sst"), &dst.join("1.sst"))
        .unwrap();
    f.remove_file(&dst.join("old")).unwrap();
    f.link_or_copy(&src.join("1.sst"), &dst.join("old"))
        .unwrap();
    assert_eq!(
        f.read_all(&dst.join("old"), IoClass::Flush).unwrap(),
        b"one"
    );
    f.simulate_crash().unwrap();
    assert!(!f.exists(&dst.join("1.sst")).unwrap());
    assert_eq!(
        f.read_all(&dst.join("old"), IoClass::Flush).unwrap(),
        b"old content"
    );
    f.link_or_copy(&src.join("1.sst"), &dst.join("1.sst"))
        .unwrap();
    f.sync_dir(&dst).unwrap();
    f.simulate_crash().unwrap();
    assert_eq!(
        f.read_all(&dst.join("1.sst"), IoClass::Flush).unwrap(),
        b"one"
    );
}

/// The crash modes decide, page by page, what of an unsynced tail reaches the file.
#[test]
fn fault_storage_crash_modes_tear_unsynced_tails_by_page() {
    let dir = tempfile::tempdir().unwrap();
    let f = FaultStorage::new(Arc::new(FsStorage::new()));
    let p = dir.path().join("000009.log");
    let synced: Vec<u8> = vec![b's'; 5000];
    let tail: Vec<u8> = (0..5 * PAGE_BYTES as usize)
        .map(|i| (i % 251 + 1) as u8)
        .collect();
    let write = || {
        let mut w = f.create(&p, IoClass::Wal).unwrap();
        w.append(&synced).unwrap();
        w.sync().unwrap();
        f.sync_dir(dir.path()).unwrap();
        w.append(&tail).unwrap();
    };
    assert_eq!(f.crash_mode(), CrashMode::DropUnsynced);
    write();
    f.simulate_crash().unwrap();
    assert_eq!(f.read_all(&p, IoClass::Wal).unwrap(), synced);

    let (mut torn, mut holes) = (0, 0);
    for mode in [
        CrashMode::PartialPages { seed: 11 },
        CrashMode::ZeroPages { seed: 11 },
    ] {
        f.set_crash_mode(mode);
        for _ in 0..40 {
            write();
            f.simulate_crash().unwrap();
            let got = f.read_all(&p, IoClass::Wal).unwrap();
            assert_eq!(got[..5000], synced[..], "synced bytes are kept");
            let after = &got[5000..];
            let prefix = after.iter().zip(&tail).take_while(|(a, b)| a == b).count();
            if matches!(mode, CrashMode::PartialPages { .. }) {
                assert_eq!(prefix, after.len(), "a prefix of the tail, no holes");
                torn += u32::from(!after.is_empty() && after.len() < tail.len());
            } else {
                holes += u32::from(prefix < after.len());
                for (i, b) in after.iter().enumerate() {
                    assert!(*b == 0 || *b == tail[i]);
                }
            }
        }
    }
    assert!(torn > 0 && holes > 0, "torn {torn}, holes {holes}");
}
