#!/usr/bin/env bash
# Re-records fixtures/travel-desk's cassettes (the contenders' and the judge's, under the
# top-level cassettes/travel-desk/) against its scripted local server, so
# `cd fixtures/travel-desk && evals check` replays them offline. The cassettes show the
# pipeline, not model reasoning.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --quiet
port=8788   # the suite's local.base_url
python3 tests/support/travel_desk_server.py "$port" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
sleep 0.5
rm -rf cassettes/travel-desk
cd fixtures/travel-desk
# The scripted server takes any key; a real one is never needed nor written.
LOCAL_KEY="local-scripted-server-needs-no-real-key-0000" \
  ../../target/debug/evals record --no-autosave "$@"
