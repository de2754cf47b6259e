//! Replies and their encoding in RESP2 or RESP3.

use bytes::Bytes;

/// The protocol a connection negotiated with `HELLO` (RESP2 until then).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// RESP2: nulls are `$-1`/`*-1`, maps are flat arrays.
    #[default]
    Resp2,
    /// RESP3: `_` nulls, `%` maps, `~` sets, `,` doubles.
    Resp3,
}

/// One reply value, independent of the protocol it will be written in.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `+OK`.
    Ok,
    /// A simple string (`+text`); must not contain CR or LF.
    Status(String),
    /// An error (`-CODE text`), the text starting with its code (`ERR`, `WRONGTYPE`, ...).
    Error(String),
    /// An integer (`:n`).
    Integer(i64),
    /// A bulk string; `Bytes` so that a value read from the engine is shared, not copied.
    Bulk(Bytes),
    /// The null bulk string (RESP2 `$-1`).
    Nil,
    /// The null array (RESP2 `*-1`), as EXEC answers for an aborted transaction.
    NilArray,
    /// An array.
    Array(Vec<Reply>),
    /// A map; a flat array of keys and values in RESP2.
    Map(Vec<(Reply, Reply)>),
    /// A set; an array in RESP2.
    Set(Vec<Reply>),
    /// A double; a bulk string in RESP2.
    Double(f64),
    /// An out-of-band push (`>` in RESP3; an array in RESP2): pub/sub messages and the
    /// replies of the subscribe commands.
    Push(Vec<Reply>),
    /// Several replies to one command, each written as its own reply (SUBSCRIBE with
    /// several channels answers once per channel).
    Multi(Vec<Reply>),
}

impl Reply {
    /// `-ERR <text>`.
    pub fn err(text: impl std::fmt::Display) -> Reply {
        Reply::Error(format!("ERR {text}"))
    }

    /// A bulk string, or nil for `None`.
    pub fn bulk_or_nil(v: Option<impl Into<Bytes>>) -> Reply {
        v.map_or(Reply::Nil, |b| Reply::Bulk(b.into()))
    }

    /// The reply's text as RESP2 would carry it (for logs and tests).
    pub fn to_string_lossy(&self) -> String {
        let mut out = Vec::new();
        self.write(Protocol::Resp2, &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    /// Whether this is an error reply.
    pub fn is_error(&self) -> bool {
        matches!(self, Reply::Error(_))
    }

    /// Appends the encoding of this reply in `proto` to `out`.
    pub fn write(&self, proto: Protocol, out: &mut Vec<u8>) {
        let resp3 = proto == Protocol::Resp3;
        match self {
            Reply::Ok => out.extend_from_slice(b"+OK\r\n"),
            Reply::Status(s) => line(out, b'+', s.as_bytes()),
            Reply::Error(s) => {
                // An error text must stay on one line.
                let clean: Vec<u8> = s
                    .bytes()
                    .map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b })
                    .collect();
                line(out, b'-', &clean);
            }
            Reply::Integer(n) => line_int(out, b':', *n),
            Reply::Bulk(b) => bulk(out, b),
            Reply::Nil if resp3 => out.extend_from_slice(b"_\r\n"),
            Reply::Nil => out.extend_from_slice(b"$-1\r\n"),
            Reply::NilArray if resp3 => out.extend_from_slice(b"_\r\n"),
            Reply::NilArray => out.extend_from_slice(b"*-1\r\n"),
            Reply::Array(items) => {
                line_int(out, b'*', items.len());
                items.iter().for_each(|r| r.write(proto, out));
            }
            Reply::Set(items) => {
                let tag = if resp3 { b'~' } else { b'*' };
                line_int(out, tag, items.len());
                items.iter().for_each(|r| r.write(proto, out));
            }
            Reply::Map(pairs) => {
                if resp3 {
                    line_int(out, b'%', pairs.len());
                } else {
                    line_int(out, b'*', pairs.len() * 2);
                }
                for (k, v) in pairs {
                    k.write(proto, out);
                    v.write(proto, out);
                }
            }
            Reply::Push(items) => {
                let tag = if resp3 { b'>' } else { b'*' };
                line_int(out, tag, items.len());
                items.iter().for_each(|r| r.write(proto, out));
            }
            Reply::Multi(replies) => replies.iter().for_each(|r| r.write(proto, out)),
            Reply::Double(d) => {
                let mut digits = itoa::Buffer::new();
                let text: std::borrow::Cow<'_, str> = match integral(*d) {
                    Some(n) => digits.format(n).into(),
                    None => format_double(*d).into(),
                };
                if resp3 {
                    line(out, b',', text.as_bytes());
                } else {
                    bulk(out, text.as_bytes());
                }
            }
        }
    }
}

/// Formats a double as Redis does for replies (`inf`, `-inf`, shortest round-trip digits).
pub(crate) fn format_double(d: f64) -> String {
    if let Some(n) = integral(d) {
        itoa::Buffer::new().format(n).to_owned()
    } else if d.is_infinite() {
        if d > 0.0 { "inf" } else { "-inf" }.to_string()
    } else if d.is_nan() {
        "nan".to_string()
    } else {
        format!("{d}")
    }
}

/// `d` as an integer when it is one that `f64`'s shortest form prints as plain digits
/// (a sorted set's scores usually are): formatted by `itoa`, without `format!`'s
/// machinery and allocation. Not `-0.0`, which prints as `-0`.
fn integral(d: f64) -> Option<i64> {
    // Below 2^53 every integral double is exact, and `{}` prints it without exponent.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    (d.fract() == 0.0 && d.abs() < EXACT && !(d == 0.0 && d.is_sign_negative())).then_some(d as i64)
}

/// A line holding an integer (a count, a length, an integer reply), without a `String`.
fn line_int(out: &mut Vec<u8>, tag: u8, n: impl itoa::Integer) {
    line(out, tag, itoa::Buffer::new().format(n).as_bytes());
}

fn line(out: &mut Vec<u8>, tag: u8, body: &[u8]) {
    out.push(tag);
    out.extend_from_slice(body);
    out.extend_from_slice(b"\r\n");
}

fn bulk(out: &mut Vec<u8>, body: &[u8]) {
    line_int(out, b'$', body.len());
    out.extend_from_slice(body);
    out.extend_from_slice(b"\r\n");
}
