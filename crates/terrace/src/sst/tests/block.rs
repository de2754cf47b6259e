use bytes::Bytes;

use super::*;
use crate::sst::block_builder::BlockBuilder;
use crate::sst::block_iter::{Block, BlockIter};
use crate::sst::bloom::{build_filter, build_whole_filter, key_hash, BloomFilter};
use crate::sst::builder::{separator, successor};
use crate::sst::compress::{block_trailer, compress_block, decode_block, TYPE_NONE};
use crate::sst::format::{BlockHandle, Footer, FORMAT_VERSION};

fn block_of(entries: &[(Vec<u8>, Vec<u8>)], interval: usize) -> Block {
    let mut b = BlockBuilder::new(interval);
    for (k, v) in entries {
        b.add(k, v);
    }
    Block::new(Bytes::copy_from_slice(b.finish())).unwrap()
}

fn collect_forward(it: &mut BlockIter) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    it.seek_to_first().unwrap();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next().unwrap();
    }
    out
}

/// The entries from last to first, returned in forward order.
fn collect_backward(it: &mut BlockIter) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut back = Vec::new();
    it.seek_to_last().unwrap();
    while it.valid() {
        back.push((it.key().to_vec(), it.value().to_vec()));
        it.prev().unwrap();
    }
    back.reverse();
    back
}

#[test]
fn block_round_trip_every_restart_interval() {
    let entries = sample_entries(100);
    for interval in [1, 2, 3, 16, 1000] {
        let block = block_of(&entries, interval);
        let mut it = BlockIter::new(block);
        assert_eq!(collect_forward(&mut it), entries);
        assert_eq!(collect_backward(&mut it), entries);
        // Seek to every key and between keys.
        for (i, (k, v)) in entries.iter().enumerate() {
            it.seek(k).unwrap();
            assert_eq!((it.key(), it.value()), (k.as_slice(), v.as_slice()));
            let between = crate::key::seek_key(crate::key::user_key(k), 0);
            it.seek(&between).unwrap();
            let expect = entries
                .iter()
                .skip(i)
                .find(|(e, _)| crate::key::compare(e, &between).is_ge());
            assert_eq!(it.valid(), expect.is_some());
            if let Some((ek, _)) = expect {
                assert_eq!(it.key(), ek.as_slice());
            }
        }
        it.seek(&internal_key(b"zzz", 1, ValueType::Value)).unwrap();
        assert!(!it.valid());
    }
}

#[test]
fn empty_block_has_no_entries() {
    let mut b = BlockBuilder::new(16);
    let block = Block::new(Bytes::copy_from_slice(b.finish())).unwrap();
    let mut it = BlockIter::new(block);
    it.seek_to_first().unwrap();
    assert!(!it.valid());
    it.seek_to_last().unwrap();
    assert!(!it.valid());
    it.seek(b"anything").unwrap();
    assert!(!it.valid());
}

#[test]
fn damaged_blocks_never_panic() {
    let entries = sample_entries(30);
    let mut b = BlockBuilder::new(3);
    for (k, v) in &entries {
        b.add(k, v);
    }
    let good = b.finish().to_vec();
    let probe = entries[10].0.clone();
    for i in 0..good.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut bad = good.clone();
            bad[i] ^= flip;
            let Ok(block) = Block::new(Bytes::from(bad)) else {
                continue;
            };
            let mut it = BlockIter::new(block);
            let mut steps = 0;
            if it.seek_to_first().is_ok() {
                while it.valid() && it.next().is_ok() {
                    steps += 1;
                    assert!(steps < 10_000);
                }
            }
            if it.seek_to_last().is_ok() {
                while it.valid() && it.prev().is_ok() {
                    steps += 1;
                    assert!(steps < 20_000);
                }
            }
            let _ = it.seek(&probe);
        }
    }
    for n in 0..good.len() {
        if let Ok(block) = Block::new(Bytes::copy_from_slice(&good[..n])) {
            let mut it = BlockIter::new(block);
            let _ = it.seek_to_first();
            let _ = it.seek_to_last();
            let _ = it.seek(&probe);
        }
    }
}

#[test]
fn footer_and_handles_round_trip() {
    let f = Footer {
        metaindex: BlockHandle {
            offset: 10,
            size: 20,
        },
        index: BlockHandle {
            offset: 35,
            size: 400,
        },
        format_version: FORMAT_VERSION,
    };
    let enc = f.encode();
    assert_eq!(Footer::decode(&enc).unwrap(), f);
    assert_eq!(&enc[40..], b"TerraSST");
    for i in 0..enc.len() {
        let mut bad = enc;
        bad[i] ^= 0x10;
        assert!(Footer::decode(&bad).is_err(), "flip at {i} not caught");
    }
    let mut v = Vec::new();
    f.index.encode_to(&mut v);
    assert_eq!(BlockHandle::decode(&v), Some(f.index));
    v.push(0);
    assert_eq!(BlockHandle::decode(&v), None);
}

#[test]
fn separators_stay_between_blocks() {
    let cases: [(&[u8], &[u8]); 6] = [
        (b"abc", b"abz"),
        (b"abc", b"abd"),
        (b"ab", b"abc"),
        (b"a\xff\xff", b"b"),
        (b"same", b"same"),
        (b"", b"x"),
    ];
    for (a, b) in cases {
        let last = internal_key(a, 9, ValueType::Value);
        let next = internal_key(b, if a == b { 3 } else { 9 }, ValueType::Value);
        let s = separator(&last, &next);
        assert!(crate::key::compare(&last, &s).is_le(), "{a:?} {b:?}");
        assert!(crate::key::compare(&s, &next).is_lt(), "{a:?} {b:?}");
    }
    let s = separator(
        &internal_key(b"abc", 1, ValueType::Value),
        &internal_key(b"abz", 1, ValueType::Value),
    );
    assert_eq!(crate::key::user_key(&s), b"abd");
    for a in [&b"abc"[..], b"\xff\xff", b"a\xffb", b""] {
        let last = internal_key(a, 9, ValueType::Value);
        assert!(crate::key::compare(&last, &successor(&last)).is_le());
    }
    assert_eq!(
        crate::key::user_key(&successor(&internal_key(b"abc", 1, ValueType::Value))),
        b"b"
    );
}

#[test]
fn bloom_false_positive_rate_is_about_one_percent() {
    let hashes: Vec<u64> = (0..10_000)
        .map(|i| key_hash(format!("present-{i}").as_bytes()))
        .collect();
    let f = BloomFilter::decode(Bytes::from(build_filter(&hashes, 10))).unwrap();
    for i in 0..10_000 {
        assert!(f.may_contain(format!("present-{i}").as_bytes()));
    }
    let fp = (0..10_000)
        .filter(|i| f.may_contain(format!("absent-{i}").as_bytes()))
        .count();
    let rate = fp as f64 / 10_000.0;
    assert!(rate < 0.03, "false-positive rate {rate}");
    // Tiny filters work too.
    let f = BloomFilter::decode(Bytes::from(build_filter(&[key_hash(b"x")], 10))).unwrap();
    assert!(f.may_contain(b"x"));
    assert!(BloomFilter::decode(Bytes::from_static(&[0, 0, 0])).is_err());
    assert!(BloomFilter::decode(Bytes::new()).is_err());
    // A blocked filter is whole 64-byte lines and a probe count.
    let mut partial = build_filter(&hashes, 10);
    partial.remove(0);
    assert!(BloomFilter::decode(Bytes::from(partial)).is_err());
    let mut bad_k = build_filter(&hashes, 10);
    if let Some(k) = bad_k.last_mut() {
        *k = 0;
    }
    assert!(BloomFilter::decode(Bytes::from(bad_k)).is_err());
}

#[test]
fn blocked_filter_probes_stay_in_one_line_and_whole_filters_still_answer() {
    let hashes: Vec<u64> = (0..5_000)
        .map(|i| key_hash(format!("present-{i}").as_bytes()))
        .collect();
    let block = build_filter(&hashes, 10);
    assert_eq!((block.len() - 1) % 64, 0);
    assert_eq!(block.last(), Some(&7));
    // Each key sets bits in one 64-byte line only: a filter of one key has one line set.
    let one = build_filter(&[key_hash(b"k")], 10);
    let lines_set = one[..one.len() - 1]
        .chunks(64)
        .filter(|l| l.iter().any(|b| *b != 0))
        .count();
    assert_eq!(lines_set, 1);
    // The older layout decodes with its own decoder and answers as it did.
    let whole = BloomFilter::decode_whole(Bytes::from(build_whole_filter(&hashes, 10))).unwrap();
    for i in 0..5_000 {
        assert!(whole.may_contain(format!("present-{i}").as_bytes()));
    }
    let fp = (0..5_000)
        .filter(|i| whole.may_contain(format!("absent-{i}").as_bytes()))
        .count();
    assert!(fp < 150, "{fp}");
    assert!(BloomFilter::decode_whole(Bytes::from_static(&[7])).is_err());
}

#[test]
fn compression_round_trips_and_falls_back() {
    use crate::options::Compression;
    let compressible = b"abcdefgh".repeat(100);
    let random: Vec<u8> = {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        (0..800).map(|_| rng.gen::<u8>()).collect()
    };
    for c in [Compression::None, Compression::Lz4, Compression::Zstd(3)] {
        for raw in [&compressible, &random] {
            let mut out = Vec::new();
            let kind = compress_block(raw, c, &mut out);
            let stored = if kind == TYPE_NONE { raw.clone() } else { out };
            if c != Compression::None && raw == &compressible {
                assert_ne!(kind, TYPE_NONE);
                assert!(stored.len() < raw.len() - raw.len() / 8);
            }
            if raw == &random {
                assert_eq!(
                    kind, TYPE_NONE,
                    "{c:?} should not keep an incompressible block"
                );
            }
            let mut buf = stored.clone();
            buf.extend_from_slice(&block_trailer(&stored, kind));
            assert_eq!(decode_block(buf.clone()).unwrap().as_ref(), raw.as_slice());
            // Damaged payloads with a recomputed (matching) checksum: an error or some
            // bytes, never a panic.
            for i in 0..stored.len() {
                let mut bad = stored.clone();
                bad[i] ^= 0x55;
                let mut b = bad.clone();
                b.extend_from_slice(&block_trailer(&bad, kind));
                let _ = decode_block(b);
            }
            // Unknown type byte.
            let mut b = stored.clone();
            b.extend_from_slice(&block_trailer(&stored, 9));
            assert!(decode_block(b).is_err());
        }
    }
}

proptest::proptest! {
    // An index search lands where a seek of the whole block does: keys shorter than,
    // equal to and longer than the 16-byte prefix, many sharing it, versions of a key;
    // and it hands out the handle stored with the entry it lands on.
    #[test]
    fn index_search_seeks_like_the_block(
        keys in proptest::collection::btree_set(
            (proptest::collection::vec(0u8..3, 0..22), 0u64..4), 1..120),
        targets in proptest::collection::vec(
            (proptest::collection::vec(0u8..3, 0..22), 0u64..5), 1..40),
        interval in 1usize..3,
    ) {
        let mut keys: Vec<Vec<u8>> = keys
            .iter()
            .map(|(u, s)| internal_key(u, *s, ValueType::Value))
            .collect();
        keys.sort_by(|a, b| crate::key::compare(a, b));
        let handle_of = |i: usize| BlockHandle { offset: i as u64 * 4096, size: i as u64 + 1 };
        let entries: Vec<(Vec<u8>, Vec<u8>)> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| {
                let mut h = Vec::new();
                handle_of(i).encode_to(&mut h);
                (k.clone(), h)
            })
            .collect();
        let block = block_of(&entries, interval);
        let search = crate::sst::index_search::IndexSearch::build(&block).unwrap();
        // Only a block whose entries are all restart points gets a search.
        proptest::prop_assert_eq!(search.is_some(), interval == 1 || entries.len() == 1);
        let Some(search) = search else { return Ok(()) };
        proptest::prop_assert_eq!(search.len(), keys.len());
        for (u, s) in &targets {
            let target = internal_key(u, *s, ValueType::Value);
            let expect = keys
                .iter()
                .position(|k| crate::key::compare(k, &target).is_ge())
                .unwrap_or(keys.len());
            let mut whole = BlockIter::new(block.clone());
            whole.seek(&target).unwrap();
            proptest::prop_assert_eq!(whole.valid(), expect < keys.len());
            let at = search.seek(&block, &target).unwrap();
            proptest::prop_assert_eq!(at, expect);
            proptest::prop_assert_eq!(search.handle(at), (at < keys.len()).then(|| handle_of(at)));
        }
    }
}

proptest::proptest! {
    // A block of keys on both sides of the cursor's inline key size (short keys, long
    // ones, long ones sharing a long prefix and then short ones again) reads back in
    // order both ways, and every seek lands on the model's first key >= the target.
    #[test]
    fn cursor_keys_cross_the_inline_size(
        keys in proptest::collection::btree_set(
            (proptest::collection::vec(0u8..3, 0..4),
             0usize..70,
             proptest::collection::vec(0u8..3, 0..4)), 1..80),
        targets in proptest::collection::vec(
            (proptest::collection::vec(0u8..3, 0..4), 0usize..70), 1..30),
        interval in 1usize..20,
    ) {
        // A user key: a short head, a run of `pad` bytes (what makes it long), a tail.
        let user = |head: &[u8], pad: usize, tail: &[u8]| {
            let mut u = head.to_vec();
            u.resize(head.len() + pad, b'x');
            u.extend_from_slice(tail);
            u
        };
        let mut entries: Vec<(Vec<u8>, Vec<u8>)> = keys
            .iter()
            .map(|(h, pad, t)| (user(h, *pad, t), b"v".to_vec()))
            .collect::<std::collections::BTreeMap<_, _>>()
            .into_iter()
            .enumerate()
            .map(|(i, (u, v))| (internal_key(&u, i as u64, ValueType::Value), v))
            .collect();
        entries.sort_by(|a, b| crate::key::compare(&a.0, &b.0));
        let mut it = BlockIter::new(block_of(&entries, interval));
        proptest::prop_assert_eq!(collect_forward(&mut it), entries.clone());
        proptest::prop_assert_eq!(collect_backward(&mut it), entries.clone());
        for (h, pad) in &targets {
            let target = crate::key::seek_key(&user(h, *pad, &[]), crate::key::MAX_SEQ);
            it.seek(&target).unwrap();
            let expect = entries.iter().find(|(e, _)| crate::key::compare(e, &target).is_ge());
            proptest::prop_assert_eq!(it.valid(), expect.is_some());
            if let Some((ek, _)) = expect {
                proptest::prop_assert_eq!(it.key(), ek.as_slice());
            }
        }
    }
}

#[test]
fn index_search_is_not_built_over_a_handle_that_does_not_decode() {
    let mut good = Vec::new();
    BlockHandle {
        offset: 0,
        size: 10,
    }
    .encode_to(&mut good);
    let entries = vec![
        (internal_key(b"a", 1, ValueType::Value), good),
        (internal_key(b"b", 1, ValueType::Value), b"\xff".to_vec()),
    ];
    let block = block_of(&entries, 1);
    assert!(crate::sst::index_search::IndexSearch::build(&block)
        .unwrap()
        .is_none());
}

#[test]
fn a_consumed_cursor_hands_over_the_value_it_stood_on() {
    let entries: Vec<(Vec<u8>, Vec<u8>)> = (0..40u64)
        .map(|i| {
            let user = format!("key{i:03}");
            let value = format!("value of {i}").repeat(i as usize % 4 + 1);
            (
                internal_key(user.as_bytes(), 1, ValueType::Value),
                value.into_bytes(),
            )
        })
        .collect();
    let block = block_of(&entries, 16);
    for (k, v) in &entries {
        let mut it = BlockIter::new(block.clone());
        it.seek(k).unwrap();
        assert_eq!(it.value_bytes().as_ref(), v.as_slice());
        assert_eq!(it.into_value_bytes().as_ref(), v.as_slice());
    }
    let mut past = BlockIter::new(block);
    past.seek(&internal_key(b"zzz", 1, ValueType::Value))
        .unwrap();
    assert!(past.into_value_bytes().is_empty());
}
