//! Fuzz target: a stream of RESP requests parsed command by command (authenticated and
//! unauthenticated limits); a parsed command never claims more bytes than given.
//! Fails on a panic or on a broken property reported by `terrace_server::fuzzing::check_resp_frame`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = terrace_server::fuzzing::check_resp_frame(data) {
        panic!("{broken}");
    }
});
