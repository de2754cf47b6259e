use super::*;

#[test]
fn placeholder_builds() {
    let l = SkipList::new();
    assert_eq!(l.first(), NIL);
}
