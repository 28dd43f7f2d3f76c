//! `run`, `compare` and `record`: plan, resolve the cassette mode, run through the library
//! ([`llm_evals::runner::Prepared`]) with its sinks (progress bars, the history store, the JSON
//! snapshot), report. The case results stay in the run's case log, on disk; they are read
//! back only for an output that lists cases (the breakdown of `run`, errors, failed
//! thresholds, a stopped run, `--format json/html`, `--totals variant`), so the common
//! leaderboard of `compare` holds none.

use std::path::Path;
use std::sync::Arc;

use super::args::{Format, RunArgs};
use super::exit;
use super::output::Out;
use super::report_file::ReportFile;
use llm_evals::cassette::mode::{self, ModeChoice, ModeSource};
use llm_evals::env::Env;
use llm_evals::error::{Error, Result};
use llm_evals::report::Terminal;
use llm_evals::results::{Command as RunCommand, Comparison, RunResult};
use llm_evals::runner;
use llm_evals::runner::{HistorySink, SnapshotSink};
use llm_evals::suite::Suite;

/// Runs a command end to end and returns its exit code.
pub(crate) fn run(
    suite: &Suite,
    a: &RunArgs,
    command: RunCommand,
    env: &Env,
    out: &Out,
) -> Result<i32> {
    // `record` refreshes recordings: it reports thresholds but never gates on them.
    let gates = command != RunCommand::Record;
    if !gates && (a.min_score.is_some() || a.min_pass_rate.is_some()) {
        return Err(Error::Usage(
            "--min-score and --min-pass-rate gate run, compare and check; record does not gate (run `evals check` after it)".into(),
        ));
    }
    let runner::Streamed { mut run, cases } = execute_streamed(suite, a, command, env, out)?;
    let browser = browser(suite, a, command.as_str(), &run, env);
    if browser.is_some() || needs_cases(&run, a, command == RunCommand::Run) {
        cases.fill(&mut run)?;
    }
    drop(cases);
    // Thresholds gate every run, by the rule `check` applies (with no baseline).
    let failed = llm_evals::gate::threshold_failures(&run);
    let passed = run.total_errors() == 0 && (!gates || failed.is_empty());
    let code = exit::of_run(run.run.status, passed);
    use llm_evals::suite::config::Display;
    match a.display(suite.config.results.display) {
        // `display: none` prints no leaderboard; a file or JSON asked for is still written.
        // `display: browser` shows the report in the browser instead.
        Some(Display::None | Display::Browser) if a.output.is_none() && a.format == Format::Tui => {
        }
        _ => {
            let view = View {
                breakdown: command == RunCommand::Run,
                totals: a.totals,
            };
            emit(&run, None, a.format.into(), a.output.as_deref(), view, out)?;
        }
    }
    if let Some(b) = &browser {
        let asked = (a.format == Format::Html)
            .then_some(a.output.as_deref())
            .flatten();
        b.show(&run, None, asked, out);
    }
    if run.total_errors() > 0 {
        out.warn(&format!(
            "{} (no score; see the errors column)",
            llm_evals::text::plural(run.total_errors(), "case errored", "cases errored")
        ));
        if command != RunCommand::Run {
            // `run` prints each error in its breakdown; elsewhere, say what went wrong here.
            let errors: Vec<String> = run
                .experiments
                .iter()
                .flat_map(|e| {
                    e.cases.iter().filter_map(move |c| {
                        c.error.as_ref().map(|err| {
                            format!(
                                "  {} · {}: {}",
                                llm_evals::report::format::experiment_label(
                                    &e.contender,
                                    &e.dataset
                                ),
                                c.case,
                                err.message.lines().next().unwrap_or("")
                            )
                        })
                    })
                })
                .collect();
            for line in errors.iter().take(10) {
                out.note(line);
            }
            if errors.len() > 10 {
                out.note(&format!(
                    "  and {} more; `evals run` prints every case with its error",
                    errors.len() - 10
                ));
            }
        }
    }
    if !failed.is_empty() {
        if gates {
            out.error("thresholds failed:");
        } else {
            out.warn("thresholds failed (record does not gate; `evals check` will):");
        }
        for line in failed.iter().take(10) {
            out.note(&format!(
                "  {}",
                llm_evals::report::verdict::reason_text(line)
            ));
        }
        if failed.len() > 10 {
            out.note(&format!(
                "  and {} more; `evals run` marks each failing case, `evals check --markdown FILE` lists them all",
                failed.len() - 10
            ));
        }
    }
    // Last, the run's own verdict: the leaderboard covers only the cases that ran.
    if let Some(s) = llm_evals::gate::stopped(&run) {
        out.error(&format!(
            "evals {command}: {}",
            llm_evals::report::format::stopped(&s)
        ));
    }
    if gates {
        suite_note(suite, code == exit::OK, out);
    }
    Ok(code)
}

/// The suite's own last word on a gated run (`notes.passed` / `notes.failed` in the
/// config): a demo's next step, or why its failure is the point.
pub(crate) fn suite_note(suite: &Suite, passed: bool, out: &Out) {
    let notes = &suite.config.notes;
    let note = if passed { &notes.passed } else { &notes.failed };
    if let Some(note) = note.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
        out.note(note);
    }
}

/// How the run shows its HTML report in the browser, when it does (`--open`,
/// `results.display: browser|both`): a stamped file beside the run's snapshots.
pub(crate) fn browser(
    suite: &Suite,
    a: &RunArgs,
    command: &str,
    run: &RunResult,
    env: &Env,
) -> Option<super::open::Browser> {
    super::open::wanted(a.display(suite.config.results.display), a.open).then(|| {
        super::open::Browser {
            stamped: {
                let path = super::target::results_dir(suite, a.destination.as_deref())
                    .join(super::target::stamped_name(command, run, "html"));
                match path.strip_prefix(&suite.cwd) {
                    Ok(rel) => rel.to_path_buf(),
                    Err(_) => path,
                }
            },
            no_open: a.no_open,
            desktop: super::open::Desktop::read(env),
        }
    })
}

/// Whether what `run` prints after the run reads case results: the per-case breakdown, the
/// lines naming errors and failed thresholds, a stopped run's count of cases that ran,
/// `--min-pass-rate`, a variant table, a JSON or HTML report. Otherwise (a clean
/// leaderboard) the figures of each experiment are all it needs.
fn needs_cases(run: &RunResult, a: &RunArgs, breakdown: bool) -> bool {
    use super::args::TotalsArg;
    breakdown
        || a.format != Format::Tui
        || a.totals != TotalsArg::Overall
        || run.run.status != llm_evals::results::RunStatus::Completed
        || llm_evals::gate::Limits::of(run).min_pass_rate.is_some()
        || run.experiments.iter().any(|e| e.errors > 0 || e.failed > 0)
}

/// Plans, executes through the library and stores; returns the run, every case in it.
/// Shared with `check`.
pub(crate) fn execute(
    suite: &Suite,
    a: &RunArgs,
    command: RunCommand,
    env: &Env,
    out: &Out,
) -> Result<RunResult> {
    let runner::Streamed { mut run, cases } = execute_streamed(suite, a, command, env, out)?;
    cases.fill(&mut run)?;
    Ok(run)
}

/// [`execute`] with the case results left in the run's case log.
pub(crate) fn execute_streamed(
    suite: &Suite,
    a: &RunArgs,
    command: RunCommand,
    env: &Env,
    out: &Out,
) -> Result<runner::Streamed> {
    let limits = super::plan::limits(a)?;
    let plan = super::plan::build(suite, a)?;
    let ModeChoice { mode, why } = mode::choose(
        mode_given(a),
        command.default_mode(),
        command.as_str(),
        env.ci,
    )?;
    out.verbose(&format!("cassettes: {mode} ({why})"));
    #[cfg(feature = "trackers")]
    let tracker = tracker_of(suite, a, &plan.cases, out)?;
    #[cfg(not(feature = "trackers"))]
    no_tracker(suite, a)?;
    let options = runner::RunOptions {
        mode,
        scorer: llm_evals::score::ScorerChoice::Config,
        on_streak: if a.yes {
            runner::OnStreak::GoOn
        } else {
            runner::OnStreak::Ask
        },
        command,
        branch: a.branch.clone(),
        selection: runner::Selection {
            models: a.models.clone(),
            datasets: a.select.datasets.clone(),
            cases: a.select.cases.clone(),
            efforts: a.efforts.clone(),
            temperatures: a.temperatures.clone(),
            max_tokens: a.max_tokens,
            tags: a.select.tags.clone(),
            shard: plan.shard.clone(),
        },
        limits,
        env: env.clone(),
        sinks: runner::Sinks::new(),
        cancel: super::interrupt::token(),
        ..runner::RunOptions::default()
    };
    let prepared = runner::Prepared::new(suite, plan, options, out)?;

    // Where stderr goes while progress bars draw, and where an exec adapter's stderr goes.
    let warnings_log = suite.project_dir.join("log").join(format!(
        "{command}.warnings.{}.log",
        chrono::Utc::now().format("%Y%m%dT%H%M%SZ")
    ));
    let progress = super::progress::Progress::new(prepared.plan(), &warnings_log);
    let shown = llm_evals::suite::discovery::display_path(&warnings_log, &suite.cwd);
    let mut sinks = runner::Sinks::new();
    if let Some(bars) = progress.sink() {
        sinks.push(bars);
    }
    let (location, source) = history_location(suite, a.history.as_deref());
    let history = Arc::new(HistorySink::new({
        let location = location.clone();
        move || location.open()
    }));
    sinks.push(history.clone());
    let autosave = !a.no_autosave && suite.config.results.autosave != Some(false);
    let snapshot = autosave.then(|| {
        let dir = super::target::results_dir(suite, a.destination.as_deref());
        Arc::new(SnapshotSink::new(Box::new(move |run: &RunResult| {
            dir.join(super::target::stamped_name(
                run.run.command.as_str(),
                run,
                "json",
            ))
        })))
    });
    if let Some(s) = &snapshot {
        sinks.push(s.clone());
    }
    #[cfg(feature = "trackers")]
    if let Some(t) = &tracker {
        sinks.push(t.clone());
    }
    let hooks = runner::Hooks {
        sinks,
        quiet: Some(progress.quiet()),
        exec_stderr: prepared.uses_exec().then(|| {
            if progress.capturing() {
                // While the bars draw, our stderr is that log already: workers share it.
                llm_evals::adapter::StderrTo::Stderr { shown }
            } else {
                llm_evals::adapter::StderrTo::File {
                    path: warnings_log.clone(),
                    shown,
                }
            }
        }),
    };
    // While the bars draw, stderr is the warnings log: the run's own notices (what
    // `record` wrote) go to the terminal.
    let streamed = prepared.run_streamed(hooks, &progress.notices(out))?;
    let run = &streamed.run;
    if let Some(log) = progress
        .finish()
        .or_else(|| super::progress::tidy_log(&warnings_log))
    {
        out.note(&format!(
            "messages written to stderr during the run (libraries, the adapter) are in {}",
            llm_evals::suite::discovery::display_path(&log, &suite.cwd)
        ));
    }
    out.verbose(&format!(
        "history: {} ({source})",
        match &location {
            llm_evals::history::Location::Sqlite(p) =>
                llm_evals::suite::discovery::display_path(p, &suite.cwd),
            other => other.shown(),
        }
    ));
    stored(
        suite,
        &run.run.id,
        history.outcome(),
        snapshot.as_ref().and_then(|s| s.outcome()),
        out,
    );
    #[cfg(feature = "trackers")]
    if let Some(sent) = tracker.as_ref().and_then(|t| t.outcome()) {
        tracked(tracker.as_deref(), sent, out);
    }
    Ok(streamed)
}

/// A build without the `trackers` feature keeps results local: a tracker asked for by name
/// (`--tracker`, `tracker:`) is refused; a tracker's key in the environment chooses nothing.
#[cfg(not(feature = "trackers"))]
fn no_tracker(suite: &Suite, a: &RunArgs) -> Result<()> {
    let asked = match a.tracker.as_deref() {
        Some("none") | None => suite
            .config
            .tracker
            .map(|t| format!("tracker: {t:?} in the config")),
        Some(name) => Some(format!("--tracker {name}")),
    };
    match asked {
        Some(asked) if !a.local => Err(Error::Usage(format!(
            "{asked}: this build of evals has no remote trackers (the `trackers` feature): build it with `--features trackers`, or keep results local with --local"
        ))),
        _ => Ok(()),
    }
}

/// The run's remote tracker (`--tracker`, `tracker:`, the one key set; none with
/// `--local`), its key checked before any model is called; `-v` says which and why.
#[cfg(feature = "trackers")]
fn tracker_of(
    suite: &Suite,
    a: &RunArgs,
    cases: &llm_evals::suite::Cases,
    out: &Out,
) -> Result<Option<Arc<llm_evals::tracker::TrackerSink>>> {
    let choice = llm_evals::tracker::choose(
        a.tracker.as_deref(),
        a.local,
        suite.config.tracker,
        &suite.display_path,
        &|name| suite.env(name),
    )?;
    let name = choice.kind.map_or("local only", |k| k.name());
    out.verbose(&format!("tracker: {name} ({})", choice.why));
    let flags = llm_evals::tracker::Flags {
        project: a.project.clone(),
    };
    Ok(llm_evals::tracker::build(&choice, suite, cases, &flags, out)?.map(Arc::new))
}

/// Says what the tracker sent (its pages' URLs), or warns once that it stopped: the run's
/// result and exit code stand either way.
#[cfg(feature = "trackers")]
fn tracked(
    sink: Option<&llm_evals::tracker::TrackerSink>,
    sent: llm_evals::tracker::Sent,
    out: &Out,
) {
    let name = sink.map_or("tracker", |s| s.kind().name());
    if let Some(why) = &sent.failure {
        out.warn(&format!(
            "tracker {name} failed, and sent nothing more: {why}; the run's results are kept locally (its JSON snapshot and the history)"
        ));
    }
    if let Some(s) = &sent.summary {
        out.verbose(s);
    }
    for url in &sent.urls {
        out.note(&format!("{name}: {url}"));
    }
}

/// Says where the history and snapshot sinks put a finished run (or why they could not):
/// `stored run … in …`, `saved …`.
pub(super) fn stored(
    suite: &Suite,
    run_id: &str,
    history: Option<Result<String>>,
    snapshot: Option<Result<std::path::PathBuf>>,
    out: &Out,
) {
    match history {
        Some(Ok(p)) => out.note(&format!(
            "stored run {run_id} in {}",
            llm_evals::suite::discovery::display_path(Path::new(&p), &suite.cwd)
        )),
        Some(Err(e)) => out.warn(&format!("could not store the run in the history: {e}")),
        None => {}
    }
    match snapshot {
        Some(Ok(p)) => out.note(&format!(
            "saved {}",
            llm_evals::suite::discovery::display_path(&p, &suite.cwd)
        )),
        Some(Err(e)) => out.warn(&format!("could not save the JSON snapshot: {e}")),
        None => {}
    }
}

/// How the terminal report looks.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct View {
    /// The per-case breakdown first (`run`).
    pub(crate) breakdown: bool,
    pub(crate) totals: super::args::TotalsArg,
}

/// Writes the report (with the run's comparison, if it has one) to stdout or `-o FILE`.
pub(crate) fn emit(
    run: &RunResult,
    comparison: Option<&Comparison>,
    format: llm_evals::report::Format,
    output: Option<&Path>,
    view: View,
    out: &Out,
) -> Result<()> {
    let terminal = Terminal {
        color: output.is_none() && out.color(),
        breakdown: view.breakdown,
        totals: view.totals.into(),
        width: output.is_none().then(|| out.width()).flatten(),
        explain: out.explain(),
    };
    let text = llm_evals::report::render(format, terminal, run, comparison);
    super::target::write(&text, ReportFile::of("-o", format), output, out)
}

/// The `--cassettes` value and where it came from: clap fills the flag from
/// `EVALS_CASSETTES` too, and the command line says which it was.
fn mode_given(a: &RunArgs) -> Option<(&str, ModeSource)> {
    let from_flag = std::env::args().any(|x| x == "--cassettes" || x.starts_with("--cassettes="));
    let source = if from_flag {
        ModeSource::Flag
    } else {
        ModeSource::Env
    };
    a.cassettes.as_deref().map(|m| (m, source))
}

/// Where the history store is, and what said so, first found: `--history`, `EVALS_HISTORY`
/// (clap reads both into `flag`), the config's `history.url`, `DATABASE_URL` when it is a
/// PostgreSQL URL, else `<project>/.evals/history.sqlite3`.
pub(crate) fn history_location(
    suite: &Suite,
    flag: Option<&Path>,
) -> (llm_evals::history::Location, &'static str) {
    use llm_evals::history::Location;
    if let Some(p) = flag {
        let source = if std::env::args().any(|x| x == "--history" || x.starts_with("--history=")) {
            "--history"
        } else {
            "EVALS_HISTORY"
        };
        return (Location::parse(&p.to_string_lossy(), &suite.cwd), source);
    }
    if let Some(url) = &suite.config.history.url {
        let source = "history.url in the config";
        return (Location::parse(url, &suite.project_dir), source);
    }
    if let Ok(url) = std::env::var("DATABASE_URL")
        && llm_evals::history::url::is_postgres(&url)
    {
        return (Location::parse(&url, &suite.project_dir), "DATABASE_URL");
    }
    (
        Location::Sqlite(llm_evals::history::History::default_path(
            &suite.project_dir,
        )),
        "the default, <project>/.evals/history.sqlite3",
    )
}
