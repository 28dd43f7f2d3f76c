#!/usr/bin/env bash
# Live throughput (DESIGN §11, issue 31's "Live" rows): N cases against the loopback answer
# server (`examples/answer_server.rs`, Rust, never the bottleneck) answering after DELAY
# seconds, with -p P calls in flight for each P given; efficiency = ideal / wall, the ideal
# being N × DELAY / P. Then what the exec adapter's gateway adds per exchange at -p GATEWAY_P
# (default 64): the same cases through the prompt adapter and through an exec adapter whose
# worker (bench/exec_worker.py: Python's standard library, one kept-alive connection) just
# forwards each case's input to the gateway (`OPENAI_BASE_URL`) as the prompt adapter would
# send it and prints the reply; at N and at GATEWAY_N2 (default 4 × N) cases, so that the
# workers' start-up (a Python each), a fixed cost, drops out of the per-exchange figure:
#   per exchange = ((exec(N2) - exec(N)) - (prompt(N2) - prompt(N))) × P / (N2 - N)
# (wall time spread over P exchanges in flight, as an added latency of each), and the same
# slope of evals's own CPU (read from /proc, the workers' apart): what the gateway's relay
# and the workers' pipes cost, whatever the workers' own cost. Release
# (`dist`) build, medians of RUNS (default 3) of `evals compare --no-autosave --cassettes live`,
# a fresh history each run. The table goes to stdout and, dated, at the end of
# bench/RESULTS.md under its marker (APPEND=0: stdout only).
#   bash bench/live.sh [N] [P,P,...] [DELAY]     # default: 1000 4,16,64,256 0.05
#   EVALS_BIN=path/to/evals ANSWER_SERVER=path/to/answer_server RUNS=5 bash bench/live.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export N=${1:-1000} PS=${2:-4,16,64,256} DELAY=${3:-0.05}
export RUNS=${RUNS:-3} GATEWAY_P=${GATEWAY_P:-64} GATEWAY_N2=${GATEWAY_N2:-$(( ${1:-1000} * 4 ))}
# Two builds: an example builds with the dev-dependencies' features, which would rebuild evals.
if [ -z "${EVALS_BIN:-}" ]; then
  cargo build --profile dist --quiet --bin evals
  EVALS_BIN=${CARGO_TARGET_DIR:-$root/target}/dist/evals
fi
if [ -z "${ANSWER_SERVER:-}" ]; then
  cargo build --release --quiet --example answer_server
  ANSWER_SERVER=${CARGO_TARGET_DIR:-$root/target}/release/examples/answer_server
fi
export EVALS_BIN=$(realpath "$EVALS_BIN") ANSWER_SERVER=$(realpath "$ANSWER_SERVER")
export LIVE_DIR=$root/target/bench-live
rm -rf "$LIVE_DIR"; mkdir -p "$LIVE_DIR"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average before:" \
  "$(cut -d' ' -f1-3 /proc/loadavg); evals $(git rev-parse --short HEAD)" | tee "$out"
python3 - <<'PY' | tee -a "$out"
import json, os, shutil, statistics, subprocess, sys, time

N, DELAY, RUNS = int(os.environ["N"]), float(os.environ["DELAY"]), int(os.environ["RUNS"])
PS = [int(p) for p in os.environ["PS"].split(",") if p]
GP, N2 = int(os.environ["GATEWAY_P"]), int(os.environ["GATEWAY_N2"])
EVALS, SERVER, DIR = os.environ["EVALS_BIN"], os.environ["ANSWER_SERVER"], os.environ["LIVE_DIR"]
WORKER = os.path.join(os.getcwd(), "bench", "exec_worker.py")


def suite(name, n, adapter):
    root = os.path.join(DIR, f"{name}-{n}")
    os.makedirs(os.path.join(root, "evals", "datasets", "live"))
    open(os.path.join(root, "evals", ".llm-evals.config.yml"), "w").write(
        f"suite: bench-live\nrequest_types: [prompt]\nadapter: {adapter}\n"
        "scorer: { kind: fields, schema: { city: string, count: integer, ok: boolean } }\n"
        "bench:\n  base_url: http://127.0.0.1:18767/v1\n  models: [answer]\n")
    with open(os.path.join(root, "evals", "datasets", "live", "cases.jsonl"), "w") as f:
        for i in range(n):
            ans = {"city": f"city-{i % 97}", "count": i % 13, "ok": i % 3 == 0}
            f.write(json.dumps({"id": f"c/{i:05d}", "input": f"Case {i}.\n{json.dumps(ans)}",
                                "expected": ans}) + "\n")
    return root


PROMPT = '{ kind: prompt, user: "{{ input }}", json: true }'
EXEC = f"{{ kind: exec, command: [python3, -S, {json.dumps(WORKER)}] }}"


def own_cpu(pid):
    """The CPU seconds (user + system) process `pid` itself has used, its children apart."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(root, p):
    """Wall seconds, CPU seconds (user + system, children included), evals's own CPU
    seconds (read from /proc every 20 ms until it exits: the last reading) and stdout."""
    history = os.path.join(DIR, "live.sqlite3")
    for f in (history, history + "-wal", history + "-shm"):
        if os.path.exists(f):
            os.remove(f)
    start = time.perf_counter()
    proc = subprocess.Popen([EVALS, "compare", "--no-autosave", "--cassettes", "live", "-p", str(p),
                             "--history", history], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    own = 0.0
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        own = own_cpu(proc.pid) or own
        time.sleep(0.02)
    wall = time.perf_counter() - start
    stdout, stderr = proc.stdout.read().decode(), proc.stderr.read().decode()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"evals compare in {root} exited {os.waitstatus_to_exitcode(status)}:\n{stderr[-2000:]}{stdout[-2000:]}")
    return wall, ru.ru_utime + ru.ru_stime, own, stdout


def median(root, p):
    got = [run(root, p) for _ in range(RUNS)]
    return tuple(statistics.median(g[i] for g in got) for i in range(3)) + (got[-1][3],)


server = subprocess.Popen([SERVER, "18767", str(DELAY)], stdout=subprocess.PIPE)
server.stdout.readline()  # "listening on ..."
try:
    rows = []
    prompt_n = suite("prompt", N, PROMPT)
    for p in PS:
        ideal = N * DELAY / p
        wall, cpu, own, _ = median(prompt_n, p)
        rows.append(f"| prompt adapter, {N:,} × {DELAY * 1000:.0f} ms, -p {p} | {ideal:.3f} s | {wall:.3f} s | "
                    f"{cpu:.3f} s | {own:.2f} s | **{ideal / wall:.1%}** (target ≥ 97%) |")
        print(rows[-1], file=sys.stderr, flush=True)
    walls, owns = {}, {}
    for name, adapter in (("prompt", PROMPT), ("exec", EXEC)):
        for n in (N, N2):
            root = prompt_n if (name, n) == ("prompt", N) else suite(name, n, adapter)
            wall, cpu, own, stdout = median(root, GP)
            if name == "exec" and n == N:
                # The worker's answers are scored as the prompt adapter's are: the same leaderboard.
                print(stdout.strip().splitlines()[-1] if stdout.strip() else "(no leaderboard)", file=sys.stderr)
            walls[name, n], owns[name, n] = wall, own
            ideal = n * DELAY / GP
            rows.append(f"| {name} adapter, {n:,} × {DELAY * 1000:.0f} ms, -p {GP} | {ideal:.3f} s | {wall:.3f} s | "
                        f"{cpu:.3f} s | {own:.2f} s | {ideal / wall:.1%} |")
            print(rows[-1], file=sys.stderr, flush=True)
    print("| run | ideal | wall | CPU (user + sys, workers included) | evals's own CPU | efficiency |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))
    at_n = (walls["exec", N] - walls["prompt", N]) * GP / N * 1000
    marginal = ((walls["exec", N2] - walls["exec", N]) - (walls["prompt", N2] - walls["prompt", N])) * GP / (N2 - N) * 1000
    print(f"\nThe gateway at -p {GP}: exec minus prompt, as an added latency of each exchange: "
          f"**{marginal:.2f} ms** from the slope between {N:,} and {N2:,} cases (target ≤ 1 ms); "
          f"{at_n:.2f} ms at {N:,} cases with the {GP} workers' start-up in it. evals's own CPU "
          f"(the gateway's relay, the workers' pipes), exec minus prompt: "
          f"**{((owns['exec', N2] - owns['exec', N]) - (owns['prompt', N2] - owns['prompt', N])) / (N2 - N) * 1e6:.0f} µs "
          f"an exchange** from the same slope (/proc's 10 ms ticks).")
finally:
    server.terminate(); server.wait()
PY
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out"
[ "${APPEND:-1}" = 0 ] && exit 0
python3 - "$out" <<'PY'
import sys
marker = "<!-- bench/live.sh appends below this line, oldest first -->"
figures = open(sys.argv[1]).read().strip()
path = "bench/RESULTS.md"
text = open(path).read()
if marker not in text:
    text = text.rstrip("\n") + f"""

## Live, and what the gateway adds (issue 31, `bench/live.sh`)

`bash bench/live.sh 1000 4,16,64,256 0.05`: 1,000 cases against the Rust answer server
(50 ms a call) at -p 4, 16, 64 and 256 through the prompt adapter, then the prompt adapter
against an exec adapter whose worker (`bench/exec_worker.py`) forwards each case through the
gateway, at -p 64, at 1,000 and 4,000 cases. The line above each table says when, on what
load, and which commit.

{marker}
"""
lines = figures.splitlines()
block = f"\n```text\n{lines[0]}\n```\n\n" + "\n".join(lines[1:]) + "\n"
open(path, "w").write(text.rstrip("\n") + "\n" + block)
print(f"written into {path}", file=sys.stderr)
PY
