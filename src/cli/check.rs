//! `evals check`: replay, store the run, compare it with its baseline, write the reports,
//! and turn the verdict into the exit code (0 passed, 1 failed, 2 no usable baseline or a
//! report file that cannot be written).

use std::io::Write;
use std::path::Path;

use super::args::{CheckArgs, MissingBaselineArg};
use super::exit;
use super::output::Out;
use super::report_file::ReportFile;
use llm_evals::error::{Error, Result};
use llm_evals::gate::{self, CheckPlan, MissingBaseline, Rules};
use llm_evals::report::Format;
use llm_evals::results::{Command as RunCommand, Comparison, RunResult};
use llm_evals::suite::Suite;

/// `check`'s flags as the gate's plan, the tolerance checked.
fn plan(a: &CheckArgs) -> Result<CheckPlan> {
    gate_plan(
        a.baseline.clone(),
        a.tolerance,
        a.missing_baseline,
        gate::Stat {
            force: a.stat,
            alpha: a.alpha,
            inconclusive_fails: a.inconclusive == super::args::InconclusiveArg::Fail,
        },
    )
}

/// The gate's plan from `check`'s (or `merge`'s) flags, the tolerance checked.
pub(super) fn gate_plan(
    baseline: Option<String>,
    tolerance: f64,
    missing: MissingBaselineArg,
    stat: gate::Stat,
) -> Result<CheckPlan> {
    Ok(CheckPlan::check(
        baseline,
        Rules::new(tolerance, false)?.with_stat(stat)?,
        match missing {
            MissingBaselineArg::Fail => MissingBaseline::Fail,
            MissingBaselineArg::Pass => MissingBaseline::Pass,
        },
    ))
}

/// Runs the check end to end and returns its exit code.
pub(crate) fn run(
    suite: &Suite,
    a: &CheckArgs,
    env: &llm_evals::env::Env,
    out: &Out,
) -> Result<i32> {
    if let Some(spec) = a.shard {
        return shard(suite, a, spec, env, out);
    }
    let plan = plan(a)?;
    let run = super::run::execute(suite, &a.run, RunCommand::Check, env, out)?;
    let (history, _) = super::run::history_location(suite, a.run.history.as_deref());
    let mut reports = Reports::of(a);
    reports.browser = super::run::browser(suite, &a.run, "check", &run, env);
    let code = gate_and_report(&run, &plan, &history, &reports, out)?;
    super::run::suite_note(suite, code == exit::OK, out);
    Ok(code)
}

/// What a gated run writes: the report files, and what goes to stdout (or `-o`).
pub(super) struct Reports<'a> {
    pub(super) markdown: Option<&'a Path>,
    pub(super) junit: Option<&'a Path>,
    pub(super) diff: Option<&'a Path>,
    pub(super) json: Option<&'a Path>,
    pub(super) html: Option<&'a Path>,
    pub(super) format: llm_evals::report::Format,
    pub(super) output: Option<&'a Path>,
    pub(super) totals: super::args::TotalsArg,
    /// The report for the browser (`--open`, `results.display: browser|both`).
    pub(super) browser: Option<super::open::Browser>,
}

impl Reports<'_> {
    fn of(a: &CheckArgs) -> Reports<'_> {
        Reports {
            markdown: a.markdown.as_deref(),
            junit: a.junit.as_deref(),
            diff: a.diff.as_deref(),
            json: a.json.as_deref(),
            html: a.html.as_deref(),
            format: a.run.format.into(),
            output: a.run.output.as_deref(),
            totals: a.run.totals,
            browser: None,
        }
    }
}

/// The gate on a finished run (a check's, or the run `evals merge` assembled): the
/// baseline, the verdict, the reports, the verdict on stderr and the exit code.
pub(super) fn gate_and_report(
    run: &RunResult,
    plan: &CheckPlan,
    history: &llm_evals::history::Location,
    reports: &Reports<'_>,
    out: &Out,
) -> Result<i32> {
    let checked = gate::check_in(run, plan, history);
    print_notices(&checked.notices, out);
    let comparison = Some(&checked.comparison);
    if let Some(refused) = checked.refused {
        // The reports are still worth having: written gated without a baseline. Exit 2
        // either way; the reasons that reports failed are printed.
        let _ = write_reports(reports, run, comparison, out);
        return Err(Error::Baseline(refused));
    }

    let mut written = write_reports(reports, run, comparison, out);
    let view = super::run::View {
        breakdown: false,
        totals: reports.totals,
    };
    if let Err(e) = super::run::emit(run, comparison, reports.format, reports.output, view, out) {
        out.error(&e.to_string());
        written = false;
    }
    if let Some(b) = &reports.browser {
        b.show(run, comparison, reports.html, out);
    }
    print_verdict(run, comparison, out);
    let code = match &checked.refused {
        Some(_) => exit::USAGE,
        None => exit::of_run(run.run.status, checked.comparison.verdict.passed),
    };
    Ok(match code {
        exit::INTERRUPTED => exit::INTERRUPTED,
        // A report asked for and not written is a bad flag, whatever the verdict.
        _ if !written => exit::USAGE,
        code => code,
    })
}

/// `check -n`: the plan, of the shard's slice with `--shard`.
pub(crate) fn dry_run(suite: &Suite, a: &CheckArgs, out: &Out) -> Result<i32> {
    let mut args = a.run.clone();
    if let Some(spec) = a.shard {
        // The cut needs no group; the plan shows the slice whichever group it joins.
        args.sharding = Some((spec, a.group.clone().unwrap_or_default()));
    }
    super::plan::dry_run(suite, &args, out)
}

/// `check --shard K/N`: runs its slice, stores it in its run group and writes its JSON; a
/// shard alone does not gate (exit 0 unless it stopped early: 1 aborted, 130 interrupted).
fn shard(
    suite: &Suite,
    a: &CheckArgs,
    spec: llm_evals::runner::shard::ShardSpec,
    env: &llm_evals::env::Env,
    out: &Out,
) -> Result<i32> {
    for (given, flag) in [
        (a.markdown.is_some(), "--markdown"),
        (a.junit.is_some(), "--junit"),
        (a.diff.is_some(), "--diff"),
        (a.html.is_some(), "--html"),
    ] {
        if given {
            return Err(Error::Usage(format!(
                "{flag} with --shard {spec}: a shard is not gated and writes no report; give {flag} to `evals merge`, which gates the whole run"
            )));
        }
    }
    let group = a
        .group
        .clone()
        .filter(|g| !g.trim().is_empty())
        .or_else(|| crate::cli::github::Env::read().run_group())
        .ok_or_else(|| {
            Error::Usage(format!(
                "--shard {spec} needs a run group: pass --group ID (the same for every shard and for `evals merge --group ID`), or run on GitHub Actions (GITHUB_RUN_ID)"
            ))
        })?;
    let mut args = a.run.clone();
    args.sharding = Some((spec, group.clone()));
    let run = super::run::execute(suite, &args, RunCommand::Check, env, out)?;
    let mut written = true;
    if let Some(p) = a.json.as_deref() {
        let text = llm_evals::report::render(Format::Json, Default::default(), &run, None);
        match ReportFile::of("--json", Format::Json).write(p, &text) {
            Ok(()) => out.note(&format!("wrote {}", p.display())),
            Err(e) => {
                out.error(&e.to_string());
                written = false;
            }
        }
    }
    let view = super::run::View {
        breakdown: false,
        totals: a.run.totals,
    };
    if let Err(e) = super::run::emit(
        &run,
        None,
        a.run.format.into(),
        a.run.output.as_deref(),
        view,
        out,
    ) {
        out.error(&e.to_string());
        written = false;
    }
    if run.total_errors() > 0 {
        out.warn(&format!(
            "{} in this shard (no score); `evals merge` gates on {}",
            llm_evals::text::plural(run.total_errors(), "case errored", "cases errored"),
            if run.total_errors() == 1 {
                "it"
            } else {
                "them"
            }
        ));
    }
    let selected = run
        .run
        .settings
        .selection
        .as_ref()
        .and_then(|s| s.shard.as_ref())
        .map(|s| s.selected)
        .unwrap_or_default();
    out.note(&format!(
        "shard {spec} of group {group}: {} of {}; a shard alone does not gate: `evals merge` its shards' JSON (or `evals merge --group {group}`) to gate the whole run",
        run.run.settings.cases.len(),
        llm_evals::text::plural(selected, "case", "cases")
    ));
    if let Some(s) = gate::stopped(&run) {
        out.error(&format!(
            "evals check --shard {spec}: {}",
            llm_evals::report::format::stopped(&s)
        ));
    }
    Ok(match exit::of_run(run.run.status, true) {
        exit::OK if !written => exit::USAGE,
        code => code,
    })
}

/// The gate's notes and warnings, on stderr.
pub(super) fn print_notices(notices: &[gate::Notice], out: &Out) {
    for n in notices {
        if n.is_warning() {
            out.warn(&n.to_string());
        } else {
            out.note(&n.to_string());
        }
    }
}

/// Writes each report asked for, and the Markdown to `$GITHUB_STEP_SUMMARY`; false when a
/// report could not be written (each such error is printed, and the other reports are
/// written all the same).
fn write_reports(
    a: &Reports<'_>,
    run: &RunResult,
    comparison: Option<&Comparison>,
    out: &Out,
) -> bool {
    let summary = crate::cli::github::Env::read().step_summary;
    // Rendered only when a file or the job summary asks for it, and then once.
    let markdown = (a.markdown.is_some() || summary.is_some())
        .then(|| llm_evals::report::render(Format::Markdown, Default::default(), run, comparison));
    let files: [(Option<&Path>, &str, Format); 5] = [
        (a.markdown, "--markdown", Format::Markdown),
        (a.junit, "--junit", Format::Junit),
        (a.diff, "--diff", Format::Diff),
        (a.json, "--json", Format::Json),
        (a.html, "--html", Format::Html),
    ];
    let mut written = true;
    for (path, flag, format) in files {
        if let Some(p) = path {
            let rendered;
            let text = match (format, &markdown) {
                (Format::Markdown, Some(md)) => md.as_str(),
                _ => {
                    rendered =
                        llm_evals::report::render(format, Default::default(), run, comparison);
                    rendered.as_str()
                }
            };
            match ReportFile::of(flag, format).write(p, text) {
                Ok(()) => out.note(&format!("wrote {}", p.display())),
                Err(e) => {
                    out.error(&e.to_string());
                    written = false;
                }
            }
        }
    }
    if let (Some(summary), Some(markdown)) = (summary, &markdown) {
        let p = Path::new(&summary);
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
            .and_then(|mut f| {
                f.write_all(llm_evals::secrets::scrub(&format!("{markdown}\n")).as_bytes())
            });
        if let Err(e) = appended {
            out.warn(&format!(
                "{}: could not append the job summary: {e}; unset GITHUB_STEP_SUMMARY or fix the file",
                p.display()
            ));
        }
    }
    written
}

/// The verdict on stderr: a line, then (when it failed) the reasons.
pub(super) fn print_verdict(run: &RunResult, comparison: Option<&Comparison>, out: &Out) {
    let Some(c) = comparison else {
        return;
    };
    let said = llm_evals::report::verdict::Terminal::of(run, c);
    if c.verdict.passed {
        out.note(&said.line);
        // A passed check lists only what the statistical gate left undecided.
        for r in &said.reasons {
            out.note(r);
        }
    } else {
        out.error(&said.line);
        for r in &said.reasons {
            out.note(r);
        }
    }
}
