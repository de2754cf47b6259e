//! Parsers of flag values: numbers, booleans, and the names (or db_bench integers) of
//! engine enums.
//!
//! Owns: turning one flag's text into a value, or a `BadValue` error naming the flag.
//! Must not touch: `Flags` itself; callers store the values.
//! Concurrency: pure functions.

use terrace::{CompactionPri, Compression};

use crate::error::{BenchError, Result};

pub(super) fn bad(flag: &str, value: &str, reason: &str) -> BenchError {
    BenchError::BadValue {
        flag: flag.to_string(),
        value: value.to_string(),
        reason: reason.to_string(),
    }
}

pub(super) fn num<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T>
where
    T::Err: std::fmt::Display,
{
    v.trim()
        .parse()
        .map_err(|e: T::Err| bad(flag, v, &e.to_string()))
}

pub(super) fn parse_bool(flag: &str, v: &str) -> Result<bool> {
    match v {
        "1" | "true" | "t" | "yes" | "y" => Ok(true),
        "0" | "false" | "f" | "no" | "n" => Ok(false),
        _ => Err(bad(flag, v, "expected true or false")),
    }
}

pub(super) fn compression(v: &str) -> Result<Compression> {
    match v {
        "none" | "kNoCompression" => Ok(Compression::None),
        "lz4" | "kLZ4Compression" => Ok(Compression::Lz4),
        "zstd" | "kZSTD" => Ok(Compression::Zstd(3)),
        _ => Err(bad(
            "compression_type",
            v,
            "Terrace supports none, lz4 and zstd",
        )),
    }
}

/// `--compaction_pri`: a name, RocksDB's enum name, or db_bench's integer (RocksDB's
/// `CompactionPri` values). The policies Terrace does not implement are errors.
/// `--compaction_mode=linear|pipelined|auto`.
pub(super) fn compaction_mode(v: &str) -> Result<terrace::compaction::ExecutionMode> {
    terrace::compaction::ExecutionMode::parse(v.trim())
        .map_err(|_| bad("compaction_mode", v, "expected linear, pipelined or auto"))
}

/// `--compaction_dispatch=least_loaded|round_robin`.
pub(super) fn compaction_dispatch(v: &str) -> Result<terrace::compaction::DispatchPolicy> {
    terrace::compaction::DispatchPolicy::parse(v).map_err(|_| {
        bad(
            "compaction_dispatch",
            v,
            "expected least_loaded or round_robin",
        )
    })
}

/// `--compaction_workers=ADDR[,ADDR...]`: `host:port` or `unix:PATH`.
pub(super) fn compaction_workers(v: &str) -> Result<Vec<String>> {
    let addrs: Vec<String> = v
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_string)
        .collect();
    if addrs.is_empty() {
        return Err(bad(
            "compaction_workers",
            v,
            "expected HOST:PORT or unix:PATH, comma-separated",
        ));
    }
    Ok(addrs)
}

/// `--offload_ratio=R|dynamic|steal[:N]|all`: the workers' share of each compaction.
pub(super) fn offload_ratio(v: &str) -> Result<terrace::offload::Share> {
    terrace::offload::Share::parse(v).map_err(|_| {
        bad(
            "offload_ratio",
            v,
            "expected a share between 0 and 1 (exclusive), dynamic, steal[:N] (N >= 2) or all",
        )
    })
}

pub(super) fn compaction_pri(v: &str) -> Result<CompactionPri> {
    let unsupported = |name: &str| {
        Err(bad(
            "compaction_pri",
            v,
            &format!(
                "{name} is not implemented; Terrace supports min_overlapping_ratio (3) \
                 and round_robin (4)"
            ),
        ))
    };
    match v.trim() {
        "min_overlapping_ratio" | "kMinOverlappingRatio" | "3" => {
            Ok(CompactionPri::MinOverlappingRatio)
        }
        "round_robin" | "kRoundRobin" | "4" => Ok(CompactionPri::RoundRobin),
        "by_compensated_size" | "kByCompensatedSize" | "0" => unsupported("kByCompensatedSize"),
        "oldest_largest_seq_first" | "kOldestLargestSeqFirst" | "1" => {
            unsupported("kOldestLargestSeqFirst")
        }
        "oldest_smallest_seq_first" | "kOldestSmallestSeqFirst" | "2" => {
            unsupported("kOldestSmallestSeqFirst")
        }
        _ => Err(bad(
            "compaction_pri",
            v,
            "expected min_overlapping_ratio (3) or round_robin (4)",
        )),
    }
}
