#!/usr/bin/env bash
# Whose CPU bounds a redis-benchmark run: the server's or the benchmark client's. On a
# machine of two cores the single-threaded client and the server share it, so a ratio of
# requests/s says little about the server alone; this prints, per test, the CPU each
# process used (in cores: CPU seconds over wall seconds) beside the requests/s, for Redis
# and for `terrace serve` in turn.
#
#   bench/server-cpu.sh
#   TESTS=hset,zadd,get REQUESTS=200000 PIPELINE=1 TERRACE_BIN=target/release/terrace bench/server-cpu.sh
#   REDIS=0 SERVER_ARGS="--threads 2" PIPELINE=16 TESTS=set,get bench/server-cpu.sh
#
# Each server runs on a fresh database and takes the tests in order. Server CPU is its
# process's user and system time over the whole test; client CPU is redis-benchmark's
# over the test's middle (from 0.3 s in until 0.3 s before the end of the shortest
# expected run, sampled from /proc), so that its start-up and the last stragglers do not
# count. A server near 1.0 cores with the client below it bounds the run; a client near
# 1.0 with the server below means the run measures the client.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
TESTS="${TESTS:-hset,zadd,get}"
REQUESTS="${REQUESTS:-200000}"
PIPELINE="${PIPELINE:-1}"
CLIENTS="${CLIENTS:-50}"
# Extra `terrace serve` arguments (e.g. "--threads 2"); REDIS=0 skips Redis.
read -r -a SERVER_ARGS <<<"${SERVER_ARGS:-}"
REDIS="${REDIS:-1}"
WORK=$(mktemp -d)
# shellcheck source=bench/common.sh
. "$ROOT/bench/common.sh"
trap 'stop; rm -rf "$WORK"' EXIT
ensure_redis
BIN=$(terrace_bin)

# CPU ticks (user + system) of process $1.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

# Runs test $1 against port $2 (server PID $3); prints server cores, client cores, rps.
one() {
  local test=$1 port=$2 spid=$3
  local s0 t0 s1 t1 b0 bt0 b1 bt1 bpid
  s0=$(ticks "$spid"); t0=$(date +%s.%N)
  redis-benchmark -p "$port" -c "$CLIENTS" -n "$REQUESTS" -r 1000000 -d 100 -t "$test" \
    -P "$PIPELINE" -q >"$WORK/rb.out" 2>&1 &
  bpid=$!
  sleep 0.3
  b0=$(ticks "$bpid"); bt0=$(date +%s.%N)
  sleep 1
  b1=$(ticks "$bpid" 2>/dev/null || echo "$b0"); bt1=$(date +%s.%N)
  wait "$bpid"
  s1=$(ticks "$spid"); t1=$(date +%s.%N)
  local rps
  rps=$(tr '\r' '\n' <"$WORK/rb.out" | sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p' | tail -1)
  python3 -c "print(f'{($s1-$s0)/$hz/($t1-$t0):.2f} {($b1-$b0)/$hz/($bt1-$bt0):.2f} {float(\"${rps:-0}\"):.0f}')"
}

echo "redis-benchmark -c $CLIENTS -n $REQUESTS -r 1000000 -d 100 -P $PIPELINE, $(nproc) cores"
echo "(cores: CPU seconds per wall second; client CPU sampled over one second mid-run)"
printf '%-10s %-8s %8s %8s %10s\n' test server server client "req/s"
servers=terrace
[ "$REDIS" = 0 ] || servers="redis terrace"
for server in $servers; do
  if [ "$server" = redis ]; then
    start_redis_server --save "" --appendonly no
  else
    PORT=$(free_port)
    rm -rf "$WORK/terrace"
    "$BIN" serve --dir "$WORK/terrace" --port "$PORT" --fsync everysec "${SERVER_ARGS[@]}" >"$WORK/terrace.log" 2>&1 &
    PID=$!
    for _ in $(seq 100); do redis-cli -p "$PORT" PING >/dev/null 2>&1 && break; sleep 0.1; done
  fi
  for test in ${TESTS//,/ }; do
    read -r sc cc rps < <(one "$test" "$PORT" "$PID")
    printf '%-10s %-8s %8s %8s %10s\n' "$test" "$server" "$sc" "$cc" "$rps"
  done
  stop
done
