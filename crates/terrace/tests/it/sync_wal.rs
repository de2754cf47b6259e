//! `Db::sync_wal`: writes acknowledged before it survive a power loss; without it they
//! do not (the negative control shows the test can see a loss).

use std::sync::Arc;

use terrace::storage::{FaultStorage, FsStorage};
use terrace::{Db, Options};

fn power_loss_after(sync: bool) -> Option<Vec<u8>> {
    let tmp = tempfile::tempdir().unwrap();
    let fault = FaultStorage::new(Arc::new(FsStorage::new()));
    let opts = || Options {
        storage: Arc::new(fault.clone()),
        ..Options::default()
    };
    let db = Db::open(tmp.path(), opts()).unwrap();
    db.put(b"k", b"v").unwrap();
    if sync {
        db.sync_wal().unwrap();
    }
    fault.set_fail_syncs(true);
    drop(db);
    fault.set_fail_syncs(false);
    fault.simulate_crash().unwrap();
    let db = Db::open(tmp.path(), opts()).unwrap();
    db.get(b"k").unwrap()
}

#[test]
fn sync_wal_makes_earlier_writes_durable() {
    assert_eq!(power_loss_after(true), Some(b"v".to_vec()));
}

#[test]
fn without_sync_wal_the_write_is_lost() {
    assert_eq!(power_loss_after(false), None);
}
