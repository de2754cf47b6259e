use std::path::PathBuf;
use std::sync::Arc;

use rand::{Rng, SeedableRng};

use super::record::{mask, unmask};
use super::*;
use crate::error::Error;
use crate::fuzzing::MemWritable as VecFile;
use crate::storage::{FsStorage, IoClass, ReadableFile, Storage};

/// A second `LogWriter`: keeps whole records in memory. Proves the seam.
#[derive(Default)]
struct MemLogWriter {
    records: Vec<Vec<u8>>,
    size: u64,
    syncs: usize,
}

impl LogWriter for MemLogWriter {
    fn add_record(&mut self, data: &[u8]) -> Result<()> {
        self.records.push(data.to_vec());
        self.size += data.len() as u64;
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        self.syncs += 1;
        Ok(())
    }
    fn size(&self) -> u64 {
        self.size
    }
}

struct BytesFile(Vec<u8>);

impl ReadableFile for BytesFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8], _class: IoClass) -> Result<()> {
        let start = offset as usize;
        let src = self.0.get(start..start + buf.len()).ok_or_else(|| {
            Error::io(
                "mem",
                std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
            )
        })?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
}

fn pattern(len: usize, seed: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 + seed * 7) as u8).collect()
}

/// Writes `records` and returns the log bytes and each record's offset.
fn encode(records: &[Vec<u8>]) -> (Vec<u8>, Vec<u64>) {
    let file = VecFile::default();
    let mut w = FileLogWriter::new(Box::new(file.clone()));
    let mut offsets = Vec::new();
    for r in records {
        // A record starts at the next block when fewer than a header's bytes remain.
        let size = w.size();
        let room = BLOCK_SIZE as u64 - size % BLOCK_SIZE as u64;
        offsets.push(if room < HEADER_SIZE as u64 {
            size + room
        } else {
            size
        });
        w.add_record(r).unwrap();
    }
    w.flush().unwrap();
    let bytes = file.0.lock().clone();
    assert_eq!(w.size(), bytes.len() as u64);
    (bytes, offsets)
}

fn read_all(bytes: Vec<u8>) -> Vec<ReadOutcome> {
    let mut r = LogReader::new(Arc::new(BytesFile(bytes)), PathBuf::from("000001.log"));
    let mut out = Vec::new();
    loop {
        let o = r.read_record().unwrap();
        if o == ReadOutcome::Eof {
            assert_eq!(r.read_record().unwrap(), ReadOutcome::Eof);
            return out;
        }
        out.push(o);
        assert!(out.len() < 100_000, "reader does not advance");
    }
}

fn rec(data: &[u8], offset: u64) -> ReadOutcome {
    ReadOutcome::Record {
        data: data.to_vec(),
        offset,
    }
}

/// Sizes covering the edge cases: empty, one byte, exactly filling a block's first
/// fragment, leaving less than a header, and spanning three or more blocks.
fn edge_records() -> Vec<Vec<u8>> {
    let sizes = [
        0,                        // at 0, ends at 7
        1,                        // ends at 15
        BLOCK_SIZE - 29,          // ends a header's room before the block end
        0,                        // exactly fills that room
        BLOCK_SIZE - HEADER_SIZE, // fills block 1 exactly
        100,                      // at 2 blocks, ends at +107
        BLOCK_SIZE - 117,         // leaves 3 bytes: zero padding
        3 * BLOCK_SIZE + 17,      // starts block 3, four fragments
        5,
    ];
    sizes
        .iter()
        .enumerate()
        .map(|(i, n)| pattern(*n, i))
        .collect()
}

#[test]
fn mask_round_trips() {
    for crc in [0u32, 1, 0xdead_beef, u32::MAX] {
        assert_eq!(unmask(mask(crc)), crc);
        assert_ne!(mask(crc), crc);
    }
}

#[test]
fn round_trip_edge_sizes() {
    let records = edge_records();
    let (bytes, offsets) = encode(&records);
    let b = BLOCK_SIZE as u64;
    assert_eq!(offsets[3], b - 7);
    assert_eq!(offsets[4], b);
    assert_eq!(offsets[5], 2 * b);
    assert_eq!(offsets[7], 3 * b);
    assert_eq!(offsets[8], 6 * b + 45);
    let want: Vec<_> = records
        .iter()
        .zip(&offsets)
        .map(|(r, o)| rec(r, *o))
        .collect();
    assert_eq!(read_all(bytes), want);
}

#[test]
fn empty_log_is_eof() {
    assert!(read_all(Vec::new()).is_empty());
}

#[test]
fn seam_both_writers_through_dyn() {
    fn write_all(w: &mut dyn LogWriter, records: &[Vec<u8>]) {
        for r in records {
            w.add_record(r).unwrap();
        }
        w.sync().unwrap();
    }
    let records = edge_records();

    let mut mem = MemLogWriter::default();
    write_all(&mut mem, &records);
    assert_eq!(mem.records, records);
    assert_eq!(mem.syncs, 1);

    let dir = tempfile::tempdir().unwrap();
    let storage = FsStorage::new();
    let path = dir.path().join("000001.log");
    let mut file = FileLogWriter::new(storage.create(&path, IoClass::Wal).unwrap());
    write_all(&mut file, &records);
    assert!(file.size() > mem.size());
    drop(file);
    let mut reader = LogReader::new(storage.open(&path).unwrap(), path.clone());
    assert_eq!(reader.path(), path);
    for r in &records {
        match reader.read_record().unwrap() {
            ReadOutcome::Record { data, .. } => assert_eq!(&data, r),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(reader.read_record().unwrap(), ReadOutcome::Eof);
    assert!(storage.io_stats().get(IoClass::Wal).read_bytes > 0);
}

#[test]
fn reopened_writer_continues_the_block() {
    let file = VecFile::default();
    let mut w = FileLogWriter::new(Box::new(file.clone()));
    w.add_record(&pattern(BLOCK_SIZE - 20, 1)).unwrap();
    let mut w = FileLogWriter::new(Box::new(file.clone()));
    w.add_record(&pattern(50, 2)).unwrap();
    let out = read_all(file.0.lock().clone());
    assert_eq!(out[1], rec(&pattern(50, 2), BLOCK_SIZE as u64 - 20 + 7));
}

#[test]
fn flipped_payload_byte_is_mid_log_corruption() {
    let records = edge_records();
    let (bytes, offsets) = encode(&records);
    // Damage every record but the last, one at a time, in the middle of its payload.
    for k in 0..records.len() - 1 {
        if records[k].is_empty() {
            continue;
        }
        let mut b = bytes.clone();
        let at = offsets[k] as usize + HEADER_SIZE + records[k].len().min(BLOCK_SIZE / 2) / 2;
        b[at] ^= 0x40;
        let out = read_all(b);
        let mut want: Vec<_> = (0..records.len())
            .filter(|i| *i != k)
            .map(|i| rec(&records[i], offsets[i]))
            .collect();
        match &out[k] {
            ReadOutcome::Corrupt { offset, tail, .. } => {
                assert_eq!((*offset, *tail), (offsets[k], false), "record {k}");
            }
            other => panic!("record {k}: {other:?}"),
        }
        want.insert(k, out[k].clone());
        assert_eq!(out, want, "record {k}");
    }
}

#[test]
fn damaged_middle_fragment_reports_record_start() {
    let records = vec![pattern(10, 0), pattern(3 * BLOCK_SIZE, 1), pattern(10, 2)];
    let (mut bytes, offsets) = encode(&records);
    bytes[BLOCK_SIZE + 100] ^= 1; // inside the second fragment of record 1
    let out = read_all(bytes);
    assert_eq!(out.len(), 3);
    assert_eq!(out[0], rec(&records[0], 0));
    assert!(matches!(
        out[1],
        ReadOutcome::Corrupt { offset, tail: false, .. } if offset == offsets[1]
    ));
    assert_eq!(out[2], rec(&records[2], offsets[2]));
}

#[test]
fn damaged_header_length_loses_at_most_the_block() {
    let records: Vec<_> = (0..50).map(|i| pattern(1000, i)).collect();
    let (mut bytes, offsets) = encode(&records);
    bytes[offsets[3] as usize + 5] ^= 0x10; // high byte of record 3's length
    let out = read_all(bytes);
    assert!(matches!(
        out[3],
        ReadOutcome::Corrupt { offset, tail: false, .. } if offset == offsets[3]
    ));
    let after: Vec<_> = out[4..].to_vec();
    // What follows is an intact suffix of the remaining records, from the next block on.
    let first_next_block = offsets
        .iter()
        .position(|o| *o >= BLOCK_SIZE as u64)
        .unwrap();
    assert!(after.len() >= records.len() - first_next_block);
    let skip = records.len() - 4 - after.len();
    for (j, o) in after.iter().enumerate() {
        let i = 4 + skip + j;
        assert_eq!(*o, rec(&records[i], offsets[i]));
    }
}

#[test]
fn damage_in_last_record_is_tail() {
    let records = vec![pattern(100, 0), pattern(100, 1)];
    let (mut bytes, offsets) = encode(&records);
    bytes[offsets[1] as usize + 50] ^= 1;
    let out = read_all(bytes);
    assert_eq!(out[0], rec(&records[0], 0));
    assert!(matches!(
        out[1],
        ReadOutcome::Corrupt { offset, tail: true, .. } if offset == offsets[1]
    ));
}

#[test]
fn zero_filled_tail_is_torn() {
    let records = vec![pattern(100, 0)];
    let (mut bytes, _) = encode(&records);
    bytes.resize(bytes.len() + 4096, 0);
    let out = read_all(bytes);
    assert_eq!(out[0], rec(&records[0], 0));
    assert!(matches!(
        out[1],
        ReadOutcome::Corrupt {
            offset: 107,
            tail: true,
            ..
        }
    ));
}

/// Cuts the log at `cut` and checks the reader returns every earlier record, then either
/// a clean end or a torn tail at the last record (or the padding before it).
fn check_truncation(bytes: &[u8], records: &[Vec<u8>], offsets: &[u64], cut: usize) {
    let last = records.len() - 1;
    let out = read_all(bytes[..cut].to_vec());
    for i in 0..last {
        assert_eq!(out[i], rec(&records[i], offsets[i]), "cut {cut}");
    }
    let prev_end = offsets[last - 1] + (HEADER_SIZE + records[last - 1].len()) as u64;
    match out.get(last) {
        None => assert!(
            cut as u64 <= offsets[last],
            "cut {cut}: record lost silently"
        ),
        Some(ReadOutcome::Corrupt { offset, tail, .. }) => {
            assert!(*tail, "cut {cut}");
            assert!((prev_end..=offsets[last]).contains(offset), "cut {cut}");
        }
        Some(other) => panic!("cut {cut}: {other:?}"),
    }
    assert!(out.len() <= last + 1);
}

#[test]
fn truncation_at_every_byte_of_last_record() {
    // The last record straddles a block boundary.
    let records = vec![pattern(BLOCK_SIZE - 150, 0), pattern(300, 1)];
    let (bytes, offsets) = encode(&records);
    let prev_end = offsets[0] as usize + HEADER_SIZE + records[0].len();
    for cut in prev_end..bytes.len() {
        check_truncation(&bytes, &records, &offsets, cut);
    }
    assert_eq!(read_all(bytes).len(), 2);
}

#[test]
fn truncation_of_multi_block_last_record() {
    let records = vec![pattern(10, 0), pattern(3 * BLOCK_SIZE + 500, 1)];
    let (bytes, offsets) = encode(&records);
    let near_boundary = |c: usize| {
        let m = c % BLOCK_SIZE;
        !(20..BLOCK_SIZE - 20).contains(&m)
    };
    for cut in (17..bytes.len()).filter(|c| near_boundary(*c) || c % 991 == 0) {
        check_truncation(&bytes, &records, &offsets, cut);
    }
}

#[test]
fn random_damage_never_panics_or_lies() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let records: Vec<_> = (0..40)
        .map(|i| pattern(rng.gen_range(0..20_000), i))
        .collect();
    let (bytes, offsets) = encode(&records);
    for _ in 0..300 {
        let mut b = bytes.clone();
        for _ in 0..rng.gen_range(1..4) {
            let at = rng.gen_range(0..b.len());
            b[at] = rng.gen();
        }
        if rng.gen_bool(0.3) {
            b.truncate(rng.gen_range(0..b.len()));
        }
        let mut last_offset = None;
        for o in read_all(b) {
            if let ReadOutcome::Record { data, offset } = o {
                let i = offsets.iter().position(|x| *x == offset).unwrap();
                assert_eq!(data, records[i]);
                assert!(last_offset < Some(offset));
                last_offset = Some(offset);
            }
        }
    }
}

#[test]
fn write_failure_is_sticky() {
    let dir = tempfile::tempdir().unwrap();
    let fault = crate::storage::FaultStorage::new(Arc::new(FsStorage::new()));
    let path = dir.path().join("000002.log");
    let mut w = FileLogWriter::new(fault.create(&path, IoClass::Wal).unwrap());
    w.add_record(b"one").unwrap();
    fault.set_fail_writes(true);
    assert!(w.add_record(b"two").is_err());
    fault.set_fail_writes(false);
    assert!(w.add_record(b"three").is_err());
}

#[test]
fn worked_example_of_the_format_page() {
    let records = vec![pattern(1000, 0), pattern(97_270, 1), pattern(8000, 2)];
    let (bytes, offsets) = encode(&records);
    assert_eq!(offsets, [0, 1007, 98_304]);
    assert_eq!(bytes.len(), 106_311);
    assert_eq!(&bytes[1007 + 4..1007 + 7], &[0x0a, 0x7c, 2]); // 31754, FIRST
    assert_eq!(&bytes[98_298..98_304], &[0; 6]);
    assert_eq!(read_all(bytes).len(), 3);
}
