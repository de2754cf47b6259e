//! Fuzz target: a whole table file whose block and footer checksums are recomputed after
//! mutation, so mutations reach block decoding, the index, the filter and the properties.
//! Fails on a panic or on a broken property reported by `terrace::fuzzing::check_table_fixed`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = terrace::fuzzing::check_table_fixed(data) {
        panic!("{broken}");
    }
});
