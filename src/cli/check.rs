//! `evals check`: replay, store the run, compare it with its baseline, write the reports,
//! and turn the verdict into the exit code (0 passed, 1 failed, 2 no usable baseline or a
//! report file that cannot be written).

use std::io::Write;
use std::path::Path;

use super::args::{CheckArgs, MissingBaselineArg};
use super::output::Out;
use super::report_file::ReportFile;
use crate::error::{Error, Result, exit};
use crate::gate::{self, CheckPlan, MissingBaseline, Rules};
use crate::report::Format;
use crate::results::{Command as RunCommand, Comparison, RunResult};
use crate::suite::Suite;

/// `check`'s flags as the gate's plan, the tolerance checked.
fn plan(a: &CheckArgs) -> Result<CheckPlan> {
    Ok(CheckPlan::check(
        a.baseline.clone(),
        Rules::new(a.tolerance, false)?.with_stat(gate::Stat {
            force: a.stat,
            alpha: a.alpha,
            inconclusive_fails: a.inconclusive == super::args::InconclusiveArg::Fail,
        })?,
        match a.missing_baseline {
            MissingBaselineArg::Fail => MissingBaseline::Fail,
            MissingBaselineArg::Pass => MissingBaseline::Pass,
        },
    ))
}

/// Runs the check end to end and returns its exit code.
pub(crate) fn run(suite: &Suite, a: &CheckArgs, env: &crate::env::Env, out: &Out) -> Result<i32> {
    let plan = plan(a)?;
    let run = super::run::execute(suite, &a.run, RunCommand::Check, env, out)?;
    let (history, _) = super::run::history_location(suite, a.run.history.as_deref());
    let checked = gate::check_in(&run, &plan, &history);
    print_notices(&checked.notices, out);
    let comparison = Some(&checked.comparison);
    if let Some(refused) = checked.refused {
        // The reports are still worth having: written gated without a baseline. Exit 2
        // either way; the reasons that reports failed are printed.
        let _ = write_reports(a, &run, comparison, out);
        return Err(Error::Baseline(refused));
    }

    let mut written = write_reports(a, &run, comparison, out);
    let view = super::run::View {
        breakdown: false,
        totals: a.run.totals,
    };
    if let Err(e) = super::run::emit(
        &run,
        comparison,
        a.run.format.into(),
        a.run.output.as_deref(),
        view,
        out,
    ) {
        out.error(&e.to_string());
        written = false;
    }
    print_verdict(&run, comparison, out);
    Ok(match checked.exit_code(&run) {
        exit::INTERRUPTED => exit::INTERRUPTED,
        // A report asked for and not written is a bad flag, whatever the verdict.
        _ if !written => exit::USAGE,
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
    a: &CheckArgs,
    run: &RunResult,
    comparison: Option<&Comparison>,
    out: &Out,
) -> bool {
    let summary = crate::github::Env::read().step_summary;
    // Rendered only when a file or the job summary asks for it, and then once.
    let markdown = (a.markdown.is_some() || summary.is_some())
        .then(|| crate::report::render(Format::Markdown, Default::default(), run, comparison));
    let files: [(Option<&Path>, &str, Format); 5] = [
        (a.markdown.as_deref(), "--markdown", Format::Markdown),
        (a.junit.as_deref(), "--junit", Format::Junit),
        (a.diff.as_deref(), "--diff", Format::Diff),
        (a.json.as_deref(), "--json", Format::Json),
        (a.html.as_deref(), "--html", Format::Html),
    ];
    let mut written = true;
    for (path, flag, format) in files {
        if let Some(p) = path {
            let rendered;
            let text = match (format, &markdown) {
                (Format::Markdown, Some(md)) => md.as_str(),
                _ => {
                    rendered = crate::report::render(format, Default::default(), run, comparison);
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
                f.write_all(crate::secrets::scrub(&format!("{markdown}\n")).as_bytes())
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
    let said = crate::report::verdict::Terminal::of(run, c);
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
