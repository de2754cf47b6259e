//! Threads an embedding application lends the engine: a large write group's memtable
//! insert is cut into parts of its sorted batch, which the writing thread and the
//! helpers insert side by side (the skiplist takes concurrent writers).
//!
//! Owns: the [`Helpers`] trait, which the application implements over threads of its
//! own (`Options::memtable_insert_helpers`). Must not touch: what the parts do; the
//! engine's closure does the work and the implementation only decides which thread runs
//! each part.

/// Threads that may run parts of the engine's work beside the calling thread.
pub trait Helpers: Send + Sync {
    /// Calls `work(i)` once for each `i` in `0..parts`, each on the calling thread or on
    /// a helper thread, and returns once every call has returned: `true`, or `false` if
    /// some call did not complete (it panicked on a helper thread). The calling thread
    /// should start on the parts itself and never wait for a helper that has not begun
    /// one: that helper may be asleep or busy elsewhere.
    fn share(&self, parts: usize, work: &(dyn Fn(usize) + Sync)) -> bool;
}

/// Runs every part on the calling thread (tests, and what the engine does without
/// helpers).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHelpers;

impl Helpers for NoHelpers {
    fn share(&self, parts: usize, work: &(dyn Fn(usize) + Sync)) -> bool {
        (0..parts).for_each(work);
        true
    }
}
