use std::sync::Arc;

use super::*;
use crate::compaction::task::OutputSpec;
use crate::compaction::{CompactionInputLevel, CompactionReason};
use crate::key::{self, ValueType};
use crate::sst::{SstBuilder, SstOptions};
use crate::storage::{FsStorage, IoClass, Storage};

fn task(
    lo: Option<&str>,
    hi: Option<&str>,
    files: Vec<crate::version::FileMeta>,
) -> CompactionTask {
    CompactionTask {
        id: 1,
        inputs: vec![CompactionInputLevel { level: 1, files }],
        output_level: 2,
        smallest_user_key: lo.map(|s| s.as_bytes().to_vec()),
        largest_user_key: hi.map(|s| s.as_bytes().to_vec()),
        snapshots: vec![],
        bottommost: false,
        output: OutputSpec {
            target_file_size: 1 << 20,
            block_size: 4096,
            restart_interval: 16,
            bloom_bits_per_key: 0,
            compression: crate::sst::Compression::None,
            volume: 0,
            file_numbers: (10..20).collect(),
            placement: None,
        },
        filter: None,
        reason: CompactionReason::LevelSize,
        level0: None,
    }
}

/// Ten samples `a`..`j` of 100 bytes each.
fn samples() -> Vec<(Vec<u8>, u64)> {
    (b'a'..=b'j').rev().map(|c| (vec![c], 100)).collect()
}

fn cut(c: u8) -> Vec<u8> {
    vec![c, 0]
}

#[test]
fn pieces_share_the_bytes_and_ratios_take_their_share() {
    let t = task(None, None, vec![]);
    assert_eq!(
        boundaries(&t, &samples(), SplitPolicy::Pieces(2)),
        vec![cut(b'e')]
    );
    assert_eq!(
        boundaries(&t, &samples(), SplitPolicy::Pieces(5)),
        vec![cut(b'b'), cut(b'd'), cut(b'f'), cut(b'h')]
    );
    assert_eq!(
        boundaries(&t, &samples(), SplitPolicy::Ratio(0.3)),
        vec![cut(b'c')]
    );
    assert_eq!(
        boundaries(&t, &samples(), SplitPolicy::Ratio(0.75)),
        vec![cut(b'h')]
    );
    // One piece, a ratio outside (0, 1), no samples: no cut.
    for policy in [
        SplitPolicy::Pieces(1),
        SplitPolicy::Ratio(0.0),
        SplitPolicy::Ratio(1.0),
    ] {
        assert!(boundaries(&t, &samples(), policy).is_empty(), "{policy:?}");
    }
    assert!(boundaries(&t, &[], SplitPolicy::Pieces(4)).is_empty());
}

#[test]
fn cuts_stay_inside_the_range_and_coarse_samples_give_fewer_pieces() {
    // A subtask [c, g): cuts outside it are dropped.
    let t = task(Some("c"), Some("g"), vec![]);
    assert_eq!(
        boundaries(&t, &samples(), SplitPolicy::Pieces(5)),
        vec![cut(b'd'), cut(b'f')]
    );
    // One huge sample holds most bytes: it serves every target it passes with one cut.
    let lumpy = vec![
        (b"a".to_vec(), 10),
        (b"b".to_vec(), 1000),
        (b"c".to_vec(), 10),
    ];
    let t = task(None, None, vec![]);
    assert_eq!(
        boundaries(&t, &lumpy, SplitPolicy::Pieces(4)),
        vec![cut(b'b')]
    );
}

#[test]
fn samples_come_from_every_data_block_of_the_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(FsStorage::new());
    let tables = Tables::new(storage.clone(), dir.path(), vec![], 16, None);
    let mut files = Vec::new();
    for (number, range) in [(1u64, 0..2000u32), (2, 2000..3000)] {
        let path = tables.path(0, number);
        let file = storage.create(&path, IoClass::Compaction).unwrap();
        let mut b = SstBuilder::new(file, path, SstOptions::default());
        for i in range {
            let k = key::internal_key(format!("k{i:05}").as_bytes(), 1, ValueType::Value);
            b.add(&k, &[7u8; 100]).unwrap();
        }
        files.push(crate::compaction::file_meta(
            number,
            0,
            &b.finish().unwrap(),
        ));
    }
    let t = task(None, None, files.clone());
    let samples = input_samples(&t, &tables).unwrap();
    let blocks: u64 = files
        .iter()
        .map(|f| tables.open(f).unwrap().properties().num_data_blocks)
        .sum();
    assert_eq!(samples.len() as u64, blocks);
    let bytes: u64 = samples.iter().map(|(_, b)| b).sum();
    let data: u64 = files.iter().map(|f| f.size).sum();
    assert!(bytes > data * 8 / 10 && bytes < data, "{bytes} of {data}");
    // Two similar pieces of 3,000 keys cut near k01500.
    let cuts = boundaries(&t, &samples, SplitPolicy::Pieces(2));
    assert_eq!(cuts.len(), 1);
    let at = String::from_utf8_lossy(&cuts[0]).to_string();
    assert!(at.as_str() > "k01400" && at.as_str() < "k01600", "{at}");
    let subtasks = t.split(&cuts);
    assert_eq!(subtasks.len(), 2);
}
