#!/usr/bin/env bash
# Builds every fuzz target with the stable toolchain (libFuzzer with SanitizerCoverage,
# no sanitizer; fuzz/README.md, "Running on stable") and runs each on a copy of its
# committed corpus for a short time. Exits non-zero if any target crashes, leaks memory
# past the limit or times out on an input; the input is kept in fuzz/artifacts/<target>/.
#
#   FUZZ_SECONDS   seconds per target (default 10)
#   FUZZ_JOBS      targets run at once (default 2)
#   FUZZ_TARGETS   space-separated targets to run (default: every [[bin]] of Cargo.toml)
set -euo pipefail
cd "$(dirname "$0")"

seconds="${FUZZ_SECONDS:-10}"
jobs="${FUZZ_JOBS:-2}"
host="$(rustc -vV | sed -n 's/^host: //p')"
targets="${FUZZ_TARGETS:-$(sed -n '/^\[\[bin\]\]/,/^name/ s/^name = "\(.*\)"/\1/p' Cargo.toml)}"

# The flags cargo-fuzz passes with `-s none`. `--target` keeps them off build scripts
# and proc macros, which would not link with the coverage callbacks.
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing"
echo "fuzz: building $(echo "$targets" | wc -w) targets for $host"
build_start=$SECONDS
cargo build --release --locked --target "$host" --quiet
echo "fuzz: built in $((SECONDS - build_start)) s; running each for ${seconds} s, ${jobs} at a time"

bin="target/$host/release"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

run_one() {
  local t="$1"
  mkdir -p "$work/corpus/$t" "artifacts/$t"
  if [ -d "corpus/$t" ]; then
    cp -R "corpus/$t/." "$work/corpus/$t/"
  fi
  if "$bin/$t" "$work/corpus/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="artifacts/$t/" -print_final_stats=1 >"$work/$t.log" 2>&1; then
    echo ok >"$work/$t.status"
  else
    echo failed >"$work/$t.status"
  fi
}

run_start=$SECONDS
for t in $targets; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
    wait -n || true
  done
  run_one "$t" &
done
wait

failed=0
for t in $targets; do
  status="$(cat "$work/$t.status" 2>/dev/null || echo failed)"
  # The last status line: "#<runs> DONE cov: <edges> ft: <features> corp: <inputs>/<size> ...".
  stats="$(grep -E '^#[0-9]+' "$work/$t.log" | tail -1 | sed -E 's/^#([0-9]+)[[:space:]]+[A-Z]+[[:space:]]+/runs \1 /' || true)"
  printf 'fuzz: %-16s %-6s %s\n' "$t" "$status" "$stats"
  if [ "$status" != ok ]; then
    failed=1
    echo "---- $t: last lines of its log (the input is in fuzz/artifacts/$t/)"
    tail -40 "$work/$t.log"
  fi
done
echo "fuzz: ran in $((SECONDS - run_start)) s"
exit "$failed"
