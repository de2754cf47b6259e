use super::*;

fn level_of(c: &Counters, level: usize) -> LevelStats {
    let mut s = LevelStats {
        level,
        ..LevelStats::default()
    };
    c.fill_level(&mut s);
    s
}

#[test]
fn recording_adds_to_the_output_level_only() {
    let c = Counters::new(4);
    let column = CompactionBytes {
        read_input: 0,
        read_rows: 700,
        read_output: 300,
        written: 900,
    };
    c.record_compaction(1, column);
    c.record_compaction(
        2,
        CompactionBytes {
            read_input: 100,
            read_rows: 0,
            read_output: 200,
            written: 250,
        },
    );
    c.record_trivial_move(3, 64);
    let l1 = level_of(&c, 1);
    assert_eq!(
        (
            l1.compaction_bytes_read_input_level,
            l1.compaction_bytes_read_level0_rows,
            l1.compaction_bytes_read_output_level,
            l1.compaction_bytes_written,
            l1.compactions,
        ),
        (0, 700, 300, 900, 1)
    );
    let l3 = level_of(&c, 3);
    assert_eq!(
        (l3.compaction_bytes_moved, l3.compactions, l3.trivial_moves),
        (64, 1, 1)
    );
    assert_eq!(l3.compaction_bytes_written, 0);
    assert_eq!(level_of(&c, 0), LevelStats::default());
    let levels: Vec<LevelStats> = (0..4).map(|l| level_of(&c, l)).collect();
    let total = sum(&levels);
    assert_eq!(total.compaction_bytes_read(), 1300);
    assert_eq!(total.compaction_bytes_written, 1150);
    assert_eq!((total.compactions, total.trivial_moves), (3, 1));
    assert_eq!(total.compaction_bytes_moved, 64);
    // A level beyond the counters (never an output level) is not recorded anywhere.
    c.record_trivial_move(9, 1);
    assert_eq!(
        sum(&(0..4).map(|l| level_of(&c, l)).collect::<Vec<_>>()),
        total
    );
}

#[test]
fn write_amplification_is_written_per_byte_read_from_above() {
    let l = LevelStats {
        compaction_bytes_read_input_level: 100,
        compaction_bytes_read_level0_rows: 300,
        compaction_bytes_read_output_level: 500,
        compaction_bytes_written: 1000,
        ..LevelStats::default()
    };
    assert_eq!(l.compaction_write_amplification(), 2.5);
    assert_eq!(l.compaction_bytes_read(), 900);
    assert_eq!(l.compaction_bytes_new(), 500);
    // Compactions that dropped more than they read from above write nothing new.
    let shrank = LevelStats {
        compaction_bytes_written: 400,
        ..l.clone()
    };
    assert_eq!(shrank.compaction_bytes_new(), 0);
    // Only trivial moves, or nothing: no amplification to report.
    let moved = LevelStats {
        compaction_bytes_moved: 4096,
        ..LevelStats::default()
    };
    assert_eq!(moved.compaction_write_amplification(), 0.0);
}

#[test]
fn the_table_has_a_row_per_level_and_their_sum() {
    let mib = 1_048_576;
    let s = DbStats {
        levels: vec![
            LevelStats {
                level: 0,
                rows: 3,
                bytes: 2 * mib,
                ..LevelStats::default()
            },
            LevelStats {
                level: 1,
                files: 4,
                bytes: 8 * mib,
                compaction_bytes_read_level0_rows: 4 * mib,
                compaction_bytes_read_output_level: 2 * mib,
                compaction_bytes_written: 6 * mib,
                compactions: 5,
                ..LevelStats::default()
            },
            LevelStats {
                level: 2,
                files: 1,
                bytes: mib,
                compaction_bytes_moved: mib,
                compactions: 1,
                trivial_moves: 1,
                ..LevelStats::default()
            },
        ],
        flush_bytes_written: 3 * mib,
        ..DbStats::default()
    };
    let table = compaction_table(&s);
    let cells = |name: &str| -> Vec<String> {
        table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .map(|l| l.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default()
    };
    let header = cells("Level");
    assert_eq!(header.len(), 13, "{table}");
    assert_eq!(
        cells("L1"),
        ["L1", "4", "0", "8.0", "0.0", "4.0", "2.0", "6.0", "4.0", "0.0", "1.50", "5", "0"]
    );
    assert_eq!(
        cells("L2"),
        ["L2", "1", "0", "1.0", "0.0", "0.0", "0.0", "0.0", "0.0", "1.0", "0.00", "1", "1"]
    );
    assert_eq!(
        cells("Sum"),
        ["Sum", "5", "3", "11.0", "0.0", "4.0", "2.0", "6.0", "4.0", "1.0", "1.50", "6", "1"]
    );
    assert!(table.contains("Flush: 3.0 MB written"), "{table}");
}
