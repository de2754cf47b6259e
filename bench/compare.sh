#!/usr/bin/env bash
# Side-by-side benchmark of Terrace (`terrace bench`) and RocksDB (`db_bench`, Debian's
# rocksdb-tools, RocksDB 7.8.3) with the same command line and every engine-shaping flag
# passed explicitly to both. Each benchmark runs in its own process (so that the
# statistics belong to that benchmark): fills start from an empty database, the others
# reuse the database of the fill before them (--use_existing_db=1). The two tools
# alternate, RUNS runs each, and one table is printed per compression type.
#
# Usage: bench/compare.sh [--num=N] [--runs=N] [--benchmarks=a,b,...]
#                         [--compression=none,lz4] [--threads=N] [--value_size=N]
#                         [--dir=DIR] [extra flags for both tools]
# Example (smoke): bench/compare.sh --num=10000 --runs=1
# A benchmark written a+b runs a then b in one process, and its row reports a's throughput
# with the whole process's write amplification: `fillrandom+waitforcompaction` counts the
# compactions a load leaves behind (the settled write amplification).
set -euo pipefail

NUM=1000000
RUNS=3
BENCHMARKS=fillseq,fillrandom,overwrite,readrandom
COMPRESSIONS=none,lz4
THREADS=1
VALUE_SIZE=100
DIR=${TMPDIR:-/tmp}/terrace-compare
EXTRA=()
for arg in "$@"; do
  case "$arg" in
    --num=*) NUM=${arg#*=} ;;
    --runs=*) RUNS=${arg#*=} ;;
    --benchmarks=*) BENCHMARKS=${arg#*=} ;;
    --compression=*) COMPRESSIONS=${arg#*=} ;;
    --threads=*) THREADS=${arg#*=} ;;
    --value_size=*) VALUE_SIZE=${arg#*=} ;;
    --dir=*) DIR=${arg#*=} ;;
    *) EXTRA+=("$arg") ;;
  esac
done

ROOT=$(cd "$(dirname "$0")/.." && pwd)
if ! command -v db_bench >/dev/null || [ ! -x /usr/bin/time ]; then
  apt-get update
  apt-get install -y rocksdb-tools time
fi
(cd "$ROOT" && cargo build --release -q -p terrace-cli)
TERRACE="$ROOT/target/release/terrace"

# Every engine-shaping flag, explicitly, identical for both tools.
. "$ROOT/bench/engine-flags.sh"

LOGS="$DIR/logs"
rm -rf "$DIR"
mkdir -p "$LOGS"
IFS=, read -r -a BENCH_LIST <<<"$BENCHMARKS"
IFS=, read -r -a COMP_LIST <<<"$COMPRESSIONS"
case "${BENCH_LIST[0]}" in
  fill*|ycsb_load) ;;
  *) echo "compare.sh: the first benchmark must be a fill" >&2; exit 2 ;;
esac

run_chain() { # tool compression run
  local tool=$1 comp=$2 run=$3 db="$DIR/db-$1"
  for b in "${BENCH_LIST[@]}"; do
    local existing=1
    case "$b" in fill*|ycsb_load) existing=0 ;; esac
    local log="$LOGS/$comp.$tool.$b.$run.log"
    local args=(--db="$db" --benchmarks="${b//+/,}" --use_existing_db=$existing
                --compression_type="$comp" "${COMMON[@]}" "${EXTRA[@]}")
    # GNU time appends the process's peak resident memory to the log.
    if [ "$tool" = terrace ]; then
      /usr/bin/time -a -o "$log.rss" -f "maxrss_kb %M" "$TERRACE" bench "${args[@]}" --noprogress >"$log" 2>&1
    else
      /usr/bin/time -a -o "$log.rss" -f "maxrss_kb %M" db_bench "${args[@]}" >"$log" 2>&1
    fi
  done
  rm -rf "$db"
}

echo "db_bench: rocksdb-tools $(dpkg-query -W -f='${Version}' rocksdb-tools 2>/dev/null || echo "(not from Debian)")"
echo "terrace: $("$TERRACE" version)"
echo "command (both tools, one benchmark per process): --benchmarks=<b> --compression_type=<c> ${COMMON[*]} ${EXTRA[*]}"
for comp in "${COMP_LIST[@]}"; do
  for run in $(seq 1 "$RUNS"); do
    # Alternate which tool goes first.
    if [ $((run % 2)) -eq 1 ]; then order="terrace rocksdb"; else order="rocksdb terrace"; fi
    for tool in $order; do
      echo "compression=$comp run $run/$RUNS: $tool" >&2
      run_chain "$tool" "$comp" "$run"
    done
  done
done

python3 - "$LOGS" "$RUNS" "$BENCHMARKS" "$COMPRESSIONS" "$VALUE_SIZE" <<'PY'
import re, statistics, sys
logs, runs, benches, comps = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(","), sys.argv[4].split(",")
ENTRY_BYTES = 16 + int(sys.argv[5])  # --key_size + --value_size, as passed to both tools above
WRITE_BENCHMARKS = {"fillseq", "fillrandom", "fillsync", "overwrite"}

def parse(path, bench):
    text = open(path).read()
    m = re.search(r"^%s\s*:\s*([\d.]+) micros/op (\d+) ops/sec" % re.escape(bench), text, re.M)
    if not m:
        sys.exit(f"no result line for {bench} in {path}")
    rest = text[m.end():]
    p = re.search(r"Percentiles: P50: [\d.]+ P75: [\d.]+ P99: ([\d.]+)", rest)
    def counter(name):
        c = re.search(r"^(?:rocksdb|terrace)\.%s COUNT : (\d+)" % re.escape(name), text, re.M)
        return int(c.group(1)) if c else 0
    # Write amplification, computed the same way for both tools: table bytes written by
    # flushes and compactions over the key and value bytes the benchmark put (its operation
    # count times 16 + --value_size bytes). The engines' own "bytes written" counters differ
    # (RocksDB counts write-batch framing), so neither is used.
    ops = re.search(r"(\d+) operations;", text[m.start():])
    user = int(ops.group(1)) * ENTRY_BYTES if ops and bench in WRITE_BENCHMARKS else 0
    wa = (counter("flush.write.bytes") + counter("compact.write.bytes")) / user if user else None
    try:
        rss = int(re.search(r"maxrss_kb (\d+)", open(path + ".rss").read()).group(1)) / 1024
    except (OSError, AttributeError):
        rss = None
    return int(m.group(2)), float(p.group(1)) if p else None, wa, rss

def summary(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None, None
    med = statistics.median(xs)
    return med, (max(xs) - min(xs)) / med * 100 if med else 0.0

def fmt(v, f="{:.0f}"):
    return "-" if v is None else f.format(v)

for comp in comps:
    print(f"\ncompression={comp}, {runs} runs each, medians (spread = (max-min)/median)")
    print("| benchmark | Terrace ops/sec | RocksDB ops/sec | Terrace/RocksDB | Terrace p99 us | RocksDB p99 us | Terrace WA | RocksDB WA | Terrace peak RSS MiB | RocksDB peak RSS MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for b in benches:
        res = {}
        for tool in ("terrace", "rocksdb"):
            rows = [parse(f"{logs}/{comp}.{tool}.{b}.{r}.log", b.split("+")[0]) for r in range(1, runs + 1)]
            res[tool] = [summary([row[i] for row in rows]) for i in range(4)]
        t, r = res["terrace"], res["rocksdb"]
        ratio = t[0][0] / r[0][0] if t[0][0] and r[0][0] else None
        print(f"| {b} | {fmt(t[0][0])} ±{fmt(t[0][1], '{:.1f}')}% | {fmt(r[0][0])} ±{fmt(r[0][1], '{:.1f}')}% "
              f"| {fmt(ratio, '{:.2f}')} | {fmt(t[1][0], '{:.2f}')} | {fmt(r[1][0], '{:.2f}')} "
              f"| {fmt(t[2][0], '{:.2f}')} | {fmt(r[2][0], '{:.2f}')} "
              f"| {fmt(t[3][0], '{:.0f}')} | {fmt(r[3][0], '{:.0f}')} |")
PY
echo
echo "logs: $LOGS"
