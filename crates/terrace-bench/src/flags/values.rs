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
/// How compaction tasks run (`--compaction_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactionMode {
    /// Read, merge and write in turn on the compaction thread.
    Linear,
    /// Read, merge and write as a pipeline of three threads.
    Pipelined,
}

impl CompactionMode {
    /// The engine's executor for this mode.
    pub fn executor(self) -> std::sync::Arc<dyn terrace::compaction::CompactionExecutor> {
        match self {
            CompactionMode::Linear => std::sync::Arc::new(terrace::compaction::LinearExecutor),
            CompactionMode::Pipelined => {
                std::sync::Arc::new(terrace::compaction::PipelinedExecutor)
            }
        }
    }
}

pub(super) fn compaction_mode(v: &str) -> Result<CompactionMode> {
    match v.trim() {
        "linear" => Ok(CompactionMode::Linear),
        "pipelined" => Ok(CompactionMode::Pipelined),
        _ => Err(bad("compaction_mode", v, "expected linear or pipelined")),
    }
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

/// `--offload_ratio=R|dynamic|steal[:N]`: the worker's share of each compaction.
pub(super) fn offload_ratio(v: &str) -> Result<terrace::compaction::SharePolicy> {
    use terrace::compaction::SharePolicy;
    let v = v.trim();
    if v == "dynamic" {
        return Ok(SharePolicy::Dynamic);
    }
    if let Some(rest) = v.strip_prefix("steal") {
        let pieces = match rest.strip_prefix(':') {
            Some(n) => n.parse().ok().filter(|n| *n >= 2),
            None if rest.is_empty() => Some(8),
            None => None,
        };
        return pieces.map(SharePolicy::Steal).ok_or_else(|| {
            bad(
                "offload_ratio",
                v,
                "steal takes a piece count of at least 2: steal:8",
            )
        });
    }
    match v.parse::<f64>() {
        Ok(r) if r > 0.0 && r < 1.0 => Ok(SharePolicy::Static(r)),
        _ => Err(bad(
            "offload_ratio",
            v,
            "expected a share between 0 and 1 (exclusive), dynamic, or steal[:N]",
        )),
    }
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
