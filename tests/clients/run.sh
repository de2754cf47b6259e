#!/usr/bin/env bash
# Real Redis clients against `terrace serve`: redis-cli (including --pipe),
# redis-benchmark (zero errors), redis-py's own test suite (the selection in
# redis-py-selection.txt), and three servers sharded behind nutcracker.
#
# Installs what it needs (Debian: redis-tools, nutcracker, python3-venv; PyPI: the pinned
# redis sdist and pytest) into a cache under target/, so a second run is fast.
# TERRACE_BIN names the binary (default: target/debug/terrace, built if missing).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
CACHE="${TERRACE_CLIENTS_CACHE:-$ROOT/target/clients}"
mkdir -p "$CACHE"
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  # Servers started inside $(start_server ...) record their pids in files.
  for f in "$WORK"/*.pid; do [ -e "$f" ] && kill "$(cat "$f")" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

step() { echo "== clients: $*"; }

# --- installs (idempotent) -------------------------------------------------------------
need_apt=()
command -v redis-cli >/dev/null || need_apt+=(redis-tools)
command -v nutcracker >/dev/null || [ -x /usr/sbin/nutcracker ] || need_apt+=(nutcracker)
python3 -c 'import ensurepip' 2>/dev/null || need_apt+=(python3-venv)
if [ ${#need_apt[@]} -gt 0 ]; then
  step "apt-get install ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
NUTCRACKER=$(command -v nutcracker || echo /usr/sbin/nutcracker)

SELECTION="$ROOT/tests/clients/redis-py-selection.txt"
RPY_VERSION=$(awk '$1 == "version" { print $2 }' "$SELECTION")
VENV="$CACHE/venv-redis-$RPY_VERSION"
if [ ! -x "$VENV/bin/pytest" ]; then
  step "python venv with redis==$RPY_VERSION"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q "redis==$RPY_VERSION" pytest pytest-asyncio pytest-timeout packaging
fi
SDIST="$CACHE/redis-$RPY_VERSION"
if [ ! -d "$SDIST/tests" ]; then
  step "redis-py $RPY_VERSION source package (for its tests)"
  "$VENV/bin/pip" download -q --no-deps --no-binary :all: "redis==$RPY_VERSION" -d "$CACHE"
  tar -xzf "$CACHE/redis-$RPY_VERSION.tar.gz" -C "$CACHE"
fi

BIN="${TERRACE_BIN:-$ROOT/target/debug/terrace}"
if [ ! -x "$BIN" ]; then
  step "cargo build -p terrace-cli"
  cargo build -q -p terrace-cli
fi

# Starts `terrace serve` on a free port with data in $1; prints the port.
start_server() {
  local dir=$1; shift
  mkdir -p "$dir"
  "$BIN" serve --port 0 --dir "$dir" "$@" >"$dir.out" 2>&1 &
  echo $! >"$dir.pid"
  for _ in $(seq 100); do
    if grep -q '^listening on ' "$dir.out" 2>/dev/null; then
      sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$dir.out"
      return
    fi
    sleep 0.1
  done
  echo "server did not start:" >&2; cat "$dir.out" >&2; exit 1
}

PORT=$(start_server "$WORK/main")
CLI=(redis-cli -p "$PORT")

# --- redis-cli ---------------------------------------------------------------------------
step "redis-cli"
[ "$("${CLI[@]}" PING)" = PONG ]
[ "$("${CLI[@]}" SET greeting hello EX 100)" = OK ]
[ "$("${CLI[@]}" GET greeting)" = hello ]
[ "$("${CLI[@]}" INCRBY counter 5)" = 5 ]
"${CLI[@]}" INFO server | grep -q '^redis_version:7\.'

step "redis-cli --pipe (10000 commands)"
awk 'BEGIN { for (i = 0; i < 10000; i++) {
  k = "pipe:" i; v = "value-" i;
  printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", length(k), k, length(v), v } }' \
  | "${CLI[@]}" --pipe | tee "$WORK/pipe.txt"
grep -q 'errors: 0, replies: 10000' "$WORK/pipe.txt"
[ "$("${CLI[@]}" GET pipe:9999)" = value-9999 ]

# --- redis-benchmark (it exits on the first error reply) ---------------------------
step "redis-benchmark"
redis-benchmark -p "$PORT" -t ping_inline,ping_mbulk,set,get,incr,mset -r 10000 -n 20000 -q \
  2>&1 | tr '\r' '\n' | grep -v '^ *$' | grep -v 'rps=' | tee "$WORK/bench.txt"
if grep -qiE 'error|ERR ' "$WORK/bench.txt"; then
  echo "redis-benchmark reported errors" >&2; exit 1
fi
[ "$(grep -c 'requests per second' "$WORK/bench.txt")" = 6 ]

# --- redis-py's own tests ----------------------------------------------------------------
step "redis-py $RPY_VERSION tests"
"${CLI[@]}" FLUSHALL >/dev/null
mapfile -t files < <(awk '$1 == "file" { print $2 }' "$SELECTION")
keyword=$(awk '$1 == "keyword" { $1 = ""; sub(/^ /, ""); printf "%s%s", sep, $0; sep = " or " }' "$SELECTION")
mapfile -t deselect < <(awk '$1 == "deselect" { print "--deselect=" $2 }' "$SELECTION")
(cd "$SDIST" && "$VENV/bin/python" -m pytest "${files[@]}" -p no:cacheprovider -o addopts="" \
  -m "not onlycluster and not redismod" --redis-url="redis://127.0.0.1:$PORT/0" \
  --timeout 60 -q -W ignore -k "$keyword" "${deselect[@]}") | tail -5

# --- nutcracker: three servers, consistent hashing -------------------------------------
step "nutcracker over three servers"
shard_ports=()
for i in 1 2 3; do shard_ports+=("$(start_server "$WORK/shard$i")"); done
PROXY_PORT=$((20000 + RANDOM % 20000))
cat >"$WORK/nutcracker.yml" <<YML
terrace:
  listen: 127.0.0.1:$PROXY_PORT
  hash: fnv1a_64
  distribution: ketama
  redis: true
  auto_eject_hosts: false
  servers:
   - 127.0.0.1:${shard_ports[0]}:1 shard1
   - 127.0.0.1:${shard_ports[1]}:1 shard2
   - 127.0.0.1:${shard_ports[2]}:1 shard3
YML
"$NUTCRACKER" -c "$WORK/nutcracker.yml" -o "$WORK/nutcracker.log" &
PIDS+=($!)
for _ in $(seq 50); do redis-cli -p "$PROXY_PORT" PING >/dev/null 2>&1 && break; sleep 0.1; done
"$VENV/bin/python" - "$PROXY_PORT" "${shard_ports[@]}" <<'PY'
import sys
import redis
proxy, shards = int(sys.argv[1]), [int(p) for p in sys.argv[2:]]
# nutcracker forwards only data commands: no CLIENT SETINFO on connect.
r = redis.Redis(port=proxy, protocol=2, lib_name=None, lib_version=None)
for i in range(3000):
    assert r.set(f"user:{i}", f"v{i}")
for i in range(3000):
    assert r.get(f"user:{i}") == f"v{i}".encode(), i
sizes = [redis.Redis(port=p).dbsize() for p in shards]
print("keys per shard:", sizes)
assert sum(sizes) == 3000 and all(s > 0 for s in sizes), sizes
PY

step "all passed"
