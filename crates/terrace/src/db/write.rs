//! The write path: group commit, write stalls and memtable switches.
//!
//! Writers queue up; the writer at the front becomes the leader, takes the queued batches
//! (up to a size limit, never mixing WAL and no-WAL writes or pulling a sync write into a
//! non-sync group), writes them to the WAL as one record with at most one sync, and has
//! them inserted into the memtable: with `allow_concurrent_memtable_write`, each follower
//! inserts its own batch while the leader inserts its own (the memtable takes concurrent
//! writers), otherwise the leader inserts them all. Only when every insert is done does
//! the leader publish the group's sequence numbers and wake the followers with the shared
//! result. Writes made
//! durable by an external log (`Db::write_external`) group only with each other: instead
//! of a WAL record, each one's own `persist` runs with its sequence numbers, and each
//! writer gets its own result (one failed persist fails only its writer).

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::{write_delay, DbInner, DbState, ImmMemTable, WalState};
use crate::batch::{BatchOp, WriteBatch};
use crate::error::{Error, Result};
use crate::key::ValueType;
use crate::level0::Backpressure;

/// A stop of the writers longer than this is logged (when it crosses it and when it ends).
const LONG_STOP: Duration = Duration::from_secs(1);
use crate::memtable::MemTable;
use crate::options::WriteOptions;

/// Fewest entries the followers of a group must bring for them to insert their own
/// batches: below it the leader inserts the group as one sorted batch, cheaper than
/// waking the followers to do it (a wake-up takes longer than inserting a few entries).
const CONCURRENT_MIN_ENTRIES: u64 = 16;

/// Largest group a leader assembles, in batch bytes.
const MAX_GROUP_BYTES: usize = 1 << 20;

/// How full (numerator, denominator) the active memtable is when a background thread is
/// asked to sync its log ahead of the switch (`DbInner::ask_presync`): late enough that
/// the sync covers most of the log, early enough that it is done before the switch.
const PRESYNC_AT: (usize, usize) = (7, 8);

/// What makes an external write durable, given its first sequence number.
pub(crate) type Persist = Box<dyn FnOnce(u64) -> Result<()> + Send>;

struct Writer {
    /// Locked only by the group's leader (never contended): it lets the leader stamp a
    /// lone batch's sequence number in place instead of copying it.
    batch: Mutex<WriteBatch>,
    opts: WriteOptions,
    /// An external write's persist step (taken by its leader, itself).
    persist: Mutex<Option<Persist>>,
    /// True for an external write: grouped only with other external writes.
    external: bool,
    /// Set by the leader: the writer's first sequence number for an external write, 0
    /// otherwise.
    result: Mutex<Option<Result<u64>>>,
    /// Set by the leader of a concurrent insert: where to insert this writer's batch.
    job: Mutex<Option<InsertJob>>,
}

/// A follower's share of a concurrent memtable insert.
struct InsertJob {
    mem: Arc<MemTable>,
    /// The batch's first sequence number.
    first_seq: u64,
    group: Arc<GroupInserts>,
}

/// The inserts of one group still running, and what they found.
struct GroupInserts {
    state: Mutex<GroupInsertState>,
    done: Condvar,
}

struct GroupInsertState {
    running: usize,
    user_bytes: u64,
    error: Option<Error>,
}

impl GroupInserts {
    fn new(running: usize) -> Self {
        GroupInserts {
            state: Mutex::new(GroupInsertState {
                running,
                user_bytes: 0,
                error: None,
            }),
            done: Condvar::new(),
        }
    }

    /// Records one insert's outcome.
    fn finish(&self, r: Result<u64>) {
        let mut st = self.state.lock();
        match r {
            Ok(bytes) => st.user_bytes += bytes,
            Err(e) => {
                st.error.get_or_insert(e);
            }
        }
        st.running -= 1;
        if st.running == 0 {
            self.done.notify_one();
        }
    }

    /// Waits for every insert; returns their user bytes or the first error.
    fn wait(&self) -> Result<u64> {
        let mut st = self.state.lock();
        while st.running > 0 {
            self.done.wait(&mut st);
        }
        match st.error.take() {
            Some(e) => Err(e),
            None => Ok(st.user_bytes),
        }
    }
}

/// Writers waiting for their batch to be committed.
#[derive(Default)]
pub(crate) struct WriteQueue {
    queue: Mutex<VecDeque<Arc<Writer>>>,
    cv: Condvar,
}

impl DbInner {
    pub(crate) fn write(&self, batch: WriteBatch, opts: WriteOptions) -> Result<()> {
        self.write_as(batch, opts, None).map(|_| ())
    }

    /// A write made durable by `persist` (`Db::write_external`); returns its first
    /// sequence number.
    pub(crate) fn write_external(&self, batch: WriteBatch, persist: Persist) -> Result<u64> {
        self.write_as(batch, WriteOptions::default(), Some(persist))
    }

    /// Queues a write, leads its group when it reaches the front, and returns its
    /// result: the write's first sequence number for an external write, else 0.
    fn write_as(
        &self,
        batch: WriteBatch,
        opts: WriteOptions,
        persist: Option<Persist>,
    ) -> Result<u64> {
        let start = self.opts.latency_stats.then(Instant::now);
        let me = Arc::new(Writer {
            batch: Mutex::new(batch),
            opts,
            external: persist.is_some(),
            persist: Mutex::new(persist),
            result: Mutex::new(None),
            job: Mutex::new(None),
        });
        let mut q = self.writers.queue.lock();
        q.push_back(me.clone());
        loop {
            let job = me.job.lock().take();
            if let Some(job) = job {
                // The leader logged this batch and wants it inserted: do it unlocked,
                // alongside the rest of the group, then wait for the group's result.
                drop(q);
                let r = insert_into_memtable(&job.mem, &me.batch.lock(), job.first_seq);
                job.group.finish(r);
                q = self.writers.queue.lock();
                continue;
            }
            if let Some(r) = me.result.lock().take() {
                drop(q);
                self.record_write_latency(start);
                return r;
            }
            if q.front().is_some_and(|f| Arc::ptr_eq(f, &me)) {
                break;
            }
            self.writers.cv.wait(&mut q);
        }
        // The followers joining this group; usually none, so no allocation.
        let mut followers: Vec<Arc<Writer>> = Vec::new();
        let mut bytes = me.batch.lock().approximate_size();
        for w in q.iter().skip(1) {
            if me.external != w.external
                || bytes >= MAX_GROUP_BYTES
                || w.opts.disable_wal != me.opts.disable_wal
                || (w.opts.sync && !me.opts.sync)
            {
                break;
            }
            bytes += w.batch.lock().approximate_size();
            followers.push(w.clone());
        }
        drop(q);

        if !followers.is_empty() {
            followers.insert(0, me.clone());
        }
        let group: &[Arc<Writer>] = if followers.is_empty() {
            std::slice::from_ref(&me)
        } else {
            &followers
        };
        let r = if me.external {
            let mut results = self.write_external_group(group, bytes).into_iter();
            let mine = results.next().unwrap_or(Ok(0));
            for (w, result) in group.iter().skip(1).zip(results) {
                *w.result.lock() = Some(result);
            }
            mine
        } else {
            let r = self.write_group(group, me.opts, bytes);
            for w in group.iter().skip(1) {
                *w.result.lock() = Some(r.clone().map(|_| 0));
            }
            r.map(|_| 0)
        };

        let mut q = self.writers.queue.lock();
        q.pop_front();
        for _ in group.iter().skip(1) {
            q.pop_front();
        }
        self.writers.cv.notify_all();
        drop(q);
        self.record_write_latency(start);
        r
    }

    /// Records a write's latency if it was timed (`Options::latency_stats`).
    fn record_write_latency(&self, start: Option<Instant>) {
        if let Some(start) = start {
            self.counters
                .record_write(start.elapsed().as_micros() as u64);
        }
    }

    /// Commits `group` (led by its first writer); returns its first sequence number.
    fn write_group(&self, group: &[Arc<Writer>], opts: WriteOptions, bytes: usize) -> Result<u64> {
        let mut wal = self.wal.lock();
        self.make_room_for_write(&mut wal, bytes)?;
        let sv = self.super_version();
        let first_seq = self.last_seq.load(Ordering::Acquire) + 1;
        let mut own;
        let mut combined;
        // Entries the followers bring (none in a group of one).
        let mut followers_entries = 0u64;
        let batch: &WriteBatch = match group {
            [single] => {
                own = single.batch.lock();
                own.set_sequence(first_seq);
                &own
            }
            _ => {
                combined = WriteBatch::with_capacity(bytes);
                for (i, w) in group.iter().enumerate() {
                    let b = w.batch.lock();
                    if i > 0 {
                        followers_entries += u64::from(b.count());
                    }
                    combined.append(&b);
                }
                combined.set_sequence(first_seq);
                &combined
            }
        };
        let count = u64::from(batch.count());
        if count == 0 {
            return Ok(first_seq);
        }
        if !opts.disable_wal {
            let r = wal.log.add_record(batch.data()).and_then(|()| {
                if opts.sync {
                    wal.log.sync()
                } else {
                    wal.log.flush()
                }
            });
            if let Err(e) = r {
                let mut st = self.state.lock();
                self.set_bg_error(&mut st, e.clone());
                return Err(e);
            }
            super::stats::add(&self.counters.wal_bytes, batch.data().len() as u64);
        }
        let inserted = if self.opts.allow_concurrent_memtable_write
            && followers_entries >= CONCURRENT_MIN_ENTRIES
        {
            self.insert_concurrently(group, &sv.mem, first_seq)
        } else {
            match &self.opts.memtable_insert_helpers {
                Some(helpers) => {
                    insert_into_memtable_shared(&sv.mem, batch, first_seq, helpers.as_ref())
                }
                None => insert_into_memtable(&sv.mem, batch, first_seq),
            }
        };
        let user_bytes = match inserted {
            Ok(b) => b,
            Err(e) => {
                // The log holds the group but the memtable does not: no write may follow
                // (their sequence numbers would repeat the group's).
                let mut st = self.state.lock();
                self.set_bg_error(&mut st, e.clone());
                return Err(e);
            }
        };
        super::stats::add(&self.counters.user_bytes, user_bytes);
        self.last_seq
            .store(first_seq + count - 1, Ordering::Release);
        Ok(first_seq)
    }

    /// Has each writer of `group` insert its own batch into `mem`, the first at
    /// `first_seq` and each next one after the previous one's numbers; returns when all
    /// are done, with their user bytes or the first error. The caller, the leader, holds
    /// the WAL lock, so `mem` stays the active memtable.
    ///
    /// The leader hands each follower a job and wakes them, inserts its own batch, then
    /// takes back every job no follower has started (a follower still waking up would
    /// otherwise make the whole group wait for it) and inserts those too: the group is
    /// done no later than if the leader had inserted everything.
    fn insert_concurrently(
        &self,
        group: &[Arc<Writer>],
        mem: &Arc<MemTable>,
        first_seq: u64,
    ) -> Result<u64> {
        let Some((leader, followers)) = group.split_first() else {
            return Ok(0);
        };
        let inserts = Arc::new(GroupInserts::new(followers.len()));
        let mut next = first_seq + u64::from(leader.batch.lock().count());
        {
            // Under the queue lock: a follower looks for its job under it before it waits.
            let _q = self.writers.queue.lock();
            for w in followers {
                let seq = next;
                next += u64::from(w.batch.lock().count());
                *w.job.lock() = Some(InsertJob {
                    mem: Arc::clone(mem),
                    first_seq: seq,
                    group: Arc::clone(&inserts),
                });
            }
            self.writers.cv.notify_all();
        }
        let own = insert_into_memtable(mem, &leader.batch.lock(), first_seq);
        for w in followers {
            let job = w.job.lock().take();
            if let Some(job) = job {
                let r = insert_into_memtable(mem, &w.batch.lock(), job.first_seq);
                job.group.finish(r);
            }
        }
        let theirs = inserts.wait();
        Ok(own? + theirs?)
    }

    /// Commits a group of external writes: each gets its sequence numbers in queue
    /// order, its `persist` runs with them, and only a persisted write is inserted.
    /// Returns each writer's first sequence number or error. A failed persist leaves its
    /// numbers unused (it may have reached the external log before failing, so they are
    /// never given to another write).
    fn write_external_group(&self, group: &[Arc<Writer>], bytes: usize) -> Vec<Result<u64>> {
        let mut wal = self.wal.lock();
        if let Err(e) = self.make_room_for_write(&mut wal, bytes) {
            return vec![Err(e); group.len()];
        }
        let sv = self.super_version();
        let mut next = self.last_seq.load(Ordering::Acquire) + 1;
        let mut results = Vec::with_capacity(group.len());
        for w in group {
            let mut batch = w.batch.lock();
            let count = u64::from(batch.count());
            let seq = next;
            if count == 0 {
                results.push(Ok(seq));
                continue;
            }
            batch.set_sequence(seq);
            next += count;
            // Durable in the external log, with its sequence numbers, before it is
            // visible. A failure there is this writer's alone: nothing was applied.
            let persisted = match w.persist.lock().take() {
                Some(persist) => persist(seq),
                None => Err(Error::InvalidArgument(
                    "an external write without its persist step".into(),
                )),
            };
            let r = persisted.and_then(|()| {
                insert_into_memtable(&sv.mem, &batch, seq).inspect_err(|e| {
                    // Persisted but not applied: stop all writes, as for a log failure.
                    let mut st = self.state.lock();
                    self.set_bg_error(&mut st, e.clone());
                })
            });
            results.push(r.map(|user_bytes| {
                super::stats::add(&self.counters.user_bytes, user_bytes);
                seq
            }));
        }
        self.last_seq.store(next - 1, Ordering::Release);
        drop(wal);
        results
    }

    /// Waits out stalls and switches a full memtable. Called by the leader with the WAL lock.
    fn make_room_for_write(&self, wal: &mut WalState, bytes: usize) -> Result<()> {
        let mut allow_delay = true;
        wal.delay.record(Instant::now(), bytes);
        // When writes started to wait for room, and whether that was logged (a stop
        // longer than `LONG_STOP`: once when it crosses it, once when it ends).
        let mut stopped: Option<(Instant, bool)> = None;
        let mut st = self.state.lock();
        let r = self.make_room_locked(wal, bytes, &mut allow_delay, &mut stopped, &mut st);
        drop(st);
        if let Some((since, true)) = stopped {
            tracing::info!(
                waited_ms = since.elapsed().as_millis() as u64,
                "writes go on after a long stop"
            );
        }
        r
    }

    /// The loop of `make_room_for_write`, with the state lock held (released while it
    /// sleeps or waits).
    fn make_room_locked(
        &self,
        wal: &mut WalState,
        bytes: usize,
        allow_delay: &mut bool,
        stopped: &mut Option<(Instant, bool)>,
        st: &mut parking_lot::MutexGuard<'_, DbState>,
    ) -> Result<()> {
        loop {
            if let Some(e) = &st.bg_error {
                return Err(Error::Background(Arc::new(e.clone())));
            }
            if st.shutting_down {
                return Err(Error::Closed);
            }
            let pressure = self
                .level0
                .backpressure(&st.versions.current(), &self.level0_settings);
            let slower = match pressure {
                Backpressure::Slowdown => Some(write_delay::SLOWER),
                Backpressure::Ease => Some(write_delay::EASE),
                Backpressure::None | Backpressure::Stop => None,
            };
            if slower.is_none() {
                wal.delay.reset();
            }
            if let (true, Some(slower)) = (*allow_delay, slower) {
                *allow_delay = false;
                let version = st.versions.current();
                let debt = self.level0.size_bytes(&version);
                wal.delay
                    .observe(version.number(), debt, self.opts.delayed_write_rate, slower);
                let now = Instant::now();
                let wait = wal.delay.admit(now, bytes);
                if !wait.is_zero() {
                    parking_lot::MutexGuard::unlocked(st, || std::thread::sleep(wait));
                    self.record_stall(now);
                    continue;
                }
            }
            let usage = st.mem.approximate_memory_usage();
            if usage < self.opts.write_buffer_size && !st.mem.is_nearly_full() {
                self.ask_presync(st, usage);
                return Ok(());
            }
            if st.imms.len() + 1 >= self.opts.max_write_buffer_number
                || pressure == Backpressure::Stop
            {
                let t = Instant::now();
                let (since, logged) = stopped.get_or_insert((t, false));
                if !*logged && since.elapsed() >= LONG_STOP {
                    *logged = true;
                    tracing::warn!(
                        immutable_memtables = st.imms.len(),
                        level0 = ?pressure,
                        "writes stopped for over a second: waiting for flushes or compactions"
                    );
                }
                self.bg_work.notify_all();
                self.bg_done.wait_for(st, Duration::from_millis(100));
                self.record_stall(t);
                continue;
            }
            if let Err(e) = self.switch_memtable(st, wal) {
                self.set_bg_error(st, e.clone());
                return Err(e);
            }
        }
    }

    /// Once the active memtable is [`PRESYNC_AT`] full, asks a background thread (once
    /// per log) to sync the log outside its lock: the switch that follows must sync the
    /// log under the lock, holding every writer, and then has only the records since.
    fn ask_presync(&self, st: &mut DbState, usage: usize) {
        let (num, den) = PRESYNC_AT;
        if usage >= self.opts.write_buffer_size / den * num && st.presync_log != st.mem_wal_number {
            st.presync_log = st.mem_wal_number;
            st.presync_wanted = true;
            self.bg_work.notify_all();
        }
    }

    fn record_stall(&self, since: Instant) {
        super::stats::add(&self.counters.stall_count, 1);
        super::stats::add(
            &self.counters.stall_micros,
            since.elapsed().as_micros() as u64,
        );
    }

    /// Makes the active memtable immutable and starts a new WAL for its successor.
    pub(crate) fn switch_memtable(&self, st: &mut DbState, wal: &mut WalState) -> Result<()> {
        // The old log must be durable before writes go to the new one, so that a crash
        // never keeps later writes while losing earlier ones; and before the new log
        // exists, so that a crash during this sync leaves its torn tail in the newest
        // log, where recovery tolerates it, not in one followed by another.
        wal.log.sync()?;
        let number = self.open_new_log(st, wal)?;
        self.push_memtable(st, number);
        Ok(())
    }

    /// Creates the next log, makes its name durable and sends writes to it; returns its
    /// number. The current log is left as it is (synced or abandoned by the caller).
    pub(crate) fn open_new_log(&self, st: &mut DbState, wal: &mut WalState) -> Result<u64> {
        let number = st.versions.new_file_number();
        wal.log = Box::new(self.logs.create(self.storage.as_ref(), number)?);
        wal.number = number;
        Ok(number)
    }

    /// Makes the active memtable immutable and gives its successor the log `number`.
    pub(crate) fn push_memtable(&self, st: &mut DbState, number: u64) {
        let next = Arc::new(st.mem.successor(self.opts.write_buffer_size));
        let old = std::mem::replace(&mut st.mem, next);
        st.imms.push_back(ImmMemTable {
            mem: old,
            wal_number: st.mem_wal_number,
            flushing: false,
            built: None,
        });
        st.mem_wal_number = number;
        self.install_super_version(st);
        self.bg_work.notify_all();
    }
}

/// Inserts a batch whose first operation has sequence `first_seq`; returns user bytes.
pub(crate) fn insert_into_memtable(
    mem: &MemTable,
    batch: &WriteBatch,
    first_seq: u64,
) -> Result<u64> {
    insert_into_memtable_shared(mem, batch, first_seq, &crate::helpers::NoHelpers)
}

/// [`insert_into_memtable`], a large batch's insert shared with `helpers`
/// (`MemTable::add_batch_shared`).
pub(crate) fn insert_into_memtable_shared(
    mem: &MemTable,
    batch: &WriteBatch,
    first_seq: u64,
    helpers: &dyn crate::helpers::Helpers,
) -> Result<u64> {
    let mut bytes = 0u64;
    if batch.count() == 1 {
        // One operation: no vector, no sort.
        for (seq, op) in (first_seq..).zip(batch.iter()) {
            let Some((kind, key, value)) = op_parts(op?) else {
                continue;
            };
            mem.add(seq, kind, key, value);
            bytes += (key.len() + value.len()) as u64;
        }
        return inserted(mem, bytes);
    }
    let mut writes = Vec::with_capacity(batch.count() as usize);
    for (seq, op) in (first_seq..).zip(batch.iter()) {
        let Some((kind, key, value)) = op_parts(op?) else {
            continue;
        };
        bytes += (key.len() + value.len()) as u64;
        writes.push((seq, kind, key, value));
    }
    mem.add_batch_shared(&writes, helpers);
    inserted(mem, bytes)
}

/// `Ok(bytes)` unless the memtable could not store an entry.
fn inserted(mem: &MemTable, bytes: u64) -> Result<u64> {
    if mem.insert_failed() {
        return Err(Error::Internal(
            "memtable insert failed: its node arena ran out of block slots or memory, or a \
             helper did not complete its part"
                .into(),
        ));
    }
    Ok(bytes)
}

/// An operation as the memtable records it: type, key (or range start), value (or end).
/// `None` for an empty range deletion: it deletes nothing and takes its sequence number,
/// but no tombstone is kept (a table could not hold it).
fn op_parts(op: BatchOp<'_>) -> Option<(ValueType, &[u8], &[u8])> {
    match op {
        BatchOp::Put { key, value } => Some((ValueType::Value, key, value)),
        BatchOp::Delete { key } => Some((ValueType::Deletion, key, &[])),
        BatchOp::DeleteRange { start, end } if start >= end => None,
        BatchOp::DeleteRange { start, end } => Some((ValueType::RangeDeletion, start, end)),
    }
}
