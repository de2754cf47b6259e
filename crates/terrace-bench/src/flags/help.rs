//! The `--help` text of `terrace bench`: every flag `Flags::parse` knows, grouped.
//!
//! Owns: the text only.
//! Must not touch: parsing; keep this in step with `Flags::set` by hand.

/// One line per flag for `--help`.
pub const HELP: &str = "\
Usage: terrace bench [--name=value ...]   (db_bench's flag names and defaults)
  --benchmarks=LIST  fillseq fillrandom fillsync overwrite updaterandom readrandom readmissing
                     readseq readreverse seekrandom deleterandom readwhilewriting
                     seekrandomwhilewriting stats compact waitforcompaction ycsb_load
                     ycsb_a .. ycsb_f
  --db=DIR --num --reads --duration --threads --key_size --value_size --compression_ratio
  --wal_dir=DIR      the write-ahead logs' directory (default: in --db; never throttled
                     unless inside --db); its logs are deleted with the database
  --level0_dir=DIR   the level-0 table files' directory (default: in --db; never
                     throttled): with --wal_dir, a small fast device under a classic tree
  --compression_type=none|lz4|zstd --write_buffer_size --max_write_buffer_number
  --target_file_size_base --max_bytes_for_level_base --max_bytes_for_level_multiplier
  --num_levels --level_compaction_dynamic_level_bytes --level0_file_num_compaction_trigger
  --compaction_pri=min_overlapping_ratio|round_robin (or db_bench's 3|4; default 3)
  --compaction_mode=linear|pipelined|auto  compaction tasks read, merge and write in turn
                     on one thread (default), as a pipeline of three threads with bounded
                     queues, or either, chosen per task from CPU, memory and value sizes
  --compaction_workers=ADDR[,ADDR]  compaction workers (`terrace compactd`, HOST:PORT or
                     unix:PATH; secret from TERRACE_COMPACTD_SECRET) that share each
                     compaction with this host; a failed or wrong share runs on the host
  --offload_ratio=R|dynamic|steal[:N]|all  the workers' share: a fixed share of the input
                     bytes (default 0.5), one from both sides' measured speeds, N pieces
                     (default 8) that both sides take from one queue, or every task (the
                     host runs only what a worker fails)
  --compaction_dispatch=least_loaded|round_robin  how several workers are chosen
  --compaction_check  run every worker task again on the host and compare the bytes
  --level0_slowdown_writes_trigger --level0_stop_writes_trigger --bloom_bits --cache_size
  --block_size --max_background_jobs --subcompactions --batch_size --seek_nexts
  --benchmark_write_rate_limit --sync --disable_wal --use_existing_db --histogram
  --allow_concurrent_memtable_write
  --read_triggered_compaction  seeks that keep reading level-0 tables compact them (on;
                     LevelDB's seek compaction for level 0; db_bench has no such flag)
  --seed=N           random seeds as db_bench's: the n-th thread of the run (counted across
                     benchmarks, a *whilewriting writer first) draws from N+n, so each
                     benchmark draws fresh keys; 0 (default) takes N from the clock and
                     prints it (pass it back to replay the run)
  --l0=classic|matrix --pmem_path=DIR --matrix_capacity=BYTES --matrix_columns=N
  --matrix_segment_rows=N --matrix_merge_segments=N --matrix_trigger=FRACTION
  --matrix_level1_bytes=BYTES (level 1's byte target; 0, the default: the capacity)
  --pmem_rate_limit=BYTES_PER_SEC
                     level 0 as table files, or as the matrix container on the
                     persistent-memory tier (its region file MATRIX.pmem goes in --pmem_path);
                     the other flags of this group need --l0=matrix. --pmem_rate_limit (0:
                     off) caps the bytes the region persists plus reads per second, a token
                     bucket that makes a region emulated in DRAM as slow as a device
  --storage_rate_limit=BYTES_PER_SEC --storage_iops_limit=IOPS --storage_io_unit=BYTES
                     make the table directories of levels 1+ a slower device (0: off; with
                     one database directory that is the whole database, log included
                     unless --wal_dir moves it)
  --volumes=N --volume_iops=IOPS --volume_rate=BYTES_PER_SEC --placement=POLICY
  --heat_interval_ms=MS --migration=tango|iops_only|off
                     N table volumes (vol1 .. volN in --db), each a device of its own with
                     these limits (operations of --storage_io_unit bytes); the log and
                     MANIFEST stay in --db, unlimited. POLICY: tango (default), demand,
                     round_robin, hash, raid0, single, by_level. Migration copies (tango) or
                     moves (iops_only) hot files off volumes at their IOPS limit; default
                     tango with --placement=tango or demand, else off
  --statistics --report_interval_seconds --report_file=CSV --json=FILE --plot=SVG
  --ycsb_field_count --ycsb_field_length --ycsb_max_scan_length --ycsb_zipfian_constant
  --ycsb_read_proportion=SHARE (reads in ycsb_a/b/c, the rest updates)
  --progress (a progress bar when stdout is a terminal; --noprogress to hide it)
Server mode: --target=redis://HOST:PORT runs ycsb_load, ycsb_a .. ycsb_f over RESP against
  any Redis-protocol server, one connection per --threads, --pipeline=N commands in flight
  per connection (records are one string per key; the server is not emptied first).
  --target=boom:///SOCKET (or boom2:///SOCKET, the two-phase baseline; boom+tcp://HOST:PORT
  and boom2+tcp:// over TCP) runs them over BOOM
  against terrace serve --boom-socket: one request in flight per connection, no ycsb_e;
  each result ends with the RDMA verbs and round trips per operation; --boom_rtt_us=N adds
  N microseconds of modelled wire to every round trip; --boom_hybrid=0 turns the in-place
  update off (every PUT appends; results report the segment bytes appended)";
