//! The seed corpora of the fuzz targets, made with the engine's own writers so that they
//! are real files of each format and can be made again byte for byte:
//! `cargo test -p terrace --lib fuzzing::tests::write_seed_corpus -- --ignored` writes
//! them under `fuzz/corpus/<target>/` (fuzz/README.md).

use std::path::PathBuf;

use super::MemWritable;
use crate::batch::WriteBatch;
use crate::compaction::{
    CompactionInputLevel, CompactionReason, CompactionTask, FilterSpec, Level0Input, Level0Unit,
    OutputSpec,
};
use crate::key::{internal_key, InternalKey, ValueType};
use crate::level0::matrix::encode_dir;
use crate::level0::matrix::{Below, BuiltRow, RowBuilder, RowEdit, RowMeta, MIN_CHUNK_BYTES};
use crate::options::Compression;
use crate::pmem::header::Header as RegionHeader;
use crate::range_del::RangeTombstone;
use crate::sst::block_builder::BlockBuilder;
use crate::sst::{SstBuilder, SstOptions};
use crate::version::{FileMeta, VersionEdit, SAFE_TO_IGNORE};
use crate::wal::{FileLogWriter, LogWriter};

/// Seeds of one target: each file's name and bytes.
type Named = Vec<(&'static str, Vec<u8>)>;

/// One seed: the fuzz target whose corpus it belongs to, its file name, its bytes.
pub(super) struct Seed {
    pub target: &'static str,
    pub name: &'static str,
    pub bytes: Vec<u8>,
}

fn seed(target: &'static str, name: &'static str, bytes: Vec<u8>) -> Seed {
    Seed {
        target,
        name,
        bytes,
    }
}

/// `n` point entries: user keys `key00000`.. with sequence numbers from 1, every seventh
/// a deletion, values of a few words (compressible).
fn entries(n: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..n)
        .map(|i| {
            let kind = if i % 7 == 3 {
                ValueType::Deletion
            } else {
                ValueType::Value
            };
            let value = match kind {
                ValueType::Deletion => Vec::new(),
                _ => format!(
                    "value {i} of the seed table, {}",
                    "abc".repeat((i % 5) as usize)
                )
                .into_bytes(),
            };
            (
                internal_key(format!("key{i:05}").as_bytes(), 1000 - i, kind),
                value,
            )
        })
        .collect()
}

fn tombstone(start: &str, end: &str, seq: u64) -> RangeTombstone {
    RangeTombstone {
        start: start.as_bytes().to_vec(),
        end: end.as_bytes().to_vec(),
        seq,
    }
}

/// A table file written by `SstBuilder`.
pub(super) fn table(
    points: &[(Vec<u8>, Vec<u8>)],
    tombstones: &[RangeTombstone],
    opts: SstOptions,
) -> Vec<u8> {
    let buf = MemWritable::default();
    let mut b = SstBuilder::new(Box::new(buf.clone()), PathBuf::from("seed.sst"), opts);
    for (k, v) in points {
        b.add(k, v).unwrap();
    }
    for t in tombstones {
        b.add_range_tombstone(t);
    }
    b.finish().unwrap();
    buf.bytes()
}

fn tables() -> Named {
    let small_blocks = |compression, bloom_bits_per_key| SstOptions {
        block_size: 512,
        restart_interval: 4,
        bloom_bits_per_key,
        compression,
    };
    vec![
        (
            "table-none-bloom-tombstones",
            table(
                &entries(80),
                &[
                    tombstone("key00010", "key00020", 2000),
                    tombstone("zz", "zzz", 5),
                ],
                small_blocks(Compression::None, 10),
            ),
        ),
        (
            "table-lz4",
            table(&entries(150), &[], small_blocks(Compression::Lz4, 10)),
        ),
        (
            "table-zstd-tombstone",
            table(
                &entries(150),
                &[tombstone("key00100", "key00200", 3000)],
                small_blocks(Compression::Zstd(3), 10),
            ),
        ),
        (
            "table-no-filter-restart-1",
            table(
                &entries(30),
                &[],
                SstOptions {
                    block_size: 256,
                    restart_interval: 1,
                    bloom_bits_per_key: 0,
                    compression: Compression::None,
                },
            ),
        ),
        (
            "table-tombstones-only",
            table(
                &[],
                &[
                    tombstone("a", "c", 9),
                    tombstone("b", "d", 7),
                    tombstone("x", "y", 1),
                ],
                SstOptions::default(),
            ),
        ),
    ]
}

fn batch(seq: u64, ops: usize) -> WriteBatch {
    let mut b = WriteBatch::new();
    b.set_sequence(seq);
    for i in 0..ops {
        match i % 4 {
            0 | 1 => b.put(
                format!("user:{i}").as_bytes(),
                format!("name {i}").as_bytes(),
            ),
            2 => b.delete(format!("user:{}", i - 1).as_bytes()),
            _ => b.delete_range(format!("session:{i}").as_bytes(), b"session:~"),
        }
    }
    b
}

fn batches() -> Named {
    let mut big = WriteBatch::new();
    big.set_sequence(77);
    big.put(b"blob", &[0x5a; 600]);
    big.put(b"", b"empty key");
    big.put(b"empty value", b"");
    vec![
        ("batch-one-put", batch(1, 1).data().to_vec()),
        ("batch-mixed", batch(100, 12).data().to_vec()),
        ("batch-large-value", big.data().to_vec()),
    ]
}

/// A log written by `FileLogWriter` holding `records`.
fn log(records: &[Vec<u8>]) -> Vec<u8> {
    let buf = MemWritable::default();
    let mut w = FileLogWriter::new(Box::new(buf.clone()));
    for r in records {
        w.add_record(r).unwrap();
    }
    w.flush().unwrap();
    buf.bytes()
}

fn logs() -> Named {
    let small: Vec<Vec<u8>> = (0..6)
        .map(|i| batch(10 * i + 1, (i + 1) as usize).data().to_vec())
        .chain([Vec::new()])
        .collect();
    let mut large = WriteBatch::new();
    large.set_sequence(500);
    large.put(b"large", &vec![0x61; 40 << 10]);
    let fragmented = vec![
        batch(1, 3).data().to_vec(),
        large.data().to_vec(),
        batch(502, 2).data().to_vec(),
    ];
    // The first record leaves 3 bytes of its block: zero-filled, the next starts a block.
    // (A batch of one put of a 1-byte key: 12 bytes of header, tag, 1-byte key length,
    // key, 3-byte value length.)
    let mut filler = WriteBatch::new();
    filler.set_sequence(1);
    let value_len = crate::wal::BLOCK_SIZE - 3 - crate::wal::HEADER_SIZE - 18;
    filler.put(b"f", &vec![0x62; value_len]);
    let padded = vec![filler.data().to_vec(), batch(2, 2).data().to_vec()];
    vec![
        ("log-several-records", log(&small)),
        ("log-fragmented-record", log(&fragmented)),
        ("log-block-trailer", log(&padded)),
    ]
}

fn file_meta(number: u64, lo: &str, hi: &str) -> FileMeta {
    FileMeta {
        number,
        volume: 0,
        size: 4096 + number,
        smallest: InternalKey::new(lo.as_bytes(), 10, ValueType::Value),
        largest: InternalKey::new(hi.as_bytes(), 5, ValueType::Deletion),
        smallest_seq: 5,
        largest_seq: 10,
        num_entries: 100,
        num_deletions: 1,
        num_range_deletions: 0,
        file_checksum: 0x1234_5678,
        replicas: Vec::new(),
    }
}

fn row_meta(number: u64, lo: &str, hi: &str) -> RowMeta {
    RowMeta {
        number,
        group: 1,
        dir_offset: 65536 * number,
        dir_len: 180,
        dir_checksum: 0xdead_beef,
        size: 3 * 65536,
        smallest: InternalKey::new(lo.as_bytes(), 20, ValueType::Value),
        largest: InternalKey::new(hi.as_bytes(), 30, ValueType::Value),
        smallest_seq: 20,
        largest_seq: 30,
        num_entries: 11,
        num_deletions: 2,
        num_range_deletions: 1,
        trim: Some(b"b".to_vec()),
        below: number - 1,
        ..RowMeta::default()
    }
}

fn edits() -> Named {
    let snapshot = VersionEdit {
        log_number: Some(12),
        next_file_number: Some(40),
        last_sequence: Some(90_000),
        new_files: vec![
            (0, file_meta(31, "apple", "pear")),
            (1, file_meta(20, "a", "m")),
            (1, file_meta(21, "n", "z")),
        ],
        compact_pointers: vec![(1, InternalKey::new(b"m", 7, ValueType::Value))],
        ..VersionEdit::default()
    };
    let compaction = VersionEdit {
        next_file_number: Some(45),
        last_sequence: Some(90_100),
        deleted_files: vec![(0, 31), (1, 20)],
        new_files: vec![(1, file_meta(44, "a", "pear"))],
        ..VersionEdit::default()
    };
    let rows = VersionEdit {
        log_number: Some(50),
        level0: RowEdit {
            new: vec![row_meta(48, "a", "k"), row_meta(49, "c", "z")],
            deleted: vec![46],
            trimmed: vec![(47, b"g".to_vec())],
            released: vec![(47, 2, 65536)],
        }
        .into_records(),
        unknown_fields: vec![(SAFE_TO_IGNORE | 5, b"a hint".to_vec())],
        ..VersionEdit::default()
    };
    vec![
        ("edit-snapshot", snapshot.encode()),
        ("edit-compaction", compaction.encode()),
        ("edit-rows", rows.encode()),
    ]
}

fn tasks() -> Named {
    let leveled = CompactionTask {
        id: 7,
        inputs: vec![
            CompactionInputLevel {
                level: 1,
                files: vec![file_meta(11, "b", "f"), file_meta(12, "g", "m")],
            },
            CompactionInputLevel {
                level: 2,
                files: vec![file_meta(21, "a", "d"), file_meta(22, "e", "p")],
            },
        ],
        output_level: 2,
        smallest_user_key: Some(b"b".to_vec()),
        largest_user_key: Some(b"m".to_vec()),
        snapshots: vec![3, 9],
        bottommost: true,
        output: OutputSpec {
            target_file_size: 64 << 20,
            block_size: 4096,
            restart_interval: 16,
            bloom_bits_per_key: 10,
            compression: Compression::Zstd(3),
            volume: 1,
            file_numbers: vec![30, 31, 32],
            placement: None,
        },
        filter: Some(FilterSpec {
            name: "terrace-expiry".into(),
            params: String::new(),
        }),
        reason: CompactionReason::LevelSize,
        level0: None,
    };
    let column = CompactionTask {
        id: 8,
        inputs: vec![CompactionInputLevel {
            level: 1,
            files: vec![file_meta(13, "a", "k")],
        }],
        output_level: 1,
        snapshots: Vec::new(),
        bottommost: false,
        filter: None,
        reason: CompactionReason::Level0Column,
        level0: Some(Level0Input {
            units: [(40, "a", "k"), (41, "c", "z")]
                .iter()
                .map(|&(number, lo, hi)| Level0Unit {
                    number,
                    smallest_user_key: lo.as_bytes().to_vec(),
                    largest_user_key: hi.as_bytes().to_vec(),
                    bytes: 3 * 65536,
                })
                .collect(),
            payload: serde_json::to_value([row_meta(40, "a", "k"), row_meta(41, "c", "z")])
                .unwrap_or_default(),
        }),
        ..leveled.clone()
    };
    vec![
        ("task-leveled", leveled.encode().unwrap()),
        ("task-column", column.encode().unwrap()),
    ]
}

fn blocks() -> Named {
    let block = |restart_interval: usize, n: u64| {
        let mut b = BlockBuilder::new(restart_interval);
        for (k, v) in entries(n) {
            b.add(&k, &v);
        }
        b.finish().to_vec()
    };
    vec![
        ("block-restart-16", block(16, 40)),
        ("block-restart-2", block(2, 12)),
        ("block-restart-1", block(1, 5)),
    ]
}

/// The creation id the seed rows and regions name.
const SEED_CREATION_ID: u64 = 0x0123_4567_89ab_cdef;

/// A row image as `check_matrix_row` reads it: the row's directory at offset 0, then its
/// metadata and data chunks, each at the offset the directory gives.
pub(super) fn row_image(row: &BuiltRow, number: u64) -> Vec<u8> {
    let chunks = row.meta_chunks.len() + row.data_chunks.len();
    let dir_len = 40 + row.header.len() + 16 * chunks + 4;
    let mut at = dir_len as u64;
    let mut spans = |cs: &[Vec<u8>]| {
        cs.iter()
            .map(|c| {
                let span = (at, c.len() as u64);
                at += c.len() as u64;
                span
            })
            .collect::<Vec<_>>()
    };
    let (meta, data) = (spans(&row.meta_chunks), spans(&row.data_chunks));
    let mut image = encode_dir(number, SEED_CREATION_ID, &row.header, &meta, &data);
    assert_eq!(image.len(), dir_len);
    for c in row.meta_chunks.iter().chain(&row.data_chunks) {
        image.extend_from_slice(c);
    }
    image
}

pub(super) fn rows() -> Named {
    // The worked example of docs/formats/matrix-row.md: row 7 linked to row 6.
    let mut b6 = RowBuilder::new(6, None, 4096).unwrap();
    b6.add(&internal_key(b"a", 1, ValueType::Value), b"old")
        .unwrap();
    let row6 = b6.finish().unwrap();
    let reader6 = row6.clone().open().unwrap();
    let mut b7 = RowBuilder::new(7, Some(Below::new(&reader6, 0)), 4096).unwrap();
    b7.add(&internal_key(b"a", 3, ValueType::Value), b"new")
        .unwrap();
    b7.add(&internal_key(b"c", 2, ValueType::Deletion), b"")
        .unwrap();
    b7.add_range_tombstone(&tombstone("d", "f", 4)).unwrap();
    let row7 = b7.finish().unwrap();
    // Many small chunks: every metadata and data chunk is cut at the smallest size.
    let mut many = RowBuilder::new(9, None, MIN_CHUNK_BYTES).unwrap();
    for (k, v) in entries(24) {
        many.add(&k, &v).unwrap();
    }
    many.add_range_tombstone(&tombstone("key00005", "key00009", 2000))
        .unwrap();
    let many = many.finish().unwrap();
    vec![
        ("row-unlinked", row_image(&row6, 6)),
        ("row-linked-tombstone", row_image(&row7, 7)),
        ("row-many-chunks", row_image(&many, 9)),
    ]
}

fn regions() -> Named {
    let header = |page_size: u32, capacity: u64| {
        RegionHeader {
            page_size,
            capacity,
            creation_id: SEED_CREATION_ID,
        }
        .encode()
    };
    let mut page = header(4096, 16 * 4096);
    page.resize(4096, 0);
    vec![
        ("region-4k-page", page),
        ("region-64k-fields", header(65536, 1024 * 65536)),
    ]
}

/// Every seed of every target of the engine (the server's targets have their own).
pub(super) fn all() -> Vec<Seed> {
    let mut out = Vec::new();
    for (name, bytes) in tables() {
        out.push(seed("sst_table", name, bytes.clone()));
        out.push(seed("sst_table_fixed", name, bytes));
    }
    for (name, bytes) in logs() {
        out.push(seed("wal_reader", name, bytes.clone()));
        out.push(seed("wal_fixed", name, bytes));
    }
    let targets: [(&'static str, Named); 6] = [
        ("sst_block", blocks()),
        ("write_batch", batches()),
        ("version_edit", edits()),
        ("compaction_task", tasks()),
        ("matrix_row", rows()),
        ("pmem_header", regions()),
    ];
    for (target, seeds) in targets {
        for (name, bytes) in seeds {
            out.push(seed(target, name, bytes));
        }
    }
    out
}
