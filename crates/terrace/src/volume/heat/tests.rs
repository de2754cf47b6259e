use super::*;
use crate::version::{FileMeta, VersionEdit};

fn version(files: &[(u64, u32, u64)]) -> Version {
    let edit = VersionEdit {
        new_files: files
            .iter()
            .enumerate()
            .map(|(i, &(number, volume, size))| {
                let k = format!("k{i:03}");
                let meta = FileMeta::for_test(number, volume, k.as_bytes(), k.as_bytes(), size);
                (1, meta)
            })
            .collect(),
        ..VersionEdit::default()
    };
    Version::new(3).apply(&edit).unwrap()
}

#[test]
fn billed_operations_round_up_to_the_cloud_unit() {
    assert_eq!(billed_ios(1), 1);
    assert_eq!(billed_ios(0), 1);
    assert_eq!(billed_ios(IO_UNIT_BYTES), 1);
    assert_eq!(billed_ios(IO_UNIT_BYTES + 1), 2);
}

#[test]
fn heat_cools_by_alpha_and_adds_each_interval_s_foreground_reads() {
    let heat = Heat::new(0.5);
    let v = version(&[(7, 1, 4096), (8, 2, 3 * IO_UNIT_BYTES)]);
    let f7 = heat.file(7, 1, 4096);
    // Interval 1: the writing (1 operation) and 8 foreground reads of a block.
    for _ in 0..8 {
        f7.record_read(4096, IoClass::Foreground);
    }
    f7.record_read(4096, IoClass::Compaction);
    heat.tick(&v, Duration::from_secs(1));
    assert_eq!(f7.heat(), 9.0);
    assert_eq!(f7.read_heat(), 8.0, "reads only, its writing left out");
    // Interval 2: 2 reads; H = 0.5 * 9 + 2.
    f7.record_read(4096, IoClass::Foreground);
    f7.record_read(4096, IoClass::Foreground);
    heat.tick(&v, Duration::from_secs(1));
    assert_eq!(f7.heat(), 6.5);
    // Interval 3: none.
    heat.tick(&v, Duration::from_secs(2));
    assert_eq!(f7.heat(), 3.25);
    // File 8 was registered by the first tick with its writing: 3 operations, cooled twice.
    let files = heat.files();
    assert_eq!(files[0].number, 7);
    assert_eq!(files[1].number, 8);
    assert_eq!(files[1].heat, 0.75);
    let load = heat.volume_load(1);
    assert_eq!(load.weight, 3.25);
    assert_eq!(load.iops, 0.0);
    assert_eq!(heat.volume_load(2).weight, 0.75);
    assert_eq!(heat.volume_load(9), VolumeLoad::default());
}

#[test]
fn live_iops_count_every_read_and_dead_files_are_forgotten() {
    let heat = Heat::new(0.5);
    let f = heat.file(3, 2, 100);
    for _ in 0..10 {
        f.record_read(100, IoClass::Compaction);
    }
    f.record_read(2 * IO_UNIT_BYTES, IoClass::Foreground);
    heat.tick(&version(&[(3, 2, 100)]), Duration::from_millis(500));
    // 1 (writing) + 10 + 2 operations in half a second.
    assert_eq!(heat.volume_load(2).iops, 26.0);
    assert_eq!(heat.files()[0].last_ios, 13);
    heat.tick(&version(&[]), Duration::from_secs(1));
    assert!(heat.files().is_empty());
    assert_eq!(heat.volume_load(2), VolumeLoad::default());
}

#[test]
fn a_counting_file_counts_the_reads_that_reach_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    std::fs::write(&path, [7u8; 64]).unwrap();
    let storage = crate::storage::FsStorage::new();
    let inner = crate::storage::Storage::open(&storage, &path).unwrap();
    let heat = Heat::new(0.5);
    let counters = heat.file(1, 0, 0);
    let file = CountingFile::new(inner, counters.clone());
    let mut buf = [0u8; 16];
    // Before it is armed (the table's opening), a read is background.
    file.read_exact_at(0, &mut buf, IoClass::Foreground)
        .unwrap();
    file.arm();
    file.read_exact_at(8, &mut buf, IoClass::Foreground)
        .unwrap();
    assert_eq!(buf, [7u8; 16]);
    assert_eq!(file.len(), 64);
    heat.tick(&version(&[(1, 0, 0)]), Duration::from_secs(1));
    // The writing and one read.
    assert_eq!(counters.heat(), 2.0);
    assert_eq!(counters.read_heat(), 1.0);
}

#[test]
fn new_files_weigh_on_their_volume_until_the_tick_takes_their_writing_into_heat() {
    let heat = Heat::new(0.5);
    let v = version(&[(1, 3, 4 * IO_UNIT_BYTES)]);
    heat.tick(&v, Duration::from_secs(1));
    assert_eq!(heat.volume_load(3).weight, 4.0);
    let v2 = version(&[(1, 3, 4 * IO_UNIT_BYTES), (2, 3, 2 * IO_UNIT_BYTES)]);
    let added = v2.files(1).iter().find(|f| f.number == 2).unwrap().clone();
    heat.add_files([added.as_ref()]);
    // Pending: the new file's writing (2) on top of the tick's 4.
    assert_eq!(heat.volume_load(3).weight, 6.0);
    heat.tick(&v2, Duration::from_secs(1));
    // File 1 cooled to 2, file 2 took its writing: 2 + 2, nothing pending twice.
    assert_eq!(heat.volume_load(3).weight, 4.0);
    assert_eq!(heat.heat_of([1, 2, 99]), 4.0);
}

#[test]
fn read_rates_and_the_compaction_rate_come_out_per_second() {
    let heat = Heat::new(0.5);
    assert!(heat.read_rates().is_empty(), "no interval closed yet");
    let v = version(&[(4, 1, 100), (5, 2, 100)]);
    let (f4, f5) = (heat.file(4, 1, 100), heat.file(5, 2, 100));
    for _ in 0..20 {
        f4.record_read(100, IoClass::Foreground);
    }
    for _ in 0..6 {
        f5.record_read(100, IoClass::Compaction);
    }
    heat.tick(&v, Duration::from_secs(2));
    // Read heat 20 after one interval; at alpha 0.5 that is 10 per interval, 5 per second.
    let rates = heat.read_rates();
    assert_eq!(rates[&4], 5.0);
    assert_eq!(rates[&5], 0.0);
    // 6 compaction reads in 2 s, smoothed from 0 by alpha: 0.5 * 3.
    assert_eq!(heat.compaction_rate(), 1.5);
    // A file compacted away still counts the reads its compaction made.
    for _ in 0..8 {
        f5.record_read(100, IoClass::Compaction);
    }
    heat.tick(&version(&[(4, 1, 100)]), Duration::from_secs(1));
    assert_eq!(heat.compaction_rate(), 0.5 * 1.5 + 0.5 * 8.0);
}
