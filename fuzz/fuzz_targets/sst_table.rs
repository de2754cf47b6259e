//! Fuzz target: a whole table file, opened through an in-memory ReadableFile and read.
//! Fails on a panic or on a broken property reported by `terrace::fuzzing::check_table`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = terrace::fuzzing::check_table(data) {
        panic!("{broken}");
    }
});
