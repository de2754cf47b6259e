//! The readers' view of the matrix container: the groups of one version, newest first,
//! answering point lookups and contributing iterators.
//!
//! Owns: `MatrixView`, the `Level0View` of the container.
//! Must not touch: the container's state; a view only holds its groups.
//! Concurrency: immutable; shared by the readers that hold it, and the rows it holds stay
//! mapped until the last such view is dropped.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::SeqNo;
use crate::level0::matrix::MatrixGroup;
use crate::level0::Level0View;
use crate::pmem::Extent;
use crate::range_del::RangeTombstone;
use crate::tables::Lookup;

/// The readers' view: groups newest first.
pub(in crate::level0::matrix) struct MatrixView {
    pub(in crate::level0::matrix) groups: Vec<Arc<MatrixGroup<Extent>>>,
    pub(in crate::level0::matrix) error: Option<Error>,
}

impl MatrixView {
    pub(in crate::level0::matrix) fn failed(e: Error) -> Self {
        MatrixView {
            groups: Vec::new(),
            error: Some(e),
        }
    }
}

impl Level0View for MatrixView {
    fn get(
        &self,
        user_key: &[u8],
        _seek_key: &[u8],
        snap: SeqNo,
        max_tombstone: &mut SeqNo,
        _fill_cache: bool,
    ) -> Result<Lookup> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        for g in &self.groups {
            if let Lookup::Found(v) = g.get(user_key, snap, max_tombstone)? {
                return Ok(Lookup::Found(v));
            }
        }
        Ok(Lookup::Missing)
    }

    fn add_iterators(
        &self,
        out: &mut Vec<Box<dyn InternalIterator>>,
        tombstones: &mut Vec<RangeTombstone>,
        _fill_cache: bool,
    ) -> Result<()> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        for g in &self.groups {
            tombstones.extend(g.range_tombstones());
            out.extend(g.iterators());
        }
        Ok(())
    }
}
