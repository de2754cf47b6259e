//! Argument parsing as Redis does it (strict integers, floats, option names).

use super::Fail;

/// Argument `i` of a command, or empty past the end (arity is checked before handlers
/// run, so only optional arguments can be missing).
pub(crate) fn arg<'a>(args: &[&'a [u8]], i: usize) -> &'a [u8] {
    args.get(i).copied().unwrap_or_default()
}

/// Parses a signed 64-bit integer the way Redis's `string2ll` does: an optional `-`, no
/// `+`, no spaces, no leading zeros.
pub(crate) fn parse_i64(b: &[u8]) -> Option<i64> {
    if b.len() > 20 {
        return None;
    }
    crate::resp::parse_decimal(b)
}

/// An integer argument, or `-ERR value is not an integer or out of range`.
pub(crate) fn int(b: &[u8]) -> Result<i64, Fail> {
    parse_i64(b).ok_or_else(Fail::not_integer)
}

/// Parses a float as Redis's `string2ld` does: no spaces, no NaN.
pub(crate) fn parse_f64(b: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(b).ok()?;
    if s.is_empty() || s.starts_with(char::is_whitespace) || s.ends_with(char::is_whitespace) {
        return None;
    }
    let v: f64 = match s.to_ascii_lowercase().as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => f64::INFINITY,
        "-inf" | "-infinity" => f64::NEG_INFINITY,
        _ => s.parse().ok()?,
    };
    (!v.is_nan()).then_some(v)
}

/// Whether `arg` is the option `name` (case-insensitive).
pub(crate) fn is(arg: &[u8], name: &str) -> bool {
    arg.eq_ignore_ascii_case(name.as_bytes())
}
