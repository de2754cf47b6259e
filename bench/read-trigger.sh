#!/usr/bin/env bash
# Read-triggered compaction of level 0 (docs/techniques/leveled-compaction.md, "Compaction
# triggered by reads") against its control and RocksDB: a random load larger than the
# block cache, then random gets, then random seeks. Terrace's database is copied after
# its gets, and the seeks run once on each copy, with the trigger on (the default) and
# off (`--read_triggered_compaction=0`, which db_bench has no equivalent of, hence this
# script instead of bench/compare.sh). RocksDB runs the same chain with the same flags.
# Each benchmark runs in its own process on the database the one before left, as in
# bench/compare.sh; the engine-shaping flags are compare.sh's.
#
# Usage: bench/read-trigger.sh
# Environment: NUM (keys, default 50000000), CACHE (block cache bytes, default 8388608),
# READS (gets and seeks, default 1000000), WORK (scratch, default a temporary directory;
# needs about three times NUM x 116 bytes free).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
. "$ROOT/bench/common.sh"
NUM="${NUM:-50000000}"
CACHE="${CACHE:-8388608}"
READS="${READS:-1000000}"
WORK="${WORK:-$(mktemp -d)}"
if ! command -v db_bench >/dev/null; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq rocksdb-tools >/dev/null
fi
BIN="$(terrace_bin)"

FLAGS=(
  --num="$NUM" --threads=1 --key_size=16 --value_size=100 --compression_ratio=0.5
  --compression_type=none --bloom_bits=10 --cache_size="$CACHE" --block_size=4096
  --write_buffer_size=67108864 --max_write_buffer_number=2
  --target_file_size_base=67108864 --max_bytes_for_level_base=268435456
  --max_bytes_for_level_multiplier=10 --num_levels=7
  --level_compaction_dynamic_level_bytes=false --compaction_pri=3
  --level0_file_num_compaction_trigger=4 --level0_slowdown_writes_trigger=20
  --level0_stop_writes_trigger=36 --max_background_jobs=2 --subcompactions=1
  --sync=0 --disable_wal=0 --seed=1 --histogram=1 --statistics=1
)
LOGS="$WORK/logs"
mkdir -p "$LOGS"

# run TOOL NAME DB BENCHMARKS [extra flags]: one process; prints its result lines.
run() {
  local tool=$1 name=$2 db=$3 benchmarks=$4
  shift 4
  local existing=1
  case "$benchmarks" in fill*) existing=0 ;; esac
  local log="$LOGS/$name.log"
  local cmd=(db_bench)
  [ "$tool" = terrace ] && cmd=("$BIN" bench)
  echo "== $name ($(date -u +%T))"
  "${cmd[@]}" --db="$db" --benchmarks="$benchmarks" --use_existing_db=$existing \
    --reads="$READS" "${FLAGS[@]}" "$@" >"$log" 2>&1
  # Terrace prints its tree as "level bytes"; RocksDB's `stats` as rows "  L<n> files/..".
  local tree='level bytes|compaction by output level'
  [ "$tool" = rocksdb ] && tree='^ +L[0-9] +[1-9]'
  grep -E "^(fillrandom|readrandom|seekrandom) |$tree|^(terrace|rocksdb)\.block\.cache(\.data)?\.(hit|miss) " "$log" || true
}

run terrace terrace.fillrandom "$WORK/t" fillrandom
run terrace terrace.readrandom "$WORK/t" readrandom
cp -a "$WORK/t" "$WORK/t-off"
run terrace terrace.seekrandom.trigger-on "$WORK/t" seekrandom
run terrace terrace.seekrandom.trigger-off "$WORK/t-off" seekrandom --read_triggered_compaction=0
rm -rf "$WORK/t" "$WORK/t-off"
run rocksdb rocksdb.fillrandom "$WORK/r" fillrandom
run rocksdb rocksdb.readrandom "$WORK/r" readrandom,stats
run rocksdb rocksdb.seekrandom "$WORK/r" seekrandom,stats
rm -rf "$WORK/r"
echo "logs: $LOGS"
