//! Executing one compaction (sub)task from its plain description.
//!
//! Everything the task needs is in [`CompactionTask`] plus an [`ExecutorEnv`] giving access
//! to storage, so the same function can run on a background thread, on a subcompaction
//! thread, or (later) in a worker process next to the data.

mod counting;
mod pipeline;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use counting::{CountingIterator, Weight};
pub use pipeline::{execute_pipelined, PipelinedExecutor};

use super::filter::CompactionFilter;
use super::metrics::{thread_cpu_micros, RunMode, RunRecord, HOST};
use super::stream::{tombstones_to_keep, CompactionStream, StreamConfig, StreamCounters};
use super::takeover::{FinishedOutput, ProgressSink};
use super::{
    CompactionResult, CompactionStats, CompactionTask, FilterRegistry, Level0Input, Trust,
};
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{self, MAX_SEQ};
use crate::merge::MergingIterator;
use crate::range_del::{FragmentedTombstones, RangeTombstone};
use crate::sst::{SstBuilder, SstInfo, SstOptions};
use crate::storage::{IoClass, Storage};
use crate::tables::Tables;
use crate::version::FileMeta;

/// Opens a level-0 input that is not a table file ([`Level0Input`]): the level 0 of the
/// host that described it (the matrix level 0) implements it.
pub trait Level0Source: Send + Sync {
    /// Adds an iterator over each unit of `input` and every range tombstone they hold.
    /// Entries outside the task's range may be included: the compaction stream keeps
    /// only its range, and the executor counts what it reads of the range itself.
    ///
    /// # Errors
    /// `Corruption` if a unit is not the one the input describes; `InvalidArgument` if
    /// the input is not of this level 0 or a unit is not live in this host.
    fn open_input(
        &self,
        input: &Level0Input,
        out: &mut Vec<Box<dyn InternalIterator>>,
        tombstones: &mut Vec<RangeTombstone>,
    ) -> Result<()>;
}

/// Runs compaction tasks: where and how a task's merge happens. The database hands every
/// (sub)task to its executor (`Options::compaction_executor`) and installs what comes back
/// through `compaction::checked_edit`; an executor that is not [`Trust::Local`] has each
/// result checked in full, and a task it fails or answers wrongly runs again on this host
/// with [`LinearExecutor`].
pub trait CompactionExecutor: Send + Sync {
    /// A short name for logs and statistics.
    fn name(&self) -> &str;

    /// How far its results are taken on its word.
    fn trust(&self) -> Trust {
        Trust::Local
    }

    /// Runs `task`. `env` gives this host's storage, tables, filters and level 0; an
    /// executor that runs elsewhere may use only what the task describes.
    ///
    /// # Errors
    /// Whatever prevented the task from finishing; the database then falls back or
    /// reports it as a background error.
    fn execute(&self, task: &CompactionTask, env: &ExecutorEnv<'_>) -> Result<CompactionResult>;
}

/// The executor that reads, merges and writes in turn on the calling thread ([`execute`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct LinearExecutor;

impl CompactionExecutor for LinearExecutor {
    fn name(&self) -> &str {
        "linear"
    }

    fn execute(&self, task: &CompactionTask, env: &ExecutorEnv<'_>) -> Result<CompactionResult> {
        execute(task, env)
    }
}

/// What an executor needs from its host.
pub struct ExecutorEnv<'a> {
    /// The storage holding inputs and receiving outputs.
    pub storage: &'a dyn Storage,
    /// The table files: volume directories and open readers.
    pub tables: &'a Tables,
    /// Compaction filters by name.
    pub filters: &'a FilterRegistry,
    /// Opens level-0 inputs that are not table files; `None` where the level 0 has none.
    pub level0: Option<&'a dyn Level0Source>,
    /// Told of each output file as it is finished (`compaction::takeover`); `None`: no
    /// one asks.
    pub progress: Option<&'a dyn ProgressSink>,
}

/// The manifest's record of a finished table.
pub(crate) fn file_meta(number: u64, volume: u32, info: &SstInfo) -> FileMeta {
    FileMeta {
        number,
        volume,
        size: info.file_size,
        smallest: info.smallest.clone(),
        largest: info.largest.clone(),
        smallest_seq: info.smallest_seq,
        largest_seq: info.largest_seq,
        num_entries: info.num_entries,
        num_deletions: info.num_deletions,
        num_range_deletions: info.num_range_deletions,
        file_checksum: info.file_checksum,
        replicas: Vec::new(),
    }
}

/// Writes output tables, cutting at the target size on user-key changes while reserved
/// file numbers last.
struct OutputWriter<'a, 'e> {
    env: &'e ExecutorEnv<'e>,
    task: &'a CompactionTask,
    tombstones: &'a FragmentedTombstones,
    next_number: usize,
    current: Option<OpenOutput>,
    next_lower: Option<Vec<u8>>,
    last_user_key: Vec<u8>,
    outputs: Vec<FileMeta>,
    /// The volumes written to, whose directories `finish` syncs.
    volumes_used: Vec<u32>,
}

/// The output table being written.
struct OpenOutput {
    builder: SstBuilder,
    number: u64,
    volume: u32,
    /// Its lower bound (inclusive user key), for clipping tombstones.
    lower: Option<Vec<u8>>,
}

/// The largest user key an output table starting at `first` is expected to reach, for a
/// placement policy that must choose its volume before its last key is known: the end of
/// the first input file of the output level that ends at or after `first` (outputs come
/// out about as large as the output level's files they replace), else of the first such
/// file of the other inputs, else `first` itself.
fn predicted_end<'t>(task: &'t CompactionTask, first: &'t [u8]) -> &'t [u8] {
    task.inputs
        .iter()
        .rev()
        .find_map(|level| {
            level
                .files
                .iter()
                .map(FileMeta::largest_user_key)
                .find(|&end| end >= first)
        })
        .unwrap_or(first)
}

impl<'a, 'e> OutputWriter<'a, 'e> {
    fn new(
        env: &'e ExecutorEnv<'e>,
        task: &'a CompactionTask,
        tombstones: &'a FragmentedTombstones,
    ) -> Self {
        OutputWriter {
            env,
            task,
            tombstones,
            next_number: 0,
            current: None,
            next_lower: task.smallest_user_key.clone(),
            last_user_key: Vec::new(),
            outputs: Vec::new(),
            volumes_used: Vec::new(),
        }
    }

    /// Closes the last table (a task whose only output is range tombstones still writes
    /// one) and syncs the directory; returns the tables written.
    fn finish(mut self) -> Result<Vec<FileMeta>> {
        if self.current.is_none() && self.outputs.is_empty() && !self.tombstones.is_empty() {
            let first = self.task.smallest_user_key.clone().unwrap_or_default();
            self.open_next(&first)?;
        }
        self.finish_current(self.task.largest_user_key.clone())?;
        // The files are synced; their names must be too before an edit refers to them.
        for &volume in &self.volumes_used {
            self.env.storage.sync_dir(&self.env.tables.dir(volume))?;
        }
        Ok(self.outputs)
    }

    /// Opens the next output table, whose first user key is `first`.
    fn open_next(&mut self, first: &[u8]) -> Result<()> {
        let number = *self
            .task
            .output
            .file_numbers
            .get(self.next_number)
            .ok_or_else(|| {
                Error::Internal("compaction ran out of pre-allocated file numbers".into())
            })?;
        let volume = match &self.task.output.placement {
            Some(plan) => {
                let placed: Vec<u32> = self.outputs.iter().map(|f| f.volume).collect();
                plan.choose(&placed, number, first, predicted_end(self.task, first))
            }
            None => self.task.output.volume,
        };
        self.next_number += 1;
        if !self.volumes_used.contains(&volume) {
            self.volumes_used.push(volume);
        }
        let path = self.env.tables.path(volume, number);
        let file = self.env.storage.create(&path, IoClass::Compaction)?;
        let opts = SstOptions {
            block_size: usize::try_from(self.task.output.block_size).unwrap_or(usize::MAX),
            restart_interval: self.task.output.restart_interval as usize,
            bloom_bits_per_key: self.task.output.bloom_bits_per_key as usize,
            compression: self.task.output.compression,
        };
        self.current = Some(OpenOutput {
            builder: self
                .env
                .tables
                .new_table_builder(SstBuilder::new(file, path, opts), number),
            number,
            volume,
            lower: self.next_lower.take(),
        });
        Ok(())
    }

    fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        let uk = key::user_key(ikey);
        let full = self
            .current
            .as_ref()
            .is_some_and(|o| o.builder.estimated_size() >= self.task.output.target_file_size);
        // With no reserved number left the open table grows past the target size instead:
        // reservations are estimates from the inputs' file sizes, and an oversized output
        // is better than a failed compaction (which stops the database).
        let number_left = self.next_number < self.task.output.file_numbers.len();
        if full && number_left && uk != self.last_user_key.as_slice() {
            self.finish_current(Some(uk.to_vec()))?;
        }
        if self.current.is_none() {
            self.open_next(uk)?;
        }
        if let Some(o) = self.current.as_mut() {
            o.builder.add(ikey, value)?;
        }
        self.last_user_key.clear();
        self.last_user_key.extend_from_slice(uk);
        Ok(())
    }

    /// Finishes the open table; its tombstones are clipped to `[its lower, upper)`.
    fn finish_current(&mut self, upper: Option<Vec<u8>>) -> Result<()> {
        let Some(OpenOutput {
            mut builder,
            number,
            volume,
            lower,
        }) = self.current.take()
        else {
            return Ok(());
        };
        for t in self.tombstones.clipped(lower.as_deref(), upper.as_deref()) {
            builder.add_range_tombstone(&t);
        }
        let info = builder.finish()?;
        let meta = file_meta(number, volume, &info);
        if let Some(progress) = self.env.progress {
            progress.finished(&FinishedOutput {
                file: meta.clone(),
                resume_from: upper.clone(),
            });
        }
        self.outputs.push(meta);
        self.next_lower = upper;
        Ok(())
    }
}

/// Runs `task` and returns its outputs. Output files and their directory are synced; the
/// caller installs them.
///
/// # Errors
/// I/O and corruption errors of inputs or outputs; `InvalidArgument` for a task that
/// names an unknown filter or reserves no output file number while it has output.
pub fn execute(task: &CompactionTask, env: &ExecutorEnv<'_>) -> Result<CompactionResult> {
    let started = Instant::now();
    let cpu_started = thread_cpu_micros();
    let mut inputs = Inputs::open(task, env)?;
    let mut merged = MergingIterator::new(std::mem::take(&mut inputs.children));
    let mut stream = CompactionStream::new(
        &mut merged,
        &inputs.fragmented,
        stream_config(task, inputs.filter.as_deref()),
    );
    let mut writer = OutputWriter::new(env, task, &inputs.kept_tombstones);
    while let Some((k, v)) = stream.next_entry()? {
        writer.add(k, v)?;
    }
    let outputs = writer.finish()?;
    let counters = stream.counters();
    let level0_bytes = inputs.level0_bytes.load(Ordering::Relaxed);
    Ok(result(
        task,
        counters,
        inputs.table_bytes(),
        level0_bytes,
        outputs,
        Run {
            mode: RunMode::Linear,
            started,
            cpu_micros: thread_cpu_micros().saturating_sub(cpu_started),
        },
    ))
}

/// The opened inputs of a task: one iterator per table file and level-0 unit, the range
/// tombstones in its range, and the filter.
struct Inputs {
    children: Vec<Box<dyn InternalIterator>>,
    fragmented: FragmentedTombstones,
    kept_tombstones: FragmentedTombstones,
    filter: Option<Box<dyn CompactionFilter>>,
    /// Per input table file: its size, its entries, and the entries read of it in the
    /// task's range (`None`: all of it).
    tables_read: Vec<(u64, u64, Option<Arc<AtomicU64>>)>,
    /// Key and value bytes read of a level-0 input within the task's range, counted as
    /// the merge reads them.
    level0_bytes: Arc<AtomicU64>,
}

impl Inputs {
    fn open(task: &CompactionTask, env: &ExecutorEnv<'_>) -> Result<Inputs> {
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        let mut tombs: Vec<RangeTombstone> = Vec::new();
        let mut tables_read = Vec::new();
        let lower = task.smallest_user_key.as_deref();
        let upper = task.largest_user_key.as_deref();
        // A subtask reads only its range of each file: count the entries it reads.
        let bounded = lower.is_some() || upper.is_some();
        for level in &task.inputs {
            for f in &level.files {
                let reader = env.tables.open(f)?;
                tombs.extend(reader.range_tombstones().iter().cloned());
                let it: Box<dyn InternalIterator> =
                    Box::new(reader.iter(IoClass::Compaction, false));
                if bounded {
                    let read = Arc::new(AtomicU64::new(0));
                    children.push(Box::new(CountingIterator::weighted(
                        it,
                        lower,
                        upper,
                        read.clone(),
                        Weight::Entries,
                    )));
                    tables_read.push((f.size, f.num_entries, Some(read)));
                } else {
                    children.push(it);
                    tables_read.push((f.size, f.num_entries, None));
                }
            }
        }
        let level0_bytes = Arc::new(AtomicU64::new(0));
        if let Some(input) = &task.level0 {
            let source = env.level0.ok_or_else(|| {
                Error::InvalidArgument(
                    "the task reads a level-0 input, but this host's level 0 has none".into(),
                )
            })?;
            let mut units: Vec<Box<dyn InternalIterator>> = Vec::new();
            source.open_input(input, &mut units, &mut tombs)?;
            // The input is read only within the task's range: count that part.
            children.extend(units.into_iter().map(|r| {
                Box::new(CountingIterator::new(r, lower, upper, level0_bytes.clone()))
                    as Box<dyn InternalIterator>
            }));
        }
        let in_range = |t: &RangeTombstone| {
            upper.is_none_or(|u| t.start.as_slice() < u)
                && lower.is_none_or(|l| t.end.as_slice() > l)
        };
        tombs.retain(|t| in_range(t));
        let fragmented = FragmentedTombstones::new(&tombs, MAX_SEQ);
        let filter = match &task.filter {
            Some(spec) => Some(env.filters.create_from_spec(spec)?),
            None => None,
        };
        let kept_tombstones = tombstones_to_keep(&fragmented, &task.snapshots, task.bottommost);
        Ok(Inputs {
            children,
            fragmented,
            kept_tombstones,
            filter,
            tables_read,
            level0_bytes,
        })
    }

    /// Bytes of the input table files read: each file's size, or for a subtask the share
    /// of its size that its entries read in the range make up.
    fn table_bytes(&self) -> u64 {
        self.tables_read
            .iter()
            .map(|(size, entries, read)| match read {
                None => *size,
                Some(read) => {
                    let read = read.load(Ordering::Relaxed).min(*entries);
                    (*size as u128 * read as u128 / (*entries).max(1) as u128) as u64
                }
            })
            .sum()
    }
}

fn stream_config<'a>(
    task: &'a CompactionTask,
    filter: Option<&'a dyn CompactionFilter>,
) -> StreamConfig<'a> {
    StreamConfig {
        snapshots: &task.snapshots,
        bottommost: task.bottommost,
        filter,
        output_level: task.output_level as usize,
        lower_bound: task.smallest_user_key.as_deref(),
        upper_bound: task.largest_user_key.as_deref(),
    }
}

/// How a run on this host went, for its [`RunRecord`].
struct Run {
    mode: RunMode,
    started: Instant,
    /// CPU time of every thread of the run.
    cpu_micros: u64,
}

/// The result of a finished run. Bytes as files: what was read from and written to
/// storage; of a level-0 input, the key and value bytes of its entries in the task's range.
fn result(
    task: &CompactionTask,
    counters: StreamCounters,
    table_bytes: u64,
    level0_bytes: u64,
    outputs: Vec<FileMeta>,
    run: Run,
) -> CompactionResult {
    let mut stats = CompactionStats::default();
    counters.add_to(&mut stats);
    stats.level0_bytes = level0_bytes;
    stats.input_bytes = table_bytes + level0_bytes;
    stats.output_bytes = outputs.iter().map(|f| f.size).sum();
    stats.elapsed_micros = run.started.elapsed().as_micros() as u64;
    let record = RunRecord {
        unit: HOST.to_string(),
        mode: run.mode,
        input_bytes: stats.input_bytes,
        output_bytes: stats.output_bytes,
        elapsed_micros: stats.elapsed_micros,
        cpu_micros: run.cpu_micros,
        fallback_for: None,
        kept_outputs: 0,
    };
    CompactionResult {
        task_id: task.id,
        stats,
        outputs,
        runs: vec![record],
    }
}
