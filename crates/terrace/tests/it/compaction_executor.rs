//! The compaction executor seam: a second executor, untrusted, that fails or lies in
//! every way a result can be checked; the database refuses each wrong result, runs the
//! task on the host instead and loses nothing.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use terrace::compaction::{
    self, CompactionExecutor, CompactionResult, CompactionTask, ExecutorEnv, Trust,
};
use terrace::{Db, Error, Options};

use crate::small_options;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Lie {
    /// Honest: runs the task and returns its result.
    None,
    /// Fails every task.
    Fail,
    /// Claims a file number the task did not reserve.
    ForeignNumber,
    /// Claims another checksum than the file's.
    Checksum,
    /// Claims another size than the file's.
    Size,
    /// Answers with another task's id.
    TaskId,
}

struct Worker {
    lie: Lie,
    tasks: AtomicU64,
}

impl CompactionExecutor for Worker {
    fn name(&self) -> &str {
        "test-worker"
    }

    fn trust(&self) -> Trust {
        Trust::Remote
    }

    fn execute(
        &self,
        task: &CompactionTask,
        env: &ExecutorEnv<'_>,
    ) -> terrace::Result<CompactionResult> {
        self.tasks.fetch_add(1, Ordering::SeqCst);
        if self.lie == Lie::Fail {
            return Err(Error::Unsupported("the worker is gone".into()));
        }
        let mut r = compaction::execute(task, env)?;
        if let Some(f) = r.outputs.first_mut() {
            match self.lie {
                Lie::ForeignNumber => f.number += 1_000_000,
                Lie::Checksum => f.file_checksum ^= 0x5a5a,
                Lie::Size => f.size -= 1,
                Lie::TaskId => r.task_id += 1,
                Lie::None | Lie::Fail => {}
            }
        }
        Ok(r)
    }
}

fn run(lie: Lie) -> (u64, u64) {
    let dir = tempfile::tempdir().unwrap();
    let worker = Arc::new(Worker {
        lie,
        tasks: AtomicU64::new(0),
    });
    let opts = Options {
        compaction_executor: worker.clone(),
        ..small_options()
    };
    let value = |i: u32, round: u32| format!("v{round}-{i}").repeat(8);
    {
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        for round in 0..3u32 {
            for i in (0..3000u32).step_by(1 + round as usize) {
                db.put(format!("k{i:05}").as_bytes(), value(i, round).as_bytes())
                    .unwrap();
            }
        }
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        let fallbacks = db.stats().compaction_fallbacks;
        assert!(db.background_error().is_none(), "{lie:?}");
        drop(db);
        // Everything is there after a reopen, with the newest value.
        let db = Db::open(dir.path(), opts).unwrap();
        for i in 0..3000u32 {
            let round = (0..3u32).rev().find(|r| i % (1 + r) == 0).unwrap();
            let got = db.get(format!("k{i:05}").as_bytes()).unwrap();
            assert_eq!(
                got.as_deref(),
                Some(value(i, round).as_bytes()),
                "{lie:?} k{i}"
            );
        }
        (worker.tasks.load(Ordering::SeqCst), fallbacks)
    }
}

/// Writes three rounds of `keys` keys (each round overwriting the last), compacts
/// everything and returns the statistics; then checks, after a reopen, that every key
/// holds its last value.
fn load_compact_check(dir: &std::path::Path, opts: &Options, keys: u32) -> terrace::DbStats {
    let value = |i: u32, round: u32| format!("{round}/{i}").repeat(10);
    let db = Db::open(dir, opts.clone()).unwrap();
    for round in 0..3u32 {
        for i in 0..keys {
            db.put(format!("k{i:05}").as_bytes(), value(i, round).as_bytes())
                .unwrap();
        }
    }
    db.compact_range(None, None).unwrap();
    assert!(db.background_error().is_none());
    let stats = db.stats();
    assert!(stats.compactions > 0);
    drop(db);
    let db = Db::open(dir, opts.clone()).unwrap();
    for i in 0..keys {
        let got = db.get(format!("k{i:05}").as_bytes()).unwrap();
        assert_eq!(got.as_deref(), Some(value(i, 2).as_bytes()), "k{i:05}");
    }
    stats
}

#[test]
fn an_honest_untrusted_worker_runs_every_compaction() {
    let (tasks, fallbacks) = run(Lie::None);
    assert!(tasks > 0);
    assert_eq!(fallbacks, 0);
}

#[test]
fn wrong_results_are_refused_and_the_task_runs_on_the_host() {
    for lie in [
        Lie::Fail,
        Lie::ForeignNumber,
        Lie::Checksum,
        Lie::Size,
        Lie::TaskId,
    ] {
        let (tasks, fallbacks) = run(lie);
        assert!(tasks > 0, "{lie:?}");
        assert_eq!(fallbacks, tasks, "{lie:?}: every task falls back");
    }
}

#[test]
fn a_database_compacts_with_the_pipelined_executor() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        compaction_executor: Arc::new(compaction::PipelinedExecutor),
        max_subcompactions: 3,
        ..small_options()
    };
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    for round in 0..4u32 {
        for i in 0..4000u32 {
            if (i + round) % 5 == 0 {
                db.delete(format!("k{i:05}").as_bytes()).unwrap();
            } else {
                db.put(
                    format!("k{i:05}").as_bytes(),
                    format!("{round}-{i}").repeat(6).as_bytes(),
                )
                .unwrap();
            }
        }
    }
    db.compact_range(None, None).unwrap();
    assert!(db.stats().compactions > 0);
    drop(db);
    let db = Db::open(dir.path(), opts).unwrap();
    for i in 0..4000u32 {
        let got = db.get(format!("k{i:05}").as_bytes()).unwrap();
        let want = ((i + 3) % 5 != 0).then(|| format!("3-{i}").repeat(6).into_bytes());
        assert_eq!(got, want, "k{i:05}");
    }
}

mod worker {
    use std::net::TcpListener;
    use std::os::unix::net::UnixListener;
    use std::sync::Arc;
    use std::time::Duration;

    use terrace::offload::{
        CompactionWorkers, RemoteExecutor, Share, Worker, WorkerAddr, WorkerConfig,
    };
    use terrace::{Db, Options};

    use crate::small_options;

    /// A worker over `dir`, set up by `setup`, serving TCP on a free loopback port on its
    /// own thread; returns the port's address.
    fn serve_tcp_worker(
        dir: &std::path::Path,
        pipelined: bool,
        setup: impl FnOnce(&Worker),
    ) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let w = worker(dir, pipelined);
        setup(&w);
        std::thread::spawn(move || w.serve_tcp(&listener));
        addr
    }

    fn worker(dir: &std::path::Path, pipelined: bool) -> Arc<Worker> {
        Arc::new(Worker::new(WorkerConfig {
            dir: dir.to_path_buf(),
            volumes: vec![],
            secret: "s3cret".into(),
            threads: 2,
            rate_limit: 0,
            mode: if pipelined {
                terrace::compaction::ExecutionMode::Pipelined
            } else {
                terrace::compaction::ExecutionMode::Linear
            },
        }))
    }

    /// Loads and compacts a database whose compactions go to `executor`; checks every
    /// value after a reopen and returns the fallbacks counted.
    fn load(dir: &std::path::Path, executor: Arc<RemoteExecutor>) -> u64 {
        load_stats(dir, executor).compaction_fallbacks
    }

    fn load_stats(dir: &std::path::Path, executor: Arc<RemoteExecutor>) -> terrace::DbStats {
        let opts = Options {
            compaction_executor: executor,
            max_subcompactions: 2,
            ..small_options()
        };
        crate::compaction_executor::load_compact_check(dir, &opts, 3000)
    }

    #[test]
    fn a_worker_over_tcp_runs_the_compactions() {
        let dir = tempfile::tempdir().unwrap();
        let addr = serve_tcp_worker(dir.path(), true, |_| {});
        let remote = Arc::new(RemoteExecutor::new(
            WorkerAddr::parse(&addr),
            "s3cret",
            Duration::from_secs(30),
        ));
        let stats = load_stats(dir.path(), remote);
        assert_eq!(stats.compaction_fallbacks, 0);
        // Every run is the worker's, pipelined, with its bytes and CPU time.
        let [unit] = stats.compaction_units.as_slice() else {
            panic!("one unit expected: {:?}", stats.compaction_units);
        };
        assert_eq!(unit.unit, format!("remote {addr}"));
        assert!(unit.runs > 0 && unit.pipelined_runs == unit.runs);
        assert!(unit.input_bytes > 0 && unit.output_bytes > 0);
        assert!(unit.cpu_micros > 0 && unit.busy_micros > 0);
        assert!(unit.mb_per_sec() > 0.0 && unit.mb_per_cpu_second() > 0.0);
    }

    /// A database that names its workers in `Options::compaction_workers` (every task to
    /// the workers, in check mode) rather than building the executor itself.
    #[test]
    fn workers_named_in_the_options_run_the_compactions_checked() {
        let dir = tempfile::tempdir().unwrap();
        let addr = serve_tcp_worker(dir.path(), false, |_| {});
        let opts = Options {
            compaction_workers: Some(CompactionWorkers {
                workers: vec![addr.clone()],
                secret: "s3cret".into(),
                share: Share::All,
                check: true,
                ..CompactionWorkers::default()
            }),
            ..small_options()
        };
        let stats = crate::compaction_executor::load_compact_check(dir.path(), &opts, 2000);
        assert_eq!(stats.compaction_fallbacks, 0);
        let remote = stats
            .compaction_units
            .iter()
            .find(|u| u.unit == format!("remote {addr}"))
            .expect("the worker ran tasks");
        assert!(remote.runs > 0);
        // The check's reference runs leave nothing behind in the scratch directory.
        let scratch = dir.path().join("compaction-check").join("0");
        let left = std::fs::read_dir(&scratch).map(|d| d.count()).unwrap_or(0);
        assert_eq!(left, 0);
        // A worker list without a worker is refused at open.
        let bad = Options {
            compaction_workers: Some(CompactionWorkers::default()),
            ..small_options()
        };
        assert!(Db::open(tempfile::tempdir().unwrap().path(), bad).is_err());
    }

    /// A proxy between database and worker that passes the worker's first `progress`
    /// progress frames on and then cuts both connections: to the database the worker
    /// dies mid-task; the worker itself runs on, writing files no one will install.
    fn cutting_proxy(worker_addr: String, progress: usize) -> String {
        use std::io::Write as _;
        use terrace::offload::{Frame, FrameType};
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        std::thread::spawn(move || {
            while let Ok((client, _)) = listener.accept() {
                let upstream = std::net::TcpStream::connect(&worker_addr).unwrap();
                let (mut c_read, mut u_write) =
                    (client.try_clone().unwrap(), upstream.try_clone().unwrap());
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut c_read, &mut u_write);
                });
                let (mut u_read, mut c_write) = (upstream, client);
                std::thread::spawn(move || {
                    let mut seen = 0;
                    while let Ok(frame) = Frame::read_from(&mut u_read, "worker") {
                        if frame.kind == FrameType::Progress {
                            if seen == progress {
                                break;
                            }
                            seen += 1;
                        }
                        if frame.write_to(&mut c_write, "client").is_err() {
                            break;
                        }
                        let _ = c_write.flush();
                    }
                    let _ = c_write.shutdown(std::net::Shutdown::Both);
                    let _ = u_read.shutdown(std::net::Shutdown::Both);
                });
            }
        });
        addr
    }

    #[test]
    fn the_host_takes_over_from_the_last_output_a_lost_worker_finished() {
        let dir = tempfile::tempdir().unwrap();
        let worker_addr = serve_tcp_worker(dir.path(), false, |_| {});
        let addr = cutting_proxy(worker_addr, 2);
        let opts = Options {
            compaction_workers: Some(CompactionWorkers {
                workers: vec![addr.clone()],
                secret: "s3cret".into(),
                share: Share::All,
                ..CompactionWorkers::default()
            }),
            ..small_options()
        };
        let stats = crate::compaction_executor::load_compact_check(dir.path(), &opts, 6000);
        let host = stats
            .compaction_units
            .iter()
            .find(|u| u.unit == "host")
            .unwrap();
        // Every task the worker had finished two outputs of before the cut kept them.
        assert!(host.fallbacks > 0, "{:?}", stats.compaction_units);
        assert!(host.kept_outputs >= 2, "{:?}", stats.compaction_units);
    }

    /// A filter the database registered runs on a worker that registered it too; a worker
    /// without it refuses the tasks and the host runs them.
    #[test]
    fn compaction_filters_run_on_workers_that_have_them() {
        use terrace::compaction::{
            CompactionFilter, CompactionFilterFactory, FilterDecision, FilterSpec,
        };
        struct DropOdd;
        impl CompactionFilter for DropOdd {
            fn name(&self) -> &str {
                "drop-odd"
            }
            fn filter(&self, _level: usize, key: &[u8], _value: &[u8]) -> FilterDecision {
                if key.last().is_some_and(|b| b % 2 == 1) {
                    FilterDecision::Remove
                } else {
                    FilterDecision::Keep
                }
            }
        }
        struct DropOddFactory;
        impl CompactionFilterFactory for DropOddFactory {
            fn name(&self) -> &str {
                "drop-odd"
            }
            fn create(&self, _params: &str) -> terrace::Result<Box<dyn CompactionFilter>> {
                Ok(Box::new(DropOdd))
            }
        }
        for registered in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let addr = serve_tcp_worker(dir.path(), false, |w| {
                if registered {
                    w.register_filter(Arc::new(DropOddFactory));
                }
            });
            let opts = Options {
                compaction_filter: Some(FilterSpec {
                    name: "drop-odd".into(),
                    params: String::new(),
                }),
                compaction_filter_factories: vec![Arc::new(DropOddFactory)],
                compaction_workers: Some(CompactionWorkers {
                    workers: vec![addr.clone()],
                    secret: "s3cret".into(),
                    share: Share::All,
                    ..CompactionWorkers::default()
                }),
                ..small_options()
            };
            let db = Db::open(dir.path(), opts).unwrap();
            for round in 0..3u32 {
                for i in 0..2000u32 {
                    db.put(format!("k{i:05}").as_bytes(), format!("{round}").as_bytes())
                        .unwrap();
                }
            }
            db.compact_range(None, None).unwrap();
            let stats = db.stats();
            let remote = stats
                .compaction_units
                .iter()
                .find(|u| u.unit == format!("remote {addr}"))
                .unwrap();
            if registered {
                assert!(remote.runs > 0 && remote.failures == 0, "{remote:?}");
            } else {
                assert!(remote.runs == 0 && remote.failures > 0, "{remote:?}");
            }
            // Either way the filter ran: odd keys are gone, even ones hold the last value.
            for i in 0..2000u32 {
                let got = db.get(format!("k{i:05}").as_bytes()).unwrap();
                let want = (i % 2 == 0).then(|| b"2".to_vec());
                assert_eq!(got, want, "k{i:05} registered={registered}");
            }
        }
    }

    /// The worker's side of the protocol against frames a client should not send: a
    /// replayed task, a frame of the wrong type, a damaged and a truncated frame.
    #[test]
    fn the_worker_refuses_replayed_forged_damaged_and_truncated_frames() {
        use std::io::Write as _;
        use terrace::compaction::CompactionTask;
        use terrace::offload::{Frame, FrameType};
        let dir = tempfile::tempdir().unwrap();
        let addr = serve_tcp_worker(dir.path(), false, |_| {});
        let connect = || {
            let mut c = std::net::TcpStream::connect(&addr).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            Frame::new(FrameType::Hello, b"s3cret".to_vec())
                .write_to(&mut c, "worker")
                .unwrap();
            assert_eq!(
                Frame::read_from(&mut c, "worker").unwrap().kind,
                FrameType::Welcome
            );
            c
        };
        // A task with no inputs: it runs, and writes nothing.
        let json = br#"{"format_version":2,"id":77,"inputs":[],"output_level":1,"smallest_user_key":null,"largest_user_key":null,"snapshots":[],"bottommost":true,"output":{"target_file_size":1024,"block_size":4096,"restart_interval":16,"bloom_bits_per_key":0,"compression":"None","volume":0,"file_numbers":[500,501]},"filter":null,"reason":"Manual"}"#;
        let task = CompactionTask::decode(json).unwrap();
        let frame = Frame::new(FrameType::Task, task.encode().unwrap());
        let mut c = connect();
        frame.write_to(&mut c, "worker").unwrap();
        assert_eq!(
            Frame::read_from(&mut c, "worker").unwrap().kind,
            FrameType::Result
        );
        // The same frame again, on this connection or another: refused.
        for mut conn in [c, connect()] {
            frame.write_to(&mut conn, "worker").unwrap();
            let reply = Frame::read_from(&mut conn, "worker").unwrap();
            assert_eq!(reply.kind, FrameType::Error);
            assert!(String::from_utf8_lossy(&reply.payload).contains("replayed"));
        }
        // A frame only a worker sends: refused, the connection stays.
        let mut c = connect();
        Frame::new(FrameType::Result, b"{}".to_vec())
            .write_to(&mut c, "worker")
            .unwrap();
        assert_eq!(
            Frame::read_from(&mut c, "worker").unwrap().kind,
            FrameType::Error
        );
        // A damaged frame (one payload bit flipped): an error, then the connection ends.
        let mut bytes = Frame::new(FrameType::Task, task.encode().unwrap())
            .encode()
            .unwrap();
        bytes[20] ^= 1;
        c.write_all(&bytes).unwrap();
        assert_eq!(
            Frame::read_from(&mut c, "worker").unwrap().kind,
            FrameType::Error
        );
        assert!(Frame::read_from(&mut c, "worker").is_err());
        // A truncated frame, then the client goes away: the worker serves others on.
        let mut c = connect();
        c.write_all(&bytes[..bytes.len() / 2]).unwrap();
        drop(c);
        let mut other = connect();
        let fresh = br#"{"format_version":2,"id":78,"inputs":[],"output_level":1,"smallest_user_key":null,"largest_user_key":null,"snapshots":[],"bottommost":true,"output":{"target_file_size":1024,"block_size":4096,"restart_interval":16,"bloom_bits_per_key":0,"compression":"None","volume":0,"file_numbers":[600]},"filter":null,"reason":"Manual"}"#;
        Frame::new(FrameType::Task, fresh.to_vec())
            .write_to(&mut other, "worker")
            .unwrap();
        assert_eq!(
            Frame::read_from(&mut other, "worker").unwrap().kind,
            FrameType::Result
        );
    }

    #[test]
    fn a_worker_over_a_unix_socket_runs_the_compactions() {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("compactd.sock");
        let listener = UnixListener::bind(&sock).unwrap();
        let w = worker(dir.path(), false);
        std::thread::spawn(move || w.serve_unix(&listener));
        let addr = WorkerAddr::parse(&format!("unix:{}", sock.display()));
        let remote = Arc::new(RemoteExecutor::new(addr, "s3cret", Duration::from_secs(30)));
        assert_eq!(load(dir.path(), remote), 0);
    }

    #[test]
    fn a_wrong_secret_a_silent_worker_or_no_worker_leaves_compaction_to_the_host() {
        // The wrong secret: the worker refuses, every task runs on the host.
        let dir = tempfile::tempdir().unwrap();
        let addr = serve_tcp_worker(dir.path(), false, |_| {});
        let remote = RemoteExecutor::new(WorkerAddr::parse(&addr), "guess", Duration::from_secs(5));
        let stats = load_stats(dir.path(), Arc::new(remote));
        assert!(stats.compaction_fallbacks > 0);
        // The failures are the worker's, the runs the host's.
        let unit = |name: &str| stats.compaction_units.iter().find(|u| u.unit == name);
        let host = unit("host").expect("the host ran the tasks");
        let remote = unit(&format!("remote {addr}")).expect("the worker is listed");
        assert_eq!(remote.runs, 0);
        assert_eq!(remote.failures, stats.compaction_fallbacks);
        assert_eq!(host.fallbacks, stats.compaction_fallbacks);
        assert_eq!(host.linear_runs, host.runs);

        // A worker that accepts and never answers: the deadline passes, the host runs it.
        let dir = tempfile::tempdir().unwrap();
        let silent = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = silent.local_addr().unwrap().to_string();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            while let Ok((s, _)) = silent.accept() {
                held.push(s);
            }
        });
        let remote = RemoteExecutor::new(
            WorkerAddr::parse(&addr),
            "s3cret",
            Duration::from_millis(200),
        );
        assert!(load(dir.path(), Arc::new(remote)) > 0);

        // Nothing listening.
        let dir = tempfile::tempdir().unwrap();
        let gone = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = gone.local_addr().unwrap().to_string();
        drop(gone);
        let remote =
            RemoteExecutor::new(WorkerAddr::parse(&addr), "s3cret", Duration::from_secs(1));
        assert!(load(dir.path(), Arc::new(remote)) > 0);
    }
}

#[test]
fn host_and_device_share_each_compaction_under_every_policy() {
    use terrace::compaction::{CollaborativeExecutor, LinearExecutor, SharePolicy};
    for policy in [
        SharePolicy::Static(0.5),
        SharePolicy::Static(0.2),
        SharePolicy::Dynamic,
        SharePolicy::Steal(6),
    ] {
        for lie in [Lie::None, Lie::Checksum, Lie::Fail] {
            let device = Arc::new(Worker {
                lie,
                tasks: AtomicU64::new(0),
            });
            let shared =
                CollaborativeExecutor::new(Arc::new(LinearExecutor), device.clone(), policy);
            let dir = tempfile::tempdir().unwrap();
            let opts = Options {
                compaction_executor: Arc::new(shared),
                target_file_size_base: 8 << 10,
                ..small_options()
            };
            let stats = load_compact_check(dir.path(), &opts, 4000);
            assert!(
                device.tasks.load(Ordering::SeqCst) > 0,
                "{policy:?} {lie:?}: the device took shares"
            );
            if lie != Lie::None {
                // Each refused share is the device's failure and the host's fallback.
                let failed: u64 = stats.compaction_units.iter().map(|u| u.failures).sum();
                assert!(
                    failed > 0,
                    "{policy:?} {lie:?}: {:?}",
                    stats.compaction_units
                );
                assert_eq!(failed, stats.compaction_fallbacks);
            }
        }
    }
}

/// The decision component in a database: its signals say busy for the first compactions
/// and idle after, so both modes run, and the data is right either way.
#[test]
fn the_decision_component_switches_modes_within_one_database() {
    use std::sync::atomic::AtomicBool;
    use terrace::compaction::adaptive::MachineSignals;
    use terrace::compaction::{AdaptiveExecutor, DecisionConfig};

    struct Flip(AtomicBool);
    impl MachineSignals for Flip {
        fn sample(&self) -> (f64, f64) {
            (
                if self.0.load(Ordering::SeqCst) {
                    1.0
                } else {
                    0.0
                },
                0.0,
            )
        }
    }
    let busy = Arc::new(Flip(AtomicBool::new(true)));
    let config = DecisionConfig {
        min_hold_ms: 0,
        ..DecisionConfig::default()
    };
    let auto = Arc::new(AdaptiveExecutor::with_signals(config, busy.clone()));
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        compaction_executor: auto.clone(),
        ..small_options()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    for round in 0..6u32 {
        if round == 3 {
            db.compact_range(None, None).unwrap();
            busy.0.store(false, Ordering::SeqCst);
        }
        for i in 0..3000u32 {
            db.put(
                format!("k{i:05}").as_bytes(),
                format!("{round}-{i}").as_bytes(),
            )
            .unwrap();
        }
    }
    db.compact_range(None, None).unwrap();
    let stats = db.stats();
    let host = stats
        .compaction_units
        .iter()
        .find(|u| u.unit == "host")
        .unwrap();
    assert!(host.linear_runs > 0 && host.pipelined_runs > 0, "{host:?}");
    assert!(auto.switches() >= 2);
    for i in 0..3000u32 {
        let got = db.get(format!("k{i:05}").as_bytes()).unwrap();
        assert_eq!(got.as_deref(), Some(format!("5-{i}").as_bytes()));
    }
}
