//! The request parser: multibulk (`*N\r\n$L\r\n...`) and inline (`PING\r\n`) commands.

/// Limits on what one request may claim; over a limit is a protocol error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest bulk string accepted (Redis's `proto-max-bulk-len`, 512 MiB by default).
    pub proto_max_bulk_len: u64,
    /// Most arguments in one command (Redis accepts 1024 * 1024).
    pub max_args: u64,
    /// Longest inline command or header line without its terminator (64 KiB in Redis).
    pub max_inline_bytes: usize,
    /// The client has not authenticated yet: the limits are
    /// [`Limits::unauthenticated`]'s, and an error says so.
    pub unauthenticated: bool,
}

/// Most arguments in one command of a client that has not authenticated (Redis's limit
/// since CVE-2021-32675).
pub const UNAUTHENTICATED_MAX_ARGS: u64 = 10;
/// Largest bulk string of a client that has not authenticated (16 KiB, as Redis).
pub const UNAUTHENTICATED_MAX_BULK_LEN: u64 = 16 * 1024;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            proto_max_bulk_len: 512 * 1024 * 1024,
            max_args: 1024 * 1024,
            max_inline_bytes: 64 * 1024,
            unauthenticated: false,
        }
    }
}

impl Limits {
    /// These limits narrowed for a client that must authenticate and has not: at most
    /// [`UNAUTHENTICATED_MAX_ARGS`] arguments of at most [`UNAUTHENTICATED_MAX_BULK_LEN`]
    /// bytes each, so that an unauthenticated client can make the server buffer little
    /// more than one small command.
    pub fn unauthenticated(self) -> Limits {
        Limits {
            proto_max_bulk_len: self.proto_max_bulk_len.min(UNAUTHENTICATED_MAX_BULK_LEN),
            max_args: self.max_args.min(UNAUTHENTICATED_MAX_ARGS),
            max_inline_bytes: self.max_inline_bytes,
            unauthenticated: true,
        }
    }

    /// The error for a count or length over these limits (`what`: "multibulk" or "bulk").
    fn over(&self, what: &str) -> ProtocolError {
        if self.unauthenticated {
            ProtocolError(format!("unauthenticated {what} length"))
        } else {
            ProtocolError(format!("invalid {what} length"))
        }
    }
}

/// A request the client got wrong; the reply is `-ERR Protocol error: ...` and the
/// connection closes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Protocol error: {0}")]
pub struct ProtocolError(pub String);

/// The result of parsing the front of a buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// More bytes are needed; nothing was consumed.
    Incomplete,
    /// A complete command of the given arguments (possibly none: an empty line or `*0`)
    /// that used the first `consumed` bytes.
    Command {
        /// The arguments, command name first.
        args: Vec<Vec<u8>>,
        /// Bytes of the buffer the command used.
        consumed: usize,
    },
}

/// What [`parse_command_into`] found at the front of a buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// More bytes are needed; nothing was consumed.
    Incomplete,
    /// A multibulk command (possibly empty): its arguments were pushed to the caller's
    /// vector as slices of the buffer, nothing copied.
    Borrowed {
        /// Bytes of the buffer the command used.
        consumed: usize,
    },
    /// An inline command, whose arguments are copies (quotes and escapes undone).
    Owned {
        /// The arguments, command name first (none for an empty line).
        args: Vec<Vec<u8>>,
        /// Bytes of the buffer the command used.
        consumed: usize,
    },
}

/// A multibulk command's arguments, borrowed from the read buffer: on the stack for
/// commands of up to eight arguments, so that parsing one allocates nothing.
pub type ArgList<'b> = smallvec::SmallVec<[&'b [u8]; 8]>;

/// Parses one command from the front of `buf`, copying its arguments.
///
/// # Errors
/// [`ProtocolError`] for malformed input or a claim over one of `limits`.
pub fn parse_command(buf: &[u8], limits: &Limits) -> Result<Parsed, ProtocolError> {
    let mut borrowed = ArgList::new();
    Ok(match parse_command_into(buf, limits, &mut borrowed)? {
        Frame::Incomplete => Parsed::Incomplete,
        Frame::Borrowed { consumed } => Parsed::Command {
            args: borrowed.iter().map(|a| a.to_vec()).collect(),
            consumed,
        },
        Frame::Owned { args, consumed } => Parsed::Command { args, consumed },
    })
}

/// Parses one command from the front of `buf`. A multibulk command's arguments are
/// pushed to `args` (cleared first) as slices of `buf`; an inline command's come back
/// owned in [`Frame::Owned`].
///
/// # Errors
/// [`ProtocolError`] for malformed input or a claim over one of `limits`.
pub fn parse_command_into<'b>(
    buf: &'b [u8],
    limits: &Limits,
    args: &mut ArgList<'b>,
) -> Result<Frame, ProtocolError> {
    args.clear();
    match buf.first() {
        None => Ok(Frame::Incomplete),
        Some(b'*') => parse_multibulk(buf, limits, args),
        Some(_) => parse_inline(buf, limits),
    }
}

/// Finds the line starting at `start`; returns its end (the `\r`) or `None` if incomplete.
fn line_end(buf: &[u8], start: usize) -> Option<usize> {
    let rest = buf.get(start..)?;
    let nl = rest.iter().position(|&b| b == b'\n')?;
    let end = start + nl;
    Some(if end > start && buf.get(end - 1) == Some(&b'\r') {
        end - 1
    } else {
        end
    })
}

/// A decimal integer as Redis's `string2ll` reads one: `0`, or an optional `-` then a
/// digit 1-9 and more digits, nothing else (no `+`, no leading zeros, no `-0`), within
/// `i64` (no allocation, no UTF-8 check). Lengths in requests are read with it (Redis
/// answers `$01` with a protocol error), and so are integer arguments
/// (`commands::arg::parse_i64`).
pub(crate) fn parse_decimal(b: &[u8]) -> Option<i64> {
    let (negative, digits) = match b {
        [b'0'] => return Some(0),
        [b'-', rest @ ..] => (true, rest),
        _ => (false, b),
    };
    if !matches!(digits.first(), Some(b'1'..=b'9')) {
        return None;
    }
    let mut n: i64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        let d = i64::from(b - b'0');
        // Accumulated with the sign, so that i64::MIN parses.
        n = n
            .checked_mul(10)?
            .checked_add(if negative { -d } else { d })?;
    }
    Some(n)
}

/// Reads a `<prefix><integer>\r\n` header at `pos`; `Ok(None)` if incomplete.
fn header(
    buf: &[u8],
    pos: usize,
    limits: &Limits,
    what: &str,
) -> Result<Option<(i64, usize)>, ProtocolError> {
    let Some(end) = line_end(buf, pos) else {
        if buf.len() - pos > limits.max_inline_bytes {
            return Err(ProtocolError(format!("too big {what} count string")));
        }
        return Ok(None);
    };
    if buf.get(end) != Some(&b'\r') {
        return Err(ProtocolError(format!("invalid {what} length")));
    }
    let digits = buf.get(pos + 1..end).unwrap_or_default();
    let n = parse_decimal(digits).ok_or_else(|| ProtocolError(format!("invalid {what} length")))?;
    Ok(Some((n, end + 2)))
}

fn parse_multibulk<'b>(
    buf: &'b [u8],
    limits: &Limits,
    args: &mut ArgList<'b>,
) -> Result<Frame, ProtocolError> {
    let Some((count, mut pos)) = header(buf, 0, limits, "multibulk")? else {
        return Ok(Frame::Incomplete);
    };
    if count > 0 && count as u64 > limits.max_args {
        return Err(limits.over("multibulk"));
    }
    if count <= 0 {
        return Ok(Frame::Borrowed { consumed: pos });
    }
    // Never trust the count for the allocation: grow as elements arrive.
    args.reserve((count as usize).min(64));
    for _ in 0..count {
        match buf.get(pos) {
            None => return Ok(Frame::Incomplete),
            Some(b'$') => {}
            Some(&other) => {
                return Err(ProtocolError(format!(
                    "expected '$', got '{}'",
                    char::from(other)
                )))
            }
        }
        let Some((len, body)) = header(buf, pos, limits, "bulk")? else {
            return Ok(Frame::Incomplete);
        };
        if len < 0 {
            return Err(ProtocolError("invalid bulk length".to_string()));
        }
        if len as u64 > limits.proto_max_bulk_len {
            return Err(limits.over("bulk"));
        }
        let len = len as usize;
        let Some(end) = body.checked_add(len) else {
            return Err(ProtocolError("invalid bulk length".to_string()));
        };
        if buf.len() < end + 2 {
            return Ok(Frame::Incomplete);
        }
        if buf.get(end..end + 2) != Some(b"\r\n".as_slice()) {
            return Err(ProtocolError(
                "bulk string not terminated by CRLF".to_string(),
            ));
        }
        args.push(buf.get(body..end).unwrap_or_default());
        pos = end + 2;
    }
    Ok(Frame::Borrowed { consumed: pos })
}

fn parse_inline(buf: &[u8], limits: &Limits) -> Result<Frame, ProtocolError> {
    let Some(nl) = buf.iter().position(|&b| b == b'\n') else {
        if buf.len() > limits.max_inline_bytes {
            return Err(ProtocolError("too big inline request".to_string()));
        }
        return Ok(Frame::Incomplete);
    };
    if nl > limits.max_inline_bytes {
        return Err(ProtocolError("too big inline request".to_string()));
    }
    let line = buf.get(..nl).unwrap_or_default();
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let args = split_args(line)
        .ok_or_else(|| ProtocolError("unbalanced quotes in request".to_string()))?;
    if args.len() as u64 > limits.max_args {
        return Err(limits.over("multibulk"));
    }
    Ok(Frame::Owned {
        args,
        consumed: nl + 1,
    })
}

/// Splits an inline command like Redis's `sdssplitargs`: whitespace separates arguments,
/// double quotes allow `\n`, `\xHH`-style escapes, single quotes allow `\'`.
fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        while line.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        let Some(&first) = line.get(i) else {
            return Some(args);
        };
        let mut cur = Vec::new();
        match first {
            b'"' => {
                i += 1;
                loop {
                    match *line.get(i)? {
                        b'\\' => {
                            let next = *line.get(i + 1)?;
                            if next == b'x' {
                                let hex = line.get(i + 2..i + 4)?;
                                let s = std::str::from_utf8(hex).ok();
                                if let Some(v) = s.and_then(|s| u8::from_str_radix(s, 16).ok()) {
                                    cur.push(v);
                                    i += 4;
                                    continue;
                                }
                            }
                            cur.push(match next {
                                b'n' => b'\n',
                                b'r' => b'\r',
                                b't' => b'\t',
                                b'b' => 8,
                                b'a' => 7,
                                other => other,
                            });
                            i += 2;
                        }
                        b'"' => {
                            i += 1;
                            break;
                        }
                        c => {
                            cur.push(c);
                            i += 1;
                        }
                    }
                }
                // A closing quote must be followed by a space or the end.
                if line.get(i).is_some_and(|b| !b.is_ascii_whitespace()) {
                    return None;
                }
            }
            b'\'' => {
                i += 1;
                loop {
                    match *line.get(i)? {
                        b'\\' if line.get(i + 1) == Some(&b'\'') => {
                            cur.push(b'\'');
                            i += 2;
                        }
                        b'\'' => {
                            i += 1;
                            break;
                        }
                        c => {
                            cur.push(c);
                            i += 1;
                        }
                    }
                }
                if line.get(i).is_some_and(|b| !b.is_ascii_whitespace()) {
                    return None;
                }
            }
            _ => {
                while let Some(&c) = line.get(i) {
                    if c.is_ascii_whitespace() {
                        break;
                    }
                    cur.push(c);
                    i += 1;
                }
            }
        }
        args.push(cur);
    }
}
