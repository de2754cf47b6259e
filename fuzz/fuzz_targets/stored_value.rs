//! Fuzz target: a value as `terrace serve` stores it (`StoredValue::decode`); a value that
//! decodes re-encodes to the same bytes, and the server's three readings agree.
//! Fails on a panic or on a broken property reported by `terrace_server::fuzzing::check_stored_value`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = terrace_server::fuzzing::check_stored_value(data) {
        panic!("{broken}");
    }
});
