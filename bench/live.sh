#!/usr/bin/env bash
# Live throughput (DESIGN §11): N cases against the loopback answer server
# (`examples/answer_server.rs`, Rust, never the bottleneck) answering after DELAY seconds,
# with -p P calls in flight for each P given. Ideal wall time: N × DELAY / P (plus start-up).
#   bash bench/live.sh [N] [P,P,...] [DELAY]     # default: 1000 4,16,64,256 0.05
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000}; ps=${2:-4,16,64,256}; delay=${3:-0.05}
# Two builds: an example builds with the dev-dependencies' features, which would rebuild evals.
cargo build --release --quiet --bin evals
cargo build --release --quiet --example answer_server
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
target/release/examples/answer_server 18767 "$delay" > /dev/null & server=$!
trap 'kill $server' EXIT
sleep 0.3
cd "$suite"
for p in ${ps//,/ }; do
  ideal=$(python3 -c "print(round($n * $delay / $p, 3))")
  echo "live: $n cases, -p $p, ${delay}s per call; ideal wall time ${ideal}s"
  for i in 1 2 3; do
    /usr/bin/time -f "%e s wall, %U s user, %M KiB max RSS" ../release/evals compare --no-autosave \
      --cassettes live -p "$p" --history /tmp/bench-live.sqlite3 > /dev/null
  done
done
