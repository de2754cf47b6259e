//! Fuzz target: a log file, read record by record to its end.
//! Fails on a panic or on a broken property reported by `terrace::fuzzing::check_wal`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = terrace::fuzzing::check_wal(data) {
        panic!("{broken}");
    }
});
