//! Reader threads: a large batch of point reads (a group's GETs, the key count's reads of
//! a group's SET keys) is cut into chunks that the shard thread and the reader threads
//! take one at a time until none is left.
//!
//! Owns: the threads (started on first use and kept, so that a batch pays for a wake-up,
//! not for starting a thread and its fresh, zeroed heap pages) and the sharing of a
//! batch's chunks. Must not touch: what is read; the caller's closure reads.
//! Concurrency: the caller reads chunks itself from the start and never waits for a
//! reader thread that has not begun: once the chunks are gone it withdraws its offer, and
//! waits only for helpers already reading a chunk. So a batch never waits on a reader
//! thread that is asleep, descheduled or busy with another shard's batch (or with the
//! batch that made this one). A closure must still never wait for a lock a writer holds
//! while it reads (a key's stripe, the store's `exclusive`): today's reads take neither
//! (lazy expiry only tries a stripe).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::Thread;

use parking_lot::Mutex;

use super::Fail;

/// Batches of at least this many keys are shared with the reader threads: enough work (a
/// few hundred microseconds) to be worth a wake-up.
pub(crate) const SPLIT_READS: usize = 128;

/// Fewest keys in a chunk: each chunk is one multi-get, whose per-table setup a chunk
/// this long amortises.
const MIN_CHUNK: usize = 64;

/// Most chunks a batch is cut into.
const MAX_CHUNKS: usize = 8;

/// The reader threads (`Config::reader_threads` of them).
pub(crate) struct Readers {
    /// How many; with none every batch reads on the caller's thread.
    threads: usize,
    /// `None` inside if none could be started (every batch then reads on the caller's
    /// thread).
    pool: OnceLock<Option<Pool>>,
}

/// The running reader threads: each takes offers from one queue until it is dropped.
pub(crate) struct Pool {
    offers: crossbeam_channel::Sender<Arc<Offer>>,
    threads: usize,
}

/// A chunk's values, once read: `None` until then (or for good, if its reader panicked).
type ChunkResult<T> = Mutex<Option<Result<Vec<T>, Fail>>>;

/// Set in [`Offer::state`] once the caller takes no more helpers.
const CLOSED: usize = 1 << (usize::BITS - 1);

/// A batch's offer of work to the reader threads.
struct Offer {
    /// [`CLOSED`], plus the number of helpers running `work` now.
    state: AtomicUsize,
    /// Takes chunks until none is left. Borrowed from the caller's stack: see
    /// [`Offer::help`] and [`Withdraw`] for why it is only called while that lives.
    work: &'static (dyn Fn() + Sync),
    /// The caller, woken by the last helper once it has withdrawn.
    caller: Thread,
}

impl Offer {
    /// Runs `work` on this thread unless the caller has withdrawn the offer.
    fn help(&self) {
        let mut state = self.state.load(Ordering::Acquire);
        loop {
            if state & CLOSED != 0 {
                return;
            }
            match self.state.compare_exchange_weak(
                state,
                state + 1,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => break,
                Err(now) => state = now,
            }
        }
        // Counted in `state` before the caller closed it, so the caller waits for this
        // call to end before its stack (`work`'s borrows) goes. A panic fails the chunk
        // it was reading (its result stays empty), not this thread; the count drops on
        // every way out (a guard, so even a panic while dropping the panic's payload).
        let _leave = Leave(self);
        let _ = catch_unwind(AssertUnwindSafe(|| (self.work)()));
    }
}

/// Takes a helper out of its offer's count when dropped, waking the caller if it was the
/// last one after the caller withdrew.
struct Leave<'a>(&'a Offer);

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        if self.0.state.fetch_sub(1, Ordering::AcqRel) == CLOSED | 1 {
            self.0.caller.unpark();
        }
    }
}

/// Closes its offer when dropped (also while unwinding) and waits for the helpers still
/// in `work`.
struct Withdraw<'a>(&'a Offer);

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        if self.0.state.fetch_or(CLOSED, Ordering::AcqRel) & !CLOSED == 0 {
            return;
        }
        // A helper is at most one chunk from the end: spin briefly, then sleep until the
        // last one wakes this thread (`park` may return early; the loop checks again).
        let mut spins = 0u32;
        while self.0.state.load(Ordering::Acquire) != CLOSED {
            if spins < 64 {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::park();
            }
        }
    }
}

/// `work` with its borrows' lifetime erased, for an [`Offer`].
#[allow(unsafe_code)]
fn erase<'a>(work: &'a (dyn Fn() + Sync + 'a)) -> &'static (dyn Fn() + Sync + 'static) {
    // SAFETY: the two types differ only in lifetimes, so they have the same layout. The
    // reference is only ever called by `Offer::help`, which first counts itself into the
    // offer's state and fails once the state is closed; the caller closes it and waits
    // for the count to reach zero (`Withdraw`, dropped before `work`'s borrows end,
    // unwinding included) before those borrows end. Tested by
    // `a_batch_shared_with_readers_keeps_its_order_and_fails_when_a_chunk_fails` and
    // `a_nested_batch_does_not_wait_for_the_busy_reader`.
    unsafe { std::mem::transmute::<&'a (dyn Fn() + Sync + 'a), &'static (dyn Fn() + Sync)>(work) }
}

impl Readers {
    /// `threads` reader threads, started on first use; none if 0.
    pub(crate) fn new(threads: usize) -> Self {
        Readers {
            threads,
            pool: OnceLock::new(),
        }
    }

    /// The pool, started on first use; `None` without reader threads.
    fn pool(&self) -> Option<&Pool> {
        if self.threads == 0 {
            return None;
        }
        self.pool
            .get_or_init(|| {
                let (offers, queue) = crossbeam_channel::unbounded::<Arc<Offer>>();
                let started = (0..self.threads)
                    .filter(|i| {
                        let queue = queue.clone();
                        std::thread::Builder::new()
                            .name(format!("terrace-read-{i}"))
                            .spawn(move || queue.iter().for_each(|offer| offer.help()))
                            .map_err(|e| tracing::warn!("a reader thread did not start: {e}"))
                            .is_ok()
                    })
                    .count();
                (started > 0).then_some(Pool {
                    offers,
                    threads: started,
                })
            })
            .as_ref()
    }

    /// Whether a batch of `keys` keys is shared with reader threads
    /// ([`Readers::read_split`]).
    pub(crate) fn splits(&self, keys: usize) -> bool {
        keys >= SPLIT_READS && self.threads > 0
    }

    /// Whether the pool has been started (tests).
    #[cfg(test)]
    pub(crate) fn started(&self) -> Option<*const Pool> {
        self.pool
            .get()
            .and_then(Option::as_ref)
            .map(|p| p as *const _)
    }

    /// Calls `work(i)` once for each `i` in `0..parts`: this thread and the reader
    /// threads each take the next part until none is left; returns once every call has
    /// returned, `false` if one did not complete (it panicked on a reader thread).
    pub(crate) fn share(&self, parts: usize, work: &(dyn Fn(usize) + Sync)) -> bool {
        let pool = match self.pool() {
            Some(pool) if parts > 1 => pool,
            _ => {
                (0..parts).for_each(work);
                return true;
            }
        };
        let next = AtomicUsize::new(0);
        let done = AtomicUsize::new(0);
        let take = || loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= parts {
                break;
            }
            work(i);
            done.fetch_add(1, Ordering::Relaxed);
        };
        {
            let offer = Arc::new(Offer {
                state: AtomicUsize::new(0),
                work: erase(&take),
                caller: std::thread::current(),
            });
            // Before the offer goes out: from here on, leaving this block (unwinding
            // included) closes it and waits for its helpers.
            let _withdraw = Withdraw(&offer);
            for _ in 0..pool.threads.min(parts - 1) {
                // Fails only if every reader thread is gone: then this thread takes all.
                let _ = pool.offers.send(Arc::clone(&offer));
            }
            take();
        }
        // Every helper has left `take` (`Withdraw` waited, with `Acquire`).
        done.load(Ordering::Relaxed) == parts
    }

    /// `read` of `keys`, in order: with at least [`SPLIT_READS`] keys and reader threads,
    /// the keys are cut into chunks that this thread and the reader threads read
    /// ([`Readers::share`]). The caller makes every chunk read the same state (one
    /// snapshot, or stripes that keep the keys' writers out).
    pub(crate) fn read_split<T: Send>(
        &self,
        keys: &[&[u8]],
        read: impl Fn(&[&[u8]]) -> Result<Vec<T>, Fail> + Sync,
    ) -> Result<Vec<T>, Fail> {
        if !self.splits(keys.len()) {
            return read(keys);
        }
        let size = (keys.len() / MAX_CHUNKS).max(MIN_CHUNK);
        let chunks: Vec<&[&[u8]]> = keys.chunks(size).collect();
        let results: Vec<ChunkResult<T>> = chunks.iter().map(|_| Mutex::new(None)).collect();
        // A chunk that did not complete leaves its result empty, which fails the read
        // below.
        let _complete = self.share(chunks.len(), &|i| {
            if let (Some(chunk), Some(slot)) = (chunks.get(i), results.get(i)) {
                let values = read(chunk);
                *slot.lock() = Some(values);
            }
        });
        let mut values = Vec::with_capacity(keys.len());
        for slot in results {
            // Empty only if a reader thread panicked in that chunk.
            values.extend(
                slot.into_inner()
                    .ok_or_else(|| Fail::err("a read thread failed"))??,
            );
        }
        Ok(values)
    }
}

impl terrace::helpers::Helpers for Readers {
    fn share(&self, parts: usize, work: &(dyn Fn(usize) + Sync)) -> bool {
        Readers::share(self, parts, work)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;

    #[test]
    fn a_batch_shared_with_readers_keeps_its_order_and_fails_when_a_chunk_fails() {
        let readers = Readers::new(1);
        let names: Vec<Vec<u8>> = (0..300u32).map(|i| i.to_be_bytes().to_vec()).collect();
        let keys: Vec<&[u8]> = names.iter().map(Vec::as_slice).collect();
        let ids = |ks: &[&[u8]]| -> Result<Vec<u32>, Fail> {
            ks.iter()
                .map(|k| {
                    <[u8; 4]>::try_from(*k)
                        .map(u32::from_be_bytes)
                        .map_err(|_| Fail::err("bad key"))
                })
                .collect()
        };
        // A short batch reads on the caller's thread alone.
        assert_eq!(
            readers.read_split(&keys[..3], ids).ok(),
            Some(vec![0, 1, 2])
        );
        assert_eq!(readers.started(), None);
        assert_eq!(
            readers.read_split(&keys, ids).ok(),
            Some((0..300).collect::<Vec<u32>>())
        );
        assert!(
            readers.started().is_some(),
            "300 keys went to a reader thread"
        );
        // A short batch reads on the caller's thread alone.
        assert_eq!(
            readers.read_split(&keys[..3], ids).ok(),
            Some(vec![0, 1, 2])
        );
        // A batch of many chunks, read by both threads, comes back in order.
        let many: Vec<Vec<u8>> = (0..5000u32).map(|i| i.to_be_bytes().to_vec()).collect();
        let many: Vec<&[u8]> = many.iter().map(Vec::as_slice).collect();
        let slow_ids = |ks: &[&[u8]]| -> Result<Vec<u32>, Fail> {
            std::thread::sleep(std::time::Duration::from_millis(1));
            ids(ks)
        };
        for _ in 0..20 {
            assert_eq!(
                readers.read_split(&many, slow_ids).ok(),
                Some((0..5000).collect::<Vec<u32>>())
            );
        }
        // An error or a panic in any chunk, on either thread, fails the whole read.
        for at in [0, 64, 150, 299] {
            let fails = |ks: &[&[u8]]| -> Result<Vec<u32>, Fail> {
                if ks.contains(&keys[at]) {
                    return Err(Fail::err("a failed chunk"));
                }
                ids(ks)
            };
            assert!(readers.read_split(&keys, fails).is_err());
        }
        let caller = std::thread::current().id();
        let panics_on_a_reader = |ks: &[&[u8]]| -> Result<Vec<u32>, Fail> {
            // Chunks the caller reads wait, so that a reader thread takes some.
            if std::thread::current().id() == caller {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            assert!(std::thread::current().id() == caller, "a reader's chunk");
            ids(ks)
        };
        assert!(readers.read_split(&keys, panics_on_a_reader).is_err());
        // The reader thread survives its panic and helps again.
        let seen = Mutex::new(std::collections::HashSet::new());
        let note_thread = |ks: &[&[u8]]| -> Result<Vec<u32>, Fail> {
            seen.lock().insert(std::thread::current().id());
            std::thread::sleep(std::time::Duration::from_millis(5));
            ids(ks)
        };
        assert_eq!(
            readers.read_split(&many, note_thread).ok(),
            Some((0..5000).collect::<Vec<u32>>())
        );
        assert_eq!(
            seen.lock().len(),
            2,
            "the caller and the reader thread read"
        );
    }

    #[test]
    fn shared_parts_run_once_each_and_a_panicked_part_is_reported() {
        let readers = Readers::new(2);
        let runs: Vec<AtomicUsize> = (0..40).map(|_| AtomicUsize::new(0)).collect();
        for _ in 0..50 {
            runs.iter().for_each(|r| r.store(0, Ordering::Relaxed));
            let complete = readers.share(runs.len(), &|i| {
                if let Some(r) = runs.get(i) {
                    r.fetch_add(1, Ordering::Relaxed);
                }
                std::thread::sleep(std::time::Duration::from_micros(200));
            });
            assert!(complete);
            assert!(runs.iter().all(|r| r.load(Ordering::Relaxed) == 1));
        }
        let caller = std::thread::current().id();
        let complete = readers.share(8, &|_| {
            if std::thread::current().id() == caller {
                std::thread::sleep(std::time::Duration::from_millis(20));
            } else {
                std::panic::panic_any("a reader's part");
            }
        });
        assert!(!complete, "a part panicked on a reader thread");
    }

    #[test]
    fn a_nested_batch_does_not_wait_for_the_busy_reader() {
        // The one reader thread reads a chunk of the outer batch that starts an inner
        // batch: the inner batch's offer cannot be taken (the reader is busy with it), so
        // its caller must read every chunk itself and not wait for a helper.
        let readers = Readers::new(1);
        let names: Vec<Vec<u8>> = (0..1000u32).map(|i| i.to_be_bytes().to_vec()).collect();
        let keys: Vec<&[u8]> = names.iter().map(Vec::as_slice).collect();
        let caller = std::thread::current().id();
        let inner = |ks: &[&[u8]]| -> Result<Vec<usize>, Fail> { Ok(vec![1; ks.len()]) };
        let outer = |ks: &[&[u8]]| -> Result<Vec<usize>, Fail> {
            if std::thread::current().id() == caller {
                // Leave chunks for the reader thread.
                std::thread::sleep(std::time::Duration::from_millis(20));
                return Ok(vec![0; ks.len()]);
            }
            let n = readers.read_split(&keys, inner)?.len();
            Ok(vec![n; ks.len()])
        };
        let got = readers.read_split(&keys, outer).unwrap_or_default();
        assert_eq!(got.len(), 1000);
        assert!(got.iter().all(|&n| n == 0 || n == 1000));
        assert!(got.contains(&1000), "the reader thread read a chunk");
    }

    #[test]
    fn without_reader_threads_every_batch_reads_on_the_callers_thread() {
        let readers = Readers::new(0);
        let names: Vec<Vec<u8>> = (0..300u32).map(|i| i.to_be_bytes().to_vec()).collect();
        let keys: Vec<&[u8]> = names.iter().map(Vec::as_slice).collect();
        let caller = std::thread::current().id();
        let read = |ks: &[&[u8]]| -> Result<Vec<usize>, Fail> {
            assert_eq!(std::thread::current().id(), caller);
            Ok(vec![ks.len()])
        };
        assert_eq!(readers.read_split(&keys, read).ok(), Some(vec![300]));
        assert_eq!(readers.started(), None);
    }
}
