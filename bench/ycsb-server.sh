#!/usr/bin/env bash
# YCSB over RESP: `terrace bench --target` runs ycsb_load and workloads A-F against Redis
# 7.0.15 (persistence off) and `terrace serve` (WAL on, --fsync everysec), alternating,
# each run on a freshly started, empty server; median of ROUNDS runs.
#
#   bench/ycsb-server.sh                                  # --num=1000000 --reads=1000000
#   NUM=100000 READS=100000 ROUNDS=3 bench/ycsb-server.sh
#   THREADS=8 PIPELINE=16 bench/ycsb-server.sh            # connections, commands in flight
#
# Prints one line per benchmark: median ops/sec of each server with the spread (min-max)
# of its runs, Terrace/Redis, and median p99 latency (us) of each. Redis has no ordered
# range read, so its ycsb_e is "unsupported". Installs redis-server if missing; builds
# the release binary unless TERRACE_BIN is set.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
NUM="${NUM:-1000000}"
READS="${READS:-1000000}"
ROUNDS="${ROUNDS:-3}"
THREADS="${THREADS:-4}"
PIPELINE="${PIPELINE:-1}"
BENCHMARKS=ycsb_load,ycsb_a,ycsb_b,ycsb_c,ycsb_d,ycsb_e,ycsb_f
WORK=$(mktemp -d)
cleanup() { stop; rm -rf "$WORK"; }
trap cleanup EXIT

# shellcheck source=bench/common.sh
. "$ROOT/bench/common.sh"
ensure_redis
BIN=$(terrace_bin)

start_redis() { start_redis_server --save "" --appendonly no; }

start_terrace() {
  rm -rf "$WORK/terrace"
  "$BIN" serve --port 0 --dir "$WORK/terrace" --fsync everysec >"$WORK/terrace.out" 2>&1 &
  PID=$!
  for _ in $(seq 100); do grep -q '^listening on' "$WORK/terrace.out" 2>/dev/null && break; sleep 0.1; done
  PORT=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$WORK/terrace.out")
  [ -n "$PORT" ] || { echo "terrace serve did not start" >&2; exit 1; }
}

echo "terrace bench --target redis://127.0.0.1:PORT --benchmarks=$BENCHMARKS --num=$NUM --reads=$READS --threads=$THREADS --pipeline=$PIPELINE, median of $ROUNDS, $(nproc) cores"
echo "$(redis-server --version | cut -d' ' -f1-3) (persistence off); terrace $("$BIN" version | cut -d' ' -f2) (fsync everysec)"
for round in $(seq "$ROUNDS"); do
  for server in redis terrace; do
    "start_$server"
    "$BIN" bench --target "redis://127.0.0.1:$PORT" --benchmarks="$BENCHMARKS" \
      --num="$NUM" --reads="$READS" --threads="$THREADS" --pipeline="$PIPELINE" --noprogress \
      --json="$WORK/$server-$round.json" >"$WORK/$server-$round.txt"
    stop
  done
done

python3 - "$WORK" "$ROUNDS" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
names = "ycsb_load ycsb_a ycsb_b ycsb_c ycsb_d ycsb_e ycsb_f".split()
runs = {}
for server in ("redis", "terrace"):
    for r in range(1, rounds + 1):
        for b in json.load(open(f"{work}/{server}-{r}.json"))["benchmarks"]:
            runs.setdefault((server, b["name"]), []).append((b["ops_per_sec"], b["latency"]["p99"]))
def cell(server, name):
    xs = runs.get((server, name))
    if not xs:
        return None, f"{'unsupported':>22}", f"{'-':>8}"
    ops = [x[0] for x in xs]
    med = statistics.median(ops)
    return med, f"{med:>9.0f} ({min(ops):.0f}-{max(ops):.0f})".rjust(22), f"{statistics.median(x[1] for x in xs):>8.1f}"
print(f"{'benchmark':10} {'redis ops/sec (spread)':>22} {'terrace ops/sec (spread)':>24} {'t/r':>6} {'redis p99':>9} {'terrace p99':>11}")
for name in names:
    rm, rc, rp = cell("redis", name)
    tm, tc, tp = cell("terrace", name)
    ratio = f"{tm / rm:.2f}" if rm and tm else "-"
    print(f"{name:10} {rc} {tc:>24} {ratio:>6} {rp:>9} {tp:>11}")
PY
