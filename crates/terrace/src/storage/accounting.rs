//! Per-class I/O accounting: bytes and operations by who asked for them.

use std::sync::atomic::{AtomicU64, Ordering};

/// Who an I/O is for. Counted separately so that write amplification and
/// background bandwidth can be read off one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum IoClass {
    /// User reads (gets, iterators).
    Foreground,
    /// Writing memtables to level 0, and reading them back to verify.
    Flush,
    /// Compaction inputs and outputs.
    Compaction,
    /// The write-ahead log.
    Wal,
    /// MANIFEST, CURRENT and other metadata.
    Manifest,
    /// Copying table files between volumes (load migration).
    Migration,
}

impl IoClass {
    /// Every class, in display order.
    pub const ALL: [IoClass; 6] = [
        IoClass::Foreground,
        IoClass::Flush,
        IoClass::Compaction,
        IoClass::Wal,
        IoClass::Manifest,
        IoClass::Migration,
    ];

    fn index(self) -> usize {
        self as usize
    }

    /// A short lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            IoClass::Foreground => "foreground",
            IoClass::Flush => "flush",
            IoClass::Compaction => "compaction",
            IoClass::Wal => "wal",
            IoClass::Manifest => "manifest",
            IoClass::Migration => "migration",
        }
    }
}

/// A snapshot of one class's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IoClassStats {
    /// Bytes read.
    pub read_bytes: u64,
    /// Read calls.
    pub read_ops: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Write (append) calls.
    pub write_ops: u64,
    /// Sync calls.
    pub sync_ops: u64,
    /// I/Os that waited for a throttled device's budget (see `ThrottledStorage`).
    pub throttle_waits: u64,
    /// Microseconds those I/Os waited, as slept (a short sleep oversleeps; the rule's own
    /// `ThrottleStats::wait_micros` counts the waits it asked for).
    pub throttle_wait_micros: u64,
    /// Bytes read from a throttled device (part of `read_bytes`).
    pub throttled_read_bytes: u64,
    /// Bytes written to a throttled device (part of `write_bytes`): what a slower tier
    /// (a directory behind `ThrottledStorage`) was given to store.
    pub throttled_write_bytes: u64,
}

#[derive(Debug, Default)]
struct Counters {
    read_bytes: AtomicU64,
    read_ops: AtomicU64,
    write_bytes: AtomicU64,
    write_ops: AtomicU64,
    sync_ops: AtomicU64,
    throttle_waits: AtomicU64,
    throttle_wait_micros: AtomicU64,
    throttled_read_bytes: AtomicU64,
    throttled_write_bytes: AtomicU64,
}

/// Thread-safe I/O counters, one set per [`IoClass`].
#[derive(Debug, Default)]
pub struct IoStats {
    classes: [Counters; 6],
}

impl IoStats {
    /// Counts a read of `bytes`.
    pub fn record_read(&self, class: IoClass, bytes: u64) {
        let c = &self.classes[class.index()];
        c.read_bytes.fetch_add(bytes, Ordering::Relaxed);
        c.read_ops.fetch_add(1, Ordering::Relaxed);
    }
    /// Counts a write of `bytes`.
    pub fn record_write(&self, class: IoClass, bytes: u64) {
        let c = &self.classes[class.index()];
        c.write_bytes.fetch_add(bytes, Ordering::Relaxed);
        c.write_ops.fetch_add(1, Ordering::Relaxed);
    }
    /// Counts a sync.
    pub fn record_sync(&self, class: IoClass) {
        self.classes[class.index()]
            .sync_ops
            .fetch_add(1, Ordering::Relaxed);
    }
    /// Counts an I/O that waited `micros` for a throttled device's budget.
    pub fn record_throttle_wait(&self, class: IoClass, micros: u64) {
        let c = &self.classes[class.index()];
        c.throttle_waits.fetch_add(1, Ordering::Relaxed);
        c.throttle_wait_micros.fetch_add(micros, Ordering::Relaxed);
    }
    /// Counts `bytes` read from (or, with `write`, written to) a throttled device.
    pub fn record_throttled(&self, class: IoClass, bytes: u64, write: bool) {
        let c = &self.classes[class.index()];
        let counter = if write {
            &c.throttled_write_bytes
        } else {
            &c.throttled_read_bytes
        };
        counter.fetch_add(bytes, Ordering::Relaxed);
    }
    /// The current counters of `class`.
    pub fn get(&self, class: IoClass) -> IoClassStats {
        let c = &self.classes[class.index()];
        IoClassStats {
            read_bytes: c.read_bytes.load(Ordering::Relaxed),
            read_ops: c.read_ops.load(Ordering::Relaxed),
            write_bytes: c.write_bytes.load(Ordering::Relaxed),
            write_ops: c.write_ops.load(Ordering::Relaxed),
            sync_ops: c.sync_ops.load(Ordering::Relaxed),
            throttle_waits: c.throttle_waits.load(Ordering::Relaxed),
            throttle_wait_micros: c.throttle_wait_micros.load(Ordering::Relaxed),
            throttled_read_bytes: c.throttled_read_bytes.load(Ordering::Relaxed),
            throttled_write_bytes: c.throttled_write_bytes.load(Ordering::Relaxed),
        }
    }
}
