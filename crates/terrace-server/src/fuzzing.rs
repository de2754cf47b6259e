//! Checks of the server's decoders of untrusted bytes, shared by the fuzz targets in
//! `fuzz/` and this crate's tests (as `terrace::fuzzing` is for the engine's formats).
//!
//! Owns: one `check_*` function per decoder; each returns `Err` only when a property is
//! broken, and bytes that do not decode are `Ok`. A panic is the other failure looked for.
//! Must not touch: the network or any database.
//! Concurrency: pure functions.
//!
//! Compiled for tests and with the `fuzzing` feature only; not part of the API.

use crate::resp::{parse_command, Limits, Parsed};
use crate::value::{expiry_of, split_header, StoredValue, Top, ValueError};

/// A property a decoder broke, with what was seen.
pub type Broken = String;

/// Parses `data` as a stream of requests, with small limits and with a client's that has
/// not authenticated: every command parsed uses at least one byte and no more than given.
///
/// # Errors
/// When a parsed command claims no bytes or more bytes than are left.
pub fn check_resp_frame(data: &[u8]) -> Result<(), Broken> {
    let small = Limits {
        proto_max_bulk_len: 1 << 16,
        max_args: 1 << 10,
        max_inline_bytes: 1 << 12,
        unauthenticated: false,
    };
    for limits in [small, small.unauthenticated()] {
        let mut rest = data;
        while let Ok(Parsed::Command { consumed, .. }) = parse_command(rest, &limits) {
            if consumed == 0 || consumed > rest.len() {
                return Err(format!("command claims {consumed} of {} bytes", rest.len()));
            }
            rest = rest.get(consumed..).unwrap_or_default();
        }
    }
    Ok(())
}

/// Decodes `data` as a stored value: a value that decodes encodes to the same bytes, and
/// `split_header` and `expiry_of` agree with `StoredValue::decode` (the server reads
/// values all three ways); a collection's metadata is no string to the first two, and
/// `expiry_of` agrees with `Top::decode` on it.
///
/// # Errors
/// When the three readings disagree or a value re-encodes differently.
pub fn check_stored_value(data: &[u8]) -> Result<(), Broken> {
    let decoded = StoredValue::decode(data);
    let split = split_header(data);
    let expiry = expiry_of(data);
    match (&decoded, &split, &expiry) {
        (Ok(v), Ok((at, start)), Ok(e)) => {
            if v.encode() != data {
                return Err(format!("{v:?} re-encodes differently"));
            }
            if *at != v.expire_at_ms || *e != v.expire_at_ms {
                return Err(format!("expiry {at:?}/{e:?}, decoded {:?}", v.expire_at_ms));
            }
            if data.get(*start..) != Some(&v.data[..]) {
                return Err(format!("payload starts at {start}, decoded {:?}", v.data));
            }
            Ok(())
        }
        (Err(ValueError::NotAString(_)), Err(ValueError::NotAString(_)), _) => {
            match (Top::decode(data), &expiry) {
                (Ok(Top::Coll(m)), Ok(e)) if *e == m.expire_at_ms && m.encode() == data => Ok(()),
                (Err(a), Err(b)) if a == *b => Ok(()),
                (top, _) => Err(format!("collection {top:?}, expiry {expiry:?}")),
            }
        }
        (Err(a), Err(b), Err(c)) if a == b && b == c => Ok(()),
        _ => Err(format!(
            "decode {decoded:?}, split {split:?}, expiry {expiry:?}"
        )),
    }
}

#[cfg(test)]
mod tests;
