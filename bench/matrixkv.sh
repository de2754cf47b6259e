#!/usr/bin/env bash
# The MatrixKV comparison (docs/techniques/matrixkv.md): the same random-write load on
#   classic-ssd : level-0 table files, the whole database on the throttled "SSD" directory,
#                 max_bytes_for_level_base = memtable x L0 trigger (the thesis's RocksDB-SSD)
#   classic-fast: the control: the same tree with its log and level-0 files on the fast
#                 (persistent-memory) directory, levels 1+ on the throttled one, as a
#                 RocksDB user with a small fast device would place them; its fast
#                 directory is not rate-limited (the matrix's region is), which favours it
#   classic-nvm : the same in the unthrottled persistent-memory directory (the thesis's
#                 RocksDB-NVM, a bound; not run unless CONFIGS names it)
#   matrix      : the matrix container on the persistent-memory directory (with the WAL),
#                 levels 1+ on the throttled directory
# Every configuration writes table bloom filters (10 bits per key, as the matrix's segment
# filters use), so that none reads more than it must.
# then random reads, and sequential writes and reads, with one flush and one compaction
# thread. Each load is followed by waitforcompaction, whose report is the compaction the
# load left behind (its bytes and time complete the load's write amplification and
# sustained rate), so the reads run on a settled tree. Prints each run's report; with
# PLOT=1 writes per-second SVG plots.
#
# Usage: bench/matrixkv.sh [--paper] [NUM] [VALUE_SIZE]
#   (defaults: 1300000 entries of 1024 B; SCALE=N instead sets NUM to N times the
#   container's capacity in values). --paper takes the thesis's proportions: a container
#   of 128 memtables, level 1 a thirty-second of it (one level-0 trigger's worth of
#   memtables), 50 rows per segment filter and 5 segments per table merge.
# Environment: WORK (scratch directory, default a temporary one; put PMEM_DIR on tmpfs or
# a DAX mount), PMEM_DIR, RATE (bytes/s of the SSD tier, default 100 MB/s),
# MEMTABLE (default 4 MiB), CAPACITY (matrix bytes, default 128 MiB), SEGMENT_ROWS and
# MERGE_SEGMENTS (defaults 4 and 2: small enough that table merges happen in a 32-row
# container; the thesis's 50 and 5 would never merge at this scale), CONFIGS (which of
# classic-ssd, classic-nvm and matrix to run; default all three), SEQ (0 skips the
# sequential fillseq/readseq runs), PMEM_RATE_LIMIT (bytes/s the matrix run's region may
# persist plus read, --pmem_rate_limit; default 10 x RATE, the thesis's ratio of the two
# tiers: a token bucket, not a model of persistent memory, docs/formats/pmem.md; 0 is
# unlimited).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
. "$ROOT/bench/common.sh"
PAPER=0
if [ "${1:-}" = --paper ]; then PAPER=1; shift; fi
VALUE="${2:-1024}"
RATE="${RATE:-100000000}"
MEMTABLE="${MEMTABLE:-4194304}"
base=$((MEMTABLE * 4))
if [ "$PAPER" = 1 ]; then
  CAPACITY="${CAPACITY:-$((MEMTABLE * 128))}"
  SEGMENT_ROWS="${SEGMENT_ROWS:-50}"
  MERGE_SEGMENTS="${MERGE_SEGMENTS:-5}"
  LEVEL1="${LEVEL1:-$base}"
else
  CAPACITY="${CAPACITY:-134217728}"
  SEGMENT_ROWS="${SEGMENT_ROWS:-4}"
  MERGE_SEGMENTS="${MERGE_SEGMENTS:-2}"
  LEVEL1="${LEVEL1:-0}"
fi
if [ -n "${SCALE:-}" ]; then NUM=$((SCALE * CAPACITY / VALUE)); else NUM="${1:-1300000}"; fi
CONFIGS="${CONFIGS:-classic-ssd classic-fast matrix}"
SEQ="${SEQ:-1}"
PMEM_RATE_LIMIT="${PMEM_RATE_LIMIT:-$((RATE * 10))}"
WORK="${WORK:-$(mktemp -d)}"
PMEM_DIR="${PMEM_DIR:-$WORK/pmem}"
BIN="$(terrace_bin)"
mkdir -p "$WORK" "$PMEM_DIR"

common=(--num="$NUM" --value_size="$VALUE" --key_size=16 --write_buffer_size="$MEMTABLE"
  --target_file_size_base="$MEMTABLE" --max_background_jobs=2 --compression_type=none
  --bloom_bits=10 --noprogress --report_interval_seconds=1)
echo "matrixkv: $NUM values of $VALUE B, container $CAPACITY B ($(((NUM * VALUE + CAPACITY / 2) / CAPACITY))x)," \
  "preset $([ "$PAPER" = 1 ] && echo paper || echo default), SSD $RATE B/s, pmem $PMEM_RATE_LIMIT B/s"

run() { # name, extra flags...
  local name="$1"; shift
  case " $CONFIGS " in *" $name "*) ;; *) return 0 ;; esac
  local db="$WORK/db-$name"
  [ "$name" = classic-nvm ] && db="$PMEM_DIR/db-$name"
  rm -rf "$db" "$PMEM_DIR"/*
  echo "=== $name"
  "$BIN" bench --db="$db" "${common[@]}" "$@" \
    --benchmarks=fillrandom,waitforcompaction,readrandom --reads=$((NUM / 10)) \
    --report_file="$WORK/$name-random.csv" ${PLOT:+--plot="$WORK/$name-random.svg"}
  rm -rf "$db" "$PMEM_DIR"/*
  [ "$SEQ" = 0 ] && return 0
  "$BIN" bench --db="$db" "${common[@]}" "$@" --benchmarks=fillseq,waitforcompaction,readseq \
    --report_file="$WORK/$name-seq.csv" ${PLOT:+--plot="$WORK/$name-seq.svg"}
}

run classic-ssd --max_bytes_for_level_base="$base" --storage_rate_limit="$RATE"
run classic-fast --max_bytes_for_level_base="$base" --storage_rate_limit="$RATE" \
  --wal_dir="$PMEM_DIR/wal" --level0_dir="$PMEM_DIR/l0"
run classic-nvm --max_bytes_for_level_base="$base"
run matrix --l0=matrix --pmem_path="$PMEM_DIR" --wal_dir="$PMEM_DIR/wal" \
  --matrix_capacity="$CAPACITY" --matrix_segment_rows="$SEGMENT_ROWS" \
  --matrix_merge_segments="$MERGE_SEGMENTS" --matrix_level1_bytes="$LEVEL1" \
  --pmem_rate_limit="$PMEM_RATE_LIMIT" --storage_rate_limit="$RATE"
echo "reports and CSVs in $WORK"
