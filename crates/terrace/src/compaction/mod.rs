//! Compaction: choosing what to compact, describing it as data, and the rules that decide
//! which entries survive.
//!
//! Owns: the picker (`picker`, a pure function of the level state), the serializable task
//! and result (`task`, docs/formats/compaction-task.md), compaction filters (`filter`) and
//! the entry-dropping stream (`stream`). See docs/techniques/leveled-compaction.md.
//! `executor` runs one task from its description, reading and writing table files through
//! the storage seam; `install` checks results against their task and turns them into a
//! version edit.
//! Must not touch: the manifest or the database; callers pick, install the result and
//! collect the inputs.
//! Concurrency: everything here is plain data or a single-owner cursor; the picker must
//! be called with a consistent snapshot of the levels (under the version lock).

pub mod adaptive;
pub mod check;
pub mod collaborative;
pub mod dispatch;
mod executor;
pub mod filter;
#[cfg(test)]
pub(crate) mod fixture;
pub mod install;
pub mod metrics;
pub mod picker;
pub mod read_trigger;
pub mod split;
pub mod stream;
pub mod takeover;
pub mod task;

pub use adaptive::{AdaptiveExecutor, DecisionConfig, ExecutionMode};
pub use check::CheckingExecutor;
pub use collaborative::{CollaborativeExecutor, SharePolicy};
pub use dispatch::{DispatchPolicy, DispatchingExecutor, UnitStats};
pub(crate) use executor::file_meta;
pub use executor::{
    execute, execute_pipelined, CompactionExecutor, ExecutorEnv, Level0Source, LinearExecutor,
    PipelinedExecutor,
};
pub use filter::{
    CompactionFilter, CompactionFilterFactory, FilterDecision, FilterRegistry, FilterSpec,
};
pub use install::{checked_edit, execute_checked, Trust};
pub use metrics::{RunMode, RunRecord, UnitTotals};
pub use picker::{
    level_targets, pick, pick_into_base_level, pick_manual, Level0Column, LevelState,
    PickedCompaction,
};
pub use split::SplitPolicy;
pub use stream::{CompactionStream, StreamConfig, StreamCounters};
pub use takeover::{
    execute_or_take_over, run_or_take_over, FinishedOutput, Outcome, Progress, ProgressSink,
};
pub use task::{
    CompactionInputLevel, CompactionReason, CompactionResult, CompactionStats, CompactionTask,
    Level0Input, Level0Unit, OutputSpec,
};
