#!/usr/bin/env bash
# Multi-volume placement and load migration (docs/techniques/tango.md): YCSB over six
# emulated cloud volumes (each a token bucket of VOLUME_IOPS operations of 256 KiB and
# VOLUME_RATE bytes per second; the log and MANIFEST on an unlimited directory), zipfian
# keys, 256-byte values, data blocks never cached (only index and filter blocks stay in
# memory), read shares READS (the rest updates).
#
# Configurations, each loaded once (unthrottled) and then run from a fresh copy of that
# load for every read share:
#   single           every table on volume 1
#   round_robin      tables in turn over the six volumes
#   hash             by a hash of the file number
#   raid0            the six volumes as one array striped in 64 KiB (every table in the
#                    first volume's directory, each I/O charged to its stripe's volume)
#   tango_nomig      TANGO's placement, no migration (the control: placement alone)
#   tango            TANGO's placement and migration (copies of hot files)
#   tango_iops_only  TANGO's placement, the IOPS-only migration (moves the hottest file
#                    from the busiest volume to the idlest)
#   demand_nomig     the demand placement (predicted reads and compaction reads against
#                    each volume's IOPS), no migration
#   demand           the demand placement and TANGO's migration
#   one_volume       one volume with six times the limits (what the six cost together)
# Prints per run: ops/s, the table volumes' summed IOPS and its share of their summed
# limit, the standard deviation of per-volume IOPS, files and MB migrated; then ratios
# against round_robin.
#
# Usage: bench/volumes.sh
# Environment: WORK (scratch, default a temporary directory), CONFIGS, READS (default
# "1.0 0.9 0.7 0.5"), NUM (records, default 1000000), SECONDS_PER_RUN (default 30),
# THREADS (default 32), VOLUME_IOPS (default 500), VOLUME_RATE (default 22020096, 21 MiB/s:
# gp3's 3000 IOPS : 125 MiB/s scaled down).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
. "$ROOT/bench/common.sh"
WORK="${WORK:-$(mktemp -d)}"
CONFIGS="${CONFIGS:-single round_robin hash raid0 tango_nomig tango tango_iops_only demand_nomig demand one_volume}"
READS="${READS:-1.0 0.9 0.7 0.5}"
NUM="${NUM:-1000000}"
SECONDS_PER_RUN="${SECONDS_PER_RUN:-30}"
THREADS="${THREADS:-32}"
VOLUME_IOPS="${VOLUME_IOPS:-500}"
VOLUME_RATE="${VOLUME_RATE:-22020096}"
BIN="$(terrace_bin)"
mkdir -p "$WORK"
echo "volumes: $(nproc) cores, 6 volumes of $VOLUME_IOPS IOPS and $VOLUME_RATE B/s, $NUM records," \
  "build $(cd "$ROOT" && git rev-parse --short HEAD), $(date -u +%FT%TZ)"

COMMON=(--num="$NUM" --ycsb_field_count=1 --ycsb_field_length=256 --bloom_bits=10
  --cache_size=0 --target_file_size_base=4194304 --write_buffer_size=8388608
  --max_bytes_for_level_base=33554432 --noprogress)

# The volume flags of configuration $1 (placement and migration; limits separately).
volume_flags() {
  case "$1" in
    single) echo "--volumes=6 --placement=single --migration=off" ;;
    round_robin) echo "--volumes=6 --placement=round_robin --migration=off" ;;
    hash) echo "--volumes=6 --placement=hash --migration=off" ;;
    raid0) echo "--volumes=6 --placement=raid0 --migration=off" ;;
    tango_nomig) echo "--volumes=6 --placement=tango --migration=off" ;;
    tango) echo "--volumes=6 --placement=tango --migration=tango" ;;
    tango_iops_only) echo "--volumes=6 --placement=tango --migration=iops_only" ;;
    demand_nomig) echo "--volumes=6 --placement=demand --migration=off" ;;
    demand) echo "--volumes=6 --placement=demand --migration=tango" ;;
    one_volume) echo "--volumes=1 --placement=single --migration=off" ;;
    *) echo "unknown configuration $1" >&2; exit 1 ;;
  esac
}
limit_flags() {
  case "$1" in
    one_volume) echo "--volume_iops=$((VOLUME_IOPS * 6)) --volume_rate=$((VOLUME_RATE * 6))" ;;
    *) echo "--volume_iops=$VOLUME_IOPS --volume_rate=$VOLUME_RATE" ;;
  esac
}

RESULTS="$WORK/results.tsv"
: >"$RESULTS"
for c in $CONFIGS; do
  # Loads with placement only (no limits, no migration): every configuration starts
  # from the layout its placement made.
  load="$WORK/load-$c"
  rm -rf "$load"
  # shellcheck disable=SC2046
  "$BIN" bench --db="$load" "${COMMON[@]}" $(volume_flags "$c" | sed 's/--migration=[a-z_]*/--migration=off/') \
    --benchmarks=ycsb_load,waitforcompaction --threads=2 >"$WORK/load-$c.txt"
  for r in $READS; do
    run="$WORK/run"
    rm -rf "$run"
    cp -a "$load" "$run"
    # shellcheck disable=SC2046
    "$BIN" bench --db="$run" "${COMMON[@]}" $(volume_flags "$c") $(limit_flags "$c") \
      --use_existing_db=1 --benchmarks=ycsb_c --ycsb_read_proportion="$r" --reads=-1 \
      --duration="$SECONDS_PER_RUN" --threads="$THREADS" --json="$WORK/$c-$r.json" \
      >"$WORK/$c-$r.txt"
    python3 - "$WORK/$c-$r.json" "$c" "$r" >>"$RESULTS" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
b = [x for x in doc["benchmarks"] if x["name"] == "ycsb_c"][0]
s = b.get("volume_spread") or {}
print("\t".join(str(x) for x in [
    sys.argv[2], sys.argv[3], round(b["ops_per_sec"], 1),
    round(s.get("total_iops", 0.0), 1), round(100 * s.get("limit_share", 0.0), 1),
    round(s.get("iops_stddev", 0.0), 1), b.get("migrations", 0),
    round(b.get("migrated_bytes", 0) / 1e6, 1)]))
EOF
  done
  rm -rf "$load" "$WORK/run"
done

python3 - "$RESULTS" <<'EOF'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
print(f"{'config':<16} {'reads':>5} {'ops/s':>9} {'IOPS':>7} {'% limit':>8} {'stddev':>7} "
      f"{'migr.':>6} {'MB':>7} {'x rr':>6} {'sd/rr':>6}")
rr = {r[1]: r for r in rows if r[0] == "round_robin"}
for c, reads, ops, iops, share, sd, mig, mb in rows:
    base = rr.get(reads)
    ratio = f"{float(ops) / float(base[2]):.2f}" if base and float(base[2]) > 0 else "-"
    sdr = f"{float(sd) / float(base[5]):.2f}" if base and float(base[5]) > 0 else "-"
    print(f"{c:<16} {reads:>5} {ops:>9} {iops:>7} {share:>8} {sd:>7} {mig:>6} {mb:>7} {ratio:>6} {sdr:>6}")
EOF
