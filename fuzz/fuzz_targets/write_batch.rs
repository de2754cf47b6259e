//! Fuzz target: a log record's payload as a write batch; a batch that decodes rebuilds to the same bytes.
//! Fails on a panic or on a broken property reported by `terrace::fuzzing::check_batch`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = terrace::fuzzing::check_batch(data) {
        panic!("{broken}");
    }
});
