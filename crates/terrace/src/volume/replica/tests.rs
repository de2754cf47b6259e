use std::path::PathBuf;
use std::time::Duration;

use super::*;
use crate::storage::{FsStorage, Storage, ThrottleLimits};

/// A copy that answers with its own byte, or fails.
struct Copy {
    byte: u8,
    fails: bool,
}

impl ReadableFile for Copy {
    fn read_exact_at(&self, _offset: u64, buf: &mut [u8], _class: IoClass) -> Result<()> {
        if self.fails {
            return Err(crate::error::Error::io(
                std::path::Path::new("copy"),
                std::io::Error::other("EIO"),
            ));
        }
        buf.fill(self.byte);
        Ok(())
    }

    fn len(&self) -> u64 {
        8
    }
}

fn copy(byte: u8, fails: bool) -> Arc<dyn ReadableFile> {
    Arc::new(Copy { byte, fails })
}

#[test]
fn rotating_takes_copies_in_turn() {
    let c = RotatingChooser::default();
    let got: Vec<usize> = (0..5).map(|_| c.choose(&[4, 5, 6])).collect();
    assert_eq!(got, vec![0, 1, 2, 0, 1]);
}

#[test]
fn a_read_goes_to_the_chosen_copy_and_falls_over_to_a_good_one() {
    let f = ReplicatedFile::new(
        vec![1, 2],
        vec![copy(1, false), copy(2, false)],
        Arc::new(RotatingChooser::default()),
    );
    let mut buf = [0u8; 4];
    f.read_exact_at(0, &mut buf, IoClass::Foreground).unwrap();
    assert_eq!(buf, [1; 4]);
    f.read_exact_at(0, &mut buf, IoClass::Foreground).unwrap();
    assert_eq!(buf, [2; 4]);
    assert_eq!(f.len(), 8);
    // A failing copy: every read still succeeds from the other.
    let f = ReplicatedFile::new(
        vec![1, 2],
        vec![copy(1, true), copy(2, false)],
        Arc::new(RotatingChooser::default()),
    );
    for _ in 0..4 {
        f.read_exact_at(0, &mut buf, IoClass::Foreground).unwrap();
        assert_eq!(buf, [2; 4]);
    }
    // Every copy failing fails the read.
    let f = ReplicatedFile::new(
        vec![1, 2],
        vec![copy(1, true), copy(2, true)],
        Arc::new(RotatingChooser::default()),
    );
    assert!(f.read_exact_at(0, &mut buf, IoClass::Foreground).is_err());
}

#[test]
fn the_backlog_chooser_reads_from_the_volume_least_behind() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b): (PathBuf, PathBuf) = (dir.path().join("a"), dir.path().join("b"));
    let limits = ThrottleLimits::default()
        .with_iops(100, ThrottleLimits::CLOUD_IO_UNIT_BYTES)
        .with_burst(Duration::from_millis(100));
    let storage = Arc::new(ThrottledStorage::new(
        Arc::new(FsStorage::new()),
        vec![(a.clone(), limits), (b.clone(), limits)],
    ));
    for d in [&a, &b] {
        storage.create_dir_all(d).unwrap();
        let mut w = storage.create(&d.join("f"), IoClass::Compaction).unwrap();
        w.append(&[0u8; 64]).unwrap();
        w.sync().unwrap();
    }
    // Volume 1 (rule a) spends its burst and more on reads; volume 2 (rule b) none.
    let ra = storage.open(&a.join("f")).unwrap();
    let mut buf = [0u8; 4];
    for i in 0..12u64 {
        ra.read_exact_at(i * 4, &mut buf, IoClass::Foreground)
            .unwrap();
    }
    let chooser = BacklogChooser::new(vec![1, 2], storage.clone());
    for _ in 0..4 {
        assert_eq!(chooser.choose(&[1, 2]), 1, "volume 2 is idle");
        assert_eq!(chooser.choose(&[2, 1]), 0);
    }
    // A volume without a rule is never behind.
    assert_eq!(chooser.choose(&[1, 7]), 1);
}
