use super::*;

#[test]
fn no_whole_second_has_no_figure() {
    assert_eq!(slow_seconds(&[]), None);
}

#[test]
fn seconds_below_a_fifth_of_the_median_are_slow() {
    // Median of ten seconds: (1000 + 1000) / 2; a fifth of it is 200.
    let s = slow_seconds(&[1000, 1100, 0, 1010, 199, 200, 1000, 1200, 50, 1000]).unwrap();
    assert_eq!(s.seconds, 10);
    assert_eq!(s.median_ops_per_sec, 1000.0);
    // 0, 199 and 50 are below 200; 200 itself is not.
    assert_eq!(s.slow_seconds, 3);
    assert_eq!(s.share, 0.3);
}

#[test]
fn the_median_of_an_odd_count_is_the_middle_second() {
    let s = slow_seconds(&[500, 10, 100]).unwrap();
    assert_eq!(s.median_ops_per_sec, 100.0);
    assert_eq!((s.slow_seconds, s.share), (1, 1.0 / 3.0));
    let steady = slow_seconds(&[7]).unwrap();
    assert_eq!(
        (steady.seconds, steady.slow_seconds, steady.share),
        (1, 0, 0.0)
    );
}

#[test]
fn a_median_of_zero_makes_no_second_slow() {
    let s = slow_seconds(&[0, 0, 0, 900]).unwrap();
    assert_eq!(s.median_ops_per_sec, 0.0);
    assert_eq!(s.slow_seconds, 0);
}
