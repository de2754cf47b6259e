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
use crate::resp::{parse_command_into, Frame, Protocol, Reply};

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

/// Executes every complete command in `buf`, appending replies to `out`. Arguments are
/// borrowed from `buf`, which is advanced past the commands once they have run.
fn run_batch(
    engine: &Engine,
    session: &mut Session,
    buf: &mut BytesMut,
    out: &mut Vec<u8>,
) -> Next {
    let mut pipeline = session.pipeline();
    let mut args: Vec<&[u8]> = Vec::new();
    let data: &[u8] = buf;
    let mut pos = 0;
    let next = loop {
        let rest = data.get(pos..).unwrap_or_default();
        match parse_command_into(rest, &engine.limits(), &mut args) {
            Ok(Frame::Incomplete) => break Next::Read,
            Ok(Frame::Borrowed { consumed }) => {
                pos += consumed;
                pipeline.execute(&args, out);
            }
            Ok(Frame::Owned {
                args: owned,
                consumed,
            }) => {
                pos += consumed;
                let inline: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
                pipeline.execute(&inline, out);
            }
            Err(e) => {
                let protocol = pipeline.protocol();
                pipeline.finish(out);
                Reply::err(e).write(protocol, out);
                return Next::Close;
            }
        }
        match pipeline.take_action() {
            Some(Action::Shutdown) => break Next::Shutdown,
            Some(Action::Close) => break Next::Close,
            None => {}
        }
    };
    let protocol = pipeline.protocol();
    pipeline.finish(out);
    drop(args);
    buf.advance(pos);
    if matches!(next, Next::Read) && buf.len() as u64 > engine.query_buffer_limit() {
        Reply::err("Protocol error: query buffer limit exceeded").write(protocol, out);
        return Next::Close;
    }
    next
}
