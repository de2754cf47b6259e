//! The doorbell ring: a request slot and a response slot in the client's channel file
//! (shared memory), each announced by bumping a 32-bit sequence word. The waiting side
//! polls the word for a short while (as an RDMA server polls its completion queue) and
//! then sleeps on it (a futex on the shared mapping), so a client that rings an idle
//! server wakes it with one system call and a busy one with none.
//!
//! Owns: the channel file's layout (docs/formats/boom.md, "Channel") and posting and
//! waiting. Must not touch: what the frames mean (`proto`).
//! Concurrency: one client and one server thread per channel; each slot has one writer.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use rustix::thread::futex;

use crate::error::{BoomError, Result};
use crate::shm::SharedFile;

/// The request's sequence word.
const REQ_SEQ: u64 = 0;
/// 1 while the server sleeps on `REQ_SEQ`.
const REQ_SLEEPING: u64 = 4;
/// The response's sequence word (its own cache line).
const RESP_SEQ: u64 = 64;
/// 1 while the client sleeps on `RESP_SEQ`.
const RESP_SLEEPING: u64 = 68;
/// The request slot: a `u32` length, then the frame.
pub const REQ_AREA: u64 = 4096;
/// The response slot: a `u32` length, then the frame.
pub const RESP_AREA: u64 = REQ_AREA + SLOT_BYTES;
/// Bytes of each slot.
pub const SLOT_BYTES: u64 = 64 << 10;
/// Where a GET's value is copied (the reply buffer proper).
pub const DATA_AREA: u64 = RESP_AREA + SLOT_BYTES;

/// The channel file's length for a reply buffer of `data_bytes`.
pub fn channel_len(data_bytes: u64) -> u64 {
    DATA_AREA + data_bytes
}

/// One side's view of a channel.
#[derive(Debug)]
pub struct Ring<'a> {
    file: &'a SharedFile,
}

impl<'a> Ring<'a> {
    /// The ring in `file` (a channel file).
    pub fn new(file: &'a SharedFile) -> Ring<'a> {
        Ring { file }
    }

    fn word(&self, at: u64) -> Result<&'a AtomicU32> {
        self.file.atomic_u32(at)
    }

    /// The request sequence number now (a server starts waiting from it).
    pub fn request_seq(&self) -> Result<u32> {
        Ok(self.word(REQ_SEQ)?.load(Ordering::Acquire))
    }

    /// The response sequence number now.
    pub fn response_seq(&self) -> Result<u32> {
        Ok(self.word(RESP_SEQ)?.load(Ordering::Acquire))
    }

    /// Client: writes `frame` into the request slot and rings.
    ///
    /// # Errors
    /// `InvalidArgument` for a frame larger than the slot.
    pub fn post_request(&self, frame: &[u8]) -> Result<()> {
        self.post(REQ_AREA, REQ_SEQ, REQ_SLEEPING, frame)
    }

    /// Server: writes `frame` into the response slot and rings.
    ///
    /// # Errors
    /// `InvalidArgument` for a frame larger than the slot.
    pub fn post_response(&self, frame: &[u8]) -> Result<()> {
        self.post(RESP_AREA, RESP_SEQ, RESP_SLEEPING, frame)
    }

    /// Server: waits until the request sequence moves past `last`, at most `timeout`;
    /// returns the new sequence number and the frame, or `None` on timeout.
    ///
    /// # Errors
    /// `BadEntry` for a request whose length the client set past its slot.
    pub fn wait_request(
        &self,
        last: u32,
        spin: Duration,
        timeout: Duration,
    ) -> Result<Option<(u32, Vec<u8>)>> {
        self.wait(REQ_AREA, REQ_SEQ, REQ_SLEEPING, last, spin, timeout)
    }

    /// Client: waits for the response after `last`, at most `timeout`.
    ///
    /// # Errors
    /// `BadEntry` for a response longer than its slot.
    pub fn wait_response(
        &self,
        last: u32,
        spin: Duration,
        timeout: Duration,
    ) -> Result<Option<(u32, Vec<u8>)>> {
        self.wait(RESP_AREA, RESP_SEQ, RESP_SLEEPING, last, spin, timeout)
    }

    fn post(&self, area: u64, seq: u64, sleeping: u64, frame: &[u8]) -> Result<()> {
        if frame.len() as u64 > SLOT_BYTES - 4 {
            return Err(BoomError::InvalidArgument(format!(
                "a message of {} bytes does not fit the ring's {SLOT_BYTES}-byte slot",
                frame.len()
            )));
        }
        self.file.write(area, &(frame.len() as u32).to_le_bytes())?;
        self.file.write(area + 4, frame)?;
        let seq = self.word(seq)?;
        // SeqCst on both sides of the sleeping flag: a poster that bumps the sequence
        // and then finds no sleeper, and a waiter that raises its flag and then finds no
        // new sequence, cannot both happen.
        seq.fetch_add(1, Ordering::SeqCst);
        if self.word(sleeping)?.load(Ordering::SeqCst) != 0 {
            // A failed wake leaves the sleeper to its timeout: nothing to undo.
            let _ = futex::wake(seq, futex::Flags::empty(), 1);
        }
        Ok(())
    }

    fn wait(
        &self,
        area: u64,
        seq_at: u64,
        sleeping_at: u64,
        last: u32,
        spin: Duration,
        timeout: Duration,
    ) -> Result<Option<(u32, Vec<u8>)>> {
        let seq = self.word(seq_at)?;
        let sleeping = self.word(sleeping_at)?;
        let start = Instant::now();
        let mut now = seq.load(Ordering::Acquire);
        while now == last && start.elapsed() < spin {
            pause(start);
            now = seq.load(Ordering::Acquire);
        }
        while now == last {
            let left = timeout.saturating_sub(start.elapsed());
            if left.is_zero() {
                return Ok(None);
            }
            sleeping.store(1, Ordering::SeqCst);
            if seq.load(Ordering::SeqCst) == last {
                let slice = left.min(Duration::from_millis(50));
                let ts = futex::Timespec {
                    tv_sec: slice.as_secs() as _,
                    tv_nsec: slice.subsec_nanos() as _,
                };
                // Woken, timed out, interrupted or the word already moved: all end in
                // looking at the word again.
                let _ = futex::wait(seq, futex::Flags::empty(), last, Some(&ts));
            }
            sleeping.store(0, Ordering::SeqCst);
            now = seq.load(Ordering::Acquire);
        }
        let mut len = [0u8; 4];
        self.file.read(area, &mut len)?;
        let len = u64::from(u32::from_le_bytes(len));
        if len > SLOT_BYTES - 4 {
            return Err(BoomError::BadEntry(format!(
                "a ring message claims {len} bytes, more than its slot"
            )));
        }
        Ok(Some((now, self.file.read_vec(area + 4, len as usize)?)))
    }
}

/// One step of polling that began at `start`: a busy pause for the first microsecond,
/// then a yield, so that on a machine with more polling threads than cores the thread
/// being waited for gets the core instead of the poller.
pub fn pause(start: Instant) {
    if start.elapsed() < Duration::from_micros(1) {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_responses_cross_between_threads_sleeping_or_spinning() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chan");
        let server_file = SharedFile::open_or_create(&path, channel_len(4096)).unwrap();
        let client_file = SharedFile::open_range(&path, 0, channel_len(4096)).unwrap();
        for spin in [Duration::ZERO, Duration::from_millis(5)] {
            std::thread::scope(|s| {
                let server = Ring::new(&server_file);
                let mut last = server.request_seq().unwrap();
                s.spawn(move || {
                    for _ in 0..200 {
                        let (seq, frame) = server
                            .wait_request(last, spin, Duration::from_secs(10))
                            .unwrap()
                            .unwrap();
                        last = seq;
                        let mut answer = frame.clone();
                        answer.reverse();
                        server.post_response(&answer).unwrap();
                    }
                });
                let client = Ring::new(&client_file);
                let mut last = client.response_seq().unwrap();
                for i in 0..200u32 {
                    let msg = format!("request {i}");
                    client.post_request(msg.as_bytes()).unwrap();
                    let (seq, frame) = client
                        .wait_response(last, spin, Duration::from_secs(10))
                        .unwrap()
                        .unwrap();
                    last = seq;
                    let mut want = msg.into_bytes();
                    want.reverse();
                    assert_eq!(frame, want);
                }
            });
        }
        // Nobody answers: a timeout, not a hang.
        let client = Ring::new(&client_file);
        let last = client.response_seq().unwrap();
        assert!(client
            .wait_response(last, Duration::ZERO, Duration::from_millis(30))
            .unwrap()
            .is_none());
        // A frame too large for a slot, and a length set past the slot by a bad peer.
        assert!(client.post_request(&vec![0; SLOT_BYTES as usize]).is_err());
        server_file
            .write(REQ_AREA, &u32::MAX.to_le_bytes())
            .unwrap();
        server_file
            .atomic_u32(REQ_SEQ)
            .unwrap()
            .fetch_add(1, Ordering::SeqCst);
        let server = Ring::new(&server_file);
        assert!(server
            .wait_request(0, Duration::ZERO, Duration::from_secs(1))
            .is_err());
    }
}
