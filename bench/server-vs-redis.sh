#!/usr/bin/env bash
# Side-by-side redis-benchmark of `terrace serve` (WAL on, --fsync everysec) and Redis
# 7.0.15 (persistence off), alternating, median of ROUNDS runs, without and with -P 16.
#
#   bench/server-vs-redis.sh            # SET and GET, -n 1000000
#   REQUESTS=200000 ROUNDS=3 bench/server-vs-redis.sh
#   TESTS=hset,lpush,rpush,lpop,rpop,sadd,spop,zadd,zpopmin,lrange_100 bench/server-vs-redis.sh
#   PIPELINES=1 TESTS=hset,zadd bench/server-vs-redis.sh   # without pipelining only
#   CONTROL_ARGS="--block-cache-bytes 33554432" bench/server-vs-redis.sh
#
# With CONTROL_ARGS set, a second Terrace server started with those extra flags ("control")
# runs in the same rotation, so a setting's effect is measured in the same window.
#
# Rounds alternate the servers' order (listed, reversed, ...), and each run starts once
# every server has been idle for a second (at most 60 s), so that one server's
# background work left over from its run does not slow the next server's.
#
# Prints one line per (server, pipeline, test): median requests/s, p50 and p99 latency
# (ms), then Terrace's throughput as a fraction of Redis's: the ratio of the medians, and
# each round's ratio with their geometric mean. Installs redis-server and
# redis-tools if missing; builds the release binary unless TERRACE_BIN is set.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
REQUESTS="${REQUESTS:-1000000}"
ROUNDS="${ROUNDS:-3}"
CLIENTS="${CLIENTS:-50}"
TESTS="${TESTS:-set,get}"
PIPELINES="${PIPELINES:-1 16}"
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# shellcheck source=bench/common.sh
. "$ROOT/bench/common.sh"
ensure_redis
BIN=$(terrace_bin)

REDIS_PORT=$(free_port)
redis-server --port "$REDIS_PORT" --save "" --appendonly no --daemonize no \
  --dir "$WORK" --logfile "$WORK/redis.log" &
PIDS+=($!)
"$BIN" serve --port 0 --dir "$WORK/terrace" --fsync everysec >"$WORK/terrace.out" 2>&1 &
PIDS+=($!)
SERVERS="redis terrace"
if [ -n "${CONTROL_ARGS:-}" ]; then
  # shellcheck disable=SC2086 # CONTROL_ARGS is a list of flags
  "$BIN" serve --port 0 --dir "$WORK/control" --fsync everysec $CONTROL_ARGS >"$WORK/control.out" 2>&1 &
  PIDS+=($!)
  SERVERS="redis terrace control"
fi
listening_port() { # log file
  for _ in $(seq 100); do grep -q '^listening on' "$1" 2>/dev/null && break; sleep 0.1; done
  sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$1"
}
TERRACE_PORT=$(listening_port "$WORK/terrace.out")
CONTROL_PORT=
[ -n "${CONTROL_ARGS:-}" ] && CONTROL_PORT=$(listening_port "$WORK/control.out")
for _ in $(seq 50); do redis-cli -p "$REDIS_PORT" PING >/dev/null 2>&1 && break; sleep 0.1; done

echo "redis-benchmark -c $CLIENTS -n $REQUESTS -r 1000000 -d 100 -t $TESTS, median of $ROUNDS, $(nproc) cores"
echo "$(redis-server --version | cut -d' ' -f1-3); terrace $("$BIN" version | cut -d' ' -f2) (fsync everysec)"
[ -n "${CONTROL_ARGS:-}" ] && echo "control: terrace serve ... $CONTROL_ARGS"
RESULTS="$WORK/results.csv"
# CPU ticks (user + system) of every server process so far.
server_ticks() {
  local total=0 p
  for p in "${PIDS[@]}"; do
    total=$((total + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)))
  done
  echo "$total"
}
# Waits (at most 60 s) until the servers used at most one tick of CPU in a second: a
# server's flushes and compactions left over from its run would otherwise run during the
# next server's.
settle() {
  local before after
  for _ in $(seq 60); do
    before=$(server_ticks)
    sleep 1
    after=$(server_ticks)
    [ $((after - before)) -le 1 ] && return
  done
}
for pipeline in $PIPELINES; do
  for round in $(seq "$ROUNDS"); do
    # Odd rounds run the servers in the listed order, even rounds in reverse, so that
    # none always runs first or always after a particular other one.
    order=$SERVERS
    [ $((round % 2)) -eq 0 ] && order=$(echo "$SERVERS" | tr ' ' '\n' | tac | tr '\n' ' ')
    for server in $order; do
      settle
      case "$server" in
        redis) port=$REDIS_PORT ;;
        terrace) port=$TERRACE_PORT ;;
        control) port=$CONTROL_PORT ;;
      esac
      redis-benchmark -p "$port" -c "$CLIENTS" -n "$REQUESTS" -r 1000000 -d 100 -t "$TESTS" \
        -P "$pipeline" --csv 2>/dev/null | tail -n +2 | tr -d '"' \
        | awk -F, -v s="$server" -v p="$pipeline" -v r="$round" '{ print s "," p "," r "," $1 "," $2 "," $5 "," $7 }' \
        >>"$RESULTS"
    done
  done
done

python3 - "$RESULTS" <<'PY'
import csv, statistics, sys
rows = list(csv.reader(open(sys.argv[1])))
groups = {}
for server, pipeline, _round, test, rps, p50, p99 in rows:
    groups.setdefault((server, int(pipeline), test), []).append((float(rps), float(p50), float(p99)))
med = {}
print(f"{'server':8} {'-P':>3} {'test':12} {'rps':>10} {'p50 ms':>8} {'p99 ms':>8}")
for (server, pipeline, test), runs in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
    rps = statistics.median(r[0] for r in runs)
    p50 = statistics.median(r[1] for r in runs)
    p99 = statistics.median(r[2] for r in runs)
    med[(server, pipeline, test)] = rps
    print(f"{server:8} {pipeline:>3} {test:12} {rps:>10.0f} {p50:>8.3f} {p99:>8.3f}")
# Each round's ratio to Redis's run of the same round (run back to back, so drift of the
# machine between rounds cancels), and their geometric mean, beside the ratio of medians.
by_round = {}
for server, pipeline, rnd, test, rps, _p50, _p99 in rows:
    by_round[(server, int(pipeline), test, rnd)] = float(rps)
for (server, pipeline, test), rps in sorted(med.items()):
    if server in ("terrace", "control") and ("redis", pipeline, test) in med:
        pairs = [v / by_round[("redis", p, t, r)]
                 for (s, p, t, r), v in sorted(by_round.items())
                 if (s, p, t) == (server, pipeline, test) and ("redis", p, t, r) in by_round]
        geo = statistics.geometric_mean(pairs) if pairs else float("nan")
        print(f"{server}/redis -P {pipeline} {test}: {rps / med[('redis', pipeline, test)]:.2f}x"
              f"  (rounds {' '.join(f'{x:.2f}' for x in pairs)}; geometric mean {geo:.2f})")
PY
