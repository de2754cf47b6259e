//! Databases written by an earlier release, kept under `tests/fixtures/`, must open and
//! read back exactly what was written: a change to a format that breaks old databases
//! fails here. Each fixture is made by a fixed sequence of operations (tables on several
//! levels with LZ4 and Zstd blocks, deletions, range deletions, overwrites, and writes
//! left only in the write-ahead log), and the test replays the same sequence into a model.
//!
//! The fixtures are opened from a copy, never in place. To add the fixtures of a new
//! format version (never to rewrite old ones), run
//! `TERRACE_WRITE_FIXTURES=1 cargo test -p terrace --test it write_format_fixtures -- --ignored`
//! with a new `FORMAT_TAG`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use terrace::options::Compression;
use terrace::{Db, Options};

/// The fixture set this release writes.
const FORMAT_TAG: &str = "v1";
/// Every fixture set kept, oldest first; each must open with the current code.
const KEPT: &[&str] = &["v1"];

fn fixtures_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Classic,
    Matrix,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Classic => "classic",
            Kind::Matrix => "matrix",
        }
    }
}

fn options(kind: Kind, compression: Compression) -> Options {
    let mut o = crate::small_options();
    o.compression = compression;
    o.bloom_bits_per_key = 10;
    if let Kind::Matrix = kind {
        o.write_buffer_size = 8 << 10;
        let mut m =
            crate::matrix_options(Path::new("."), 192 << 10, terrace::pmem::PmemMode::Mapped);
        // The region lives in the database directory, where a copy finds it.
        m.region_path = None;
        o.level0 = Arc::new(terrace::level0::MatrixLevel0::new(m).unwrap());
    }
    o
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn value(round: u32, i: u32) -> Vec<u8> {
    let mut v = format!("r{round}-v{i}-").into_bytes();
    v.resize(40 + (i as usize * 7) % 90, b'a' + (round % 26) as u8);
    v
}

/// The operations a fixture is made of, applied to the database (if given) and to the
/// model. Phases switch the compression, so that tables of both kinds exist.
fn apply(db: Option<&Db>, model: &mut BTreeMap<Vec<u8>, Vec<u8>>) {
    let put = |model: &mut BTreeMap<_, _>, k: Vec<u8>, v: Vec<u8>| {
        if let Some(db) = db {
            db.put(&k, &v).unwrap();
        }
        model.insert(k, v);
    };
    for i in 0..3000 {
        put(model, key(i), value(0, i));
    }
    if let Some(db) = db {
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
    }
    for i in (0..3000).step_by(3) {
        put(model, key(i), value(1, i));
    }
    for i in (0..3000).step_by(11) {
        if let Some(db) = db {
            db.delete(&key(i)).unwrap();
        }
        model.remove(&key(i));
    }
    if let Some(db) = db {
        db.delete_range(&key(1000), &key(1200)).unwrap();
    }
    model.retain(|k, _| {
        !(k.as_slice() >= key(1000).as_slice() && k.as_slice() < key(1200).as_slice())
    });
    if let Some(db) = db {
        db.flush().unwrap();
    }
    // Left in the log only: the database is closed without a flush.
    for i in 2900..3100 {
        put(model, key(i), value(2, i));
    }
}

fn model() -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut m = BTreeMap::new();
    apply(None, &mut m);
    m
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

/// Writes this release's fixtures (run by hand; see the module docs).
#[test]
#[ignore = "writes the fixtures of a new format version; run by hand"]
fn write_format_fixtures() {
    if std::env::var("TERRACE_WRITE_FIXTURES").is_err() {
        return;
    }
    for (kind, compression) in [
        (Kind::Classic, Compression::Lz4),
        (Kind::Matrix, Compression::Zstd(3)),
    ] {
        let dir = fixtures_root().join(FORMAT_TAG).join(kind.name());
        assert!(
            !dir.exists(),
            "{} exists: fixtures are never rewritten",
            dir.display()
        );
        let db = Db::open(&dir, options(kind, compression)).unwrap();
        let mut m = BTreeMap::new();
        apply(Some(&db), &mut m);
        db.close().unwrap();
        let _ = std::fs::remove_file(dir.join("LOCK"));
    }
}

#[test]
fn databases_written_by_earlier_releases_open_and_read_back() {
    let want: Vec<(Vec<u8>, Vec<u8>)> = model().into_iter().collect();
    for tag in KEPT {
        for (kind, compression) in [
            (Kind::Classic, Compression::Lz4),
            (Kind::Matrix, Compression::Zstd(3)),
        ] {
            let src = fixtures_root().join(tag).join(kind.name());
            assert!(src.is_dir(), "missing fixture {}", src.display());
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().join("db");
            copy_dir(&src, &dir);
            let db = Db::open(&dir, options(kind, compression))
                .unwrap_or_else(|e| panic!("fixture {tag}/{}: {e}", kind.name()));
            assert_eq!(crate::scan_all(&db), want, "fixture {tag}/{}", kind.name());
            for (k, v) in want.iter().step_by(13) {
                assert_eq!(db.get(k).unwrap().as_deref(), Some(v.as_slice()));
            }
            assert_eq!(
                db.get(&key(1100)).unwrap(),
                None,
                "a range-deleted key came back"
            );
            // It stays a working database: a write, a flush and a compaction go through.
            db.put(b"zz-after", b"upgrade").unwrap();
            db.flush().unwrap();
            db.compact_range(None, None).unwrap();
            assert_eq!(
                db.get(b"zz-after").unwrap().as_deref(),
                Some(&b"upgrade"[..])
            );
            assert_eq!(crate::scan_all(&db).len(), want.len() + 1);
        }
    }
}
