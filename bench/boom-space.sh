#!/usr/bin/env bash
# BOOM's hybrid update against append-only: segment space used by updates (the paper's
# "NVM space" experiment, docs/techniques/boom.md). Loads NUM records of VALUE bytes over
# BOOM, then UPDATES updates (YCSB A with no reads) from one client with zipfian keys of
# each constant in THETAS, with the hybrid update on and off, each on a fresh server;
# prints the segment bytes the updates appended and what the hybrid update saved.
#
# Usage: bench/boom-space.sh
# Environment: NUM (default 100000), VALUE (default 100), UPDATES (default 1000000),
# THETAS (default "0.5 0.99"; the generator takes constants below 1), SEGMENT_BYTES
# (default 67108864, the paper's 64 MiB; the hybrid update works within a segment, so
# larger segments save more), BOOM_DIR (default /dev/shm/terrace-boom-space).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
NUM="${NUM:-100000}"
VALUE="${VALUE:-100}"
UPDATES="${UPDATES:-1000000}"
THETAS="${THETAS:-0.5 0.99}"
SEGMENT_BYTES="${SEGMENT_BYTES:-67108864}"
BOOM_DIR="${BOOM_DIR:-/dev/shm/terrace-boom-space}"
WORK=$(mktemp -d)
cleanup() { stop; rm -rf "$WORK" "$BOOM_DIR"; }
trap cleanup EXIT
# shellcheck source=bench/common.sh
. "$ROOT/bench/common.sh"
BIN=$(terrace_bin)

echo "boom-space: $NUM records of $VALUE bytes, $UPDATES updates, 1 client, $SEGMENT_BYTES-byte segments, build $(git rev-parse --short HEAD), $(date -u +%FT%TZ)"
printf '%-6s %18s %18s %10s\n' theta "append-only bytes" "hybrid bytes" saved
for theta in $THETAS; do
  declare -A got=()
  for hybrid in 0 1; do
    rm -rf "$WORK/db" "$BOOM_DIR"
    "$BIN" serve --port 0 --dir "$WORK/db" --boom-socket "$WORK/b.sock" --boom-dir "$BOOM_DIR" \
      --boom-segments $((2147483648 / SEGMENT_BYTES)) --boom-segment-bytes "$SEGMENT_BYTES" \
      >"$WORK/serve.out" 2>&1 &
    PID=$!
    for _ in $(seq 100); do grep -q '^listening on' "$WORK/serve.out" 2>/dev/null && break; sleep 0.1; done
    "$BIN" bench --target "boom://$WORK/b.sock" --benchmarks=ycsb_load,ycsb_a --num="$NUM" \
      --reads="$UPDATES" --threads=1 --ycsb_field_count=1 --ycsb_field_length="$VALUE" \
      --ycsb_read_proportion=0 --ycsb_zipfian_constant="$theta" --boom_hybrid="$hybrid" \
      --noprogress >"$WORK/out-$theta-$hybrid.txt"
    stop
    got[$hybrid]=$(sed -n 's/^ycsb_a .*segment bytes appended \([0-9]*\).*/\1/p' "$WORK/out-$theta-$hybrid.txt")
    [ -n "${got[$hybrid]}" ] || { echo "no space figure in $WORK/out-$theta-$hybrid.txt" >&2; cat "$WORK/out-$theta-$hybrid.txt" >&2; exit 1; }
  done
  python3 -c "a,h=${got[0]},${got[1]}; print(f'{\"$theta\":<6} {a:>18} {h:>18} {100*(a-h)/a:>9.1f}%')"
done
