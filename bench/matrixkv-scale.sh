#!/usr/bin/env bash
# The MatrixKV scale table (docs/techniques/matrixkv.md, "What limits the lead at scale"):
# bench/matrixkv.sh's random load at 10x, 30x and 100x the container, with the default and
# the --paper preset, every configuration (classic-ssd, classic-fast, matrix), then one
# Markdown table per preset with the ratios. The container shrinks as the ratio grows so
# that no run takes more than about a quarter of an hour: 128 MiB at 10x, 64 MiB at 30x,
# 32 MiB at 100x; the memtable is a 32nd of the container (default preset) or a 128th
# (paper preset), and classic's level 1 is four memtables in both.
#
# Usage: bench/matrixkv-scale.sh
# Environment: WORK (scratch directory, default a temporary one; tmpfs keeps the
# persistent-memory directory honest), SCALES (default "10 30 100"), PRESETS (default
# "default paper"), PARALLEL=1 runs the presets side by side (each run uses less than half
# a core; the tiers are token buckets per process, so they do not share a rate),
# REPORT_ONLY=1 prints the tables from the logs already in WORK without running, and
# everything bench/matrixkv.sh reads (RATE, PMEM_RATE_LIMIT, CONFIGS).
# Columns: SSD WA is the throttled tier's bytes written per user byte (the load alone, and
# settled: with the compaction it left); SSD levels is the deepest level holding table
# files after that compaction (level 0 counted only when it is table files: the matrix's
# rows are on the fast tier); the ratios' SSD levels column is the matrix's minus the
# other's.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
. "$ROOT/bench/common.sh"
WORK="${WORK:-$(mktemp -d)}"
SCALES="${SCALES:-10 30 100}"
PRESETS="${PRESETS:-default paper}"
mkdir -p "$WORK"

container_for() { # scale -> container bytes
  case "$1" in 10) echo 134217728 ;; 30) echo 67108864 ;; *) echo 33554432 ;; esac
}

run_preset() { # preset
  local preset="$1" scale cap mem flag=()
  [ "$preset" = paper ] && flag=(--paper)
  for scale in $SCALES; do
    cap="$(container_for "$scale")"
    if [ "$preset" = paper ]; then mem=$((cap / 128)); else mem=$((cap / 32)); fi
    SEQ=0 SCALE="$scale" CAPACITY="$cap" MEMTABLE="$mem" WORK="$WORK/$preset-$scale" \
      "$ROOT/bench/matrixkv.sh" "${flag[@]}" >"$WORK/$preset-$scale.log" 2>&1
    rm -rf "$WORK/$preset-$scale"
  done
}

if [ "${REPORT_ONLY:-0}" = 1 ]; then
  echo "matrixkv-scale: the tables of the logs in $WORK"
else
echo "matrixkv-scale: scales $SCALES, presets $PRESETS, logs in $WORK ($(date -u +%FT%TZ))"
TERRACE_BIN="$(terrace_bin)"
export TERRACE_BIN
if [ "${PARALLEL:-0}" = 1 ]; then
  pids=()
  for p in $PRESETS; do run_preset "$p" & pids+=($!); done
  for pid in "${pids[@]}"; do wait "$pid"; done
else
  for p in $PRESETS; do run_preset "$p"; done
fi
echo "finished $(date -u +%FT%TZ)"
fi

# One log -> "config key value" lines: the figures of the load (fill), of the compaction it
# left (wait) and of the reads.
figures() {
  awk '
    /^=== / { cfg = $2; next }
    /^fillrandom / { bench = "fill"; for (i = 1; i <= NF; i++) { if ($i == "ops/sec") print cfg, "ops", $(i-1); if ($i == "seconds") print cfg, "fill_s", $(i-1) } next }
    /^waitforcompaction / { bench = "wait"; for (i = 1; i <= NF; i++) if ($i == "seconds") print cfg, "wait_s", $(i-1); next }
    /^readrandom / { bench = "read"; for (i = 1; i <= NF; i++) if ($i == "ops/sec") print cfg, "read_ops", $(i-1); next }
    /write amplification: / && bench == "fill" { for (i = 1; i <= NF; i++) if ($i == "user") print cfg, "user_mb", $(i+1) }
    /write amplification of the throttled tier:/ { for (i = 1; i <= NF; i++) if ($i == "written") { x = $(i-2); gsub(/\(/, "", x); print cfg, bench "_ssd_mb", x } }
    /longest gap between completed writes/ && bench == "fill" { print cfg, "gap_ms", $(NF-1) }
    /level bytes:/ && bench == "wait" { deepest = 0; for (i = 1; i <= NF; i++) if ($i ~ /^L[0-9]+$/ && !($i == "L0" && $(i+3) == "rows,")) deepest = substr($i, 2); print cfg, "depth", deepest }
  ' "$1"
}

table() { # preset
  local preset="$1" scale f
  echo
  echo "### preset $preset"
  echo
  echo "| scale (container) | config | fillrandom ops/s | settled ops/s | SSD WA | SSD WA settled | longest gap ms | SSD levels | readrandom ops/s |"
  echo "|---|---|---|---|---|---|---|---|---|"
  for scale in $SCALES; do
    f="$WORK/$preset-$scale.log"
    [ -f "$f" ] || continue
    figures "$f" | awk -v scale="${scale}x ($(($(container_for "$scale") >> 20)) MiB)" '
      { v[$1, $2] = $3; if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
      function settled(c) { return v[c, "fill_s"] + v[c, "wait_s"] > 0 ? v[c, "ops"] * v[c, "fill_s"] / (v[c, "fill_s"] + v[c, "wait_s"]) : 0 }
      function wa(c) { return v[c, "user_mb"] > 0 ? v[c, "fill_ssd_mb"] / v[c, "user_mb"] : 0 }
      function was(c) { return v[c, "user_mb"] > 0 ? (v[c, "fill_ssd_mb"] + v[c, "wait_ssd_mb"]) / v[c, "user_mb"] : 0 }
      END {
        for (i = 1; i <= n; i++) { c = order[i]
          printf "| %s | %s | %d | %d | %.2f | %.2f | %.1f | %d | %d |\n", scale, c, v[c, "ops"], settled(c), wa(c), was(c), v[c, "gap_ms"], v[c, "depth"], v[c, "read_ops"] }
        m = "matrix"
        for (i = 1; i <= n; i++) { c = order[i]; if (c == m || !((m, "ops") in v)) continue
          printf "| %s | matrix / %s | %.2fx | %.2fx | %.2fx | %.2fx | | %+d | %.2fx |\n", scale, c, v[m, "ops"] / v[c, "ops"], settled(m) / settled(c), wa(m) / wa(c), was(m) / was(c), v[m, "depth"] - v[c, "depth"], v[m, "read_ops"] / v[c, "read_ops"] }
      }'
  done
}
for p in $PRESETS; do table "$p"; done
