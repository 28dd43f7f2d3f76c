//! `evals check`: replay, store the run, compare it with its baseline, write the reports,
//! and turn the verdict into the exit code (0 passed, 1 failed, 2 no usable baseline or a
//! report file that cannot be written).

use std::io::Write;
use std::path::Path;

use super::args::{CheckArgs, MissingBaselineArg};
use super::output::Out;
use super::report_file::ReportFile;
use crate::error::{Error, Result, exit};
use crate::gate::{self, MissingBaseline, baseline::Found};
use crate::history::History;
use crate::report::{Report, diff::Diff, json::Json, junit::Junit, markdown::Markdown};
use crate::results::{Command as RunCommand, RunResult, RunStatus};
use crate::suite::Suite;

/// `check`'s options, validated: what the gate needs beyond the run itself.
#[derive(Debug, Clone)]
pub struct CheckPlan {
    pub baseline: Option<String>,
    pub tolerance: f64,
    pub missing: MissingBaseline,
}

impl CheckPlan {
    pub fn new(a: &CheckArgs) -> Result<CheckPlan> {
        if !(0.0..=1.0).contains(&a.tolerance) {
            return Err(Error::Usage(format!(
                "--tolerance {}: expected a fraction between 0 and 1 (0.02 is two points)",
                a.tolerance
            )));
        }
        Ok(CheckPlan {
            baseline: a.baseline.clone().filter(|b| !b.trim().is_empty()),
            tolerance: a.tolerance,
            missing: match a.missing_baseline {
                MissingBaselineArg::Fail => MissingBaseline::Fail,
                MissingBaselineArg::Pass => MissingBaseline::Pass,
            },
        })
    }
}

/// Runs the check end to end and returns its exit code.
pub fn run(suite: &Suite, a: &CheckArgs, env: &crate::env::Env, out: &Out) -> Result<i32> {
    let plan = CheckPlan::new(a)?;
    let mut run = super::run::execute(suite, &a.run, RunCommand::Check, env, out)?;

    // This run is the first baseline of its own branch (set below).
    let mut first = false;
    let baseline = match &plan.baseline {
        None => None,
        Some(reference) => {
            let path = super::run::history_path(suite, a.run.history.as_deref());
            let history = match History::open(&path) {
                Ok(h) => Some(h),
                Err(e) => {
                    out.warn(&e.to_string());
                    None
                }
            };
            match gate::baseline::resolve_or_first(reference, &run, history.as_ref(), &path) {
                Ok(Found::Baseline(b)) => Some(*b),
                Ok(Found::First(note)) => {
                    out.note(&note);
                    // Only a completed run is ever a baseline (the note says so otherwise).
                    first = run.run.status == RunStatus::Completed;
                    None
                }
                Err(e) => {
                    let reason = e.to_string();
                    match plan.missing {
                        MissingBaseline::Fail => {
                            // The reports are still worth having: write them without a comparison.
                            run.comparison = Some(gate::compare(None, &run, plan.tolerance));
                            // Exit 2 either way; the reasons that reports failed are printed.
                            let _ = write_reports(a, &run, out);
                            return Err(Error::Baseline(reason));
                        }
                        MissingBaseline::Pass => {
                            out.warn(&format!(
                                "{reason}\n  (--missing-baseline pass: gating on thresholds and errors alone)"
                            ));
                            None
                        }
                    }
                }
            }
        }
    };
    let mut comparison = gate::compare(
        baseline.as_ref().map(|(b, info)| (b, info.clone())),
        &run,
        plan.tolerance,
    );
    comparison.first_baseline = first;
    if comparison.compared_nothing() {
        out.warn(NOTHING_COMPARED);
    }
    let passed = comparison.verdict.passed;
    run.comparison = Some(comparison);

    let mut written = write_reports(a, &run, out);
    let view = super::run::View {
        breakdown: false,
        totals: a.run.totals,
    };
    if let Err(e) = super::run::emit(&run, a.run.format, a.run.output.as_deref(), view, out) {
        out.error(&e.to_string());
        written = false;
    }
    print_verdict(&run, out);
    Ok(match exit::of_run(run.run.status, passed) {
        exit::INTERRUPTED => exit::INTERRUPTED,
        // A report asked for and not written is a bad flag, whatever the verdict.
        _ if !written => exit::USAGE,
        code => code,
    })
}

/// Writes each report asked for, and the Markdown to `$GITHUB_STEP_SUMMARY`; false when a
/// report could not be written (each such error is printed, and the other reports are
/// written all the same).
fn write_reports(a: &CheckArgs, run: &RunResult, out: &Out) -> bool {
    let markdown = Markdown::default().render(run);
    // Rendered only when asked for.
    type Render<'a> = Box<dyn Fn() -> String + 'a>;
    let file = |flag, kind, example| ReportFile {
        flag,
        kind,
        example,
    };
    let files: [(Option<&Path>, ReportFile, Render); 5] = [
        (
            a.markdown.as_deref(),
            file("--markdown", "Markdown report", "pr.md"),
            Box::new(|| markdown.clone()),
        ),
        (
            a.junit.as_deref(),
            file("--junit", "JUnit report", "junit.xml"),
            Box::new(|| Junit.render(run)),
        ),
        (
            a.diff.as_deref(),
            file("--diff", "diff report", "pr.diff"),
            Box::new(|| Diff.render(run)),
        ),
        (
            a.json.as_deref(),
            file("--json", "JSON report", "run.json"),
            Box::new(|| Json.render(run)),
        ),
        (
            a.html.as_deref(),
            file("--html", "HTML report", "report.html"),
            Box::new(|| crate::report::html::Html.render(run)),
        ),
    ];
    let mut written = true;
    for (path, file, render) in files {
        if let Some(p) = path {
            match file.write(p, &render()) {
                Ok(()) => out.note(&format!("wrote {}", p.display())),
                Err(e) => {
                    out.error(&e.to_string());
                    written = false;
                }
            }
        }
    }
    if let Some(summary) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|v| !v.is_empty()) {
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

/// The warning when a baseline shares no case with the run.
pub(super) const NOTHING_COMPARED: &str = "the baseline shares no case with this run (every case is new, changed or removed): nothing was compared with it";

/// The verdict on stderr: a line, then the reasons.
pub(super) fn print_verdict(run: &RunResult, out: &Out) {
    let Some(c) = &run.comparison else {
        return;
    };
    let line = crate::report::markdown::verdict_text(run);
    if c.verdict.passed {
        out.note(&line);
    } else {
        out.error(&line);
        // A miss is said once per cause, below, not once per case.
        for r in c
            .verdict
            .reasons
            .iter()
            .filter(|r| !crate::report::misses::is_miss_reason(r))
        {
            out.note(&format!("  {r}"));
        }
        for g in crate::report::misses::groups(run) {
            out.note(&format!(
                "  {} missed request(s), the same change: {}\n  cases: {}\n{}  record again: {}",
                g.cases.len(),
                crate::report::misses::who(&g),
                crate::report::misses::case_list(&g, 10),
                g.diff
                    .lines()
                    .map(|l| format!("    {l}\n"))
                    .collect::<String>(),
                g.hints()
                    .iter()
                    .map(|h| format!("`{h}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
}
