//! `terrace serve` end to end: a real server process on an ephemeral loopback port,
//! spoken to over TCP.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod basics;
mod boom;
mod boom_crash;
mod collections;
mod config_set;
mod durability;
mod limits;
mod real_clients;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running `terrace serve`; killed (SIGKILL) when dropped.
pub(crate) struct Server {
    pub(crate) child: Child,
    pub(crate) addr: String,
    /// What the server printed before `listening on` (e.g. `metrics on ADDR`).
    pub(crate) banner: Vec<String>,
}

impl Server {
    /// Starts a server on `dir` with extra flags and waits until it listens.
    pub(crate) fn start(dir: &Path, extra: &[&str]) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_terrace"));
        cmd.args(["serve", "--port", "0", "--dir"])
            .arg(dir)
            .args(extra)
            .stderr(Stdio::inherit());
        Server::spawn(cmd)
    }

    /// Runs `cmd` (a `terrace serve` command line) and waits until it listens.
    pub(crate) fn spawn(mut cmd: Command) -> Server {
        let mut child = cmd.stdout(Stdio::piped()).spawn().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut banner = Vec::new();
        let addr = loop {
            let line = lines
                .next()
                .expect("server exited before listening")
                .unwrap();
            if let Some(a) = line.strip_prefix("listening on ") {
                break a.to_string();
            }
            banner.push(line);
        };
        // Keep draining stdout so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Server {
            child,
            addr,
            banner,
        }
    }

    pub(crate) fn client(&self) -> Client {
        Client::connect(&self.addr)
    }

    /// Sends SIGTERM and waits for the exit status.
    pub(crate) fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        let status = self.child.wait().unwrap();
        std::mem::forget(self);
        status
    }

    /// SIGKILL, as a crash.
    pub(crate) fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        std::mem::forget(self);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A reply as the test client reads it (RESP2 and RESP3).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Status(String),
    Error(String),
    Int(i64),
    Bulk(Vec<u8>),
    Nil,
    Array(Vec<Value>),
}

impl Value {
    pub(crate) fn bulk(s: &str) -> Value {
        Value::Bulk(s.as_bytes().to_vec())
    }
}

/// A minimal blocking RESP client.
pub(crate) struct Client {
    reader: BufReader<TcpStream>,
    stream: TcpStream,
}

impl Client {
    pub(crate) fn connect(addr: &str) -> Client {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        Client {
            reader: BufReader::new(stream.try_clone().unwrap()),
            stream,
        }
    }

    pub(crate) fn encode(args: &[&[u8]]) -> Vec<u8> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        out
    }

    /// How long a read waits before it gives up (and reads as the end of the stream).
    pub(crate) fn read_timeout(&mut self, d: Duration) {
        self.stream.set_read_timeout(Some(d)).unwrap();
    }

    pub(crate) fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    pub(crate) fn cmd(&mut self, line: &str) -> Value {
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        self.cmd_args(&args)
    }

    pub(crate) fn cmd_args(&mut self, args: &[&[u8]]) -> Value {
        self.send_raw(&Self::encode(args));
        self.read().expect("connection closed")
    }

    /// Reads one reply; `None` at end of stream.
    pub(crate) fn read(&mut self) -> Option<Value> {
        let mut line = String::new();
        if self.reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end_matches("\r\n");
        let (tag, rest) = line.split_at(1);
        Some(match tag {
            "+" => Value::Status(rest.to_string()),
            "-" => Value::Error(rest.to_string()),
            ":" => Value::Int(rest.parse().unwrap()),
            "_" => Value::Nil,
            "$" if rest == "-1" => Value::Nil,
            "*" if rest == "-1" => Value::Nil,
            "$" => {
                let n: usize = rest.parse().unwrap();
                let mut buf = vec![0; n + 2];
                self.reader.read_exact(&mut buf).unwrap();
                buf.truncate(n);
                Value::Bulk(buf)
            }
            "*" | "~" => {
                let n: usize = rest.parse().unwrap();
                Value::Array((0..n).map(|_| self.read().unwrap()).collect())
            }
            "%" => {
                let n: usize = rest.parse().unwrap();
                Value::Array((0..2 * n).map(|_| self.read().unwrap()).collect())
            }
            other => panic!("unexpected reply type {other:?}"),
        })
    }
}
