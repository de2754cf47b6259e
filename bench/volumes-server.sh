#!/usr/bin/env bash
# YCSB over RESP against `terrace serve` whose tables live on six throttled volumes
# (docs/techniques/tango.md): the server loaded over RESP with every limit off, then
# restarted with the limits on for a read-only zipfian run, once with round-robin
# placement and no migration, once with TANGO's placement and migration. Records are one
# string per key (256-byte values); the block cache is off, so every read reaches a volume.
#
# Usage: bench/volumes-server.sh
# Environment: NUM (records, default 300000), SECONDS_PER_RUN (default 30), THREADS
# (connections, default 32), VOLUME_IOPS (default 500), VOLUME_RATE (default 22020096).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
NUM="${NUM:-300000}"
SECONDS_PER_RUN="${SECONDS_PER_RUN:-30}"
THREADS="${THREADS:-32}"
VOLUME_IOPS="${VOLUME_IOPS:-500}"
VOLUME_RATE="${VOLUME_RATE:-22020096}"
WORK=$(mktemp -d)
cleanup() { stop; rm -rf "$WORK"; }
trap cleanup EXIT
# shellcheck source=bench/common.sh
. "$ROOT/bench/common.sh"
BIN=$(terrace_bin)

# Writes the server's config for placement $1, migration $2, limits on ($3 = 1) or off.
config() {
  local iops=0 rate=0
  if [ "$3" = 1 ]; then iops=$VOLUME_IOPS; rate=$VOLUME_RATE; fi
  {
    echo "dir = \"$WORK/db\""
    echo "port = 0"
    echo "block_cache_bytes = 0"
    echo "write_buffer_size = 8388608"
    echo "target_file_size_base = 4194304"
    echo "placement = \"$1\""
    echo "migration = \"$2\""
    for i in 1 2 3 4 5 6; do
      printf '[[volumes]]\npath = "%s"\niops = %s\nbandwidth = %s\n' "$WORK/vol$i" "$iops" "$rate"
    done
  } >"$WORK/config.toml"
}

start() {
  "$BIN" serve --config "$WORK/config.toml" --fsync everysec >"$WORK/serve.out" 2>&1 &
  PID=$!
  for _ in $(seq 100); do grep -q '^listening on' "$WORK/serve.out" 2>/dev/null && break; sleep 0.1; done
  PORT=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$WORK/serve.out")
  [ -n "$PORT" ] || { echo "terrace serve did not start: $(cat "$WORK/serve.out")" >&2; exit 1; }
}

echo "volumes over RESP: $NUM records of 256 B, $THREADS connections, 6 volumes of $VOLUME_IOPS IOPS and $VOLUME_RATE B/s, $(nproc) cores, build $(git rev-parse --short HEAD)"
for policy in round_robin tango; do
  migration=off; [ "$policy" = tango ] && migration=tango
  rm -rf "$WORK/db" "$WORK"/vol*
  config "$policy" off 0
  start
  "$BIN" bench --target "redis://127.0.0.1:$PORT" --benchmarks=ycsb_load --num="$NUM" \
    --ycsb_field_count=1 --ycsb_field_length=256 --threads=4 --pipeline=16 --noprogress >/dev/null
  stop
  config "$policy" "$migration" 1
  start
  "$BIN" bench --target "redis://127.0.0.1:$PORT" --benchmarks=ycsb_c --num="$NUM" \
    --ycsb_field_count=1 --ycsb_field_length=256 --reads=-1 --duration="$SECONDS_PER_RUN" \
    --threads="$THREADS" --noprogress --json="$WORK/$policy.json" >/dev/null
  info=$(redis-cli -p "$PORT" INFO engine 2>/dev/null | tr -d '\r' | grep '^engine_volume' || true)
  stop
  python3 - "$WORK/$policy.json" "$policy" "$info" <<'PY'
import json, sys
b = [x for x in json.load(open(sys.argv[1]))["benchmarks"] if x["name"] == "ycsb_c"][0]
print(f"{sys.argv[2]:<12} ycsb_c {b['ops_per_sec']:9.0f} ops/s  p99 {b['latency']['p99']:9.0f} us")
for line in sys.argv[3].splitlines():
    k, v = line.split(":", 1)
    f = dict(x.split("=") for x in v.split(","))
    print(f"  {k}: {f['files']} files, {f['ios']} I/Os since restart, heat {f['heat']}")
PY
done
