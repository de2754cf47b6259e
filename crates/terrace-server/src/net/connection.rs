//! One client connection: read, parse every complete command, execute, write the replies
//! of the whole batch at once (pipelining), repeat. Consecutive SETs and GETs are
//! gathered into a [`Run`] that the connection's [`Group`] executes together with other
//! connections' runs; any other command runs on the connection's task. A client that
//! sends nothing for `timeout` seconds is closed; until it authenticates (when a
//! password is set) its requests are held to the small unauthenticated limits.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::Instant;

use super::group::Group;
use crate::commands::{Action, Engine, Gathered, Run, Session};
use crate::resp::{parse_command_into, ArgList, Frame, Protocol, Reply};

/// Bytes read from the socket at a time (the buffer grows only as data arrives).
const READ_CHUNK_BYTES: usize = 64 * 1024;

/// What ended a batch of commands.
enum Next {
    Read,
    /// A blocking command is waiting (`Session::wait_blocked`).
    Block,
    Close,
    Shutdown,
}

pub(super) async fn handle(
    engine: Arc<Engine>,
    group: Arc<Group>,
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
    let laddr = stream
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    session.note_socket(laddr, socket_fd(&stream));
    let mut conn = Connection {
        engine: &engine,
        group: &group,
        run: Some(Box::new(Run::new())),
    };
    let mut timeout = engine.watch_timeout();
    let kill = session.kill_switch();
    let mut buf = BytesMut::with_capacity(16 * 1024);
    let mut out = Vec::with_capacity(16 * 1024);
    loop {
        let next = conn.run_batch(&mut session, &mut buf, &mut out).await;
        session.count_output(out.len());
        // Before the replies leave: a client that reads the statistics next sees these.
        session.publish_stats();
        if !out.is_empty() {
            session.note_buffers(buf.len(), buf.capacity() - buf.len(), out.len());
            if stream.write_all(&out).await.is_err() {
                return;
            }
            out.clear();
        }
        session.note_buffers(buf.len(), buf.capacity() - buf.len(), 0);
        match next {
            Next::Read => {}
            Next::Block => {
                // Until a push wakes the command or it times out; reading on, so that a
                // client that goes away is noticed (its further commands wait in `buf`).
                let reply = loop {
                    buf.reserve(READ_CHUNK_BYTES);
                    tokio::select! {
                        reply = session.wait_blocked() => break reply,
                        () = kill.killed() => return,
                        read = stream.read_buf(&mut buf) => match read {
                            Ok(0) | Err(_) => return,
                            Ok(n) => {
                                session.count_input(n);
                                if buf.len() as u64 > engine.query_buffer_limit() {
                                    return;
                                }
                            }
                        },
                        _ = stop.changed() => return,
                    }
                };
                reply.write(session.protocol(), &mut out);
                session.count_output(out.len());
                if stream.write_all(&out).await.is_err() {
                    return;
                }
                out.clear();
                continue;
            }
            Next::Close => return,
            Next::Shutdown => {
                let _ = stop_tx.send(true);
                return;
            }
        }
        // Checked here as well as on a wake-up: a client whose requests keep coming never
        // waits for one.
        if *stop.borrow() || kill.is_killed() {
            return;
        }
        buf.reserve(READ_CHUNK_BYTES);
        // Idle since now: the timeout counts from the last bytes received or replies sent.
        let idle_since = Instant::now();
        let read = loop {
            let secs = *timeout.borrow_and_update();
            let idle = async {
                if secs == 0 {
                    std::future::pending::<()>().await;
                }
                tokio::time::sleep_until(idle_since + Duration::from_secs(secs)).await;
            };
            // One waiter besides the socket for everything that can end the wait (the
            // server stopping, CLIENT KILL, CONFIG SET timeout): registering one per
            // request costs less than three on channels every client shares.
            tokio::select! {
                biased;
                read = stream.read_buf(&mut buf) => break read,
                () = kill.attention() => {
                    if *stop.borrow() || kill.is_killed() {
                        return;
                    }
                    // A new timeout: wait again with it.
                }
                () = idle => return,
                message = session.next_message() => {
                    // A pub/sub message: written at once, between replies; a client that
                    // let its mailbox overflow is cut off.
                    let Some(message) = message else { return };
                    message.reply().write(session.protocol(), &mut out);
                    session.count_output(out.len());
                    if stream.write_all(&out).await.is_err() {
                        return;
                    }
                    out.clear();
                }
            }
        };
        match read {
            Ok(0) | Err(_) => return,
            Ok(n) => session.count_input(n),
        }
    }
}

/// What a connection's batches share.
struct Connection<'a> {
    engine: &'a Engine,
    group: &'a Group,
    /// The run being gathered; `None` only while its group executes it.
    run: Option<Box<Run>>,
}

impl Connection<'_> {
    /// Executes every complete command in `buf`, appending replies to `out`. Arguments
    /// are borrowed from `buf`, which is advanced past the commands once they have run.
    async fn run_batch(
        &mut self,
        session: &mut Session,
        buf: &mut BytesMut,
        out: &mut Vec<u8>,
    ) -> Next {
        let mut args = ArgList::new();
        let data: &[u8] = buf;
        let mut pos = 0;
        let next = loop {
            let rest = data.get(pos..).unwrap_or_default();
            // Read before each command: an AUTH earlier in the batch lifts the limits of
            // an unauthenticated client, a CONFIG SET changes them.
            let limits = session.limits();
            let owned = match parse_command_into(rest, &limits, &mut args) {
                Ok(Frame::Incomplete) => break Next::Read,
                Ok(Frame::Borrowed { consumed }) => {
                    pos += consumed;
                    None
                }
                Ok(Frame::Owned { args, consumed }) => {
                    pos += consumed;
                    Some(args)
                }
                Err(e) => {
                    if !self.flush(session, out).await {
                        return Next::Close;
                    }
                    Reply::err(e).write(session.protocol(), out);
                    return Next::Close;
                }
            };
            let inline: Vec<&[u8]>;
            let command: &[&[u8]] = match &owned {
                Some(owned) => {
                    inline = owned.iter().map(Vec::as_slice).collect();
                    &inline
                }
                None => &args,
            };
            if !self.execute(session, command, out).await {
                return Next::Close;
            }
            match session.take_action() {
                Some(Action::Shutdown) => break Next::Shutdown,
                Some(Action::Close) => break Next::Close,
                Some(Action::Block) => break Next::Block,
                None => {}
            }
        };
        if !self.flush(session, out).await {
            return Next::Close;
        }
        drop(args);
        buf.advance(pos);
        if matches!(next, Next::Read) && buf.len() as u64 > self.engine.query_buffer_limit() {
            Reply::err("Protocol error: query buffer limit exceeded")
                .write(session.protocol(), out);
            return Next::Close;
        }
        next
    }

    /// Gathers `command` into the run, or executes the run and then the command. False
    /// if the server is stopping and the run could not be executed.
    async fn execute(
        &mut self,
        session: &mut Session,
        command: &[&[u8]],
        out: &mut Vec<u8>,
    ) -> bool {
        loop {
            let Some(run) = self.run.as_mut() else {
                return false;
            };
            match session.gather(command, run) {
                Gathered::Added => {
                    return !run.is_full() || self.flush(session, out).await;
                }
                Gathered::OtherKind => {
                    if !self.flush(session, out).await {
                        return false;
                    }
                }
                Gathered::No => {
                    if !self.flush(session, out).await {
                        return false;
                    }
                    session.execute_into(command, out);
                    return true;
                }
            }
        }
    }

    /// Executes the gathered run, if any, and appends its replies. False if the server
    /// is stopping and the run could not be executed.
    async fn flush(&mut self, session: &mut Session, out: &mut Vec<u8>) -> bool {
        let Some(run) = self.run.take_if(|r| !r.is_empty()) else {
            return true;
        };
        match self.group.execute(run).await {
            Some(mut run) => {
                session.take_run(&mut run, out);
                self.run = Some(run);
                true
            }
            None => false,
        }
    }
}

/// The socket's descriptor, for CLIENT LIST (-1 where there is none to show).
fn socket_fd(stream: &TcpStream) -> i64 {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        i64::from(stream.as_raw_fd())
    }
    #[cfg(not(unix))]
    {
        let _ = stream;
        -1
    }
}
