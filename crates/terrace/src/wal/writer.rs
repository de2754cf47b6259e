//! The log writer over a storage file: splits records into fragments that never cross a
//! 32 KiB block boundary (docs/formats/wal.md).

use super::record::{encode_header, RecordType, BLOCK_SIZE, HEADER_SIZE};
use super::LogWriter;
use crate::error::{Error, Result};
use crate::storage::{SyncHandle, WritableFile};

/// Writes log records to a [`WritableFile`]. `Send`, single owner.
pub struct FileLogWriter {
    file: Box<dyn WritableFile>,
    /// Bytes used in the current block.
    block_offset: usize,
    /// Set when an append failed part-way: the file may end in a partial record.
    failed: Option<Error>,
}

impl FileLogWriter {
    /// A writer appending to `file`, which may already hold log records (its length
    /// decides where the current block ends).
    pub fn new(file: Box<dyn WritableFile>) -> Self {
        let block_offset = (file.len() % BLOCK_SIZE as u64) as usize;
        FileLogWriter {
            file,
            block_offset,
            failed: None,
        }
    }

    fn write_record(&mut self, data: &[u8]) -> Result<()> {
        let mut left = data;
        let mut first = true;
        loop {
            let room = BLOCK_SIZE - self.block_offset;
            if room < HEADER_SIZE {
                // Too little space for a header: zero-fill the block tail.
                self.file.append(&[0u8; HEADER_SIZE][..room])?;
                self.block_offset = 0;
            }
            let avail = BLOCK_SIZE - self.block_offset - HEADER_SIZE;
            let n = left.len().min(avail);
            let (frag, rest) = left.split_at(n);
            let last = rest.is_empty();
            let kind = match (first, last) {
                (true, true) => RecordType::Full,
                (true, false) => RecordType::First,
                (false, false) => RecordType::Middle,
                (false, true) => RecordType::Last,
            };
            self.file.append(&encode_header(kind, frag))?;
            self.file.append(frag)?;
            self.block_offset += HEADER_SIZE + n;
            left = rest;
            first = false;
            if last {
                return Ok(());
            }
        }
    }
}

impl LogWriter for FileLogWriter {
    fn add_record(&mut self, data: &[u8]) -> Result<()> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.write_record(data).inspect_err(|e| {
            self.failed = Some(e.clone());
        })
    }

    fn flush(&mut self) -> Result<()> {
        self.file.flush()
    }

    fn sync(&mut self) -> Result<()> {
        self.file.sync()
    }

    fn sync_handle(&mut self) -> Result<Option<Box<dyn SyncHandle>>> {
        self.file.sync_handle()
    }

    fn size(&self) -> u64 {
        self.file.len()
    }
}
