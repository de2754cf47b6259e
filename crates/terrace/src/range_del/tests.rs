use super::*;

fn t(s: &str, e: &str, seq: SeqNo) -> RangeTombstone {
    RangeTombstone {
        start: s.as_bytes().to_vec(),
        end: e.as_bytes().to_vec(),
        seq,
    }
}

#[test]
fn overlapping_tombstones_fragment() {
    let f = FragmentedTombstones::new(&[t("a", "m", 5), t("f", "z", 9)], 100);
    assert_eq!(f.max_covering_seq(b"b"), 5);
    assert_eq!(f.max_covering_seq(b"g"), 9);
    assert_eq!(f.max_covering_seq(b"y"), 9);
    assert_eq!(f.max_covering_seq(b"z"), 0);
    assert!(f.covers(b"c", 4));
    assert!(!f.covers(b"c", 5));
    assert_eq!(f.fragments().len(), 3);
}

#[test]
fn snapshot_hides_newer_tombstones() {
    let f = FragmentedTombstones::new(&[t("a", "m", 5), t("f", "z", 9)], 6);
    assert_eq!(f.max_covering_seq(b"g"), 5);
    assert_eq!(f.max_covering_seq(b"n"), 0);
    let empty = FragmentedTombstones::new(&[t("b", "b", 1)], 10);
    assert!(empty.is_empty());
}

#[test]
fn clipping_keeps_every_sequence() {
    let f = FragmentedTombstones::new(&[t("a", "m", 5), t("f", "z", 9)], 100);
    let c = f.clipped(Some(b"g"), Some(b"p"));
    assert_eq!(c, vec![t("g", "m", 9), t("g", "m", 5), t("m", "p", 9)]);
}
