//! Compaction: choosing what to compact, describing it as data, and the rules that decide
//! which entries survive.
//!
//! Owns: the picker (`picker`, a pure function of the level state), the serializable task
//! and result (`task`, docs/formats/compaction-task.md), compaction filters (`filter`) and
//! the entry-dropping stream (`stream`). See docs/techniques/leveled-compaction.md.
//! Must not touch: files, the manifest or the database; callers open the input tables,
//! write the outputs and install the result.
//! Concurrency: everything here is plain data or a single-owner cursor; the picker must
//! be called with a consistent snapshot of the levels (under the version lock).

pub mod filter;
pub mod picker;
pub mod stream;
pub mod task;

pub use filter::{
    CompactionFilter, CompactionFilterFactory, FilterDecision, FilterRegistry, FilterSpec,
};
pub use picker::{LevelState, PickedCompaction};
pub use stream::{CompactionStream, StreamConfig, StreamCounters};
pub use task::{
    CompactionInputLevel, CompactionReason, CompactionResult, CompactionStats, CompactionTask,
    OutputSpec,
};
