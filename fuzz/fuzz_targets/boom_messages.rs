//! Fuzz target: BOOM's doorbell and handshake messages, and entries as a client writes
//! them. The first byte picks what the rest is decoded as: a request, a reply, an entry
//! or a frame. Whatever decodes must encode back to bytes that decode to the same
//! message; an entry's key and value lie inside the bytes given. Fails on a panic or a
//! broken property.
#![no_main]

use libfuzzer_sys::fuzz_target;
use terrace_boom::layout::{decode_entry, ENTRY_HEADER_BYTES};
use terrace_boom::proto::{read_frame, Reply, Request};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    match pick % 4 {
        0 => {
            if let Ok(r) = Request::decode(rest) {
                assert_eq!(Request::decode(&r.encode()).ok(), Some(r));
            }
        }
        1 => {
            if let Ok(r) = Reply::decode(rest) {
                assert_eq!(Reply::decode(&r.encode()).ok(), Some(r));
            }
        }
        2 => {
            if let Ok(e) = decode_entry(rest) {
                assert!(ENTRY_HEADER_BYTES + e.key.len() + e.value.len() <= rest.len());
            }
        }
        _ => {
            let mut input = rest;
            let mut buf = Vec::new();
            while let Ok(true) = read_frame(&mut input, &mut buf) {
                let _ = Request::decode(&buf);
            }
        }
    }
});
