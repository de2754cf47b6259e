//! Fuzz target: a compaction task description; a task that decodes survives encode and decode.
//! Fails on a panic or on a broken property reported by `terrace::fuzzing::check_compaction_task`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = terrace::fuzzing::check_compaction_task(data) {
        panic!("{broken}");
    }
});
