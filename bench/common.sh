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
