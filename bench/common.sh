# Shared by the server benchmark scripts (sourced, not run): installs Redis and its tools
# when missing, builds (or takes TERRACE_BIN) the release `terrace` binary, finds free ports.
# Expects ROOT (the repository root) to be set.

ensure_redis() {
  if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null \
    || ! command -v redis-benchmark >/dev/null; then
    local sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq redis-server redis-tools >/dev/null
  fi
}

# Prints the terrace binary to use, building it unless TERRACE_BIN is set.
terrace_bin() {
  if [ -z "${TERRACE_BIN:-}" ]; then
    (cd "$ROOT" && cargo build -q --release -p terrace-cli)
    echo "$ROOT/target/release/terrace"
  else
    echo "$TERRACE_BIN"
  fi
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# The one background server a script runs at a time: PID, and `stop` to end it.
PID=""
stop() { if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; PID=""; fi; }

# Starts redis-server on a free port in $WORK/redis with the persistence flags given;
# sets PORT and PID.
start_redis_server() {
  PORT=$(free_port)
  rm -rf "$WORK/redis"; mkdir -p "$WORK/redis"
  redis-server --port "$PORT" "$@" --daemonize no --dir "$WORK/redis" \
    --logfile "$WORK/redis.log" &
  PID=$!
  for _ in $(seq 50); do redis-cli -p "$PORT" PING >/dev/null 2>&1 && return; sleep 0.1; done
  echo "redis-server did not start" >&2; exit 1
}
