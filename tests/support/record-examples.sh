#!/usr/bin/env bash
# Re-records the example suites' cassettes against the scripted local server, so the README's
# main command replays them offline. The cassettes show the pipeline, not model reasoning.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --quiet
port=${PORT:-18765}
python3 tests/support/scripted_server.py tests/support/tax_intake_script.json \
  fixtures/tax-intake/evals/datasets "$port" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
sleep 0.5
cd fixtures/tax-intake
EVALS_REDIRECT="https://openrouter.ai/api/v1=http://127.0.0.1:$port/api/v1" \
OPENROUTER_API_KEY="sk-or-v1-scripted-server-needs-no-real-key-0000000000" \
  ../../target/debug/evals record --no-autosave -j 0 "$@"
