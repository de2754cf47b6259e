//! Fuzz target: the first bytes of a persistent-memory region file (`Header::decode`),
//! as given and with the header checksum recomputed.
//! Fails on a panic or on a broken property reported by `terrace::fuzzing::check_pmem_header`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = terrace::fuzzing::check_pmem_header(data) {
        panic!("{broken}");
    }
});
