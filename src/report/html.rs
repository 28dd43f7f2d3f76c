//! The standalone HTML report: one file, no external assets. The verdict and the standings
//! (overall, per dataset; sortable, best value and best weighted score marked) are written
//! as HTML; the cases, a case × contender matrix with each case's input, expected answer,
//! outputs side by side and diff against the baseline, are one JSON blob the page's script
//! renders a page at a time, with search and filters ([`cases`]). Every value from a run
//! (model output, diagnostics, errors) is escaped: the template engine's HTML
//! auto-escaping in the markup, [`cases::script_json`] in the blob, `textContent` in the
//! script.

mod cases;

use minijinja::{AutoEscape, Environment, context};
use serde::Serialize;

use super::Report;
use super::format::{money, pct, secs};
use super::leaderboard::{Standings, metrics_in_order, standings};
use crate::error::Result;
use crate::results::{CaseSource, Comparison, ExperimentResult, MetricDef, RunResult};

/// A standalone HTML page: the leaderboards and, when the run was compared, the verdict.
#[derive(Debug)]
pub struct Html;

#[derive(Serialize)]
struct Cell {
    text: String,
    /// What the column sorts by (a number where there is one).
    sort: String,
}

fn num(text: String, v: Option<f64>) -> Cell {
    Cell {
        sort: v.map(|v| v.to_string()).unwrap_or_else(|| "-1e300".into()),
        text,
    }
}

fn txt(text: String) -> Cell {
    Cell {
        sort: text.clone(),
        text,
    }
}

#[derive(Serialize)]
struct Table {
    title: String,
    header: Vec<String>,
    rows: Vec<Vec<Cell>>,
    /// Row indexes to highlight, and why.
    best_value: Option<usize>,
    best_weighted: Option<usize>,
    best_value_text: String,
    best_weighted_text: Option<String>,
}

#[derive(Serialize)]
struct DeltaView {
    contender: String,
    dataset: String,
    case: String,
    status: String,
    gated: bool,
    scores: String,
    why: String,
    /// `#case=…`: the case in the matrix's case view.
    link: String,
}

/// How many rows of the baseline comparison the page lists; the rest are in the matrix
/// (outcome filter), so a run with thousands of changes does not open on a wall of them.
const DELTAS_LISTED: usize = 50;

/// The fragment of a case's link in the page: `#case=<dataset>/<case>`, as the script reads it.
fn case_link(dataset: &str, case: &str) -> String {
    let key = format!("{dataset}/{case}");
    let mut out = String::from("#case=");
    for b in key.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Where a case's trajectory goes in its view: the HTML fragment of an agent's steps (its
/// calls and tool calls), shown under the contender's output; `None` shows nothing.
// The page inserts the fragment as markup: `report::trajectory::html` escapes every value
// itself.
fn trajectory(case: &crate::results::CaseResult) -> Option<String> {
    (!case.trajectory.is_empty()).then(|| super::trajectory::html(&case.trajectory))
}

fn deltas(comparison: Option<&Comparison>) -> Vec<DeltaView> {
    let Some(c) = comparison else {
        return vec![];
    };
    // The gated first, in the gate's order, then the rest.
    c.cases
        .iter()
        .filter(|d| d.gated)
        .chain(c.cases.iter().filter(|d| !d.gated))
        .take(DELTAS_LISTED)
        .map(|d| DeltaView {
            link: case_link(&d.dataset, &d.case),
            contender: super::format::contender_label(&d.contender),
            dataset: d.dataset.clone(),
            case: d.case.clone(),
            status: d.status.as_str().to_string(),
            gated: d.gated,
            scores: format!("{} → {}", pct(d.baseline_score), pct(d.candidate_score)),
            why: d
                .error
                .clone()
                .map(|e| e.lines().next().unwrap_or("").to_string())
                .or_else(|| {
                    (!d.failed_thresholds.is_empty()).then(|| d.failed_thresholds.join(", "))
                })
                .or_else(|| {
                    (!d.diagnostics.is_empty()).then(|| {
                        d.diagnostics
                            .iter()
                            .map(|x| {
                                format!(
                                    "{}: want {}, got {} ({})",
                                    x.field, x.want, x.got, x.outcome
                                )
                            })
                            .collect::<Vec<_>>()
                            .join("; ")
                    })
                })
                .unwrap_or_default(),
        })
        .collect()
}

fn table(run: &RunResult, s: &Standings) -> Table {
    let weighted = !run.run.weights.is_empty();
    let metrics = metrics_in_order(run);
    let header = super::leaderboard::header(run);
    let truncated = super::leaderboard::shows_truncated(run);
    let repeated = super::leaderboard::repeated(run);
    let rows = s
        .rows
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let mut r = row(i, e, &metrics, weighted, truncated);
            for (j, text) in super::leaderboard::settings_cells(run, e)
                .into_iter()
                .enumerate()
                .skip(2)
            {
                r.insert(2 + j, txt(text));
            }
            if repeated {
                let at = 2
                    + super::leaderboard::settings_columns(run)
                    + usize::from(weighted)
                    + metrics.len();
                let cells = super::leaderboard::repeat_cells(e);
                let sorts = e
                    .repeat
                    .as_ref()
                    .map(|r| [r.ci95, Some(r.pass_hat_k), Some(r.flaky as f64)]);
                for (j, text) in cells.into_iter().enumerate() {
                    r.insert(at + j, num(text, sorts.and_then(|s| s[j])));
                }
            }
            if super::leaderboard::shows_judge_cost(run) {
                r.push(num(money(e.judge_cost_usd), e.judge_cost_usd));
            }
            r
        })
        .collect();
    let mut best_value_text = super::leaderboard::best_value_text(s, &label);
    for note in super::leaderboard::billed_notes(s, &label) {
        best_value_text.push_str("; ");
        best_value_text.push_str(&note);
    }
    let best_weighted_text = weighted.then(|| super::leaderboard::best_weighted_text(s, &label));
    Table {
        best_weighted_text,
        title: match &s.dataset {
            Some(d) => format!("dataset {d}"),
            None => "overall".into(),
        },
        header,
        rows,
        best_value: s.best_value.row,
        best_weighted: s.best_weighted.row,
        best_value_text,
    }
}

fn label(e: &ExperimentResult) -> String {
    super::format::contender_label(&e.contender)
}

fn row(
    i: usize,
    e: &ExperimentResult,
    metrics: &[&MetricDef],
    weighted: bool,
    truncated: bool,
) -> Vec<Cell> {
    let mut r = vec![
        num((i + 1).to_string(), Some(i as f64 + 1.0)),
        txt(e.contender.id.clone()),
        txt(e
            .contender
            .effort
            .clone()
            .unwrap_or_else(|| "default".into())),
        txt(e
            .contender
            .temperature
            .clone()
            .unwrap_or_else(|| "default".into())),
    ];
    if weighted {
        r.push(num(pct(e.wscore), e.wscore));
    }
    for m in metrics {
        let v = e.means.get(&m.name).copied().flatten();
        r.push(num(pct(v), v));
    }
    r.push(num(e.errors.to_string(), Some(e.errors as f64)));
    if truncated {
        r.push(num(e.truncated.to_string(), Some(e.truncated as f64)));
    }
    r.push(num(money(e.cost_usd), e.cost_usd));
    r.push(num(secs(Some(e.time_s)), Some(e.time_s)));
    r.push(num(secs(e.latency.mean_s), e.latency.mean_s));
    r.push(num(secs(e.latency.p95_s), e.latency.p95_s));
    r.push(num(
        e.tokens_in
            .map(|t| t.to_string())
            .unwrap_or_else(|| "-".into()),
        e.tokens_in.map(|t| t as f64),
    ));
    r.push(num(
        e.tokens_out
            .map(|t| t.to_string())
            .unwrap_or_else(|| "-".into()),
        e.tokens_out.map(|t| t as f64),
    ));
    r
}

/// The run's info as the page's template reads it: without its settings, which it does
/// not show, and whose planned case keys (one a case) the template engine would read into
/// a value of its own.
fn without_settings(info: &crate::results::RunInfo) -> crate::results::RunInfo {
    crate::results::RunInfo {
        id: info.id.clone(),
        suite: info.suite.clone(),
        description: info.description.clone(),
        project: info.project.clone(),
        suite_fingerprint: info.suite_fingerprint.clone(),
        branch: info.branch.clone(),
        commit: info.commit.clone(),
        command: info.command,
        mode: info.mode,
        argv: info.argv.clone(),
        started_at: info.started_at,
        finished_at: info.finished_at,
        status: info.status,
        settings: Default::default(),
        metrics: info.metrics.clone(),
        weights: info.weights.clone(),
        refused: info.refused.clone(),
    }
}

const TEMPLATE: &str = include_str!("html/report.html");
/// What stands for the case data in the rendered page: markup, which no value from the run
/// can be (the template escapes `<` in every one).
const DATA: &str = "<evals-case-data/>";
const STYLE: &str = include_str!("html/report.css");
const SCRIPT: &str = include_str!("html/report.js");

impl Report for Html {
    fn write(
        &self,
        run: &RunResult,
        cases: CaseSource<'_>,
        comparison: Option<&Comparison>,
        out: &mut dyn std::io::Write,
    ) -> Result<()> {
        let mut env = Environment::new();
        env.set_auto_escape_callback(|_| AutoEscape::Html);
        if let Err(e) = env.add_template("report.html", TEMPLATE) {
            return super::put(
                out,
                &format!("<!doctype html><p>report template error: {e}</p>\n"),
            );
        }
        let (per_dataset, overall) = standings(run);
        let overall_note = super::leaderboard::overall_note(&per_dataset);
        let mut tables: Vec<Table> = Vec::new();
        if let Some(o) = &overall {
            tables.push(table(run, o));
        }
        tables.extend(per_dataset.iter().map(|s| table(run, s)));
        let (verdict, passed, reasons) = match comparison {
            Some(c) => (
                Some(super::verdict::verdict_text(run, Some(c))),
                c.verdict.passed,
                c.verdict
                    .reasons
                    .iter()
                    .map(super::verdict::reason_text)
                    .collect(),
            ),
            None => (None, true, vec![]),
        };
        let info = without_settings(&run.run);
        let ctx = context! {
            run => &info,
            metrics => metrics_in_order(run),
            tables => tables,
            overall_note => overall_note,
            deltas_total => comparison.map(|c| c.cases.len()).unwrap_or(0),
            deltas_listed => DELTAS_LISTED,
            cases_total => (0..run.experiments.len()).map(|i| cases.len(i)).sum::<usize>(),
            // The case data is streamed in its place (see below).
            data => minijinja::Value::from_safe_string(DATA.to_string()),
            style => minijinja::Value::from_safe_string(STYLE.to_string()),
            script => minijinja::Value::from_safe_string(SCRIPT.to_string()),
            refused => &run.run.refused,
            verdict => verdict,
            passed => passed,
            reasons => reasons,
            deltas => deltas(comparison),
            truncated => super::leaderboard::shows_truncated(run),
            tests => comparison.map(|c| super::verdict::tested(c, run)).unwrap_or_default(),
        };
        let page = env
            .get_template("report.html")
            .and_then(|t| t.render(ctx))
            .unwrap_or_else(|e| format!("<!doctype html><p>report error: {e}</p>\n"));
        // Markup is escaped by the template; a control character is not markup, and is
        // shown as text (inside the case data it reads back the same, see `text::visible`).
        // The page around the case data, the data a row at a time between.
        let Some((head, tail)) = page.split_once(DATA) else {
            return super::put(out, &page);
        };
        super::put(out, head)?;
        cases::write_data(run, cases, comparison, &mut |piece| super::put(out, piece))?;
        super::put(out, tail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::testing::{case, run};

    #[test]
    fn outputs_are_escaped_and_nothing_is_loaded_from_elsewhere() {
        let mut r = run(
            "r1",
            "main",
            "2026-01-01T00:00:00Z",
            vec![
                case("evil", Some(0.5), Some(false)),
                case("fine", Some(1.0), Some(true)),
            ],
        );
        r.run.suite = "<script>alert(0)</script>".into();
        r.experiments[0].cases[0].output = Some(serde_json::json!("<script>alert(1)</script>"));
        r.experiments[0].cases[0].error =
            crate::results::testing::error("<img src=x onerror=alert(2)>");
        r.experiments[0].cases[0].input = Some(serde_json::json!("</script><script>alert(3)"));
        let html = Html.render(&r, None);
        // In the markup, HTML-escaped; in the case data, `<` `>` `&` as JSON escapes.
        assert!(
            html.contains("<h1>&lt;script&gt;alert(0)&lt;&#x2f;script&gt;</h1>"),
            "{html}"
        );
        assert!(
            html.contains(r#""out":"\u003cscript\u003ealert(1)\u003c/script\u003e""#),
            "{html}"
        );
        assert!(
            html.contains(r#""i":"\u003c/script\u003e\u003cscript\u003ealert(3)""#),
            "{html}"
        );
        for bad in ["<script>alert", "</script><script>", "<img src=x"] {
            assert!(!html.contains(bad), "{bad}");
        }
        assert_eq!(
            html.matches("</script>").count(),
            2,
            "the data and the script"
        );
        // Standalone: no external stylesheet, script or image.
        for needle in ["src=\"http", "href=\"http", "src=\"//", "<link"] {
            assert!(!html.contains(needle), "{needle}");
        }
        assert_eq!(
            html.matches("<script>").count(),
            1,
            "only the page's own script (the data is type=application/json)"
        );
        assert!(html.contains("class=\"sortable\""));
        assert!(html.contains("<h2>dataset "));
    }
}
