//! The memtable's internal iterator: a cursor on one skiplist node.
//!
//! It holds the memtable alive and the index of its node; `next` follows the node's
//! level-0 link, seeks search from the head, and `prev` searches from the head for the
//! last node before the current one (as LevelDB's memtable does; backward scans are rare).
//! Nothing is copied: `key` and `value` borrow the node's buffer.

use std::sync::Arc;

use super::skiplist::NIL;
use super::MemTable;
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{trailer, user_key};

/// Iterator over a memtable's point entries (see [`MemTable::iter`]). `Send`.
pub struct MemTableIterator {
    mem: Arc<MemTable>,
    /// The current node, or `NIL` when not valid.
    node: u32,
}

impl MemTableIterator {
    pub(super) fn new(mem: Arc<MemTable>) -> Self {
        MemTableIterator { mem, node: NIL }
    }
}

impl InternalIterator for MemTableIterator {
    fn valid(&self) -> bool {
        self.node != NIL
    }

    fn seek_to_first(&mut self) -> Result<()> {
        self.node = self.mem.list.first();
        Ok(())
    }

    fn seek_to_last(&mut self) -> Result<()> {
        self.node = self.mem.list.find_last();
        Ok(())
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.node = self.mem.list.find_ge(user_key(target), trailer(target));
        Ok(())
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        self.node = self
            .mem
            .list
            .find_lt(user_key(target), trailer(target), true);
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        self.node = self.mem.list.next_of(self.node);
        Ok(())
    }

    fn prev(&mut self) -> Result<()> {
        let list = &self.mem.list;
        self.node = match list.node(self.node) {
            Some(n) => {
                let k = n.key();
                list.find_lt(user_key(k), trailer(k), false)
            }
            None => NIL,
        };
        Ok(())
    }

    fn key(&self) -> &[u8] {
        self.mem.list.node(self.node).map_or(&[], |n| n.key())
    }

    fn value(&self) -> &[u8] {
        let list = &self.mem.list;
        list.latest(self.node).map_or(&[], |n| n.value())
    }
}
