//! The user-facing iterator: a merge of every source, reduced to the newest visible
//! version of each user key, with deletions, range deletions and bounds applied.
//!
//! Direction handling follows LevelDB's DBIter: moving forward, the merged iterator sits
//! on the entry being returned; moving backward, it sits just before every entry of the
//! current user key, whose value is saved.

use std::sync::Arc;

use super::{DbInner, SuperVersion};
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{self, SeqNo, ValueType};
use crate::merge::MergingIterator;
use crate::options::ReadOptions;
use crate::range_del::FragmentedTombstones;
use crate::storage::IoClass;
use crate::tables::LevelIterator;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

/// Iterates user keys in order over a point-in-time view. `Send`; not `Sync`.
///
/// Not positioned when created: call `seek_to_first`, `seek_to_last`, `seek` or
/// `seek_for_prev`. Movement returns I/O and corruption errors; after an error the
/// iterator is not valid.
pub struct DbIterator {
    view: Arc<SuperVersion>,
    /// Where seeks report that level 0 has cost its budget.
    read_trigger: Arc<crate::compaction::read_trigger::ReadTrigger>,
    inner: MergingIterator,
    tombstones: FragmentedTombstones,
    seq: SeqNo,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    direction: Direction,
    valid: bool,
    saved_key: Vec<u8>,
    saved_value: Vec<u8>,
}

impl DbInner {
    pub(crate) fn new_iterator(&self, opts: ReadOptions) -> Result<DbIterator> {
        let sv = self.super_version();
        let seq = self.read_seq(&opts);
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        let mut tombs = Vec::new();
        for mem in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
            children.push(Box::new(mem.iter()));
            tombs.extend(mem.range_tombstones());
        }
        sv.level0
            .add_iterators(&mut children, &mut tombs, opts.fill_cache)?;
        for level in 1..sv.version.num_levels() {
            let files = sv.version.files(level);
            if files.is_empty() {
                continue;
            }
            for f in files.iter().filter(|f| f.num_range_deletions > 0) {
                tombs.extend(self.tables.open(f)?.range_tombstones().iter().cloned());
            }
            children.push(Box::new(LevelIterator::new(
                files.to_vec(),
                self.tables.clone(),
                IoClass::Foreground,
                opts.fill_cache,
            )));
        }
        Ok(DbIterator {
            view: sv,
            read_trigger: self.read_trigger.clone(),
            inner: MergingIterator::new(children),
            tombstones: FragmentedTombstones::new(&tombs, seq),
            seq,
            lower: opts.lower_bound,
            upper: opts.upper_bound,
            direction: Direction::Forward,
            valid: false,
            saved_key: Vec::new(),
            saved_value: Vec::new(),
        })
    }
}

impl DbIterator {
    /// True if positioned on a key.
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current user key (empty if not valid).
    pub fn key(&self) -> &[u8] {
        if !self.valid {
            return &[];
        }
        match self.direction {
            Direction::Forward => key::user_key(self.inner.key()),
            Direction::Reverse => &self.saved_key,
        }
    }

    /// The current value (empty if not valid).
    pub fn value(&self) -> &[u8] {
        if !self.valid {
            return &[];
        }
        match self.direction {
            Direction::Forward => self.inner.value(),
            Direction::Reverse => &self.saved_value,
        }
    }

    /// Positions on the first key (at or after the lower bound).
    ///
    /// # Errors
    /// I/O or corruption.
    pub fn seek_to_first(&mut self) -> Result<()> {
        match self.lower.clone() {
            Some(lo) => self.seek(&lo),
            None => {
                self.direction = Direction::Forward;
                self.inner.seek_to_first()?;
                self.find_next_user_entry(false)
            }
        }
    }

    /// Positions on the last key (before the upper bound).
    ///
    /// # Errors
    /// I/O or corruption.
    pub fn seek_to_last(&mut self) -> Result<()> {
        self.direction = Direction::Reverse;
        self.saved_value.clear();
        match &self.upper {
            Some(up) => {
                let target = key::seek_key(up, key::MAX_SEQ);
                self.inner.seek_for_prev(&target)?;
            }
            None => self.inner.seek_to_last()?,
        }
        self.find_prev_user_entry()
    }

    /// Positions on the first key `>= target`.
    ///
    /// # Errors
    /// I/O or corruption.
    pub fn seek(&mut self, target: &[u8]) -> Result<()> {
        let target = match &self.lower {
            Some(lo) if lo.as_slice() > target => lo.clone(),
            _ => target.to_vec(),
        };
        self.direction = Direction::Forward;
        self.saved_value.clear();
        self.charge_seek();
        self.inner.seek(&key::seek_key(&target, self.seq))?;
        self.find_next_user_entry(false)
    }

    /// Charges the view's level 0 for a seek (one block read per table), and marks level 0
    /// due for compaction once it has cost its budget (`compaction::read_trigger`).
    fn charge_seek(&self) {
        if let Some(newest) = self.view.level0_charges.charge_seek() {
            self.read_trigger.mark_due(newest);
        }
    }

    /// Positions on the last key `<= target`.
    ///
    /// # Errors
    /// I/O or corruption.
    pub fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        if self.upper.as_deref().is_some_and(|up| target >= up) {
            return self.seek_to_last();
        }
        self.direction = Direction::Reverse;
        self.saved_value.clear();
        self.charge_seek();
        let t = key::internal_key(target, 0, ValueType::Deletion);
        self.inner.seek_for_prev(&t)?;
        self.find_prev_user_entry()
    }

    /// Moves to the next key. (A cursor step that can fail, as in RocksDB's `Next`;
    /// not `Iterator::next`.)
    ///
    /// # Errors
    /// I/O or corruption.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<()> {
        if !self.valid {
            return Ok(());
        }
        if self.direction == Direction::Reverse {
            self.direction = Direction::Forward;
            if self.inner.valid() {
                self.inner.next()?;
            } else {
                self.inner.seek_to_first()?;
            }
        } else {
            self.saved_key.clear();
            self.saved_key
                .extend_from_slice(key::user_key(self.inner.key()));
            self.inner.next()?;
        }
        self.find_next_user_entry(true)
    }

    /// Moves to the previous key.
    ///
    /// # Errors
    /// I/O or corruption.
    pub fn prev(&mut self) -> Result<()> {
        if !self.valid {
            return Ok(());
        }
        if self.direction == Direction::Forward {
            self.saved_key.clear();
            self.saved_key
                .extend_from_slice(key::user_key(self.inner.key()));
            loop {
                self.inner.prev()?;
                if !self.inner.valid() {
                    self.valid = false;
                    self.saved_key.clear();
                    self.saved_value.clear();
                    return Ok(());
                }
                if key::user_key(self.inner.key()) < self.saved_key.as_slice() {
                    break;
                }
            }
            self.direction = Direction::Reverse;
        }
        self.find_prev_user_entry()
    }

    /// Collects the remaining entries (from the current position, forward) into a vector.
    ///
    /// # Errors
    /// I/O or corruption.
    pub fn collect_remaining(&mut self) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut out = Vec::new();
        while self.valid {
            out.push((self.key().to_vec(), self.value().to_vec()));
            self.next()?;
        }
        Ok(out)
    }

    /// Forward: skips to the newest visible, undeleted entry at or after the inner position.
    /// With `skipping`, entries of `saved_key` are hidden.
    fn find_next_user_entry(&mut self, mut skipping: bool) -> Result<()> {
        self.valid = false;
        while self.inner.valid() {
            let p = key::parse(self.inner.key(), std::path::Path::new("<iterator>"), 0)?;
            if self.upper.as_deref().is_some_and(|up| p.user_key >= up) {
                return Ok(());
            }
            if p.seq <= self.seq {
                let hidden = skipping && p.user_key <= self.saved_key.as_slice();
                if !hidden {
                    let deleted =
                        p.kind != ValueType::Value || self.tombstones.covers(p.user_key, p.seq);
                    if deleted {
                        self.saved_key.clear();
                        self.saved_key.extend_from_slice(p.user_key);
                        skipping = true;
                    } else {
                        self.valid = true;
                        return Ok(());
                    }
                }
            }
            self.inner.next()?;
        }
        Ok(())
    }

    /// Reverse: walks back through the entries before the inner position, keeping the
    /// newest visible version of the last user key that has an undeleted one.
    fn find_prev_user_entry(&mut self) -> Result<()> {
        let mut found_value = false;
        self.saved_key.clear();
        self.saved_value.clear();
        while self.inner.valid() {
            let p = key::parse(self.inner.key(), std::path::Path::new("<iterator>"), 0)?;
            if found_value && p.user_key < self.saved_key.as_slice() {
                break;
            }
            if self.lower.as_deref().is_some_and(|lo| p.user_key < lo) {
                break;
            }
            if p.seq <= self.seq {
                let deleted =
                    p.kind != ValueType::Value || self.tombstones.covers(p.user_key, p.seq);
                if deleted {
                    found_value = false;
                    self.saved_key.clear();
                    self.saved_value.clear();
                } else {
                    found_value = true;
                    self.saved_key.clear();
                    self.saved_key.extend_from_slice(p.user_key);
                    self.saved_value.clear();
                    self.saved_value.extend_from_slice(self.inner.value());
                }
            }
            self.inner.prev()?;
        }
        self.valid = found_value;
        if !found_value {
            self.saved_key.clear();
            self.direction = Direction::Forward;
        }
        Ok(())
    }
}
