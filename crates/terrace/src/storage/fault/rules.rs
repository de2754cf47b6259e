//! Injected errors of the fault storage: which operations on which files fail, with which
//! operating-system error, and how often.
//!
//! Owns: [`FaultRule`], [`FaultOp`], [`InjectedError`] and the matching of an operation
//! against the armed rules.
//! Must not touch: file contents; `FaultStorage` asks [`Rules::check`] before each
//! operation and returns the error it gets.
//! Concurrency: one mutex around the armed rules.

use std::path::Path;

use parking_lot::Mutex;

use crate::error::Error;
use crate::storage::IoClass;

/// An operation of the storage seam an injected error can hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultOp {
    /// Creating a file.
    Create,
    /// Appending to a file.
    Append,
    /// Syncing a file.
    Sync,
    /// Reading a file.
    Read,
    /// Renaming a file (the source path is matched).
    Rename,
    /// Removing a file.
    Remove,
    /// Syncing a directory.
    DirSync,
    /// Linking or copying a file into another directory (the source path is matched).
    Link,
}

/// The operating-system error an injected fault returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InjectedError {
    /// `ENOSPC`: the device is full. Retryable once space returns.
    NoSpace,
    /// `EIO`: the device failed the operation.
    Io,
}

impl InjectedError {
    /// The error as the operating system would return it (`raw_os_error` is set, so
    /// callers classify it as they would a real one).
    fn to_io(self) -> std::io::Error {
        std::io::Error::from_raw_os_error(match self {
            InjectedError::NoSpace => libc::ENOSPC,
            InjectedError::Io => libc::EIO,
        })
    }
}

/// Which operations fail, and how. An operation fails if it matches every given filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultRule {
    /// Operations hit (empty: every operation).
    pub ops: Vec<FaultOp>,
    /// Only files whose path contains this (e.g. `.log`, `.sst`, `MANIFEST`).
    pub path_contains: Option<String>,
    /// Only operations counted under this class (creations, appends, syncs and reads
    /// have one; renames, removals, directory syncs and links match only `None`).
    pub class: Option<IoClass>,
    /// The error returned.
    pub error: InjectedError,
    /// Matching operations let through before the first failure.
    pub skip: u64,
    /// Failures before the rule disarms itself (`None`: until cleared).
    pub times: Option<u64>,
}

impl FaultRule {
    /// A rule failing every operation in `ops` with `error`, until cleared.
    pub fn new(ops: &[FaultOp], error: InjectedError) -> Self {
        FaultRule {
            ops: ops.to_vec(),
            path_contains: None,
            class: None,
            error,
            skip: 0,
            times: None,
        }
    }

    /// Only files whose path contains `part`.
    pub fn on_paths(mut self, part: &str) -> Self {
        self.path_contains = Some(part.to_string());
        self
    }

    /// Only operations of `class`.
    pub fn of_class(mut self, class: IoClass) -> Self {
        self.class = Some(class);
        self
    }

    /// Lets the first `n` matching operations through.
    pub fn after(mut self, n: u64) -> Self {
        self.skip = n;
        self
    }

    /// Disarms after `n` failures.
    pub fn times(mut self, n: u64) -> Self {
        self.times = Some(n);
        self
    }

    fn matches(&self, op: FaultOp, path: &Path, class: Option<IoClass>) -> bool {
        (self.ops.is_empty() || self.ops.contains(&op))
            && self
                .path_contains
                .as_deref()
                .is_none_or(|p| path.to_string_lossy().contains(p))
            && self.class.is_none_or(|c| class == Some(c))
    }
}

/// The armed rules, and how many failures they injected.
#[derive(Debug, Default)]
pub(super) struct Rules {
    armed: Mutex<Vec<FaultRule>>,
    injected: std::sync::atomic::AtomicU64,
}

impl Rules {
    pub(super) fn arm(&self, rule: FaultRule) {
        self.armed.lock().push(rule);
    }

    pub(super) fn clear(&self) {
        self.armed.lock().clear();
    }

    pub(super) fn injected(&self) -> u64 {
        self.injected.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The error `op` on `path` must fail with, if an armed rule hits it.
    pub(super) fn check(
        &self,
        op: FaultOp,
        path: &Path,
        class: Option<IoClass>,
    ) -> Result<(), Error> {
        let mut armed = self.armed.lock();
        let mut hit = None;
        for (i, r) in armed.iter_mut().enumerate() {
            if !r.matches(op, path, class) {
                continue;
            }
            if r.skip > 0 {
                r.skip -= 1;
                continue;
            }
            hit = Some((i, r.error));
            break;
        }
        let Some((i, error)) = hit else {
            return Ok(());
        };
        if let Some(rule) = armed.get_mut(i) {
            if let Some(t) = rule.times.as_mut() {
                *t = t.saturating_sub(1);
                if *t == 0 {
                    armed.remove(i);
                }
            }
        }
        self.injected
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Err(Error::io(path, error.to_io()))
    }
}
