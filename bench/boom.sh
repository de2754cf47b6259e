#!/usr/bin/env bash
# BOOM (docs/techniques/boom.md) against the RESP path and Redis: PUT (ycsb_load) and GET
# (ycsb_c) latency and throughput, and YCSB A and B, for each value size and client count,
# one request in flight per client (no pipelining), on one host.
#
# Targets, each on a freshly started server per value size:
#   boom        terrace serve --boom-socket, BOOM over the shared-memory ring
#   boom2       the same server, the two-phase baseline (a metadata round trip first)
#   boom+wire   BOOM with WIRE_US microseconds of modelled network added per round trip
#   boom2+wire  the two-phase baseline with the same wire
#   boom+tcp    BOOM over loopback TCP (--boom-port): entries and values in the messages
#   resp        the same terrace serve over RESP on loopback TCP (fsync everysec)
#   redis       Redis 7.0.15 over loopback TCP (appendonly yes, appendfsync everysec)
# The BOOM region is on /dev/shm (BOOM_DIR): persisting it costs what persistent memory's
# cache-line write-backs would, not a disk flush (and survives no power cut).
#
# Usage: bench/boom.sh
# Environment: SIZES (default "32 1024 16384"), CLIENTS (default "1 4 16"), NUM (records,
# default 20000), OPS (operations per client per benchmark, default 5000), WIRE_US
# (default 2), BOOM_DIR (default /dev/shm/terrace-boom-bench), TARGETS.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SIZES="${SIZES:-32 1024 16384}"
CLIENTS="${CLIENTS:-1 4 16}"
NUM="${NUM:-20000}"
OPS="${OPS:-5000}"
WIRE_US="${WIRE_US:-2}"
BOOM_DIR="${BOOM_DIR:-/dev/shm/terrace-boom-bench}"
TARGETS="${TARGETS:-boom boom2 boom+wire boom2+wire resp redis}"
WORK=$(mktemp -d)
cleanup() { stop; rm -rf "$WORK" "$BOOM_DIR"; }
trap cleanup EXIT

# shellcheck source=bench/common.sh
. "$ROOT/bench/common.sh"
ensure_redis
BIN=$(terrace_bin)

start_redis() { start_redis_server --save "" --appendonly yes --appendfsync everysec; }

start_terrace() {
  rm -rf "$WORK/terrace" "$BOOM_DIR"
  "$BIN" serve --port 0 --dir "$WORK/terrace" --fsync everysec \
    --boom-socket "$WORK/boom.sock" --boom-port 0 --boom-dir "$BOOM_DIR" --boom-segments 64 \
    --boom-segment-bytes 16777216 >"$WORK/terrace.out" 2>&1 &
  PID=$!
  for _ in $(seq 100); do grep -q '^listening on' "$WORK/terrace.out" 2>/dev/null && break; sleep 0.1; done
  PORT=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$WORK/terrace.out")
  BOOM_TCP=$(sed -n 's/^boom tcp on //p' "$WORK/terrace.out")
  [ -n "$PORT" ] || { echo "terrace serve did not start" >&2; exit 1; }
}

echo "boom: $(nproc) cores, sizes $SIZES, clients $CLIENTS, $NUM records, $OPS ops per client," \
  "wire $WIRE_US us, build $(git rev-parse --short HEAD), $(date -u +%FT%TZ)"
echo "$(redis-server --version | cut -d' ' -f1-3) (appendfsync everysec); terrace serve --fsync everysec"
RESULTS="$WORK/results.tsv"
: >"$RESULTS"
for size in $SIZES; do
  for t in $TARGETS; do
    case "$t" in
      redis) start_redis; url="redis://127.0.0.1:$PORT"; extra=() ;;
      resp) start_terrace; url="redis://127.0.0.1:$PORT"; extra=() ;;
      boom) start_terrace; url="boom://$WORK/boom.sock"; extra=() ;;
      boom2) start_terrace; url="boom2://$WORK/boom.sock"; extra=() ;;
      boom+wire) start_terrace; url="boom://$WORK/boom.sock"; extra=(--boom_rtt_us="$WIRE_US") ;;
      boom2+wire) start_terrace; url="boom2://$WORK/boom.sock"; extra=(--boom_rtt_us="$WIRE_US") ;;
      boom+tcp) start_terrace; url="boom+tcp://$BOOM_TCP"; extra=() ;;
      *) echo "unknown target $t" >&2; exit 1 ;;
    esac
    for c in $CLIENTS; do
      json="$WORK/$t-$size-$c.json"
      "$BIN" bench --target "$url" "${extra[@]}" --benchmarks=ycsb_load,ycsb_c,ycsb_a,ycsb_b \
        --num="$NUM" --reads="$OPS" --threads="$c" --ycsb_field_count=1 \
        --ycsb_field_length="$size" --noprogress --json="$json" >"$WORK/$t-$size-$c.txt"
      python3 - "$json" "$t" "$size" "$c" >>"$RESULTS" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
for b in doc["benchmarks"]:
    l = b["latency"]
    print("\t".join(str(x) for x in [sys.argv[2], sys.argv[3], sys.argv[4], b["name"],
        round(b["ops_per_sec"]), round(l["p50"], 2), round(l["p99"], 2)]))
EOF
    done
    stop
  done
done

python3 - "$RESULTS" <<'EOF'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
cell = {(t, s, c, b): (float(ops), float(p50), float(p99)) for t, s, c, b, ops, p50, p99 in rows}
targets = []
for r in rows:
    if r[0] not in targets:
        targets.append(r[0])
keys = sorted({(int(s), int(c), b) for _, s, c, b, *_ in rows},
              key=lambda k: (k[0], k[1], ["ycsb_load", "ycsb_c", "ycsb_a", "ycsb_b"].index(k[2])))
print(f"{'size':>6} {'cli':>4} {'bench':<10} " + " ".join(f"{t:>22}" for t in targets)
      + "   p50 boom/resp  boom/boom2  (wire) boom/boom2")
for s, c, b in keys:
    line = f"{s:>6} {c:>4} {b:<10} "
    for t in targets:
        v = cell.get((t, str(s), str(c), b))
        line += f"{'-':>22} " if v is None else f"{v[0]:>8.0f} {v[1]:>6.1f} {v[2]:>6.1f} "
    def ratio(a, z):
        x, y = cell.get((a, str(s), str(c), b)), cell.get((z, str(s), str(c), b))
        return f"{x[1] / y[1]:>10.2f}" if x and y and y[1] > 0 else f"{'-':>10}"
    line += ratio("boom", "resp") + "  " + ratio("boom", "boom2") + "  " + ratio("boom+wire", "boom2+wire")
    print(line)
print("cells: ops/s, p50 us, p99 us")
EOF
