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

THREADS=1
VALUE_SIZE=100
. "$ROOT/bench/engine-flags.sh"
FLAGS=("${COMMON[@]}" --compression_type=none --cache_size="$CACHE")
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
