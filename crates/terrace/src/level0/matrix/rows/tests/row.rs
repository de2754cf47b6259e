//! Building and reading rows: round trips, chunking, `next` pointers, bad input and
//! damaged bytes.

use proptest::prelude::*;

use super::super::format::RowHeader;
use super::*;
use crate::iter::InternalIterator;
use crate::key::MAX_SEQ;

fn small_row() -> ModelRow {
    let mut entries = vec![
        put(b"apple", 9, b"red"),
        del(b"apple", 7),
        put(b"banana-split-with-long-key", 8, &[b'y'; 300]),
        put(b"cherry", 3, b"dark"),
        put(b"date", 4, b""),
    ];
    entries.sort_by(|a, b| key::compare(&a.0, &b.0));
    ModelRow {
        entries,
        tombstones: vec![RangeTombstone {
            start: b"b".to_vec(),
            end: b"c".to_vec(),
            seq: 10,
        }],
    }
}

fn built_small(chunk_bytes: usize) -> BuiltRow {
    let r = small_row();
    build_row(
        7,
        r.entries.iter().cloned(),
        &r.tombstones,
        None,
        chunk_bytes,
    )
    .unwrap()
}

fn all_entries<E: AsRef<[u8]>>(r: &RowReader<E>) -> Vec<Entry> {
    (0..r.len())
        .map(|j| {
            let (k, v) = r.entry(j).unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect()
}

#[test]
fn round_trip_keeps_entries_header_and_tombstones() {
    let row = small_row();
    let reader = built_small(MIN_CHUNK_BYTES).open().unwrap();
    assert_eq!(all_entries(&reader), row.entries);
    let h = reader.header();
    assert_eq!((h.id, h.entries, h.num_deletions), (7, 5, 1));
    assert_eq!((h.smallest_seq, h.largest_seq), (3, 10));
    assert_eq!(h.smallest_key, row.entries[0].0);
    assert_eq!(h.largest_key, row.entries[4].0);
    assert_eq!(h.below, None);
    assert_eq!(reader.range_tombstones(), row.tombstones.as_slice());
    assert_eq!(reader.max_covering_tombstone(b"banana", MAX_SEQ), 10);
    assert_eq!(reader.max_covering_tombstone(b"banana", 9), 0);
    assert_eq!(reader.max_covering_tombstone(b"cherry", MAX_SEQ), 0);
}

#[test]
fn chunks_stay_under_the_limit_and_a_large_entry_gets_its_own() {
    let built = built_small(MIN_CHUNK_BYTES);
    assert!(
        built.meta_chunks.len() >= 2,
        "5 entries at 4 per metadata chunk"
    );
    for m in &built.meta_chunks {
        assert!(m.len() <= MIN_CHUNK_BYTES);
    }
    let big = built
        .data_chunks
        .iter()
        .filter(|c| c.len() > MIN_CHUNK_BYTES)
        .collect::<Vec<_>>();
    assert_eq!(big.len(), 1);
    // The oversized chunk holds exactly the banana entry.
    let banana = &small_row().entries[2];
    assert_eq!(big[0].len(), banana.0.len() + banana.1.len());
    let reader = built.open().unwrap();
    assert_eq!(reader.data_chunk_of(0).unwrap(), 0);
    assert!(reader.data_chunk_of(4).unwrap() >= 2);
}

#[test]
fn extents_longer_than_their_chunks_read_the_same() {
    let mut b = built_small(MIN_CHUNK_BYTES);
    b.header.extend_from_slice(&[0xAB; 50]);
    b.meta_chunks
        .iter_mut()
        .for_each(|c| c.extend_from_slice(&[7; 9]));
    b.data_chunks
        .iter_mut()
        .for_each(|c| c.extend_from_slice(&[7; 9]));
    let r = b.open().unwrap();
    assert_eq!(all_entries(&r), small_row().entries);
}

#[test]
fn builder_rejects_bad_input() {
    let e = |r: crate::Result<BuiltRow>| matches!(r, Err(crate::Error::InvalidArgument(_)));
    let none: &[RangeTombstone] = &[];
    let out_of_order = vec![put(b"b", 1, b""), put(b"a", 2, b"")];
    assert!(e(build_row(1, out_of_order, none, None, 4096)));
    let dup = vec![put(b"a", 1, b""), put(b"a", 1, b"")];
    assert!(e(build_row(1, dup, none, None, 4096)));
    let rd = vec![(
        key::internal_key(b"a", 1, ValueType::RangeDeletion),
        b"b".to_vec(),
    )];
    assert!(e(build_row(1, rd, none, None, 4096)));
    assert!(e(build_row(
        1,
        vec![(b"short".to_vec(), vec![])],
        none,
        None,
        4096
    )));
    assert!(e(build_row(1, vec![put(b"a", 1, b"")], none, None, 16)));
}

#[test]
fn empty_and_tombstone_only_rows_open() {
    let none: &[RangeTombstone] = &[];
    let empty = build_row(1, Vec::<Entry>::new(), none, None, 4096)
        .unwrap()
        .open()
        .unwrap();
    assert!(empty.is_empty());
    assert_eq!(empty.lower_bound(b"anything", 0, 10).unwrap(), 0);
    let t = [RangeTombstone {
        start: b"a".to_vec(),
        end: b"z".to_vec(),
        seq: 5,
    }];
    let only = build_row(2, Vec::<Entry>::new(), &t, None, 4096)
        .unwrap()
        .open()
        .unwrap();
    assert_eq!(only.max_covering_tombstone(b"m", 5), 5);
}

/// Every single-byte change of the header or a chunk, and every truncation of the header,
/// is reported as corruption: never a panic, never a row that reads differently.
#[test]
fn every_damaged_byte_is_reported() {
    let good = built_small(MIN_CHUNK_BYTES);
    let open =
        |b: &BuiltRow| RowReader::open(&b.header, b.meta_chunks.clone(), b.data_chunks.clone());
    for flip in [0x01u8, 0x80, 0xff] {
        for i in 0..good.header.len() {
            let mut b = good.clone();
            b.header[i] ^= flip;
            assert!(open(&b).unwrap_err().is_corruption(), "header byte {i}");
        }
        for c in 0..good.meta_chunks.len() {
            for i in 0..good.meta_chunks[c].len() {
                let mut b = good.clone();
                b.meta_chunks[c][i] ^= flip;
                assert!(open(&b).unwrap_err().is_corruption(), "meta {c} byte {i}");
            }
        }
        for c in 0..good.data_chunks.len() {
            for i in 0..good.data_chunks[c].len() {
                let mut b = good.clone();
                b.data_chunks[c][i] ^= flip;
                assert!(open(&b).unwrap_err().is_corruption(), "data {c} byte {i}");
            }
        }
    }
    for n in 0..good.header.len() {
        let mut b = good.clone();
        b.header.truncate(n);
        assert!(open(&b).unwrap_err().is_corruption(), "header cut at {n}");
    }
    let mut b = good.clone();
    b.meta_chunks.pop();
    assert!(open(&b).unwrap_err().is_corruption());
    let mut b = good.clone();
    b.data_chunks[0].truncate(3);
    assert!(open(&b).unwrap_err().is_corruption());
}

/// Re-checksums a row after its chunks were changed, so only the structural checks stand
/// between damaged metadata and a reader.
fn rechecksum(b: &mut BuiltRow) {
    let mut h = RowHeader::decode(&b.header).unwrap();
    h.meta_chunks = b
        .meta_chunks
        .iter()
        .map(|c| ChunkInfo::of(c).unwrap())
        .collect();
    h.data_chunks = b
        .data_chunks
        .iter()
        .map(|c| ChunkInfo::of(c).unwrap())
        .collect();
    b.header = h.encode().unwrap();
}

#[test]
fn damaged_metadata_with_valid_checksums_is_caught_by_the_entry_checks() {
    let good = built_small(MIN_CHUNK_BYTES);
    for c in 0..good.meta_chunks.len() {
        for i in 0..good.meta_chunks[c].len() {
            for flip in [0x01u8, 0x10, 0xff] {
                let mut b = good.clone();
                b.meta_chunks[c][i] ^= flip;
                rechecksum(&mut b);
                assert!(b.open().unwrap_err().is_corruption(), "meta {c} byte {i}");
            }
        }
    }
}

/// `next[j]` is the first position of the row below whose key is `>= key[j]`.
fn check_pointers(row: &RowReader<Vec<u8>>, below: &[Entry], start: usize) {
    for j in 0..row.len() {
        let k = row.key(j).unwrap();
        let want = start
            + below[start..]
                .partition_point(|(b, _)| key::compare(b, k) == std::cmp::Ordering::Less);
        assert_eq!(row.next_index(j).unwrap(), want, "entry {j}");
    }
}

proptest! {
    // The case count comes from PROPTEST_CASES (proptest's default configuration).
    #[test]
    fn pointers_match_a_search_of_the_row_below(
        specs in prop::collection::vec(row_spec(40), 2),
        chunk in MIN_CHUNK_BYTES..400,
        trim in 0usize..30,
    ) {
        let (rows, _) = model_rows(&specs);
        let lower = build_stack(&rows[..1], chunk).pop().unwrap();
        let start = trim.min(lower.len());
        let built = build_row(
            9,
            rows[1].entries.iter().cloned(),
            &[],
            Some(Below::new(lower.as_ref(), start)),
            chunk,
        )
        .unwrap();
        let upper = built.open().unwrap();
        prop_assert_eq!(upper.below(), Some(RowLink { row_id: lower.id(), entries: lower.len() as u64 }));
        check_pointers(&upper, &rows[0].entries, start);
        prop_assert_eq!(all_entries(&upper), rows[1].entries.clone());
        for m in upper.meta_chunks() {
            prop_assert!(m.len() <= chunk);
        }

        // Relinking the unlinked row gives the same pointers and the same bytes.
        let plain = build_row(9, rows[1].entries.iter().cloned(), &[], None, chunk).unwrap();
        let plain_reader = plain.clone().open().unwrap();
        let re = relink(&plain_reader, 0, Some(Below::new(lower.as_ref(), start))).unwrap();
        let built_again = build_row(
            9, rows[1].entries.iter().cloned(), &[], Some(Below::new(lower.as_ref(), start)), chunk,
        ).unwrap();
        prop_assert_eq!(&re.header, &built_again.header);
        prop_assert_eq!(&re.meta_chunks, &built_again.meta_chunks);
        let reopened = RowReader::open(&re.header, re.meta_chunks, plain.data_chunks).unwrap();
        check_pointers(&reopened, &rows[0].entries, start);
    }

    #[test]
    fn random_damage_after_rechecksum_never_panics(
        specs in prop::collection::vec(row_spec(20), 1),
        flips in prop::collection::vec((any::<bool>(), any::<usize>(), 1u8..=255), 1..4),
    ) {
        let (rows, _) = model_rows(&specs);
        let mut b = build_row(1, rows[0].entries.iter().cloned(), &rows[0].tombstones, None, MIN_CHUNK_BYTES).unwrap();
        for (meta, at, x) in flips {
            let chunks = if meta { &mut b.meta_chunks } else { &mut b.data_chunks };
            let total: usize = chunks.iter().map(Vec::len).sum();
            if total == 0 { continue; }
            let mut at = at % total;
            for c in chunks.iter_mut() {
                if at < c.len() { c[at] ^= x; break; }
                at -= c.len();
            }
        }
        rechecksum(&mut b);
        if let Ok(r) = b.open() {
            // Whatever survived the checks reads as a sorted row, without panics.
            let es = all_entries(&r);
            prop_assert!(es.windows(2).all(|w| key::compare(&w[0].0, &w[1].0).is_lt()));
            for (k, _) in &es {
                let p = r.lower_bound(k, 0, r.len()).unwrap();
                prop_assert_eq!(r.key(p).unwrap(), k.as_slice());
            }
        }
    }
}

/// Counts what a metered reader reports.
#[derive(Default)]
struct Counter(std::sync::atomic::AtomicU64);

impl ReadMeter for Counter {
    fn read(&self, bytes: u64) {
        self.0
            .fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Counter {
    fn take(&self) -> u64 {
        self.0.swap(0, std::sync::atomic::Ordering::Relaxed)
    }
}

/// A metered reader reports each chunk its open-time check reads, then each metadata
/// entry and each key and value once per position: an iterator's pass over the row reads
/// exactly its metadata, keys and values however often `key` and `value` are called.
#[test]
fn a_metered_reader_reports_the_bytes_it_reads() {
    let counter = Arc::new(Counter::default());
    let b = built_small(MIN_CHUNK_BYTES);
    let chunk_bytes: usize = b
        .meta_chunks
        .iter()
        .chain(&b.data_chunks)
        .map(Vec::len)
        .sum();
    let meter: Arc<dyn ReadMeter> = counter.clone();
    let reader = Arc::new(
        RowReader::open_metered(&b.header, b.meta_chunks, b.data_chunks, 0, Some(meter)).unwrap(),
    );
    // The checksums read every chunk; the entry walk reads metadata and keys again.
    assert!(counter.take() > chunk_bytes as u64);

    let entries = small_row().entries;
    let per_entry = |(k, v): &Entry| (META_ENTRY_BYTES + k.len() + v.len()) as u64;
    let mut it = RowIterator::new(reader.clone(), 0);
    it.seek_to_first().unwrap();
    while it.valid() {
        for _ in 0..3 {
            let _ = (it.key(), it.value());
        }
        it.next().unwrap();
    }
    assert_eq!(counter.take(), entries.iter().map(per_entry).sum::<u64>());

    assert_eq!(reader.entry(2).unwrap().1.len(), 300);
    assert_eq!(counter.take(), per_entry(&entries[2]));
    assert_eq!(reader.next_index(1).unwrap(), 0);
    assert_eq!(counter.take(), META_ENTRY_BYTES as u64);

    // A point lookup reads at least the entry it finds, and less than the whole row.
    let g = MatrixGroup::from_rows(vec![reader.clone()], MatrixParams::default()).unwrap();
    let found = g.find(b"cherry", MAX_SEQ).unwrap().entry.unwrap();
    assert_eq!(found.value, b"dark");
    let read = counter.take();
    let cherry = entries.iter().find(|(_, v)| v == b"dark").unwrap();
    assert!(read >= per_entry(cherry), "{read}");
    assert!(read < entries.iter().map(per_entry).sum::<u64>(), "{read}");

    // An unmetered reader of the same row reports nothing.
    let plain = built_small(MIN_CHUNK_BYTES).open().unwrap();
    let _ = plain.entry(2).unwrap();
    assert_eq!(counter.take(), 0);
}
