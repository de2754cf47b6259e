//! Settings of the matrix container: where its region lives, how large it is, and when
//! its rows freeze for column compaction.
//!
//! Owns: [`MatrixOptions`] and their defaults, and the default region file name.
//! Must not touch: the region or the rows; `MatrixLevel0::new` checks the values.
//! Concurrency: plain data, cloned into the container.

use std::path::PathBuf;
use std::sync::Arc;

use crate::level0::matrix::MatrixParams;
use crate::pmem::PmemMode;
use crate::storage::PowerSupply;

/// File name of the region inside the database directory when no path is given.
pub const DEFAULT_REGION_FILE: &str = "MATRIX.pmem";

/// Settings of the matrix container.
#[derive(Debug, Clone)]
pub struct MatrixOptions {
    /// The persistent-memory region file (on a DAX mount for real persistent memory);
    /// `None` puts `MATRIX.pmem` in the database directory.
    pub region_path: Option<PathBuf>,
    /// Bytes of row data the container holds (the thesis's matrix capacity).
    pub capacity: u64,
    /// Page size of the region.
    pub page_size: u32,
    /// `Mapped` for use; `Shadow` makes unpersisted writes vanish on a crash (tests).
    pub mode: PmemMode,
    /// Row, segment and table-merge parameters.
    pub params: MatrixParams,
    /// Fraction of the capacity at which the rows are frozen for column compaction
    /// (thesis: 2/3).
    pub compaction_trigger: f64,
    /// The capacity divided into this many columns gives a column's target size (the
    /// thesis's N, for which it gives no value). Default 32: at the bench scale (128 MiB,
    /// 4 MiB memtables) a column is one memtable's worth, and 32 gave shorter write gaps
    /// than 16 or 8 with the same write amplification (BENCHMARKS.md).
    pub columns: u32,
    /// Level 1's byte target (the base of every deeper target); 0, the default, makes it
    /// the capacity, so that the tree is as deep as with a level 0 of this size (the
    /// thesis's L1 is a small fraction of its container: its `--paper` preset).
    pub level1_bytes: u64,
    /// Bytes per second the region may move, persisted plus read (`PmemOptions::rate_limit`;
    /// 0, the default: unlimited): makes a region emulated in DRAM as slow as a device.
    pub pmem_rate_limit: u64,
    /// For fault-injection tests only: the region's persists return `Ok` but make nothing
    /// durable (`PmemRegion::set_skip_persists`), so in `Shadow` mode a crash loses the
    /// rows, as if the container had forgotten to persist them.
    #[doc(hidden)]
    pub skip_persists: bool,
    /// For crash tests only: the simulated power supply the region's persists ask
    /// (`PmemRegion::set_power`), shared with the database's `FaultStorage` so that one
    /// cut stops both tiers.
    #[doc(hidden)]
    pub power: Option<Arc<PowerSupply>>,
}

impl Default for MatrixOptions {
    fn default() -> Self {
        MatrixOptions {
            region_path: None,
            capacity: 256 << 20,
            page_size: 64 << 10,
            mode: PmemMode::Mapped,
            params: MatrixParams::default(),
            compaction_trigger: 2.0 / 3.0,
            columns: 32,
            level1_bytes: 0,
            pmem_rate_limit: 0,
            skip_persists: false,
            power: None,
        }
    }
}
