//! `CompactionPri::MinOverlappingRatio`: which file of a level n >= 1 goes down.
//!
//! Owns: tests of the ratio order, busy files, ties, trivial moves and the compact pointer
//! under that policy.
//! Must not touch: anything but the picker's pure functions.

use super::*;

fn min_overlap() -> Options {
    Options {
        compaction_pri: CompactionPri::MinOverlappingRatio,
        ..opts(false)
    }
}

fn pick_level1(fx: &Fixture) -> PickedCompaction {
    let o = min_overlap();
    let p = pick(&fx.state(&o), &o).unwrap();
    assert_eq!((p.level, p.output_level), (1, 2));
    p
}

/// Level 1 (400 bytes, target 100) over level 2. Overlap ratios: file 10 is 50/100,
/// file 11 is 20/100, file 12 is 40/400: 12 drags in the most bytes of level 2 next to 11
/// but the fewest per byte of its own.
fn three_files() -> Fixture {
    Fixture::new(vec![
        vec![],
        vec![
            f(10, "a", "c", 100),
            f(11, "e", "g", 100),
            f(12, "m", "p", 400),
        ],
        vec![
            f(20, "b", "b", 50),
            f(21, "f", "f", 20),
            f(22, "m", "n", 30),
            f(23, "o", "o", 10),
        ],
        vec![],
    ])
}

#[test]
fn the_file_with_the_least_overlap_per_byte_goes_down() {
    let fx = three_files();
    let p = pick_level1(&fx);
    assert_eq!(numbers(&p.inputs), vec![12]);
    assert_eq!(numbers(&p.output_inputs), vec![22, 23]);
    assert!(!p.trivial_move);
    assert!(p.bottommost);
    assert_eq!(p.reason, CompactionReason::LevelSize);
    // Round robin over the same state starts at the first file.
    let rr = opts(false);
    assert_eq!(
        numbers(&pick(&fx.state(&rr), &rr).unwrap().inputs),
        vec![10]
    );
}

#[test]
fn busy_files_and_busy_overlaps_are_skipped() {
    let mut fx = three_files();
    fx.busy.insert(12);
    assert_eq!(numbers(&pick_level1(&fx).inputs), vec![11]);
    // 11's overlap in level 2 is being compacted: the next ratio, 10, goes.
    fx.busy.insert(21);
    let p = pick_level1(&fx);
    assert_eq!(numbers(&p.inputs), vec![10]);
    assert_eq!(numbers(&p.output_inputs), vec![20]);
    fx.busy.insert(20);
    let o = min_overlap();
    assert!(pick(&fx.state(&o), &o).is_none());
}

#[test]
fn equal_ratios_take_the_smallest_key_first() {
    // 10/100 = 30/300 = 20/200, exactly: the level's key order decides.
    let mut fx = Fixture::new(vec![
        vec![],
        vec![
            f(10, "a", "b", 100),
            f(11, "d", "e", 300),
            f(12, "g", "h", 200),
        ],
        vec![
            f(20, "a", "a", 10),
            f(21, "e", "e", 30),
            f(22, "h", "h", 20),
        ],
    ]);
    assert_eq!(numbers(&pick_level1(&fx).inputs), vec![10]);
    fx.busy.insert(10);
    assert_eq!(numbers(&pick_level1(&fx).inputs), vec![11]);
    fx.busy.insert(11);
    assert_eq!(numbers(&pick_level1(&fx).inputs), vec![12]);
}

#[test]
fn a_file_without_overlap_is_moved_first_and_trivially() {
    let fx = Fixture::new(vec![
        vec![],
        vec![f(10, "a", "c", 100), f(11, "k", "m", 100)],
        vec![f(20, "b", "b", 1)],
        vec![f(30, "l", "l", 5)],
    ]);
    let p = pick_level1(&fx);
    assert_eq!(numbers(&p.inputs), vec![11]);
    assert!(p.output_inputs.is_empty());
    assert!(p.trivial_move);
    assert!(!p.bottommost, "file 30 overlaps [k, m] below");
    let task = p.to_task(9, vec![], sample_output(), None);
    assert_eq!(task.reason, CompactionReason::TrivialMove);
}

#[test]
fn a_shared_user_key_widens_the_pick_and_rewrites() {
    // 11 overlaps nothing below, but shares user key "c" with 10: both go, rewritten.
    let fx = Fixture::new(vec![
        vec![],
        vec![
            f(10, "a", "c", 100),
            f(11, "c", "d", 100),
            f(12, "x", "y", 100),
        ],
        vec![f(20, "a", "a", 5), f(21, "x", "y", 1)],
    ]);
    let p = pick_level1(&fx);
    assert_eq!(numbers(&p.inputs), vec![10, 11]);
    assert_eq!(numbers(&p.output_inputs), vec![20]);
    assert!(!p.trivial_move);
}

#[test]
fn the_compact_pointer_moves_so_round_robin_can_take_over() {
    let mut fx = three_files();
    let p = pick_level1(&fx);
    assert_eq!(p.compact_pointer().unwrap().user_key(), b"p");
    fx.pointers[1] = p.compact_pointer();
    // Round robin continues after the file min-overlap took, wrapping to the first.
    let rr = opts(false);
    assert_eq!(
        numbers(&pick(&fx.state(&rr), &rr).unwrap().inputs),
        vec![10]
    );
    fx.pointers[1] = Some(InternalKey::new(b"c", 10, ValueType::Value));
    assert_eq!(
        numbers(&pick(&fx.state(&rr), &rr).unwrap().inputs),
        vec![11]
    );
    // The pointer does not steer min-overlap.
    assert_eq!(numbers(&pick_level1(&fx).inputs), vec![12]);
}

#[test]
fn the_last_level_is_never_an_input() {
    let fx = three_files();
    let state = fx.state(&min_overlap());
    assert!(super::super::min_overlap::pick_min_overlapping_ratio(&state, 3).is_none());
}
