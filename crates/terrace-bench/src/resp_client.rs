//! A small blocking RESP2 client for server mode: parses `--target`, encodes commands as
//! arrays of bulk strings, parses the five RESP2 reply types, and pipelines by queueing
//! commands in a write buffer and then reading their replies in order. Hand-written
//! rather than the `redis` crate because the driver needs exactly this much (no async,
//! no connection manager, no value conversions) and must time each reply as it arrives.
//!
//! Owns: `Target`, one TCP connection per `Client` and its framing.
//! Must not touch: workloads or measurement.
//! Concurrency: one client per worker thread; a client is never shared.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::net::TcpStream;

use crate::error::{BenchError, Result};

#[cfg(test)]
mod tests;

/// The longest bulk string accepted (Redis's limit, 512 MiB).
const MAX_BULK: usize = 512 << 20;
/// The most elements accepted in one array reply.
const MAX_ARRAY: usize = 1 << 24;
/// The deepest nesting of arrays accepted.
const MAX_DEPTH: usize = 16;

/// A Redis-protocol server address given as `redis://HOST:PORT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Host name or IP address (IPv6 in brackets).
    pub host: String,
    /// TCP port.
    pub port: u16,
}

impl Target {
    /// Parses `redis://HOST:PORT`; nothing else (no user, password, database or query).
    ///
    /// # Errors
    /// `BadValue` for `--target` when the text is not of that form.
    pub fn parse(text: &str) -> Result<Target> {
        let bad = |reason: &str| BenchError::BadValue {
            flag: "target".into(),
            value: text.into(),
            reason: reason.into(),
        };
        let rest = text
            .strip_prefix("redis://")
            .ok_or_else(|| bad("expected redis://HOST:PORT, e.g. redis://127.0.0.1:6379"))?;
        if rest.contains(['@', '/', '?', '#']) {
            return Err(bad("only redis://HOST:PORT (no user, database or path)"));
        }
        let (host, port) = rest.rsplit_once(':').ok_or_else(|| bad("missing :PORT"))?;
        let port: u16 = port.parse().map_err(|_| bad("port must be 1..65535"))?;
        if port == 0 {
            return Err(bad("port must be 1..65535"));
        }
        if host.is_empty() {
            return Err(bad("missing HOST"));
        }
        Ok(Target {
            host: host.to_string(),
            port,
        })
    }

    fn addr(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "redis://{}:{}", self.host, self.port)
    }
}

/// One RESP2 reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `+OK`
    Status(String),
    /// `-ERR ...`
    Error(String),
    /// `:42`
    Integer(i64),
    /// `$3 abc`, or `$-1` (nil).
    Bulk(Option<Vec<u8>>),
    /// `*2 ...`, or `*-1` (nil).
    Array(Option<Vec<Reply>>),
}

impl Reply {
    /// The server's error text, if this is an error reply.
    pub fn error(&self) -> Option<&str> {
        match self {
            Reply::Error(e) => Some(e),
            _ => None,
        }
    }
}

/// Appends `args` as a RESP array of bulk strings to `out`.
pub fn encode(args: &[&[u8]], out: &mut Vec<u8>) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

fn invalid(what: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("bad RESP reply: {what}"),
    )
}

fn line(r: &mut impl BufRead) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    r.read_until(b'\n', &mut buf)?;
    if buf.is_empty() {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    match buf.strip_suffix(b"\r\n") {
        Some(body) => Ok(body.to_vec()),
        None => Err(invalid("line not ended by CRLF")),
    }
}

fn length(body: &[u8], max: usize) -> std::io::Result<Option<usize>> {
    let n: i64 = std::str::from_utf8(body)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| invalid("length is not a number"))?;
    match n {
        -1 => Ok(None),
        n if n < 0 => Err(invalid("negative length")),
        n => match usize::try_from(n) {
            Ok(n) if n <= max => Ok(Some(n)),
            _ => Err(invalid("length too large")),
        },
    }
}

/// Reads one reply from `r`.
///
/// # Errors
/// `InvalidData` for malformed framing or lengths beyond the limits, `UnexpectedEof` when
/// the stream ends, and the reader's own errors.
pub fn read_reply(r: &mut impl BufRead) -> std::io::Result<Reply> {
    read_nested(r, 0)
}

fn read_nested(r: &mut impl BufRead, depth: usize) -> std::io::Result<Reply> {
    let l = line(r)?;
    let (kind, body) = l.split_first().ok_or_else(|| invalid("empty line"))?;
    let text = || String::from_utf8_lossy(body).into_owned();
    match kind {
        b'+' => Ok(Reply::Status(text())),
        b'-' => Ok(Reply::Error(text())),
        b':' => std::str::from_utf8(body)
            .ok()
            .and_then(|s| s.parse().ok())
            .map(Reply::Integer)
            .ok_or_else(|| invalid("integer is not a number")),
        b'$' => {
            let Some(n) = length(body, MAX_BULK)? else {
                return Ok(Reply::Bulk(None));
            };
            let mut data = vec![0; n + 2];
            r.read_exact(&mut data)?;
            if data.get(n..) != Some(b"\r\n".as_slice()) {
                return Err(invalid("bulk string not ended by CRLF"));
            }
            data.truncate(n);
            Ok(Reply::Bulk(Some(data)))
        }
        b'*' => {
            if depth >= MAX_DEPTH {
                return Err(invalid("arrays nested too deeply"));
            }
            let Some(n) = length(body, MAX_ARRAY)? else {
                return Ok(Reply::Array(None));
            };
            let mut items = Vec::with_capacity(n.min(1024));
            for _ in 0..n {
                items.push(read_nested(r, depth + 1)?);
            }
            Ok(Reply::Array(Some(items)))
        }
        _ => Err(invalid("unknown reply type")),
    }
}

/// A blocking connection that queues commands and reads their replies in order.
#[derive(Debug)]
pub struct Client {
    target: Target,
    reader: BufReader<TcpStream>,
    writer: BufWriter<TcpStream>,
    scratch: Vec<u8>,
}

impl Client {
    /// Connects to `target` (with Nagle's algorithm off).
    ///
    /// # Errors
    /// `Connect` when the connection is refused or the host does not resolve.
    pub fn connect(target: &Target) -> Result<Client> {
        let connect = |source| BenchError::Connect {
            target: target.to_string(),
            source,
        };
        let stream = TcpStream::connect(target.addr()).map_err(connect)?;
        stream.set_nodelay(true).map_err(connect)?;
        let read_half = stream.try_clone().map_err(connect)?;
        Ok(Client {
            target: target.clone(),
            reader: BufReader::with_capacity(64 << 10, read_half),
            writer: BufWriter::with_capacity(64 << 10, stream),
            scratch: Vec::new(),
        })
    }

    fn net(&self, source: std::io::Error) -> BenchError {
        BenchError::Net {
            target: self.target.to_string(),
            source,
        }
    }

    /// Queues one command; it is sent by `flush` (or when the buffer fills).
    ///
    /// # Errors
    /// `Net` if writing fails.
    pub fn queue(&mut self, args: &[&[u8]]) -> Result<()> {
        self.scratch.clear();
        encode(args, &mut self.scratch);
        let r = self.writer.write_all(&self.scratch);
        r.map_err(|e| self.net(e))
    }

    /// Sends every queued command.
    ///
    /// # Errors
    /// `Net` if writing fails.
    pub fn flush(&mut self) -> Result<()> {
        let r = self.writer.flush();
        r.map_err(|e| self.net(e))
    }

    /// Reads the next reply.
    ///
    /// # Errors
    /// `Net` for a closed connection or malformed reply.
    pub fn read(&mut self) -> Result<Reply> {
        let r = read_reply(&mut self.reader);
        r.map_err(|e| self.net(e))
    }

    /// Sends one command and reads its reply.
    ///
    /// # Errors
    /// As `queue`, `flush` and `read`.
    pub fn call(&mut self, args: &[&[u8]]) -> Result<Reply> {
        self.queue(args)?;
        self.flush()?;
        self.read()
    }
}
