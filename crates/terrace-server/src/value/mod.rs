//! The stored value encoding: a type tag, an optional expiry, the payload
//! (docs/formats/resp-values.md), and the `terrace-expiry` compaction filter that drops
//! expired keys.
//!
//! Owns: the bytes the server writes as engine values.
//! Must not touch: the engine's own formats; keys are stored as the client's bytes.
//! Concurrency: pure functions; the filter is `Send + Sync` and reads the wall clock.

use std::time::{SystemTime, UNIX_EPOCH};

use terrace::compaction::{CompactionFilter, CompactionFilterFactory, FilterDecision};

pub mod keys;

/// Tag of a string value without expiry.
const TAG_STRING: u8 = 0x00;
/// Tag of a string value followed by an 8-byte big-endian expiry time in Unix milliseconds.
const TAG_STRING_EXPIRING: u8 = 0x01;
/// Tag of a hash's metadata ([`CollMeta`]).
const TAG_HASH: u8 = 0x10;
/// Tag of a set's metadata.
const TAG_SET: u8 = 0x11;
/// Tag of a sorted set's metadata.
const TAG_ZSET: u8 = 0x12;
/// Tag of a list's metadata (followed by its head index).
const TAG_LIST: u8 = 0x13;

/// Bytes of a collection's metadata: tag, expiry, version, size (and a list's head).
const COLL_META_BYTES: usize = 25;
const HEADED_META_BYTES: usize = 33;
/// Most bytes of a sorted set's head or tail member kept in its metadata.
pub const BOUND_MEMBER_BYTES: usize = 23;
/// Most bytes of a collection's metadata: a sorted set's, with both bound members at
/// their longest (tag, expiry, version, size, head, then each bound's length byte and
/// member, and the tail between them).
pub const MAX_COLL_META_BYTES: usize = HEADED_META_BYTES + 2 * (1 + BOUND_MEMBER_BYTES) + 8;
/// Encoded metadata, inline up to its largest size.
pub type EncodedMeta = smallvec::SmallVec<[u8; 96]>;
const _: () = assert!(MAX_COLL_META_BYTES <= 96);
/// A sorted set's `tail` when it has no tail bound (with an empty tail member).
const NO_TAIL: u64 = u64::MAX;

/// A collection type: what its metadata's tag says and where its members live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CollKind {
    /// A hash: fields and values.
    Hash,
    /// A set: members.
    Set,
    /// A list: elements by position.
    List,
    /// A sorted set: members with scores.
    Zset,
}

impl CollKind {
    fn tag(self) -> u8 {
        match self {
            CollKind::Hash => TAG_HASH,
            CollKind::Set => TAG_SET,
            CollKind::List => TAG_LIST,
            CollKind::Zset => TAG_ZSET,
        }
    }

    fn from_tag(tag: u8) -> Option<CollKind> {
        match tag {
            TAG_HASH => Some(CollKind::Hash),
            TAG_SET => Some(CollKind::Set),
            TAG_LIST => Some(CollKind::List),
            TAG_ZSET => Some(CollKind::Zset),
            _ => None,
        }
    }

    /// The name TYPE reports.
    pub fn name(self) -> &'static str {
        match self {
            CollKind::Hash => "hash",
            CollKind::Set => "set",
            CollKind::List => "list",
            CollKind::Zset => "zset",
        }
    }

    /// Whether its metadata carries a head (sets, sorted sets, lists).
    fn has_head(self) -> bool {
        !matches!(self, CollKind::Hash)
    }

    /// Every kind of member record it has (a sorted set's score index besides its
    /// members).
    pub fn subs(self) -> &'static [keys::Sub] {
        match self {
            CollKind::Hash => &[keys::Sub::HashField],
            CollKind::Set => &[keys::Sub::SetMember],
            CollKind::List => &[keys::Sub::ListElement],
            CollKind::Zset => &[keys::Sub::ZsetMember, keys::Sub::ZsetScore],
        }
    }

    /// Where its members live.
    pub fn sub(self) -> keys::Sub {
        match self {
            CollKind::Hash => keys::Sub::HashField,
            CollKind::Set => keys::Sub::SetMember,
            CollKind::List => keys::Sub::ListElement,
            CollKind::Zset => keys::Sub::ZsetMember,
        }
    }
}

/// A collection's top-level record: its type, expiry, the version its members are
/// stored under (a new one each time the collection is created, so that deleting or
/// overwriting it never touches its members) and how many members it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CollMeta {
    /// The collection's type.
    pub kind: CollKind,
    /// Expiry as Unix time in milliseconds; `None` for a persistent key.
    pub expire_at_ms: Option<u64>,
    /// The version its members are stored under.
    pub version: u64,
    /// How many members it has (a collection with none does not exist).
    pub size: u64,
    /// Where its ordered records start: a list's first element's index (its elements
    /// are at `head..head + size`); for a set, a lower bound of its members' hashes; for
    /// a sorted set, a lower bound of its scores' index bytes (as a big-endian `u64`).
    /// Pops advance it past what they removed, so that the next one seeks past the
    /// deletions instead of stepping over them. 0 for hashes.
    pub head: u64,
    /// For a sorted set, a lower bound of the members at the head score (the first
    /// bytes of the first one left by a pop, or empty): all of them sort at or after it,
    /// so that pops of members sharing one score also seek past the earlier ones.
    /// Empty for the other kinds.
    pub head_member: MemberPrefix,
    /// For a sorted set, with `tail_member`, an upper bound of its index records: every
    /// one sorts before [`CollMeta::tail_bound`]. ZPOPMAX moves it down to the last
    /// member it left, so that the next reverse walk starts there instead of stepping
    /// over the deleted records above. `u64::MAX` (with no member: no bound) otherwise.
    pub tail: u64,
    /// The first bytes of the member at the tail score (see `tail`).
    pub tail_member: MemberPrefix,
}

/// Up to [`BOUND_MEMBER_BYTES`] first bytes of a member: a prefix sorts no later than
/// the member, so it stays a lower bound when the member is longer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemberPrefix {
    len: u8,
    bytes: [u8; BOUND_MEMBER_BYTES],
}

impl MemberPrefix {
    /// The bound for `member`: its first [`BOUND_MEMBER_BYTES`] bytes.
    pub fn of(member: &[u8]) -> MemberPrefix {
        let n = member.len().min(BOUND_MEMBER_BYTES);
        let mut bytes = [0; BOUND_MEMBER_BYTES];
        if let (Some(dst), Some(src)) = (bytes.get_mut(..n), member.get(..n)) {
            dst.copy_from_slice(src);
        }
        MemberPrefix {
            len: n as u8,
            bytes,
        }
    }

    /// The bound's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.get(..usize::from(self.len)).unwrap_or_default()
    }
}

impl CollMeta {
    /// The metadata of a new, persistent collection of `kind` with `size` members under
    /// `version`, its head at `head` and no sorted-set bounds.
    pub fn new(kind: CollKind, version: u64, size: u64, head: u64) -> CollMeta {
        CollMeta {
            kind,
            expire_at_ms: None,
            version,
            size,
            head,
            head_member: MemberPrefix::default(),
            tail: NO_TAIL,
            tail_member: MemberPrefix::default(),
        }
    }

    /// The stored bytes.
    pub fn encode(&self) -> Vec<u8> {
        self.encoded().into_vec()
    }

    /// The stored bytes, on the stack (they never exceed [`MAX_COLL_META_BYTES`]).
    pub fn encoded(&self) -> EncodedMeta {
        let (head, tail) = (self.head_member.as_bytes(), self.tail_member.as_bytes());
        let mut buf = [0u8; 96];
        // Filled in place (see `keys::member_of_parts` for why not `extend_from_slice`).
        let mut len = 0;
        let mut put = |bytes: &[u8]| {
            if let Some(dst) = buf.get_mut(len..len + bytes.len()) {
                dst.copy_from_slice(bytes);
            }
            len += bytes.len();
        };
        put(&[self.kind.tag()]);
        put(&self.expire_at_ms.unwrap_or(0).to_be_bytes());
        put(&self.version.to_be_bytes());
        put(&self.size.to_be_bytes());
        if self.kind.has_head() {
            put(&self.head.to_be_bytes());
        }
        if self.has_bounds() {
            put(&[head.len() as u8]);
            put(head);
            put(&self.tail.to_be_bytes());
            put(&[tail.len() as u8]);
            put(tail);
        }
        // `len` never exceeds the buffer (`MAX_COLL_META_BYTES`, asserted below 96).
        EncodedMeta::from_buf_and_len(buf, len.min(96))
    }

    /// A sorted set's exclusive upper bound of its index records' bytes after the
    /// version prefix (score bytes, then member): the smallest bytes after every string
    /// that starts with the tail's; `None` when there is no bound.
    pub fn tail_bound(&self) -> Option<Vec<u8>> {
        if !self.has_tail_bound() {
            return None;
        }
        let mut tail = self.tail.to_be_bytes().to_vec();
        tail.extend_from_slice(self.tail_member.as_bytes());
        keys::prefix_end(&tail)
    }

    /// Whether the index record of `member` at the score whose bytes are `score_bits`
    /// sorts at or past [`CollMeta::tail_bound`] (false when there is none), without
    /// building the bound: past every string that starts with the tail's bytes is after
    /// them and does not start with them.
    pub fn at_or_past_tail(&self, score_bits: u64, member: &[u8]) -> bool {
        if !self.has_tail_bound() {
            return false;
        }
        let tail_member = self.tail_member.as_bytes();
        match score_bits.cmp(&self.tail) {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Less => false,
            std::cmp::Ordering::Equal => member > tail_member && !member.starts_with(tail_member),
        }
    }

    /// Whether [`CollMeta::tail_bound`] is a bound: not when none is recorded, nor when
    /// the tail's bytes are all 0xff (every string after them starts with them).
    pub fn has_tail_bound(&self) -> bool {
        !(self.tail == NO_TAIL && self.tail_member.as_bytes().iter().all(|&b| b == 0xff))
    }

    /// Whether a sorted set's metadata carries its bounds' extension.
    fn has_bounds(&self) -> bool {
        self.kind == CollKind::Zset
            && (!self.head_member.as_bytes().is_empty()
                || self.tail != NO_TAIL
                || !self.tail_member.as_bytes().is_empty())
    }

    /// Whether the collection has expired at `now_ms`.
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expire_at_ms.is_some_and(|at| at <= now_ms)
    }
}

/// A sorted set's bounds extension: `head_member_len:u8 head_member tail:u64be
/// tail_member_len:u8 tail_member`, lengths at most [`BOUND_MEMBER_BYTES`], nothing after,
/// and bounding something (so that every record that decodes re-encodes to its bytes).
fn decode_bounds(bytes: &[u8]) -> Result<(MemberPrefix, u64, MemberPrefix), ValueError> {
    fn member(bytes: &[u8]) -> Result<(MemberPrefix, &[u8]), ValueError> {
        let (&n, rest) = bytes.split_first().ok_or(ValueError::Truncated)?;
        let n = usize::from(n);
        if n > BOUND_MEMBER_BYTES {
            return Err(ValueError::Truncated);
        }
        let member = rest.get(..n).ok_or(ValueError::Truncated)?;
        Ok((MemberPrefix::of(member), rest.get(n..).unwrap_or_default()))
    }
    let (head, rest) = member(bytes)?;
    let tail = rest
        .get(..8)
        .and_then(|s| s.try_into().ok())
        .map(u64::from_be_bytes)
        .ok_or(ValueError::Truncated)?;
    let (tail_member, rest) = member(rest.get(8..).unwrap_or_default())?;
    // An extension that bounds nothing is never written (the record ends before it).
    let empty = head.as_bytes().is_empty() && tail == NO_TAIL && tail_member.as_bytes().is_empty();
    if !rest.is_empty() || empty {
        return Err(ValueError::TrailingBytes);
    }
    Ok((head, tail, tail_member))
}

/// A key's top-level record, decoded: a string or a collection's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Top {
    /// A string.
    String(StoredValue),
    /// A collection.
    Coll(CollMeta),
}

impl Top {
    /// Decodes stored bytes.
    ///
    /// # Errors
    /// [`ValueError`] for bytes this version did not write.
    pub fn decode(bytes: &[u8]) -> Result<Top, ValueError> {
        match bytes.first().copied().and_then(CollKind::from_tag) {
            Some(kind) => {
                let field = |at: usize| -> Result<u64, ValueError> {
                    bytes
                        .get(at..at + 8)
                        .and_then(|s| s.try_into().ok())
                        .map(u64::from_be_bytes)
                        .ok_or(ValueError::Truncated)
                };
                let (len, head) = if kind.has_head() {
                    (HEADED_META_BYTES, field(25)?)
                } else {
                    (COLL_META_BYTES, 0)
                };
                // A sorted set's bounds may follow (absent when it has none).
                let (head_member, tail, tail_member) = match bytes.get(len..) {
                    Some(rest @ [_, ..]) if kind == CollKind::Zset => decode_bounds(rest)?,
                    Some([_, ..]) => return Err(ValueError::TrailingBytes),
                    _ => (MemberPrefix::default(), NO_TAIL, MemberPrefix::default()),
                };
                let expire = field(1)?;
                Ok(Top::Coll(CollMeta {
                    kind,
                    expire_at_ms: (expire != 0).then_some(expire),
                    version: field(9)?,
                    size: field(17)?,
                    head,
                    head_member,
                    tail,
                    tail_member,
                }))
            }
            None => StoredValue::decode(bytes).map(Top::String),
        }
    }

    /// When it expires.
    pub fn expire_at_ms(&self) -> Option<u64> {
        match self {
            Top::String(v) => v.expire_at_ms,
            Top::Coll(m) => m.expire_at_ms,
        }
    }

    /// The name TYPE reports.
    pub fn type_name(&self) -> &'static str {
        match self {
            Top::String(_) => "string",
            Top::Coll(m) => m.kind.name(),
        }
    }

    /// The same record expiring at `at` instead.
    pub fn with_expiry(mut self, at: Option<u64>) -> Top {
        match &mut self {
            Top::String(v) => v.expire_at_ms = at,
            Top::Coll(m) => m.expire_at_ms = at,
        }
        self
    }

    /// The stored bytes.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Top::String(v) => v.encode(),
            Top::Coll(m) => m.encode(),
        }
    }
}

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
    /// The expiry field (or a collection's metadata) is cut short.
    #[error("stored value truncated in its expiry field")]
    Truncated,
    /// A collection's metadata longer than its fields.
    #[error("stored collection metadata has trailing bytes")]
    TrailingBytes,
    /// A collection where a string was read: the command's WRONGTYPE.
    #[error("a {0} where a string was expected")]
    NotAString(&'static str),
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
            other => Err(
                CollKind::from_tag(other).map_or(ValueError::UnknownTag(other), |k| {
                    ValueError::NotAString(k.name())
                }),
            ),
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
    let expire_at_ms = string_expiry_of(bytes)?;
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
        other if CollKind::from_tag(other).is_some() => Ok(Top::decode(bytes)?.expire_at_ms()),
        other => Err(ValueError::UnknownTag(other)),
    }
}

/// The expiry of the top-level record of a string: `NotAString` for a collection.
///
/// # Errors
/// As [`StoredValue::decode`].
fn string_expiry_of(bytes: &[u8]) -> Result<Option<u64>, ValueError> {
    match bytes.first().copied().and_then(CollKind::from_tag) {
        Some(kind) => Err(ValueError::NotAString(kind.name())),
        None => expiry_of(bytes),
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

/// Removes, when it can read the database, the member records of collections that no
/// longer exist under the version they were written with (deleted, overwritten, expired
/// or recreated). Top-level records are all kept, expired ones too: the server counts
/// its keys with every write (DBSIZE), and a drop here, of one version of a key seen in
/// one part of the tree, would escape the count; lazy and active expiry delete expired
/// keys through the server's write path instead. Values it cannot decode are kept, so a
/// compaction never destroys data it does not understand; in a compaction worker
/// process, which cannot read the database, members are all kept.
#[derive(Debug, Default)]
pub struct ExpiryFilter {
    reader: Option<terrace::DbReader>,
    /// The last collection looked up and whether its members at that version live:
    /// consecutive member records mostly belong to one collection.
    last: parking_lot::Mutex<Option<(Vec<u8>, u64, bool)>>,
}

impl ExpiryFilter {
    /// Whether the members of `key` written under `version` for `sub` still belong to a
    /// live collection; `None` when that cannot be known (keep them).
    fn members_live(&self, key: &[u8], version: u64, sub: keys::Sub) -> Option<bool> {
        let reader = self.reader.as_ref()?;
        let mut last = self.last.lock();
        if let Some((k, v, live)) = last.as_ref() {
            if k.as_slice() == key && *v == version {
                return Some(*live);
            }
        }
        let live = match reader.get(&keys::top(key)).ok()? {
            None => false,
            Some(raw) => match Top::decode(&raw) {
                Ok(Top::Coll(m)) => {
                    m.version == version && m.kind.subs().contains(&sub) && !m.is_expired(now_ms())
                }
                Ok(Top::String(_)) => false,
                Err(_) => return None,
            },
        };
        *last = Some((key.to_vec(), version, live));
        Some(live)
    }
}

impl CompactionFilter for ExpiryFilter {
    fn name(&self) -> &str {
        EXPIRY_FILTER
    }
    fn filter(&self, _level: usize, user_key: &[u8], _value: &[u8]) -> FilterDecision {
        if let Some(m) = keys::parse_member(user_key) {
            return match self.members_live(m.key, m.version, m.sub) {
                Some(false) => FilterDecision::Remove,
                _ => FilterDecision::Keep,
            };
        }
        FilterDecision::Keep
    }
}

/// Builds [`ExpiryFilter`]s; takes no parameters. Given a reader of the database
/// ([`ExpiryFilterFactory::set_reader`]) its filters also drop stale members.
#[derive(Debug, Default)]
pub struct ExpiryFilterFactory {
    reader: std::sync::OnceLock<terrace::DbReader>,
}

impl ExpiryFilterFactory {
    /// Lets the filters read the database (once it is open).
    pub fn set_reader(&self, reader: terrace::DbReader) {
        let _ = self.reader.set(reader);
    }
}

impl CompactionFilterFactory for ExpiryFilterFactory {
    fn name(&self) -> &str {
        EXPIRY_FILTER
    }
    fn create(&self, _params: &str) -> terrace::Result<Box<dyn CompactionFilter>> {
        Ok(Box::new(ExpiryFilter {
            reader: self.reader.get().cloned(),
            last: parking_lot::Mutex::new(None),
        }))
    }
}

#[cfg(test)]
mod tests;
