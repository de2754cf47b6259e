use rand::{Rng, SeedableRng};

use super::*;
use crate::iter::{InternalIterator, VecIterator};
use crate::key::{self, seek_key, InternalKey, MAX_SEQ};
use crate::options::Compression;

const COMPRESSIONS: [Compression; 3] = [Compression::None, Compression::Lz4, Compression::Zstd(3)];

/// The reference answer of `get`: the first entry >= target with the same user key.
fn model_get(entries: &[(Vec<u8>, Vec<u8>)], target: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let i = entries.partition_point(|(k, _)| key::compare(k, target).is_lt());
    entries
        .get(i)
        .filter(|(k, _)| key::user_key(k) == key::user_key(target))
        .cloned()
}

fn collect<I: InternalIterator>(it: &mut I) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    it.seek_to_first().unwrap();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next().unwrap();
    }
    out
}

#[test]
fn round_trip_with_every_compression() {
    let entries = sample_entries(2000);
    let mut sizes = Vec::new();
    for c in COMPRESSIONS {
        let (bytes, info) = build(&entries, &[], small_opts(c));
        sizes.push(bytes.len());
        assert_eq!(info.file_size, bytes.len() as u64);
        assert_eq!(info.file_checksum, crc32c::crc32c(&bytes));
        assert_eq!(info.num_entries, entries.len() as u64);
        let deletions = entries
            .iter()
            .filter(|(k, _)| key::try_parse(k).unwrap().kind == ValueType::Deletion)
            .count() as u64;
        assert_eq!(info.num_deletions, deletions);
        assert_eq!(info.smallest.encoded(), entries[0].0.as_slice());
        assert_eq!(info.largest.encoded(), entries.last().unwrap().0.as_slice());
        assert_eq!(info.smallest_seq, 1);
        assert_eq!(
            info.largest_seq,
            entries.iter().map(|(k, _)| key::seq_of(k)).max().unwrap()
        );

        let r = Arc::new(open_mem(bytes, None).unwrap());
        let p = r.properties();
        assert_eq!(p.num_entries, info.num_entries);
        assert_eq!(p.num_deletions, info.num_deletions);
        assert_eq!(p.smallest_key, info.smallest.0);
        assert_eq!(p.largest_key, info.largest.0);
        assert_eq!(p.format_version, 1);
        assert!(p.num_data_blocks > 10, "blocks: {}", p.num_data_blocks);
        assert!(p.filter_size > 0 && p.index_size > 0 && p.data_size > 0);
        r.verify().unwrap();

        // Forward and backward iteration.
        let mut it = r.iter(IoClass::Foreground, true);
        assert_eq!(collect(&mut it), entries);
        let mut back = Vec::new();
        it.seek_to_last().unwrap();
        while it.valid() {
            back.push((it.key().to_vec(), it.value().to_vec()));
            it.prev().unwrap();
        }
        back.reverse();
        assert_eq!(back, entries);

        // Point lookups at several snapshots, for present and absent keys.
        for (k, _) in entries.iter().step_by(3) {
            let uk = key::user_key(k);
            for snap in [MAX_SEQ, key::seq_of(k), key::seq_of(k).saturating_sub(1), 0] {
                let target = seek_key(uk, snap);
                let got = r.get(&target, IoClass::Foreground, true).unwrap();
                let got = got.map(|(seq, kind, v)| (internal_key(uk, seq, kind), v.to_vec()));
                assert_eq!(got, model_get(&entries, &target));
            }
            let mut absent = uk.to_vec();
            absent.push(b'!');
            assert_eq!(
                r.get(&seek_key(&absent, MAX_SEQ), IoClass::Foreground, true)
                    .unwrap(),
                None
            );
        }
        assert_eq!(
            r.get(&seek_key(b"", MAX_SEQ), IoClass::Foreground, true)
                .unwrap(),
            None
        );
        assert_eq!(
            r.get(&seek_key(b"zzz", MAX_SEQ), IoClass::Foreground, true)
                .unwrap(),
            None
        );
    }
    assert!(
        sizes[1] < sizes[0] && sizes[2] < sizes[0],
        "sizes {sizes:?}"
    );
}

#[test]
fn iterator_matches_reference_across_block_boundaries() {
    let entries = sample_entries(600);
    for c in COMPRESSIONS {
        for restart in [1, 4, 16] {
            let opts = SstOptions {
                block_size: 200,
                restart_interval: restart,
                bloom_bits_per_key: 10,
                compression: c,
            };
            let (bytes, _) = build(&entries, &[], opts);
            let r = Arc::new(open_mem(bytes, None).unwrap());
            let mut it = r.iter(IoClass::Foreground, false);
            let mut model = VecIterator::new(entries.clone());
            let mut rng = rand::rngs::StdRng::seed_from_u64(restart as u64);
            for step in 0..3000 {
                let op = rng.gen_range(0..8);
                let i = rng.gen_range(0..entries.len());
                let k = &entries[i].0;
                // Targets: exact keys, between versions, between user keys, out of range.
                let target = match rng.gen_range(0..5) {
                    0 => k.clone(),
                    1 => seek_key(key::user_key(k), rng.gen_range(0..2000)),
                    2 => {
                        let mut u = key::user_key(k).to_vec();
                        u.push(b'5');
                        seek_key(&u, MAX_SEQ)
                    }
                    3 => seek_key(b"a", 5),
                    _ => seek_key(b"zzzz", 5),
                };
                match op {
                    0 => {
                        it.seek(&target).unwrap();
                        model.seek(&target).unwrap();
                    }
                    1 => {
                        it.seek_for_prev(&target).unwrap();
                        model.seek_for_prev(&target).unwrap();
                    }
                    2 => {
                        it.seek_to_first().unwrap();
                        model.seek_to_first().unwrap();
                    }
                    3 => {
                        it.seek_to_last().unwrap();
                        model.seek_to_last().unwrap();
                    }
                    4 | 5 if model.valid() => {
                        it.next().unwrap();
                        model.next().unwrap();
                    }
                    _ if model.valid() => {
                        it.prev().unwrap();
                        model.prev().unwrap();
                    }
                    _ => {}
                }
                assert_eq!(it.valid(), model.valid(), "step {step} op {op}");
                assert_eq!(it.key(), model.key(), "step {step} op {op}");
                assert_eq!(it.value(), model.value(), "step {step} op {op}");
                if it.valid() {
                    assert_eq!(it.value_bytes().as_ref(), model.value());
                }
            }
        }
    }
}

#[test]
fn range_tombstones_widen_bounds_and_round_trip() {
    let entries: Vec<(Vec<u8>, Vec<u8>)> = [(b"b", 3u64), (b"c", 4), (b"d", 10)]
        .iter()
        .map(|(k, s)| (internal_key(*k, *s, ValueType::Value), b"v".to_vec()))
        .collect();
    let tombstones = vec![
        RangeTombstone {
            start: b"x".to_vec(),
            end: b"z".to_vec(),
            seq: 20,
        },
        RangeTombstone {
            start: b"a".to_vec(),
            end: b"c".to_vec(),
            seq: 2,
        },
        RangeTombstone {
            start: b"a".to_vec(),
            end: b"b".to_vec(),
            seq: 7,
        },
        RangeTombstone {
            start: b"q".to_vec(),
            end: b"q".to_vec(),
            seq: 99,
        }, // empty: dropped
    ];
    let (bytes, info) = build(&entries, &tombstones, SstOptions::default());
    assert_eq!(info.num_range_deletions, 3);
    assert_eq!(
        info.smallest,
        InternalKey::new(b"a", 7, ValueType::RangeDeletion)
    );
    assert_eq!(
        info.largest,
        InternalKey::new(b"z", MAX_SEQ, ValueType::RangeDeletion)
    );
    assert_eq!((info.smallest_seq, info.largest_seq), (2, 20));
    let r = open_mem(bytes, None).unwrap();
    let got: Vec<(&[u8], &[u8], u64)> = r
        .range_tombstones()
        .iter()
        .map(|t| (t.start.as_slice(), t.end.as_slice(), t.seq))
        .collect();
    assert_eq!(
        got,
        vec![(&b"a"[..], &b"b"[..], 7), (b"a", b"c", 2), (b"x", b"z", 20)]
    );
    assert_eq!(r.properties().num_range_deletions, 3);
    assert_eq!(r.properties().smallest_key, info.smallest.0);
    r.verify().unwrap();

    // Point keys outside the tombstones' span keep the point bounds.
    let t = RangeTombstone {
        start: b"bb".to_vec(),
        end: b"cc".to_vec(),
        seq: 50,
    };
    let (_, info) = build(&entries, &[t], SstOptions::default());
    assert_eq!(info.smallest.encoded(), entries[0].0.as_slice());
    assert_eq!(info.largest.encoded(), entries[2].0.as_slice());
    assert_eq!((info.smallest_seq, info.largest_seq), (3, 50));
}

#[test]
fn tombstone_only_table() {
    let t = RangeTombstone {
        start: b"k".to_vec(),
        end: b"m".to_vec(),
        seq: 4,
    };
    let (bytes, info) = build(&[], std::slice::from_ref(&t), small_opts(Compression::Lz4));
    assert_eq!(info.num_entries, 0);
    assert_eq!(
        info.smallest,
        InternalKey::new(b"k", 4, ValueType::RangeDeletion)
    );
    let r = Arc::new(open_mem(bytes, None).unwrap());
    assert_eq!(r.range_tombstones(), &[t]);
    assert_eq!(
        r.get(&seek_key(b"k", MAX_SEQ), IoClass::Foreground, true)
            .unwrap(),
        None
    );
    let mut it = r.iter(IoClass::Foreground, true);
    assert!(collect(&mut it).is_empty());
    it.seek_to_last().unwrap();
    assert!(!it.valid());
    it.seek_for_prev(&seek_key(b"z", 1)).unwrap();
    assert!(!it.valid());
    r.verify().unwrap();
}

#[test]
fn builder_rejects_bad_input() {
    let (b, _) = new_builder(SstOptions::default());
    assert!(matches!(b.finish(), Err(crate::Error::InvalidArgument(_))));

    let (mut b, _) = new_builder(SstOptions::default());
    b.add(&internal_key(b"b", 5, ValueType::Value), b"1")
        .unwrap();
    let dup = b.add(&internal_key(b"b", 5, ValueType::Value), b"1");
    assert!(matches!(dup, Err(crate::Error::InvalidArgument(_))));
    let older_first = b.add(&internal_key(b"b", 6, ValueType::Value), b"1");
    assert!(matches!(older_first, Err(crate::Error::InvalidArgument(_))));
    let before = b.add(&internal_key(b"a", 1, ValueType::Value), b"1");
    assert!(matches!(before, Err(crate::Error::InvalidArgument(_))));
    let rd = b.add(&internal_key(b"c", 1, ValueType::RangeDeletion), b"d");
    assert!(matches!(rd, Err(crate::Error::InvalidArgument(_))));
    assert!(matches!(
        b.add(b"short", b""),
        Err(crate::Error::InvalidArgument(_))
    ));
    b.add(&internal_key(b"b", 4, ValueType::Deletion), b"")
        .unwrap();
    assert_eq!(b.num_entries(), 2);
    assert!(b.estimated_size() > 0);
    let info = b.finish().unwrap();
    assert_eq!((info.num_entries, info.num_deletions), (2, 1));
}

#[test]
fn bloom_filter_of_a_table() {
    let entries = sample_entries(3000);
    let (bytes, _) = build(&entries, &[], small_opts(Compression::None));
    let r = open_mem(bytes, None).unwrap();
    for (k, _) in &entries {
        assert!(r.may_contain(key::user_key(k)));
    }
    let fp = (0..3000)
        .filter(|i| r.may_contain(format!("key{:06}", i * 2 + 1).as_bytes()))
        .count();
    assert!(fp < 90, "{fp} false positives in 3000");

    let opts = SstOptions {
        bloom_bits_per_key: 0,
        ..small_opts(Compression::None)
    };
    let (bytes, _) = build(&entries, &[], opts);
    let r = open_mem(bytes, None).unwrap();
    assert_eq!(r.properties().filter_size, 0);
    assert!(r.may_contain(b"anything"));
}

#[test]
fn a_table_with_the_older_whole_filter_still_filters() {
    let entries = sample_entries(3000);
    let (mut b, buf) = new_builder(small_opts(Compression::None));
    b.whole_filter = true;
    for (k, v) in &entries {
        b.add(k, v).unwrap();
    }
    b.finish().unwrap();
    let bytes = buf.bytes();
    let needle = crate::sst::format::META_FILTER_WHOLE;
    assert!(
        bytes.windows(needle.len()).any(|w| w == needle),
        "named as before"
    );
    let r = open_mem(bytes, None).unwrap();
    for (k, v) in &entries {
        assert!(r.may_contain(key::user_key(k)));
        let at = seek_key(key::user_key(k), key::seq_of(k));
        let got = r.get(&at, IoClass::Foreground, true);
        let got = got.unwrap().map(|(_, _, v)| v.to_vec());
        assert_eq!(got.as_deref(), Some(v.as_slice()));
    }
    let fp = (0..3000)
        .filter(|i| r.may_contain(format!("key{:06}", i * 2 + 1).as_bytes()))
        .count();
    assert!(fp < 90, "{fp} false positives in 3000");
}

#[test]
fn options_carry_over() {
    let o = crate::Options {
        block_size: 1234,
        block_restart_interval: 7,
        bloom_bits_per_key: 3,
        compression: Compression::Zstd(5),
        ..crate::Options::default()
    };
    let s = o.sst_options();
    assert_eq!(
        (
            s.block_size,
            s.restart_interval,
            s.bloom_bits_per_key,
            s.compression
        ),
        (1234, 7, 3, Compression::Zstd(5))
    );
}

#[test]
fn large_values_get_their_own_blocks() {
    let entries: Vec<(Vec<u8>, Vec<u8>)> = (0..20u64)
        .map(|i| {
            (
                internal_key(format!("k{i:03}").as_bytes(), 1, ValueType::Value),
                vec![i as u8; 10_000],
            )
        })
        .collect();
    let (bytes, _) = build(&entries, &[], small_opts(Compression::Lz4));
    let r = Arc::new(open_mem(bytes, None).unwrap());
    assert_eq!(r.properties().num_data_blocks, 20);
    assert_eq!(collect(&mut r.iter(IoClass::Foreground, false)), entries);
    let off = r.approximate_offset_of(&entries[10].0).unwrap();
    assert!(off > 0 && off < r.file_size());
}

/// A table's bytes as written before the integer coding moved to `crate::coding`
/// (length and CRC32C of the whole file): the move must not change one byte, and the
/// file must still open and read back.
#[test]
fn table_bytes_match_the_format_before_the_shared_integer_coding() {
    let entries = sample_entries(300);
    let tombstones = [RangeTombstone {
        start: b"key000100".to_vec(),
        end: b"key000200".to_vec(),
        seq: 1 << 33,
    }];
    // With the filter layout of that time (the blocked filter came later).
    let (mut b, buf) = new_builder(small_opts(Compression::None));
    b.whole_filter = true;
    for (k, v) in &entries {
        b.add(k, v).unwrap();
    }
    for t in &tombstones {
        b.add_range_tombstone(t);
    }
    b.finish().unwrap();
    let bytes = buf.bytes();
    assert_eq!((bytes.len(), crc32c::crc32c(&bytes)), (21_896, 0x1bdd_7c5c));
    let r = Arc::new(open_mem(bytes, None).unwrap());
    let mut it = r.iter(IoClass::Foreground, false);
    assert_eq!(collect(&mut it), entries);
}
