//! The fuzz targets' checks on random bytes, and on random mutations of valid encodings
//! (random bytes alone rarely get past a magic number or a checksum).

use proptest::prelude::*;

use super::seeds;
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
        prop_assert_eq!(check_table_fixed(&data), Ok(()));
        prop_assert_eq!(check_wal_fixed(&data), Ok(()));
        prop_assert_eq!(check_matrix_row(&data), Ok(()));
        prop_assert_eq!(check_pmem_header(&data), Ok(()));
    }

    #[test]
    fn mutated_files_break_no_decoder(e in edits(), cut in any::<usize>(), pick in any::<usize>()) {
        let all = seeds::all();
        let s = &all[pick % all.len()];
        let m = mutate(&s.bytes, &e);
        let cut = if cut % 4 == 0 { cut % (m.len() + 1) } else { m.len() };
        let m = &m[..cut];
        prop_assert_eq!(check_by_target(s.target, m), Some(Ok(())), "{}", s.name);
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

/// The check a fuzz target of the engine runs; `None` for another crate's target.
fn check_by_target(target: &str, data: &[u8]) -> Option<std::result::Result<(), Broken>> {
    Some(match target {
        "sst_block" => check_block(data),
        "sst_table" => check_table(data),
        "sst_table_fixed" => check_table_fixed(data),
        "wal_reader" => check_wal(data),
        "wal_fixed" => check_wal_fixed(data),
        "write_batch" => check_batch(data),
        "version_edit" => check_version_edit(data),
        "compaction_task" => check_compaction_task(data),
        "matrix_row" => check_matrix_row(data),
        "pmem_header" => check_pmem_header(data),
        _ => return None,
    })
}

/// What a damaged file did: read whole, stopped at a checksum, or stopped elsewhere.
#[derive(Debug, Default)]
struct Outcomes {
    whole: usize,
    checksum: usize,
    other: usize,
    other_reasons: std::collections::BTreeSet<String>,
}

impl Outcomes {
    fn note(&mut self, r: Result<()>) {
        match r {
            Ok(()) => self.whole += 1,
            Err(Error::Corruption { reason, .. }) if reason.contains("checksum") => {
                self.checksum += 1;
            }
            Err(e) => {
                self.other += 1;
                self.other_reasons.insert(match e {
                    Error::Corruption { reason, .. } => reason,
                    e => e.to_string(),
                });
            }
        }
    }
}

/// Opens a table and reads every block of it.
fn open_and_verify(data: &[u8]) -> Result<()> {
    let reader = SstReader::open(Arc::new(MemFile(data.to_vec())), "t.sst".into(), 1, None)?;
    reader.verify()
}

fn seed_bytes(name: &str) -> Vec<u8> {
    seeds::all()
        .into_iter()
        .find(|s| s.name == name)
        .unwrap()
        .bytes
}

/// Every byte of a table flipped: without the fix nearly every flip stops at a checksum;
/// with it, none in a block or footer field does, and many reach block, index, filter or
/// property decoding (errors of their own) or read whole.
#[test]
fn fixed_tables_get_past_the_checksums() {
    for name in ["table-none-bloom-tombstones", "table-lz4"] {
        let table = seed_bytes(name);
        let mut fixed_copy = table.clone();
        fix_table_checksums(&mut fixed_copy);
        assert_eq!(
            fixed_copy, table,
            "{name}: fixing a whole table changes nothing"
        );
        let (mut raw, mut fixed) = (Outcomes::default(), Outcomes::default());
        for i in 0..table.len() {
            let mut m = table.clone();
            m[i] ^= 0x21;
            raw.note(open_and_verify(&m));
            fix_table_checksums(&mut m);
            fixed.note(open_and_verify(&m));
            assert_eq!(check_table(&m), Ok(()), "{name}: byte {i}");
        }
        assert!(raw.checksum * 10 >= table.len() * 9, "{name}: {raw:?}");
        assert!(fixed.checksum * 20 <= table.len(), "{name}: {fixed:?}");
        assert!(fixed.whole > 0 && fixed.other > 0, "{name}: {fixed:?}");
        assert!(fixed.other_reasons.len() >= 3, "{name}: {fixed:?}");
    }
}

/// Reads a log to its end; a `Corrupt` outcome is an error with its reason.
fn read_log(data: &[u8]) -> Result<Vec<Vec<u8>>> {
    let mut reader = LogReader::new(Arc::new(MemFile(data.to_vec())), "l.log".into());
    let mut records = Vec::new();
    loop {
        match reader.read_record()? {
            ReadOutcome::Record { data, .. } => records.push(data.to_vec()),
            ReadOutcome::Eof => return Ok(records),
            ReadOutcome::Corrupt { offset, reason, .. } => {
                return Err(Error::corruption("l.log", offset, reason))
            }
        }
    }
}

/// Every byte of a log flipped: without the fix a flip is a checksum mismatch; with it,
/// a flipped payload byte reads back as a changed record, and a flipped header stops
/// at the fragment's type or length.
#[test]
fn fixed_logs_get_past_the_checksums() {
    let mut header_damage = 0;
    for name in ["log-several-records", "log-fragmented-record"] {
        let log = seed_bytes(name);
        let original = read_log(&log).unwrap();
        let mut fixed_copy = log.clone();
        fix_wal_checksums(&mut fixed_copy);
        assert_eq!(
            fixed_copy, log,
            "{name}: fixing a whole log changes nothing"
        );
        let (mut raw, mut fixed, mut changed) = (Outcomes::default(), Outcomes::default(), 0);
        let step = if log.len() > 4096 { 7 } else { 1 };
        for i in (0..log.len()).step_by(step) {
            let mut m = log.clone();
            m[i] ^= 0x04;
            raw.note(read_log(&m).map(|_| ()));
            fix_wal_checksums(&mut m);
            let back = read_log(&m);
            changed += usize::from(back.as_ref().is_ok_and(|r| *r != original));
            fixed.note(back.map(|_| ()));
            assert_eq!(check_wal(&m), Ok(()), "{name}: byte {i}");
        }
        let tried = log.len().div_ceil(step);
        assert!(raw.checksum * 10 >= tried * 9, "{name}: {raw:?}");
        assert!(fixed.checksum * 10 <= tried, "{name}: {fixed:?}");
        assert!(
            changed * 2 >= tried,
            "{name}: {changed} of {tried} read changed records"
        );
        header_damage += fixed.other;
    }
    assert!(header_damage > 0);
}

/// Every byte of a row image flipped: with the fix, flips reach the directory's fields,
/// the row header's counts and bounds, and the metadata and data checks.
#[test]
fn fixed_rows_get_past_the_checksums() {
    let open = |m: &[u8]| {
        open_matrix_row(m)
            .and_then(|row| check_row(&row).map_err(|b| Error::corruption("row", 0, b)))
    };
    for (name, image) in seeds::rows() {
        open(&image).unwrap();
        let mut fixed_copy = image.clone();
        fix_matrix_row_checksums(&mut fixed_copy);
        assert_eq!(
            fixed_copy, image,
            "{name}: fixing a whole row changes nothing"
        );
        let (mut raw, mut fixed) = (Outcomes::default(), Outcomes::default());
        for i in 0..image.len() {
            let mut m = image.clone();
            m[i] ^= 0x02;
            raw.note(open(&m).map(|_| ()));
            fix_matrix_row_checksums(&mut m);
            fixed.note(open(&m).map(|_| ()));
            assert_eq!(check_matrix_row(&m), Ok(()), "{name}: byte {i}");
        }
        assert!(raw.checksum * 10 >= image.len() * 8, "{name}: {raw:?}");
        assert!(fixed.checksum * 20 <= image.len(), "{name}: {fixed:?}");
        assert!(fixed.other_reasons.len() >= 3, "{name}: {fixed:?}");
    }
}

/// A region header with its checksum fixed reaches the version, page size and capacity
/// checks.
#[test]
fn fixed_region_headers_reach_the_field_checks() {
    let page = seed_bytes("region-4k-page");
    let path = Path::new("r.pmem");
    let decode = |b: &[u8]| RegionHeader::decode(path, b, u64::MAX);
    assert!(decode(&page).is_ok());
    for (at, reason) in [(8, "version"), (12, "page size"), (16, "capacity")] {
        let mut m = page.clone();
        m[at] ^= 0x01;
        let crc = crc32c::crc32c(&m[..32]);
        m[32..36].copy_from_slice(&crc.to_le_bytes());
        match decode(&m) {
            Err(Error::Corruption { reason: r, .. }) => assert!(r.contains(reason), "{r}"),
            other => panic!("byte {at}: {other:?}"),
        }
        assert_eq!(check_pmem_header(&m), Ok(()));
    }
}

/// Where the committed corpora are: `fuzz/corpus/<target>/` at the repository's root.
fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus")
}

/// Every file of the committed corpora passes its target's check (this is what the fuzz
/// targets run first, before any mutation).
#[test]
fn committed_corpora_pass_their_checks() {
    let Ok(targets) = std::fs::read_dir(corpus_dir()) else {
        return; // Not built from the repository (no fuzz/ next to the crate).
    };
    for target in targets {
        let target = target.unwrap().path();
        let name = target.file_name().unwrap().to_string_lossy().to_string();
        for file in std::fs::read_dir(&target).unwrap() {
            let file = file.unwrap().path();
            let data = std::fs::read(&file).unwrap();
            if let Some(r) = check_by_target(&name, &data) {
                assert_eq!(r, Ok(()), "{}", file.display());
            }
        }
    }
}

/// The committed seeds are what the generator writes today (regenerate them with
/// `write_seed_corpus` after a format change; fuzz/README.md).
#[test]
fn committed_seeds_match_the_generator() {
    let dir = corpus_dir();
    if !dir.is_dir() {
        return;
    }
    for s in seeds::all() {
        let path = dir.join(s.target).join(format!("seed-{}", s.name));
        let committed = std::fs::read(&path).unwrap_or_default();
        assert!(
            committed == s.bytes,
            "{} is stale: regenerate the seeds",
            path.display()
        );
    }
}

/// Each seed reads back as what it was made from: no seed is a damaged file.
#[test]
fn seeds_are_valid_files() {
    for s in seeds::all() {
        let ok = match s.target {
            "sst_table" | "sst_table_fixed" => open_and_verify(&s.bytes).is_ok(),
            "wal_reader" | "wal_fixed" => read_log(&s.bytes).is_ok_and(|r| !r.is_empty()),
            "write_batch" => WriteBatch::from_record(s.bytes.clone(), Path::new("b"), 0).is_ok(),
            "version_edit" => VersionEdit::decode(&s.bytes, Path::new("m"), 0).is_ok(),
            "compaction_task" => CompactionTask::decode(&s.bytes).is_ok(),
            "sst_block" => Block::new(Bytes::copy_from_slice(&s.bytes)).is_ok(),
            "matrix_row" => open_matrix_row(&s.bytes).is_ok(),
            "pmem_header" => RegionHeader::decode(Path::new("r"), &s.bytes, u64::MAX).is_ok(),
            other => panic!("no check for {other}"),
        };
        assert!(ok, "{}/{}", s.target, s.name);
        assert!(
            s.bytes.len() <= 48 << 10,
            "{}/{} is too large",
            s.target,
            s.name
        );
    }
    let trailer = seed_bytes("log-block-trailer");
    assert_eq!(&trailer[BLOCK_SIZE - 3..BLOCK_SIZE], &[0, 0, 0]);
}

/// Writes the seed corpora as `fuzz/corpus/<target>/seed-<name>`, replacing files of the
/// same name (fuzz/README.md, "Seed corpora").
#[test]
#[ignore = "writes the seed corpora into the repository"]
fn write_seed_corpus() {
    for s in seeds::all() {
        let dir = corpus_dir().join(s.target);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("seed-{}", s.name)), &s.bytes).unwrap();
    }
}
