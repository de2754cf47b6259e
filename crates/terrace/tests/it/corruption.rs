//! Corruption: damaged table, log and manifest bytes give errors, never wrong values.

use std::path::{Path, PathBuf};

use terrace::{Db, Options, WalRecoveryMode};

use crate::small_options;

fn files_with_ext(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    v
}

fn flip(path: &Path, offset: u64) {
    let mut bytes = std::fs::read(path).unwrap();
    let i = offset as usize % bytes.len();
    bytes[i] ^= 0x5a;
    std::fs::write(path, bytes).unwrap();
}

fn value(i: u32) -> Vec<u8> {
    format!("value-{i}-padding-padding").into_bytes()
}

#[test]
fn flipped_table_bytes_never_yield_wrong_values() {
    for spot in [0.1f64, 0.35, 0.6, 0.9, 0.99] {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        for i in 0..3000u32 {
            db.put(format!("k{i:05}").as_bytes(), &value(i)).unwrap();
        }
        db.flush().unwrap();
        db.close().unwrap();
        let sst = files_with_ext(dir.path(), "sst").pop().unwrap();
        let len = std::fs::metadata(&sst).unwrap().len();
        flip(&sst, (len as f64 * spot) as u64);
        let db = match Db::open(dir.path(), Options::default()) {
            Ok(db) => db,
            Err(e) => {
                assert!(
                    e.is_corruption(),
                    "open failed with a non-corruption error: {e}"
                );
                continue;
            }
        };
        let mut errors = 0;
        for i in 0..3000u32 {
            match db.get(format!("k{i:05}").as_bytes()) {
                Ok(Some(v)) => assert_eq!(v, value(i), "wrong value at spot {spot}"),
                Ok(None) => panic!("k{i:05} vanished without an error (spot {spot})"),
                Err(e) => {
                    assert!(e.is_corruption(), "{e}");
                    errors += 1;
                }
            }
        }
        let scanned = db.iter(Default::default()).and_then(|mut it| {
            it.seek_to_first()?;
            it.collect_remaining()
        });
        match scanned {
            Ok(all) => {
                for (k, v) in all {
                    let i: u32 = std::str::from_utf8(&k[1..]).unwrap().parse().unwrap();
                    assert_eq!(v, value(i));
                }
            }
            Err(e) => assert!(e.is_corruption(), "{e}"),
        }
        eprintln!("spot {spot}: {errors} gets reported corruption");
    }
}

fn write_unflushed(dir: &Path, n: u32) {
    let db = Db::open(dir, Options::default()).unwrap();
    for i in 0..n {
        db.put(format!("k{i:05}").as_bytes(), &value(i)).unwrap();
    }
    db.close().unwrap();
}

/// A flipped byte in the middle of the newest log fails the open in the strict mode; the
/// default (point in time) cannot tell it from a torn unsynced tail and keeps the prefix.
#[test]
fn wal_damage_in_the_middle_fails_the_open_in_the_strict_mode() {
    let dir = tempfile::tempdir().unwrap();
    write_unflushed(dir.path(), 2000);
    let log = files_with_ext(dir.path(), "log").pop().unwrap();
    let len = std::fs::metadata(&log).unwrap().len();
    flip(&log, len / 3);
    let strict = Options {
        wal_recovery_mode: WalRecoveryMode::TolerateCorruptedTailRecords,
        ..Options::default()
    };
    let err = Db::open(dir.path(), strict).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    match err {
        terrace::Error::Corruption { file, offset, .. } => {
            assert_eq!(file, log);
            assert!(offset <= len / 3 + 1, "offset {offset}");
        }
        other => panic!("{other}"),
    }
    // Point-in-time recovery (the default) keeps the prefix before the damage.
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let all = crate::scan_all(&db);
    assert!(!all.is_empty() && all.len() < 2000, "{}", all.len());
    for (i, (k, v)) in all.iter().enumerate() {
        assert_eq!(k, format!("k{i:05}").as_bytes());
        assert_eq!(v, &value(i as u32));
    }
    assert_eq!(db.stats().wal_records_dropped, 1);
}

#[test]
fn torn_last_wal_record_is_dropped_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    write_unflushed(dir.path(), 500);
    let log = files_with_ext(dir.path(), "log").pop().unwrap();
    let bytes = std::fs::read(&log).unwrap();
    std::fs::write(&log, &bytes[..bytes.len() - 10]).unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(crate::scan_all(&db).len(), 499);
    assert_eq!(db.stats().wal_records_dropped, 1);
}

#[test]
fn flipped_manifest_byte_fails_the_open() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    for i in 0..3000u32 {
        db.put(format!("k{i:05}").as_bytes(), &value(i)).unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    let manifest = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("MANIFEST-")
        })
        .unwrap();
    let len = std::fs::metadata(&manifest).unwrap().len();
    flip(&manifest, len / 2);
    let err = Db::open(dir.path(), small_options()).unwrap_err();
    assert!(err.is_corruption(), "{err}");
}
