//! The flags of the matrix container level 0 (`--l0=matrix`): where its persistent-memory
//! region lives, how large it is and how fast it may move bytes
//! (docs/techniques/matrixkv.md).
//!
//! Owns: `MatrixFlags`, their defaults and parsing, and the `Level0` they describe.
//! Must not touch: the database.
//! Concurrency: plain data.

use std::path::PathBuf;
use std::sync::Arc;

use terrace::level0::{ClassicLevel0, Level0, MatrixLevel0, MatrixOptions, DEFAULT_REGION_FILE};

use super::{bad, num};
use crate::error::Result;

/// Which level 0 a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum L0Kind {
    /// Level-0 table files (RocksDB's level 0).
    #[default]
    Classic,
    /// The matrix container on the persistent-memory tier.
    Matrix,
}

/// Settings of `--l0=matrix`.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixFlags {
    /// `--l0`.
    pub l0: L0Kind,
    /// `--pmem_path`: the persistent-memory tier's directory (the region file goes
    /// there); unset puts it in the database directory.
    pub pmem_path: Option<PathBuf>,
    /// `--matrix_capacity`: bytes of rows the container holds.
    pub capacity: u64,
    /// `--matrix_columns`: the capacity divided by this is a column's target size.
    pub columns: u32,
    /// `--matrix_segment_rows`: rows per segment bloom filter.
    pub segment_rows: usize,
    /// `--matrix_merge_segments`: segments one table merge rewrites into fewer rows.
    pub merge_segments: usize,
    /// `--matrix_trigger`: fraction of the capacity that freezes the rows for column
    /// compaction.
    pub trigger: f64,
    /// `--matrix_level1_bytes`: level 1's byte target (0: the capacity).
    pub level1_bytes: u64,
    /// `--pmem_rate_limit`: bytes per second the region may move, persisted plus read
    /// (0: unlimited); a token bucket, not a model of the media (docs/formats/pmem.md).
    pub rate_limit: u64,
    /// The first of `--pmem_path`, `--pmem_rate_limit` and `--matrix_*` given, with its
    /// value: refused with `--l0=classic`, where it would mean nothing.
    pub given: Option<(String, String)>,
}

impl Default for MatrixFlags {
    fn default() -> Self {
        let d = MatrixOptions::default();
        MatrixFlags {
            l0: L0Kind::Classic,
            pmem_path: None,
            capacity: d.capacity,
            columns: d.columns,
            segment_rows: d.params.segment_rows,
            merge_segments: d.params.merge_segments,
            trigger: d.compaction_trigger,
            level1_bytes: d.level1_bytes,
            rate_limit: d.pmem_rate_limit,
            given: None,
        }
    }
}

impl MatrixFlags {
    /// Sets flag `name`; `None` if it is not one of these.
    pub(super) fn set(&mut self, name: &str, v: &str) -> Option<Result<()>> {
        let r = match name {
            "l0" => match v {
                "classic" => {
                    self.l0 = L0Kind::Classic;
                    Ok(())
                }
                "matrix" => {
                    self.l0 = L0Kind::Matrix;
                    Ok(())
                }
                _ => Err(bad(name, v, "expected classic or matrix")),
            },
            "pmem_path" => {
                self.pmem_path = Some(PathBuf::from(v));
                Ok(())
            }
            "matrix_capacity" => num(name, v).map(|n| self.capacity = n),
            "matrix_columns" => num(name, v).map(|n| self.columns = n),
            "matrix_segment_rows" => num(name, v).map(|n| self.segment_rows = n),
            "matrix_merge_segments" => num(name, v).map(|n| self.merge_segments = n),
            "matrix_trigger" => num(name, v).map(|n| self.trigger = n),
            "matrix_level1_bytes" => num(name, v).map(|n| self.level1_bytes = n),
            "pmem_rate_limit" => num(name, v).map(|n| self.rate_limit = n),
            _ => return None,
        };
        if name != "l0" && self.given.is_none() {
            self.given = Some((name.to_string(), v.to_string()));
        }
        Some(r)
    }

    /// The level 0 these flags describe (a fresh instance for every open).
    ///
    /// # Errors
    /// A bad value for a matrix setting; a matrix setting with `--l0=classic`.
    pub fn level0(&self) -> Result<Arc<dyn Level0>> {
        match self.l0 {
            L0Kind::Classic => match &self.given {
                Some((name, v)) => Err(bad(name, v, "applies only with --l0=matrix")),
                None => Ok(Arc::new(ClassicLevel0)),
            },
            L0Kind::Matrix => {
                let l0 = MatrixLevel0::new(self.matrix_options())
                    .map_err(|e| bad("l0", "matrix", &e.to_string()))?;
                Ok(Arc::new(l0))
            }
        }
    }

    /// The options of the matrix container these flags describe (unchecked).
    pub fn matrix_options(&self) -> MatrixOptions {
        let mut opts = MatrixOptions {
            region_path: self.pmem_path.as_ref().map(|p| p.join(DEFAULT_REGION_FILE)),
            capacity: self.capacity,
            columns: self.columns,
            compaction_trigger: self.trigger,
            level1_bytes: self.level1_bytes,
            pmem_rate_limit: self.rate_limit,
            ..MatrixOptions::default()
        };
        opts.params.segment_rows = self.segment_rows;
        opts.params.merge_segments = self.merge_segments;
        opts
    }
}
