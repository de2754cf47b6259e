#!/usr/bin/env bash
# Server CPU per request of two (or more) `terrace serve` binaries under the same
# redis-benchmark run, alternating, each on a fresh database: a steadier figure than
# requests/s on a shared two-core machine, where the client and the server's background
# threads move the rate from run to run.
#
#   bench/server-cpu-ab.sh OLD_BIN NEW_BIN
#   TEST=get REQUESTS=1000000 ROUNDS=5 PIPELINE=16 bench/server-cpu-ab.sh old new
#
# Rounds alternate the binaries' order (given, reversed, given, ...), and each run starts
# after `sync`, so that no binary pays for another's writeback or always runs first.
# Per run: requests/s, the server process's CPU (user + system, every thread, read from
# /proc before and after the run) per request in microseconds, the part of it the
# connection threads spent (the rest is flushes, compactions, reader threads), and its
# minor page faults per request; then each binary's means. A GET run reads a database first filled by as
# many SETs (not counted); PREFILL=TEST fills first with that test for any test (PREFILL=set:
# SETs overwriting keys the tables already hold, with compaction running; PREFILL=zadd
# before TEST=zpopmin: pops of a set that has members), PREFILL=none never. The fill
# runs with the same clients and pipeline as the measured test.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
[ $# -ge 2 ] || { echo "usage: $0 BIN BIN [BIN ...]" >&2; exit 2; }
TEST="${TEST:-set}"
REQUESTS="${REQUESTS:-1000000}"
ROUNDS="${ROUNDS:-5}"
PIPELINE="${PIPELINE:-16}"
CLIENTS="${CLIENTS:-50}"
if [ "$TEST" = get ]; then PREFILL="${PREFILL:-set}"; else PREFILL="${PREFILL:-none}"; fi
WORK=$(mktemp -d)
PID=
# shellcheck source=bench/common.sh
. "$ROOT/bench/common.sh"
trap 'stop; rm -rf "$WORK"' EXIT
ensure_redis
TICK=$(getconf CLK_TCK)
RESULTS="$WORK/results"
# Fields 10 (minor faults) and 14 + 15 (user and system ticks) of /proc/PID/stat, then
# the ticks of the connection threads (`terrace-net-*`, the foreground) alone.
usage() {
  local net=0 t
  for t in /proc/"$1"/task/*; do
    case "$(cat "$t/comm" 2>/dev/null)" in
      terrace-net*) net=$((net + $(awk '{ print $14 + $15 }' "$t/stat" 2>/dev/null || echo 0))) ;;
    esac
  done
  echo "$(awk '{ print $10, $14 + $15 }' "/proc/$1/stat") $net"
}
for round in $(seq "$ROUNDS"); do
  # Odd rounds run the binaries in the order given, even rounds in reverse, so that none
  # always runs first (or always after a particular other one).
  order=("$@")
  if [ $((round % 2)) -eq 0 ]; then
    order=()
    for ((i = $#; i >= 1; i--)); do order+=("${!i}"); done
  fi
  for bin in "${order[@]}"; do
    rm -rf "$WORK/data"
    # The last run's files reach the disk now, not during this run.
    sync
    port=$(free_port)
    "$bin" serve --dir "$WORK/data" --fsync everysec --port "$port" >"$WORK/server.log" 2>&1 &
    PID=$!
    for _ in $(seq 100); do redis-cli -p "$port" PING 2>/dev/null | grep -q PONG && break; sleep 0.1; done
    if [ "$PREFILL" != none ]; then
      redis-benchmark -p "$port" -c "$CLIENTS" -n "$REQUESTS" -r 1000000 -d 100 -t "$PREFILL" \
        -P "$PIPELINE" -q >/dev/null 2>&1
    fi
    before=$(usage "$PID")
    rps=$(redis-benchmark -p "$port" -c "$CLIENTS" -n "$REQUESTS" -r 1000000 -d 100 -t "$TEST" \
      -P "$PIPELINE" --csv 2>/dev/null | tail -n 1 | cut -d, -f2 | tr -d '"')
    after=$(usage "$PID")
    stop
    echo "$bin $round $rps $before $after" >>"$RESULTS"
  done
done
python3 - "$RESULTS" "$TICK" "$REQUESTS" "$TEST" "$PIPELINE" <<'PY'
import sys, statistics
path, tick, n, test, pipeline = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
print(f"redis-benchmark -c 50 -n {n} -r 1000000 -d 100 -t {test} -P {pipeline}")
runs = {}
for line in open(path):
    binary, rnd, rps, f0, t0, n0, f1, t1, n1 = line.split()
    cpu = (int(t1) - int(t0)) / tick / n * 1e6
    net = (int(n1) - int(n0)) / tick / n * 1e6
    faults = (int(f1) - int(f0)) / n
    runs.setdefault(binary, []).append((float(rps), cpu, net))
    print(f"{binary:32} round {rnd} {float(rps):>10.0f} req/s  {cpu:5.2f} us CPU/req"
          f" ({net:5.2f} connection threads)  {faults:6.3f} faults/req")
for binary, r in runs.items():
    print(f"{binary:32} mean {statistics.mean(x[0] for x in r):>10.0f} req/s  "
          f"{statistics.mean(x[1] for x in r):5.2f} us CPU/req"
          f" ({statistics.mean(x[2] for x in r):5.2f} connection threads)")
PY
