#!/usr/bin/env bash
# CoPro's pipeline against linear compaction (docs/techniques/copro.md): for each value
# size, the same random load, then a manual compaction of everything (db_bench's
# `compact`), once with each executor; prints the manual compaction's bandwidth (bytes
# read plus written per second) and the ratio. The database process runs on one core
# (taskset), and the table tier is throttled, so that the pipeline can only win by
# overlapping one stage's I/O waits with another's work, as on the paper's devices.
#
# Usage: bench/copro.sh
# Environment: WORK (scratch, default a temporary directory), BYTES (raw bytes loaded per
# run, default 400 MB), VALUES (default "100 1024 16384"), RATE (bytes/s of the table tier,
# default 200 MB/s; 0 is unthrottled), CPU (the core to run on, default 0), COMPRESSION
# (default lz4).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
. "$ROOT/bench/common.sh"
WORK="${WORK:-$(mktemp -d)}"
BYTES="${BYTES:-400000000}"
VALUES="${VALUES:-100 1024 16384}"
RATE="${RATE:-200000000}"
CPU="${CPU:-0}"
COMPRESSION="${COMPRESSION:-lz4}"
BIN="$(terrace_bin)"
pin=()
command -v taskset >/dev/null && pin=(taskset -c "$CPU")
echo "copro: $BYTES B per run, values $VALUES, table tier $RATE B/s, $COMPRESSION, CPU ${pin[*]:-unpinned}"

# The manual compaction's seconds and MB read + written, from a run's output.
compact_figures() {
  awk '/^compact / { for (i = 1; i <= NF; i++) if ($i == "seconds") s = $(i-1); c = 1; next }
       c && /compaction by output level/ {
         for (i = 1; i <= NF; i++) {
           if ($i == "W") mb += $(i+1)
           if ($i == "(R") { split($(i+1), r, "+"); mb += r[1] + r[2] }
         }
         c = 0 }
       END { printf "%s %.1f\n", s, mb }'
}

echo
echo "| value B | entries | linear MB/s | pipelined MB/s | pipelined / linear | compaction MB (R+W) |"
echo "|---|---|---|---|---|---|"
for v in $VALUES; do
  n=$((BYTES / (v + 16)))
  declare -A bw=()
  mb=0
  for mode in linear pipelined; do
    rm -rf "$WORK/db"
    out="$("${pin[@]}" "$BIN" bench --db="$WORK/db" --benchmarks=fillrandom,compact --num="$n" \
      --value_size="$v" --write_buffer_size=16777216 --target_file_size_base=8388608 \
      --max_bytes_for_level_base=67108864 --compression_type="$COMPRESSION" --bloom_bits=10 \
      --storage_rate_limit="$RATE" --compaction_mode="$mode" --noprogress 2>&1)"
    echo "$out" > "$WORK/$v-$mode.log"
    read -r secs mb < <(echo "$out" | compact_figures)
    bw[$mode]="$(awk -v m="$mb" -v s="$secs" 'BEGIN { printf "%.1f", (s > 0 ? m / s : 0) }')"
  done
  ratio="$(awk -v a="${bw[pipelined]}" -v b="${bw[linear]}" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')"
  echo "| $v | $n | ${bw[linear]} | ${bw[pipelined]} | ${ratio}x | $mb |"
done
rm -rf "$WORK/db"
echo
echo "logs in $WORK"
