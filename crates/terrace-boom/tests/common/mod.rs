//! A BOOM server on a Unix socket and a loopback TCP port, in this process, over a real
//! database: what the integration tests start.

#![allow(clippy::unwrap_used, dead_code)]

use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use terrace::{Db, Options};
use terrace_boom::{BoomServer, BoomStore, ServerConfig, StoreConfig};

pub struct Running {
    pub socket: PathBuf,
    /// The TCP listener's address (remote clients).
    pub tcp: String,
    tcp_thread: Option<std::thread::JoinHandle<()>>,
    pub server: Arc<BoomServer>,
    thread: Option<std::thread::JoinHandle<()>>,
    pub db: Arc<Db>,
    pub store: Arc<BoomStore>,
}

impl Running {
    /// A store with `config` in `dir/boom` and a default database in `dir/db`.
    pub fn start(dir: &Path, config: StoreConfig, password: &[u8]) -> Running {
        let store = BoomStore::open(&dir.join("boom"), config).unwrap();
        Running::serve(dir, store, Options::default(), password)
    }

    /// Serves `store` over a database in `dir/db` opened with `opts` (and the store as
    /// its external log).
    pub fn serve(dir: &Path, store: Arc<BoomStore>, opts: Options, password: &[u8]) -> Running {
        let opts = Options {
            external_log: Some(store.clone()),
            ..opts
        };
        let db = Arc::new(Db::open(dir.join("db"), opts).unwrap());
        let socket = dir.join("boom.sock");
        let listener = BoomServer::bind_unix(&socket).unwrap();
        let server = BoomServer::new(
            store.clone(),
            db.clone(),
            ServerConfig {
                password: password.to_vec(),
                ..ServerConfig::default()
            },
        );
        let s = server.clone();
        let thread = std::thread::spawn(move || s.serve_unix(listener));
        let tcp_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let tcp = tcp_listener.local_addr().unwrap().to_string();
        let s = server.clone();
        let tcp_thread = Some(std::thread::spawn(move || s.serve_tcp(tcp_listener)));
        Running {
            socket,
            tcp,
            tcp_thread,
            server,
            thread: Some(thread),
            db,
            store,
        }
    }

    pub fn stop(mut self) {
        self.server.stop();
        let _ = UnixStream::connect(&self.socket);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
        let _ = std::net::TcpStream::connect(&self.tcp);
        if let Some(t) = self.tcp_thread.take() {
            t.join().unwrap();
        }
        assert!(self
            .server
            .wait_for_connections(std::time::Duration::from_secs(10)));
    }
}
