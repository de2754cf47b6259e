use std::path::Path;

use super::*;
use crate::storage::FsStorage;

fn opts(wal_dir: Option<&Path>) -> Options {
    Options {
        wal_dir: wal_dir.map(Path::to_path_buf),
        ..Options::default()
    }
}

fn touch(path: &Path) {
    std::fs::write(path, b"").unwrap();
}

#[test]
fn without_wal_dir_logs_live_in_the_database_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = FsStorage::new();
    for o in [opts(None), opts(Some(tmp.path()))] {
        let w = LogSet::open(&fs, tmp.path(), &o).unwrap();
        assert_eq!(w.path, tmp.path());
        assert_eq!(w.db_dir, None);
        assert_eq!(w.log_path(7), tmp.path().join("000007.log"));
    }
}

#[test]
fn a_separate_wal_dir_is_created_and_the_database_directory_also_searched() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let wal = tmp.path().join("fast").join("wal");
    std::fs::create_dir(&db).unwrap();
    let w = LogSet::open(&FsStorage::new(), &db, &opts(Some(&wal))).unwrap();
    assert!(wal.is_dir());
    assert_eq!(w.path, wal);
    assert_eq!(w.db_dir.as_deref(), Some(db.as_path()));
    let dirs: Vec<&Path> = w.dirs().collect();
    assert_eq!(dirs, vec![wal.as_path(), db.as_path()]);
}

#[cfg(unix)]
#[test]
fn another_name_of_the_database_directory_is_the_database_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    std::fs::create_dir(&db).unwrap();
    touch(&db.join(LOCK_FILE_NAME));
    let alias = tmp.path().join("alias");
    std::os::unix::fs::symlink(&db, &alias).unwrap();
    let w = LogSet::open(&FsStorage::new(), &db, &opts(Some(&alias))).unwrap();
    assert_eq!(
        w.db_dir, None,
        "the same directory must not be searched twice"
    );
}

fn two_dirs() -> (tempfile::TempDir, LogSet) {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let wal = tmp.path().join("wal");
    std::fs::create_dir(&db).unwrap();
    let w = LogSet::open(&FsStorage::new(), &db, &opts(Some(&wal))).unwrap();
    (tmp, w)
}

#[test]
fn logs_of_both_directories_are_replayed_oldest_first() {
    let (tmp, w) = two_dirs();
    let db = tmp.path().join("db");
    let wal = tmp.path().join("wal");
    touch(&db.join("000003.log"));
    touch(&db.join("000005.log"));
    touch(&wal.join("000004.log"));
    touch(&wal.join("000009.log"));
    touch(&wal.join("000012.sst"));
    let logs = w.logs_to_replay(&FsStorage::new(), 4).unwrap();
    let got: Vec<(u64, PathBuf)> = logs.into_iter().map(|l| (l.number, l.path)).collect();
    assert_eq!(
        got,
        vec![
            (4, wal.join("000004.log")),
            (5, db.join("000005.log")),
            (9, wal.join("000009.log")),
        ]
    );
}

#[test]
fn a_log_in_both_directories_is_refused() {
    let (tmp, w) = two_dirs();
    touch(&tmp.path().join("db").join("000004.log"));
    touch(&tmp.path().join("wal").join("000004.log"));
    let err = w.logs_to_replay(&FsStorage::new(), 4).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument(m) if m.contains("in both")),
        "{err}"
    );
    // Below the log number the duplicate is obsolete: never replayed, so not refused.
    touch(&tmp.path().join("wal").join("000005.log"));
    assert_eq!(w.logs_to_replay(&FsStorage::new(), 5).unwrap().len(), 1);
}

#[test]
fn a_missing_log_the_manifest_names_is_refused() {
    let (tmp, w) = two_dirs();
    touch(&tmp.path().join("wal").join("000006.log"));
    let err = w.logs_to_replay(&FsStorage::new(), 5).unwrap_err();
    let Error::InvalidArgument(msg) = &err else {
        panic!("{err}");
    };
    assert!(
        msg.contains("000005.log") && msg.contains("wal_dir"),
        "{msg}"
    );
    // A manifest that never named a log (a database whose first open stopped early).
    assert_eq!(w.logs_to_replay(&FsStorage::new(), 0).unwrap().len(), 1);
}

#[test]
fn logs_without_a_database_are_foreign() {
    let (tmp, w) = two_dirs();
    let fs = FsStorage::new();
    w.refuse_foreign_logs(&fs).unwrap();
    touch(&tmp.path().join("wal").join("000002.log"));
    let err = w.refuse_foreign_logs(&fs).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument(m) if m.contains("000002.log")),
        "{err}"
    );
}
