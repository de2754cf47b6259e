//! The server's side of BOOM's persistent memory: the region of client log segments,
//! the metadata file that says which entries are committed with which version, and the
//! engine's external log over them (docs/formats/boom.md says the layouts and the
//! persist order, docs/techniques/boom.md why).
//!
//! Owns: handing out, sealing and freeing segments; committing an entry a client wrote
//! (bounds, checksum, the engine write that stamps its version, the commit record and
//! count); replaying committed entries at open; freeing sealed segments whose writes the
//! engine's tables hold. Must not touch: the transport (how a client's doorbell reaches
//! the server) or the engine's own log.
//! Concurrency: `Send + Sync`, shared as `Arc<BoomStore>`; segment bookkeeping is under
//! one short mutex; commits of one segment are serialised by the engine's write queue.

use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;
use terrace::{Db, WriteBatch};

use crate::error::{BoomError, Result};
use crate::layout::{
    decode_entry, decode_header, CommitRecord, SegmentSlot, SegmentState, COMMIT_RECORD_BYTES,
    ENTRY_ALIGN, ENTRY_HEADER_BYTES, SLOT_BYTES,
};
use crate::shm::SharedFile;

/// The file clients map: a header page, then the segments.
pub const REGION_FILE: &str = "boom.region";
/// The server's own file: a header page, the segment slots, then each segment's
/// commit records. Clients never see it.
pub const META_FILE: &str = "boom.meta";

const PAGE: u64 = 4096;
const REGION_MAGIC: &[u8; 8] = b"TRBOOMR1";
const META_MAGIC: &[u8; 8] = b"TRBOOMM1";
const FORMAT: u32 = 1;

/// The size and number of segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreConfig {
    /// Bytes per segment (a multiple of 4096, at most 4 GiB).
    pub segment_bytes: u64,
    /// Segments in the region.
    pub segments: u32,
}

impl Default for StoreConfig {
    /// 16 segments of 64 MiB, the paper's segment size.
    fn default() -> Self {
        StoreConfig {
            segment_bytes: 64 << 20,
            segments: 16,
        }
    }
}

impl StoreConfig {
    fn check(&self) -> Result<()> {
        if self.segment_bytes == 0
            || !self.segment_bytes.is_multiple_of(PAGE)
            || self.segment_bytes > u64::from(u32::MAX) + 1
            || self.segments == 0
        {
            return Err(BoomError::InvalidArgument(format!(
                "segments must be whole 4 KiB pages, at most 4 GiB, and at least one: {self:?}"
            )));
        }
        Ok(())
    }

    /// Commit records a segment has room for: one per 64-byte line.
    fn records_per_segment(&self) -> u64 {
        self.segment_bytes / u64::from(ENTRY_ALIGN)
    }

    fn slots_bytes(&self) -> u64 {
        (u64::from(self.segments) * SLOT_BYTES as u64).next_multiple_of(PAGE)
    }

    fn records_bytes(&self) -> u64 {
        (self.records_per_segment() * COMMIT_RECORD_BYTES as u64).next_multiple_of(PAGE)
    }

    /// Bytes of the region file.
    pub fn region_len(&self) -> u64 {
        PAGE + u64::from(self.segments) * self.segment_bytes
    }

    fn meta_len(&self) -> u64 {
        PAGE + self.slots_bytes() + u64::from(self.segments) * self.records_bytes()
    }

    /// The header page of either file.
    fn header(&self, magic: &[u8; 8]) -> Vec<u8> {
        let mut h = vec![0u8; 32];
        h[0..8].copy_from_slice(magic);
        h[8..12].copy_from_slice(&FORMAT.to_le_bytes());
        h[16..24].copy_from_slice(&self.segment_bytes.to_le_bytes());
        h[24..28].copy_from_slice(&self.segments.to_le_bytes());
        let crc = crc32c::crc32c(&h[0..28]);
        h[28..32].copy_from_slice(&crc.to_le_bytes());
        h
    }
}

/// A segment handed to a client: where it lies in the region file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentGrant {
    /// The segment's index.
    pub index: u32,
    /// Its generation: requests naming an older one are refused.
    pub generation: u64,
    /// Its first byte in the region file.
    pub region_offset: u64,
    /// Its bytes.
    pub len: u64,
    /// Where the client's first entry goes (after the entries a reused segment holds).
    pub start: u64,
}

/// What the server keeps in memory of a segment.
#[derive(Debug, Clone)]
struct Segment {
    slot: SegmentSlot,
    /// Committed entries (the persisted count).
    count: u64,
    /// Where the next appended entry must start.
    append_at: u64,
    /// The largest version committed in it.
    max_version: u64,
    /// This generation's committed entries by offset: allocated bytes, version, key
    /// (what an in-place update of the entry is checked against).
    committed: std::collections::HashMap<u64, (u32, u64, Vec<u8>)>,
    /// This generation's newest version of each key it committed.
    latest: std::collections::HashMap<Vec<u8>, u64>,
}

/// How values are kept in the engine: a server whose other protocols store values with
/// a header (the RESP server's type and expiry) encodes BOOM's the same way, so that a
/// key BOOM wrote reads back through every protocol.
pub trait ValueCodec: Send + Sync + std::fmt::Debug {
    /// The engine's value for a client's `value`.
    fn encode(&self, value: &[u8]) -> Vec<u8>;
    /// The client's value in the engine's `stored`, or `None` if it is not one a GET
    /// returns (another type, an expired key).
    fn decode(&self, stored: &[u8]) -> Option<Vec<u8>>;
    /// The engine's key for a client's `key` (the key itself unless the holder keeps
    /// other records beside its clients' keys).
    fn engine_key<'k>(&self, key: &'k [u8]) -> std::borrow::Cow<'k, [u8]> {
        std::borrow::Cow::Borrowed(key)
    }
}

/// Values as they are: the library's own encoding.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawValues;

impl ValueCodec for RawValues {
    fn encode(&self, value: &[u8]) -> Vec<u8> {
        value.to_vec()
    }

    fn decode(&self, stored: &[u8]) -> Option<Vec<u8>> {
        Some(stored.to_vec())
    }
}

/// Whatever holds the database BOOM writes to (the database itself, or a server's
/// engine around it).
pub trait DbHandle: Send + Sync {
    /// The database.
    fn db(&self) -> &Db;

    /// Runs `write`, a PUT of `key` reaching the engine, as the holder's own writes of
    /// `key` run: a server keeping per-key locks or watches (RESP's WATCH) takes and
    /// marks them here. The default just writes.
    ///
    /// # Errors
    /// Whatever `write` returns.
    fn write_key(
        &self,
        key: &[u8],
        write: &mut dyn FnMut() -> terrace::Result<u64>,
    ) -> terrace::Result<u64> {
        let _ = key;
        write()
    }
}

impl DbHandle for Db {
    fn db(&self) -> &Db {
        self
    }
}

/// The server's BOOM store. See the module docs.
#[derive(Debug)]
pub struct BoomStore {
    config: StoreConfig,
    codec: Arc<dyn ValueCodec>,
    dir: std::path::PathBuf,
    region: SharedFile,
    meta: SharedFile,
    segments: Mutex<Vec<Segment>>,
}

impl BoomStore {
    /// Opens the store in `dir` (creating its files, 0600, if missing). Segments that
    /// were active belonged to clients of the last run: they are sealed.
    ///
    /// # Errors
    /// I/O errors; `Corrupt` if a file's header does not match `config` or a slot or a
    /// commit record below its count is damaged.
    pub fn open(dir: &Path, config: StoreConfig) -> Result<Arc<BoomStore>> {
        Self::open_with_codec(dir, config, Arc::new(RawValues))
    }

    /// [`BoomStore::open`], keeping values in the engine as `codec` encodes them.
    ///
    /// # Errors
    /// As [`BoomStore::open`].
    pub fn open_with_codec(
        dir: &Path,
        config: StoreConfig,
        codec: Arc<dyn ValueCodec>,
    ) -> Result<Arc<BoomStore>> {
        config.check()?;
        std::fs::create_dir_all(dir).map_err(|source| BoomError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let region = SharedFile::open_or_create(&dir.join(REGION_FILE), config.region_len())?;
        let meta = SharedFile::open_or_create(&dir.join(META_FILE), config.meta_len())?;
        for (file, magic) in [(&region, REGION_MAGIC), (&meta, META_MAGIC)] {
            let want = config.header(magic);
            let have = file.read_vec(0, want.len())?;
            if have.iter().all(|&b| b == 0) {
                file.write(0, &want)?;
                file.persist(0, want.len())?;
            } else if have != want {
                return Err(BoomError::Corrupt(format!(
                    "{} was made for other settings than {config:?} (or is damaged)",
                    file.path().display()
                )));
            }
        }
        let store = BoomStore {
            config,
            codec,
            dir: dir.to_path_buf(),
            region,
            meta,
            segments: Mutex::new(Vec::new()),
        };
        let mut segments = Vec::with_capacity(config.segments as usize);
        for i in 0..config.segments {
            let slot_at = store.slot_offset(i);
            let mut slot = SegmentSlot::decode(&store.meta.read_vec(slot_at, 16)?)?;
            let count =
                u64::from_le_bytes(store.read_u64(slot_at + SegmentSlot::COUNT_OFFSET as u64)?);
            let mut seg = Segment {
                slot,
                count: if slot.state == SegmentState::Free {
                    0
                } else {
                    count
                },
                append_at: 0,
                max_version: 0,
                committed: Default::default(),
                latest: Default::default(),
            };
            if slot.state != SegmentState::Free {
                if seg.count > config.records_per_segment() {
                    return Err(BoomError::Corrupt(format!(
                        "segment {i} counts {} commits, more than it has room for",
                        seg.count
                    )));
                }
                for r in 0..seg.count {
                    let rec = store.record(i, r)?;
                    seg.append_at = seg
                        .append_at
                        .max(u64::from(rec.offset) + u64::from(rec.alloc_len));
                    seg.max_version = seg.max_version.max(rec.version);
                }
            }
            if slot.state == SegmentState::Active {
                slot.state = SegmentState::Sealed;
                store.write_slot(i, slot)?;
                seg.slot = slot;
            }
            segments.push(seg);
        }
        *store.segments.lock() = segments;
        Ok(Arc::new(store))
    }

    /// The settings.
    pub fn config(&self) -> StoreConfig {
        self.config
    }

    /// The region file clients map.
    pub fn region_path(&self) -> &Path {
        self.region.path()
    }

    /// The region file's length.
    pub fn region_len(&self) -> u64 {
        self.config.region_len()
    }

    /// The directory of the store's files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// How values are kept in the engine.
    pub fn codec(&self) -> &dyn ValueCodec {
        self.codec.as_ref()
    }

    fn slot_offset(&self, index: u32) -> u64 {
        PAGE + u64::from(index) * SLOT_BYTES as u64
    }

    fn record_offset(&self, index: u32, n: u64) -> u64 {
        PAGE + self.config.slots_bytes()
            + u64::from(index) * self.config.records_bytes()
            + n * COMMIT_RECORD_BYTES as u64
    }

    fn segment_offset(&self, index: u32) -> u64 {
        PAGE + u64::from(index) * self.config.segment_bytes
    }

    fn read_u64(&self, at: u64) -> Result<[u8; 8]> {
        let mut b = [0u8; 8];
        self.meta.read(at, &mut b)?;
        Ok(b)
    }

    fn record(&self, index: u32, n: u64) -> Result<CommitRecord> {
        let bytes = self
            .meta
            .read_vec(self.record_offset(index, n), COMMIT_RECORD_BYTES)?;
        CommitRecord::decode(&bytes).ok_or_else(|| {
            BoomError::Corrupt(format!("commit record {n} of segment {index} is damaged"))
        })
    }

    /// Writes and persists a segment's slot (state and generation).
    fn write_slot(&self, index: u32, slot: SegmentSlot) -> Result<()> {
        let at = self.slot_offset(index);
        self.meta.write(at, &slot.encode())?;
        self.meta.persist(at, 16)
    }

    /// Writes and persists a segment's commit count.
    fn write_count(&self, index: u32, count: u64) -> Result<()> {
        let at = self.slot_offset(index) + SegmentSlot::COUNT_OFFSET as u64;
        self.meta.write(at, &count.to_le_bytes())?;
        self.meta.persist(at, 8)
    }

    /// Hands a segment to a client: a free one, or else a sealed one with room left
    /// (its client went away early), which the new client appends to after the entries
    /// it holds.
    ///
    /// # Errors
    /// `NoFreeSegment` when every segment is in use or full of writes the engine still
    /// needs; I/O errors.
    pub fn allocate(&self) -> Result<SegmentGrant> {
        let mut segments = self.segments.lock();
        let room = |s: &Segment| self.config.segment_bytes.saturating_sub(s.append_at);
        let index = match segments
            .iter()
            .position(|s| s.slot.state == SegmentState::Free)
        {
            Some(i) => i,
            None => segments
                .iter()
                .enumerate()
                .filter(|(_, s)| {
                    s.slot.state == SegmentState::Sealed
                        && room(s) >= self.config.segment_bytes / 4
                        && s.count < self.config.records_per_segment() / 2
                })
                .max_by_key(|(_, s)| room(s))
                .map(|(i, _)| i)
                .ok_or(BoomError::NoFreeSegment)?,
        };
        let seg = &mut segments[index];
        let index = index as u32;
        if seg.slot.state == SegmentState::Free {
            // The count goes to zero before the slot says active, so that a crash
            // between the two leaves a free segment, never an active one with old
            // records counted.
            self.write_count(index, 0)?;
            seg.count = 0;
            seg.append_at = 0;
            seg.max_version = 0;
        }
        // In-place updates only ever target entries of the new client's own generation.
        seg.committed.clear();
        seg.latest.clear();
        let slot = SegmentSlot {
            state: SegmentState::Active,
            generation: seg.slot.generation + 1,
        };
        self.write_slot(index, slot)?;
        seg.slot = slot;
        Ok(SegmentGrant {
            index,
            generation: slot.generation,
            region_offset: self.segment_offset(index),
            len: self.config.segment_bytes,
            start: seg.append_at,
        })
    }

    /// Seals a client's segment (it is full, or the client is gone): it is replayed
    /// until its writes are in tables, then freed.
    ///
    /// # Errors
    /// `InvalidArgument` if the grant is not the segment's current one; I/O errors.
    pub fn seal(&self, grant: &SegmentGrant) -> Result<()> {
        let mut segments = self.segments.lock();
        let seg = current(&mut segments, grant)?;
        let slot = SegmentSlot {
            state: SegmentState::Sealed,
            generation: seg.slot.generation,
        };
        self.write_slot(grant.index, slot)?;
        seg.slot = slot;
        Ok(())
    }

    /// Writes `entry` at `offset` of `grant`'s segment for a client that cannot (one on
    /// another host); `commit_put` then checks and commits it like any other.
    ///
    /// # Errors
    /// `InvalidArgument` if the grant is not the segment's current one or the bytes run
    /// past it.
    pub fn write_entry(&self, grant: &SegmentGrant, offset: u64, entry: &[u8]) -> Result<()> {
        {
            let mut segments = self.segments.lock();
            current(&mut segments, grant)?;
        }
        if offset.saturating_add(entry.len() as u64) > self.config.segment_bytes {
            return Err(BoomError::InvalidArgument(format!(
                "{} bytes at {offset} run past the segment",
                entry.len()
            )));
        }
        self.region
            .write(self.segment_offset(grant.index) + offset, entry)
    }

    /// Where the next entry of `grant`'s segment must start (a two-phase client asks
    /// before it writes).
    ///
    /// # Errors
    /// `InvalidArgument` if the grant is not the segment's current one.
    pub fn append_point(&self, grant: &SegmentGrant) -> Result<u64> {
        let mut segments = self.segments.lock();
        Ok(current(&mut segments, grant)?.append_at)
    }

    /// Commits the entry a client wrote at `offset` of its segment: appended at its
    /// append point, or written in place over one of its earlier entries (the hybrid
    /// update). Checks it, persists it, writes it to `db` (which gives it its version,
    /// the write's sequence number) with its commit record and count persisted before it
    /// is visible, and returns the version.
    ///
    /// An entry written in place must be the same key as the entry it replaces, take
    /// exactly its bytes, and replace a version that is not the key's newest in this
    /// segment (the paper's conditions; GETs read the engine, never a segment, so no
    /// unfinished GET can be reading it). A crash while it is being written tears only
    /// that older version: the newest stays whole in its own entry.
    ///
    /// # Errors
    /// `BadEntry` (the client wrote garbage, neither at its append point nor over an
    /// entry it may replace) and `InvalidArgument` (not its segment) refuse the client;
    /// I/O and engine errors.
    pub fn commit_put(
        self: &Arc<Self>,
        db: &dyn DbHandle,
        grant: &SegmentGrant,
        offset: u64,
    ) -> Result<u64> {
        let (append_at, replaced) = {
            let mut segments = self.segments.lock();
            let seg = current(&mut segments, grant)?;
            (seg.append_at, seg.committed.get(&offset).cloned())
        };
        let in_place = offset != append_at;
        let room = match (&replaced, in_place) {
            (_, false) => self.config.segment_bytes.saturating_sub(offset),
            (Some((alloc, _, _)), true) => u64::from(*alloc),
            (None, true) => {
                return Err(BoomError::BadEntry(format!(
                    "a write at {offset}: neither the append point ({append_at}) nor an entry \
                     of this client's segment"
                )))
            }
        };
        let at = self.segment_offset(grant.index) + offset;
        let head = self
            .region
            .read_vec(at, ENTRY_HEADER_BYTES.min(room as usize))?;
        let header = decode_header(&head, room)?;
        let bytes = self.region.read_vec(at, header.alloc_len as usize)?;
        let entry = decode_entry(&bytes)?;
        if let (true, Some((alloc, old_version, old_key))) = (in_place, &replaced) {
            let newest = {
                let mut segments = self.segments.lock();
                current(&mut segments, grant)?
                    .latest
                    .get(old_key.as_slice())
                    .copied()
            };
            if header.alloc_len != *alloc || entry.key != old_key.as_slice() {
                return Err(BoomError::BadEntry(
                    "an in-place update must be the same key in the same bytes".into(),
                ));
            }
            if newest.is_none_or(|v| v <= *old_version) {
                return Err(BoomError::BadEntry(
                    "an in-place update may not replace a key's newest version".into(),
                ));
            }
        }
        // The entry is durable before anything names it.
        self.region.persist(at, header.alloc_len as usize)?;
        let mut batch = WriteBatch::new();
        batch.put(
            &self.codec.engine_key(entry.key),
            &self.codec.encode(entry.value),
        );
        let record = CommitRecord {
            offset: offset as u32,
            alloc_len: header.alloc_len,
            version: 0,
            entry_crc: header.crc,
        };
        let store = self.clone();
        let grant = *grant;
        let key = entry.key.to_vec();
        let mut once = Some(batch);
        let version = db.write_key(entry.key, &mut || {
            let batch = once.take().ok_or_else(|| {
                terrace::Error::InvalidArgument("a BOOM PUT written twice".into())
            })?;
            let (store, key) = (store.clone(), key.clone());
            db.db().write_external(batch, move |version| {
                store
                    .commit(&grant, CommitRecord { version, ..record }, key)
                    .map_err(terrace::Error::from)
            })
        })?;
        // The version slot is the client's to read; recovery trusts only the record.
        self.region.write(at + 24, &version.to_le_bytes())?;
        Ok(version)
    }

    /// Persists `record` (of an entry of `key`) as the segment's next commit, then the
    /// count that makes it one.
    fn commit(&self, grant: &SegmentGrant, record: CommitRecord, key: Vec<u8>) -> Result<()> {
        let mut segments = self.segments.lock();
        let seg = current(&mut segments, grant)?;
        if seg.count >= self.config.records_per_segment() {
            return Err(BoomError::SegmentFull);
        }
        let at = self.record_offset(grant.index, seg.count);
        self.meta.write(at, &record.encode())?;
        self.meta.persist(at, COMMIT_RECORD_BYTES)?;
        self.write_count(grant.index, seg.count + 1)?;
        seg.count += 1;
        let end = u64::from(record.offset) + u64::from(record.alloc_len);
        seg.append_at = seg.append_at.max(end);
        seg.max_version = seg.max_version.max(record.version);
        let newest = seg.latest.entry(key.clone()).or_insert(0);
        *newest = (*newest).max(record.version);
        seg.committed.insert(
            u64::from(record.offset),
            (record.alloc_len, record.version, key),
        );
        Ok(())
    }

    /// For crash tests only: the region and the metadata file persist through `power`
    /// and remember what was persisted (see [`SharedFile::set_power`]); give the same
    /// supply to the engine's storage so that one cut stops both.
    ///
    /// # Errors
    /// `InvalidArgument` if the store already has a supply.
    #[doc(hidden)]
    pub fn set_power(&self, power: Arc<terrace::storage::PowerSupply>) -> Result<()> {
        self.region.set_power(power.clone())?;
        self.meta.set_power(power)
    }

    /// For crash tests only, after the cut and once no server or client writes any
    /// more: each line of the region and the metadata file written since it was last
    /// persisted keeps its new bytes or loses them, at random (`seed`). Returns the lines
    /// lost. Drop the store and open it again to recover.
    ///
    /// # Errors
    /// `InvalidArgument` without [`BoomStore::set_power`].
    #[doc(hidden)]
    pub fn lose_unpersisted(&self, seed: u64) -> Result<usize> {
        Ok(self.region.lose_unpersisted(seed)?
            + self.meta.lose_unpersisted(seed.rotate_left(17))?)
    }

    /// Segments by state, for statistics: (free, active, sealed).
    pub fn segment_counts(&self) -> (usize, usize, usize) {
        let segments = self.segments.lock();
        let n = |s: SegmentState| segments.iter().filter(|g| g.slot.state == s).count();
        (
            n(SegmentState::Free),
            n(SegmentState::Active),
            n(SegmentState::Sealed),
        )
    }
}

/// The segment `grant` names, if it is still the client's (active, same generation).
fn current<'a>(segments: &'a mut [Segment], grant: &SegmentGrant) -> Result<&'a mut Segment> {
    segments
        .get_mut(grant.index as usize)
        .filter(|s| s.slot.state == SegmentState::Active && s.slot.generation == grant.generation)
        .ok_or_else(|| {
            BoomError::InvalidArgument(format!(
                "segment {} generation {} is not an active segment of this client",
                grant.index, grant.generation
            ))
        })
}

impl terrace::wal::ExternalLog for BoomStore {
    fn replay(
        &self,
        after: u64,
        apply: &mut dyn FnMut(&WriteBatch) -> terrace::Result<()>,
    ) -> terrace::Result<()> {
        let segments: Vec<(SegmentState, u64)> = self
            .segments
            .lock()
            .iter()
            .map(|s| (s.slot.state, s.count))
            .collect();
        for (index, &(state, count)) in (0u32..).zip(segments.iter()) {
            if state == SegmentState::Free {
                continue;
            }
            for n in 0..count {
                let rec = self.record(index, n)?;
                if rec.version <= after {
                    continue;
                }
                let at = self.segment_offset(index) + u64::from(rec.offset);
                let room = self
                    .config
                    .segment_bytes
                    .saturating_sub(u64::from(rec.offset));
                if u64::from(rec.alloc_len) > room {
                    return Err(BoomError::Corrupt(format!(
                        "commit record {n} of segment {index} runs past the segment"
                    ))
                    .into());
                }
                let bytes = self.region.read_vec(at, rec.alloc_len as usize)?;
                // An entry overwritten in place since this record no longer matches it:
                // the record is stale, and a newer one names what is there now.
                let entry = match decode_entry(&bytes) {
                    Ok(e) if e.header.crc == rec.entry_crc => e,
                    _ => continue,
                };
                let mut batch = WriteBatch::new();
                batch.put(
                    &self.codec.engine_key(entry.key),
                    &self.codec.encode(entry.value),
                );
                batch.set_sequence(rec.version);
                apply(&batch)?;
            }
        }
        Ok(())
    }

    fn release_through(&self, seq: u64) {
        let mut segments = self.segments.lock();
        for (index, seg) in (0u32..).zip(segments.iter_mut()) {
            if seg.slot.state != SegmentState::Sealed || seg.max_version > seq {
                continue;
            }
            let slot = SegmentSlot {
                state: SegmentState::Free,
                generation: seg.slot.generation,
            };
            match self.write_slot(index, slot) {
                Ok(()) => {
                    seg.slot = slot;
                    seg.count = 0;
                    seg.append_at = 0;
                    seg.max_version = 0;
                    seg.committed.clear();
                    seg.latest.clear();
                }
                Err(e) => {
                    tracing::warn!(segment = index, error = %e, "cannot free a BOOM segment; it stays sealed");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
