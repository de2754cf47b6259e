//! The free-page set of a region: runs of free pages, first fit, coalesced on release.
//!
//! Owns: which data pages are free. Pages are numbered from 0 (the first page after the
//! header); callers convert to byte offsets.
//! Must not touch: the mapping or the file; this state is volatile and rebuilt at open.
//! Concurrency: none inside; the region keeps it behind a mutex.

use std::collections::BTreeMap;

/// Why a claim was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ClaimError {
    /// The run leaves the data area.
    OutOfRange,
    /// Some page of the run is already in use.
    Overlap,
}

/// Free pages as disjoint, non-adjacent runs: start page → run length in pages.
#[derive(Debug, Clone)]
pub(super) struct FreeRuns {
    runs: BTreeMap<u64, u64>,
    free_pages: u64,
    total_pages: u64,
}

impl FreeRuns {
    /// `total_pages` pages, all free.
    pub fn new(total_pages: u64) -> FreeRuns {
        let mut runs = BTreeMap::new();
        if total_pages > 0 {
            runs.insert(0, total_pages);
        }
        FreeRuns {
            runs,
            free_pages: total_pages,
            total_pages,
        }
    }

    /// Pages not in use.
    pub fn free_pages(&self) -> u64 {
        self.free_pages
    }

    /// Pages in the longest free run: the largest allocation that would succeed.
    pub fn largest_run(&self) -> u64 {
        self.runs.values().copied().max().unwrap_or(0)
    }

    /// Takes the first (lowest) free run of at least `pages` pages, returning its start.
    pub fn alloc(&mut self, pages: u64) -> Option<u64> {
        if pages == 0 {
            return None;
        }
        let (&start, &len) = self.runs.iter().find(|(_, &len)| len >= pages)?;
        self.runs.remove(&start);
        if len > pages {
            self.runs.insert(start + pages, len - pages);
        }
        self.free_pages -= pages;
        Some(start)
    }

    /// Marks `start..start + pages` used; every page of it must be free.
    pub fn claim(&mut self, start: u64, pages: u64) -> Result<(), ClaimError> {
        let end = start
            .checked_add(pages)
            .filter(|&end| pages > 0 && end <= self.total_pages)
            .ok_or(ClaimError::OutOfRange)?;
        let (&run_start, &run_len) = self
            .runs
            .range(..=start)
            .next_back()
            .ok_or(ClaimError::Overlap)?;
        let run_end = run_start + run_len;
        if end > run_end {
            return Err(ClaimError::Overlap);
        }
        self.runs.remove(&run_start);
        if run_start < start {
            self.runs.insert(run_start, start - run_start);
        }
        if end < run_end {
            self.runs.insert(end, run_end - end);
        }
        self.free_pages -= pages;
        Ok(())
    }

    /// Returns `start..start + pages` to the free set, merging it with free neighbours.
    /// The run must be in use (handed out by `alloc` or `claim` and not yet released);
    /// a run that is not is ignored rather than double-counted.
    pub fn release(&mut self, start: u64, pages: u64) {
        let Some(end) = start
            .checked_add(pages)
            .filter(|&end| pages > 0 && end <= self.total_pages)
        else {
            return;
        };
        let prev = self.runs.range(..end).next_back().map(|(&s, &l)| (s, l));
        if let Some((s, l)) = prev {
            if s + l > start {
                return; // overlaps a free run: not in use
            }
        }
        let mut new_start = start;
        let mut new_len = pages;
        if let Some((s, l)) = prev.filter(|&(s, l)| s + l == start) {
            self.runs.remove(&s);
            new_start = s;
            new_len += l;
        }
        if let Some(next_len) = self.runs.remove(&end) {
            new_len += next_len;
        }
        self.runs.insert(new_start, new_len);
        self.free_pages += pages;
    }

    /// The free runs in page order, for tests and diagnostics.
    #[cfg(test)]
    pub fn runs(&self) -> Vec<(u64, u64)> {
        self.runs.iter().map(|(&s, &l)| (s, l)).collect()
    }
}
