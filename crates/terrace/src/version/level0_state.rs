//! Level 0's share of a version and of a version edit, as this module sees it: opaque.
//!
//! Owns: [`Level0State`] (the immutable state object a level 0 keeps in each version),
//! [`Level0Record`] (one tagged record of an edit that only the level 0 decodes), the
//! range of edit tags reserved for such records, and [`NoLevel0State`] (the state of a
//! level 0 that records nothing beyond its table files).
//! Must not touch: what a record means; the level 0 that wrote it encodes, decodes and
//! applies it (docs/formats/manifest.md, "Level-0 records").
//! Concurrency: states are immutable and shared by `Arc` across threads.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use super::field::SAFE_TO_IGNORE;
use crate::error::{Error, Result};

/// One level-0 record of a version edit: a tag in the level-0 range and its payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Level0Record {
    /// The record's edit tag (see [`is_level0_tag`]); the safe-to-ignore bit keeps its
    /// meaning: a level 0 that does not know the tag may skip the record.
    pub tag: u32,
    /// The bytes the level 0 encoded.
    pub payload: Vec<u8>,
}

/// True if edit tag `tag` carries a level-0 record: tags 7 to 10 (the first ones, written
/// by the matrix level 0) and 64 to 127, with or without the safe-to-ignore bit.
pub fn is_level0_tag(tag: u32) -> bool {
    let t = tag & !SAFE_TO_IGNORE;
    (7..=10).contains(&t) || (64..=127).contains(&t)
}

/// The state a level 0 keeps in a version: what its records since the manifest began
/// have built. A version holds one; applying an edit asks it for the next.
pub trait Level0State: Send + Sync + fmt::Debug {
    /// The state after the level-0 records of one edit, in order.
    ///
    /// # Errors
    /// `InvalidArgument` if the records belong to another kind of level 0;
    /// `Unsupported` for a record of a newer release that may not be skipped; any other
    /// error if a record is malformed or contradicts the state (replaying a manifest
    /// reports those as corruption at the record).
    fn apply(&self, records: &[Level0Record]) -> Result<Arc<dyn Level0State>>;

    /// Records that rebuild this state from the empty one (a new manifest's snapshot).
    fn records(&self) -> Vec<Level0Record>;

    /// Numbers of the database's file-number space the state uses (never reused).
    fn numbers(&self) -> Vec<u64>;

    /// Units of data the state holds (rows of a matrix level 0), for statistics.
    fn len(&self) -> usize;

    /// True if the state holds nothing.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the state's data occupies outside the table files, for statistics.
    fn bytes(&self) -> u64;

    /// The state as `Any`, so that its level 0 can read its own type back.
    fn as_any(&self) -> &dyn Any;
}

/// The state of a level 0 that keeps nothing but level-0 table files (the classic one):
/// always empty. A level-0 record is refused, unless it may be skipped: it was written
/// by another kind of level 0, whose data this one cannot read.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoLevel0State;

impl Level0State for NoLevel0State {
    fn apply(&self, records: &[Level0Record]) -> Result<Arc<dyn Level0State>> {
        match records.iter().find(|r| r.tag & SAFE_TO_IGNORE == 0) {
            Some(r) => Err(Error::InvalidArgument(format!(
                "the manifest records level-0 data (tag {}) that this kind of level 0 does \
                 not keep: open the database with the level 0 that wrote it (for a matrix \
                 level 0's rows on persistent memory, Options::level0 set to a MatrixLevel0 \
                 whose region holds them)",
                r.tag
            ))),
            None => Ok(Arc::new(NoLevel0State)),
        }
    }

    fn records(&self) -> Vec<Level0Record> {
        Vec::new()
    }

    fn numbers(&self) -> Vec<u64> {
        Vec::new()
    }

    fn len(&self) -> usize {
        0
    }

    fn bytes(&self) -> u64 {
        0
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_level0_tag_range_keeps_the_first_matrix_tags_and_leaves_the_rest() {
        for t in [
            7,
            8,
            9,
            10,
            64,
            127,
            7 | SAFE_TO_IGNORE,
            100 | SAFE_TO_IGNORE,
        ] {
            assert!(is_level0_tag(t), "{t}");
        }
        for t in [1, 2, 3, 4, 5, 6, 11, 63, 128, 6 | SAFE_TO_IGNORE] {
            assert!(!is_level0_tag(t), "{t}");
        }
    }

    #[test]
    fn no_level0_state_refuses_records_it_cannot_skip() {
        let s = NoLevel0State;
        let skippable = Level0Record {
            tag: 70 | SAFE_TO_IGNORE,
            payload: vec![1],
        };
        assert!(s.apply(std::slice::from_ref(&skippable)).is_ok());
        let row = Level0Record {
            tag: 7,
            payload: vec![1],
        };
        let err = s.apply(&[skippable, row]).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgument(m) if m.contains("MatrixLevel0")),
            "{err}"
        );
        assert!(s.records().is_empty() && s.numbers().is_empty() && s.is_empty());
    }
}
