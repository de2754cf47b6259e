use super::*;

const MB: u64 = 1_048_576;

fn level(level: usize, written: u64, compactions: u64) -> LevelStats {
    LevelStats {
        level,
        compaction_bytes_read_input_level: written / 2,
        compaction_bytes_read_output_level: written / 4,
        compaction_bytes_written: written,
        compactions,
        ..LevelStats::default()
    }
}

fn stats(levels: Vec<LevelStats>) -> DbStats {
    DbStats {
        levels,
        ..DbStats::default()
    }
}

#[test]
fn the_difference_keeps_only_levels_that_received_compactions() {
    let before = stats(vec![
        level(0, 0, 0),
        level(1, 4 * MB, 2),
        level(2, 8 * MB, 1),
    ]);
    let mut after = stats(vec![
        level(0, 0, 0),
        level(1, 10 * MB, 5),
        level(2, 8 * MB, 1),
    ]);
    after.levels[1].compaction_bytes_read_level0_rows = 3 * MB;
    after.levels.push(LevelStats {
        level: 3,
        compaction_bytes_moved: MB,
        compactions: 1,
        trivial_moves: 1,
        ..LevelStats::default()
    });
    let d = compaction_by_level(&before, &after);
    assert_eq!(
        d,
        [
            LevelCompaction {
                level: 1,
                // Files of the input level (5 MB - 2 MB) and level-0 rows (3 MB).
                read_input_bytes: 6 * MB,
                read_row_bytes: 3 * MB,
                read_output_bytes: 10 * MB / 4 - MB,
                written_bytes: 6 * MB,
                moved_bytes: 0,
                compactions: 3,
            },
            LevelCompaction {
                level: 3,
                moved_bytes: MB,
                compactions: 1,
                ..LevelCompaction::default()
            },
        ]
    );
    assert_eq!(
        compaction_line(&d),
        "L1 W 6.0 MB (R 6.0+1.5 MB, L0 rows 3.0 MB of it), L3 W 0.0 MB (R 0.0+0.0 MB, moved 1.0 MB)"
    );
}

#[test]
fn no_compaction_is_none() {
    let s = stats(vec![level(1, 4 * MB, 2)]);
    assert!(compaction_by_level(&s, &s).is_empty());
    assert_eq!(compaction_line(&[]), "none");
    // Counters that went down (another database) count nothing rather than wrap.
    let fewer = stats(vec![level(1, MB, 1)]);
    assert!(compaction_by_level(&s, &fewer).is_empty());
}
