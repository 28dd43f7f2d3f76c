#!/usr/bin/env bash
# The HTML report of N cases (default 10,000) opened in headless Chromium: the time from
# navigation start until the page's script rendered its first page of the case matrix
# (performance.now(), which the page writes to <body data-rendered-ms> and the console), the
# load event and the first frame drawn after it (data-loaded-ms, data-painted-ms),
# and the wall time of the whole `chromium --dump-dom` process (start-up included).
#   bash bench/html_load.sh [N] [RUNS]
# EVALS_BIN=... renders with another build (default: target/debug/evals, built if missing;
# the build does not matter: only the browser is timed). CHROMIUM=... another browser.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10000}; runs=${2:-5}
evals=${EVALS_BIN:-target/debug/evals}
[ -x "$evals" ] || cargo build --quiet
evals=$(realpath "$evals")
chromium=${CHROMIUM:-chromium}
dir=target/bench-html
rm -rf "$dir"; mkdir -p "$dir"; cp -r fixtures/toy/. "$dir/"
(cd "$dir" && "$evals" compare --no-autosave -d animals --format json -o run.json 2> /dev/null)
# The toy run's cases copied to N per contender (two contenders): N rows, 2N cells.
python3 - "$n" "$dir/run.json" "$dir/big.json" <<'PY'
import json, sys
n, src, dst = int(sys.argv[1]), sys.argv[2], sys.argv[3]
run = json.load(open(src))
for e in run["experiments"]:
    cases = e["cases"]
    e["cases"] = [dict(cases[i % len(cases)], case=f"case/{i:05d}", variant="case") for i in range(n)]
json.dump(run, open(dst, "w"))
PY
(cd "$dir" && "$evals" render big.json -o big.html 2> /dev/null)
echo "report: $n cases, $(du -k "$dir/big.html" | cut -f1) KiB"
page="file://$(realpath "$dir/big.html")"
rendered=(); walls=(); loadeds=()
for i in $(seq "$runs"); do
  profile=$(mktemp -d)
  t0=$(date +%s%N)
  dom=$("$chromium" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --no-first-run --user-data-dir="$profile" --dump-dom "$page" 2> /dev/null)
  t1=$(date +%s%N)
  rm -rf "$profile"
  ms=$(grep -o 'data-rendered-ms="[0-9.]*"' <<< "$dom" | grep -o '[0-9.]*' || echo "?")
  loaded=$(grep -o 'data-loaded-ms="[0-9.]*"' <<< "$dom" | grep -o '[0-9.]*' || echo "?")
  painted=$(grep -o 'data-painted-ms="[0-9.]*"' <<< "$dom" | grep -o '[0-9.]*' || echo "?")
  shown=$(grep -o 'data-matching="[0-9]*" data-shown="[0-9]*"' <<< "$dom" || echo "no matrix")
  wall=$(( (t1 - t0) / 1000000 ))
  echo "run $i: rendered at ${ms} ms, load event ${loaded} ms, first frame after it ${painted} ms; chromium --dump-dom ${wall} ms wall ($shown)"
  rendered+=("$ms"); walls+=("$wall"); loadeds+=("$loaded")
done
# Chromium's own start-up, for scale: the same command on an empty page.
profile=$(mktemp -d); t0=$(date +%s%N)
"$chromium" --headless --no-sandbox --disable-gpu --disable-background-networking \
  --no-first-run --user-data-dir="$profile" --dump-dom "about:blank" > /dev/null 2>&1
t1=$(date +%s%N); rm -rf "$profile"
echo "about:blank: chromium --dump-dom $(( (t1 - t0) / 1000000 )) ms wall"
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "median: rendered at $(median "${rendered[@]}") ms; load event $(median "${loadeds[@]}") ms; wall $(median "${walls[@]}") ms"
