//! `evals check`: replay, store the run, compare it with its baseline, write the reports,
//! and turn the verdict into the exit code (0 passed, 1 failed, 2 no usable baseline or a
//! report file that cannot be written).

use std::io::Write;
use std::path::Path;

use super::args::{CheckArgs, ReportFiles};
use super::exit;
use super::output::Out;
use super::report_file::ReportFile;
use super::settings::{Given, RunSettings};
use llm_evals::env::Env;
use llm_evals::error::{Error, Result};
use llm_evals::gate::{self, CheckPlan};
use llm_evals::report::Format;
use llm_evals::results::{CaseSource, Command as RunCommand, Comparison, RunResult};
use llm_evals::suite::Suite;

/// Runs the check end to end and returns its exit code.
pub(crate) fn run(
    suite: &Suite,
    a: &CheckArgs,
    given: Given<'_>,
    env: &Env,
    out: &Out,
) -> Result<i32> {
    if let Some(spec) = a.shard {
        return shard(suite, a, given, spec, env, out);
    }
    let plan = a.gate.plan(Some(&suite.config.gate))?;
    let (settings, run_plan) = RunSettings::resolve(suite, &a.run, given, RunCommand::Check, env)?;
    // The cases stay in the run's case log: the gate reads them from there, and the
    // baseline's from its own.
    let streamed = super::run::execute_streamed(suite, &settings, run_plan, env, out)?;
    let mut reports = Reports::of(&a.reports, &settings);
    reports.browser = super::run::browser(suite, &settings, &streamed.run, env);
    let code = gate_and_report(
        &streamed.run,
        Some(&streamed.cases),
        &plan,
        &settings.history.location,
        &reports,
        env,
        out,
    )?;
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

impl<'a> Reports<'a> {
    /// The report files asked for, and how a settled run shows on stdout (or `-o`).
    fn of(files: &'a ReportFiles, s: &'a RunSettings) -> Reports<'a> {
        Reports {
            format: s.shown.format.into(),
            output: s.shown.output.as_deref(),
            totals: s.shown.totals,
            ..Reports::files(files)
        }
    }

    /// The report files asked for; the leaderboard on stdout.
    pub(super) fn files(files: &'a ReportFiles) -> Reports<'a> {
        Reports {
            markdown: files.markdown.as_deref(),
            junit: files.junit.as_deref(),
            diff: files.diff.as_deref(),
            json: files.json.as_deref(),
            html: files.html.as_deref(),
            format: Format::Terminal,
            output: None,
            totals: super::args::TotalsArg::Overall,
            browser: None,
        }
    }
}

/// The gate on a finished run (a check's, its cases in `cases`, or the run `evals merge`
/// assembled, held whole): the baseline, the verdict, the reports, the verdict on stderr
/// and the exit code.
pub(super) fn gate_and_report(
    run: &RunResult,
    cases: Option<&llm_evals::results::CaseLog>,
    plan: &CheckPlan,
    history: &llm_evals::history::Location,
    reports: &Reports<'_>,
    env: &Env,
    out: &Out,
) -> Result<i32> {
    // The gate and every report read the cases where they are (a check's stay in its case
    // log), one at a time.
    let cases = CaseSource::of(run, cases);
    let checked = gate_on(run, cases, plan, history, env)?;
    print_notices(&checked.notices, out);
    let comparison = Some(&checked.comparison);
    if let Some(refused) = checked.refused {
        // The reports are still worth having: written gated without a baseline. Exit 2
        // either way; the reasons that reports failed are printed.
        let _ = write_reports(reports, run, cases, comparison, env, out);
        return Err(Error::Baseline(refused));
    }

    let mut written = write_reports(reports, run, cases, comparison, env, out);
    let view = super::run::View {
        breakdown: false,
        totals: reports.totals,
    };
    if let Err(e) = super::run::emit_cases(
        run,
        cases,
        comparison,
        reports.format,
        reports.output,
        view,
        out,
    ) {
        out.fail(&e);
        written = false;
    }
    if let Some(b) = &reports.browser {
        b.show_cases(run, cases, comparison, reports.html, out);
    }
    print_verdict(run, cases, comparison, out)?;
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

/// The gate on `run` with baselines from the history at `history`, opened only when the
/// plan names a baseline; a history that does not open is a warning, and the gate goes on
/// without it (a snapshot file still works as the baseline).
fn gate_on(
    run: &RunResult,
    cases: CaseSource<'_>,
    plan: &CheckPlan,
    history: &llm_evals::history::Location,
    env: &Env,
) -> Result<gate::Checked> {
    let shown = std::path::PathBuf::from(history.shown());
    match plan.baseline.as_ref().map(|_| history.open_with(env)) {
        Some(Ok(store)) => gate::check_streamed(run, cases, plan, &*store),
        Some(Err(e)) => {
            let mut checked = gate::judge_streamed(run, cases, plan, None, &shown)?;
            checked
                .notices
                .insert(0, gate::Notice::HistoryUnreadable(e.to_string()));
            Ok(checked)
        }
        None => gate::judge_streamed(run, cases, plan, None, &shown),
    }
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
    given: Given<'_>,
    spec: llm_evals::runner::shard::ShardSpec,
    env: &Env,
    out: &Out,
) -> Result<i32> {
    for (asked, flag) in [
        (a.reports.markdown.is_some(), "--markdown"),
        (a.reports.junit.is_some(), "--junit"),
        (a.reports.diff.is_some(), "--diff"),
        (a.reports.html.is_some(), "--html"),
    ] {
        if asked {
            return Err(Error::Usage(format!(
                "{flag} with --shard {spec}: a shard is not gated and writes no report; give {flag} to `evals merge`, which gates the whole run"
            )));
        }
    }
    let group = a
        .group
        .clone()
        .filter(|g| !g.trim().is_empty())
        .or_else(|| crate::cli::github::Env::read(env).run_group())
        .ok_or_else(|| {
            Error::Usage(format!(
                "--shard {spec} needs a run group: pass --group ID (the same for every shard and for `evals merge --group ID`), or run on GitHub Actions (GITHUB_RUN_ID)"
            ))
        })?;
    let mut args = a.run.clone();
    args.sharding = Some((spec, group.clone()));
    let (settings, plan) = RunSettings::resolve(suite, &args, given, RunCommand::Check, env)?;
    let run = super::run::execute(suite, &settings, plan, env, out)?;
    let mut written = true;
    if let Some(p) = a.reports.json.as_deref() {
        let text = llm_evals::report::render(Format::Json, Default::default(), &run, None);
        match ReportFile::of("--json", Format::Json).write(p, &text) {
            Ok(()) => out.note(&format!("wrote {}", p.display())),
            Err(e) => {
                out.fail(&e);
                written = false;
            }
        }
    }
    let view = super::run::View {
        breakdown: false,
        totals: settings.shown.totals,
    };
    if let Err(e) = super::run::emit(
        &run,
        None,
        settings.shown.format.into(),
        settings.shown.output.as_deref(),
        view,
        out,
    ) {
        out.fail(&e);
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
        let text = match n {
            gate::Notice::BaselinePassed(e) => format!(
                "{}\n  (--missing-baseline pass: gating on thresholds and errors alone)",
                e.message(llm_evals::error::Audience::CommandLine)
            ),
            other => other.to_string(),
        };
        if n.is_warning() {
            out.warn(&text);
        } else {
            out.note(&text);
        }
    }
}

/// Writes each report asked for, and the Markdown to `$GITHUB_STEP_SUMMARY`; false when a
/// report could not be written (each such error is printed, and the other reports are
/// written all the same).
fn write_reports(
    a: &Reports<'_>,
    run: &RunResult,
    cases: CaseSource<'_>,
    comparison: Option<&Comparison>,
    env: &Env,
    out: &Out,
) -> bool {
    let summary = crate::cli::github::Env::read(env).step_summary;
    // Written only when a file or the job summary asks for it, and then once (it is capped
    // at GitHub's 65,536 characters, so it is held).
    let markdown = match (a.markdown.is_some() || summary.is_some()).then(|| {
        let mut md = Vec::new();
        llm_evals::report::write(
            Format::Markdown,
            Default::default(),
            run,
            cases,
            comparison,
            &mut md,
        )
        .map(|()| String::from_utf8_lossy(&md).into_owned())
    }) {
        Some(Ok(md)) => Some(md),
        Some(Err(e)) => {
            out.fail(&e);
            return false;
        }
        None => None,
    };
    let files: [(Option<&Path>, &str, Format); 5] = [
        (a.markdown, "--markdown", Format::Markdown),
        (a.junit, "--junit", Format::Junit),
        (a.diff, "--diff", Format::Diff),
        (a.json, "--json", Format::Json),
        (a.html, "--html", Format::Html),
    ];
    // The reports are written side by side, each on a thread of its own reading the case
    // log with its own handle (each holds what it prints, no more), and said in order.
    let markdown_ref = markdown.as_deref();
    let wrote: Vec<(&Path, Result<()>)> = std::thread::scope(|scope| {
        let writing: Vec<_> = files
            .into_iter()
            .filter_map(|(path, flag, format)| {
                let p = path?;
                Some((
                    p,
                    scope.spawn(move || {
                        let file = ReportFile::of(flag, format);
                        match (format, markdown_ref) {
                            (Format::Markdown, Some(md)) => file.write(p, md),
                            // Each other report goes to its file a piece at a time.
                            _ => file.write_with(p, |w| {
                                llm_evals::report::write(
                                    format,
                                    Default::default(),
                                    run,
                                    cases,
                                    comparison,
                                    w,
                                )
                            }),
                        }
                    }),
                ))
            })
            .collect();
        writing
            .into_iter()
            .map(|(p, h)| {
                let r = h
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                (p, r)
            })
            .collect()
    });
    let mut written = true;
    for (p, r) in wrote {
        match r {
            Ok(()) => out.note(&format!("wrote {}", p.display())),
            Err(e) => {
                out.fail(&e);
                written = false;
            }
        }
    }
    if let (Some(summary), Some(markdown)) = (summary, &markdown) {
        append_job_summary(&summary, markdown, out);
    }
    written
}

/// Appends the Markdown report, scrubbed, to GitHub's job summary (`GITHUB_STEP_SUMMARY`);
/// a file that cannot take it is a warning, never the gate's verdict.
pub(super) fn append_job_summary(summary: &std::ffi::OsStr, markdown: &str, out: &Out) {
    let p = Path::new(summary);
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

/// The verdict on stderr: a line, then (when it failed) the reasons.
pub(super) fn print_verdict(
    run: &RunResult,
    cases: CaseSource<'_>,
    comparison: Option<&Comparison>,
    out: &Out,
) -> Result<()> {
    let Some(c) = comparison else {
        return Ok(());
    };
    let said = llm_evals::report::verdict::Terminal::of_cases(run, cases, c)?;
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
    Ok(())
}
