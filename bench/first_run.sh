#!/usr/bin/env bash
# Time to the first leaderboard (issue 29): a clean clone of this repository's HEAD and an
# empty cargo target folder, then the README's first command, as a new user runs it. Prints
# the wall time, the CPU time (user + system of cargo, rustc and the linker: what the build
# cost, whatever else the machine was doing), the load average before and after (a shared
# machine's other builds stretch the wall time, not the CPU time), and where cargo's
# --timings report is (which crates bound the build).
#
#   bash bench/first_run.sh                       # cargo run -- compare (the README's)
#   bash bench/first_run.sh --release -- compare  # another command line for `cargo run`
#
# The crates themselves come from cargo's cache (~/.cargo/registry) when they are there; a
# machine that never built evals downloads them first (`cargo fetch`, timed apart below).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(-- compare)
work=$(mktemp -d /tmp/evals-first-run.XXXXXX)
trap 'rm -rf "$work"' EXIT
git clone --quiet "$repo" "$work/llm-evals"
cd "$work/llm-evals"
export CARGO_TARGET_DIR="$work/llm-evals/target"
fetch_start=$(date +%s.%N)
cargo fetch --quiet --locked
fetch=$(awk -v a="$fetch_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores; cargo fetch ${fetch}s" >&2
code=0
/usr/bin/time -f '%e %U %S' -o "$work/time" cargo run --quiet --timings "${args[@]}" \
  > "$work/stdout" 2> "$work/stderr" || code=$?
read -r wall user sys < <(tail -1 "$work/time")
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)" >&2
if ! grep -q '^dataset ' "$work/stdout"; then
  cat "$work/stderr" >&2
  echo "error: \`cargo run ${args[*]}\` printed no leaderboard (exit $code)" >&2
  exit 1
fi
mkdir -p "$repo/target"
cp "$CARGO_TARGET_DIR"/cargo-timings/cargo-timing.html "$repo/target/first-run-timing.html"
printf 'cargo run %s: first leaderboard after %.0f s wall (%.0f s CPU: %.0f user + %.0f system), exit %s\n' \
  "${args[*]}" "$wall" "$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" "$user" "$sys" "$code"
echo "cargo's timings (the crates that bound it): $repo/target/first-run-timing.html" >&2
