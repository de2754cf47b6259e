//! The skiplist's node arena: append-only blocks of bytes, nodes addressed by `u32`.
//!
//! Owns: the blocks and the addressing. A handle counts 8-byte units: handle `h` lives in
//! block slot `h >> BLOCK_UNIT_BITS` at byte `(h & mask) * 8`. Each of the 4096 block
//! slots spans 8 MiB of handles; blocks start at 4 KiB (so that a small memtable stays
//! small) and double up to 8 MiB, and an entry over 1 MiB gets a block of its own, which
//! takes as many slots as it spans. Blocks are allocated zeroed,
//! never moved, and freed with the arena, so bytes at a handle stay put for the arena's
//! life and readers need no lock.
//! Must not touch: what the bytes mean; the skiplist lays out its nodes
//! (`skiplist/node.rs`) and publishes them.
//! Concurrency: `Sync`. Any thread may read a published node. Any number of writers may
//! allocate at once, each through its own [`Cursor`]: a cursor claims each new block slot
//! with an atomic increment, so no two cursors ever cut from the same block. A block is published through
//! its slot's `OnceLock` (`Release`/`Acquire`) before any handle inside it is stored
//! anywhere a reader can load it.
//!
//! Why hand-written: a node keeps its links, lengths, key and value in one run of bytes
//! (one cache line for the search's comparisons, no allocation or header per entry), and
//! readers share it without locks; no arena crate offers stable `u32` handles with
//! lock-free readers and values handed out as `Bytes`.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;

/// Units (8 bytes) per block slot: 2^20, 8 MiB.
pub(super) const BLOCK_UNIT_BITS: u32 = 20;
/// Bytes a block slot spans.
pub(super) const BLOCK_SPAN: usize = 8 << BLOCK_UNIT_BITS;
/// Block slots: 4096, so that every `u32` handle names a byte of some slot (32 GiB in
/// all). The table is flat: finding a node's block is one load.
const SLOTS: usize = 1 << (u32::BITS - BLOCK_UNIT_BITS);
/// The first block's size; each new block doubles it, up to [`BLOCK_SPAN`].
const FIRST_BLOCK: usize = 4 << 10;
/// An allocation larger than this gets a block of its own, so that the block being
/// filled is not abandoned with much of it unused.
const OWN_BLOCK_ABOVE: usize = 1 << 20;

/// One zeroed allocation, 8-byte aligned.
struct Block {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: a block is plain memory owned by the arena. Bytes before the writer's cursor are
// written once before their handle is published and only read after; links inside them
// are only touched through atomics (`skiplist/node.rs`). Nothing in it is tied to a thread.
unsafe impl Send for Block {}
// SAFETY: as for `Send`: shared access is reads of published bytes and atomic links.
unsafe impl Sync for Block {}

impl Block {
    fn new(len: usize) -> Option<Block> {
        let layout = Layout::from_size_align(len, 8).ok()?;
        if layout.size() == 0 {
            return None;
        }
        // SAFETY: the layout has a non-zero size (checked above).
        let ptr = NonNull::new(unsafe { alloc_zeroed(layout) })?;
        Some(Block { ptr, len })
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        if let Ok(layout) = Layout::from_size_align(self.len, 8) {
            // SAFETY: `ptr` was allocated by `alloc_zeroed` with this same layout (`new`),
            // and the arena drops each block once.
            unsafe { dealloc(self.ptr.as_ptr(), layout) }
        }
    }
}

/// A published block: where its bytes are (copied out of the `Arc`, so that reading a
/// node costs no extra pointer chase) and the allocation, shared with values handed out
/// as `Bytes` ([`Arena::owner`]), which may outlive the arena.
struct Slot {
    ptr: NonNull<u8>,
    len: usize,
    block: Arc<Block>,
}

// SAFETY: `ptr` points into `block`, which is `Send` and `Sync`; see there.
unsafe impl Send for Slot {}
// SAFETY: as for `Send`.
unsafe impl Sync for Slot {}

/// The writer's position: the block being filled and how far. Bound to one arena.
pub(super) struct Cursor {
    /// The arena's [`Arena::id`].
    arena: u64,
    /// The slot of the block being filled (`None` before the first allocation).
    slot: Option<usize>,
    /// Bytes of that block used.
    used: usize,
    /// Its size.
    len: usize,
    /// The size of the next ordinary block.
    next_len: usize,
}

impl Cursor {
    /// A cursor of `arena`, for one writer. A cursor cuts reservations only from blocks
    /// whose slot it claimed itself (an atomic increment of the arena's count: each slot
    /// is claimed once), so two cursors of one arena never hand out overlapping bytes.
    pub(super) fn new(arena: &Arena) -> Self {
        Cursor {
            arena: arena.id,
            slot: None,
            used: 0,
            len: 0,
            next_len: FIRST_BLOCK,
        }
    }
}

/// The arena; see the module docs.
pub(super) struct Arena {
    /// Tells this arena's cursors from others'.
    id: u64,
    /// Block slots claimed so far (by any cursor; may pass the table's size when a claim
    /// fails there).
    claimed: AtomicUsize,
    /// A fixed-size array, so that indexing by `handle >> BLOCK_UNIT_BITS` needs no check.
    slots: Box<[OnceLock<Slot>; SLOTS]>,
}

/// The next arena's id.
static NEXT_ARENA: AtomicU64 = AtomicU64::new(0);

impl Arena {
    /// An arena with no block allocated yet.
    pub(super) fn new() -> Self {
        Arena {
            id: NEXT_ARENA.fetch_add(1, Ordering::Relaxed),
            claimed: AtomicUsize::new(0),
            slots: empty_slots(),
        }
    }

    /// Block slots not yet claimed: each new block takes one (ordinary blocks hold up to
    /// 8 MiB of nodes, an entry over 1 MiB takes one of its own).
    pub(super) fn slots_left(&self) -> usize {
        SLOTS.saturating_sub(self.claimed.load(Ordering::Relaxed))
    }

    /// Blocks allocated.
    #[cfg(test)]
    pub(super) fn blocks(&self) -> usize {
        self.slots.iter().filter(|s| s.get().is_some()).count()
    }

    /// Bytes allocated to blocks (not yet all used).
    #[cfg(test)]
    pub(super) fn allocated_bytes(&self) -> usize {
        self.slots
            .iter()
            .filter_map(OnceLock::get)
            .map(|s| s.len)
            .sum()
    }

    /// Reserves `size` zeroed bytes (8-byte aligned) for a new node: its handle and the
    /// bytes to write it in, which are the caller's alone until it publishes the handle.
    /// `None` if `cursor` is another arena's, `size` is 0 or over 4 GiB, the handles
    /// ran out (32 GiB of nodes) or memory could not be allocated.
    // The bytes are handed out from `&self` because readers share the arena while the
    // writer appends; they are disjoint from every other reservation and from published
    // nodes, so the `&mut` aliases nothing (see the SAFETY comment below).
    #[allow(clippy::mut_from_ref)]
    pub(super) fn alloc(&self, cursor: &mut Cursor, size: usize) -> Option<(u32, &mut [u8])> {
        let size = size.checked_next_multiple_of(8)?;
        if cursor.arena != self.id || size == 0 || u32::try_from(size).is_err() {
            return None;
        }
        let (handle, base) = if size > OWN_BLOCK_ABOVE {
            // Only the block's first byte is ever addressed, so one slot holds it whatever
            // its size.
            let slot = self.claim_slot()?;
            let block = self.install(slot, size)?;
            (handle(slot, 0)?, block.as_ptr())
        } else {
            if cursor.slot.is_none() || cursor.used + size > cursor.len {
                let slot = self.claim_slot()?;
                let len = cursor.next_len.max(size);
                self.install(slot, len)?;
                cursor.next_len = (cursor.next_len * 2).min(BLOCK_SPAN);
                cursor.slot = Some(slot);
                cursor.used = 0;
                cursor.len = len;
            }
            let slot = cursor.slot?;
            let offset = cursor.used;
            let block = self.block(slot)?;
            cursor.used += size;
            // SAFETY: `offset + size <= len`, the block's size (checked or set above), so
            // the pointer stays inside the block's allocation.
            (handle(slot, offset)?, unsafe {
                block.ptr.as_ptr().add(offset)
            })
        };
        // SAFETY: `base .. base + size` lies inside one block (above), zeroed at
        // allocation and never handed out before: this cursor cuts only from blocks whose
        // slot it claimed itself (`claim_slot` hands each slot out once, and `install`
        // fails on a filled slot) and only moves forward,
        // so no other reservation, and no published node (which readers may reference),
        // overlaps it. The block stays allocated as long as the arena, which outlives the
        // returned borrow of `&self`.
        Some((handle, unsafe {
            std::slice::from_raw_parts_mut(base, size)
        }))
    }

    /// A block slot no cursor has claimed; `None` once all are.
    fn claim_slot(&self) -> Option<usize> {
        let slot = self.claimed.fetch_add(1, Ordering::Relaxed);
        (slot < SLOTS).then_some(slot)
    }

    /// Allocates block slot `slot` with `len` bytes and publishes it.
    fn install(&self, slot: usize, len: usize) -> Option<NonNull<u8>> {
        let cell = self.slots.get(slot)?;
        let block = Block::new(len)?;
        let (ptr, len) = (block.ptr, block.len);
        cell.set(Slot {
            ptr,
            len,
            block: Arc::new(block),
        })
        .ok()?;
        Some(ptr)
    }

    fn block(&self, slot: usize) -> Option<&Slot> {
        self.slots.get(slot)?.get()
    }

    /// `data`, which must lie in the block of handle `h` and never change again, as
    /// `Bytes` sharing the block (no copy; the block lives as long as the `Bytes` do).
    /// `None` if `data` is not inside that block.
    pub(super) fn share(&self, h: u32, data: &[u8]) -> Option<Bytes> {
        let slot = self.block((h >> BLOCK_UNIT_BITS) as usize)?;
        let start = (data.as_ptr() as usize).checked_sub(slot.ptr.as_ptr() as usize)?;
        if start.checked_add(data.len())? > slot.len {
            return None;
        }
        Some(Bytes::from_owner(Shared {
            block: Arc::clone(&slot.block),
            ptr: NonNull::new(data.as_ptr().cast_mut())?,
            len: data.len(),
        }))
    }

    /// Asks the processor to start loading the cache line of the bytes at `h` (nothing
    /// if no block holds `h`): a search calls it for a node it will read a few steps
    /// later, so that the load's miss overlaps other work instead of stalling it.
    /// Returns where the bytes are (as [`Arena::at`]), so that the caller reading them
    /// later need not look the block up again.
    #[inline]
    pub(super) fn prefetch(&self, h: u32) -> Option<(NonNull<u8>, usize)> {
        let located = self.at(h);
        #[cfg(target_arch = "x86_64")]
        if let Some((ptr, room)) = located {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let p = ptr.as_ptr().cast::<i8>().cast_const();
            // SAFETY: a prefetch is a hint: it reads nothing into the program and never
            // faults, whatever the address (here, one inside a live block).
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p) }
            // A node's key starts after its header and links, often on the next line.
            if room > 64 {
                // SAFETY: as above; the address is inside the block (`room` bytes follow).
                unsafe { _mm_prefetch::<_MM_HINT_T0>(p.add(64)) }
            }
        }
        located
    }

    /// A pointer to the bytes at `h` and how many bytes of its block follow it; `None`
    /// if no block holds `h`.
    #[inline]
    pub(super) fn at(&self, h: u32) -> Option<(NonNull<u8>, usize)> {
        let offset = ((h & ((1 << BLOCK_UNIT_BITS) - 1)) as usize) * 8;
        let block = self.slots[(h >> BLOCK_UNIT_BITS) as usize].get()?;
        let room = block.len.checked_sub(offset)?;
        // SAFETY: `offset <= len` (checked just above), so the pointer is inside the block
        // or one past its end.
        let ptr = unsafe { block.ptr.as_ptr().add(offset) };
        Some((NonNull::new(ptr)?, room))
    }
}

/// The empty slot table, built on the heap (128 KiB: too large for a small stack).
fn empty_slots() -> Box<[OnceLock<Slot>; SLOTS]> {
    let slots: Box<[OnceLock<Slot>]> = (0..SLOTS).map(|_| OnceLock::new()).collect();
    // The slice has exactly SLOTS cells, so the conversion succeeds; the fallback only
    // keeps this free of a panic path.
    slots
        .try_into()
        .unwrap_or_else(|_| Box::new(std::array::from_fn(|_| OnceLock::new())))
}

/// Bytes of a block handed out as `Bytes` (see [`Arena::share`]).
struct Shared {
    block: Arc<Block>,
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: `ptr` points into `block` (checked in `share`), which is `Send` and `Sync`.
unsafe impl Send for Shared {}
// SAFETY: as for `Send`.
unsafe impl Sync for Shared {}

impl AsRef<[u8]> for Shared {
    fn as_ref(&self) -> &[u8] {
        let _alive = &self.block;
        // SAFETY: `share` checked that the `len` bytes at `ptr` lie inside `block`, which
        // this value keeps allocated, and its caller that they were written before they
        // were published and are never written again.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

/// The handle of byte `offset` (a multiple of 8) of block slot `slot`.
fn handle(slot: usize, offset: usize) -> Option<u32> {
    let slot = u32::try_from(slot).ok()?;
    let units = u32::try_from(offset / 8).ok()?;
    slot.checked_mul(1 << BLOCK_UNIT_BITS)?.checked_add(units)
}
