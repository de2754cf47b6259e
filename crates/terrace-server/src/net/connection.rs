//! One client connection: read, parse every complete command, execute, write the replies
//! of the whole batch at once (pipelining), repeat.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use crate::commands::{Action, Engine, Session};
use crate::config::Fsync;
use crate::resp::{parse_command, Parsed, Protocol, Reply};

/// Bytes read from the socket at a time (the buffer grows only as data arrives).
const READ_CHUNK_BYTES: usize = 64 * 1024;

/// What ended a batch of commands.
enum Next {
    Read,
    Close,
    Shutdown,
}

pub(super) async fn handle(
    engine: Arc<Engine>,
    mut stream: TcpStream,
    addr: String,
    stop_tx: watch::Sender<bool>,
    mut stop: watch::Receiver<bool>,
) {
    let mut session = match engine.connect(addr) {
        Ok(s) => s,
        Err(reply) => {
            let mut out = Vec::new();
            reply.write(Protocol::Resp2, &mut out);
            let _ = stream.write_all(&out).await;
            return;
        }
    };
    let mut buf = BytesMut::with_capacity(16 * 1024);
    let mut out = Vec::with_capacity(16 * 1024);
    loop {
        let next = if engine.fsync() == Fsync::Always {
            tokio::task::block_in_place(|| run_batch(&engine, &mut session, &mut buf, &mut out))
        } else {
            run_batch(&engine, &mut session, &mut buf, &mut out)
        };
        if !out.is_empty() {
            engine
                .stats
                .net_output_bytes
                .fetch_add(out.len() as u64, Ordering::Relaxed);
            if stream.write_all(&out).await.is_err() {
                return;
            }
            out.clear();
        }
        match next {
            Next::Read => {}
            Next::Close => return,
            Next::Shutdown => {
                let _ = stop_tx.send(true);
                return;
            }
        }
        if *stop.borrow() {
            return;
        }
        buf.reserve(READ_CHUNK_BYTES);
        tokio::select! {
            read = stream.read_buf(&mut buf) => match read {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    engine.stats.net_input_bytes.fetch_add(n as u64, Ordering::Relaxed);
                }
            },
            _ = stop.changed() => return,
        }
    }
}

/// Executes every complete command in `buf`, appending replies to `out`.
fn run_batch(
    engine: &Engine,
    session: &mut Session,
    buf: &mut BytesMut,
    out: &mut Vec<u8>,
) -> Next {
    let limits = engine.limits();
    loop {
        match parse_command(buf, &limits) {
            Ok(Parsed::Incomplete) => break,
            Ok(Parsed::Command { args, consumed }) => {
                buf.advance(consumed);
                let reply = session.execute(&args);
                match session.take_action() {
                    // Redis closes the connection without a reply to a successful SHUTDOWN.
                    Some(Action::Shutdown) => return Next::Shutdown,
                    Some(Action::Close) => {
                        if let Some(r) = reply {
                            r.write(session.protocol(), out);
                        }
                        return Next::Close;
                    }
                    None => {}
                }
                if let Some(r) = reply {
                    r.write(session.protocol(), out);
                }
            }
            Err(e) => {
                Reply::err(e).write(session.protocol(), out);
                return Next::Close;
            }
        }
    }
    if buf.len() as u64 > engine.query_buffer_limit() {
        Reply::err("Protocol error: query buffer limit exceeded").write(session.protocol(), out);
        return Next::Close;
    }
    Next::Read
}
