//! Heat statistics: how often each table file is read from its volume, cooled over time
//! (TANGO's H = alpha * H + N per interval), and each volume's summed weight and live
//! IOPS, for placement and load migration.
//!
//! Owns: [`Heat`] (the per-file counters and their cooling) and [`CountingFile`] (the
//! file handle that counts a table's reads). Must not touch: placement decisions or
//! files: it only counts.
//! Concurrency: a read increments one atomic of its file; `tick` (one background thread)
//! swaps the counters out under a read lock and updates the heats; files come and go
//! under the write lock, once per file.
//!
//! What counts: every read of a table file that reaches storage, that is, misses the
//! block cache (a cached block costs the volume nothing), in I/O operations of
//! [`IO_UNIT_BYTES`] as cloud volumes bill them; a file's writing counts once, as its size
//! in operations, in its first interval. Foreground reads (user lookups and scans) make
//! a file's heat; compaction reads are counted beside it, for the volume's live IOPS.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;

use crate::error::Result;
use crate::storage::{IoClass, ReadableFile};
use crate::version::Version;

/// Bytes per billed I/O operation (cloud SSD volumes count one per 256 KiB).
pub const IO_UNIT_BYTES: u64 = crate::storage::ThrottleLimits::CLOUD_IO_UNIT_BYTES;

/// Operations an I/O of `bytes` is billed as: ceil(bytes / [`IO_UNIT_BYTES`]), at least 1.
pub fn billed_ios(bytes: u64) -> u64 {
    bytes.div_ceil(IO_UNIT_BYTES).max(1)
}

/// One file's counters.
#[derive(Debug)]
pub struct FileHeat {
    volume: u32,
    /// Foreground operations since the last tick.
    foreground: AtomicU64,
    /// The file's writing, in operations, until the first tick takes it.
    written: AtomicU64,
    /// Background (compaction, flush) read operations since the last tick.
    background: AtomicU64,
    /// The heat after the last tick, as `f64` bits.
    heat: AtomicU64,
    /// The same of foreground reads alone (what a copy of the file can take off its
    /// volume), as `f64` bits.
    read_heat: AtomicU64,
    /// Operations of the last interval (foreground and background).
    last_ios: AtomicU64,
}

impl FileHeat {
    fn new(volume: u32, written_ios: u64) -> Self {
        FileHeat {
            volume,
            foreground: AtomicU64::new(0),
            written: AtomicU64::new(written_ios),
            background: AtomicU64::new(0),
            heat: AtomicU64::new(0f64.to_bits()),
            read_heat: AtomicU64::new(0f64.to_bits()),
            last_ios: AtomicU64::new(0),
        }
    }

    /// Counts a read of `bytes`.
    pub fn record_read(&self, bytes: u64, class: IoClass) {
        let counter = match class {
            IoClass::Foreground => &self.foreground,
            _ => &self.background,
        };
        counter.fetch_add(billed_ios(bytes), Ordering::Relaxed);
    }

    /// The heat after the last tick.
    pub fn heat(&self) -> f64 {
        f64::from_bits(self.heat.load(Ordering::Relaxed))
    }

    /// The heat of foreground reads alone after the last tick.
    pub fn read_heat(&self) -> f64 {
        f64::from_bits(self.read_heat.load(Ordering::Relaxed))
    }
}

/// One file's heat, as statistics show it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FileHeatStats {
    /// The table's file number.
    pub number: u64,
    /// Its volume.
    pub volume: u32,
    /// Its heat after the last interval.
    pub heat: f64,
    /// The part of it made by foreground reads, cooled the same way (its writing left
    /// out): what load migration ranks files by.
    pub read_heat: f64,
    /// Operations it cost its volume in the last interval.
    pub last_ios: u64,
}

/// One volume's load, as the last interval left it.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct VolumeLoad {
    /// The summed heat of its files (TANGO's weight).
    pub weight: f64,
    /// Operations per second its files cost in the last interval.
    pub iops: f64,
}

/// The heat of every live table file. See the module docs.
#[derive(Debug)]
pub struct Heat {
    alpha: f64,
    files: RwLock<HashMap<u64, Arc<FileHeat>>>,
    /// Per volume id, the last tick's load (index = id).
    loads: RwLock<Vec<VolumeLoad>>,
    /// Per volume id, the writing of the files registered since the last tick, in
    /// operations: part of the volume's weight until the tick folds it into the heats.
    pending: parking_lot::Mutex<Vec<u64>>,
    /// Compaction (background) read operations per second over every file, smoothed by
    /// `alpha` across intervals, as `f64` bits.
    compaction_rate: AtomicU64,
    /// The length of the last interval in seconds, as `f64` bits (0 before the first).
    interval_secs: AtomicU64,
}

impl Heat {
    /// Heat statistics cooling by `alpha` (in `[0, 1)`) per interval.
    pub fn new(alpha: f64) -> Self {
        Heat {
            alpha,
            files: RwLock::new(HashMap::new()),
            loads: RwLock::new(Vec::new()),
            pending: parking_lot::Mutex::new(Vec::new()),
            compaction_rate: AtomicU64::new(0f64.to_bits()),
            interval_secs: AtomicU64::new(0f64.to_bits()),
        }
    }

    /// The counters of table `number` on `volume` of `size` bytes, created (with its
    /// writing counted) on first use.
    pub fn file(&self, number: u64, volume: u32, size: u64) -> Arc<FileHeat> {
        if let Some(f) = self.files.read().get(&number) {
            return f.clone();
        }
        self.files
            .write()
            .entry(number)
            .or_insert_with(|| self.new_file(volume, size))
            .clone()
    }

    /// A new file's counters, its writing counted (and pending in its volume's weight).
    fn new_file(&self, volume: u32, size: u64) -> Arc<FileHeat> {
        let ios = billed_ios(size);
        let mut pending = self.pending.lock();
        let v = volume as usize;
        if pending.len() <= v {
            pending.resize(v + 1, 0);
        }
        pending[v] += ios;
        Arc::new(FileHeat::new(volume, ios))
    }

    /// Closes an interval of `interval`: every file of `version` gets
    /// H = alpha * H + N (N: its foreground operations of the interval), files no longer
    /// in `version` are forgotten, and each volume's load is summed.
    pub fn tick(&self, version: &Version, interval: Duration) {
        let live: Vec<(u64, u32, u64)> = version
            .levels()
            .iter()
            .flatten()
            .map(|f| (f.number, f.volume, f.size))
            .collect();
        let mut compaction_ios = 0u64;
        {
            let mut files = self.files.write();
            let keep: std::collections::HashSet<u64> = live.iter().map(|l| l.0).collect();
            // A file compacted away was read by that compaction: count it before it goes.
            files.retain(|n, f| {
                let kept = keep.contains(n);
                if !kept {
                    compaction_ios += f.background.swap(0, Ordering::Relaxed);
                }
                kept
            });
            for &(number, volume, size) in &live {
                files
                    .entry(number)
                    .or_insert_with(|| self.new_file(volume, size));
            }
            // The writing of new files is in their counters now: the heats take it over.
            self.pending.lock().clear();
        }
        let secs = interval.as_secs_f64().max(1e-3);
        let mut loads: Vec<VolumeLoad> = Vec::new();
        for f in self.files.read().values() {
            let fg = f.foreground.swap(0, Ordering::Relaxed);
            let written = f.written.swap(0, Ordering::Relaxed);
            let bg = f.background.swap(0, Ordering::Relaxed);
            compaction_ios += bg;
            let heat = self.alpha * f.heat() + (fg + written) as f64;
            f.heat.store(heat.to_bits(), Ordering::Relaxed);
            let read_heat = self.alpha * f.read_heat() + fg as f64;
            f.read_heat.store(read_heat.to_bits(), Ordering::Relaxed);
            let fg = fg + written;
            f.last_ios.store(fg + bg, Ordering::Relaxed);
            let v = f.volume as usize;
            if loads.len() <= v {
                loads.resize(v + 1, VolumeLoad::default());
            }
            loads[v].weight += heat;
            loads[v].iops += (fg + bg) as f64 / secs;
        }
        *self.loads.write() = loads;
        let rate =
            self.alpha * self.compaction_rate() + (1.0 - self.alpha) * compaction_ios as f64 / secs;
        self.compaction_rate
            .store(rate.to_bits(), Ordering::Relaxed);
        self.interval_secs.store(secs.to_bits(), Ordering::Relaxed);
    }

    /// Compaction read operations per second over every file, smoothed over intervals.
    pub fn compaction_rate(&self) -> f64 {
        f64::from_bits(self.compaction_rate.load(Ordering::Relaxed))
    }

    /// Each known file's foreground read operations per second, by number: its read heat
    /// in steady state is N / (1 - alpha) for N operations per interval.
    pub fn read_rates(&self) -> HashMap<u64, f64> {
        let secs = f64::from_bits(self.interval_secs.load(Ordering::Relaxed));
        if secs <= 0.0 {
            return HashMap::new();
        }
        let per_heat = (1.0 - self.alpha) / secs;
        self.files
            .read()
            .iter()
            .map(|(&n, f)| (n, f.read_heat() * per_heat))
            .collect()
    }

    /// The load of `volume` after the last tick; its weight includes the writing of the
    /// files registered since.
    pub fn volume_load(&self, volume: u32) -> VolumeLoad {
        let mut load = self
            .loads
            .read()
            .get(volume as usize)
            .copied()
            .unwrap_or_default();
        load.weight += self
            .pending
            .lock()
            .get(volume as usize)
            .copied()
            .unwrap_or(0) as f64;
        load
    }

    /// Registers new table files (just installed), so that their writing weighs on
    /// their volumes before the next tick.
    pub fn add_files<'a>(&self, files: impl IntoIterator<Item = &'a crate::version::FileMeta>) {
        for f in files {
            self.file(f.number, f.volume, f.size);
        }
    }

    /// The summed heat of `files` (those known), after the last tick.
    pub fn heat_of(&self, numbers: impl IntoIterator<Item = u64>) -> f64 {
        let files = self.files.read();
        numbers
            .into_iter()
            .filter_map(|n| files.get(&n).map(|f| f.heat()))
            .sum()
    }

    /// Every file's heat, hottest first.
    pub fn files(&self) -> Vec<FileHeatStats> {
        let mut out: Vec<FileHeatStats> = self
            .files
            .read()
            .iter()
            .map(|(&number, f)| FileHeatStats {
                number,
                volume: f.volume,
                heat: f.heat(),
                read_heat: f.read_heat(),
                last_ios: f.last_ios.load(Ordering::Relaxed),
            })
            .collect();
        out.sort_by(|a, b| b.heat.total_cmp(&a.heat).then(a.number.cmp(&b.number)));
        out
    }
}

/// A table file's handle that counts its reads into its [`FileHeat`]. Until it is
/// armed (once the table is open), reads count as background: opening a table reads its
/// footer and meta blocks once, which says nothing of how hot its keys are.
pub struct CountingFile {
    inner: Arc<dyn ReadableFile>,
    heat: Arc<FileHeat>,
    armed: std::sync::atomic::AtomicBool,
}

impl CountingFile {
    /// `inner`, counting into `heat`, not armed.
    pub fn new(inner: Arc<dyn ReadableFile>, heat: Arc<FileHeat>) -> Self {
        CountingFile {
            inner,
            heat,
            armed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// From now on, reads count by their own class.
    pub fn arm(&self) {
        self.armed.store(true, Ordering::Release);
    }

    /// The class a read of `class` counts under: its own once armed, compaction before.
    fn counted_class(&self, class: IoClass) -> IoClass {
        if self.armed.load(Ordering::Acquire) {
            class
        } else {
            IoClass::Compaction
        }
    }
}

impl ReadableFile for CountingFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8], class: IoClass) -> Result<()> {
        self.heat
            .record_read(buf.len() as u64, self.counted_class(class));
        self.inner.read_exact_at(offset, buf, class)
    }

    fn read_vec_at(&self, offset: u64, len: usize, class: IoClass) -> Result<Vec<u8>> {
        self.heat.record_read(len as u64, self.counted_class(class));
        self.inner.read_vec_at(offset, len, class)
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }
}

#[cfg(test)]
mod tests;
