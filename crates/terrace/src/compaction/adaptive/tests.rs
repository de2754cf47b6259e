use std::sync::Arc;

use parking_lot::Mutex;

use super::*;
use crate::compaction::CompactionInputLevel;
use crate::key::{internal_key, InternalKey, ValueType};
use crate::version::FileMeta;

/// Signals a test sets.
#[derive(Default)]
struct Fixed(Mutex<(f64, f64)>);

impl MachineSignals for Fixed {
    fn sample(&self) -> (f64, f64) {
        *self.0.lock()
    }
}

fn signals(cpu: f64, large_values: f64) -> Signals {
    Signals {
        cpu,
        memory: 0.0,
        large_values,
    }
}

fn no_hold() -> DecisionConfig {
    DecisionConfig {
        min_hold_ms: 0,
        ..DecisionConfig::default()
    }
}

#[test]
fn starts_pipelined_and_turns_off_only_past_the_band() {
    let a = AdaptiveExecutor::with_signals(no_hold(), Arc::new(Fixed::default()));
    assert_eq!(a.decide_on(&signals(0.2, 0.0)), RunMode::Pipelined);
    // 0.6 * 0.88 = 0.528: above the threshold, inside the band: no change.
    assert_eq!(a.decide_on(&signals(0.88, 0.0)), RunMode::Pipelined);
    // 0.6 * 0.95 = 0.57: past the band.
    assert_eq!(a.decide_on(&signals(0.95, 0.0)), RunMode::Linear);
    assert!((a.last_score() - 0.57).abs() < 1e-9);
    // Back under the threshold but inside the band: stays linear.
    assert_eq!(a.decide_on(&signals(0.8, 0.0)), RunMode::Linear);
    assert_eq!(a.decide_on(&signals(0.7, 0.0)), RunMode::Pipelined);
    assert_eq!(a.switches(), 2);
}

#[test]
fn a_signal_wandering_around_the_threshold_does_not_flip_the_mode() {
    let paper = AdaptiveExecutor::with_signals(DecisionConfig::paper(), Arc::new(Fixed::default()));
    let ours = AdaptiveExecutor::with_signals(
        DecisionConfig {
            large_value_weight: 1.0,
            cpu_weight: 0.0,
            memory_weight: 0.0,
            threshold: 0.7,
            ..no_hold()
        },
        Arc::new(Fixed::default()),
    );
    // The large-value share crosses 70% back and forth by small amounts.
    for i in 0..20 {
        let share = if i % 2 == 0 { 0.72 } else { 0.68 };
        paper.decide_on(&signals(0.0, share));
        ours.decide_on(&signals(0.0, share));
    }
    assert_eq!(paper.switches(), 20, "no hysteresis: every crossing flips");
    assert_eq!(ours.switches(), 0);
}

#[test]
fn a_mode_holds_for_its_minimum_time() {
    let config = DecisionConfig {
        min_hold_ms: 60_000,
        ..DecisionConfig::default()
    };
    let a = AdaptiveExecutor::with_signals(config, Arc::new(Fixed::default()));
    // The executor was just created (the start counts as a change): no switch yet.
    assert_eq!(a.decide_on(&signals(1.0, 1.0)), RunMode::Pipelined);
    assert_eq!(a.switches(), 0);
}

#[test]
fn large_values_turn_the_pipeline_off_on_an_idle_machine() {
    let a = AdaptiveExecutor::with_signals(no_hold(), Arc::new(Fixed::default()));
    assert_eq!(a.decide_on(&signals(0.0, 0.5)), RunMode::Pipelined);
    assert_eq!(a.decide_on(&signals(0.0, 0.95)), RunMode::Linear);
}

fn file(number: u64, size: u64, entries: u64) -> FileMeta {
    FileMeta {
        number,
        volume: 0,
        size,
        smallest: InternalKey(internal_key(b"a", 1, ValueType::Value)),
        largest: InternalKey(internal_key(b"z", 1, ValueType::Value)),
        smallest_seq: 1,
        largest_seq: 1,
        num_entries: entries,
        num_deletions: 0,
        num_range_deletions: 0,
        file_checksum: 0,
        replicas: Vec::new(),
    }
}

fn task(files: Vec<FileMeta>) -> CompactionTask {
    let json = br#"{"format_version":2,"id":1,"inputs":[],"output_level":1,"smallest_user_key":null,"largest_user_key":null,"snapshots":[],"bottommost":false,"output":{"target_file_size":1,"block_size":4096,"restart_interval":16,"bloom_bits_per_key":0,"compression":"None","volume":0,"file_numbers":[]},"filter":null,"reason":"LevelSize"}"#;
    let mut t = CompactionTask::decode(json).unwrap();
    t.inputs = vec![CompactionInputLevel { level: 1, files }];
    t
}

#[test]
fn the_large_value_share_counts_entries_of_tables_with_large_entries() {
    // 100 entries of ~64 KiB and 300 of ~100 B.
    let t = task(vec![
        file(1, 100 * (64 << 10), 100),
        file(2, 300 * 100, 300),
    ]);
    assert!((large_value_share(&t, 32 << 10) - 0.25).abs() < 1e-9);
    assert_eq!(large_value_share(&t, 128 << 10), 0.0);
    assert_eq!(large_value_share(&task(vec![]), 32 << 10), 0.0);
    // A table without entries counts as one entry, never a division by zero.
    assert_eq!(large_value_share(&task(vec![file(3, 0, 0)]), 1), 0.0);
}

#[test]
fn decide_reads_the_machine_and_the_task() {
    let fixed = Arc::new(Fixed::default());
    let a = AdaptiveExecutor::with_signals(no_hold(), fixed.clone());
    let small = task(vec![file(1, 300 * 100, 300)]);
    let large = task(vec![file(1, 100 * (64 << 10), 100)]);
    assert_eq!(a.decide(&small), RunMode::Pipelined);
    assert_eq!(a.decide(&large), RunMode::Linear);
    assert_eq!(a.decide(&small), RunMode::Pipelined);
    *fixed.0.lock() = (1.0, 0.5);
    assert_eq!(a.decide(&small), RunMode::Linear);
}

#[test]
fn the_system_signals_are_fractions() {
    let s = SystemSignals::new();
    std::thread::sleep(sysinfo::MINIMUM_CPU_UPDATE_INTERVAL);
    let (cpu, memory) = s.sample();
    assert!((0.0..=1.0).contains(&cpu), "{cpu}");
    assert!(memory > 0.0 && memory <= 1.0, "{memory}");
}

#[test]
fn modes_parse_and_build_their_executors() {
    let name = |s: &str| {
        ExecutionMode::parse(s)
            .unwrap()
            .executor()
            .name()
            .to_string()
    };
    assert_eq!(name("linear"), "linear");
    assert_eq!(name("pipelined"), "pipelined");
    assert_eq!(name("auto"), "auto");
    let err = ExecutionMode::parse("fast").unwrap_err().to_string();
    assert!(err.contains("linear, pipelined or auto"), "{err}");
}
