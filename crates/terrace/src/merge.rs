//! The merging iterator: one internal-key-ordered view over several sorted children.
//!
//! Owns: [`MergingIterator`] and its direction-switching rules (LevelDB's
//! `table/merger.cc` semantics).
//! Must not touch: what the children are; memtables, tables and levels hand them in.
//! Concurrency: one owner, like every [`InternalIterator`]; it may be sent to another
//! thread when its children can.
//!
//! The current child is found by a linear scan over the children. Merges in Terrace have
//! few children (the memtables, the level-0 files and one iterator per deeper level, or
//! the inputs of one compaction), so a scan of a few dozen short key comparisons costs
//! about what a heap's bookkeeping does, never allocates, and keeps the direction
//! switch simple. A heap would pay off past roughly 32 children.

use std::cmp::Ordering;

use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key;

/// Which way the children are positioned relative to the current entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// Every child other than the current one is at its first entry `>` the current key.
    Forward,
    /// Every child other than the current one is at its last entry `<` the current key.
    Reverse,
}

/// Merges children that are each sorted in internal-key order.
///
/// Internal keys are expected to be unique across children, as they are in a healthy
/// database (every write has its own sequence number). If two children do hold an equal
/// key, a one-way scan returns both (lower child index first going forward), but a
/// direction change may skip the copy in the other child.
///
/// An error from any child is returned from the movement that hit it and leaves the
/// merge invalid until it is repositioned by a seek.
pub struct MergingIterator {
    children: Vec<Box<dyn InternalIterator>>,
    current: Option<usize>,
    direction: Direction,
}

impl MergingIterator {
    /// A merge over `children`; it is not positioned until a seek.
    pub fn new(children: Vec<Box<dyn InternalIterator>>) -> Self {
        MergingIterator {
            children,
            current: None,
            direction: Direction::Forward,
        }
    }

    /// Number of children.
    pub fn num_children(&self) -> usize {
        self.children.len()
    }

    /// Runs `step` on every child, forgetting the position if one fails.
    fn each_child(
        &mut self,
        mut step: impl FnMut(&mut dyn InternalIterator) -> Result<()>,
    ) -> Result<()> {
        for child in &mut self.children {
            if let Err(e) = step(child.as_mut()) {
                self.current = None;
                return Err(e);
            }
        }
        Ok(())
    }

    /// Points `current` at the valid child with the smallest key (lowest index on ties).
    fn find_smallest(&mut self) {
        let mut best: Option<usize> = None;
        for (i, child) in self.children.iter().enumerate() {
            if !child.valid() {
                continue;
            }
            best = match best.and_then(|b| self.children.get(b).map(|c| (b, c))) {
                Some((b, c)) if key::compare(child.key(), c.key()) != Ordering::Less => Some(b),
                _ => Some(i),
            };
        }
        self.current = best;
    }

    /// Points `current` at the valid child with the largest key (highest index on ties).
    fn find_largest(&mut self) {
        let mut best: Option<usize> = None;
        for (i, child) in self.children.iter().enumerate().rev() {
            if !child.valid() {
                continue;
            }
            best = match best.and_then(|b| self.children.get(b).map(|c| (b, c))) {
                Some((b, c)) if key::compare(child.key(), c.key()) != Ordering::Greater => Some(b),
                _ => Some(i),
            };
        }
        self.current = best;
    }

    fn current_child(&mut self) -> Option<&mut Box<dyn InternalIterator>> {
        self.current.and_then(|c| self.children.get_mut(c))
    }

    /// Moves every non-current child to its first entry after the current key.
    fn switch_to_forward(&mut self, cur: usize) -> Result<()> {
        let target = self.key().to_vec();
        for (i, child) in self.children.iter_mut().enumerate() {
            if i == cur {
                continue;
            }
            let moved = child.seek(&target).and_then(|()| {
                if child.valid() && key::compare(child.key(), &target) == Ordering::Equal {
                    child.next()
                } else {
                    Ok(())
                }
            });
            if let Err(e) = moved {
                self.current = None;
                return Err(e);
            }
        }
        self.direction = Direction::Forward;
        Ok(())
    }

    /// Moves every non-current child to its last entry before the current key.
    fn switch_to_reverse(&mut self, cur: usize) -> Result<()> {
        let target = self.key().to_vec();
        for (i, child) in self.children.iter_mut().enumerate() {
            if i == cur {
                continue;
            }
            let moved = child.seek_for_prev(&target).and_then(|()| {
                if child.valid() && key::compare(child.key(), &target) == Ordering::Equal {
                    child.prev()
                } else {
                    Ok(())
                }
            });
            if let Err(e) = moved {
                self.current = None;
                return Err(e);
            }
        }
        self.direction = Direction::Reverse;
        Ok(())
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        self.current
            .and_then(|c| self.children.get(c))
            .is_some_and(|c| c.valid())
    }

    fn seek_to_first(&mut self) -> Result<()> {
        self.each_child(|c| c.seek_to_first())?;
        self.direction = Direction::Forward;
        self.find_smallest();
        Ok(())
    }

    fn seek_to_last(&mut self) -> Result<()> {
        self.each_child(|c| c.seek_to_last())?;
        self.direction = Direction::Reverse;
        self.find_largest();
        Ok(())
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.each_child(|c| c.seek(target))?;
        self.direction = Direction::Forward;
        self.find_smallest();
        Ok(())
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        self.each_child(|c| c.seek_for_prev(target))?;
        self.direction = Direction::Reverse;
        self.find_largest();
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        let Some(cur) = self.current.filter(|_| self.valid()) else {
            return Ok(());
        };
        if self.direction != Direction::Forward {
            self.switch_to_forward(cur)?;
        }
        if let Some(child) = self.current_child() {
            if let Err(e) = child.next() {
                self.current = None;
                return Err(e);
            }
        }
        self.find_smallest();
        Ok(())
    }

    fn prev(&mut self) -> Result<()> {
        let Some(cur) = self.current.filter(|_| self.valid()) else {
            return Ok(());
        };
        if self.direction != Direction::Reverse {
            self.switch_to_reverse(cur)?;
        }
        if let Some(child) = self.current_child() {
            if let Err(e) = child.prev() {
                self.current = None;
                return Err(e);
            }
        }
        self.find_largest();
        Ok(())
    }

    fn key(&self) -> &[u8] {
        self.current
            .and_then(|c| self.children.get(c))
            .filter(|c| c.valid())
            .map_or(&[][..], |c| c.key())
    }

    fn value(&self) -> &[u8] {
        self.current
            .and_then(|c| self.children.get(c))
            .filter(|c| c.valid())
            .map_or(&[][..], |c| c.value())
    }
}

#[cfg(test)]
mod tests;
