use super::*;
use crate::key::{InternalKey, ValueType};

pub(crate) fn file(number: u64, lo: &str, hi: &str, size: u64) -> FileMeta {
    FileMeta {
        number,
        volume: 0,
        size,
        smallest: InternalKey::new(lo.as_bytes(), 10, ValueType::Value),
        largest: InternalKey::new(hi.as_bytes(), 5, ValueType::Value),
        smallest_seq: 5,
        largest_seq: 10,
        num_entries: 100,
        num_deletions: 1,
        num_range_deletions: 0,
        file_checksum: 0xdead_beef,
        replicas: Vec::new(),
    }
}

fn task() -> CompactionTask {
    CompactionTask {
        id: 7,
        inputs: vec![
            CompactionInputLevel {
                level: 1,
                files: vec![file(11, "b", "f", 100), file(12, "g", "m", 100)],
            },
            CompactionInputLevel {
                level: 2,
                files: vec![
                    file(21, "a", "d", 100),
                    file(22, "e", "h", 100),
                    file(23, "i", "p", 100),
                ],
            },
        ],
        output_level: 2,
        smallest_user_key: None,
        largest_user_key: None,
        snapshots: vec![3, 9],
        bottommost: true,
        output: OutputSpec {
            target_file_size: 64 << 20,
            block_size: 4096,
            restart_interval: 16,
            bloom_bits_per_key: 10,
            compression: Compression::Zstd(3),
            volume: 1,
            file_numbers: vec![30, 31, 32, 33, 34],
            placement: None,
        },
        filter: Some(FilterSpec {
            name: "drop-prefix".into(),
            params: "7573".into(),
        }),
        reason: CompactionReason::LevelSize,
        level0: None,
    }
}

fn unit(number: u64, lo: &str, hi: &str) -> Level0Unit {
    Level0Unit {
        number,
        smallest_user_key: lo.as_bytes().to_vec(),
        largest_user_key: hi.as_bytes().to_vec(),
        bytes: 1000,
    }
}

#[test]
fn column_tasks_round_trip_and_split_keeps_pieces_only_level0_units_cover() {
    let mut t = task();
    t.inputs.truncate(0);
    t.reason = CompactionReason::Level0Column;
    t.level0 = Some(Level0Input {
        units: vec![unit(40, "a", "k"), unit(41, "c", "p")],
        payload: serde_json::json!({"opaque": [1, 2, 3]}),
    });
    let back = CompactionTask::decode(&t.encode().unwrap()).unwrap();
    assert_eq!(back, t);
    // With no input file at all, the pieces the units cover still run; a piece no unit
    // covers (from "q" on) is left out.
    let subs = t.split(&[b"m".to_vec(), b"q".to_vec()]);
    assert_eq!(subs.len(), 2);
    assert!(subs.iter().all(|s| s.level0 == t.level0));
    assert_eq!(subs[1].largest_user_key.as_deref(), Some(&b"q"[..]));
    // A task without a level-0 input decodes from JSON that lacks the field.
    let plain = task();
    let json = String::from_utf8(plain.encode().unwrap()).unwrap();
    assert!(!json.contains("level0"));
}

#[test]
fn task_and_result_round_trip() {
    let t = task();
    let bytes = t.encode().unwrap();
    assert!(bytes.starts_with(b"{\"format_version\":2,"));
    assert_eq!(CompactionTask::decode(&bytes).unwrap(), t);
    // Plain serde works too, for callers that embed the task in their own messages.
    let json = serde_json::to_string(&t).unwrap();
    assert_eq!(serde_json::from_str::<CompactionTask>(&json).unwrap(), t);

    let r = CompactionResult {
        task_id: 7,
        outputs: vec![file(30, "a", "p", 500)],
        stats: CompactionStats {
            input_entries: 500,
            input_bytes: 5000,
            level0_bytes: 3000,
            output_entries: 400,
            output_bytes: 4000,
            dropped_entries: 90,
            filtered_entries: 10,
            elapsed_micros: 1234,
        },
        runs: vec![crate::compaction::RunRecord {
            unit: "host".into(),
            mode: crate::compaction::RunMode::Pipelined,
            input_bytes: 5000,
            output_bytes: 4000,
            elapsed_micros: 1234,
            cpu_micros: 2000,
            fallback_for: Some("remote unix:/w".into()),
            kept_outputs: 2,
        }],
    };
    assert_eq!(CompactionResult::decode(&r.encode().unwrap()).unwrap(), r);
    // A result without runs (an older runner's) reads with none.
    let older = CompactionResult { runs: vec![], ..r };
    let json = String::from_utf8(older.encode().unwrap()).unwrap();
    assert!(!json.contains("runs"));
    assert_eq!(CompactionResult::decode(json.as_bytes()).unwrap(), older);
}

#[test]
fn truncated_or_damaged_bytes_are_corruption_never_panic() {
    let bytes = task().encode().unwrap();
    for cut in 0..bytes.len() {
        let err = CompactionTask::decode(&bytes[..cut]).unwrap_err();
        assert!(err.is_corruption(), "cut {cut}: {err}");
    }
    // JSON has no checksum: a flipped digit can decode as another number, a renamed
    // optional field as `None`. The transport that carries tasks must checksum frames.
    let mut structural = 0;
    for i in 0..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= 0x5a;
        if let Err(e) = CompactionTask::decode(&b) {
            assert!(
                e.is_corruption() || matches!(e, Error::Unsupported(_)),
                "{e}"
            );
            structural += 1;
        }
    }
    assert!(structural > bytes.len() / 2);
    let err = CompactionTask::decode(b"{\"format_version\":2,\n \"id\": x}").unwrap_err();
    match err {
        Error::Corruption { offset, .. } => assert_eq!(offset, 28),
        other => panic!("{other}"),
    }
}

#[test]
fn other_format_versions_are_unsupported() {
    let bytes = task().encode().unwrap();
    let text = String::from_utf8(bytes)
        .unwrap()
        .replace("\"format_version\":2", "\"format_version\":1");
    let err = CompactionTask::decode(text.as_bytes()).unwrap_err();
    assert!(matches!(err, Error::Unsupported(_)), "{err}");
}

#[test]
fn split_cuts_ranges_files_and_numbers() {
    let t = task();
    let subs = t.split(&[b"h".to_vec(), b"e".to_vec(), b"e".to_vec()]);
    assert_eq!(subs.len(), 3);
    let ranges: Vec<_> = subs
        .iter()
        .map(|s| (s.smallest_user_key.clone(), s.largest_user_key.clone()))
        .collect();
    assert_eq!(
        ranges,
        vec![
            (None, Some(b"e".to_vec())),
            (Some(b"e".to_vec()), Some(b"h".to_vec())),
            (Some(b"h".to_vec()), None)
        ]
    );
    let numbers: Vec<_> = subs.iter().map(|s| s.output.file_numbers.clone()).collect();
    assert_eq!(numbers, vec![vec![30, 31], vec![32, 33], vec![34]]);
    let files = |s: &CompactionTask| s.input_files().map(|f| f.number).collect::<Vec<_>>();
    assert_eq!(files(&subs[0]), vec![11, 21]);
    assert_eq!(files(&subs[1]), vec![11, 12, 22]);
    assert_eq!(files(&subs[2]), vec![12, 22, 23]);
    assert!(subs.iter().all(|s| s.id == 7 && s.snapshots == t.snapshots));

    // Subtasks split again only inside their own range.
    let again = subs[1].split(&[b"a".to_vec(), b"f".to_vec(), b"h".to_vec()]);
    assert_eq!(again.len(), 2);
    assert_eq!(again[0].smallest_user_key.as_deref(), Some(&b"e"[..]));
    assert_eq!(again[1].largest_user_key.as_deref(), Some(&b"h"[..]));

    // No useful boundary: the task comes back whole.
    assert_eq!(t.split(&[]), vec![t.clone()]);
    assert_eq!(t.split(&[b"z".to_vec()]), vec![t.clone()]);
}

#[test]
fn split_shares_the_reserved_numbers() {
    let t = task();
    let many = vec![b"b".to_vec(), b"e".to_vec(), b"g".to_vec(), b"i".to_vec()];
    let subs = t.split(&many);
    assert_eq!(subs.len(), 5);
    assert_eq!(
        subs.iter()
            .map(|s| s.output.file_numbers.len())
            .sum::<usize>(),
        5
    );
}

#[test]
fn a_task_with_fewer_numbers_than_pieces_is_not_split() {
    let mut t = task();
    t.output.file_numbers = vec![30, 31];
    let cuts = vec![b"c".to_vec(), b"g".to_vec(), b"i".to_vec()];
    assert_eq!(t.split(&cuts), vec![t.clone()]);
    t.output.file_numbers = vec![30, 31, 32, 33];
    assert_eq!(t.split(&cuts).len(), 4);
}
