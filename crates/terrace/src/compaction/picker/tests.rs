use super::*;

mod min_overlap;
mod simulator;

fn meta(number: u64, lo: &[u8], hi: &[u8], size: u64, seq: u64) -> Arc<FileMeta> {
    Arc::new(FileMeta {
        number,
        volume: 0,
        size,
        smallest: InternalKey::new(lo, seq, ValueType::Value),
        largest: InternalKey::new(hi, seq, ValueType::Value),
        smallest_seq: seq,
        largest_seq: seq,
        num_entries: 1,
        num_deletions: 0,
        num_range_deletions: 0,
        file_checksum: 0,
        replicas: Vec::new(),
    })
}

fn f(number: u64, lo: &str, hi: &str, size: u64) -> Arc<FileMeta> {
    meta(number, lo.as_bytes(), hi.as_bytes(), size, number)
}

/// Small targets; round robin, which the tests in this file were written for
/// (`min_overlap` tests the other policy).
fn opts(dynamic: bool) -> Options {
    Options {
        compaction_pri: CompactionPri::RoundRobin,
        max_bytes_for_level_base: 100,
        max_bytes_for_level_multiplier: 10.0,
        level0_file_num_compaction_trigger: 2,
        level_compaction_dynamic_level_bytes: dynamic,
        ..Options::default()
    }
}

struct Fixture {
    levels: Vec<Vec<Arc<FileMeta>>>,
    pointers: Vec<Option<InternalKey>>,
    busy: HashSet<u64>,
}

impl Fixture {
    fn new(levels: Vec<Vec<Arc<FileMeta>>>) -> Self {
        let n = levels.len();
        Fixture {
            levels,
            pointers: vec![None; n],
            busy: HashSet::new(),
        }
    }
    /// The classic state: level 0 scored by file count, level 1 sized by the options.
    fn state(&self, o: &Options) -> LevelState<'_> {
        LevelState {
            levels: &self.levels,
            compact_pointers: &self.pointers,
            being_compacted: &self.busy,
            level0_score: crate::level0::level0_file_count_score(
                self.levels.first().map_or(&[][..], |l| l.as_slice()),
                &self.busy,
                o.level0_file_num_compaction_trigger,
            ),
            level1_target_bytes: o.max_bytes_for_level_base,
        }
    }
}

fn numbers(files: &[Arc<FileMeta>]) -> Vec<u64> {
    files.iter().map(|f| f.number).collect()
}

#[test]
fn static_targets_grow_by_the_multiplier() {
    let levels = vec![Vec::new(); 4];
    assert_eq!(
        level_targets(&levels, &opts(false), 100),
        vec![0, 100, 1000, 10000]
    );
    assert_eq!(base_level(&levels, &opts(false), 100), 1);
}

#[test]
fn dynamic_targets_follow_the_last_level() {
    let mut levels = vec![Vec::new(); 5];
    assert_eq!(base_level(&levels, &opts(true), 100), 4);
    assert_eq!(
        level_targets(&levels, &opts(true), 100),
        vec![0, 0, 0, 0, 100]
    );
    levels[4] = vec![f(1, "a", "z", 1500)];
    assert_eq!(
        level_targets(&levels, &opts(true), 100),
        vec![0, 0, 15, 150, 1500]
    );
    assert_eq!(base_level(&levels, &opts(true), 100), 2);
    // Data above the computed base level pins the base level there.
    levels[1] = vec![f(2, "a", "b", 1)];
    assert_eq!(base_level(&levels, &opts(true), 100), 1);
}

#[test]
fn scores_ignore_files_being_compacted() {
    let mut fx = Fixture::new(vec![
        vec![f(1, "a", "c", 1), f(2, "b", "d", 1), f(3, "x", "y", 1)],
        vec![f(4, "a", "m", 150), f(5, "n", "z", 50)],
        vec![],
    ]);
    assert_eq!(
        scores(&fx.state(&opts(false)), &opts(false)),
        vec![1.5, 2.0, 0.0]
    );
    fx.busy.insert(3);
    fx.busy.insert(4);
    assert_eq!(
        scores(&fx.state(&opts(false)), &opts(false)),
        vec![1.0, 0.5, 0.0]
    );
}

#[test]
fn level0_picks_overlapping_closure_and_next_level() {
    let fx = Fixture::new(vec![
        // 1 and 3 overlap through 2; 4 stands apart.
        vec![
            f(3, "e", "g", 1),
            f(1, "a", "c", 1),
            f(2, "c", "e", 1),
            f(4, "x", "y", 1),
        ],
        vec![
            f(10, "a", "b", 10),
            f(11, "f", "h", 10),
            f(12, "p", "q", 10),
        ],
        vec![f(20, "g", "j", 1)],
    ]);
    let p = pick(&fx.state(&opts(false)), &opts(false)).unwrap();
    assert_eq!((p.level, p.output_level), (0, 1));
    assert_eq!(numbers(&p.inputs), vec![1, 2, 3]);
    assert_eq!(numbers(&p.output_inputs), vec![10, 11]);
    assert_eq!(p.reason, CompactionReason::Level0FileNum);
    assert!(!p.trivial_move);
    assert!(!p.bottommost, "file 20 overlaps [a, h] below");
    assert_eq!(p.compact_pointer().unwrap().user_key(), b"g");
}

#[test]
fn level0_waits_for_a_running_level0_compaction() {
    let mut fx = Fixture::new(vec![
        vec![f(1, "a", "c", 1), f(2, "x", "y", 1), f(3, "x", "z", 1)],
        vec![],
    ]);
    fx.busy.insert(1);
    assert!(pick(&fx.state(&opts(false)), &opts(false)).is_none());
}

#[test]
fn single_file_without_overlap_is_a_trivial_move() {
    let fx = Fixture::new(vec![
        vec![],
        vec![f(10, "a", "c", 150)],
        vec![f(20, "d", "f", 10)],
        vec![f(30, "a", "b", 10)],
    ]);
    let p = pick(&fx.state(&opts(false)), &opts(false)).unwrap();
    assert_eq!((p.level, p.output_level), (1, 2));
    assert!(p.trivial_move);
    assert!(!p.bottommost);
    let task = p.to_task(9, vec![], sample_output(), None);
    assert_eq!(task.reason, CompactionReason::TrivialMove);
    assert_eq!(task.inputs.len(), 1);
}

#[test]
fn a_trivial_move_takes_up_to_four_neighbours_that_overlap_nothing_below() {
    // Level 1: six files; level 2 overlaps only the range of the last one ("p".."q").
    // Round robin starts at "a": "a".."h" moves with its three right-hand neighbours;
    // the fifth would make five files.
    let fx = Fixture::new(vec![
        vec![],
        vec![
            f(10, "a", "b", 100),
            f(11, "c", "d", 100),
            f(12, "e", "f", 100),
            f(13, "g", "h", 100),
            f(14, "i", "j", 100),
            f(15, "p", "q", 100),
        ],
        vec![f(20, "pp", "pz", 10)],
    ]);
    let p = pick(&fx.state(&opts(false)), &opts(false)).unwrap();
    assert!(p.trivial_move);
    let moved: Vec<u64> = p.inputs.iter().map(|f| f.number).collect();
    assert_eq!(moved, vec![10, 11, 12, 13]);

    // A busy neighbour stops the run; the run never jumps it.
    let mut fx = Fixture::new(vec![
        vec![],
        vec![
            f(10, "a", "b", 100),
            f(11, "c", "d", 100),
            f(12, "e", "f", 100),
        ],
        vec![f(20, "x", "z", 10)],
    ]);
    fx.busy.insert(11);
    let p = pick(&fx.state(&opts(false)), &opts(false)).unwrap();
    let moved: Vec<u64> = p.inputs.iter().map(|f| f.number).collect();
    assert_eq!(moved, vec![10]);
    assert!(p.trivial_move);

    // The gap between two files counts: a next-level file there blocks moving both.
    let fx = Fixture::new(vec![
        vec![],
        vec![f(10, "a", "b", 100), f(11, "d", "e", 100)],
        vec![f(20, "c", "c", 10)],
    ]);
    let p = pick(&fx.state(&opts(false)), &opts(false)).unwrap();
    let moved: Vec<u64> = p.inputs.iter().map(|f| f.number).collect();
    assert_eq!(moved, vec![10]);
}

fn sample_output() -> OutputSpec {
    OutputSpec {
        target_file_size: 1 << 20,
        block_size: 4096,
        restart_interval: 16,
        bloom_bits_per_key: 10,
        compression: crate::options::Compression::None,
        volume: 0,
        file_numbers: vec![100],
        placement: None,
    }
}

#[test]
fn round_robin_starts_after_the_compact_pointer_and_wraps() {
    let mut fx = Fixture::new(vec![
        vec![],
        vec![
            f(10, "a", "b", 60),
            f(11, "c", "d", 60),
            f(12, "e", "f", 60),
        ],
        vec![f(20, "c", "c", 5)],
    ]);
    let p = pick(&fx.state(&opts(false)), &opts(false)).unwrap();
    assert_eq!(numbers(&p.inputs), vec![10]);
    assert!(p.bottommost);
    fx.pointers[1] = p.compact_pointer();
    let p = pick(&fx.state(&opts(false)), &opts(false)).unwrap();
    assert_eq!(numbers(&p.inputs), vec![11]);
    assert_eq!(numbers(&p.output_inputs), vec![20]);
    fx.pointers[1] = Some(InternalKey::new(b"f", 12, ValueType::Value));
    assert_eq!(
        numbers(&pick(&fx.state(&opts(false)), &opts(false)).unwrap().inputs),
        vec![10]
    );
    // Busy files are skipped, and so are files whose next-level overlap is busy.
    fx.busy.insert(10);
    fx.busy.insert(20);
    assert_eq!(
        numbers(&pick(&fx.state(&opts(false)), &opts(false)).unwrap().inputs),
        vec![12]
    );
}

#[test]
fn inputs_never_split_a_user_key() {
    // Files 10 and 11 share user key "c"; 11 and 12 meet at a range-deletion end
    // sentinel, which does not hold "e".
    let mut f11 = meta(11, b"c", b"e", 60, 11).as_ref().clone();
    f11.largest = InternalKey::new(b"e", MAX_SEQ, ValueType::RangeDeletion);
    let fx = Fixture::new(vec![
        vec![],
        vec![f(10, "a", "c", 60), Arc::new(f11), f(12, "e", "g", 60)],
        vec![f(20, "a", "a", 1), f(21, "a", "b", 1), f(22, "x", "y", 1)],
    ]);
    let p = pick(&fx.state(&opts(false)), &opts(false)).unwrap();
    assert_eq!(numbers(&p.inputs), vec![10, 11]);
    // The output level widens the same way: 20 ends at "a" where 21 starts.
    assert_eq!(numbers(&p.output_inputs), vec![20, 21]);
    let p = pick_manual(
        &fx.state(&opts(false)),
        &opts(false),
        2,
        Some(b"b"),
        Some(b"b"),
    )
    .unwrap();
    assert_eq!(numbers(&p.inputs), vec![20, 21]);
}

#[test]
fn manual_compaction_picks_the_range_and_rewrites() {
    let mut fx = Fixture::new(vec![
        vec![f(1, "a", "c", 1), f(2, "m", "n", 1)],
        vec![f(10, "a", "b", 1), f(11, "k", "p", 1)],
        vec![f(20, "a", "z", 1)],
    ]);
    let p = pick_manual(&fx.state(&opts(false)), &opts(false), 0, Some(b"l"), None).unwrap();
    assert_eq!(numbers(&p.inputs), vec![2]);
    assert_eq!(numbers(&p.output_inputs), vec![11]);
    assert!(!p.trivial_move);
    assert_eq!(p.reason, CompactionReason::Manual);
    // The last level compacts into itself and is bottommost.
    let p = pick_manual(&fx.state(&opts(false)), &opts(false), 2, None, None).unwrap();
    assert_eq!((p.level, p.output_level), (2, 2));
    assert!(p.output_inputs.is_empty() && p.bottommost);
    assert!(pick_manual(
        &fx.state(&opts(false)),
        &opts(false),
        1,
        Some(b"d"),
        Some(b"e")
    )
    .is_none());
    assert!(pick_manual(&fx.state(&opts(false)), &opts(false), 7, None, None).is_none());
    fx.busy.insert(20);
    assert!(pick_manual(&fx.state(&opts(false)), &opts(false), 1, None, None).is_none());
}

#[test]
fn a_column_widens_to_whole_files_of_its_output_level() {
    let fx = Fixture::new(vec![
        Vec::new(),
        vec![f(1, "b", "d", 10), f(2, "f", "h", 10), f(3, "j", "m", 10)],
    ]);
    let o = opts(false);
    let column = |lo: Option<&str>, hi: Option<&str>| Level0Column {
        input: Level0Input {
            units: Vec::new(),
            payload: serde_json::Value::Null,
        },
        lo: lo.map(|k| k.as_bytes().to_vec()),
        hi: hi.map(|k| k.as_bytes().to_vec()),
    };
    // A cut between files keeps the column as it is.
    let p = pick_into_base_level(&fx.state(&o), 1, column(Some("e"), Some("i"))).unwrap();
    assert_eq!(numbers(&p.output_inputs), vec![2]);
    let c = p.column.unwrap();
    assert_eq!(
        (c.lo.as_deref(), c.hi.as_deref()),
        (Some(&b"e"[..]), Some(&b"i"[..]))
    );
    // Cuts inside files (the output level changed since the cuts were chosen) widen the
    // column to the files' bounds instead of splitting them.
    let p = pick_into_base_level(&fx.state(&o), 1, column(Some("c"), Some("g"))).unwrap();
    assert_eq!(numbers(&p.output_inputs), vec![1, 2]);
    let c = p.column.unwrap();
    assert_eq!(c.lo.as_deref(), Some(&b"b"[..]));
    assert_eq!(c.hi.as_deref(), Some(&b"h\0"[..]));
    // A file being compacted makes the column wait.
    let mut busy = Fixture::new(fx.levels.clone());
    busy.busy.insert(2);
    assert!(pick_into_base_level(&busy.state(&o), 1, column(Some("c"), Some("g"))).is_none());
}
