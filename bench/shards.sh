#!/usr/bin/env bash
# Sharding benchmark (issue 18): the N-case replay suite of bench/replay.sh (default 10,000)
# checked in one job, against K shards (default 4) each run as its own job would be, one
# after the other here, then merged. Every command gets a fresh history file. Prints each
# wall time and peak RSS, the CI critical path (the slowest shard + the merge) and checks
# that the merged run is the one-job run (its JSON apart from ids, times and argv).
#   bash bench/shards.sh [N] [K]
#   EVALS_BIN=path/to/evals bash bench/shards.sh [N] [K]   # time another build
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10000}
k=${2:-4}
suite=target/bench-suite-$n
if [ ! -f "$suite/.recorded-$n" ]; then
  echo "no recorded suite in $suite: run \`bash bench/replay.sh $n\` first (it records it once)" >&2
  exit 2
fi
if [ -z "${EVALS_BIN:-}" ]; then
  cargo build --release --quiet
  EVALS_BIN=target/release/evals
fi
bin=$(realpath "$EVALS_BIN")
cd "$suite"
out=.evals/shards-bench
rm -rf "$out" && mkdir -p "$out"
export CI=1
timed() { # label, command...: one line of wall seconds and peak RSS
  local label=$1
  shift
  /usr/bin/time -f "%e %M" -o "$out/time" "$@" > /dev/null 2>> "$out/stderr" || true
  read -r wall rss < "$out/time"
  printf '%-22s %6.2f s wall  %6.1f MiB max RSS\n' "$label" "$wall" "$(echo "$rss / 1024" | bc -l)"
  echo "$wall" > "$out/last"
}
echo "checking $n cases ($bin, replay, no network): one job, then $k shards and the merge"
for round in 1 2 3; do
  echo "round $round"
  rm -f "$out"/*.sqlite3* "$out"/*.json
  timed "one job" env EVALS_HISTORY="$out/one.sqlite3" \
    "$bin" check --no-autosave --branch bench --json "$out/one.json"
  one=$(cat "$out/last")
  slowest=0
  for i in $(seq 1 "$k"); do
    timed "shard $i/$k" env EVALS_HISTORY="$out/shard-$i.sqlite3" \
      "$bin" check --no-autosave --branch bench --shard "$i/$k" --group bench-$round \
      --json "$out/shard-$i.json"
    slowest=$(echo "if ($(cat "$out/last") > $slowest) $(cat "$out/last") else $slowest" | bc -l)
  done
  timed "merge" env EVALS_HISTORY="$out/merged.sqlite3" \
    "$bin" merge --no-autosave "$out"/shard-*.json --json "$out/merged.json"
  merge=$(cat "$out/last")
  printf 'critical path: %.2f s (slowest shard %.2f s + merge %.2f s) against %.2f s in one job\n' \
    "$(echo "$slowest + $merge" | bc -l)" "$slowest" "$merge" "$one"
done
python3 - "$out/one.json" "$out/merged.json" <<'PY'
import json, sys
def norm(p):
    d = json.load(open(p))
    for k in ("id", "started_at", "finished_at", "argv"):
        d["run"][k] = None
    return d
same = norm(sys.argv[1]) == norm(sys.argv[2])
print("merged run == one-job run (apart from ids, times, argv):", same)
sys.exit(0 if same else 1)
PY
