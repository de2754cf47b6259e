use super::*;
use crate::iter::InternalIterator;
use crate::key::{seek_key, MAX_SEQ};
use crate::options::Compression;

/// Reads everything a damaged table offers; every answer must be right or a `Corruption`.
/// Returns true if some check reported the damage.
fn check_damaged(
    bytes: Vec<u8>,
    entries: &[(Vec<u8>, Vec<u8>)],
    tombstones: &[RangeTombstone],
) -> bool {
    let r = match open_mem(bytes, None) {
        Ok(r) => Arc::new(r),
        Err(e) => {
            assert!(e.is_corruption(), "open: {e}");
            return true;
        }
    };
    let mut detected = false;
    assert_eq!(r.range_tombstones(), tombstones);
    for (k, v) in entries {
        match r.get(
            &seek_key(crate::key::user_key(k), MAX_SEQ),
            IoClass::Foreground,
            false,
        ) {
            Ok(got) => {
                // Entries are one version per user key here.
                let (seq, kind, gv) = got.expect("present key vanished without an error");
                let gk = internal_key(crate::key::user_key(k), seq, kind);
                assert_eq!((&gk, gv.as_ref()), (k, v.as_slice()));
            }
            Err(e) => {
                assert!(e.is_corruption(), "get: {e}");
                detected = true;
            }
        }
    }
    let mut it = r.iter(IoClass::Foreground, false);
    let mut seen = Vec::new();
    let mut res = it.seek_to_first();
    while res.is_ok() && it.valid() {
        seen.push((it.key().to_vec(), it.value().to_vec()));
        res = it.next();
    }
    match res {
        Ok(()) => assert_eq!(seen, entries),
        Err(e) => {
            assert!(e.is_corruption(), "iter: {e}");
            assert!(!it.valid());
            assert_eq!(seen, entries[..seen.len()]);
            detected = true;
        }
    }
    match r.verify() {
        Ok(()) => {}
        Err(e) => {
            assert!(e.is_corruption(), "verify: {e}");
            detected = true;
        }
    }
    detected
}

fn small_table(c: Compression) -> (Vec<u8>, Entries, Vec<RangeTombstone>) {
    let entries: Entries = (0..40u64)
        .map(|i| {
            let kind = if i % 9 == 4 {
                ValueType::Deletion
            } else {
                ValueType::Value
            };
            let v = if kind == ValueType::Value {
                format!("value{i}value{i}value{i}").into_bytes()
            } else {
                Vec::new()
            };
            (
                internal_key(format!("key{i:03}").as_bytes(), 100 + i, kind),
                v,
            )
        })
        .collect();
    let tombstones = vec![RangeTombstone {
        start: b"key010".to_vec(),
        end: b"key020".to_vec(),
        seq: 7,
    }];
    let opts = SstOptions {
        block_size: 128,
        restart_interval: 3,
        bloom_bits_per_key: 10,
        compression: c,
    };
    let (bytes, _) = build(&entries, &tombstones, opts);
    (bytes, entries, tombstones)
}

#[test]
fn every_flipped_byte_is_detected_or_harmless() {
    for c in [Compression::None, Compression::Lz4, Compression::Zstd(1)] {
        let (good, entries, tombstones) = small_table(c);
        assert!(!check_damaged(good.clone(), &entries, &tombstones));
        for i in 0..good.len() {
            for flip in [0x01u8, 0xff] {
                let mut bad = good.clone();
                bad[i] ^= flip;
                // Every byte of a table is under a checksum, so every flip is reported.
                assert!(
                    check_damaged(bad, &entries, &tombstones),
                    "{c:?}: flip {flip:#x} at byte {i} of {} went unnoticed",
                    good.len()
                );
            }
        }
    }
}

#[test]
fn truncated_tables_are_corrupt() {
    let (good, _, _) = small_table(Compression::Lz4);
    for n in 0..good.len() {
        let err = open_mem(good[..n].to_vec(), None).unwrap_err();
        assert!(err.is_corruption(), "length {n}: {err}");
    }
    // Garbage appended after the footer is also refused.
    let mut longer = good.clone();
    longer.extend_from_slice(&[0; 10]);
    assert!(open_mem(longer, None).unwrap_err().is_corruption());
}

#[test]
fn corruption_names_the_file_and_block() {
    let (good, entries, _) = small_table(Compression::None);
    let mut bad = good.clone();
    bad[3] ^= 0x40; // inside the first data block
    let r = open_mem(bad, None).unwrap();
    let err = r
        .get(
            &seek_key(crate::key::user_key(&entries[0].0), MAX_SEQ),
            IoClass::Foreground,
            false,
        )
        .unwrap_err();
    match err {
        crate::Error::Corruption { file, offset, .. } => {
            assert_eq!(file, PathBuf::from("test.sst"));
            assert_eq!(offset, 0);
        }
        other => panic!("unexpected error {other}"),
    }
}
