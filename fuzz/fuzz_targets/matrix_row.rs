//! Fuzz target: a matrix row image (row directory, header, metadata and data chunks),
//! as given and with its checksums recomputed, opened with `RowReader::open` and read.
//! Fails on a panic or on a broken property reported by `terrace::fuzzing::check_matrix_row`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = terrace::fuzzing::check_matrix_row(data) {
        panic!("{broken}");
    }
});
