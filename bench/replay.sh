#!/usr/bin/env bash
# Replay benchmark (DESIGN §11): N recorded cases (default 10,000) replayed, scored, stored
# and reported by a release build, with no network. The cassettes are recorded once into
# target/bench-suite-N against a local answer server (kept: recording 100,000 takes minutes);
# the timed part is the replay only, each run with a fresh history file so runs compare.
#   bash bench/replay.sh [N]
#   EVALS_BIN=path/to/evals bash bench/replay.sh [N]   # time another build (no cargo build)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10000}
if [ -z "${EVALS_BIN:-}" ]; then
  cargo build --release --quiet
  EVALS_BIN=target/release/evals
fi
bin=$(realpath "$EVALS_BIN")
suite=target/bench-suite-$n
if [ ! -f "$suite/.recorded-$n" ]; then
  rm -rf "$suite"; mkdir -p "$suite/evals/datasets/bench"
  cat > "$suite/evals/.llm-evals.config.yml" <<YAML
suite: bench
request_types: [prompt]
adapter: { kind: prompt, user: "{{ input }}", json: true }
scorer:
  kind: fields
  schema: { city: string, count: integer, ok: boolean }
defaults: { temperature: 0.0, parallelism: 64 }
bench:
  base_url: http://127.0.0.1:18766/v1
  models: [answer]
YAML
  python3 - "$n" > "$suite/evals/datasets/bench/cases.jsonl" <<'PY'
import json, sys
for i in range(int(sys.argv[1])):
    ans = {"city": f"city-{i % 97}", "count": i % 13, "ok": i % 3 == 0}
    print(json.dumps({"id": f"c/{i:05d}", "input": f"Case {i}: read the facts.\n{json.dumps(ans)}", "expected": ans}))
PY
  python3 bench/answer_server.py 18766 & server=$!
  sleep 0.5
  (cd "$suite" && EVALS_HISTORY=.evals/record.sqlite3 "$bin" record --no-autosave -j 1 -p 32 > /dev/null) || { kill $server; exit 1; }
  kill $server
  touch "$suite/.recorded-$n"
fi
cd "$suite"
echo "replaying $n cases ($bin, CI=1: strict replay, no network)"
for i in 1 2 3; do
  rm -f .evals/bench.sqlite3*
  CI=1 EVALS_HISTORY=.evals/bench.sqlite3 /usr/bin/time -f "%e s wall, %M KiB max RSS" \
    "$bin" compare --no-autosave --cassettes replay > /dev/null
done
if command -v hyperfine > /dev/null; then
  CI=1 EVALS_HISTORY=.evals/bench.sqlite3 hyperfine --warmup 1 --runs 5 \
    --prepare "rm -f .evals/bench.sqlite3*" "$bin compare --no-autosave --cassettes replay"
fi
