//! The fuzz targets' checks on random bytes, and on random mutations of valid encodings
//! (random bytes alone rarely get past a magic number or a checksum).

use proptest::prelude::*;

use super::*;
use crate::sst::block_builder::BlockBuilder;

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..max)
}

/// Valid encodings of each format, the seeds that mutations start from.
fn sample_block() -> Vec<u8> {
    let mut b = BlockBuilder::new(2);
    for i in 0..6u64 {
        let k = crate::key::internal_key(
            format!("key{i}").as_bytes(),
            i + 1,
            crate::key::ValueType::Value,
        );
        b.add(&k, b"value");
    }
    b.finish().to_vec()
}

fn sample_batch() -> Vec<u8> {
    let mut b = WriteBatch::new();
    b.set_sequence(9);
    b.put(b"k", b"v");
    b.delete(b"d");
    b.delete_range(b"a", b"z");
    b.data().to_vec()
}

fn sample_edit() -> Vec<u8> {
    let e = VersionEdit {
        log_number: Some(3),
        next_file_number: Some(17),
        last_sequence: Some(300),
        deleted_files: vec![(1, 5)],
        ..VersionEdit::default()
    };
    e.encode()
}

/// `seed` with up to four bytes replaced at positions and values drawn by the strategy.
fn mutate(seed: &[u8], edits: &[(usize, u8)]) -> Vec<u8> {
    let mut out = seed.to_vec();
    for &(i, v) in edits {
        if let Some(len) = std::num::NonZeroUsize::new(out.len()) {
            out[i % len] = v;
        }
    }
    out
}

fn edits() -> impl Strategy<Value = Vec<(usize, u8)>> {
    proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4)
}

proptest! {
    // The case count comes from PROPTEST_CASES (proptest's default configuration).
    #[test]
    fn random_bytes_break_no_decoder(data in bytes(512)) {
        prop_assert_eq!(check_block(&data), Ok(()));
        prop_assert_eq!(check_table(&data), Ok(()));
        prop_assert_eq!(check_wal(&data), Ok(()));
        prop_assert_eq!(check_batch(&data), Ok(()));
        prop_assert_eq!(check_version_edit(&data), Ok(()));
        prop_assert_eq!(check_compaction_task(&data), Ok(()));
    }

    #[test]
    fn mutated_encodings_break_no_decoder(e in edits(), cut in any::<usize>()) {
        for seed in [sample_block(), sample_batch(), sample_edit()] {
            let m = mutate(&seed, &e);
            let m = &m[..cut % (m.len() + 1)];
            prop_assert_eq!(check_block(m), Ok(()));
            prop_assert_eq!(check_batch(m), Ok(()));
            prop_assert_eq!(check_version_edit(m), Ok(()));
        }
    }
}

/// Found by the `write_batch` fuzz target: a padded (non-minimal) varint length decodes,
/// so a decoded batch may rebuild to fewer bytes; the check compares operations instead.
#[test]
fn batch_with_a_padded_varint_length_passes_its_check() {
    let mut data = vec![0u8; 8];
    data.extend_from_slice(&1u32.to_le_bytes());
    data.extend_from_slice(&[2, 1, 0xd6, 0x81, 0x00, b'z']);
    let batch = WriteBatch::from_record(data.clone(), Path::new("x.log"), 0).unwrap();
    assert_eq!(batch.iter().count(), 1);
    assert_eq!(check_batch(&data), Ok(()));
}

#[test]
fn valid_encodings_pass_their_checks() {
    assert_eq!(check_block(&sample_block()), Ok(()));
    assert_eq!(check_batch(&sample_batch()), Ok(()));
    assert_eq!(check_version_edit(&sample_edit()), Ok(()));
}
