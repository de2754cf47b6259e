//! Throttled storage: directories that behave like a slower device (a SATA SSD, a cloud
//! volume) on a machine whose disk is faster, so that a benchmark shows the shape a
//! slow tier gives, named as what it is (docs/techniques/tiers.md).
//!
//! Owns: [`ThrottledStorage`], its [`ThrottleLimits`] and [`ThrottleStats`]. Each rule
//! names a directory and the limits of the device it stands for; every file I/O on a path
//! under that directory draws from the rule's budget, which all threads share, as flush
//! and compaction threads share one device's bandwidth. Paths under no rule pass through
//! unthrottled (the handle is the inner storage's own).
//! Must not touch: what the bytes mean, or anything outside the wrapped storage.
//! Concurrency: `ThrottledStorage` is `Send + Sync`; a budget's state is behind one mutex
//! held only for arithmetic; a thread sleeps for its wait with no lock held.
//!
//! What is charged:
//! - appends and positional reads, by their bytes and by their I/O operations: an I/O of
//!   n bytes costs ceil(n / [`ThrottleLimits::io_unit_bytes`]) operations, and an I/O that
//!   continues the previous one of the same file handle fills that one's last unit first,
//!   as cloud volumes merge physically sequential I/Os (one operation per 256 KiB);
//! - a sync costs no tokens (its bytes were charged when appended) but ends the current
//!   unit, so a log synced after every write pays one operation per write;
//! - `flush` (handing bytes to the operating system) and directory operations (create,
//!   rename, remove, list, directory sync, link) cost nothing.
//!
//! Reads and writes share one budget, as on cloud volumes. A budget refills continuously
//! and holds at most [`ThrottleLimits::burst`] worth of its rates after idling. An I/O
//! takes its tokens at once, going into debt if needed, and then waits until the debt is
//! paid: concurrent callers are served in the order they asked, and one I/O may cost more
//! than the burst. The wait happens before the I/O is performed. Every read and append
//! the engine issues is charged, as with direct I/O: the operating system's page cache
//! does not make a throttled read free, nor its write-back make an append free.
//!
//! The token bucket is written here (the `bucket` module, small) rather than taken
//! from `governor`: that crate meters cells with `u32` quotas and refuses a request larger
//! than its burst, while an I/O costs up to megabytes in one request; its blocking waits
//! are asynchronous; and here the same injectable clock must drive both time and the
//! sleep, so that the accounting is tested exactly, without real time.

pub(crate) mod bucket;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::{FileLock, IoClass, IoStats, ReadableFile, Storage, WritableFile};
use crate::error::Result;
use bucket::{Clock, DeviceBudget, IoRun, SystemClock};

/// The limits of one throttled device. A zero rate is unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThrottleLimits {
    /// Bytes read plus written per second; 0: unlimited.
    pub bytes_per_sec: u64,
    /// I/O operations per second; 0: unlimited.
    pub iops: u64,
    /// Bytes per I/O operation (cloud volumes: [`ThrottleLimits::CLOUD_IO_UNIT_BYTES`]);
    /// 0: every read or append call is one operation whatever its size.
    pub io_unit_bytes: u64,
    /// How much of the rates an idle device saves up (default 100 ms worth).
    pub burst: Duration,
}

impl ThrottleLimits {
    /// The I/O unit of cloud block volumes (Amazon EBS SSD volumes count one I/O per
    /// 256 KiB, merging smaller sequential I/Os).
    pub const CLOUD_IO_UNIT_BYTES: u64 = 256 << 10;

    /// A device limited to `bytes_per_sec`, with no IOPS limit and the default burst.
    pub fn bandwidth(bytes_per_sec: u64) -> Self {
        ThrottleLimits {
            bytes_per_sec,
            ..ThrottleLimits::default()
        }
    }

    /// These limits with at most `iops` operations per second of `io_unit_bytes` each.
    pub fn with_iops(self, iops: u64, io_unit_bytes: u64) -> Self {
        ThrottleLimits {
            iops,
            io_unit_bytes,
            ..self
        }
    }

    /// These limits with a burst of `burst` worth of the rates.
    pub fn with_burst(self, burst: Duration) -> Self {
        ThrottleLimits { burst, ..self }
    }
}

impl Default for ThrottleLimits {
    /// Unlimited, one operation per call, a burst of 100 ms.
    fn default() -> Self {
        ThrottleLimits {
            bytes_per_sec: 0,
            iops: 0,
            io_unit_bytes: 0,
            burst: Duration::from_millis(100),
        }
    }
}

/// What one rule's device was charged, and how long I/Os waited for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThrottleStats {
    /// The rule's directory.
    pub dir: PathBuf,
    /// The rule's limits.
    pub limits: ThrottleLimits,
    /// Bytes read and written.
    pub bytes: u64,
    /// I/O operations charged.
    pub ios: u64,
    /// I/Os that had to wait.
    pub waits: u64,
    /// Microseconds they waited in all.
    pub wait_micros: u64,
}

#[derive(Debug)]
struct Rule {
    dir: PathBuf,
    /// Components of `dir`: the deepest matching rule wins.
    depth: usize,
    budget: Arc<DeviceBudget>,
}

/// A directory whose files are striped over several rules' devices (RAID 0).
#[derive(Debug)]
struct Stripes {
    dir: PathBuf,
    /// The member devices, in stripe order.
    members: Vec<Arc<DeviceBudget>>,
    /// Bytes per stripe.
    stripe_bytes: u64,
}

/// A storage whose files under given directories are throttled. See the module docs.
#[derive(Debug)]
pub struct ThrottledStorage {
    inner: Arc<dyn Storage>,
    /// In the caller's order (for `stats`).
    rules: Vec<Rule>,
    /// Striped directories, checked before the rules.
    stripes: Vec<Stripes>,
    clock: Arc<dyn Clock>,
}

impl ThrottledStorage {
    /// Wraps `inner`, throttling every file under each rule's directory with that rule's
    /// limits. A path under several directories follows the deepest; of equal ones, the
    /// first. Paths are compared component by component as given (not canonicalized), so
    /// name directories the way the database is given them (its path, `Options::volumes`).
    pub fn new(inner: Arc<dyn Storage>, rules: Vec<(PathBuf, ThrottleLimits)>) -> Self {
        ThrottledStorage::with_clock(inner, rules, Arc::new(SystemClock::new()))
    }

    pub(crate) fn with_clock(
        inner: Arc<dyn Storage>,
        rules: Vec<(PathBuf, ThrottleLimits)>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        let now = clock.now();
        let rules = rules
            .into_iter()
            .map(|(dir, limits)| Rule {
                depth: dir.components().count(),
                dir,
                budget: Arc::new(DeviceBudget::new(limits, now)),
            })
            .collect();
        ThrottledStorage {
            inner,
            rules,
            stripes: Vec::new(),
            clock,
        }
    }

    /// These rules, with every file under `dir` striped over the devices of the rules at
    /// `members` (indexes into the rules, in stripe order) in stripes of `stripe_bytes`:
    /// a RAID 0 array of those devices. The stripe of a file's offset `o` is
    /// `(h + o / stripe_bytes) % members`, with `h` a hash of the file's path (so files
    /// do not all start on the first member, as a file system does not place them all at
    /// the array's start). Each piece of an I/O within one stripe is an I/O of that
    /// member's device. Unknown indexes are left out; with none left, `dir` is not
    /// striped.
    pub fn striped(mut self, dir: PathBuf, members: &[usize], stripe_bytes: u64) -> Self {
        let members: Vec<Arc<DeviceBudget>> = members
            .iter()
            .filter_map(|&i| self.rules.get(i).map(|r| r.budget.clone()))
            .collect();
        if !members.is_empty() {
            self.stripes.push(Stripes {
                dir,
                members,
                stripe_bytes: stripe_bytes.max(1),
            });
        }
        self
    }

    /// What each rule's device was charged and waited, in the order the rules were given.
    pub fn stats(&self) -> Vec<ThrottleStats> {
        self.rules.iter().map(|r| r.budget.stats(&r.dir)).collect()
    }

    /// How far behind each rule's device is now, in the order the rules were given: the
    /// seconds its budget owes (negative: seconds of its rates saved up), `None` for a
    /// device without limits. A reader with several copies of a file on different devices
    /// reads from the one least behind.
    pub fn backlogs(&self) -> Vec<Option<f64>> {
        let now = self.clock.now();
        self.rules.iter().map(|r| r.budget.backlog(now)).collect()
    }

    /// The throttle of `path`: its striped directory's, else the deepest rule's whose
    /// directory holds it.
    fn route(&self, path: &Path) -> Option<Throttle> {
        if let Some(st) = self.stripes.iter().find(|st| path.starts_with(&st.dir)) {
            let salt = path
                .as_os_str()
                .as_encoded_bytes()
                .iter()
                .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
                    (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
                });
            return Some(Throttle {
                members: st.members.clone(),
                stripe_bytes: st.stripe_bytes,
                salt,
                clock: self.clock.clone(),
                storage: self.inner.clone(),
            });
        }
        let mut best: Option<&Rule> = None;
        for r in &self.rules {
            if path.starts_with(&r.dir) && best.is_none_or(|b| r.depth > b.depth) {
                best = Some(r);
            }
        }
        best.map(|r| Throttle {
            members: vec![r.budget.clone()],
            stripe_bytes: 0,
            salt: 0,
            clock: self.clock.clone(),
            storage: self.inner.clone(),
        })
    }
}

/// One file's devices as its handle uses them: one, or the members of a striped array.
#[derive(Debug, Clone)]
struct Throttle {
    /// One device, or the array's members in stripe order.
    members: Vec<Arc<DeviceBudget>>,
    /// Bytes per stripe; 0: one device.
    stripe_bytes: u64,
    /// The member of the file's first stripe.
    salt: u64,
    clock: Arc<dyn Clock>,
    /// The inner storage, whose `IoStats` count the waits.
    storage: Arc<dyn Storage>,
}

impl Throttle {
    /// The I/O of `len` bytes at `offset`, as `(member, offset, len)` pieces: the whole
    /// I/O on the one device, or one piece per stripe it touches.
    fn pieces(&self, offset: u64, len: u64) -> Vec<(usize, u64, u64)> {
        let n = self.members.len().max(1) as u64;
        if self.stripe_bytes == 0 || n == 1 {
            return vec![(0, offset, len)];
        }
        let mut out = Vec::new();
        let (mut at, end) = (offset, offset.saturating_add(len));
        while at < end {
            let stripe = at / self.stripe_bytes;
            let stop = ((stripe + 1) * self.stripe_bytes).min(end);
            let member = (self.salt.wrapping_add(stripe) % n) as usize;
            out.push((member, at, stop - at));
            at = stop;
        }
        out
    }

    /// What an I/O of `len` bytes at `offset` costs each member it touches, as
    /// `(member, bytes, operations)`, its operations counted by `runs` (one per member).
    fn costs(&self, runs: &mut Vec<IoRun>, offset: u64, len: u64) -> Vec<(usize, u64, u64)> {
        if runs.len() < self.members.len() {
            runs.resize(self.members.len(), IoRun::default());
        }
        self.pieces(offset, len)
            .into_iter()
            .filter_map(|(member, at, bytes)| {
                let unit = self.members.get(member)?.limits().io_unit_bytes;
                let ios = runs.get_mut(member)?.ios(at, bytes, unit);
                Some((member, bytes, ios))
            })
            .collect()
    }

    /// Charges `costs` (from [`Throttle::costs`]) for an I/O of `len` bytes (a write when
    /// `write`) and sleeps until every device it touches may run it.
    fn admit(&self, class: IoClass, len: u64, write: bool, costs: &[(usize, u64, u64)]) {
        self.storage.io_stats().record_throttled(class, len, write);
        let now = self.clock.now();
        let mut wait = Duration::ZERO;
        for &(member, bytes, ios) in costs {
            if let Some(budget) = self.members.get(member) {
                wait = wait.max(budget.charge(now, bytes, ios));
            }
        }
        if wait.is_zero() {
            return;
        }
        self.clock.sleep(wait);
        // The time actually slept: the waiting thread is held for all of it.
        let slept = self.clock.now().saturating_sub(now).max(wait);
        let micros = u64::try_from(slept.as_micros()).unwrap_or(u64::MAX);
        self.storage.io_stats().record_throttle_wait(class, micros);
    }
}

struct ThrottledWritable {
    inner: Box<dyn WritableFile>,
    class: IoClass,
    runs: Vec<IoRun>,
    throttle: Throttle,
}

impl WritableFile for ThrottledWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        let (at, len) = (self.inner.len(), data.len() as u64);
        let costs = self.throttle.costs(&mut self.runs, at, len);
        self.throttle.admit(self.class, len, true, &costs);
        self.inner.append(data)
    }

    fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }

    fn sync(&mut self) -> Result<()> {
        for run in &mut self.runs {
            run.close();
        }
        self.inner.sync()
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }
}

struct ThrottledReadable {
    inner: Arc<dyn ReadableFile>,
    runs: Mutex<Vec<IoRun>>,
    throttle: Throttle,
}

impl ReadableFile for ThrottledReadable {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8], class: IoClass) -> Result<()> {
        let len = buf.len() as u64;
        // The runs' lock is held while counting, never while waiting.
        let costs = self.throttle.costs(&mut self.runs.lock(), offset, len);
        self.throttle.admit(class, len, false, &costs);
        self.inner.read_exact_at(offset, buf, class)
    }

    fn read_vec_at(&self, offset: u64, len: usize, class: IoClass) -> Result<Vec<u8>> {
        let costs = self
            .throttle
            .costs(&mut self.runs.lock(), offset, len as u64);
        self.throttle.admit(class, len as u64, false, &costs);
        self.inner.read_vec_at(offset, len, class)
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }
}

impl Storage for ThrottledStorage {
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.inner.create_dir_all(dir)
    }

    fn create(&self, path: &Path, class: IoClass) -> Result<Box<dyn WritableFile>> {
        let inner = self.inner.create(path, class)?;
        Ok(match self.route(path) {
            Some(throttle) => Box::new(ThrottledWritable {
                inner,
                class,
                runs: Vec::new(),
                throttle,
            }),
            None => inner,
        })
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn ReadableFile>> {
        let inner = self.inner.open(path)?;
        Ok(match self.route(path) {
            Some(throttle) => Arc::new(ThrottledReadable {
                inner,
                runs: Mutex::new(Vec::new()),
                throttle,
            }),
            None => inner,
        })
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.inner.rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> Result<()> {
        self.inner.remove_file(path)
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        self.inner.list(dir)
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        self.inner.exists(path)
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.inner.sync_dir(dir)
    }

    fn link_or_copy(&self, from: &Path, to: &Path) -> Result<()> {
        self.inner.link_or_copy(from, to)
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.inner.lock(path)
    }

    fn io_stats(&self) -> &IoStats {
        self.inner.io_stats()
    }
}

#[cfg(test)]
mod tests;
