#!/usr/bin/env bash
# Instructions per request of `terrace serve` (and of Redis, for scale) under valgrind's
# callgrind: a count that, unlike requests/s, does not move with the other load on this
# machine, so a change to the per-request path can be measured in one run.
#
#   bench/server-callgrind.sh BIN [BIN2 ...]
#   TESTS=lpush,hset,zadd REQUESTS=5000 bench/server-callgrind.sh old new
#   PIPELINE=16 TESTS=set,get bench/server-callgrind.sh new
#
# For each binary and test: a fresh server under callgrind, redis-benchmark -c 1 -P PIPELINE
# (default 1) with REQUESTS requests (one client, so each request, or each pipeline, is a
# group of its own and the count does not depend on how requests happened to batch), then the instructions callgrind counted
# over those requests (every thread of the server) divided by REQUESTS. The fill before
# counting (WARMUP requests of the same test) keeps a collection's creation out of it; a
# pop test's fill is its push test (at least REQUESTS of them), so that every counted pop
# finds something to pop.
# Redis runs the same way unless REDIS=0. What the count leaves out: cache misses and
# system calls (the kernel's side of a request), so it measures code paths, not speed.
# With BUSIEST=1 only the busiest thread counts (the shard thread for Terrace, the main
# thread for Redis): a flush or compaction that happens to fall inside the counted
# requests moves the whole-process count by 5-10% from run to run, the busiest
# thread's by 1-3%. SERVER_ARGS adds flags to Terrace's command line (e.g.
# `--write-buffer-size 4194304`, so that memtables fill and switch during the fill).
# CLIENTS (default 1) sets the counted run's connections: with 50, as in
# bench/server-vs-redis.sh, requests execute in groups, and the count is per request of
# a group (the warm-up still runs on one connection).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
REQUESTS="${REQUESTS:-5000}"
WARMUP="${WARMUP:-2000}"
TESTS="${TESTS:-set,get,lpush,lpop,sadd,spop,hset,zadd,zpopmin}"
REDIS="${REDIS:-1}"
PIPELINE="${PIPELINE:-1}"
CLIENTS="${CLIENTS:-1}"
BUSIEST="${BUSIEST:-0}"
SERVER_ARGS="${SERVER_ARGS:-}"
VG_THREADS=""
[ "$BUSIEST" = 1 ] && VG_THREADS="--separate-threads=yes"
[ $# -ge 1 ] || { echo "usage: $0 BIN [BIN2 ...]" >&2; exit 2; }
command -v valgrind >/dev/null || {
  s=""; [ "$(id -u)" = 0 ] || s=sudo
  $s apt-get update -qq && DEBIAN_FRONTEND=noninteractive $s apt-get install -y -qq valgrind >/dev/null
}
# shellcheck source=bench/common.sh
. "$ROOT/bench/common.sh"
ensure_redis
WORK=$(mktemp -d)
trap 'stop; rm -rf "$WORK"' EXIT

# Runs the server command "$@" under callgrind, then TEST; prints instructions/request.
measure() { # test, command...
  local test=$1; shift
  rm -rf "$WORK/data" "$WORK"/cg.*; mkdir -p "$WORK/data"
  local port; port=$(free_port)
  # shellcheck disable=SC2086
  valgrind --tool=callgrind $VG_THREADS --callgrind-out-file="$WORK/cg.%p" "$@" --port "$port" \
    >"$WORK/server.log" 2>&1 &
  PID=$!
  for _ in $(seq 300); do redis-cli -p "$port" PING 2>/dev/null | grep -q PONG && break; sleep 0.2; done
  # A pop test pops what its push test pushed (redis-benchmark's lpop pops the list lpush
  # fills): its warm-up is the push, at least as many as the pops counted.
  local fill=$test warm=$WARMUP
  case $test in
    lpop | rpop) fill=lpush ;;
    spop) fill=sadd ;;
    zpopmin) fill=zadd ;;
  esac
  if [ "$fill" != "$test" ] && [ "$warm" -lt "$REQUESTS" ]; then warm=$REQUESTS; fi
  if [ "$warm" -gt 0 ]; then
    redis-benchmark -p "$port" -c 1 -n "$warm" -r 1000000 -d 100 -t "$fill" -P "$PIPELINE" -q >/dev/null 2>&1
  fi
  callgrind_control -z "$PID" >/dev/null 2>&1
  redis-benchmark -p "$port" -c "$CLIENTS" -n "$REQUESTS" -r 1000000 -d 100 -t "$test" -P "$PIPELINE" -q >/dev/null 2>&1
  callgrind_control -d "$PID" >/dev/null 2>&1
  # The dump after the reset holds only the counted requests: its totals line (per
  # thread with BUSIEST=1: the largest).
  local ir
  if [ "$BUSIEST" = 1 ]; then
    ir=$(for d in "$WORK"/cg.*.1-*; do sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$d" | head -1; done |
      sort -n | tail -1)
  else
    local dump; dump=$(ls -t "$WORK"/cg.*.* 2>/dev/null | head -1)
    ir=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$dump" | head -1)
  fi
  stop
  python3 -c "print(f'{$ir / $REQUESTS:10.0f}')"
}

printf '%-10s' test
[ "$REDIS" = 1 ] && printf '%16s' redis
for bin in "$@"; do printf '%16s' "$(basename "$bin")"; done
echo "   (instructions per request, -c $CLIENTS -P $PIPELINE, $REQUESTS requests after $WARMUP)"
for test in ${TESTS//,/ }; do
  printf '%-10s' "$test"
  if [ "$REDIS" = 1 ]; then
    printf '%16s' "$(measure "$test" redis-server --save "" --appendonly no --daemonize no \
      --dir "$WORK/data" --logfile "$WORK/redis.log")"
  fi
  for bin in "$@"; do
    # shellcheck disable=SC2086
    printf '%16s' "$(measure "$test" "$bin" serve --dir "$WORK/data" --fsync everysec $SERVER_ARGS)"
  done
  echo
done
