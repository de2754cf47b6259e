use super::*;

#[test]
fn defaults_are_db_benchs() {
    let f = Flags::parse(Vec::<String>::new()).unwrap();
    assert_eq!(f.num, 1_000_000);
    assert_eq!(f.key_size, 16);
    assert_eq!(f.value_size, 100);
    assert_eq!(f.cache_size, 8 << 20);
    assert_eq!(f.bloom_bits, -1);
    assert_eq!(f.engine_options().bloom_bits_per_key, 0);
    assert_eq!(f.reads_per_thread(), 1_000_000);
}

#[test]
fn both_value_forms_and_booleans_parse() {
    let f = Flags::parse([
        "--benchmarks=fillseq,readrandom",
        "--num",
        "500",
        "--reads=20",
        "--compression_type=lz4",
        "--bloom_bits=10",
        "--sync",
        "--disable_wal=true",
        "--nohistogram",
        "--statistics=0",
        "--use_existing_db=1",
        "-threads=4",
        "--db=/tmp/x",
    ])
    .unwrap();
    assert_eq!(f.benchmarks, vec!["fillseq", "readrandom"]);
    assert_eq!(f.num, 500);
    assert_eq!(f.reads_per_thread(), 20);
    assert_eq!(f.compression_type, Compression::Lz4);
    assert_eq!(f.engine_options().bloom_bits_per_key, 10);
    assert!(f.sync && f.disable_wal && f.use_existing_db);
    assert!(!f.histogram && !f.statistics);
    assert_eq!(f.threads, 4);
    assert_eq!(f.db, PathBuf::from("/tmp/x"));
}

#[test]
fn engine_options_follow_the_flags() {
    let f = Flags::parse([
        "--write_buffer_size=1048576",
        "--max_write_buffer_number=3",
        "--target_file_size_base=2097152",
        "--max_bytes_for_level_base=10485760",
        "--level0_file_num_compaction_trigger=2",
        "--level0_slowdown_writes_trigger=8",
        "--level0_stop_writes_trigger=12",
        "--cache_size=1000000",
        "--max_background_jobs=8",
        "--subcompactions=2",
    ])
    .unwrap();
    let o = f.engine_options();
    assert_eq!(o.write_buffer_size, 1 << 20);
    assert_eq!(o.max_write_buffer_number, 3);
    assert_eq!(o.target_file_size_base, 2 << 20);
    assert_eq!(o.max_bytes_for_level_base, 10 << 20);
    assert_eq!(
        (
            o.level0_file_num_compaction_trigger,
            o.level0_slowdown_writes_trigger,
            o.level0_stop_writes_trigger
        ),
        (2, 8, 12)
    );
    assert_eq!(o.block_cache_bytes, 1_000_000);
    assert_eq!(
        (o.max_background_flushes, o.max_background_compactions),
        (2, 6)
    );
    assert_eq!(o.max_subcompactions, 2);
}

#[test]
fn unknown_flags_are_errors() {
    for args in [
        vec!["--nonsense=1"],
        vec!["--nonsense"],
        vec!["--nosuch"],
        vec!["plain"],
    ] {
        let e = Flags::parse(args.clone()).unwrap_err();
        assert!(
            matches!(e, BenchError::UnknownFlag(_) | BenchError::BadValue { .. }),
            "{args:?}: {e}"
        );
    }
    assert!(matches!(
        Flags::parse(["--nonsense=1"]),
        Err(BenchError::UnknownFlag(n)) if n == "nonsense"
    ));
}

#[test]
fn bad_values_are_errors_naming_the_flag() {
    let cases: &[&[&str]] = &[
        &["--num=ten"],
        &["--num=-5"],
        &["--threads=0"],
        &["--sync=maybe"],
        &["--compression_type=snappy"],
        &["--compression_ratio=2"],
        &["--reads=-7"],
        &["--num"],
        &["--ycsb_zipfian_constant=1.5"],
        &[
            "--level0_slowdown_writes_trigger=2",
            "--level0_file_num_compaction_trigger=4",
        ],
        &["--write_buffer_size=10"],
    ];
    for args in cases {
        match Flags::parse(args.iter()) {
            Err(BenchError::BadValue { flag, .. }) => assert!(!flag.is_empty()),
            other => panic!("{args:?}: {other:?}"),
        }
    }
}

#[test]
fn storage_throttle_flags_parse_and_throttle_the_database_directory() {
    let off = Flags::parse(["--db=/tmp/tb"]).unwrap();
    assert_eq!((off.storage_rate_limit, off.storage_iops_limit), (0, 0));
    assert_eq!(off.storage_io_unit, 256 << 10);
    assert_eq!(off.storage_limits(), None);
    assert!(off.throttled_dirs().is_empty());
    assert!(format!("{:?}", off.engine_options().storage).starts_with("FsStorage"));

    let on = Flags::parse([
        "--db=/tmp/tb",
        "--storage_rate_limit=104857600",
        "--storage_iops_limit",
        "3000",
    ])
    .unwrap();
    let limits = on.storage_limits().unwrap();
    assert_eq!(limits.bytes_per_sec, 100 << 20);
    assert_eq!((limits.iops, limits.io_unit_bytes), (3000, 256 << 10));
    // One database directory: it holds every level's tables, so all of it is throttled.
    assert_eq!(on.throttled_dirs(), vec![PathBuf::from("/tmp/tb")]);
    assert!(format!("{:?}", on.engine_options().storage).starts_with("ThrottledStorage"));

    let iops_only = Flags::parse(["--storage_iops_limit=500", "--storage_io_unit=0"]).unwrap();
    let limits = iops_only.storage_limits().unwrap();
    assert_eq!(
        (limits.bytes_per_sec, limits.iops, limits.io_unit_bytes),
        (0, 500, 0)
    );

    for bad in [
        "--storage_rate_limit=-1",
        "--storage_iops_limit=fast",
        "--storage_io_unit=1.5",
    ] {
        assert!(
            matches!(Flags::parse([bad]), Err(BenchError::BadValue { .. })),
            "{bad}"
        );
    }
}

#[test]
fn wal_dir_flag_sets_the_log_directory() {
    assert_eq!(
        Flags::parse(["--db=/tmp/tb"])
            .unwrap()
            .engine_options()
            .wal_dir,
        None
    );
    let f = Flags::parse(["--db=/tmp/tb", "--wal_dir=/mnt/pmem/wal"]).unwrap();
    assert_eq!(f.wal_dir, Some(PathBuf::from("/mnt/pmem/wal")));
    assert_eq!(
        f.engine_options().wal_dir,
        Some(PathBuf::from("/mnt/pmem/wal"))
    );
    // db_bench's default is the empty string: the database directory.
    assert_eq!(Flags::parse(["--wal_dir="]).unwrap().wal_dir, None);
    // The throttle covers the table directories only, so a log directory outside --db
    // is on the fast device.
    let throttled = Flags::parse([
        "--db=/tmp/tb",
        "--wal_dir=/mnt/pmem/wal",
        "--storage_rate_limit=1048576",
    ])
    .unwrap();
    assert_eq!(throttled.throttled_dirs(), vec![PathBuf::from("/tmp/tb")]);
}

#[test]
fn level0_dir_puts_level_0_on_an_unthrottled_volume() {
    let plain = Flags::parse(["--db=/tmp/tb"]).unwrap().engine_options();
    assert!(plain.volumes.is_empty() && plain.level_volumes.is_empty());
    let f = Flags::parse([
        "--db=/tmp/tb",
        "--level0_dir=/mnt/pmem/l0",
        "--storage_rate_limit=1048576",
    ])
    .unwrap();
    let o = f.engine_options();
    assert_eq!(o.volumes, vec![PathBuf::from("/mnt/pmem/l0")]);
    // Level 0 on volume 1, every deeper level on the database directory.
    assert_eq!(o.level_volumes, vec![1]);
    assert_eq!(o.level0_settings().volume, 1);
    assert!(o.validate().is_ok());
    // Only the directories of levels 1+ are throttled.
    assert_eq!(f.throttled_dirs(), vec![PathBuf::from("/tmp/tb")]);
    assert_eq!(Flags::parse(["--level0_dir="]).unwrap().level0_dir, None);
}

#[test]
fn matrix_level1_bytes_sets_the_containers_level_1_target() {
    let f = Flags::parse(["--l0=matrix", "--matrix_level1_bytes=16777216"]).unwrap();
    assert_eq!(f.matrix.matrix_options().level1_bytes, 16 << 20);
    let d = Flags::parse(["--l0=matrix"]).unwrap();
    assert_eq!(d.matrix.matrix_options().level1_bytes, 0);
    // A matrix setting means nothing with the classic level 0.
    assert!(Flags::parse(["--matrix_level1_bytes=1"])
        .and_then(|f| f.matrix.level0().map(|_| ()))
        .is_err());
}

#[test]
fn compaction_pri_takes_names_and_db_bench_integers() {
    let pri = |v: &str| {
        Flags::parse([format!("--compaction_pri={v}")]).map(|f| f.engine_options().compaction_pri)
    };
    // db_bench's default is RocksDB's: kMinOverlappingRatio.
    let default = Flags::parse(Vec::<String>::new()).unwrap();
    assert_eq!(default.compaction_pri, CompactionPri::MinOverlappingRatio);
    assert_eq!(
        default.engine_options().compaction_pri,
        CompactionPri::MinOverlappingRatio
    );
    for v in ["min_overlapping_ratio", "kMinOverlappingRatio", "3"] {
        assert_eq!(pri(v).unwrap(), CompactionPri::MinOverlappingRatio, "{v}");
    }
    for v in ["round_robin", "kRoundRobin", "4"] {
        assert_eq!(pri(v).unwrap(), CompactionPri::RoundRobin, "{v}");
    }
    let f = Flags::parse(["--compaction_pri", "round_robin"]).unwrap();
    assert_eq!(f.compaction_pri, CompactionPri::RoundRobin);
    // RocksDB's other policies are named in the error; anything else lists the choices.
    for (v, named) in [
        ("0", "kByCompensatedSize"),
        ("kOldestLargestSeqFirst", "kOldestLargestSeqFirst"),
        ("2", "kOldestSmallestSeqFirst"),
        ("5", "round_robin (4)"),
        ("fifo", "min_overlapping_ratio (3)"),
        ("", "min_overlapping_ratio (3)"),
    ] {
        match pri(v) {
            Err(e @ BenchError::BadValue { .. }) => {
                let msg = e.to_string();
                assert!(
                    msg.contains("--compaction_pri") && msg.contains(named),
                    "{v}: {msg}"
                );
            }
            other => panic!("{v}: {other:?}"),
        }
    }
}

#[test]
fn matrix_flags_parse_and_need_the_matrix_level0() {
    let f = Flags::parse([
        "--l0=matrix",
        "--pmem_path=/mnt/pmem",
        "--matrix_capacity=134217728",
        "--matrix_columns=16",
        "--matrix_segment_rows=4",
        "--matrix_merge_segments=2",
        "--matrix_trigger=0.5",
        "--pmem_rate_limit=2000000000",
    ])
    .unwrap();
    assert_eq!(f.matrix.l0, L0Kind::Matrix);
    assert_eq!(f.matrix.pmem_path, Some(PathBuf::from("/mnt/pmem")));
    assert_eq!(
        (f.matrix.capacity, f.matrix.columns, f.matrix.segment_rows),
        (134_217_728, 16, 4)
    );
    assert_eq!((f.matrix.merge_segments, f.matrix.trigger), (2, 0.5));
    assert_eq!(f.matrix.rate_limit, 2_000_000_000);
    let opts = f.matrix.matrix_options();
    assert_eq!(opts.pmem_rate_limit, 2_000_000_000);
    assert_eq!(opts.params.segment_rows, 4);
    assert_eq!(Flags::default().matrix.matrix_options().pmem_rate_limit, 0);
    assert!(Flags::parse(["--l0=matrix", "--pmem_rate_limit=-1"]).is_err());
    // Without --l0=matrix a matrix setting would silently mean nothing: refused, named.
    for arg in [
        "--pmem_path=/mnt/pmem",
        "--matrix_columns=16",
        "--pmem_rate_limit=1000",
    ] {
        let e = Flags::parse([arg]).unwrap_err().to_string();
        let name = arg.split('=').next().unwrap();
        assert!(e.contains(name) && e.contains("--l0=matrix"), "{e}");
        assert!(Flags::parse([arg, "--l0=classic"]).is_err());
        assert!(Flags::parse([arg, "--l0=matrix"]).is_ok());
    }
    assert!(Flags::parse(["--l0=matrix", "--matrix_trigger=2"]).is_err());
    assert!(Flags::parse(["--l0=nvm"]).is_err());
}

#[test]
fn compaction_mode_chooses_the_executor() {
    let mode = |v: &str| {
        Flags::parse([format!("--compaction_mode={v}")])
            .map(|f| f.engine_options().compaction_executor.name().to_string())
    };
    let default = Flags::parse(Vec::<String>::new()).unwrap();
    assert_eq!(
        default.engine_options().compaction_executor.name(),
        "linear"
    );
    assert!(default.engine_options().compaction_workers.is_none());
    assert_eq!(mode("linear").unwrap(), "linear");
    assert_eq!(mode("pipelined").unwrap(), "pipelined");
    assert_eq!(mode("auto").unwrap(), "auto");
    let err = mode("fast").unwrap_err().to_string();
    assert!(err.contains("linear, pipelined or auto"), "{err}");
}

#[test]
fn compaction_workers_and_offload_ratios_are_checked() {
    use terrace::compaction::{DispatchPolicy, SharePolicy};
    use terrace::offload::Share;
    let f = Flags::parse(["--compaction_workers=127.0.0.1:7400", "--offload_ratio=0.3"]).unwrap();
    assert_eq!(f.compaction_workers, vec!["127.0.0.1:7400".to_string()]);
    assert_eq!(
        f.offload_ratio,
        Share::Collaborative(SharePolicy::Static(0.3))
    );
    let opts = f.engine_options();
    let workers = opts.compaction_workers.clone().unwrap();
    assert_eq!(workers.workers, f.compaction_workers);
    let name = workers
        .executor(opts.compaction_executor.clone(), &f.db)
        .name()
        .to_string();
    assert!(
        name.starts_with("collaborative linear + remote 127.0.0.1:7400"),
        "{name}"
    );
    let ratio = |v: &str| Flags::parse([format!("--offload_ratio={v}")]).map(|f| f.offload_ratio);
    assert_eq!(
        ratio("dynamic").unwrap(),
        Share::Collaborative(SharePolicy::Dynamic)
    );
    assert_eq!(
        ratio("steal").unwrap(),
        Share::Collaborative(SharePolicy::Steal(8))
    );
    assert_eq!(
        ratio("steal:4").unwrap(),
        Share::Collaborative(SharePolicy::Steal(4))
    );
    assert_eq!(ratio("all").unwrap(), Share::All);
    for bad in ["0", "1", "1.5", "steal:1", "stealx", "half"] {
        assert!(ratio(bad).is_err(), "{bad}");
    }
    let two = Flags::parse([
        "--compaction_workers=a:1,unix:/tmp/w.sock",
        "--compaction_dispatch=round_robin",
        "--offload_ratio=all",
        "--compaction_check",
    ])
    .unwrap();
    let opts = two.engine_options();
    let workers = opts.compaction_workers.clone().unwrap();
    assert_eq!(workers.dispatch, DispatchPolicy::RoundRobin);
    assert!(workers.check);
    let name = workers
        .executor(opts.compaction_executor.clone(), &two.db)
        .name()
        .to_string();
    assert!(
        name.starts_with("dispatch RoundRobin over [remote a:1 checked against linear"),
        "{name}"
    );
    assert!(Flags::parse(["--compaction_workers=,"]).is_err());
    assert!(Flags::parse(["--compaction_dispatch=random"]).is_err());
}

#[test]
fn volumes_make_limited_table_volumes_in_the_database_directory() {
    let f = Flags::parse([
        "--db=/tmp/tb",
        "--volumes=3",
        "--volume_iops=500",
        "--volume_rate=22020096",
        "--placement=round_robin",
        "--heat_interval_ms=250",
    ])
    .unwrap();
    let o = f.engine_options();
    assert_eq!(o.volumes.len(), 3);
    assert_eq!(o.volumes[2], PathBuf::from("/tmp/tb/vol3"));
    assert_eq!(o.volume_limits.len(), 4);
    assert_eq!(
        o.volume_limits[0].iops, 0,
        "the log's directory is only counted"
    );
    assert_eq!(o.volume_limits[1].iops, 500);
    assert_eq!(o.volume_limits[3].bytes_per_sec, 22_020_096);
    assert_eq!(
        o.placement_policy,
        terrace::volume::placement::PlacementPolicy::RoundRobin
    );
    assert_eq!(o.heat_interval, std::time::Duration::from_millis(250));
    assert_eq!(
        o.migration,
        terrace::volume::migration::MigrationPolicy::Off,
        "no migration by default beside another placement"
    );
    // Tango by default.
    let d = Flags::parse(["--volumes=2"]).unwrap().engine_options();
    assert_eq!(
        d.placement_policy,
        terrace::volume::placement::PlacementPolicy::Tango
    );
    assert_eq!(
        d.migration,
        terrace::volume::migration::MigrationPolicy::Tango
    );
    let m = Flags::parse(["--volumes=2", "--placement=hash", "--migration=iops_only"]).unwrap();
    assert_eq!(
        m.engine_options().migration,
        terrace::volume::migration::MigrationPolicy::IopsOnly
    );
    // Volume flags without volumes, an unknown policy, or one directory's throttle with
    // volumes are refused.
    for bad in [
        vec!["--volume_iops=5"],
        vec!["--placement=tango"],
        vec!["--migration=tango"],
        vec!["--volumes=2", "--migration=sometimes"],
        vec!["--volumes=2", "--placement=fastest"],
        vec!["--volumes=2", "--storage_rate_limit=1000"],
        vec!["--volumes=2", "--level0_dir=/x"],
    ] {
        assert!(Flags::parse(bad.clone()).is_err(), "{bad:?}");
    }
}
