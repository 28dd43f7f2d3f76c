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
use super::settings::{Given, RunSettings};
use llm_evals::env::Env;
use llm_evals::error::{Error, Result};
use llm_evals::report::Terminal;
use llm_evals::results::{CaseSource, Command as RunCommand, Comparison, RunResult};
use llm_evals::runner;
use llm_evals::runner::{HistorySink, SnapshotSink};
use llm_evals::suite::Suite;

/// Runs a command end to end and returns its exit code.
pub(crate) fn run(
    suite: &Suite,
    a: &RunArgs,
    given: Given<'_>,
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
    let (settings, plan) = RunSettings::resolve(suite, a, given, command, env)?;
    let runner::Streamed { mut run, cases } = execute_streamed(suite, &settings, plan, env, out)?;
    let shown = &settings.shown;
    let browser = browser(suite, &settings, &run, env);
    // The reports read the cases from the log; what else is said after the run may need
    // them in the run.
    let filled = needs_cases(&run);
    if filled {
        cases.fill(&mut run)?;
    }
    let source = if filled {
        CaseSource::Run(&run)
    } else {
        CaseSource::Log(&cases)
    };
    // Thresholds gate every run, by the rule `check` applies (with no baseline).
    let failed = llm_evals::gate::threshold_failures(&run);
    let passed = run.total_errors() == 0 && (!gates || failed.is_empty());
    let code = exit::of_run(run.run.status, passed);
    use llm_evals::suite::config::Display;
    match shown.display {
        // `display: none` prints no leaderboard; a file or JSON asked for is still written.
        // `display: browser` shows the report in the browser instead.
        Some(Display::None | Display::Browser)
            if shown.output.is_none() && shown.format == Format::Tui => {}
        _ => {
            let view = View {
                breakdown: command == RunCommand::Run,
                totals: shown.totals,
            };
            emit_cases(
                &run,
                source,
                None,
                shown.format.into(),
                shown.output.as_deref(),
                view,
                out,
            )?;
        }
    }
    if let Some(b) = &browser {
        let asked = (shown.format == Format::Html)
            .then_some(shown.output.as_deref())
            .flatten();
        b.show_cases(&run, source, None, asked, out);
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
    s: &RunSettings,
    run: &RunResult,
    env: &Env,
) -> Option<super::open::Browser> {
    s.shown.browser.then(|| super::open::Browser {
        stamped: {
            let path =
                s.results_dir
                    .join(super::target::stamped_name(s.command.as_str(), run, "html"));
            match path.strip_prefix(&suite.cwd) {
                Ok(rel) => rel.to_path_buf(),
                Err(_) => path,
            }
        },
        no_open: s.shown.no_open,
        desktop: super::open::Desktop::read(env),
    })
}

/// Whether what `run` prints after the run, beside its reports (which read the case log),
/// reads case results in the run: the lines naming errors and failed thresholds, a
/// stopped run's count of cases that ran, `--min-pass-rate`. Otherwise (a clean run) the
/// figures of each experiment are all it needs.
fn needs_cases(run: &RunResult) -> bool {
    run.run.status != llm_evals::results::RunStatus::Completed
        || llm_evals::gate::Limits::of(run).min_pass_rate.is_some()
        || run.experiments.iter().any(|e| e.errors > 0 || e.failed > 0)
}

/// Executes a settled run through the library and stores it; returns the run, every case
/// in it. Shared with `check`.
pub(crate) fn execute(
    suite: &Suite,
    settings: &RunSettings,
    plan: runner::RunPlan,
    env: &Env,
    out: &Out,
) -> Result<RunResult> {
    let runner::Streamed { mut run, cases } = execute_streamed(suite, settings, plan, env, out)?;
    cases.fill(&mut run)?;
    Ok(run)
}

/// [`execute`] with the case results left in the run's case log.
pub(crate) fn execute_streamed(
    suite: &Suite,
    settings: &RunSettings,
    plan: runner::RunPlan,
    env: &Env,
    out: &Out,
) -> Result<runner::Streamed> {
    let command = settings.command;
    out.verbose(&format!(
        "cassettes: {} ({})",
        settings.cassettes.mode, settings.cassettes.why
    ));
    #[cfg(feature = "trackers")]
    let tracker = tracker_of(suite, settings, &plan.cases, env, out)?;
    let prepared = runner::Prepared::new(suite, plan, settings.options(env), out)?;

    // Where stderr goes while progress bars draw, and where an exec adapter's stderr goes.
    let warnings_log = suite.project_dir.join("log").join(format!(
        "{command}.warnings.{}.log",
        chrono::Utc::now().format("%Y%m%dT%H%M%SZ")
    ));
    let progress = super::progress::Progress::new(prepared.plan(), &warnings_log, out.columns());
    let shown = llm_evals::suite::discovery::display_path(&warnings_log, &suite.cwd);
    let mut sinks = runner::Sinks::new();
    if let Some(bars) = progress.sink() {
        sinks.push(bars);
    }
    let super::settings::HistoryAt { location, source } = settings.history.clone();
    let history = Arc::new(HistorySink::new({
        let location = location.clone();
        let env = env.clone();
        move || location.open_with(&env)
    }));
    sinks.push(history.clone());
    let snapshot = settings.snapshots.clone().map(|dir| {
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

/// The run's remote tracker as the settings chose it (`--tracker`, `tracker:`, the one key
/// set; none with `--local`), its key checked before any model is called; `-v` says which
/// and why.
#[cfg(feature = "trackers")]
fn tracker_of(
    suite: &Suite,
    settings: &RunSettings,
    cases: &llm_evals::suite::Cases,
    env: &Env,
    out: &Out,
) -> Result<Option<Arc<llm_evals::tracker::TrackerSink>>> {
    let (choice, flags) = &settings.tracker;
    let name = choice.kind.map_or("local only", |k| k.name());
    out.verbose(&format!("tracker: {name} ({})", choice.why));
    Ok(llm_evals::tracker::build(choice, suite, env, cases, flags, out)?.map(Arc::new))
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
        Some(Err(e)) => out.warn(&format!(
            "could not store the run in the history: {}",
            e.message(llm_evals::error::Audience::CommandLine)
        )),
        None => {}
    }
    match snapshot {
        Some(Ok(p)) => out.note(&format!(
            "saved {}",
            llm_evals::suite::discovery::display_path(&p, &suite.cwd)
        )),
        Some(Err(e)) => out.warn(&format!(
            "could not save the JSON snapshot: {}",
            e.message(llm_evals::error::Audience::CommandLine)
        )),
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

/// Writes the report (with the run's comparison, if it has one) to stdout or `-o FILE`,
/// the run's cases in it.
pub(crate) fn emit(
    run: &RunResult,
    comparison: Option<&Comparison>,
    format: llm_evals::report::Format,
    output: Option<&Path>,
    view: View,
    out: &Out,
) -> Result<()> {
    emit_cases(
        run,
        CaseSource::Run(run),
        comparison,
        format,
        output,
        view,
        out,
    )
}

/// [`emit`] with the run's cases read from `cases` one at a time (`CaseSource::Log` for a
/// run streamed to disk, its experiments' cases empty), the report written in pieces: held
/// whole neither the cases nor the report.
pub(crate) fn emit_cases(
    run: &RunResult,
    cases: CaseSource<'_>,
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
    super::target::write_with(ReportFile::of("-o", format), output, out, |w| {
        llm_evals::report::write(format, terminal, run, cases, comparison, w)
    })
}
