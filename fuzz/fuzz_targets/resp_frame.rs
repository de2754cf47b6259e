//! Fuzzes the RESP request parser: any bytes parse to a command, "incomplete" or a
//! protocol error, never a panic, and a parsed command never claims more bytes than given.
#![no_main]

use libfuzzer_sys::fuzz_target;
use terrace_server::resp::{parse_command, Limits, Parsed};

fuzz_target!(|data: &[u8]| {
    let limits = Limits {
        proto_max_bulk_len: 1 << 16,
        max_args: 1 << 10,
        max_inline_bytes: 1 << 12,
    };
    let mut rest = data;
    while let Ok(Parsed::Command { consumed, .. }) = parse_command(rest, &limits) {
        assert!(consumed > 0 && consumed <= rest.len());
        rest = &rest[consumed..];
    }
});
