//! Fuzz target: a table block's contents (no trailer), decoded and walked both ways.
//! Fails on a panic or on a broken property reported by `terrace::fuzzing::check_block`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = terrace::fuzzing::check_block(data) {
        panic!("{broken}");
    }
});
