//! Integration tests of the bench harness through its public API (one binary).
//! They run benchmarks on tiny databases and check fields and counts; no speed is asserted.

mod compaction_levels;
mod server_mode;
mod smoke;
