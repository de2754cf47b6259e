use super::*;
use crate::compaction::LinearExecutor;

fn executor(policy: SharePolicy) -> CollaborativeExecutor {
    CollaborativeExecutor::new(Arc::new(LinearExecutor), Arc::new(LinearExecutor), policy)
}

#[test]
fn the_dynamic_share_follows_measured_speeds() {
    let static_share = executor(SharePolicy::Static(0.3));
    assert_eq!(static_share.device_share(), 0.3);
    let e = executor(SharePolicy::Dynamic);
    // Nothing measured yet: half each.
    assert_eq!(e.device_share(), 0.5);
    *e.speeds.lock() = Speeds {
        host: 300.0,
        device: 100.0,
    };
    assert!((e.device_share() - 0.25).abs() < 1e-9);
    // A device that seems to do nothing still gets a sliver, so it is measured again.
    *e.speeds.lock() = Speeds {
        host: 300.0,
        device: 0.001,
    };
    assert_eq!(e.device_share(), 0.05);
}
