//! A skiplist node's bytes in the arena, and the typed view of them.
//!
//! ```text
//! offset 0   height: u8, 3 bytes zero, user_len: u32
//!        8   value_len: u32, replaced_by: u32 (atomic)
//!       16   next: height x u32 (atomic)
//! 16 + 4 h   user key, trailer (8 bytes, as `coding::put_fixed64`), value
//! ```
//!
//! Links, key and value sit together: a search's comparison reads the same cache line or
//! two as the link it followed, and an entry costs its key and value plus 24 bytes and
//! 4 per extra level (about 25 bytes at the average height), with no allocation of its
//! own.
//!
//! Writing: [`write`] fills a node's reserved bytes (safe code: the arena hands them out
//! as `&mut [u8]`) before its handle is published; after that only `replaced_by` and the
//! links change, always atomically (compare-and-swap once other writers can see them). Reading: a [`Node`] is made by [`at`] for a handle
//! of a published node only, so the plain bytes it reads are never written concurrently.

use std::cmp::Ordering;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering as AtomicOrdering};

use super::compare::Target;
use super::{MAX_HEIGHT, NIL};
use crate::coding::get_fixed64;
use crate::key::{compare_bytes, compare_from, PREFIX_BYTES, TRAILER_LEN};
use crate::memtable::arena::Arena;

const HEADER: usize = 16;
const LINKS_AT: usize = 16;
const REPLACED_AT: usize = 12;

/// Bytes a node of `height` links holding `user` and `value` takes.
pub(super) fn size(height: usize, user: usize, value: usize) -> Option<usize> {
    HEADER
        .checked_add(height.checked_mul(4)?)?
        .checked_add(user)?
        .checked_add(TRAILER_LEN)?
        .checked_add(value)
}

/// Writes a node into `dst`, bytes reserved for it (at least [`size`] long, not yet
/// published): header, links (`next`, one per level), key and value. `None` if `dst` is
/// too short or a length does not fit its field.
pub(super) fn write(
    dst: &mut [u8],
    next: &[u32],
    user: &[u8],
    trailer: u64,
    value: &[u8],
) -> Option<()> {
    let height = u8::try_from(next.len())
        .ok()
        .filter(|h| *h as usize <= MAX_HEIGHT)?;
    let user_len = u32::try_from(user.len()).ok()?;
    let value_len = u32::try_from(value.len()).ok()?;
    let dst = dst.get_mut(..size(next.len(), user.len(), value.len())?)?;
    let (header, rest) = dst.split_at_mut(HEADER);
    header.fill(0);
    header[0] = height;
    header[4..8].copy_from_slice(&user_len.to_ne_bytes());
    header[8..12].copy_from_slice(&value_len.to_ne_bytes());
    header[REPLACED_AT..HEADER].copy_from_slice(&NIL.to_ne_bytes());
    let (links, data) = rest.split_at_mut(4 * next.len());
    for (slot, link) in links.chunks_exact_mut(4).zip(next) {
        slot.copy_from_slice(&link.to_ne_bytes());
    }
    let (key, value_dst) = data.split_at_mut(user.len() + TRAILER_LEN);
    key[..user.len()].copy_from_slice(user);
    key[user.len()..].copy_from_slice(&trailer.to_le_bytes());
    value_dst.copy_from_slice(value);
    Some(())
}

/// The node at handle `h` of `arena`, the head included; `None` if no block holds `h`
/// or its header does not fit there.
///
/// Precondition (why this is a safe function): `h` must be the handle of a node written
/// by [`write`] and published, or one the calling writer wrote itself. The skiplist
/// passes only handles it loaded from links, the point index or iterators, which hold
/// nothing else (or the head, written before the list was shared, and absent if it
/// could not be allocated), or the handle its own `write` just returned, so the bytes
/// at `h` are a whole node that no one writes except through its atomic fields. The bounds
/// checks below keep any other handle inside the block.
#[inline]
pub(super) fn at(arena: &Arena, h: u32) -> Option<Node<'_>> {
    let (ptr, room) = arena.at(h)?;
    at_located(arena, ptr, room)
}

/// [`at`] for a handle already looked up: `ptr` and `room` must be what `arena.at(h)`
/// returned (directly or through `Arena::prefetch`) for a handle `h` that meets [`at`]'s
/// precondition. A search that prefetched the node it reads next saves the block lookup.
#[inline]
pub(super) fn at_located(_arena: &Arena, ptr: NonNull<u8>, room: usize) -> Option<Node<'_>> {
    if room < HEADER {
        return None;
    }
    let p = ptr.as_ptr();
    // SAFETY: the header's first 12 bytes (height, key and value lengths; `replaced_by`
    // at 12..16 is only touched atomically) are inside the block (`room`), were written
    // before the node was published (see above) and are never written again; the u32
    // fields are 4-aligned (nodes start 8-aligned).
    let (height, user_len, value_len) = unsafe {
        (
            usize::from(p.read()),
            p.add(4).cast::<u32>().read() as usize,
            p.add(8).cast::<u32>().read() as usize,
        )
    };
    // No overflow: each length is below 2^32 (they were read from u32s).
    let size = (HEADER + TRAILER_LEN + 4 * height) as u64 + user_len as u64 + value_len as u64;
    if height > MAX_HEIGHT || size > room as u64 {
        return None;
    }
    Some(Node {
        ptr,
        height,
        user_len,
        value_len,
        _arena: PhantomData,
    })
}

/// A view of a published node, valid while the arena lives (`'a`). Made by [`at`].
#[derive(Clone, Copy)]
pub(in crate::memtable) struct Node<'a> {
    ptr: NonNull<u8>,
    height: usize,
    user_len: usize,
    value_len: usize,
    _arena: PhantomData<&'a ()>,
}

impl<'a> Node<'a> {
    fn atomic(&self, offset: usize) -> &'a AtomicU32 {
        // SAFETY: `offset` is the `replaced_by` field or one of the `height` links, all
        // inside the node (checked in `at`), 4-aligned, initialised by `write`, and from
        // publication on accessed only atomically; the block lives for `'a`.
        unsafe { AtomicU32::from_ptr(self.ptr.as_ptr().add(offset).cast::<u32>()) }
    }

    /// The link at `level`, or [`NIL`] above the node's height.
    #[inline]
    pub(super) fn link(&self, level: usize) -> u32 {
        if level < self.height {
            self.atomic(LINKS_AT + 4 * level)
                .load(AtomicOrdering::Acquire)
        } else {
            NIL
        }
    }

    /// Points the link at `level` (below the height) to `to`, publishing it.
    #[inline]
    pub(super) fn set_link(&self, level: usize, to: u32) {
        if level < self.height {
            self.atomic(LINKS_AT + 4 * level)
                .store(to, AtomicOrdering::Release);
        }
    }

    /// Points the link at `level` (below the height) from `expected` to `to`, publishing
    /// the node `to` names; false (and nothing changed) if it no longer is `expected`.
    #[inline]
    pub(super) fn cas_link(&self, level: usize, expected: u32, to: u32) -> bool {
        level < self.height
            && self
                .atomic(LINKS_AT + 4 * level)
                .compare_exchange(
                    expected,
                    to,
                    AtomicOrdering::AcqRel,
                    AtomicOrdering::Acquire,
                )
                .is_ok()
    }

    /// Records `by` as holding a later value of this node's internal key if none is
    /// recorded yet; otherwise returns the node recorded.
    pub(super) fn cas_replaced_by(&self, by: u32) -> Result<(), u32> {
        self.atomic(REPLACED_AT)
            .compare_exchange(NIL, by, AtomicOrdering::AcqRel, AtomicOrdering::Acquire)
            .map(|_| ())
    }

    /// The node holding a later value under the same internal key, or [`NIL`].
    #[inline]
    pub(super) fn replaced_by(&self) -> u32 {
        self.atomic(REPLACED_AT).load(AtomicOrdering::Acquire)
    }

    /// The internal key followed by the value.
    #[inline]
    fn data(&self) -> &'a [u8] {
        let len = self.user_len + TRAILER_LEN + self.value_len;
        // SAFETY: these bytes are inside the node (checked in `at`), were written before
        // it was published and are never written again; the block lives for `'a`.
        unsafe {
            std::slice::from_raw_parts(self.ptr.as_ptr().add(LINKS_AT + 4 * self.height), len)
        }
    }

    /// The internal key.
    #[inline]
    pub(in crate::memtable) fn key(&self) -> &'a [u8] {
        self.data()
            .get(..self.user_len + TRAILER_LEN)
            .unwrap_or_default()
    }

    /// The user key.
    #[inline]
    pub(in crate::memtable) fn user_key(&self) -> &'a [u8] {
        self.data().get(..self.user_len).unwrap_or_default()
    }

    /// The trailer: sequence number and type.
    #[inline]
    pub(in crate::memtable) fn trailer(&self) -> u64 {
        get_fixed64(self.data(), self.user_len).unwrap_or(0)
    }

    /// The value stored with this node (see `SkipList::latest` for replaced values).
    #[inline]
    pub(in crate::memtable) fn value(&self) -> &'a [u8] {
        self.data()
            .get(self.user_len + TRAILER_LEN..)
            .unwrap_or_default()
    }

    /// [`Node::cmp_to`] for a node whose user key agrees with the target's on the first
    /// `skip` bytes (see [`compare_from`]), with the length of the two user keys' common
    /// prefix: a search that knows how much of the target its bracketing nodes share
    /// compares each new node from there, one word where a collection's members share
    /// a long prefix that [`Node::cmp_to`]'s prefix words would tie on.
    #[inline(always)]
    pub(super) fn cmp_from(&self, target: &Target<'_>, skip: usize) -> (Ordering, usize) {
        match compare_from(self.user_key(), target.user, skip) {
            (Ordering::Equal, common) => (target.trailer.cmp(&self.trailer()), common),
            found => found,
        }
    }

    /// A search's comparison: [`Node::cmp_from`] when `FROM_COMMON` (the search keeps
    /// the common prefixes; see [`Target::long`]), else [`Node::cmp_to`] with no common
    /// prefix reported. A constant, so that each search loop is compiled for one.
    #[inline(always)]
    pub(super) fn search_cmp<const FROM_COMMON: bool>(
        &self,
        target: &Target<'_>,
        skip: usize,
    ) -> (Ordering, usize) {
        if FROM_COMMON {
            self.cmp_from(target, skip)
        } else {
            (self.cmp_to(target), 0)
        }
    }

    /// Orders this node's key against the internal key `target`, as
    /// [`crate::key::compare`] does. Keys of 16 bytes or more compare their first 16 as
    /// two words against the target's precomputed prefix, which decides most comparisons.
    #[inline]
    pub(super) fn cmp_to(&self, target: &Target<'_>) -> Ordering {
        let user = self.user_key();
        let order = match (user.get(..PREFIX_BYTES), target.user.get(PREFIX_BYTES..)) {
            (Some(head), Some(rest)) => {
                let (hi, lo) = head.split_at(8);
                let hi = u64::from_be_bytes(hi.try_into().unwrap_or_default());
                let lo = u64::from_be_bytes(lo.try_into().unwrap_or_default());
                match hi.cmp(&target.prefix[0]).then(lo.cmp(&target.prefix[1])) {
                    Ordering::Equal => {
                        compare_bytes(user.get(PREFIX_BYTES..).unwrap_or_default(), rest)
                    }
                    o => o,
                }
            }
            _ => compare_bytes(user, target.user),
        };
        match order {
            Ordering::Equal => target.trailer.cmp(&self.trailer()),
            o => o,
        }
    }
}
