//! The stored value encoding: a type tag, an optional expiry, the payload
//! (docs/formats/resp-values.md), and the `terrace-expiry` compaction filter that drops
//! expired keys.
//!
//! Owns: the bytes the server writes as engine values.
//! Must not touch: the engine's own formats; keys are stored as the client's bytes.
//! Concurrency: pure functions; the filter is `Send + Sync` and reads the wall clock.

use std::time::{SystemTime, UNIX_EPOCH};

use terrace::compaction::{CompactionFilter, CompactionFilterFactory, FilterDecision};

/// Tag of a string value without expiry.
const TAG_STRING: u8 = 0x00;
/// Tag of a string value followed by an 8-byte big-endian expiry time in Unix milliseconds.
const TAG_STRING_EXPIRING: u8 = 0x01;

/// A decoded value: its payload and when it expires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredValue {
    /// Expiry as Unix time in milliseconds; `None` for a persistent key.
    pub expire_at_ms: Option<u64>,
    /// The string's bytes.
    pub data: Vec<u8>,
}

/// Why stored bytes are not a value; the key is reported by the caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// No tag byte at all.
    #[error("empty stored value")]
    Empty,
    /// A tag this version does not know (a newer type, or corruption).
    #[error("unknown value tag {0:#04x}")]
    UnknownTag(u8),
    /// The expiry field is cut short.
    #[error("stored value truncated in its expiry field")]
    Truncated,
}

impl StoredValue {
    /// A persistent string.
    pub fn new(data: Vec<u8>) -> Self {
        StoredValue {
            expire_at_ms: None,
            data,
        }
    }

    /// Whether the value has expired at `now_ms`.
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expire_at_ms.is_some_and(|at| at <= now_ms)
    }

    /// The stored bytes.
    pub fn encode(&self) -> Vec<u8> {
        let header = ValueHeader::new(self.expire_at_ms);
        let mut out = Vec::with_capacity(self.data.len() + header.as_bytes().len());
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(&self.data);
        out
    }

    /// Decodes stored bytes.
    ///
    /// # Errors
    /// [`ValueError`] for bytes this version did not write.
    pub fn decode(bytes: &[u8]) -> Result<Self, ValueError> {
        let (&tag, rest) = bytes.split_first().ok_or(ValueError::Empty)?;
        match tag {
            TAG_STRING => Ok(StoredValue::new(rest.to_vec())),
            TAG_STRING_EXPIRING => {
                let at = expiry_field(rest)?;
                Ok(StoredValue {
                    expire_at_ms: Some(at),
                    data: rest.get(8..).unwrap_or_default().to_vec(),
                })
            }
            other => Err(ValueError::UnknownTag(other)),
        }
    }
}

/// The bytes a stored value starts with (tag and expiry), built without the payload so
/// that a writer can put header and payload side by side in a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValueHeader {
    bytes: [u8; 9],
    len: usize,
}

impl ValueHeader {
    /// The header of a string expiring at `expire_at_ms` (never, for `None`).
    pub fn new(expire_at_ms: Option<u64>) -> Self {
        let mut bytes = [0u8; 9];
        match expire_at_ms {
            None => {
                bytes[0] = TAG_STRING;
                ValueHeader { bytes, len: 1 }
            }
            Some(at) => {
                bytes[0] = TAG_STRING_EXPIRING;
                bytes[1..].copy_from_slice(&at.to_be_bytes());
                ValueHeader { bytes, len: 9 }
            }
        }
    }

    /// The encoded header.
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.get(..self.len).unwrap_or_default()
    }
}

/// Splits stored bytes into the expiry and the offset where the payload starts, without
/// copying the payload.
///
/// # Errors
/// As [`StoredValue::decode`].
pub fn split_header(bytes: &[u8]) -> Result<(Option<u64>, usize), ValueError> {
    let expire_at_ms = expiry_of(bytes)?;
    Ok((expire_at_ms, if expire_at_ms.is_some() { 9 } else { 1 }))
}

fn expiry_field(rest: &[u8]) -> Result<u64, ValueError> {
    let field: [u8; 8] = rest
        .get(..8)
        .and_then(|s| s.try_into().ok())
        .ok_or(ValueError::Truncated)?;
    Ok(u64::from_be_bytes(field))
}

/// Reads only the expiry of stored bytes (what the compaction filter needs).
///
/// # Errors
/// As [`StoredValue::decode`].
pub fn expiry_of(bytes: &[u8]) -> Result<Option<u64>, ValueError> {
    let (&tag, rest) = bytes.split_first().ok_or(ValueError::Empty)?;
    match tag {
        TAG_STRING => Ok(None),
        TAG_STRING_EXPIRING => expiry_field(rest).map(Some),
        other => Err(ValueError::UnknownTag(other)),
    }
}

/// The wall clock in Unix milliseconds.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Registered name of the expiry compaction filter.
pub const EXPIRY_FILTER: &str = "terrace-expiry";

/// Removes keys whose stored expiry has passed. Values it cannot decode are kept, so a
/// compaction never destroys data it does not understand.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExpiryFilter;

impl CompactionFilter for ExpiryFilter {
    fn name(&self) -> &str {
        EXPIRY_FILTER
    }
    fn filter(&self, _level: usize, _user_key: &[u8], value: &[u8]) -> FilterDecision {
        match expiry_of(value) {
            Ok(Some(at)) if at <= now_ms() => FilterDecision::Remove,
            _ => FilterDecision::Keep,
        }
    }
}

/// Builds [`ExpiryFilter`]s; takes no parameters.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExpiryFilterFactory;

impl CompactionFilterFactory for ExpiryFilterFactory {
    fn name(&self) -> &str {
        EXPIRY_FILTER
    }
    fn create(&self, _params: &str) -> terrace::Result<Box<dyn CompactionFilter>> {
        Ok(Box::new(ExpiryFilter))
    }
}

#[cfg(test)]
mod tests;
