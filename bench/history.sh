#!/usr/bin/env bash
# Issue 31's "History that grows" rows, release (`dist`) build, medians of RUNS (default 3;
# at least 5 for the commands that take milliseconds):
#   - check: the command CI runs, `CI=1 evals check --branch pr --baseline main --json F
#     --junit F --markdown F --html F --diff F --no-autosave` (no JSON snapshot written into the
#     recorded suite), replaying target/bench-suite-1000, on a history holding only main's
#     baseline run and on one holding 1,000 runs of main of 1,000 cases each; every timed run
#     starts from a fresh copy of its history (check stores its run).
#   - `evals history` and `evals history --json` on the big history.
#   - `evals dashboard` on the big history: its run list (`/`, `/runs.json`) and a run page
#     (`/runs/500`, compared with main as the dashboard does), HTTP GETs timed by curl.
#   - a 100,000-case run (target/bench-suite-100000, stored on branch big-pr against a
#     baseline stored on big-main, in a copy of the big history): its dashboard page and the
#     HTML report its `check --html` wrote, opened in headless Chromium (as bench/html_load.sh
#     times a report: the page's own `data-rendered-ms`, `performance.now()` from navigation
#     start to the first page of its case matrix drawn, which for the dashboard includes the
#     server's answer; the load event; the `chromium --dump-dom` process's wall time).
#   - EXPLAIN QUERY PLAN, and the time, of each history query the commands run, on the big
#     history (the SQL read from src/history/sqlite.rs).
# The big history is built once, honestly: HISTORY_RUNS (default 1,000) real runs of `CI=1
# evals check --branch main --missing-baseline pass --no-autosave` on target/bench-suite-1000
# stored one after another into one file (about 0.5 s each: 455 s in all on a loaded 2-core
# machine), cached under HISTORY_CACHE
# (default target/bench-history; delete it to build again; a build cut short resumes). The
# table goes to stdout and, dated, at the end of bench/RESULTS.md under its marker.
#   bash bench/history.sh
#   RUNS=5 EVALS_BIN=path/to/evals bash bench/history.sh
#   SKIP_100K=1 bash bench/history.sh          # without the 100,000-case pages
#   APPEND=0 HISTORY_RUNS=10 HISTORY_CACHE=/tmp/h bash bench/history.sh   # a quick try, not kept
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export RUNS=${RUNS:-3}
export SUITES=${SUITES:-$root/target}
export HISTORY_RUNS=${HISTORY_RUNS:-1000}
export HISTORY_CACHE=${HISTORY_CACHE:-$root/target/bench-history}
export SKIP_100K=${SKIP_100K:-}
export CHROMIUM=${CHROMIUM:-chromium}
if [ -z "${EVALS_BIN:-}" ]; then
  cargo build --profile dist --quiet --bin evals
  EVALS_BIN=${CARGO_TARGET_DIR:-$root/target}/dist/evals
fi
export EVALS_BIN=$(realpath "$EVALS_BIN")
for n in 1000 100000; do
  if [ ! -f "$SUITES/bench-suite-$n/.recorded-$n" ]; then
    EVALS_BIN=$EVALS_BIN bash bench/replay.sh "$n" > /dev/null   # records it once
  fi
done
mkdir -p "$HISTORY_CACHE"
export TMP_BENCH
TMP_BENCH=$(mktemp -d)
out=$(mktemp)
trap 'rm -rf "$TMP_BENCH" "$out"' EXIT
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB," \
  "load average before: $(cut -d' ' -f1-3 /proc/loadavg); evals $(git rev-parse --short HEAD)," \
  "$("$CHROMIUM" --version 2> /dev/null | head -1)" | tee "$out"
python3 - <<'PY' | tee -a "$out"
import os, re, shutil, sqlite3, statistics, subprocess, sys, time

RUNS = int(os.environ["RUNS"])
FAST = max(RUNS, 5)
EVALS = os.environ["EVALS_BIN"]
SUITES = os.environ["SUITES"]
TMP = os.environ["TMP_BENCH"]
CACHE = os.environ["HISTORY_CACHE"]
N_RUNS = int(os.environ["HISTORY_RUNS"])
CHROMIUM = os.environ["CHROMIUM"]
S1K = os.path.join(SUITES, "bench-suite-1000")
S100K = os.path.join(SUITES, "bench-suite-100000")
BASE = os.path.join(CACHE, "base-1000.sqlite3")
BIG = os.path.join(CACHE, f"runs-{N_RUNS}x1000.sqlite3")
BIG100K = os.path.join(CACHE, f"runs-{N_RUNS}x1000-and-100k.sqlite3")
REPORT100K = os.path.join(CACHE, "check-100k.html")
WORK = os.path.join(TMP, "work.sqlite3")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def evals(args, cwd, history, ok=(0,), **kw):
    env = dict(os.environ, CI="1", EVALS_HISTORY=history)
    p = subprocess.run([EVALS] + args, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, **kw)
    if p.returncode not in ok:
        sys.exit(f"evals {' '.join(args)} exited {p.returncode}:\n{p.stderr.decode()[-2000:]}")
    return p


def store_main(history):
    evals(["check", "--branch", "main", "--missing-baseline", "pass", "--no-autosave"], S1K, history)


def count(history, where="1"):
    c = sqlite3.connect(history)
    try:
        return c.execute(f"SELECT COUNT(*) FROM runs WHERE {where}").fetchone()[0]
    finally:
        c.close()


def copy(src, dst):
    """A copy of a history, on disk before the timed run starts: left in the page cache
    unwritten, the copy's gigabyte would be written by the first fsync of the run's last
    connection (its checkpoint on close), inside the time measured."""
    for f in (dst, dst + "-wal", dst + "-shm"):
        if os.path.exists(f):
            os.remove(f)
    shutil.copyfile(src, dst)
    fd = os.open(dst, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)


def checkpoint(history):
    c = sqlite3.connect(history)
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    c.close()


# The histories, built once and kept.
if not os.path.exists(BASE):
    store_main(BASE + ".part")
    checkpoint(BASE + ".part")
    os.rename(BASE + ".part", BASE)
if not os.path.exists(BIG):
    part = BIG + ".part"
    have = count(part) if os.path.exists(part) else 0
    start = time.perf_counter()
    log(f"building {BIG}: {have} of {N_RUNS} runs stored")
    for i in range(have, N_RUNS):
        store_main(part)
        if (i + 1) % 100 == 0:
            log(f"  {i + 1} runs, {time.perf_counter() - start:.0f} s")
    checkpoint(part)
    os.rename(part, BIG)
    log(f"built in {time.perf_counter() - start:.0f} s")
if not os.environ["SKIP_100K"] and not os.path.exists(BIG100K):
    part = BIG100K + ".part"
    copy(BIG, part)
    log("storing two runs of 100,000 cases (big-main, then big-pr against it)")
    evals(["check", "--branch", "big-main", "--missing-baseline", "pass", "--no-autosave"], S100K, part)
    evals(["check", "--branch", "big-pr", "--baseline", "big-main", "--no-autosave",
           "--html", REPORT100K], S100K, part)
    checkpoint(part)
    os.rename(part, BIG100K)

rows = []
def row(what, figures, unit="s", note=""):
    med = statistics.median(figures)
    spread = f"{min(figures):.3f}–{max(figures):.3f}" if unit == "s" else f"{min(figures):.0f}–{max(figures):.0f}"
    shown = f"{med:.3f} s" if unit == "s" else f"{med:.0f} ms"
    rows.append(f"| {what} | {shown} | {spread} | {len(figures)} | {note} |")
    log(rows[-1])
    return med


CPU = []  # each timed run's CPU seconds (user + system), as `timed` measured it


def timed(cmd, cwd, env, prepare=None, runs=RUNS):
    got = []
    for _ in range(runs):
        if prepare:
            prepare()
        err = open(os.path.join(TMP, "stderr.log"), "wb")
        start = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        got.append(time.perf_counter() - start)
        CPU.append(ru.ru_utime + ru.ru_stime)
        code = os.waitstatus_to_exitcode(status)
        if code not in (0, 1):  # 1: the gate failed, still a whole check
            sys.exit(f"{' '.join(cmd)} exited {code}:\n{open(err.name, errors='replace').read()[-2000:]}")
    return got


# 1. check on a history of the baseline alone, and on 1,000 runs (interleaved, so a change of
# the machine's load falls on both).
reports = []
for flag, ext in (("--json", "json"), ("--junit", "xml"), ("--markdown", "md"),
                  ("--html", "html"), ("--diff", "diff")):
    reports += [flag, os.path.join(TMP, f"report.{ext}")]
check = [EVALS, "check", "--branch", "pr", "--baseline", "main", "--no-autosave"] + reports
env = dict(os.environ, CI="1", EVALS_HISTORY=WORK)
small, big, small_cpu, big_cpu = [], [], [], []
for _ in range(RUNS):
    small += timed(check, S1K, env, lambda: copy(BASE, WORK), runs=1)
    small_cpu.append(CPU[-1])
    big += timed(check, S1K, env, lambda: copy(BIG, WORK), runs=1)
    big_cpu.append(CPU[-1])
mb = lambda p: os.path.getsize(p) / 2**20
cpu = lambda c: f"CPU {statistics.median(c):.3f} s"
s = row(f"check --baseline main, every report, 1,000 cases; history: the baseline alone ({mb(BASE):.1f} MiB)", small,
        note=cpu(small_cpu))
row(f"the same; history: {N_RUNS:,} runs × 1,000 cases ({mb(BIG):,.0f} MiB)", big,
    note=f"{cpu(big_cpu)}; wall {statistics.median(big) / s - 1:+.1%}, CPU "
         f"{statistics.median(big_cpu) / statistics.median(small_cpu) - 1:+.1%} against the baseline alone (target ≤ +10%)")

# 2. evals history.
env = dict(os.environ)
for args in (["history"], ["history", "--json"]):
    row(f"`evals {' '.join(args)} --history` ({N_RUNS:,} runs; 20 listed)",
        [t * 1000 for t in timed([EVALS] + args + ["--history", BIG], TMP, env, runs=FAST)],
        unit="ms", note="target ≤ 100 ms")


# 3. The dashboard.
def dashboard(history):
    p = subprocess.Popen([EVALS, "dashboard", "--history", history, "--port", "0"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    url = p.stdout.readline().strip()
    if not url.startswith("http"):
        sys.exit(f"evals dashboard printed {url!r}")
    return p, url.rstrip("/")


def curl(url):
    out = subprocess.run(["curl", "-sS", "-o", os.path.join(TMP, "page"), "-w", "%{http_code} %{time_total}", url],
                         capture_output=True, text=True, check=True).stdout.split()
    if out[0] != "200":
        sys.exit(f"GET {url}: {out[0]}\n{open(os.path.join(TMP, 'page'), errors='replace').read()[:2000]}")
    return float(out[1]) * 1000, os.path.getsize(os.path.join(TMP, "page"))


def gets(url, runs=FAST):
    first, size = curl(url)  # the first, cold, is left out of the median and told
    return [curl(url)[0] for _ in range(runs)], first, size


p, url = dashboard(BIG)
try:
    for path, what in (("/", "run list (200 newest)"), ("/runs.json", "run list as JSON"),
                       (f"/runs/{N_RUNS // 2}", f"a run page (run {N_RUNS // 2}, 1,000 cases, compared with main)")):
        got, first, size = gets(url + path)
        row(f"dashboard `GET {path}`: {what}", got, unit="ms",
            note=f"target ≤ 100 ms; first GET {first:.0f} ms; {size / 1024:,.0f} KiB")
finally:
    p.terminate(); p.wait()


# 4. A 100,000-case run in headless Chromium.
def chromium(page):
    profile = os.path.join(TMP, "chromium-profile")
    shutil.rmtree(profile, ignore_errors=True)
    start = time.perf_counter()
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                          "--disable-background-networking", "--no-first-run",
                          f"--user-data-dir={profile}", "--dump-dom", page],
                         capture_output=True, text=True).stdout
    wall = (time.perf_counter() - start) * 1000
    got = lambda a: float(m.group(1)) if (m := re.search(a + r'="([0-9.]+)"', dom)) else float("nan")
    return got("data-rendered-ms"), got("data-loaded-ms"), wall


def browser_rows(what, page):
    runs = [chromium(page) for _ in range(RUNS)]
    rendered = row(f"{what}: first page of the matrix drawn (`data-rendered-ms`)", [r[0] for r in runs],
                   unit="ms", note="target ≤ 2,000 ms")
    row(f"{what}: load event", [r[1] for r in runs], unit="ms")
    row(f"{what}: `chromium --dump-dom` wall (browser start-up and the DOM's dump included)",
        [r[2] for r in runs], unit="ms")


if not os.environ["SKIP_100K"]:
    c = sqlite3.connect(BIG100K)
    pr = c.execute("SELECT number FROM runs WHERE branch = 'big-pr'").fetchone()[0]
    c.close()
    p, url = dashboard(BIG100K)
    try:
        page = f"{url}/runs/{pr}?baseline=big-main"
        got, first, size = gets(page, runs=RUNS)
        row(f"dashboard `GET /runs/{pr}?baseline=big-main` (100,000 cases) by curl", got, unit="ms",
            note=f"first GET {first:,.0f} ms; {size / 2**20:,.1f} MiB")
        browser_rows("the 100,000-case run's dashboard page in Chromium", page)
    finally:
        p.terminate(); p.wait()
    browser_rows(f"the 100,000-case HTML report ({os.path.getsize(REPORT100K) / 2**20:,.1f} MiB, from `check --html`) in Chromium",
                 "file://" + REPORT100K)
    row("`chromium --dump-dom about:blank` wall (the browser alone)",
        [chromium("about:blank")[2] for _ in range(RUNS)], unit="ms")

print("| what | median | range | runs | notes |")
print("|---|---|---|---|---|")
print("\n".join(rows))

# 5. The history's queries: their plans and times on the big history.
src = open("src/history/sqlite.rs").read()
body = src[src.index("fn sql_of"):]
body = body[:body.index("\nimpl ")]
queries = {m.group(1): m.group(2).replace('\\"', '"') for m in
           re.finditer(r'Query::(\w+) => \{?\s*(?://[^\n]*\n\s*)*"((?:[^"\\]|\\.)*)"', body, re.S)}
c = sqlite3.connect(f"file:{BIG}?mode=ro", uri=True)
ids = [r[0] for r in c.execute("SELECT id FROM runs ORDER BY number")]
mid = c.execute("SELECT id, started_at FROM runs WHERE number = ?", (N_RUNS // 2,)).fetchone()
last = c.execute("SELECT id, started_at FROM runs ORDER BY number DESC LIMIT 1").fetchone()
args = {
    "IdOfNumber": (N_RUNS // 2,),
    "Id": (mid[0],),
    "Prefixed": (mid[0][:8], 8),
    "CountPrefixed": (mid[0][:8], 8),
    "BaselineCandidates": ("bench", "main", "9999", "ffffffff"),
    "Runs": (None, None, None, None, None, 200),
    "CaseRuns": ("c/00500", None, None, None, 1000),
    "Scores": ("main", None, 50),
}
# (`length` for `octet_length`, which Python's older SQLite lacks: the same on a BLOB.)
queries["snapshot (SqliteStore::read_snapshot)"] = "SELECT rowid, length(snapshot) FROM run_snapshots WHERE run_id = ?1"
args["snapshot (SqliteStore::read_snapshot)"] = (mid[0],)
queries["store: the next number"] = "SELECT COALESCE(MAX(number), 0) + 1 FROM runs"
args["store: the next number"] = ()
print(f"\nEXPLAIN QUERY PLAN on {os.path.basename(BIG)} ({len(ids):,} runs), each query's median of 21 (Python's sqlite3, warm):\n")
print("| query | median | plan |")
print("|---|---|---|")
for name, sql in queries.items():
    a = args.get(name, ())
    plan = "; ".join(r[3] for r in c.execute("EXPLAIN QUERY PLAN " + sql, a))
    t = []
    for _ in range(21):
        start = time.perf_counter()
        c.execute(sql, a).fetchall()
        t.append((time.perf_counter() - start) * 1000)
    print(f"| {name} | {statistics.median(t):.2f} ms | {plan} |")
c.close()
PY
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out"
[ "${APPEND:-1}" = 0 ] && exit 0
python3 - "$out" <<'PY'
import sys
marker = "<!-- bench/history.sh appends below this line, oldest first -->"
figures = open(sys.argv[1]).read().strip()
path = "bench/RESULTS.md"
text = open(path).read()
if marker not in text:
    text = text.rstrip("\n") + f"""

## History that grows, and a 100,000-case run's pages (issue 31, `bench/history.sh`)

`bash bench/history.sh`: `check --baseline main` with every report on a history holding the
baseline alone and on one of 1,000 runs × 1,000 cases (built by really running `evals check
--branch main` 1,000 times into one file), `evals history`, the dashboard's run list and
run pages (curl), a 100,000-case run's dashboard page and HTML report in headless Chromium,
and the plan of each history query. The line above each table says when, on what load, and
which commit.

{marker}
"""
lines = figures.splitlines()
block = f"\n```text\n{lines[0]}\n```\n\n" + "\n".join(lines[1:]) + "\n"
open(path, "w").write(text.rstrip("\n") + "\n" + block)
print(f"written into {path}", file=sys.stderr)
PY
