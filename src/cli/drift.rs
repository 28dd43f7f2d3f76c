//! `evals drift`: replay a seeded sample of cases from the cassettes, call the same cases
//! live (recorded into a folder of its own, removed after), compare the two
//! ([`llm_evals::runner::drift`]), store the live run on branch `drift`, write the reports,
//! and exit 0 no drift, 1 drift, 2 could not measure. `--update` copies the live recordings
//! of the changed cases, and only those, into `cassettes/`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::args::{DriftArgs, Format, RunArgs, TotalsArg};
use super::exit;
use super::output::Out;
use super::report_file::ReportFile;
use super::settings::{Given, RunSettings};
use llm_evals::env::Env;
use llm_evals::error::{Error, Result};
use llm_evals::results::{Command as RunCommand, RunResult, RunStatus};
use llm_evals::runner::{self, HistorySink, drift};
use llm_evals::suite::Suite;

/// The branch the live run is stored under.
const BRANCH: &str = "drift";

/// Runs drift end to end and returns its exit code.
pub(crate) fn run(
    suite: &Suite,
    a: &DriftArgs,
    given: Given<'_>,
    env: &Env,
    out: &Out,
) -> Result<i32> {
    if !(a.max_changed.is_finite() && (0.0..=100.0).contains(&a.max_changed)) {
        return Err(Error::Usage(format!(
            "--max-changed {}: expected a percentage from 0 to 100 (20 is a fifth of the answers)",
            a.max_changed
        )));
    }
    let rules =
        llm_evals::gate::Rules::new(a.tolerance, false)?.with_stat(llm_evals::gate::Stat {
            force: true,
            alpha: a.alpha,
            inconclusive_fails: false,
        })?;

    // The recorded side: the sample replayed from cassettes/, stored nowhere.
    let (replay, mut replay_plan) =
        RunSettings::resolve(suite, &run_args(a, None), given, RunCommand::Check, env)?;
    let selected = replay_plan.cases.len();
    replay_plan.cases = drift::sample(&replay_plan.cases, a.sample, a.seed);
    let cases = replay_plan.cases.clone();
    out.note(&format!(
        "drift: {} of {} (seed {}): replayed from the cassettes, then called live",
        cases.len(),
        llm_evals::text::plural(selected, "case", "cases"),
        a.seed
    ));
    let recorded = execute(suite, &replay, replay_plan, env, out, false)?;
    if recorded.run.status == RunStatus::Interrupted {
        return Ok(exit::INTERRUPTED);
    }
    // A case with no usable recording cannot be compared: said before any live call.
    let missing = drift::unmeasured(&recorded, None);
    if !missing.is_empty() {
        could_not_measure(suite, &missing, out);
        out.note("  record those cases first (`evals record -c CASE`), or leave them out of the selection");
        return Ok(exit::USAGE);
    }

    // The live side: recorded into a scratch folder, so cassettes/ stays as it is.
    let scratch = Scratch::new(suite)?;
    let mut live_suite = suite.clone();
    live_suite.config.cassettes.dir = Some(scratch.0.display().to_string());
    let (live_settings, mut live_plan) = RunSettings::resolve(
        &live_suite,
        &run_args(a, a.repeat),
        given,
        RunCommand::Drift,
        env,
    )?;
    live_plan.cases = cases;
    let contenders = live_plan.lineup.contenders.clone();
    let live = match execute(&live_suite, &live_settings, live_plan, env, out, true) {
        Err(Error::MissingKey { var, needed_by, .. }) => {
            return Err(Error::Usage(format!(
                "{var} is not set: {needed_by} needs it for the live calls drift makes, so drift could not be measured; export {var}=... (a scheduled job: pass it from the repository's secrets)"
            )));
        }
        other => other?,
    };
    if live.run.status == RunStatus::Interrupted {
        return Ok(exit::INTERRUPTED);
    }

    let missing = drift::unmeasured(&recorded, Some(&live));
    if !missing.is_empty() || live.run.status != RunStatus::Completed {
        could_not_measure(suite, &missing, out);
        out.note(
            "  the provider is down, unreachable or refused the key: nothing was compared; try again later",
        );
        return Ok(exit::USAGE);
    }

    let judged = drift::judge(&recorded, &live, rules, a.max_changed);
    for c in &judged.changed {
        let score = |v: Option<f64>| v.map_or("–".into(), |v| format!("{v:.2}"));
        out.line(&format!(
            "changed  {}  (score {} → {})",
            c.label(),
            score(c.recorded_score),
            score(c.live_score)
        ));
    }
    let written = write_reports(a, &judged, &live, &suite.name, env, out);
    for line in judged.experiment_lines() {
        out.note(&format!("  {line}"));
    }
    let headline = judged.headline(&suite.name);
    if judged.drifted() {
        out.error(&headline);
    } else {
        out.note(&headline);
    }
    if a.update {
        let rewritten = drift::update_cassettes(
            &contenders,
            &judged.changed,
            &scratch.0,
            &suite.cassette_dir(),
        )?;
        out.note(&format!(
            "--update: re-recorded {} of the changed cases",
            llm_evals::text::plural(rewritten.len(), "cassette", "cassettes")
        ));
        for p in &rewritten {
            out.note(&format!(
                "  {}",
                llm_evals::suite::discovery::display_path(p, &suite.cwd)
            ));
        }
    }
    Ok(match (written, judged.drifted()) {
        (false, _) => exit::USAGE,
        (true, true) => exit::FAILED,
        (true, false) => exit::OK,
    })
}

/// Names each case that could not be measured (at most 10), on stderr.
fn could_not_measure(suite: &Suite, missing: &[String], out: &Out) {
    out.error(&format!(
        "evals drift: could not measure drift in {}: {} (an error is never a drop)",
        suite.name,
        llm_evals::text::plural(missing.len(), "case errored", "cases errored")
    ));
    for line in missing.iter().take(10) {
        out.note(&format!("  {line}"));
    }
    if missing.len() > 10 {
        out.note(&format!("  and {} more", missing.len() - 10));
    }
}

/// The run flags drift passes on: its selection, `-p`, `-j`, `--history`, the tries; no
/// snapshot (the history keeps the run), never a flag of the environment's own
/// (`EVALS_CASSETTES`: each side's mode is drift's to choose).
fn run_args(a: &DriftArgs, repeat: Option<usize>) -> RunArgs {
    RunArgs {
        select: a.select.clone(),
        models: a.models.clone(),
        efforts: Vec::new(),
        temperatures: Vec::new(),
        max_tokens: None,
        parallelism: a.parallelism,
        concurrency: a.concurrency,
        repeat,
        dry_run: false,
        yes: false,
        cassettes: None,
        min_score: None,
        min_pass_rate: None,
        format: Format::Tui,
        output: None,
        totals: TotalsArg::Overall,
        display: None,
        open: false,
        no_open: false,
        history: a.history.clone(),
        branch: Some(BRANCH.into()),
        destination: None,
        no_autosave: true,
        tracker: None,
        project: None,
        local: true,
        sharding: None,
    }
}

/// Runs one side; the live side (`store`) is stored in the history. The runner's notes
/// (what it recorded, into the scratch folder) are not shown: its warnings are.
fn execute(
    suite: &Suite,
    settings: &RunSettings,
    plan: runner::RunPlan,
    env: &Env,
    out: &Out,
    store: bool,
) -> Result<RunResult> {
    out.verbose(&format!(
        "cassettes: {} ({})",
        settings.cassettes.mode, settings.cassettes.why
    ));
    // The lineup's warnings (a refused contender) are said once, by the live side.
    let prepared = if store {
        runner::Prepared::new(suite, plan, settings.options(env), out)?
    } else {
        runner::Prepared::new(suite, plan, settings.options(env), &runner::NoNotices)?
    };
    let mut sinks = runner::Sinks::new();
    let history = store.then(|| {
        let location = settings.history.location.clone();
        let env = env.clone();
        Arc::new(HistorySink::new(move || location.open_with(&env)))
    });
    if let Some(h) = &history {
        sinks.push(h.clone());
    }
    let hooks = runner::Hooks {
        sinks,
        ..Default::default()
    };
    let run = prepared.run(hooks, &Quiet(out))?;
    if let Some(h) = &history {
        super::run::stored(suite, &run.run.id, h.outcome(), None, out);
    }
    Ok(run)
}

/// The runner's notices with its notes left out.
struct Quiet<'a>(&'a Out);

impl runner::Notices for Quiet<'_> {
    fn warn(&self, msg: &str) {
        self.0.warn(msg);
    }

    fn note(&self, _msg: &str) {}

    fn verbose(&self, msg: &str) {
        self.0.verbose(msg);
    }
}

/// The folder the live run records into, under `<project>/.evals/`; removed when drift ends.
struct Scratch(PathBuf);

impl Scratch {
    fn new(suite: &Suite) -> Result<Scratch> {
        let dir = suite
            .project_dir
            .join(".evals")
            .join(format!("drift-{}", uuid::Uuid::now_v7()));
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes each report asked for (and the Markdown to `$GITHUB_STEP_SUMMARY`); false when
/// one could not be written (each such error printed).
fn write_reports(
    a: &DriftArgs,
    judged: &drift::Drift,
    live: &RunResult,
    suite: &str,
    env: &Env,
    out: &Out,
) -> bool {
    use llm_evals::report::Format as F;
    let comparison = Some(&judged.comparison);
    let markdown = judged.markdown(suite);
    let r = &a.reports;
    let mut written = true;
    let mut write = |path: Option<&Path>, flag: &str, format: F, text: &dyn Fn() -> String| {
        if let Some(p) = path {
            match ReportFile::of(flag, format).write(p, &text()) {
                Ok(()) => out.note(&format!("wrote {}", p.display())),
                Err(e) => {
                    out.fail(&e);
                    written = false;
                }
            }
        }
    };
    write(r.markdown.as_deref(), "--markdown", F::Markdown, &|| {
        markdown.clone()
    });
    write(r.junit.as_deref(), "--junit", F::Junit, &|| {
        llm_evals::report::render(F::Junit, Default::default(), live, comparison)
    });
    write(r.diff.as_deref(), "--diff", F::Diff, &|| judged.diff());
    write(r.html.as_deref(), "--html", F::Html, &|| {
        llm_evals::report::render(F::Html, Default::default(), live, comparison)
    });
    write(r.json.as_deref(), "--json", F::Json, &|| {
        let text = llm_evals::report::render(F::Json, Default::default(), live, comparison);
        match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(mut v) => {
                v["drift"] = judged.json();
                serde_json::to_string_pretty(&v).unwrap_or(text)
            }
            Err(_) => text,
        }
    });
    if let Some(summary) = crate::cli::github::Env::read(env).step_summary {
        super::check::append_job_summary(&summary, &markdown, out);
    }
    written
}
