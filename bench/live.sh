#!/usr/bin/env bash
# Live throughput (DESIGN §11): N cases against a local server that answers after DELAY
# seconds, with -p P calls in flight. Ideal wall time: N × DELAY / P (plus start-up).
#   bash bench/live.sh [N] [P] [DELAY]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-400}; p=${2:-20}; delay=${3:-0.1}
cargo build --release --quiet
suite=target/bench-live
rm -rf "$suite"; mkdir -p "$suite/evals/datasets/live"
cat > "$suite/evals/.llm-evals.config.yml" <<YAML
suite: bench-live
request_types: [prompt]
adapter: { kind: prompt, user: "{{ input }}", json: true }
scorer: { kind: fields, schema: { city: string, count: integer, ok: boolean } }
bench:
  base_url: http://127.0.0.1:18767/v1
  models: [answer]
YAML
python3 - "$n" > "$suite/evals/datasets/live/cases.jsonl" <<'PY'
import json, sys
for i in range(int(sys.argv[1])):
    ans = {"city": f"city-{i % 97}", "count": i % 13, "ok": i % 3 == 0}
    print(json.dumps({"id": f"c/{i:05d}", "input": f"Case {i}.\n{json.dumps(ans)}", "expected": ans}))
PY
python3 bench/answer_server.py 18767 "$delay" & server=$!
trap 'kill $server' EXIT
sleep 0.5
ideal=$(python3 -c "print(round($n * $delay / $p, 3))")
echo "live: $n cases, -p $p, ${delay}s per call; ideal wall time ${ideal}s"
cd "$suite"
if command -v hyperfine > /dev/null; then
  hyperfine --warmup 1 --runs 5 "../release/evals compare --no-autosave --cassettes live -p $p --history /tmp/bench-live.sqlite3"
else
  /usr/bin/time -f "%e s wall" ../release/evals compare --no-autosave --cassettes live -p "$p" --history /tmp/bench-live.sqlite3 > /dev/null
fi
