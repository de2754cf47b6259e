#!/usr/bin/env bash
# Compaction offload (docs/techniques/copro.md, docs/techniques/xengine-offload.md): the
# database on one core, a `terrace compactd` worker pinned to the other standing for the
# near-data device, the table tier throttled. Phases (PHASES, default all four):
#   share    fillrandom per value size, then waiting for the compactions it left: host
#            alone on its core; host + worker with CoPro's static half, the dynamic ratio,
#            work stealing, and every task to the worker (X-Engine's `all`); and the
#            control that attributes the gain: host alone on both cores (the same
#            hardware, no worker). Prints ops/s and ratios, write amplification of the
#            whole run, the worker's share of the compaction input during the load, and
#            the ceiling: the host-alone load's time over that time less the host's
#            compaction CPU seconds (what moving all of it elsewhere could give).
#   auto     fillrandom then a manual compaction, on both cores, with the host's executor
#            linear, pipelined and auto: compaction bandwidth while busy and MB per
#            CPU-second (the decision component's claim).
#   ycsb     ycsb_load, ycsb_a, ycsb_b: host alone against host + worker (steal).
#   xengine  one load of NUM_X keys left in level 0, then a manual compaction of all of it
#            on one CPU thread (linear, no worker) and dispatched to 1, 2 and 4 workers
#            (every task to a worker, 4 subcompactions): X-Engine's figure.
#
# Usage: bench/offload.sh
# Environment: WORK (scratch, default a temporary directory), PHASES, BYTES (raw bytes
# loaded per run, default 400 MB), VALUES (default "100 1024 16384 65536"), RATE (bytes/s
# of the table tier, default 200 MB/s; 0 unthrottled), NUM_X (keys of the xengine phase,
# default 4000000), YCSB_NUM (records, default 400000), YCSB_OPS (default 400000).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
. "$ROOT/bench/common.sh"
WORK="${WORK:-$(mktemp -d)}"
PHASES="${PHASES:-share auto ycsb xengine}"
BYTES="${BYTES:-400000000}"
VALUES="${VALUES:-100 1024 16384 65536}"
RATE="${RATE:-200000000}"
NUM_X="${NUM_X:-4000000}"
YCSB_NUM="${YCSB_NUM:-400000}"
YCSB_OPS="${YCSB_OPS:-400000}"
BIN="$(terrace_bin)"
export TERRACE_COMPACTD_SECRET="offload-bench-$$"
mkdir -p "$WORK"
command -v taskset >/dev/null || { echo "offload.sh needs taskset (util-linux)" >&2; exit 1; }
COMMON=(--write_buffer_size=16777216 --target_file_size_base=8388608
  --max_bytes_for_level_base=67108864 --compression_type=lz4 --bloom_bits=10
  --storage_rate_limit="$RATE" --noprogress)
echo "offload: $(nproc) cores, table tier $RATE B/s, build $(cd "$ROOT" && git rev-parse --short HEAD), $(date -u +%FT%TZ)"

WORKERS=()
# Starts a worker on $2 (CPUs, e.g. 1 or 0,1) serving database directory $3 at unix:$1.
start_worker() {
  local sock="$1" cpus="$2" dir="$3"
  rm -f "$sock"
  mkdir -p "$dir"
  "$BIN" compactd --listen "unix:$sock" --dir "$dir" --cpus "$cpus" --threads 1 \
    --storage-rate-limit "$RATE" >"$sock.log" 2>&1 &
  WORKERS+=("$!")
  for _ in $(seq 100); do [ -S "$sock" ] && return 0; sleep 0.05; done
  echo "compactd did not start: $(cat "$sock.log")" >&2
  exit 1
}
stop_workers() {
  for p in "${WORKERS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  WORKERS=()
}
trap stop_workers EXIT

# Field $2 of benchmark $1's result line (ops/sec's value, or seconds').
result_field() {
  awk -v b="$1" -v f="$2" '$1 == b && $2 == ":" { for (i = 1; i <= NF; i++) if ($i == f) print $(i-1); exit }'
}
# The write amplification printed for benchmark $1.
wa_of() {
  awk -v b="$1" '$1 == b && $2 == ":" { c = 1; next } c && /write amplification:/ { print $3; exit }'
}
# Input MB (10^6 B) of unit $2 in benchmark $1's block, and its "MB/s busy" and "MB per
# CPU-second" figures: "in busy percpu" (0 0 0 when the unit ran nothing).
unit_of() {
  awk -v b="$1" -v u="$2" '
    $1 == b && $2 == ":" { c = 1; next }
    c && /^[a-z_]+ +:/ { c = 0 }
    c && index($0, "compaction unit " u ":") {
      for (i = 1; i <= NF; i++) {
        if ($i == "MB" && $(i+1) == "in,") inmb = $(i-1)
        if ($i == "MB/s" && $(i+1) == "busy,") busy = $(i-1)
        if ($i == "MB" && $(i+1) == "per") cpu = $(i-1)
      }
    }
    END { printf "%s %s %s\n", inmb + 0, busy + 0, cpu + 0 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

# Write amplification of the whole run from its STATISTICS: (flush + compaction bytes) /
# user bytes, the compactions the load left behind included (waitforcompaction).
total_wa() {
  awk '/terrace.bytes.written COUNT/ { u = $4 } /terrace.flush.write.bytes COUNT/ { f = $4 }
       /terrace.compact.write.bytes COUNT/ { c = $4 }
       END { printf "%.3f", (u > 0 ? (f + c) / u : 0) }'
}

# One fillrandom run, then waiting for the compactions it left: $1 label, $2 CPUs of the
# database, $3 value size, then extra flags. Prints "ops wa worker_share_percent".
fill_run() {
  local label="$1" cpus="$2" v="$3"; shift 3
  local n=$((BYTES / (v + 16)))
  local out
  out="$(taskset -c "$cpus" "$BIN" bench --db="$WORK/db" --benchmarks=fillrandom,waitforcompaction \
    --num="$n" --value_size="$v" "${COMMON[@]}" --statistics "$@" 2>&1)"
  echo "$out" >"$WORK/share-$v-$label.log"
  local ops wa host worker
  ops="$(echo "$out" | result_field fillrandom ops/sec)"
  wa="$(echo "$out" | total_wa)"
  read -r host _ _ < <(echo "$out" | unit_of fillrandom host)
  read -r worker _ _ < <(echo "$out" | unit_of fillrandom "remote unix")
  echo "$ops $wa $(awk -v h="$host" -v w="$worker" 'BEGIN { printf "%.0f", (h + w > 0 ? 100 * w / (h + w) : 0) }')"
}

if [[ " $PHASES " == *" share "* ]]; then
  echo
  echo "## share: fillrandom, database on CPU 0, worker on CPU 1 ($BYTES B per run)"
  echo
  echo "| value B | host 1 core ops/s | host 2 cores (control) | + worker 0.5 | + worker dynamic | + worker steal | + worker all | WA host / 0.5 / dynamic / steal / all | worker share of input 0.5 / dynamic / steal / all | ceiling |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  for v in $VALUES; do
    declare -A ops=() wa=() share=()
    rm -rf "$WORK/db"
    read -r ops[host] wa[host] _ < <(fill_run host 0 "$v")
    # The most a worker can give the host: the load's time without the host's compaction
    # CPU seconds (all of it moved to the worker, nothing else changed).
    ceiling="$(awk '$1 == "fillrandom" && $2 == ":" { for (i = 1; i <= NF; i++) if ($i == "seconds") t = $(i-1); c = 1; next }
      c && /compaction unit host:/ { for (i = 1; i <= NF; i++) if ($i == "CPU-s,") cpu = $(i-1); c = 0 }
      END { printf "%.2f", (t > cpu ? t / (t - cpu) : 0) }' "$WORK/share-$v-host.log")"
    rm -rf "$WORK/db"
    read -r ops[both] wa[both] _ < <(fill_run both 0,1 "$v")
    for policy in 0.5 dynamic steal all; do
      rm -rf "$WORK/db"
      start_worker "$WORK/w.sock" 1 "$WORK/db"
      read -r ops[$policy] wa[$policy] share[$policy] < <(fill_run "worker-$policy" 0 "$v" \
        --compaction_workers="unix:$WORK/w.sock" --offload_ratio="$policy")
      stop_workers
    done
    echo "| $v | ${ops[host]} | ${ops[both]} ($(ratio "${ops[both]}" "${ops[host]}")x) | ${ops[0.5]} ($(ratio "${ops[0.5]}" "${ops[host]}")x) | ${ops[dynamic]} ($(ratio "${ops[dynamic]}" "${ops[host]}")x) | ${ops[steal]} ($(ratio "${ops[steal]}" "${ops[host]}")x) | ${ops[all]} ($(ratio "${ops[all]}" "${ops[host]}")x) | ${wa[host]} / ${wa[0.5]} / ${wa[dynamic]} / ${wa[steal]} / ${wa[all]} | ${share[0.5]}% / ${share[dynamic]}% / ${share[steal]}% / ${share[all]}% | ${ceiling}x |"
  done
fi

if [[ " $PHASES " == *" auto "* ]]; then
  echo
  echo "## auto: fillrandom then compact, both cores, the host's executor per mode"
  echo
  echo "| value B | mode | fillrandom ops/s | load: compaction MB/s busy | load: MB per CPU-s | compact: MB/s busy | compact: MB per CPU-s | runs linear / pipelined (load) |"
  echo "|---|---|---|---|---|---|---|---|"
  for v in $VALUES; do
    n=$((BYTES / (v + 16)))
    for mode in linear pipelined auto; do
      rm -rf "$WORK/db"
      out="$(taskset -c 0,1 "$BIN" bench --db="$WORK/db" --benchmarks=fillrandom,compact \
        --num="$n" --value_size="$v" "${COMMON[@]}" --compaction_mode="$mode" 2>&1)"
      echo "$out" >"$WORK/auto-$v-$mode.log"
      ops="$(echo "$out" | result_field fillrandom ops/sec)"
      read -r _ lbusy lcpu < <(echo "$out" | unit_of fillrandom host)
      read -r _ cbusy ccpu < <(echo "$out" | unit_of compact host)
      runs="$(echo "$out" | awk '$1 == "fillrandom" && $2 == ":" { c = 1; next } c && /^[a-z_]+ +:/ { c = 0 }
        c && /compaction unit host:/ { for (i = 1; i <= NF; i++) { if ($i == "linear,") l = $(i-1); if ($i == "pipelined),") p = $(i-1) } }
        END { gsub(/\(/, "", l); printf "%s / %s", l + 0, p + 0 }')"
      echo "| $v | $mode | $ops | $lbusy | $lcpu | $cbusy | $ccpu | $runs |"
    done
  done
fi

if [[ " $PHASES " == *" ycsb "* ]]; then
  echo
  echo "## ycsb: $YCSB_NUM records of 10 x 100 B fields, $YCSB_OPS operations, database on CPU 0"
  echo
  echo "| setup | ycsb_load ops/s | ycsb_a ops/s | ycsb_b ops/s |"
  echo "|---|---|---|---|"
  for setup in host steal; do
    rm -rf "$WORK/db"
    extra=()
    if [ "$setup" = steal ]; then
      start_worker "$WORK/w.sock" 1 "$WORK/db"
      extra=(--compaction_workers="unix:$WORK/w.sock" --offload_ratio=steal)
    fi
    out="$(taskset -c 0 "$BIN" bench --db="$WORK/db" --benchmarks=ycsb_load,ycsb_a,ycsb_b \
      --num="$YCSB_NUM" --reads="$YCSB_OPS" "${COMMON[@]}" "${extra[@]}" 2>&1)"
    stop_workers
    echo "$out" >"$WORK/ycsb-$setup.log"
    echo "| $setup | $(echo "$out" | result_field ycsb_load ops/sec) | $(echo "$out" | result_field ycsb_a ops/sec) | $(echo "$out" | result_field ycsb_b ops/sec) |"
  done
fi

if [[ " $PHASES " == *" xengine "* ]]; then
  echo
  echo "## xengine: manual compaction of $NUM_X keys (100 B values), loaded once"
  echo
  rm -rf "$WORK/xload"
  # Nothing compacts during the load: the manual compaction takes all of it from level 0.
  taskset -c 0,1 "$BIN" bench --db="$WORK/xload" --benchmarks=fillrandom --num="$NUM_X" \
    --value_size=100 "${COMMON[@]}" --level0_file_num_compaction_trigger=100000 \
    --level0_slowdown_writes_trigger=100000 --level0_stop_writes_trigger=100000 \
    >"$WORK/xengine-load.log" 2>&1
  echo "| units | where | compact seconds | speed-up | compaction MB read | fallbacks |"
  echo "|---|---|---|---|---|---|"
  base=""
  for units in 0 1 2 4; do
    rm -rf "$WORK/xdb"
    cp -a "$WORK/xload" "$WORK/xdb"
    extra=(--compaction_mode=linear)
    where="one CPU thread (CPU 0)"
    if [ "$units" -gt 0 ]; then
      addrs=()
      for i in $(seq "$units"); do
        cpu=$(( units == 1 ? 1 : (i - 1) % 2 ))
        start_worker "$WORK/x$i.sock" "$cpu" "$WORK/xdb"
        addrs+=("unix:$WORK/x$i.sock")
      done
      extra=(--compaction_workers="$(IFS=,; echo "${addrs[*]}")" --offload_ratio=all --subcompactions=4)
      where="$units worker(s) on CPU $( [ "$units" = 1 ] && echo 1 || echo "0 and 1" )"
    fi
    out="$(taskset -c 0 "$BIN" bench --db="$WORK/xdb" --use_existing_db=1 --benchmarks=compact \
      --num="$NUM_X" --value_size=100 "${COMMON[@]}" "${extra[@]}" 2>&1)"
    stop_workers
    echo "$out" >"$WORK/xengine-$units.log"
    secs="$(echo "$out" | result_field compact seconds)"
    [ -z "$base" ] && base="$secs"
    read_mb="$(echo "$out" | awk '/compaction by output level/ { for (i = 1; i <= NF; i++) if ($i == "(R") { split($(i+1), r, "+"); mb += r[1] + r[2] } } END { printf "%.0f", mb }')"
    fb="$(echo "$out" | awk '/compaction fallbacks:/ { print $3; f = 1 } END { if (!f) print 0 }')"
    echo "| $units | $where | $secs | $(ratio "$base" "$secs")x | $read_mb | $fb |"
  done
  rm -rf "$WORK/xdb" "$WORK/xload"
fi
rm -rf "$WORK/db"
echo
echo "logs in $WORK"
