//! The standalone HTML report: one file, no external assets, sortable tables, dataset
//! standings, a drill-down per experiment and case. Every value from a run (model output,
//! diagnostics, errors) is escaped by the template engine's HTML auto-escaping.

use minijinja::{AutoEscape, Environment, context};
use serde::Serialize;

use super::Report;
use super::format::{money, pct, secs};
use super::leaderboard::{Standings, metrics_in_order, standings};
use crate::results::{Comparison, ExperimentResult, MetricDef, RunResult};

/// A standalone HTML page: the leaderboards and, when the run was compared, the verdict.
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
struct CaseView {
    case: String,
    score: String,
    verdict: String,
    metrics: Vec<String>,
    error: Option<String>,
    reply_error: Option<String>,
    output: String,
    diagnostics: Vec<String>,
    thresholds: Vec<String>,
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
    diff: Option<String>,
}

fn deltas(comparison: Option<&Comparison>) -> Vec<DeltaView> {
    let Some(c) = comparison else {
        return vec![];
    };
    c.cases
        .iter()
        .map(|d| DeltaView {
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
            diff: super::diff::output_diff(d),
        })
        .collect()
}

#[derive(Serialize)]
struct ExperimentView {
    title: String,
    cases: Vec<CaseView>,
    errors: usize,
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
            if repeated {
                let at = 4 + usize::from(weighted) + metrics.len();
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
    format!(
        "{} ({} effort, temp {})",
        e.contender.id,
        e.contender.effort.as_deref().unwrap_or("default"),
        e.contender.temperature.as_deref().unwrap_or("default")
    )
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

fn experiments(run: &RunResult) -> Vec<ExperimentView> {
    let metrics = metrics_in_order(run);
    run.experiments
        .iter()
        .map(|e| ExperimentView {
            title: format!("{} · {}", label(e), e.dataset),
            errors: e.errors,
            cases: e
                .cases
                .iter()
                .map(|c| CaseView {
                    case: c.case.clone(),
                    score: pct(c.score),
                    verdict: match (&c.error, c.passed) {
                        (Some(_), _) => "error".into(),
                        (None, Some(true)) => "pass".into(),
                        _ => "fail".into(),
                    },
                    metrics: metrics
                        .iter()
                        .map(|m| pct(c.metrics.get(&m.name).copied().flatten()))
                        .collect(),
                    error: c.error.as_ref().map(|e| e.message.clone()),
                    reply_error: c.reply_error.clone(),
                    output: match &c.output {
                        Some(serde_json::Value::String(s)) => s.clone(),
                        Some(v) => serde_json::to_string_pretty(v).unwrap_or_default(),
                        None => c.raw.clone().unwrap_or_default(),
                    },
                    diagnostics: c
                        .diagnostics
                        .iter()
                        .map(|d| {
                            format!(
                                "{}: want {}, got {} ({})",
                                d.field, d.want, d.got, d.outcome
                            )
                        })
                        .collect(),
                    thresholds: c.failed_thresholds.clone(),
                })
                .collect(),
        })
        .collect()
}

const TEMPLATE: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>evals · {{ run.suite }}</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem auto;max-width:1400px;padding:0 1rem;color:#1d2433;background:#fbfbfd}
h1{font-size:1.5rem;margin:0 0 .25rem}h2{font-size:1.15rem;margin:2rem 0 .5rem}
.meta{color:#5b6478;margin-bottom:1rem}.meta code{background:#eef0f5;padding:0 .3em;border-radius:3px}
table{border-collapse:collapse;width:100%;background:#fff;box-shadow:0 1px 2px #0001;margin-bottom:.5rem}
th,td{padding:.35rem .6rem;border-bottom:1px solid #e6e8ef;text-align:right;white-space:nowrap}
th{background:#f1f3f8;cursor:pointer;user-select:none;position:sticky;top:0}th:hover{background:#e4e8f2}
td.l,th.l{text-align:left}tr.best-value td{background:#e9f8ee}tr.best-weighted td:first-child{border-left:4px solid #2f9e5a}
.note{color:#2f6e45;margin:.25rem 0 1rem}.verdict{padding:.75rem 1rem;border-radius:6px;font-weight:600}
.pass{color:#1f7a3f}.fail{color:#9a6700}.error{color:#b42318;font-weight:600}
.verdict.ok{background:#e9f8ee}.verdict.bad{background:#fdecea}
details{background:#fff;margin:.4rem 0;padding:.4rem .8rem;box-shadow:0 1px 2px #0001;border-radius:4px}
summary{cursor:pointer}pre{background:#f6f7fa;padding:.6rem;overflow:auto;max-height:24rem;white-space:pre-wrap}
ul{margin:.3rem 0}.scroll{overflow-x:auto}dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}dt{font-weight:600}
</style></head><body>
<h1>{{ run.suite }}</h1>
{% if run.description %}<div>{{ run.description }}</div>{% endif %}
<div class="meta">run <code>{{ run.id }}</code> · {{ run.command }} ({{ run.mode }}) · {{ run.status }} · started {{ run.started_at }}{% if run.branch %} · branch <code>{{ run.branch }}</code>{% endif %}{% if run.commit %} @ <code>{{ run.commit[:7] }}</code>{% endif %}</div>
{% if verdict %}<div class="verdict {{ 'ok' if passed else 'bad' }}">{{ verdict }}</div>
{% if reasons %}<ul>{% for r in reasons %}<li>{{ r }}</li>{% endfor %}</ul>{% endif %}{% endif %}
{% if deltas %}<h2>Compared with the baseline</h2>
<div class="scroll"><table class="sortable"><thead><tr><th class="l">status</th><th class="l">contender</th><th class="l">dataset</th><th class="l">case</th><th>baseline → this run</th><th class="l">why</th></tr></thead><tbody>
{% for d in deltas %}<tr><td class="l {{ 'error' if d.gated else '' }}">{{ d.status }}</td><td class="l">{{ d.contender }}</td><td class="l">{{ d.dataset }}</td><td class="l">{{ d.case }}</td><td>{{ d.scores }}</td><td class="l">{{ d.why }}</td></tr>
{% endfor %}</tbody></table></div>
{% for d in deltas %}{% if d.diff %}<details><summary>{{ d.contender }} · {{ d.dataset }} · {{ d.case }}: output diff</summary><pre>{{ d.diff }}</pre></details>{% endif %}{% endfor %}
{% endif %}
{% if tests %}<h2>Statistical gate</h2><ul>{% for t in tests %}<li>{{ t }}</li>{% endfor %}</ul>
{% endif %}{% if refused %}<p>Refused (never scored): {% for r in refused %}{{ r }}{% if not loop.last %}; {% endif %}{% endfor %}</p>{% endif %}
{% if overall_note %}<h2>overall</h2>
<div class="note">{{ overall_note }}</div>{% endif %}
{% for t in tables %}
<h2>{{ t.title }}</h2>
<div class="scroll"><table class="sortable"><thead><tr>{% for h in t.header %}<th class="{{ 'l' if loop.index in [2,3,4] else '' }}">{{ h }}</th>{% endfor %}</tr></thead><tbody>
{% for r in t.rows %}{% set i = loop.index0 %}<tr class="{{ 'best-value' if i == t.best_value else '' }} {{ 'best-weighted' if i == t.best_weighted else '' }}">{% for c in r %}<td class="{{ 'l' if loop.index in [2,3,4] else '' }}" data-sort="{{ c.sort }}">{{ c.text }}</td>{% endfor %}</tr>
{% endfor %}</tbody></table></div>
<div class="note">{{ t.best_value_text }}{% if t.best_weighted_text %}<br>{{ t.best_weighted_text }} (marked at the left){% endif %}</div>
{% endfor %}
<h2>Glossary</h2><dl>{% for m in metrics %}<dt>{{ m.name }}</dt><dd>{{ m.description }} ({{ 'higher' if m.higher_is_better else 'lower' }} is better)</dd>{% endfor %}
{% if run.weights %}<dt>wscore</dt><dd>weighted score from <code>weighted_score.weights</code>: Σ|w|·goodness / Σ|w|, errors off the total</dd>{% endif %}
<dt>errors</dt><dd>cases with no score: transport failures, cassette misses, crashed adapters</dd>
{% if truncated %}<dt>truncated</dt><dd>scored cases whose reply was cut at the token limit (<code>finish_reason: length</code>)</dd>
{% endif %}<dt>cost</dt><dd>dollars reported by the provider or priced from <code>pricing:</code>; - when unknown</dd>
<dt>time, latency, p95</dt><dd>experiment time from call latencies; mean and 95th percentile seconds of the calls that worked</dd></dl>
<h2>Cases</h2>
{% for e in experiments %}<details><summary>{{ e.title }}{% if e.errors %} · <span class="error">{{ e.errors }} errors</span>{% endif %}</summary>
<table class="sortable"><thead><tr><th class="l">case</th><th>score</th>{% for m in metrics %}<th>{{ m.name }}</th>{% endfor %}<th class="l">result</th></tr></thead><tbody>
{% for c in e.cases %}<tr><td class="l">{{ c.case }}</td><td>{{ c.score }}</td>{% for v in c.metrics %}<td>{{ v }}</td>{% endfor %}<td class="l {{ c.verdict }}">{{ c.verdict }}</td></tr>
{% endfor %}</tbody></table>
{% for c in e.cases %}<details><summary>{{ c.case }} — {{ c.score }} <span class="{{ c.verdict }}">{{ c.verdict }}</span></summary>
{% if c.error %}<p class="error">error</p><pre>{{ c.error }}</pre>{% endif %}
{% if c.reply_error %}<p class="fail">reply unusable: {{ c.reply_error }}</p>{% endif %}
{% if c.diagnostics %}<ul>{% for d in c.diagnostics %}<li>{{ d }}</li>{% endfor %}</ul>{% endif %}
{% if c.thresholds %}<p class="fail">below threshold: {{ c.thresholds | join(", ") }}</p>{% endif %}
{% if c.output %}<pre>{{ c.output }}</pre>{% endif %}
</details>{% endfor %}
</details>{% endfor %}
<script>
document.querySelectorAll("table.sortable").forEach(function (t) {
  t.querySelectorAll("th").forEach(function (th, col) {
    th.addEventListener("click", function () {
      var body = t.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      var asc = th.dataset.dir !== "asc"; th.dataset.dir = asc ? "asc" : "desc";
      rows.sort(function (a, b) {
        var x = a.cells[col].dataset.sort || a.cells[col].textContent;
        var y = b.cells[col].dataset.sort || b.cells[col].textContent;
        var nx = parseFloat(x), ny = parseFloat(y);
        var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
        return asc ? c : -c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
</script>
</body></html>
"#;

impl Report for Html {
    fn render(&self, run: &RunResult, comparison: Option<&Comparison>) -> String {
        let mut env = Environment::new();
        env.set_auto_escape_callback(|_| AutoEscape::Html);
        if let Err(e) = env.add_template("report.html", TEMPLATE) {
            return format!("<!doctype html><p>report template error: {e}</p>\n");
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
                Some(super::markdown::verdict_text(run, Some(c))),
                c.verdict.passed,
                c.verdict
                    .reasons
                    .iter()
                    .map(super::verdict::reason_text)
                    .collect(),
            ),
            None => (None, true, vec![]),
        };
        let ctx = context! {
            run => &run.run,
            metrics => metrics_in_order(run),
            tables => tables,
            overall_note => overall_note,
            experiments => experiments(run),
            refused => &run.run.refused,
            verdict => verdict,
            passed => passed,
            reasons => reasons,
            deltas => deltas(comparison),
            truncated => super::leaderboard::shows_truncated(run),
            tests => comparison.map(|c| super::verdict::tested(c, run)).unwrap_or_default(),
        };
        env.get_template("report.html")
            .and_then(|t| t.render(ctx))
            .unwrap_or_else(|e| format!("<!doctype html><p>report error: {e}</p>\n"))
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
        r.experiments[0].cases[0].output = Some(serde_json::json!("<script>alert(1)</script>"));
        r.experiments[0].cases[0].error =
            crate::results::testing::error("<img src=x onerror=alert(2)>");
        let html = Html.render(&r, None);
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;&#x2f;script&gt;"),
            "{html}"
        );
        assert!(!html.contains("<script>alert(1)"));
        assert!(!html.contains("<img src=x"));
        // Standalone: no external stylesheet, script or image.
        for needle in ["src=\"http", "href=\"http", "src=\"//", "<link"] {
            assert!(!html.contains(needle), "{needle}");
        }
        assert_eq!(
            html.matches("<script>").count(),
            1,
            "only the sorting script"
        );
        assert!(html.contains("class=\"sortable\""));
        assert!(html.contains("<h2>dataset "));
    }
}
