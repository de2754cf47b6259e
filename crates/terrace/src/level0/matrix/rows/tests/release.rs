//! Rows that gave their leading data chunks back after column compaction: what stays
//! readable, what is refused, and reopening them from the chunks they keep.

use super::*;
use crate::error::Error;

/// Forty entries of about 60 bytes in chunks of at most 256 bytes: several data chunks.
fn many_chunk_row() -> BuiltRow {
    let entries: Vec<Entry> = (0..40u64)
        .map(|i| put(format!("key-{i:03}").as_bytes(), 100 + i, &[b'x'; 40]))
        .collect();
    build_row(9, entries, &[], None, 256).unwrap()
}

#[test]
fn released_chunks_are_refused_and_the_rest_reads_the_same() {
    let built = many_chunk_row();
    let full = built.clone().open().unwrap();
    let chunks = full.header().data_chunks.len();
    assert!(chunks >= 4, "{chunks} data chunks");
    let released = full.release_data_chunks(2).unwrap();
    assert_eq!(released.released_chunks(), 2);
    assert_eq!(released.data_chunks().len(), chunks - 2);
    let first = released.first_live();
    assert!(first > 0 && released.data_chunk_of(first).unwrap() == 2);
    assert_eq!(released.data_chunk_of(first - 1).unwrap(), 1);
    for j in 0..full.len() {
        if j < first {
            assert!(matches!(released.entry(j), Err(Error::Internal(_))));
        } else {
            assert_eq!(released.entry(j).unwrap(), full.entry(j).unwrap());
        }
    }
    // Searches that start at the first held entry agree with the full row.
    let target = full.key(first + 3).unwrap().to_vec();
    assert_eq!(
        released
            .lower_bound(&target, first, released.len())
            .unwrap(),
        full.lower_bound(&target, 0, full.len()).unwrap()
    );
    // Releases only grow and stay inside the row.
    assert!(released.release_data_chunks(1).is_err());
    assert!(released.release_data_chunks(chunks + 1).is_err());
    assert_eq!(
        released.release_data_chunks(chunks).unwrap().first_live(),
        full.len()
    );
}

#[test]
fn a_released_row_reopens_from_the_chunks_it_keeps() {
    let built = many_chunk_row();
    let kept = built.data_chunks[2..].to_vec();
    let r = RowReader::open_released(&built.header, built.meta_chunks.clone(), kept.clone(), 2)
        .unwrap();
    let full = built.clone().open().unwrap();
    assert_eq!(
        r.first_live(),
        full.release_data_chunks(2).unwrap().first_live()
    );
    for j in r.first_live()..r.len() {
        assert_eq!(r.entry(j).unwrap(), full.entry(j).unwrap());
    }
    // The wrong count of kept chunks, a damaged kept chunk or damaged metadata is refused.
    let short = kept[1..].to_vec();
    assert!(RowReader::open_released(&built.header, built.meta_chunks.clone(), short, 2).is_err());
    let mut bad = kept.clone();
    bad[0][5] ^= 1;
    let e = RowReader::open_released(&built.header, built.meta_chunks.clone(), bad, 2);
    assert!(matches!(e, Err(Error::Corruption { .. })), "{e:?}");
    let mut meta = built.meta_chunks.clone();
    meta[0][3] ^= 1;
    let e = RowReader::open_released(&built.header, meta, kept, 2);
    assert!(matches!(e, Err(Error::Corruption { .. })), "{e:?}");
    // Releasing more chunks than the row has.
    let e = RowReader::open_released(&built.header, built.meta_chunks.clone(), Vec::new(), 99);
    assert!(e.is_err());
}
