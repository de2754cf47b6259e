//! `Options::compaction_pri`: a database compacting level by level under the
//! minimum-overlapping-ratio policy keeps every key, checked against a model.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use terrace::{CompactionInfo, CompactionPri, EventListener, Options};

use crate::{open, scan_all, small_options};

/// The input level of every compaction, and of those that rewrote their files.
#[derive(Default)]
struct Levels {
    from: Mutex<Vec<usize>>,
    rewritten_from: Mutex<Vec<usize>>,
}

impl EventListener for Levels {
    fn on_compaction_completed(&self, info: &CompactionInfo) {
        if let Ok(mut v) = self.from.lock() {
            v.push(info.input_level);
        }
        if !info.trivial_move {
            if let Ok(mut v) = self.rewritten_from.lock() {
                v.push(info.input_level);
            }
        }
    }
}

fn check(db: &terrace::Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    for (k, v) in model {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "key {k:?}");
    }
    let all: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(scan_all(db), all);
}

#[test]
fn min_overlapping_ratio_compacts_through_the_levels_and_keeps_every_key() {
    let listener = Arc::new(Levels::default());
    let opts = Options {
        compaction_pri: CompactionPri::MinOverlappingRatio,
        // Level 1 128 KiB, level 2 512 KiB, level 3 2 MiB: about 2 MiB of live data
        // reaches level 3.
        max_bytes_for_level_multiplier: 4.0,
        listeners: vec![listener.clone()],
        ..small_options()
    };
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), opts.clone());
    let mut rng = StdRng::seed_from_u64(0x5eed_c0de);
    let mut model = BTreeMap::new();
    for i in 0..40_000u32 {
        let key = format!("key{:08}", rng.gen_range(0..30_000u32)).into_bytes();
        if rng.gen_ratio(1, 20) {
            db.delete(&key).unwrap();
            model.remove(&key);
        } else {
            let mut value = vec![0u8; rng.gen_range(40..120)];
            rng.fill(value.as_mut_slice());
            value.extend_from_slice(&i.to_be_bytes());
            db.put(&key, &value).unwrap();
            model.insert(key, value);
        }
    }
    db.wait_for_compactions().unwrap();
    // Levels 0 and 1 are always rewritten into the next; level 2 holds more than its
    // target once the load is done, so something leaves it too (rewritten or, when its
    // files overlap nothing below, moved: which depends on timing).
    let rewritten = listener.rewritten_from.lock().unwrap().clone();
    for level in [0, 1] {
        assert!(
            rewritten.contains(&level),
            "no compaction rewrote level {level}: {rewritten:?}"
        );
    }
    let from = listener.from.lock().unwrap().clone();
    assert!(from.contains(&2), "no compaction out of level 2: {from:?}");
    assert!(db.stats().levels[3].files > 0, "nothing reached level 3");
    check(&db, &model);
    // Missing keys stay missing.
    for i in 0..200u32 {
        let key = format!("key{:08}", 30_000 + i).into_bytes();
        assert_eq!(db.get(&key).unwrap(), None);
    }
    db.close().unwrap();
    let db = open(dir.path(), opts);
    check(&db, &model);
}
