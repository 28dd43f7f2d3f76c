//! `evals merge`: the shards of one run (`check --shard K/N`, from their JSON files or, by
//! `--group`, from the history) put back into the run the suite would have made in one job
//! ([`llm_evals::runner::shard::merge`]), stored and snapshotted like any run, then gated and
//! reported by `check`'s own path ([`super::check::gate_and_report`]).

use std::sync::Arc;

use super::args::MergeArgs;
use super::check::{Reports, gate_and_report};
use super::output::Out;
use super::settings::{Given, HistoryAt};
use llm_evals::env::Env;
use llm_evals::error::{Error, Result};
use llm_evals::results::{CaseLog, RunResult};
use llm_evals::runner::shard::ShardRun;
use llm_evals::runner::{Event, HistorySink, Sink, SnapshotSink};
use llm_evals::suite::Suite;

/// Merges, stores, gates; returns the exit code.
pub(crate) fn run(
    suite: &Suite,
    a: &MergeArgs,
    given: Given<'_>,
    env: &Env,
    out: &Out,
) -> Result<i32> {
    // The gate's flags are `check`'s: with repeats in the shards, the statistical gate is
    // on as in `check`.
    let plan = a.gate.plan(Some(&suite.config.gate))?;
    let history = HistoryAt::resolve(suite, a.history.as_deref(), given, env).location;
    let shards = if a.files.is_empty() {
        let group = a
            .group
            .clone()
            .filter(|g| !g.trim().is_empty())
            .or_else(|| crate::cli::github::Env::read(env).run_group())
            .ok_or_else(|| {
                Error::Usage(
                    "evals merge: which shards? pass each shard's JSON file (`evals check --shard K/N --json FILE`), or --group ID to read them from the history (default on GitHub Actions: GITHUB_RUN_ID-GITHUB_RUN_ATTEMPT)".into(),
                )
            })?;
        from_history(suite, a, &history, &group, env)?
    } else {
        a.files
            .iter()
            .map(|f| {
                let shown =
                    llm_evals::suite::discovery::display_path(&suite.cwd.join(f), &suite.cwd);
                llm_evals::results::snapshot::load(&suite.cwd.join(f))
                    .map(|run| ShardRun { shown, run })
                    .map_err(|e| e.named_by("evals merge FILE", None))
            })
            .collect::<Result<Vec<_>>>()?
    };
    let shards_merged = shards.len();
    let run = llm_evals::runner::shard::merge(shards, env.argv.clone())?;
    let n = llm_evals::text::plural;
    out.note(&format!(
        "merged {}: {}, {}",
        n(shards_merged, "shard", "shards"),
        n(run.run.settings.cases.len(), "case", "cases"),
        n(run.experiments.len(), "experiment", "experiments")
    ));
    store(suite, a, &history, &run, env, out)?;
    let reports = Reports {
        format: a.format.into(),
        output: a.output.as_deref(),
        totals: a.totals,
        ..Reports::files(&a.reports)
    };
    gate_and_report(&run, None, &plan, &history, &reports, env, out)
}

/// Every stored shard of `group` on the shards' branch (`--branch`, else the one git or CI
/// reports), each read whole. Only completed runs are found: a stopped shard is missing.
fn from_history(
    suite: &Suite,
    a: &MergeArgs,
    history: &llm_evals::history::Location,
    group: &str,
    env: &Env,
) -> Result<Vec<ShardRun>> {
    if !history.exists() {
        return Err(Error::Usage(format!(
            "{}: no history here: --group {group} reads the shards from the history their `evals check --shard` stored them in (pass --history, or the shards' JSON files)",
            history.shown()
        )));
    }
    let h = history.open_with(env)?;
    let branch = a
        .branch
        .clone()
        .or_else(|| llm_evals::history::git::detect(&suite.project_dir, &env.git).branch)
        .ok_or_else(|| {
            Error::Usage(format!(
                "evals merge --group {group}: on which branch did the shards run? pass --branch NAME"
            ))
        })?;
    let mut found = Vec::new();
    for r in h.runs_on_branch(&suite.name, &branch, "9999-12-31T23:59:59Z", "")? {
        let in_group = r
            .selection
            .as_ref()
            .and_then(|s| s.shard.as_ref())
            .is_some_and(|s| s.group == group);
        if !in_group {
            continue;
        }
        if let Some(run) = h.get(&r.id)? {
            found.push(ShardRun {
                shown: format!("run {}", r.id),
                run,
            });
        }
    }
    if found.is_empty() {
        return Err(Error::Usage(format!(
            "evals merge --group {group}: no completed shard of group {group} of suite {} on branch {branch} in {}",
            suite.name,
            history.shown()
        )));
    }
    // Oldest first, as the shards were stored.
    found.reverse();
    Ok(found)
}

/// Stores the merged run in the history and saves its JSON snapshot, through the sinks
/// every run's end goes through.
fn store(
    suite: &Suite,
    a: &MergeArgs,
    history: &llm_evals::history::Location,
    whole: &RunResult,
    env: &Env,
    out: &Out,
) -> Result<()> {
    let sizes: Vec<usize> = whole.experiments.iter().map(|e| e.cases.len()).collect();
    let log = CaseLog::new(&sizes)?;
    let mut bare = whole.clone();
    for (i, e) in bare.experiments.iter_mut().enumerate() {
        for (j, c) in e.cases.drain(..).enumerate() {
            log.push(i, j, &c);
        }
    }
    let sink = Arc::new(HistorySink::new({
        let location = history.clone();
        let env = env.clone();
        move || location.open_with(&env)
    }));
    let autosave = !a.no_autosave && suite.config.results.autosave != Some(false);
    let snapshot = autosave.then(|| {
        let dir = super::target::results_dir(suite, a.destination.as_deref());
        Arc::new(SnapshotSink::new(Box::new(move |run: &RunResult| {
            dir.join(super::target::stamped_name("merge", run, "json"))
        })))
    });
    let event = Event::RunFinished {
        run: &bare,
        cases: &log,
    };
    sink.event(&event);
    if let Some(s) = &snapshot {
        s.event(&event);
    }
    super::run::stored(
        suite,
        &whole.run.id,
        sink.outcome(),
        snapshot.as_ref().and_then(|s| s.outcome()),
        out,
    );
    Ok(())
}
