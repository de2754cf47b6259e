#!/usr/bin/env bash
# A/B of two `terrace serve` binaries under redis-benchmark: rounds alternate between
# them, each on a fresh database, so a change is measured against its base in the same
# window of this noisy machine.
#
#   bench/server-ab.sh OLD_BIN NEW_BIN
#   TESTS=set,get,zadd REQUESTS=200000 ROUNDS=3 PIPELINE=1 bench/server-ab.sh old new
#
# Prints each round's requests/s per test for both binaries, then new/old per round and
# their geometric mean.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OLD=${1:?usage: bench/server-ab.sh OLD_BIN NEW_BIN}
NEW=${2:?usage: bench/server-ab.sh OLD_BIN NEW_BIN}
TESTS="${TESTS:-set,get}"
REQUESTS="${REQUESTS:-200000}"
ROUNDS="${ROUNDS:-3}"
PIPELINE="${PIPELINE:-1}"
CLIENTS="${CLIENTS:-50}"
WORK=$(mktemp -d)
PID=
cleanup() {
  [ -n "$PID" ] && kill "$PID" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# shellcheck source=bench/common.sh
. "$ROOT/bench/common.sh"
ensure_redis

echo "redis-benchmark -c $CLIENTS -n $REQUESTS -r 1000000 -d 100 -t $TESTS -P $PIPELINE, $ROUNDS rounds, $(nproc) cores"
echo "old: $OLD ($("$OLD" version | cut -d' ' -f2)); new: $NEW ($("$NEW" version | cut -d' ' -f2))"
RESULTS="$WORK/results.csv"
for round in $(seq "$ROUNDS"); do
  for which in old new; do
    bin=$OLD
    [ "$which" = new ] && bin=$NEW
    rm -rf "$WORK/data"
    "$bin" serve --port 0 --dir "$WORK/data" --fsync everysec >"$WORK/out" 2>&1 &
    PID=$!
    for _ in $(seq 100); do grep -q '^listening on' "$WORK/out" 2>/dev/null && break; sleep 0.1; done
    port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$WORK/out")
    redis-benchmark -p "$port" -c "$CLIENTS" -n "$REQUESTS" -r 1000000 -d 100 -t "$TESTS" \
      -P "$PIPELINE" --csv 2>/dev/null | tail -n +2 | tr -d '"' \
      | awk -F, -v w="$which" -v r="$round" '{ print w "," r "," $1 "," $2 }' >>"$RESULTS"
    kill "$PID"
    wait "$PID" 2>/dev/null || true
    PID=
  done
done

python3 - "$RESULTS" <<'PY'
import csv, math, sys
rows = list(csv.reader(open(sys.argv[1])))
rps = {(w, int(r), t): float(v) for w, r, t, v in rows}
tests = sorted({t for _, _, t in rps})
rounds = sorted({r for _, r, _ in rps})
for t in tests:
    old = [rps.get(("old", r, t)) for r in rounds]
    new = [rps.get(("new", r, t)) for r in rounds]
    ratios = [n / o for o, n in zip(old, new) if o and n]
    mean = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else float("nan")
    print(f"{t}: old {' '.join(f'{o:.0f}' for o in old)}; new {' '.join(f'{n:.0f}' for n in new)}; "
          f"new/old {' '.join(f'{x:.2f}' for x in ratios)}, geometric mean {mean:.2f}")
PY
