//! The pipelined executor (CoPro's read / merge / write pipeline, docs/techniques/copro.md):
//! one task runs as three stages on three threads joined by bounded queues, so that one
//! stage's I/O waits overlap another's work:
//! - read: the inputs' iterators merged into internal-key order (reading and decoding
//!   blocks), shipped in batches;
//! - merge: the compaction stream (visibility against snapshots, tombstones, the filter)
//!   over those batches, its surviving entries shipped in batches;
//! - write: the output tables (blocks, compression, filters, checksums), cut at the
//!   target size exactly as the linear executor cuts them.
//!
//! A full queue stops the stage before it (back-pressure), so memory stays at a few
//! batches per queue whatever the task's size. The outputs are byte for byte those of
//! [`execute`](super::execute): the same entries reach the same writer in the same order.
//!
//! Owns: the stages, the batches and the queues. Must not touch: what survives (the
//! stream) or how tables are cut (the output writer); both are shared with the linear
//! executor.

use std::sync::atomic::Ordering;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::time::Instant;

use super::{result, stream_config, CompactionExecutor, ExecutorEnv, Inputs, OutputWriter, Run};
use crate::compaction::metrics::{thread_cpu_micros, RunMode};
use crate::compaction::stream::CompactionStream;
use crate::compaction::{CompactionResult, CompactionTask};
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{self, MAX_SEQ};
use crate::merge::MergingIterator;

/// A batch is shipped once it holds this many key and value bytes.
const BATCH_BYTES: usize = 128 << 10;
/// Batches a queue holds before the stage feeding it waits.
const QUEUE_BATCHES: usize = 4;

/// The executor that runs each task as a read / merge / write pipeline on three threads.
#[derive(Debug, Clone, Copy, Default)]
pub struct PipelinedExecutor;

impl CompactionExecutor for PipelinedExecutor {
    fn name(&self) -> &str {
        "pipelined"
    }

    fn execute(&self, task: &CompactionTask, env: &ExecutorEnv<'_>) -> Result<CompactionResult> {
        execute_pipelined(task, env)
    }
}

/// Entries in one buffer: keys and values back to back, with their end offsets.
#[derive(Default)]
struct Batch {
    data: Vec<u8>,
    /// Per entry: where its key ends (its value starts) and where its value ends.
    ends: Vec<(usize, usize)>,
}

impl Batch {
    fn push(&mut self, key: &[u8], value: &[u8]) {
        self.data.extend_from_slice(key);
        let key_end = self.data.len();
        self.data.extend_from_slice(value);
        self.ends.push((key_end, self.data.len()));
    }

    fn full(&self) -> bool {
        self.data.len() >= BATCH_BYTES
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    /// Entry `i` as (key, value); empty slices past the end.
    fn get(&self, i: usize) -> (&[u8], &[u8]) {
        let start = match i.checked_sub(1) {
            Some(p) => self.ends.get(p).map_or(0, |e| e.1),
            None => 0,
        };
        match self.ends.get(i) {
            Some(&(k, v)) => (
                self.data.get(start..k).unwrap_or_default(),
                self.data.get(k..v).unwrap_or_default(),
            ),
            None => (&[], &[]),
        }
    }

    fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        (0..self.len()).map(|i| self.get(i))
    }
}

/// Runs `task` as a pipeline; see the module documentation.
///
/// # Errors
/// Those of [`execute`](super::execute), from whichever stage met them first; a stage
/// that panics is reported as `Internal`.
pub fn execute_pipelined(task: &CompactionTask, env: &ExecutorEnv<'_>) -> Result<CompactionResult> {
    let started = Instant::now();
    let cpu_started = thread_cpu_micros();
    let mut inputs = Inputs::open(task, env)?;
    let lower = task.smallest_user_key.clone();
    let upper = task.largest_user_key.clone();
    let (read_tx, read_rx) = sync_channel::<Result<Batch>>(QUEUE_BATCHES);
    let (merged_tx, merged_rx) = sync_channel::<Batch>(QUEUE_BATCHES);
    let merged = MergingIterator::new(std::mem::take(&mut inputs.children));
    let kept = &inputs.kept_tombstones;
    // The stage threads are new: their CPU clocks count only their stage.
    let (outputs, counters, stage_cpu) = std::thread::scope(|s| {
        let reader = s.spawn(move || {
            read_stage(merged, lower, upper, &read_tx);
            thread_cpu_micros()
        });
        let writer = s.spawn(move || {
            let written = write_stage(env, task, kept, &merged_rx);
            (written, thread_cpu_micros())
        });
        let mut received = Received::new(read_rx);
        let mut stream = CompactionStream::new(
            &mut received,
            &inputs.fragmented,
            stream_config(task, inputs.filter.as_deref()),
        );
        let merged = merge_stage(&mut stream, &merged_tx);
        let counters = stream.counters();
        drop(merged_tx);
        // The writer's error explains a merge stage stopped by a closed queue; otherwise
        // the merge stage's own error (a read error comes through it) comes first.
        let (written, write_cpu) = writer
            .join()
            .unwrap_or_else(|_| (Err(panicked("write")), 0));
        drop(stream);
        drop(received);
        let read_cpu = reader.join().map_err(|_| panicked("read"));
        let outputs = match (merged, written) {
            (Err(e), _) | (Ok(true), Err(e)) => Err(e),
            (Ok(_), written) => written,
        };
        let read_cpu = read_cpu?;
        Ok::<_, Error>((outputs?, counters, read_cpu + write_cpu))
    })?;
    let level0_bytes = inputs.level0_bytes.load(Ordering::Relaxed);
    Ok(result(
        task,
        counters,
        inputs.table_bytes(),
        level0_bytes,
        outputs,
        Run {
            mode: RunMode::Pipelined,
            started,
            cpu_micros: thread_cpu_micros().saturating_sub(cpu_started) + stage_cpu,
        },
    ))
}

fn panicked(stage: &str) -> Error {
    Error::Internal(format!("the compaction pipeline's {stage} stage panicked"))
}

/// Reads the merged inputs from the task's lower bound up to the first key at or past its
/// upper bound, in batches. A read error is shipped to the merge stage, which reports it;
/// a closed queue (the merge stage stopped) ends the stage quietly.
fn read_stage(
    mut input: MergingIterator,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    out: &SyncSender<Result<Batch>>,
) {
    let mut run = || -> Result<()> {
        match &lower {
            Some(lo) => input.seek(&key::seek_key(lo, MAX_SEQ))?,
            None => input.seek_to_first()?,
        }
        let mut batch = Batch::default();
        while input.valid() {
            let k = input.key();
            // The merge stage stops at the first key at or past the bound; it needs no more.
            if upper.as_deref().is_some_and(|u| key::user_key(k) >= u) {
                batch.push(k, input.value());
                break;
            }
            batch.push(k, input.value());
            if batch.full() && out.send(Ok(std::mem::take(&mut batch))).is_err() {
                return Ok(());
            }
            input.next()?;
        }
        if batch.len() > 0 {
            let _ = out.send(Ok(batch));
        }
        Ok(())
    };
    if let Err(e) = run() {
        let _ = out.send(Err(e));
    }
}

/// Runs the stream and ships what survives. Returns whether it stopped because the write
/// stage closed its queue (the write stage's error then says why).
fn merge_stage(stream: &mut CompactionStream<'_>, out: &SyncSender<Batch>) -> Result<bool> {
    let mut batch = Batch::default();
    while let Some((k, v)) = stream.next_entry()? {
        batch.push(k, v);
        if batch.full() && out.send(std::mem::take(&mut batch)).is_err() {
            return Ok(true);
        }
    }
    if batch.len() > 0 && out.send(batch).is_err() {
        return Ok(true);
    }
    Ok(false)
}

/// Writes the entries it receives into output tables, as the linear executor does.
fn write_stage(
    env: &ExecutorEnv<'_>,
    task: &CompactionTask,
    kept: &crate::range_del::FragmentedTombstones,
    input: &Receiver<Batch>,
) -> Result<Vec<crate::version::FileMeta>> {
    let mut writer = OutputWriter::new(env, task, kept);
    for batch in input {
        for (k, v) in batch.iter() {
            writer.add(k, v)?;
        }
    }
    writer.finish()
}

/// The read stage's batches as a forward-only iterator for the compaction stream. The
/// read stage has already positioned at the task's lower bound, so a seek moves forward
/// to its target; backward movement is an internal error.
struct Received {
    input: Receiver<Result<Batch>>,
    batch: Batch,
    pos: usize,
    done: bool,
}

impl Received {
    fn new(input: Receiver<Result<Batch>>) -> Self {
        Received {
            input,
            batch: Batch::default(),
            pos: 0,
            done: false,
        }
    }

    /// Makes `pos` point into a batch, receiving the next one when needed.
    fn fill(&mut self) -> Result<()> {
        while !self.done && self.pos >= self.batch.len() {
            match self.input.recv() {
                Ok(batch) => {
                    self.batch = batch?;
                    self.pos = 0;
                }
                Err(_) => self.done = true,
            }
        }
        Ok(())
    }

    fn backwards() -> Error {
        Error::Internal("the compaction pipeline reads forward only".into())
    }
}

impl InternalIterator for Received {
    fn valid(&self) -> bool {
        self.pos < self.batch.len()
    }

    fn seek_to_first(&mut self) -> Result<()> {
        self.fill()
    }

    fn seek_to_last(&mut self) -> Result<()> {
        Err(Self::backwards())
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.fill()?;
        while self.valid() && key::compare(self.key(), target).is_lt() {
            self.next()?;
        }
        Ok(())
    }

    fn seek_for_prev(&mut self, _target: &[u8]) -> Result<()> {
        Err(Self::backwards())
    }

    fn next(&mut self) -> Result<()> {
        self.pos += 1;
        self.fill()
    }

    fn prev(&mut self) -> Result<()> {
        Err(Self::backwards())
    }

    fn key(&self) -> &[u8] {
        self.batch.get(self.pos).0
    }

    fn value(&self) -> &[u8] {
        self.batch.get(self.pos).1
    }
}

#[cfg(test)]
mod tests;
