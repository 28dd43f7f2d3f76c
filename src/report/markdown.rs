//! The Markdown report for the pull-request comment and the job summary.
//!
//! The first line is the verdict; a hidden marker lets `evals comment` find and update the
//! same comment. Regressions come first, each with the delta, the diagnostics that changed
//! and the output diff folded in `<details>`; then improvements; then new, changed and
//! removed cases. The text is cut to stay under GitHub's 65,536-character comment limit,
//! with a note of what was left out.

use std::fmt::Write;

use super::Report;
use super::diff::output_diff;
use crate::results::{CaseDelta, CaseStatus, Comparison, RunResult, contender_label};

/// The hidden marker that identifies the comment `evals comment` keeps up to date.
pub const MARKER: &str = "<!-- evals-check-comment -->";

/// GitHub refuses a comment longer than this.
const LIMIT: usize = 65_536;
/// Room kept for the note saying what was left out.
const RESERVE: usize = 512;

pub struct Markdown {
    /// Cut the text to fit this many characters (GitHub's limit by default).
    pub limit: usize,
}

impl Default for Markdown {
    fn default() -> Self {
        Markdown { limit: LIMIT }
    }
}

fn pct(v: Option<f64>) -> String {
    v.map(|v| format!("{:.1}%", v * 100.0))
        .unwrap_or_else(|| "–".into())
}

fn points(v: Option<f64>) -> String {
    v.map(|v| format!("{:+.1}", v * 100.0))
        .unwrap_or_else(|| "–".into())
}

/// Makes text safe inside a table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `**evals check: 2 regressions, 1 error** in tax-intake (main → feature-x)`.
pub fn verdict_line(run: &RunResult) -> String {
    let from = run
        .comparison
        .as_ref()
        .and_then(|c| c.baseline.as_ref())
        .map(|b| b.branch.clone().unwrap_or_else(|| b.reference.clone()));
    let to = run.run.branch.clone().unwrap_or_else(|| "this run".into());
    let span = match from {
        Some(from) => format!("{from} → {to}"),
        None => format!("{to}, no baseline"),
    };
    let head = match &run.comparison {
        None => "evals check: not compared".to_string(),
        Some(c) if c.verdict.passed => "evals check passed".to_string(),
        Some(c) => {
            let regressions = c.experiments.iter().filter(|e| e.regressed).count()
                + count(c, |d| d.status == CaseStatus::Regressed);
            let errors = count(c, |d| d.status == CaseStatus::Errored);
            let failed = count(c, |d| {
                d.gated && !matches!(d.status, CaseStatus::Regressed | CaseStatus::Errored)
            });
            let regressed_experiments = c.experiments.iter().filter(|e| e.regressed).count();
            // The rest of the reasons are experiments missing the run's limits
            // (`--min-score`, `--min-pass-rate`): failed thresholds too.
            let failed = failed
                + c.verdict
                    .reasons
                    .len()
                    .saturating_sub(regressed_experiments + count(c, |d| d.gated));
            let mut parts = Vec::new();
            if regressions > 0 {
                parts.push(plural(regressions, "regression", "regressions"));
            }
            if errors > 0 {
                parts.push(plural(errors, "error", "errors"));
            }
            if failed > 0 {
                parts.push(plural(failed, "failed threshold", "failed thresholds"));
            }
            format!("evals check: {}", parts.join(", "))
        }
    };
    format!("**{head}** in {} ({span})", run.run.suite)
}

fn count(c: &Comparison, f: impl Fn(&CaseDelta) -> bool) -> usize {
    c.cases.iter().filter(|d| f(d)).count()
}

/// Text added while it fits, counting what did not.
struct Bounded {
    text: String,
    limit: usize,
    left_out: usize,
}

impl Bounded {
    fn push(&mut self, s: &str) -> bool {
        if self.text.len() + s.len() > self.limit.saturating_sub(RESERVE) {
            self.left_out += 1;
            false
        } else {
            self.text.push_str(s);
            true
        }
    }
}

fn case_row(d: &CaseDelta) -> String {
    let diags: Vec<String> = d
        .diagnostics
        .iter()
        .map(|g| {
            format!(
                "`{}`: want {} got {} ({})",
                g.field, g.want, g.got, g.outcome
            )
        })
        .collect();
    let mut why = diags.join("; ");
    if let Some(e) = &d.error {
        why = format!("error: {e}");
    } else if !d.failed_thresholds.is_empty() && why.is_empty() {
        why = d.failed_thresholds.join(", ");
    }
    format!(
        "| {} | {} | `{}` | {} | {} → {} | {} | {} |\n",
        cell(&contender_label(&d.contender)),
        cell(&d.dataset),
        cell(&d.case),
        d.status.as_str(),
        pct(d.baseline_score),
        pct(d.candidate_score),
        points(d.delta()),
        cell(&why)
    )
}

const CASE_HEADER: &str = "| contender | dataset | case | status | baseline → candidate | Δ points | diagnostics |\n|---|---|---|---|---|--:|---|\n";

impl Report for Markdown {
    fn render(&self, run: &RunResult) -> String {
        let mut out = Bounded {
            text: String::new(),
            limit: self.limit,
            left_out: 0,
        };
        let _ = writeln!(out.text, "{}", verdict_line(run));
        let _ = writeln!(out.text, "{MARKER}");
        let Some(c) = &run.comparison else {
            out.text
                .push_str("\nThis run was not checked; run `evals check`.\n");
            return out.text;
        };
        // `on `main` @ `abc1234``, or nothing of what git could not tell.
        let place = |branch: &Option<String>, commit: &Option<String>| {
            let mut s = String::new();
            if let Some(b) = branch {
                s.push_str(&format!(" on `{b}`"));
            }
            if let Some(c) = commit {
                s.push_str(&format!(" @ `{}`", c.get(..7).unwrap_or(c)));
            }
            s
        };
        let _ = write!(
            out.text,
            "\nRun `{}`{}",
            run.run.id,
            place(&run.run.branch, &run.run.commit)
        );
        match &c.baseline {
            Some(b) => {
                let _ = writeln!(
                    out.text,
                    " against baseline `{}`{}; tolerance {:.1} points; {} unchanged.",
                    b.id,
                    place(&b.branch, &b.commit),
                    c.tolerance * 100.0,
                    plural(c.unchanged, "case", "cases")
                );
            }
            None => out
                .text
                .push_str(", no baseline: gated on thresholds and errors alone.\n"),
        }
        if !c.verdict.passed {
            out.text.push('\n');
            for r in &c.verdict.reasons {
                // Continuation lines indented, so a multi-line reason stays one list item.
                out.push(&format!("- {}\n", r.replace('\n', "\n  ")));
            }
        }
        if !c.experiments.is_empty() {
            out.push("\n### Experiments\n\n| contender | dataset | baseline | candidate | Δ points | cases compared | |\n|---|---|--:|--:|--:|--:|---|\n");
            for e in &c.experiments {
                out.push(&format!(
                    "| {} | {} | {} | {} | {} | {} | {} |\n",
                    cell(&contender_label(&e.contender)),
                    cell(&e.dataset),
                    pct(e.baseline),
                    pct(e.candidate),
                    points(e.delta),
                    e.matched,
                    if e.regressed { "**regressed**" } else { "" }
                ));
            }
        }
        let gated: Vec<&CaseDelta> = c.cases.iter().filter(|d| d.gated).collect();
        if !gated.is_empty() {
            out.push(&format!(
                "\n### Regressions and failures ({})\n\n",
                gated.len()
            ));
            out.push(CASE_HEADER);
            for d in &gated {
                out.push(&case_row(d));
            }
            // An errored case has no output; its diff would only show the baseline's leaving.
            for d in gated.iter().filter(|d| d.candidate_output.is_some()) {
                if let Some(diff) = output_diff(d) {
                    out.push(&format!(
                        "\n<details><summary>{} · {} · <code>{}</code>: output diff</summary>\n\n```diff\n{}```\n\n</details>\n",
                        contender_label(&d.contender),
                        d.dataset,
                        d.case,
                        diff.replace("```", "`\u{200b}``")
                    ));
                }
            }
        }
        let sections: [(&str, &[CaseStatus]); 2] = [
            ("Improvements", &[CaseStatus::Improved]),
            (
                "Declined, new, changed and removed: not gated",
                &[
                    CaseStatus::Declined,
                    CaseStatus::New,
                    CaseStatus::Changed,
                    CaseStatus::Removed,
                ],
            ),
        ];
        for (title, statuses) in sections {
            let rows: Vec<&CaseDelta> = c
                .cases
                .iter()
                .filter(|d| !d.gated && statuses.contains(&d.status))
                .collect();
            if rows.is_empty() {
                continue;
            }
            out.push(&format!("\n### {title} ({})\n\n", rows.len()));
            out.push(CASE_HEADER);
            for d in rows {
                out.push(&case_row(d));
            }
        }
        if out.left_out > 0 {
            let _ = writeln!(
                out.text,
                "\n_{} left out to stay under GitHub's {}-character limit; the JSON report (`--json FILE`) has everything._",
                plural(out.left_out, "row or diff was", "rows or diffs were"),
                LIMIT
            );
        }
        out.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::compare;
    use crate::history::store::tests::{case, run};
    use crate::results::{BaselineInfo, Diagnostic};

    fn checked() -> RunResult {
        let base = run(
            "base",
            "main",
            "2026-01-01T00:00:00Z",
            vec![
                case("ok", Some(0.9), Some(true)),
                case("slips", Some(0.9), Some(true)),
                case("breaks", Some(0.9), Some(true)),
                case("better", Some(0.5), Some(true)),
                case("gone", Some(0.5), Some(true)),
            ],
        );
        let mut slips = case("slips", Some(0.5), Some(false));
        slips.failed_thresholds = vec!["accuracy 0.50 < 0.80".into()];
        slips.diagnostics = vec![Diagnostic {
            field: "filing_status".into(),
            want: serde_json::json!("single"),
            got: serde_json::json!("married"),
            outcome: "wrong".into(),
        }];
        let mut breaks = case("breaks", None, None);
        breaks.error = Some("cassette miss: no recording of this request".into());
        let mut cand = run(
            "cand",
            "feature-x",
            "2026-01-02T00:00:00Z",
            vec![
                case("ok", Some(0.9), Some(true)),
                slips,
                breaks,
                case("better", Some(0.7), Some(true)),
                case("fresh", Some(1.0), Some(true)),
            ],
        );
        let info = BaselineInfo {
            id: "base".into(),
            branch: Some("main".into()),
            commit: Some("abc1234def".into()),
            started_at: "2026-01-01T00:00:00Z".into(),
            reference: "main".into(),
        };
        cand.comparison = Some(compare(Some((&base, info)), &cand, 0.02));
        cand
    }

    #[test]
    fn markdown_report() {
        insta::assert_snapshot!(Markdown::default().render(&checked()));
    }

    #[test]
    fn a_passing_check_says_so_on_the_first_line() {
        let mut r = run(
            "r",
            "main",
            "2026-01-01T00:00:00Z",
            vec![case("ok", Some(1.0), Some(true))],
        );
        r.comparison = Some(compare(None, &r, 0.02));
        let md = Markdown::default().render(&r);
        assert_eq!(
            md.lines().next(),
            Some("**evals check passed** in tax-intake (main, no baseline)")
        );
        assert_eq!(md.lines().nth(1), Some(MARKER));
    }

    #[test]
    fn a_long_report_is_cut_under_the_limit_with_a_note() {
        let md = Markdown { limit: 1500 }.render(&checked());
        assert!(md.len() <= 1500, "{} chars", md.len());
        assert!(
            md.contains("left out to stay under GitHub's 65536-character limit"),
            "{md}"
        );
        assert!(
            md.starts_with(
                "**evals check: 2 regressions, 1 error** in tax-intake (main → feature-x)"
            ),
            "{md}"
        );
    }
}
