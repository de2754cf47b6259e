//! Software prefetch of a byte range into the cache, so that the cache misses of a scan
//! about to happen overlap instead of following one another.
//!
//! Owns: the one `unsafe` call to the prefetch instruction. Must not touch: anything
//! else; a prefetch is a hint and never changes what a program computes.

/// Bytes of a cache line.
const LINE: usize = 64;

/// Hints that `data[from..to]` is about to be read. Out-of-range bounds are clamped;
/// on targets without a prefetch instruction this does nothing.
#[inline]
pub(crate) fn prefetch_range(data: &[u8], from: usize, to: usize) {
    let to = to.min(data.len());
    let mut at = from;
    while at < to {
        prefetch_line(data[at..].as_ptr());
        at += LINE;
    }
}

/// Hints that `value` is about to be read (the cache line of its first byte).
#[inline]
pub(crate) fn prefetch_value<T>(value: &T) {
    prefetch_line(std::ptr::from_ref(value).cast());
}

#[inline(always)]
fn prefetch_line(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` needs SSE, which every x86_64 CPU has (the target's
    // baseline). A prefetch performs no architectural memory access: it cannot fault or
    // change memory, whatever the address; `p` here is also inside a live slice.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_range_is_safe_to_hint() {
        let data = vec![7u8; 300];
        prefetch_range(&data, 0, data.len());
        prefetch_range(&data, 250, 10_000);
        prefetch_range(&data, 299, 300);
        prefetch_range(&data, 400, 500);
        prefetch_range(&[], 0, 64);
        prefetch_value(&data[299]);
        prefetch_value(&std::sync::atomic::AtomicU64::new(3));
        assert_eq!(data, vec![7u8; 300]);
    }
}
