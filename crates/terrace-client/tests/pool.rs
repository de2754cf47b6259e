//! The pool against a real BOOM server thread.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use terrace::{Db, Options};
use terrace_boom::{BoomServer, BoomStore, ServerConfig, StoreConfig};
use terrace_client::Pool;

#[test]
fn threads_share_a_bounded_pool_and_read_each_other_s_writes() {
    let dir = tempfile::tempdir().unwrap();
    let store = BoomStore::open(
        &dir.path().join("boom"),
        StoreConfig {
            segment_bytes: 256 << 10,
            segments: 8,
        },
    )
    .unwrap();
    let opts = Options {
        external_log: Some(store.clone()),
        ..Options::default()
    };
    let db = Arc::new(Db::open(dir.path().join("db"), opts).unwrap());
    let socket = dir.path().join("s");
    let listener = BoomServer::bind_unix(&socket).unwrap();
    let server = BoomServer::new(store, db, ServerConfig::default());
    let s = server.clone();
    let accept = std::thread::spawn(move || s.serve_unix(listener));

    let pool = Arc::new(Pool::new(&format!("boom://{}", socket.display()), b"", 3).unwrap());
    let threads: Vec<_> = (0..6)
        .map(|t| {
            let pool = pool.clone();
            std::thread::spawn(move || {
                for i in 0..200 {
                    let key = format!("t{t}-{i}");
                    pool.get()
                        .unwrap()
                        .put(key.as_bytes(), key.as_bytes())
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert!(pool.open_connections() <= 3);
    let mut c = pool.get().unwrap();
    for t in 0..6 {
        let key = format!("t{t}-199");
        assert_eq!(c.get(key.as_bytes()).unwrap(), Some(key.into_bytes()));
    }
    drop(c);
    server.stop();
    let _ = std::os::unix::net::UnixStream::connect(&socket);
    accept.join().unwrap();
}
