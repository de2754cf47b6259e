//! Compaction work by unit during one benchmark (`host`, each remote worker): the
//! difference of the engine's per-unit totals (`terrace::compaction::UnitTotals`) before
//! and after it, and its report lines "compaction unit".
//!
//! Owns: the delta and the lines' shape. Must not touch: the database (it is given
//! `DbStats`). Concurrency: plain data.

use std::fmt::Write as _;

use terrace::compaction::UnitTotals;
use terrace::DbStats;

/// The units that ran or failed compaction pieces between `before` and `after`.
pub fn compaction_units(before: &DbStats, after: &DbStats) -> Vec<UnitTotals> {
    let zero = UnitTotals::default();
    after
        .compaction_units
        .iter()
        .map(|a| {
            let b = before
                .compaction_units
                .iter()
                .find(|b| b.unit == a.unit)
                .unwrap_or(&zero);
            let d = |f: fn(&UnitTotals) -> u64| f(a).saturating_sub(f(b));
            UnitTotals {
                unit: a.unit.clone(),
                runs: d(|u| u.runs),
                linear_runs: d(|u| u.linear_runs),
                pipelined_runs: d(|u| u.pipelined_runs),
                input_bytes: d(|u| u.input_bytes),
                output_bytes: d(|u| u.output_bytes),
                busy_micros: d(|u| u.busy_micros),
                cpu_micros: d(|u| u.cpu_micros),
                failures: d(|u| u.failures),
                fallbacks: d(|u| u.fallbacks),
                kept_outputs: d(|u| u.kept_outputs),
            }
        })
        .filter(|u| u.runs > 0 || u.failures > 0)
        .collect()
}

/// One unit's line: runs by mode, MB read, bandwidth while busy, CPU time and MB per
/// CPU-second, failures and fallbacks.
pub fn unit_line(u: &UnitTotals) -> String {
    let mut s = format!(
        "{}: {} runs ({} linear, {} pipelined), {:.1} MB in, {:.1} MB out",
        u.unit,
        u.runs,
        u.linear_runs,
        u.pipelined_runs,
        u.input_bytes as f64 / 1e6,
        u.output_bytes as f64 / 1e6,
    );
    if u.runs > 0 {
        let _ = write!(
            s,
            ", {:.1} MB/s busy, {:.2} CPU-s, {:.1} MB per CPU-second",
            u.mb_per_sec(),
            u.cpu_micros as f64 / 1e6,
            u.mb_per_cpu_second()
        );
    }
    if u.failures > 0 || u.fallbacks > 0 {
        let _ = write!(
            s,
            ", {} failed, {} taken over ({} finished outputs kept)",
            u.failures, u.fallbacks, u.kept_outputs
        );
    }
    s
}
