//! Fuzz target: a log file whose fragment checksums are recomputed after mutation, so
//! mutations reach fragment types, lengths, reassembly and resynchronisation.
//! Fails on a panic or on a broken property reported by `terrace::fuzzing::check_wal_fixed`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = terrace::fuzzing::check_wal_fixed(data) {
        panic!("{broken}");
    }
});
