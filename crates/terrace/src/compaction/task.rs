//! The compaction description and result as plain data, so that a compaction can run on
//! another thread now and in another process later.
//!
//! Owns: [`CompactionTask`], [`CompactionResult`] and their JSON encoding
//! (docs/formats/compaction-task.md), and cutting a task into key-range subtasks.
//! Must not touch: files or versions; the caller fills a task from a picked compaction
//! and installs a result.
//! Concurrency: plain values, `Send + Sync`.

use crate::compaction::filter::FilterSpec;
use crate::compaction::metrics::RunRecord;
use crate::error::{Error, Result};
use crate::key::SeqNo;
use crate::options::Compression;
use crate::version::FileMeta;
use crate::volume::placement::PlacementPlan;

/// The version written by [`CompactionTask::encode`] and [`CompactionResult::encode`].
/// Version 2 replaced the matrix rows of a column task (`column`) with an opaque level-0
/// input (`level0`); a version-1 task is refused, never run without its rows.
pub const TASK_FORMAT_VERSION: u32 = 2;

/// Why a compaction was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum CompactionReason {
    /// Level 0 reached its file-count trigger.
    Level0FileNum,
    /// A level grew past its byte target.
    LevelSize,
    /// A user asked for a range to be compacted.
    Manual,
    /// The compaction only moves a file to the next level without rewriting it.
    TrivialMove,
    /// A key-range column of a level 0 that compacts itself in columns (the matrix level
    /// 0's frozen rows) goes into the base level.
    #[serde(alias = "MatrixColumn")]
    Level0Column,
    /// Seeks through level 0 cost as much as compacting it (`read_trigger`).
    ReadTriggered,
}

/// A level-0 input that is not a table file: units of a level 0 that compacts itself in
/// columns (the matrix level 0's frozen rows), read only within the task's key range.
/// Opaque here: the level 0 that described it opens it, through the host's
/// [`Level0Source`](crate::compaction::Level0Source).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Level0Input {
    /// The units read, newest first.
    pub units: Vec<Level0Unit>,
    /// What the level 0 needs to open them, in its own terms.
    pub payload: serde_json::Value,
}

/// One unit of a [`Level0Input`]: its number (from the database's file-number space) and
/// the user keys it may hold.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Level0Unit {
    /// The unit's number.
    pub number: u64,
    /// The smallest user key the unit may hold.
    pub smallest_user_key: Vec<u8>,
    /// The largest user key the unit may hold.
    pub largest_user_key: Vec<u8>,
    /// Bytes the unit occupies.
    pub bytes: u64,
}

impl Level0Unit {
    /// True if the unit may hold a user key in `[start, end)`.
    fn overlaps_half_open(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> bool {
        start.is_none_or(|s| self.largest_user_key.as_slice() >= s)
            && end.is_none_or(|e| self.smallest_user_key.as_slice() < e)
    }
}

/// The input files of one level.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CompactionInputLevel {
    /// The level the files are in.
    pub level: u32,
    /// The files, in the level's order.
    pub files: Vec<FileMeta>,
}

/// How output files are written.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OutputSpec {
    /// An output file is closed once it reaches this many bytes (at a user-key change).
    pub target_file_size: u64,
    /// Target uncompressed size of a data block.
    pub block_size: u64,
    /// Keys between restart points in a block.
    pub restart_interval: u32,
    /// Bloom filter bits per key; 0 writes no filter.
    pub bloom_bits_per_key: u32,
    /// Compression of data blocks.
    pub compression: Compression,
    /// Volume that receives the output files, unless `placement` places each.
    pub volume: u32,
    /// File numbers allocated in advance for the outputs, used in order.
    pub file_numbers: Vec<u64>,
    /// Places each output file on a volume of its own choice (a placement policy over
    /// several volumes); `None`: every output goes to `volume`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<PlacementPlan>,
}

impl OutputSpec {
    /// True if an output may be on `volume`.
    pub fn allows_volume(&self, volume: u32) -> bool {
        match &self.placement {
            Some(plan) => plan.allows(volume),
            None => volume == self.volume,
        }
    }
}

/// Everything a runner needs to perform one compaction, with no reference to live state.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CompactionTask {
    /// Identifies the task; its result carries the same id. Subtasks share their parent's.
    pub id: u64,
    /// The input files, newest level first.
    pub inputs: Vec<CompactionInputLevel>,
    /// The level the outputs go to.
    pub output_level: u32,
    /// Subcompaction lower bound (inclusive user key); `None` is unbounded.
    pub smallest_user_key: Option<Vec<u8>>,
    /// Subcompaction upper bound (exclusive user key); `None` is unbounded.
    pub largest_user_key: Option<Vec<u8>>,
    /// Every live snapshot's sequence number, ascending.
    pub snapshots: Vec<SeqNo>,
    /// No older data for these keys can exist below `output_level`.
    pub bottommost: bool,
    /// How to write outputs.
    pub output: OutputSpec,
    /// The compaction filter to run, if any.
    pub filter: Option<FilterSpec>,
    /// Why the compaction was chosen.
    pub reason: CompactionReason,
    /// Level-0 units read within the task's key range, besides the input files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level0: Option<Level0Input>,
}

/// Counters of one compaction run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CompactionStats {
    /// Point entries read.
    pub input_entries: u64,
    /// Key and value bytes read.
    pub input_bytes: u64,
    /// The part of `input_bytes` read from a level-0 input that is not a table file (the
    /// matrix rows of a column compaction, on the persistent-memory tier): the key and
    /// value bytes of its entries in the task's key range. Absent from results of older
    /// runners: 0.
    #[serde(default, alias = "row_bytes")]
    pub level0_bytes: u64,
    /// Point entries written.
    pub output_entries: u64,
    /// Key and value bytes written.
    pub output_bytes: u64,
    /// Entries dropped as shadowed, deleted or obsolete.
    pub dropped_entries: u64,
    /// Entries removed or changed by the compaction filter.
    pub filtered_entries: u64,
    /// Wall-clock time of the run in microseconds.
    pub elapsed_micros: u64,
}

impl CompactionStats {
    /// Adds the counters of `other` (another piece of the same task); the elapsed time is
    /// left to the caller, since pieces may run at once.
    pub fn add(&mut self, other: &CompactionStats) {
        self.input_entries += other.input_entries;
        self.input_bytes += other.input_bytes;
        self.level0_bytes += other.level0_bytes;
        self.output_entries += other.output_entries;
        self.output_bytes += other.output_bytes;
        self.dropped_entries += other.dropped_entries;
        self.filtered_entries += other.filtered_entries;
    }
}

/// What a finished compaction produced.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CompactionResult {
    /// The id of the task that ran.
    pub task_id: u64,
    /// The files written, in key order.
    pub outputs: Vec<FileMeta>,
    /// Counters.
    pub stats: CompactionStats,
    /// Where and how each piece ran (one record, or one per piece of a task an executor
    /// cut further). Absent from results of older runners: empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<RunRecord>,
}

/// The JSON envelope: a format version next to the payload.
#[derive(serde::Serialize, serde::Deserialize)]
struct Envelope<T> {
    format_version: u32,
    #[serde(flatten)]
    body: T,
}

#[derive(serde::Deserialize)]
struct VersionOnly {
    format_version: u32,
}

fn encode<T: serde::Serialize>(body: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(&Envelope {
        format_version: TASK_FORMAT_VERSION,
        body,
    })
    .map_err(|e| Error::Internal(format!("cannot encode compaction data: {e}")))
}

fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8], what: &str) -> Result<T> {
    let corrupt = |e: serde_json::Error| {
        Error::corruption(
            what,
            byte_offset(bytes, e.line(), e.column()),
            e.to_string(),
        )
    };
    let version: VersionOnly = serde_json::from_slice(bytes).map_err(corrupt)?;
    if version.format_version != TASK_FORMAT_VERSION {
        return Err(Error::Unsupported(format!(
            "{what} format version {} (this build reads {TASK_FORMAT_VERSION})",
            version.format_version
        )));
    }
    let env: Envelope<T> = serde_json::from_slice(bytes).map_err(corrupt)?;
    Ok(env.body)
}

/// Converts serde_json's 1-based line and column into a byte offset.
fn byte_offset(bytes: &[u8], line: usize, column: usize) -> u64 {
    let line_start: usize = bytes
        .split_inclusive(|b| *b == b'\n')
        .take(line.saturating_sub(1))
        .map(<[u8]>::len)
        .sum();
    (line_start + column.saturating_sub(1)) as u64
}

impl CompactionTask {
    /// The task as JSON (docs/formats/compaction-task.md).
    ///
    /// # Errors
    /// `Error::InvalidArgument` if serialization fails (it does not for valid tasks).
    pub fn encode(&self) -> Result<Vec<u8>> {
        encode(self)
    }

    /// Reads a task written by [`CompactionTask::encode`].
    ///
    /// # Errors
    /// `Error::Corruption` (file `compaction-task`, byte offset of the problem) for bytes
    /// that are not a task; `Error::Unsupported` for another format version.
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        decode(bytes, "compaction-task")
    }

    /// Every input file, newest level first.
    pub fn input_files(&self) -> impl Iterator<Item = &FileMeta> {
        self.inputs.iter().flat_map(|l| l.files.iter())
    }

    /// Cuts the task at `boundaries` (user keys, any order) into key-range subtasks
    /// `[smallest, b1), [b1, b2), ..., [bn, largest)`. Boundaries outside the task's own
    /// range, or repeated, are ignored, and so are pieces that no input file overlaps; a
    /// task that does not split comes back whole, and so does one with fewer reserved file
    /// numbers than pieces. Each subtask keeps only the input files
    /// that overlap its range (a file may serve several) and takes an equal share (earlier subtasks one more when it
    /// does not divide) of the pre-allocated file numbers, in order: the caller allocates
    /// enough numbers for every subtask.
    pub fn split(&self, boundaries: &[Vec<u8>]) -> Vec<CompactionTask> {
        let lo = self.smallest_user_key.as_deref();
        let hi = self.largest_user_key.as_deref();
        let mut cuts: Vec<&[u8]> = boundaries
            .iter()
            .map(Vec::as_slice)
            .filter(|b| lo.is_none_or(|l| *b > l) && hi.is_none_or(|h| *b < h))
            .collect();
        cuts.sort_unstable();
        cuts.dedup();
        let mut bounds: Vec<Option<&[u8]>> = Vec::with_capacity(cuts.len() + 2);
        bounds.push(lo);
        bounds.extend(cuts.iter().map(|c| Some(*c)));
        bounds.push(hi);

        // Pieces with no input file or level-0 unit have nothing to compact.
        let units = self.level0.as_ref().map_or(&[][..], |c| c.units.as_slice());
        let pieces: Vec<KeyRange<'_>> = bounds
            .windows(2)
            .filter_map(|w| match w {
                [s, e] => Some((*s, *e)),
                _ => None,
            })
            .filter(|(s, e)| {
                self.input_files().any(|f| overlaps_half_open(f, *s, *e))
                    || units.iter().any(|u| u.overlaps_half_open(*s, *e))
            })
            .collect();
        let numbers = &self.output.file_numbers;
        // Every piece needs a reserved number for its first output: a task with fewer
        // numbers than pieces is not split.
        if pieces.len() <= 1 || numbers.len() < pieces.len() {
            return vec![self.clone()];
        }
        let (share, extra) = (numbers.len() / pieces.len(), numbers.len() % pieces.len());
        let mut next_number = 0;
        let mut out = Vec::with_capacity(pieces.len());
        for (i, (start, end)) in pieces.into_iter().enumerate() {
            let take = share + usize::from(i < extra);
            let mut sub = self.clone();
            sub.smallest_user_key = start.map(<[u8]>::to_vec);
            sub.largest_user_key = end.map(<[u8]>::to_vec);
            sub.output.file_numbers = numbers
                .iter()
                .skip(next_number)
                .take(take)
                .copied()
                .collect();
            next_number += take;
            for level in &mut sub.inputs {
                level.files.retain(|f| overlaps_half_open(f, start, end));
            }
            sub.inputs.retain(|l| !l.files.is_empty());
            out.push(sub);
        }
        out
    }
}

/// A half-open user-key range; `None` is unbounded.
type KeyRange<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

/// True if `f` may hold a user key in `[start, end)`.
fn overlaps_half_open(f: &FileMeta, start: Option<&[u8]>, end: Option<&[u8]>) -> bool {
    start.is_none_or(|s| f.largest_user_key() >= s) && end.is_none_or(|e| f.smallest_user_key() < e)
}

impl CompactionResult {
    /// The result as JSON (docs/formats/compaction-task.md).
    ///
    /// # Errors
    /// `Error::InvalidArgument` if serialization fails (it does not for valid results).
    pub fn encode(&self) -> Result<Vec<u8>> {
        encode(self)
    }

    /// Reads a result written by [`CompactionResult::encode`].
    ///
    /// # Errors
    /// `Error::Corruption` (file `compaction-result`) for bytes that are not a result;
    /// `Error::Unsupported` for another format version.
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        decode(bytes, "compaction-result")
    }
}

#[cfg(test)]
mod tests;
