use super::*;
use crate::compaction::execute;
use crate::compaction::fixture::{assert_same, fixture, inputs, task};

#[test]
fn pipelined_output_equals_linear_output_byte_for_byte() {
    for (seed, bottommost) in [(1, false), (2, true), (3, true)] {
        let fx = fixture();
        let inputs = inputs(&fx, seed);
        let linear = execute(&task(inputs.clone(), 1000, bottommost), &fx.env()).unwrap();
        let piped = execute_pipelined(&task(inputs.clone(), 2000, bottommost), &fx.env()).unwrap();
        assert!(
            linear.outputs.len() > 3,
            "several outputs: {}",
            linear.outputs.len()
        );
        assert_same(&fx, &linear, &piped);
        // Subtasks too: each piece stops at its bound and starts at the next.
        let whole = task(inputs, 3000, bottommost);
        let cuts = [b"k01234".to_vec(), b"k04000".to_vec()];
        for (i, sub) in whole.split(&cuts).into_iter().enumerate() {
            let mut other = sub.clone();
            other.output.file_numbers = (5000 + 300 * i as u64..5300 + 300 * i as u64).collect();
            let linear = execute(&sub, &fx.env()).unwrap();
            let piped = execute_pipelined(&other, &fx.env()).unwrap();
            assert_same(&fx, &linear, &piped);
        }
    }
}

#[test]
fn a_damaged_input_fails_the_pipeline_without_hanging() {
    let fx = fixture();
    let inputs = inputs(&fx, 4);
    // Damage a data block in the middle of a level-2 file.
    let victim = &inputs[1].files[1];
    let path = fx.tables.path(0, victim.number);
    let mut bytes = std::fs::read(&path).unwrap();
    let mid = bytes.len() / 3;
    for b in bytes.iter_mut().skip(mid).take(64) {
        *b ^= 0xff;
    }
    std::fs::write(&path, bytes).unwrap();
    fx.tables.evict(victim.number);
    let linear = execute(&task(inputs.clone(), 1000, true), &fx.env());
    let piped = execute_pipelined(&task(inputs, 2000, true), &fx.env());
    assert!(
        matches!(linear, Err(Error::Corruption { .. })),
        "{linear:?}"
    );
    assert!(matches!(piped, Err(Error::Corruption { .. })), "{piped:?}");
}

#[test]
fn batches_hold_entries_back_to_back() {
    let mut b = Batch::default();
    b.push(b"a", b"1");
    b.push(b"", b"");
    b.push(b"ccc", b"333");
    assert_eq!(b.len(), 3);
    let all: Vec<(&[u8], &[u8])> = b.iter().collect();
    assert_eq!(
        all,
        vec![
            (&b"a"[..], &b"1"[..]),
            (&b""[..], &b""[..]),
            (&b"ccc"[..], &b"333"[..])
        ]
    );
    assert_eq!(b.get(3), (&[][..], &[][..]));
}

#[test]
fn subtasks_count_only_the_part_of_each_input_they_read() {
    let fx = fixture();
    let whole = task(inputs(&fx, 5), 1000, true);
    let all = execute(&whole, &fx.env()).unwrap().stats.input_bytes;
    let cuts = [b"k01500".to_vec(), b"k03000".to_vec(), b"k04500".to_vec()];
    let pieces = whole.split(&cuts);
    assert_eq!(pieces.len(), 4);
    let parts: u64 = pieces
        .iter()
        .map(|p| execute(p, &fx.env()).unwrap().stats.input_bytes)
        .sum();
    // Files that straddle a cut are shared out by the entries each piece read, not
    // counted whole by every piece.
    let diff = parts.abs_diff(all) as f64 / all as f64;
    assert!(diff < 0.02, "pieces {parts} against the whole {all}");
}
