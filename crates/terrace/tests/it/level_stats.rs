//! Compaction statistics by output level (`LevelStats`' compaction fields and the
//! `terrace.compaction-stats` table): where compactions went, what they read from the
//! input level, level 0's matrix rows and the output level, and that the levels add up
//! to the totals of `DbStats`.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use terrace::{CompactionInfo, DbStats, EventListener, LevelStats};

/// Per output level: (compactions, trivial moves, bytes read, bytes written), as the
/// compaction events reported them.
#[derive(Default)]
struct ByLevel(Mutex<BTreeMap<usize, (u64, u64, u64, u64)>>);

impl EventListener for ByLevel {
    fn on_compaction_completed(&self, info: &CompactionInfo) {
        let mut m = self.0.lock();
        let e = m.entry(info.output_level).or_default();
        e.0 += 1;
        e.1 += u64::from(info.trivial_move);
        e.2 += info.bytes_read;
        e.3 += info.bytes_written;
    }
}

/// The totals of `DbStats` are the sums of the levels' figures.
fn assert_levels_sum_to_totals(s: &DbStats) {
    let sum = |f: fn(&LevelStats) -> u64| s.levels.iter().map(f).sum::<u64>();
    assert_eq!(
        sum(|l| l.compaction_bytes_written),
        s.compaction_bytes_written
    );
    assert_eq!(
        sum(LevelStats::compaction_bytes_read),
        s.compaction_bytes_read
    );
    assert_eq!(sum(|l| l.compactions), s.compactions);
    assert_eq!(sum(|l| l.trivial_moves), s.trivial_moves);
}

/// Level `l`'s figures match the compaction events of output level `l`; a level no
/// compaction went to has only zeros.
fn assert_levels_match_events(s: &DbStats, events: &ByLevel) {
    let events = events.0.lock();
    for l in &s.levels {
        let (n, moves, read, written) = events.get(&l.level).copied().unwrap_or_default();
        assert_eq!(l.compactions, n, "level {}", l.level);
        assert_eq!(l.trivial_moves, moves, "level {}", l.level);
        assert_eq!(l.compaction_bytes_read(), read, "level {}", l.level);
        assert_eq!(l.compaction_bytes_written, written, "level {}", l.level);
        if n == 0 {
            assert_eq!(l, &zeroed_compaction(l), "level {}", l.level);
        }
        // Rewriting compactions write something; trivial moves only move.
        assert_eq!(
            l.compaction_bytes_written > 0,
            n > moves,
            "level {}",
            l.level
        );
        assert_eq!(l.compaction_bytes_moved > 0, moves > 0, "level {}", l.level);
    }
}

/// `l` with every compaction figure zero.
fn zeroed_compaction(l: &LevelStats) -> LevelStats {
    LevelStats {
        level: l.level,
        files: l.files,
        rows: l.rows,
        bytes: l.bytes,
        target_bytes: l.target_bytes,
        ..LevelStats::default()
    }
}

/// The number in column `col` (0-based, whitespace-separated) of the table row `name`.
fn table_cell(table: &str, name: &str, col: usize) -> String {
    let line = table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no row {name} in\n{table}"));
    line.split_whitespace().nth(col).unwrap().to_string()
}

#[test]
fn compactions_into_levels_1_and_2_are_counted_where_they_went() {
    let tmp = tempfile::tempdir().unwrap();
    let events = Arc::new(ByLevel::default());
    let opts = terrace::Options {
        max_subcompactions: 2,
        listeners: vec![events.clone()],
        ..crate::small_options()
    };
    let db = crate::open(tmp.path(), opts);
    let mut rng = StdRng::seed_from_u64(11);
    for i in 0..12_000u32 {
        let k = format!("key{:06}", rng.gen_range(0..6000));
        db.put(k.as_bytes(), format!("{i:0>150}").as_bytes())
            .unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let s = db.stats();
    for l in 1..=2 {
        let level = &s.levels[l];
        assert!(
            level.compaction_bytes_written > 0,
            "no compaction into L{l}: {s:?}"
        );
        assert!(
            level.compaction_bytes_read_input_level > 0,
            "L{l}: {level:?}"
        );
        assert!(
            level.compaction_write_amplification() > 0.0,
            "L{l}: {level:?}"
        );
    }
    // Random overwrites: compactions into level 2 rewrite files already there.
    assert!(s.levels[2].compaction_bytes_read_output_level > 0);
    assert_eq!(s.levels[0].compactions, 0, "nothing compacts into level 0");
    assert!(s
        .levels
        .iter()
        .all(|l| l.compaction_bytes_read_level0_rows == 0));
    assert_levels_sum_to_totals(&s);
    assert_levels_match_events(&s, &events);

    let table = db.property("terrace.compaction-stats").unwrap();
    assert_eq!(
        db.property("rocksdb.cfstats").as_deref(),
        Some(table.as_str())
    );
    assert!(table.starts_with("Level"), "{table}");
    // Columns: Level Files Rows Size Rn Rrow Rnp1 Write Wnew Moved W-Amp Comp Move.
    for l in 0..s.levels.len() {
        let name = format!("L{l}");
        let level = &s.levels[l];
        assert_eq!(table_cell(&table, &name, 11), level.compactions.to_string());
        assert_eq!(
            table_cell(&table, &name, 12),
            level.trivial_moves.to_string()
        );
        assert_eq!(
            table_cell(&table, &name, 10),
            format!("{:.2}", level.compaction_write_amplification())
        );
    }
    assert_eq!(table_cell(&table, "Sum", 11), s.compactions.to_string());
    assert_eq!(
        table_cell(&table, "Sum", 7),
        format!("{:.1}", s.compaction_bytes_written as f64 / 1_048_576.0)
    );
}

#[test]
fn trivial_moves_count_as_moved_bytes_of_their_output_level() {
    let tmp = tempfile::tempdir().unwrap();
    let events = Arc::new(ByLevel::default());
    let opts = terrace::Options {
        listeners: vec![events.clone()],
        ..crate::small_options()
    };
    let db = crate::open(tmp.path(), opts);
    // Ascending keys: flushed files never overlap, so they move down without a rewrite.
    for i in 0..8000u32 {
        db.put(format!("key{i:06}").as_bytes(), &[b'v'; 120])
            .unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let s = db.stats();
    assert!(s.trivial_moves > 0, "no trivial move: {s:?}");
    let moved: u64 = s.levels.iter().map(|l| l.compaction_bytes_moved).sum();
    assert!(moved > 0);
    assert_levels_sum_to_totals(&s);
    assert_levels_match_events(&s, &events);
}

#[test]
fn matrix_column_compactions_read_level0_rows_into_level_1() {
    let tmp = tempfile::tempdir().unwrap();
    let events = Arc::new(ByLevel::default());
    let mut opts = crate::small_options();
    opts.write_buffer_size = 8 << 10;
    opts.level0 = crate::matrix_level0(tmp.path(), 128 << 10, terrace::pmem::PmemMode::Mapped);
    opts.listeners = vec![events.clone()];
    let db = crate::open(&tmp.path().join("db"), opts);
    let mut rng = StdRng::seed_from_u64(5);
    for i in 0..8000u32 {
        let k = format!("key{:05}", rng.gen_range(0..2000));
        let mut v = format!("v{i}-").into_bytes();
        v.resize(rng.gen_range(10..300), b'x');
        db.put(k.as_bytes(), &v).unwrap();
    }
    db.wait_for_compactions().unwrap();
    let s = db.stats();
    assert!(s.column_compactions > 0, "no column compaction: {s:?}");
    let l1 = &s.levels[1];
    assert!(l1.compaction_bytes_read_level0_rows > 0, "{l1:?}");
    assert!(l1.compactions >= s.column_compactions, "{l1:?}");
    assert!(l1.compaction_bytes_written > 0);
    // Each row entry is read by the one column covering its key, then trimmed away: the
    // columns read no more than flushes and table merges wrote to rows.
    assert!(
        l1.compaction_bytes_read_level0_rows <= s.row_bytes_written,
        "{l1:?} {s:?}"
    );
    // Only column compactions read rows, and they all go to level 1.
    for l in s.levels.iter().filter(|l| l.level != 1) {
        assert_eq!(l.compaction_bytes_read_level0_rows, 0, "L{}", l.level);
    }
    assert_levels_sum_to_totals(&s);
    assert_levels_match_events(&s, &events);
    let table = db.property("terrace.compaction-stats").unwrap();
    assert_eq!(
        table_cell(&table, "L1", 5),
        format!(
            "{:.1}",
            l1.compaction_bytes_read_level0_rows as f64 / 1_048_576.0
        )
    );
}
