//! The skiplist's node arena: an append-only table of write-once slots addressed by `u32`.
//!
//! Owns: the slots and the chunks that hold them. Slot `i` lives in chunk `i >> 12` of
//! page `i >> 22`; pages and chunks are allocated on first use, never moved and never
//! freed before the arena, so a reference to a filled slot stays valid for the arena's
//! life and readers need no lock.
//! Must not touch: what the slots hold; the skiplist decides indices and links.
//! Concurrency: `Sync`. Any thread may [`Arena::get`]; [`Arena::set`] is meant for one
//! writer at a time (concurrent writers stay safe: a slot is filled at most once). A slot
//! set on one thread is seen whole by any thread that learned its index through a
//! `Release` store it read with `Acquire` (the slot's `OnceLock` also publishes with
//! `Release`/`Acquire` itself).

use std::sync::OnceLock;

/// Slots per chunk: 2^12.
const SLOT_BITS: u32 = 12;
/// Chunks per page: 2^10.
const CHUNK_BITS: u32 = 10;
const SLOTS: usize = 1 << SLOT_BITS;
const CHUNKS: usize = 1 << CHUNK_BITS;
/// Pages: 2^10, so that every `u32` names a slot.
const PAGES: usize = 1 << (u32::BITS - SLOT_BITS - CHUNK_BITS);

type Chunk<T> = Box<[OnceLock<T>; SLOTS]>;
type Page<T> = Box<[OnceLock<Chunk<T>>; CHUNKS]>;

/// Write-once slots of `T`; see the module docs.
pub(super) struct Arena<T> {
    /// Inline: one pointer fewer on every lookup.
    pages: [OnceLock<Page<T>>; PAGES],
}

impl<T> Arena<T> {
    /// An arena with no chunk allocated yet.
    pub(super) fn new() -> Self {
        Arena {
            pages: std::array::from_fn(|_| OnceLock::new()),
        }
    }

    /// The value in slot `i`, `None` if the slot was never set.
    #[inline]
    pub(super) fn get(&self, i: u32) -> Option<&T> {
        let (page, chunk, slot) = split(i);
        self.pages
            .get(page)?
            .get()?
            .get(chunk)?
            .get()?
            .get(slot)?
            .get()
    }

    /// Fills slot `i` with `value`, allocating its chunk if needed. Returns `value` back
    /// if the slot was already filled.
    pub(super) fn set(&self, i: u32, value: T) -> Result<(), T> {
        let (page, chunk, slot) = split(i);
        let Some(page) = self.pages.get(page) else {
            return Err(value);
        };
        let Some(page) = get_or_try_init(page) else {
            return Err(value);
        };
        let Some(chunk) = page.get(chunk).and_then(get_or_try_init) else {
            return Err(value);
        };
        match chunk.get(slot) {
            Some(cell) => cell.set(value),
            None => Err(value),
        }
    }
}

#[inline]
fn split(i: u32) -> (usize, usize, usize) {
    let i = i as usize;
    (
        i >> (SLOT_BITS + CHUNK_BITS),
        (i >> SLOT_BITS) & (CHUNKS - 1),
        i & (SLOTS - 1),
    )
}

/// The cells in `cell`, allocating them if needed; `None` only if allocation could not
/// be arranged (see [`cells`]). Called by the writer only, so the check-then-set does
/// not race with another initialiser in practice (and stays safe if it does).
fn get_or_try_init<U, const N: usize>(
    cell: &OnceLock<Box<[OnceLock<U>; N]>>,
) -> Option<&[OnceLock<U>; N]> {
    if cell.get().is_none() {
        let _ = cell.set(cells()?);
    }
    cell.get().map(|b| &**b)
}

/// `N` empty cells, built on the heap (a chunk is too large for the stack).
fn cells<U, const N: usize>() -> Option<Box<[OnceLock<U>; N]>> {
    let v: Box<[OnceLock<U>]> = (0..N).map(|_| OnceLock::new()).collect();
    // The slice has exactly N cells, so the conversion cannot fail.
    v.try_into().ok()
}
