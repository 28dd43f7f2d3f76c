#!/usr/bin/env bash
# Issue 31's rows: the command CI runs, `CI=1 evals check --branch pr --baseline main --json F
# --junit F --markdown F --html F --diff F`, replaying N = 1,000, 10,000 and 100,000 recorded
# cases against a history holding main's run of the same N (a copy of it for each timed run),
# release (`dist`) build, medians of RUNS (default 3) of wall, CPU and peak RSS, with
# promptfoo's cached re-run writing its own reports beside it for 1,000 and 10,000 (the check
# job of bench/compare.sh, which holds the recipe and records the suites once). The table goes
# to stdout and, dated, into bench/RESULTS.md under its marker (newest first).
#   bash bench/check.sh
#   CHECK_SIZES="10000" RUNS=5 bash bench/check.sh
#   EVALS_BIN=path/to/evals ANSWER_SERVER=path/to/answer_server bash bench/check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp)
trap 'rm -f "$out"' EXIT
JOBS=check bash bench/compare.sh | tee "$out"
python3 - "$out" <<'PY'
import sys
marker = "<!-- bench/check.sh writes below this line, newest first -->\n"
figures = open(sys.argv[1]).read().strip()
path = "bench/RESULTS.md"
text = open(path).read()
if marker not in text:
    sys.exit(f"error: {path} has no line {marker.strip()!r}: put it back under the check section")
lines = figures.splitlines()
table = [l for l in lines[1:] if l.startswith("|")]
after = [l for l in lines[1:] if not l.startswith("|")]
block = f"\n```text\n{lines[0]}\n```\n\n" + "\n".join(table) + "\n\n" + "\n".join(after) + "\n"
open(path, "w").write(text.replace(marker, marker + block, 1))
print(f"written into {path}", file=sys.stderr)
PY
