//! Peak memory is flat in the number of cases: a streamed run of 50,000 cases (suite loaded,
//! every case run, scored, logged and stored in a SQLite history) needs no more heap than a
//! run of 1,000; nor does `check --baseline main` of 50,000 against a stored baseline of
//! 50,000 with every report (JSON, JUnit, Markdown, HTML, diff, the leaderboard). Heap measured by counting this process's allocations (a test binary of its
//! own, so nothing else allocates beside it), not by a timer or an RSS read: the same run
//! gives the same figure, and holding as little as 2 bytes a case more shows as 98 KB.
//! (Before the suite's index and the case log's slots went to disk, 50,000 cases took
//! 2.0 MB at the peak, 1,000 took 0.8.)

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use llm_evals::gate::{Baseline, CheckPlan, MissingBaseline, Rules};
use llm_evals::history::SqliteStore;
use llm_evals::report::Format;
use llm_evals::results::{CaseSource, Command};
use llm_evals::runner::{
    HistorySink, Hooks, Prepared, RunOptions, RunPlan, Sinks, StderrNotices, Streamed,
};
use llm_evals::suite::Suite;
use llm_evals::suite::lineup::{Overrides, expand};

/// Bytes allocated and not freed, and the most there were since [`reset_peak`].
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

struct Counting;

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is passed to `System` as it came; the counts are all that is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as the caller's contract for `alloc`.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as the caller's contract for `alloc_zeroed`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as the caller's contract for `dealloc`.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as the caller's contract for `realloc`.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            grew(new_size);
        }
        p
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Held by each test while it measures: the counts are the process's, so one test at a time.
static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ALONE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A suite of `n` cases in one JSONL file, answered by the fake `echo` model (offline),
/// scored by `fields`: each input carries its answer, as the benchmark suite's do.
fn write_suite(dir: &Path, n: usize) {
    let evals = dir.join("evals");
    std::fs::create_dir_all(evals.join("datasets/bench")).unwrap();
    std::fs::write(
        evals.join(".llm-evals.config.yml"),
        "suite: memory\nrequest_types: [prompt]\nadapter: { kind: prompt, user: \"{{ input }}\", json: true }\nscorer:\n  kind: fields\n  schema: { city: string, count: integer }\ndefaults: { parallelism: 4 }\nfake:\n  models: [echo]\n",
    )
    .unwrap();
    let lines: String = (0..n)
        .map(|i| {
            let answer = format!("{{\"city\": \"city-{}\", \"count\": {}}}", i % 97, i % 13);
            let input =
                serde_json::to_string(&format!("Case {i}: read the facts. {answer}")).unwrap();
            format!("{{\"id\": \"c/{i:06}\", \"input\": {input}, \"expected\": {answer}}}\n")
        })
        .collect();
    std::fs::write(evals.join("datasets/bench/cases.jsonl"), lines).unwrap();
}

/// The most heap a streamed run of a suite of `n` cases held at once, beyond what was held
/// before it began: load, plan, run, store.
fn peak_of_a_run(n: usize) -> usize {
    let dir = tempfile::tempdir().unwrap();
    write_suite(dir.path(), n);
    let db = dir.path().join("history.sqlite3");
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let (streamed, stored) = run_and_store(dir.path(), &db, RunOptions::default());
    let peak = PEAK.load(Ordering::Relaxed) - before;
    // The run is whole: every case ran, scored, and is in the history.
    assert_eq!(streamed.cases.len(0), n);
    let e = &streamed.run.experiments[0];
    assert_eq!((e.cases_total, e.errors, e.score), (n, 0, Some(1.0)));
    assert!(stored.is_ok(), "{stored:?}");
    peak
}

/// The suite in `dir` loaded, planned, run streamed with `options` and stored in the SQLite
/// history at `db`: the run with its case log, and how the store went.
fn run_and_store(
    dir: &Path,
    db: &Path,
    options: RunOptions,
) -> (Streamed, llm_evals::error::Result<String>) {
    let config = dir.join("evals/.llm-evals.config.yml");
    let suite = Suite::load(&config, dir).unwrap();
    let lineup = expand(&suite.config, &Overrides::default(), &options.providers);
    let plan = RunPlan::new(&suite, lineup, suite.cases.cases.clone(), None, None).unwrap();
    let history = Arc::new(HistorySink::new({
        let db = db.to_path_buf();
        move || SqliteStore::open(&db)
    }));
    let mut sinks = Sinks::new();
    sinks.push(history.clone());
    let hooks = Hooks {
        sinks,
        ..Hooks::default()
    };
    let streamed = Prepared::new(&suite, plan, options, &StderrNotices)
        .unwrap()
        .run_streamed(hooks, &StderrNotices)
        .unwrap();
    let stored = history.outcome().expect("the history sink ran");
    (streamed, stored)
}

/// A check's options: on `branch`, as `evals check` runs.
fn check_on(branch: &str) -> RunOptions {
    RunOptions::default().command(Command::Check).branch(branch)
}

/// The most heap `check --baseline main` with every report, of a suite of `n` cases, held
/// at once beyond what was held before it began: the run streamed and stored, gated against
/// a stored main run of the same `n` cases (read from the history a case at a time), every
/// case compared, then every report written from the case log.
fn peak_of_a_check(n: usize) -> usize {
    let dir = tempfile::tempdir().unwrap();
    write_suite(dir.path(), n);
    let db = dir.path().join("history.sqlite3");
    let (_, stored) = run_and_store(dir.path(), &db, check_on("main"));
    assert!(stored.is_ok(), "{stored:?}");
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let (streamed, stored) = run_and_store(dir.path(), &db, check_on("pr"));
    assert!(stored.is_ok(), "{stored:?}");
    let plan = CheckPlan::check(
        Baseline::parse_in_history("main"),
        Rules::tolerance(0.02),
        MissingBaseline::Fail,
    );
    let history = SqliteStore::open(&db).unwrap();
    let checked = llm_evals::gate::check_streamed(
        &streamed.run,
        CaseSource::Log(&streamed.cases),
        &plan,
        &history,
    )
    .unwrap();
    // Every report, from the case log, as `evals check --json --junit --markdown --html
    // --diff` writes them, and the leaderboard and the verdict it prints.
    let mut written = Counted(0);
    for format in [
        Format::Json,
        Format::Junit,
        Format::Markdown,
        Format::Html,
        Format::Diff,
        Format::Terminal,
    ] {
        llm_evals::report::write(
            format,
            Default::default(),
            &streamed.run,
            CaseSource::Log(&streamed.cases),
            Some(&checked.comparison),
            &mut written,
        )
        .unwrap();
    }
    let said = llm_evals::report::verdict::Terminal::of_cases(
        &streamed.run,
        CaseSource::Log(&streamed.cases),
        &checked.comparison,
    )
    .unwrap();
    let peak = PEAK.load(Ordering::Relaxed) - before;
    assert!(said.reasons.is_empty(), "{:?}", said.reasons);
    assert!(written.0 > n * 300, "{} bytes for {n} cases", written.0);
    // Every case was compared with main's: the same, so the check passed.
    let c = &checked.comparison;
    assert!(
        checked.refused.is_none() && checked.passed(),
        "{:?}",
        c.verdict
    );
    assert_eq!(
        c.baseline.as_ref().and_then(|b| b.branch.as_deref()),
        Some("main")
    );
    assert_eq!((c.unchanged, c.cases.len()), (n, 0));
    assert_eq!(c.experiments[0].matched, n);
    peak
}

#[test]
fn a_run_of_fifty_thousand_cases_needs_no_more_heap_than_a_run_of_one_thousand() {
    let _alone = alone();
    // A first run, so what is made once a process (a runtime, a pool) is made before.
    peak_of_a_run(100);
    let small = peak_of_a_run(1_000);
    let large = peak_of_a_run(50_000);
    eprintln!("peak heap: 1,000 cases {small} B, 50,000 cases {large} B");
    // 49,000 more cases: at 2 bytes each, 98 KB more.
    assert!(
        large < small + 64 * 1024,
        "50,000 cases took {large} B of heap at the peak, 1,000 took {small} B: something holds each case"
    );
}

#[test]
fn a_check_of_fifty_thousand_cases_against_as_many_needs_no_more_heap_than_one_of_one_thousand() {
    let _alone = alone();
    peak_of_a_check(100);
    let small = peak_of_a_check(1_000);
    let large = peak_of_a_check(50_000);
    eprintln!("peak heap of a check: 1,000 cases {small} B, 50,000 cases {large} B");
    assert!(
        large < small + 64 * 1024,
        "a check of 50,000 cases took {large} B of heap at the peak, one of 1,000 took {small} B: something holds each case"
    );
}

/// A sink counting the bytes written to it.
struct Counted(usize);

impl std::io::Write for Counted {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
