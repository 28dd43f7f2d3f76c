#!/usr/bin/env bash
# Side by side with promptfoo (DESIGN §11), on the same cases and the same local answer
# server: live (400 cases, 20 in flight, 100 ms a call) and replay/cache (10,000 cases).
# promptfoo 0.110.0 is the newest that runs on this machine's Node.js 20 (later ones need 22);
# it is installed into target/promptfoo with its browser download skipped. Its closest thing
# to a replay is its response cache, filled by a first run and read with the server down.
#   bash bench/promptfoo.sh   (needs bench/live.sh and bench/replay.sh to have run once)
set -euo pipefail
cd "$(dirname "$0")/.."
pf=target/promptfoo
if [ ! -x "$pf/node_modules/.bin/promptfoo" ]; then
  mkdir -p "$pf"
  (cd "$pf" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --no-audit --no-fund --ignore-scripts promptfoo@0.110.0 > /dev/null)
fi
export PROMPTFOO_DISABLE_TELEMETRY=1 PROMPTFOO_DISABLE_UPDATE=1
python3 - "$pf" <<'PY'
import json, sys
def cfg(n, port, text):
    tests = []
    for i in range(n):
        ans = {"city": f"city-{i % 97}", "count": i % 13, "ok": i % 3 == 0}
        tests.append({"vars": {"input": text(i, ans)}, "assert": [{"type": "is-json"}]})
    return {"prompts": ["{{input}}"], "tests": tests,
            "providers": [{"id": "openai:chat:answer",
                           "config": {"apiBaseUrl": f"http://127.0.0.1:{port}/v1", "apiKey": "x"}}]}
d = sys.argv[1]
json.dump(cfg(400, 18767, lambda i, a: f"Case {i}.\n{json.dumps(a)}"), open(f"{d}/live.json", "w"))
json.dump(cfg(10000, 18766, lambda i, a: f"Case {i}: read the facts.\n{json.dumps(a)}"), open(f"{d}/replay.json", "w"))
PY
pfx="$pf/node_modules/.bin/promptfoo eval --no-write --no-progress-bar --no-table"

echo "== live: 400 cases, 20 in flight, 100 ms a call (ideal 2.0 s)"
python3 bench/answer_server.py 18767 0.1 & server=$!
sleep 0.5
hyperfine --warmup 1 --runs 5 \
  "$pfx -c $pf/live.json --no-cache -j 20" \
  "cd target/bench-live && ../release/evals compare --no-autosave --cassettes live -p 20 --history /tmp/bench-live.sqlite3"
kill $server

echo "== replay: 10,000 cases, no server (promptfoo from its cache, evals from its cassettes)"
python3 bench/answer_server.py 18766 0 & server=$!
sleep 0.5
$pfx -c $pf/replay.json -j 32 > /dev/null   # fills promptfoo's cache
kill $server
hyperfine --warmup 1 --runs 3 \
  "$pfx -c $pf/replay.json -j 32" \
  "cd target/bench-suite && CI=1 ../release/evals compare --no-autosave --cassettes replay"
