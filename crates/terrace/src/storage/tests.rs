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
    let st = s.io_stats().get(IoClass::Flush);
    assert_eq!(st.write_bytes, 11);
    assert_eq!(st.sync_ops, 1);
    assert_eq!(s.io_stats().get(IoClass::Foreground).read_bytes, 5);
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
