#!/usr/bin/env bash
# Issue 20's table, both tools, one run of this script: evals and promptfoo on the same cases
# and the same loopback answer server (the Rust one, `examples/answer_server.rs`), medians of
# RUNS (default 3) of wall time, CPU (user + system; wait4, so a child's children count too)
# and peak RSS (GNU time's %M, from a second run of each):
#   - replay: N = 1,000, 10,000, 100,000 recorded cases (the suites of bench/replay.sh,
#     recorded once into target/bench-suite-N; evals replays its cassettes with CI=1, a fresh
#     history each run; promptfoo reads its response cache, filled by a first run, with the
#     server stopped). promptfoo runs up to PF_MAX_REPLAY cases (default 10,000): at 100,000
#     it would need most of this machine's memory and many minutes a run.
#   - live: 1,000 cases × 50 ms a call at -p 4, 16, 64, 256 (efficiency = ideal / wall, the
#     ideal being 1,000 × 0.05 s / p).
#   - start-up: `evals cases` on fixtures/toy; promptfoo evaluating one case of its `echo`
#     provider (its smallest eval).
#   - check (JOBS=check, or bench/check.sh): the command CI runs, `CI=1 evals check --branch
#     pr --baseline main --json F --junit F --markdown F --html F --diff F`, replaying N cases
#     against a history holding a `main` run of the same N cases (so the comparison really
#     runs; each timed run starts from a copy of that history), beside promptfoo's cached
#     re-run writing its JSON, HTML and JUnit-like XML outputs (`-o`) for N <= PF_MAX_REPLAY.
# JOBS (default "replay live start-up") picks the jobs, CHECK_SIZES (default "1000 10000
# 100000") the check's sizes.
# promptfoo PF_VERSION (default 0.121.20, the newest whose `engines` admit Node.js 20; 0.122
# and later need 22.22) is installed into PF_DIR (default target/promptfoo-PF_VERSION) with
# its browser download skipped. Prints the table as Markdown.
#   bash bench/compare.sh
#   SUITES=/elsewhere/target RUNS=5 bash bench/compare.sh   # recorded suites kept elsewhere
#   EVALS_BIN=path/to/evals ANSWER_SERVER=path/to/answer_server bash bench/compare.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export RUNS=${RUNS:-3}
export PF_VERSION=${PF_VERSION:-0.121.20}
export PF_DIR=${PF_DIR:-$root/target/promptfoo-$PF_VERSION}
export PF_MAX_REPLAY=${PF_MAX_REPLAY:-10000}
export SUITES=${SUITES:-$root/target}
export JOBS=${JOBS:-replay live start-up}
export CHECK_SIZES=${CHECK_SIZES:-1000 10000 100000}
# Two builds: an example builds with the dev-dependencies' features (the library again, the
# first time), which would rebuild evals. evals is built with the `dist` profile, as the
# release archives are (Cargo.toml). EVALS_BIN=path and ANSWER_SERVER=path use builds
# already made.
if [ -z "${EVALS_BIN:-}" ]; then
  cargo build --profile dist --quiet --bin evals
  EVALS_BIN=$root/target/dist/evals
fi
if [ -z "${ANSWER_SERVER:-}" ]; then
  cargo build --release --quiet --example answer_server
  ANSWER_SERVER=$root/target/release/examples/answer_server
fi
export EVALS_BIN ANSWER_SERVER
sizes="1000 10000 100000"
case " $JOBS " in *" replay "*) ;; *) sizes=$CHECK_SIZES ;; esac
for n in $sizes; do
  if [ ! -f "$SUITES/bench-suite-$n/.recorded-$n" ]; then
    bash bench/replay.sh "$n" > /dev/null   # records it once into target/bench-suite-N
  fi
done
if [ ! -x "$PF_DIR/node_modules/.bin/promptfoo" ]; then
  mkdir -p "$PF_DIR"
  (cd "$PF_DIR" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --no-audit --no-fund \
    --ignore-scripts "promptfoo@$PF_VERSION" > /dev/null)
fi
export TMP_BENCH
TMP_BENCH=$(mktemp -d)
trap 'rm -rf "$TMP_BENCH"' EXIT
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB," \
  "load average before: $(cut -d' ' -f1-3 /proc/loadavg); evals $(git rev-parse --short HEAD)," \
  "promptfoo $PF_VERSION on Node.js $(node --version)"
python3 - <<'PY'
import json, os, shutil, signal, statistics, subprocess, sys, time

RUNS = int(os.environ["RUNS"])
TMP = os.environ["TMP_BENCH"]
EVALS = os.environ["EVALS_BIN"]
SERVER = os.environ["ANSWER_SERVER"]
SUITES = os.environ["SUITES"]
PF = os.path.join(os.environ["PF_DIR"], "node_modules", ".bin", "promptfoo")
PF_MAX = int(os.environ["PF_MAX_REPLAY"])
ROOT = os.getcwd()
PF_ENV = dict(os.environ, PROMPTFOO_DISABLE_TELEMETRY="1", PROMPTFOO_DISABLE_UPDATE="1",
              PROMPTFOO_CACHE_PATH=os.path.join(TMP, "pf-cache"),
              PROMPTFOO_CONFIG_DIR=os.path.join(TMP, "pf-config"))
PF_EVAL = [PF, "eval", "--no-write", "--no-progress-bar", "--no-table"]


# The peak RSS comes from a second run under GNU time: a child forked from Python starts
# with Python's pages, and Linux keeps that in its ru_maxrss after the exec, so every figure
# would be at least this script's own size (about 22 MiB late in a run); time's own few
# pages are all its child starts with. Wall and CPU come from the run without it (time's
# own exec is a few milliseconds: most of a start-up's).
GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
if not GNU_TIME:
    print("(no /usr/bin/time: peak RSS is the kernel's ru_maxrss, at least this script's size)",
          file=sys.stderr)


def spawn(cmd, cwd, env, prepare):
    if prepare:
        prepare()
    log = open(os.path.join(TMP, "stderr.log"), "ab")
    start = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=log)
    _, status, ru = os.wait4(p.pid, 0)
    return time.perf_counter() - start, ru, os.waitstatus_to_exitcode(status)


def once(cmd, cwd, env, prepare=None):
    """Wall seconds, CPU seconds (user + system), peak RSS in MiB, exit status."""
    wall, ru, code = spawn(cmd, cwd, env, prepare)
    rss = ru.ru_maxrss / 1024
    if GNU_TIME:
        rss_file = os.path.join(TMP, "rss")
        _, _, timed = spawn([GNU_TIME, "-f", "%M", "-o", rss_file] + cmd, cwd, env, prepare)
        # time writes "Command exited with non-zero status N" first when the command fails.
        rss = int(open(rss_file).read().split()[-1]) / 1024
        code = code or timed
    return wall, ru.ru_utime + ru.ru_stime, rss, code


def median(cmd, cwd, env, prepare=None, runs=RUNS):
    got = [once(cmd, cwd, env, prepare) for _ in range(runs)]
    bad = [g[3] for g in got if g[3] != 0]
    if bad:
        print(f"  ({' '.join(cmd[:3])}... exited {bad[0]}: see the last lines below)", file=sys.stderr)
        sys.stderr.buffer.write(open(os.path.join(TMP, "stderr.log"), "rb").read()[-2000:])
    return tuple(statistics.median(g[i] for g in got) for i in range(3))


def server(port, delay):
    s = subprocess.Popen([SERVER, str(port), str(delay)], stdout=subprocess.PIPE)
    s.stdout.readline()  # "listening on ..."
    return s


def cases(n, text):
    for i in range(n):
        ans = {"city": f"city-{i % 97}", "count": i % 13, "ok": i % 3 == 0}
        yield i, ans, text(i, ans)


def pf_config(name, n, port, text):
    tests = [{"vars": {"input": t}, "assert": [{"type": "is-json"}]} for _, _, t in cases(n, text)]
    path = os.path.join(TMP, f"{name}.json")
    json.dump({"prompts": ["{{input}}"], "tests": tests,
               "providers": [{"id": "openai:chat:answer",
                              "config": {"apiBaseUrl": f"http://127.0.0.1:{port}/v1", "apiKey": "x"}}]},
              open(path, "w"))
    return path


rows = []
def row(job, tool, figures, per=None, ideal=None):
    wall, cpu, rss = figures
    eff = f"{ideal / wall:.0%}" if ideal else ""
    per_case = f"{cpu / per * 1e6:.0f} µs" if per else ""
    rows.append(f"| {job} | {tool} | {wall:.3f} s | {cpu:.3f} s | {per_case} | {rss:.1f} MiB | {eff} |")
    print(rows[-1], file=sys.stderr, flush=True)

JOBS = os.environ["JOBS"].split()
replay_text = lambda i, a: f"Case {i}: read the facts.\n{json.dumps(a)}"

# The check CI runs: against a baseline of the same cases, every report written.
for n in (int(x) for x in os.environ["CHECK_SIZES"].split()) if "check" in JOBS else ():
    suite = os.path.join(SUITES, f"bench-suite-{n}")
    base = os.path.join(TMP, f"check-base-{n}.sqlite3")
    history = os.path.join(TMP, "check.sqlite3")
    env = dict(os.environ, CI="1", EVALS_HISTORY=history)
    reports = []
    for flag, ext in (("--json", "json"), ("--junit", "xml"), ("--markdown", "md"),
                      ("--html", "html"), ("--diff", "diff")):
        reports += [flag, os.path.join(TMP, f"check-report.{ext}")]
    # The baseline: main's run of the same cases, stored once.
    subprocess.run([EVALS, "check", "--branch", "main", "--missing-baseline", "pass", "--no-autosave"],
                   cwd=suite, env=dict(env, EVALS_HISTORY=base), stdout=subprocess.DEVNULL, check=True)
    def from_base():
        for f in (history, history + "-wal", history + "-shm"):
            if os.path.exists(f):
                os.remove(f)
        shutil.copyfile(base, history)
    row(f"check --baseline main, every report, {n:,} cases", "evals",
        median([EVALS, "check", "--branch", "pr", "--baseline", "main", "--no-autosave"] + reports,
               suite, env, from_base), per=n)
    if n <= PF_MAX:
        cfg = pf_config(f"replay-{n}", n, 18768, replay_text)
        s = server(18768, 0)
        once(PF_EVAL + ["-c", cfg, "-j", "32"], TMP, PF_ENV)  # fills promptfoo's cache
        s.terminate(); s.wait()
        outs = []
        for ext in ("json", "html", "xml"):
            outs += ["-o", os.path.join(TMP, f"pf-report.{ext}")]
        row(f"check --baseline main, every report, {n:,} cases", "promptfoo (cached re-run, -o json html xml)",
            median(PF_EVAL + ["-c", cfg, "-j", "32"] + outs, TMP, PF_ENV), per=n)
    else:
        rows.append(f"| check {n:,} cases | promptfoo | not run (PF_MAX_REPLAY={PF_MAX}) | | | | |")

# Replay.
for n in (1000, 10000, 100000) if "replay" in JOBS else ():
    suite = os.path.join(SUITES, f"bench-suite-{n}")
    history = os.path.join(TMP, "replay.sqlite3")
    fresh = lambda: [os.remove(f) for f in (history, history + "-wal", history + "-shm") if os.path.exists(f)]
    env = dict(os.environ, CI="1", EVALS_HISTORY=history)
    row(f"replay {n:,} cases", "evals",
        median([EVALS, "compare", "--no-autosave", "--cassettes", "replay"], suite, env, fresh), per=n)
    if n <= PF_MAX:
        cfg = pf_config(f"replay-{n}", n, 18768, replay_text)
        s = server(18768, 0)
        once(PF_EVAL + ["-c", cfg, "-j", "32"], TMP, PF_ENV)  # fills promptfoo's cache
        s.terminate(); s.wait()
        row(f"replay {n:,} cases", f"promptfoo (from its cache)",
            median(PF_EVAL + ["-c", cfg, "-j", "32"], TMP, PF_ENV), per=n)
    else:
        rows.append(f"| replay {n:,} cases | promptfoo | not run (PF_MAX_REPLAY={PF_MAX}) | | | | |")

# Live: 1,000 cases, 50 ms a call.
def live_job():
    live = os.path.join(TMP, "live")
    os.makedirs(os.path.join(live, "evals", "datasets", "live"))
    open(os.path.join(live, "evals", ".llm-evals.config.yml"), "w").write(
        "suite: bench-live\nrequest_types: [prompt]\n"
        "adapter: { kind: prompt, user: \"{{ input }}\", json: true }\n"
        "scorer: { kind: fields, schema: { city: string, count: integer, ok: boolean } }\n"
        "bench:\n  base_url: http://127.0.0.1:18767/v1\n  models: [answer]\n")
    live_text = lambda i, a: f"Case {i}.\n{json.dumps(a)}"
    with open(os.path.join(live, "evals", "datasets", "live", "cases.jsonl"), "w") as f:
        for i, ans, text in cases(1000, live_text):
            f.write(json.dumps({"id": f"c/{i:05d}", "input": text, "expected": ans}) + "\n")
    cfg = pf_config("live", 1000, 18767, live_text)
    s = server(18767, 0.05)
    for p in (4, 16, 64, 256):
        ideal = 1000 * 0.05 / p
        job = f"live 1,000 × 50 ms, -p {p} (ideal {ideal:.3f} s)"
        row(job, "evals", median([EVALS, "compare", "--no-autosave", "--cassettes", "live", "-p", str(p),
                                  "--history", os.path.join(TMP, "live.sqlite3")], live, os.environ), ideal=ideal)
        row(job, "promptfoo", median(PF_EVAL + ["-c", cfg, "--no-cache", "-j", str(p)], TMP, PF_ENV), ideal=ideal)
    s.terminate(); s.wait()


# Start-up.
def startup_job():
    row("start-up: `evals cases` (toy suite)", "evals",
        median([EVALS, "cases"], os.path.join(ROOT, "fixtures", "toy"), os.environ, runs=max(RUNS, 11)))
    one = os.path.join(TMP, "one.json")
    json.dump({"prompts": ["{{input}}"], "providers": ["echo"], "tests": [{"vars": {"input": "hi"}}]}, open(one, "w"))
    row("start-up: one case (promptfoo's `echo` provider)", "promptfoo",
        median(PF_EVAL + ["-c", one, "--no-cache"], TMP, PF_ENV))


if "live" in JOBS:
    live_job()
if "start-up" in JOBS:
    startup_job()

print("| job | tool | wall | CPU (user + sys) | CPU a case | peak RSS | efficiency |")
print("|---|---|---|---|---|---|---|")
print("\n".join(rows))
PY
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
