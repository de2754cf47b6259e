//! Reader threads: a large batch of point reads (a group's GETs, the key count's reads of
//! a group's SET keys) reads its second half on a thread the store keeps, while the shard
//! thread reads the first.
//!
//! Owns: the threads (a `rayon_core` pool, started on first use and kept, so that a
//! batch pays for two wake-ups, not for starting a thread and its fresh, zeroed heap
//! pages) and the split. Must not touch: what is read; the caller's closure reads.
//! Concurrency: the caller waits, holding its locks, while a reader thread runs its
//! closure, and the pool is shared by every shard; so a closure must never wait for a
//! lock a writer holds while it reads (a key's stripe, the store's `exclusive`): today's
//! reads take neither (lazy expiry only tries a stripe).

use std::sync::OnceLock;

use super::Fail;

/// Batches of at least this many keys read half on a reader thread: enough work (a few
/// hundred microseconds) to be worth the two wake-ups of handing it over.
pub(crate) const SPLIT_READS: usize = 128;

/// The reader threads (`Config::reader_threads` of them).
pub(crate) struct Readers {
    /// How many; with none every batch reads on the caller's thread.
    threads: usize,
    /// `None` inside if they could not be started (every batch then reads on the caller's
    /// thread).
    pool: OnceLock<Option<rayon_core::ThreadPool>>,
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
    pub(crate) fn pool(&self) -> Option<&rayon_core::ThreadPool> {
        if self.threads == 0 {
            return None;
        }
        self.pool
            .get_or_init(|| {
                rayon_core::ThreadPoolBuilder::new()
                    .num_threads(self.threads)
                    .thread_name(|i| format!("terrace-read-{i}"))
                    .build()
                    .map_err(|e| tracing::warn!("reader threads did not start: {e}"))
                    .ok()
            })
            .as_ref()
    }

    /// Whether a batch of `keys` keys is split ([`Readers::read_split`]).
    pub(crate) fn splits(&self, keys: usize) -> bool {
        keys >= SPLIT_READS && self.threads > 0
    }

    /// Whether the pool has been started (tests).
    #[cfg(test)]
    pub(crate) fn started(&self) -> Option<*const rayon_core::ThreadPool> {
        self.pool
            .get()
            .and_then(Option::as_ref)
            .map(|p| p as *const _)
    }

    /// `read` of `keys`, in order: with at least [`SPLIT_READS`] keys and a reader
    /// thread, the second half is read on a reader thread while this one reads the
    /// first. The caller makes the two halves read the same state (one snapshot, or
    /// stripes that keep the keys' writers out).
    pub(crate) fn read_split<T: Send>(
        &self,
        keys: &[&[u8]],
        read: impl Fn(&[&[u8]]) -> Result<Vec<T>, Fail> + Sync,
    ) -> Result<Vec<T>, Fail> {
        if !self.splits(keys.len()) {
            return read(keys);
        }
        let Some(pool) = self.pool() else {
            return read(keys);
        };
        let (first, second) = keys.split_at(keys.len() / 2);
        let mut rest = None;
        let values = pool.in_place_scope(|scope| {
            scope.spawn(|_| {
                // A panic on the reader thread fails these reads, not the caller's thread.
                rest = Some(
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| read(second)))
                        .unwrap_or_else(|_| Err(Fail::err("a read thread failed"))),
                );
            });
            read(first)
        });
        let mut values = values?;
        values.extend(rest.ok_or_else(|| Fail::err("a read thread failed"))??);
        Ok(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_split_read_keeps_the_order_and_fails_when_a_half_fails() {
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
        // An error or a panic in the reader's half fails the whole read.
        let fails_late = |ks: &[&[u8]]| -> Result<Vec<u32>, Fail> {
            if ks.first() == Some(&keys[150]) {
                return Err(Fail::err("late half"));
            }
            ids(ks)
        };
        assert!(readers.read_split(&keys, fails_late).is_err());
        let panics_late = |ks: &[&[u8]]| -> Result<Vec<u32>, Fail> {
            assert!(ks.first() != Some(&keys[150]), "late half");
            ids(ks)
        };
        assert!(readers.read_split(&keys, panics_late).is_err());
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
