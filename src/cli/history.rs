//! `history`, `export` and `report`: read the stored runs back — list them, write one as a
//! JSON snapshot, or render one (compared with a baseline if asked) in any report format.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use super::args::{ExportArgs, FlakyArgs, Global, HistoryArgs, MigrateArgs, ReportArgs};
use super::exit;
use super::output::{Out, align_right, table};
use super::report_file::ReportFile;
use super::settings::{Given, HistoryAt};
use super::target::Target;
use llm_evals::env::Env;
use llm_evals::error::{Error, Result};
use llm_evals::gate::{Baseline, CheckPlan, MissingBaseline, Rules};
use llm_evals::history::{AnyStore, HistoryReads, Location, RunFilter, RunStore};
use llm_evals::report::{Format, Json, Report};
use llm_evals::results::{CaseSource, RunResult};

/// `--history`/`EVALS_HISTORY` (a file or a database URL), else the suite's (its
/// `history.url`, `DATABASE_URL`, its `.evals/history.sqlite3`: the suite must then be found).
pub(super) fn history_path(
    g: &Global,
    flag: Option<&Path>,
    env: &Env,
    out: &Out,
) -> Result<Location> {
    match flag {
        Some(p) => Ok(Location::parse(&p.to_string_lossy(), Path::new(""))),
        None => {
            Ok(HistoryAt::resolve(&super::load_suite(g, out)?, None, Given::none(), env).location)
        }
    }
}

fn open_existing(at: &Location, env: &Env) -> Result<AnyStore> {
    if !at.exists() {
        return Err(Error::Usage(format!(
            "{}: no history here yet; run `evals check` (or any run) first, or pass --history PATH",
            at.shown()
        )));
    }
    at.open_with(env)
}

/// `evals flaky`: the cases whose verdict varied across the branch's last runs, most
/// changeable first; each run's verdict oldest first (`P` pass, `F` fail, `~` flaky
/// tries, `E` error). Exit 0 whatever it finds: it is a list, not a gate.
pub(crate) fn flaky(g: &Global, a: &FlakyArgs, env: &Env, out: &Out) -> Result<i32> {
    if a.last == 0 {
        return Err(Error::Usage("--last 0: read at least 1 run".into()));
    }
    let path = history_path(g, a.history.as_deref(), env, out)?;
    let h = open_existing(&path, env)?;
    let found = llm_evals::gate::flaky(&*h, a.suite.as_deref(), &a.branch, a.last)?;
    let cases = found.cases;
    if a.json {
        let text = serde_json::to_string_pretty(&cases)
            .map_err(|e| Error::Failed(format!("could not write JSON: {e}")))?;
        out.line(&text);
        return Ok(exit::OK);
    }
    if found.runs == 0 {
        let suite = a
            .suite
            .as_deref()
            .map(|s| format!(" of suite {s}"))
            .unwrap_or_default();
        out.note(&format!(
            "no run of {}{suite} in {}: `evals check --branch {}` stores one (see `evals history` for what is there)",
            a.branch,
            path.shown(),
            a.branch
        ));
        return Ok(exit::OK);
    }
    if cases.is_empty() {
        out.note(&format!(
            "no case's verdict varied over the last {} of {}",
            llm_evals::text::plural(found.runs, "run", "runs"),
            a.branch
        ));
        return Ok(exit::OK);
    }
    let mut t = table(
        [
            "contender",
            "dataset",
            "case",
            "passed",
            "runs (oldest first)",
        ]
        .map(String::from)
        .to_vec(),
    );
    for c in &cases {
        t.add_row(vec![
            llm_evals::report::format::contender_label(&c.contender),
            c.dataset.clone(),
            c.case.clone(),
            format!("{} of {}", c.passed(), c.verdicts.len()),
            c.verdicts.iter().map(|v| v.letter()).collect(),
        ]);
    }
    out.line(&t.to_string());
    out.note(&format!(
        "{} varied over the last {} of {} (P pass, F fail, ~ flaky tries, E error)",
        llm_evals::text::plural(cases.len(), "case", "cases"),
        llm_evals::text::plural(found.runs, "run", "runs"),
        a.branch
    ));
    Ok(exit::OK)
}

/// `evals history`: the stored runs, newest first.
pub(crate) fn list(g: &Global, a: &HistoryArgs, env: &Env, out: &Out) -> Result<i32> {
    let path = history_path(g, a.history.as_deref(), env, out)?;
    let h = open_existing(&path, env)?;
    let runs = h.list(&RunFilter {
        suite: a.suite.clone(),
        branch: a.branch.clone(),
        limit: Some(a.limit),
    })?;
    if a.json {
        let text = serde_json::to_string_pretty(&runs)
            .map_err(|e| Error::Failed(format!("could not write JSON: {e}")))?;
        out.line(&text);
        return Ok(exit::OK);
    }
    let mut t = table(
        [
            "#", "id", "started", "branch", "commit", "suite", "command", "mode", "cases", "score",
            "errors", "status",
        ]
        .map(String::from)
        .to_vec(),
    );
    for r in &runs {
        t.add_row(vec![
            r.number.to_string(),
            r.id.clone(),
            llm_evals::results::time::text(&r.started_at),
            r.branch.clone().unwrap_or_default(),
            r.commit
                .as_deref()
                .map(|c| c.get(..7).unwrap_or(c).to_string())
                .unwrap_or_default(),
            r.suite.clone(),
            r.command.clone(),
            r.mode.clone(),
            r.cases.to_string(),
            llm_evals::report::format::pct(r.score),
            r.errors.to_string(),
            r.status.to_string(),
        ]);
    }
    align_right(&mut t, [0, 8, 9, 10]);
    out.line(&t.to_string());
    if runs.is_empty() {
        out.note(&format!("no runs match in {}", path.shown()));
    }
    Ok(exit::OK)
}

/// The run `reference` names: its number, its id, or a unique prefix of its id.
fn get(h: &AnyStore, path: &Location, reference: &str) -> Result<RunResult> {
    let missing = || {
        Error::Usage(format!(
            "no run {reference} in {}; list runs with `evals history`",
            path.shown()
        ))
    };
    let id = h.find(reference)?.ok_or_else(missing)?;
    h.get(&id)?.ok_or_else(missing)
}

/// `evals export RUN -o run.json`.
pub(crate) fn export(g: &Global, a: &ExportArgs, env: &Env, out: &Out) -> Result<i32> {
    let path = history_path(g, a.history.as_deref(), env, out)?;
    let h = open_existing(&path, env)?;
    let run = get(&h, &path, &a.run)?;
    let file = ReportFile {
        flag: "-o",
        kind: "JSON snapshot",
        example: "run.json",
    };
    super::target::write(&Json.render(&run, None), file, a.output.as_deref(), out)?;
    Ok(exit::OK)
}

/// `evals report [RUN] [--baseline REF] [--format md|junit|json|diff|html|tui] [-o [FILE]]`: the
/// latest run of this suite without RUN, the format from `-o FILE`'s extension; with
/// `--fail-on-regression`, the exit code is `check`'s verdict on the two runs.
pub(crate) fn report(g: &Global, a: &ReportArgs, env: &Env, out: &Out) -> Result<i32> {
    // The flags checked now (a bad one is refused before any run is read); the config's
    // `gate:` keys, where the suite is loaded, fill in the ones not given.
    let rules = a
        .increase
        .apply(Rules::new(a.tolerance, a.fail_on_case_regression)?, None)?;
    if a.fail_on_case_regression && a.baseline.is_none() {
        return Err(Error::Usage(
            "--fail-on-case-regression needs --baseline REF: a case's score can only drop against a baseline".into(),
        ));
    }
    let gate = a.fail_on_regression || a.fail_on_case_regression;
    let target = Target::new(&a.output);
    // A person at a terminal gets the terminal view; a file, a pipe or a redirect gets
    // Markdown (the job summary, a PR comment), unless --format says.
    let on_terminal = target == Target::Stdout && std::io::stdout().is_terminal();
    let format = a
        .format
        .map(Format::from)
        .or_else(|| {
            target
                .extension()
                .as_deref()
                .and_then(Format::from_extension)
        })
        .unwrap_or(if on_terminal {
            Format::Terminal
        } else {
            Format::Markdown
        });
    let file = a.run.as_deref().map(Path::new).filter(|p| p.exists());
    let needs_store = file.is_none() || a.baseline.is_some();
    // The suite: for its latest run, for `-o` alone (its results folder), for its history.
    let suite = if a.run.is_none()
        || target == Target::Stamped
        || (needs_store && a.history.is_none())
    {
        Some(super::load_suite(g, out).map_err(|e| {
            let why = if a.run.is_none() {
                "report without RUN reports the latest run of this suite, and there is no suite here; name a run from `evals history` or a snapshot file"
            } else if target == Target::Stamped {
                super::target::STAMPED_NEEDS_A_SUITE
            } else {
                "the history is the suite's .evals/history.sqlite3; pass --history PATH, or run where the suite is"
            };
            Error::Usage(format!(
                "{}\n{why}",
                e.message(llm_evals::error::Audience::CommandLine)
            ))
        })?)
    } else {
        None
    };
    let store = if needs_store {
        let path = match (&a.history, &suite) {
            (Some(p), _) => Location::parse(&p.to_string_lossy(), Path::new("")),
            (None, Some(s)) => HistoryAt::resolve(s, None, Given::none(), env).location,
            (None, None) => unreachable!("the suite is loaded when the history is its own"),
        };
        Some((open_existing(&path, env)?, path))
    } else {
        None
    };
    let (run, recorded) = match (file, &a.run, &store, &suite) {
        (Some(f), _, _, _) => llm_evals::results::snapshot::load_checked(f)?,
        (None, Some(reference), Some((h, path)), _) => (get(h, path, reference)?, None),
        (None, None, Some((h, path)), Some(suite)) => {
            let id = h.latest(Some(&suite.name))?.ok_or_else(|| {
                Error::Usage(format!(
                    "no run of suite {} in {} yet; run `evals check` (or any run) first",
                    suite.name,
                    path.shown()
                ))
            })?;
            (get(h, path, &id)?, None)
        }
        _ => unreachable!("a run without a snapshot file is read from the store"),
    };
    let comparison = match recorded {
        // A snapshot written by `check --json` keeps the comparison (and the verdict) it was
        // written with, unless a baseline is named here.
        Some(c) if a.baseline.is_none() => c,
        // Else the gate as `check` runs it, on stored runs: a branch with no earlier run is
        // a missing baseline here, not a first one. Without --baseline, the run's natural
        // baseline: the latest earlier compatible run of its own branch, as `check
        // --baseline BRANCH` finds it, when there is one; else thresholds and errors alone.
        _ => {
            let natural = a
                .baseline
                .is_none()
                .then(|| run.run.branch.clone())
                .flatten()
                .filter(|_| store.is_some());
            let plan = CheckPlan {
                baseline: a
                    .baseline
                    .as_deref()
                    .and_then(Baseline::parse)
                    .or_else(|| natural.clone().map(Baseline::Branch)),
                rules: match &suite {
                    Some(s) => a.increase.apply(rules, Some(&s.config.gate))?,
                    None => rules,
                },
                missing: if natural.is_some() {
                    MissingBaseline::Pass
                } else {
                    MissingBaseline::Fail
                },
                first_on_own_branch: false,
            };
            let (h, path) = match &store {
                Some((h, p)) => (Some(h), PathBuf::from(p.shown())),
                None => (None, PathBuf::new()),
            };
            let mut checked =
                llm_evals::gate::judge(&run, &plan, h.map(|h| &**h as &dyn RunStore), &path);
            if let Some(e) = checked.refused {
                return Err(e.into_error());
            }
            if let Some(branch) = &natural {
                // No earlier run of the branch is no news: the report gates on thresholds.
                checked
                    .notices
                    .retain(|n| !matches!(n, llm_evals::gate::Notice::BaselinePassed(_)));
                if let Some(b) = &checked.comparison.baseline {
                    out.note(&format!(
                        "compared with run {} of {branch} (its latest earlier run; --baseline REF names another)",
                        b.id
                    ));
                }
            }
            super::check::print_notices(&checked.notices, out);
            checked.comparison
        }
    };
    let path = match (target, &suite) {
        (Target::Stdout, _) => None,
        (Target::File(p), _) => Some(p),
        (Target::Stamped, Some(suite)) => Some(super::target::stamped(
            suite,
            "report",
            &run,
            format.extension(),
        )),
        (Target::Stamped, None) => unreachable!("-o alone loads the suite"),
    };
    // `--format tui` is the terminal view, in color and fitted to it on a terminal.
    let view = super::run::View::default();
    super::run::emit(&run, Some(&comparison), format, path.as_deref(), view, out)?;
    let passed = comparison.verdict.passed;
    if !gate {
        if format == Format::Terminal {
            // The leaderboard holds no comparison: the verdict says it, as `check`'s does.
            super::check::print_verdict(&run, CaseSource::Run(&run), Some(&comparison), out)?;
            if !passed {
                out.note("add --fail-on-regression to exit 1 on it");
            }
        } else if comparison.baseline.is_some() && !passed {
            let line = llm_evals::report::verdict::verdict_text(&run, Some(&comparison));
            out.note(&format!("{line}; add --fail-on-regression to exit 1 on it"));
        }
        return Ok(exit::OK);
    }
    super::check::print_verdict(&run, CaseSource::Run(&run), Some(&comparison), out)?;
    // A run that did not finish cannot pass a gate, as `check` fails an aborted run.
    let complete = run.run.status == llm_evals::results::RunStatus::Completed;
    if !complete {
        out.error(&format!(
            "run {} is {}: only a completed run can pass",
            run.run.id, run.run.status
        ));
    }
    Ok(if passed && complete {
        exit::OK
    } else {
        exit::FAILED
    })
}

/// `evals history migrate --to postgres://…` (or `mysql://…`): copies every run of a
/// SQLite history, oldest first, into the database with its id and number; a run already
/// there is left as it is, so a second migrate (after one that was stopped, even by kill
/// -9: each run is stored in one transaction) copies only what the first did not.
pub(crate) fn migrate(g: &Global, a: &MigrateArgs, env: &Env, out: &Out) -> Result<i32> {
    let to = Location::parse(&a.to, Path::new(""));
    if !to.is_database() {
        return Err(Error::Usage(format!(
            "--to {}: not a database URL; pass --to postgres://user@host:port/db or --to mysql://user@host:port/db",
            llm_evals::history::url::redact(&a.to)
        )));
    }
    let from = match &a.history {
        Some(p) => Location::Sqlite(p.clone()),
        None => Location::Sqlite(llm_evals::history::History::default_path(
            &super::load_suite(g, out)?.project_dir,
        )),
    };
    let source = open_existing(&from, env)?;
    let mut target = to.open_with(env)?;
    let runs = source.list(&RunFilter::default())?;
    let (mut copied, mut kept) = (0, 0);
    for r in runs.iter().rev() {
        if target.find(&r.id)?.as_deref() == Some(r.id.as_str()) {
            kept += 1;
            continue;
        }
        if let Some(other) = target.find(&r.number.to_string())? {
            return Err(Error::Usage(format!(
                "{}: run #{} there is {other}, not {} as in {}: another history was stored there; migrate into a new database (`createdb evals_history`, `CREATE DATABASE evals_history`) or one only this history was migrated into",
                target.location(),
                r.number,
                r.id,
                from.shown()
            )));
        }
        let run = source.get(&r.id)?.ok_or_else(|| {
            Error::Failed(format!(
                "{}: run {} vanished while copying",
                from.shown(),
                r.id
            ))
        })?;
        target.insert_numbered(&run, r.number)?;
        copied += 1;
    }
    out.note(&format!(
        "copied {copied} run{} from {} into {}{}",
        if copied == 1 { "" } else { "s" },
        from.shown(),
        target.location(),
        if kept > 0 {
            format!(" ({kept} already there)")
        } else {
            String::new()
        }
    ));
    Ok(exit::OK)
}
