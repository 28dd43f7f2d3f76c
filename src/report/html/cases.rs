//! The report's case data: one row per case (dataset × case id), one cell per contender,
//! written as one JSON blob the page's script renders a page at a time, so a report of
//! 10,000 cases opens on a hundred rows instead of 10,000 elements built up front.
//!
//! The blob sits in a `<script type="application/json">`: [`script_json`] writes `<`, `>`
//! and `&` as `\u` escapes, so nothing in a case (`</script>`, `<!--`) can end the element
//! or bend the parser; the script reads it with `JSON.parse` and writes every value with
//! `textContent`, never as markup.

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use serde_json::Value;

use crate::error::Result;
use crate::report::format::contender_label;
use crate::results::{CaseDelta, CaseReader, CaseResult, CaseSource, Comparison, RunResult};

/// What the page's script renders.
#[derive(Serialize)]
pub(super) struct Data {
    /// The matrix's columns, contender labels (`openai/gpt-4o [temp 0]`).
    contenders: Vec<String>,
    /// The declared metrics, in the order the tables show them.
    metrics: Vec<String>,
    /// Every dataset and variant, for the filters.
    datasets: Vec<String>,
    variants: Vec<String>,
    /// Whether the run was compared with a baseline (the outcome filter's `regressed`).
    compared: bool,
    rows: Vec<Row>,
}

/// One case of one dataset, across the contenders.
#[derive(Serialize)]
struct Row {
    /// Dataset.
    d: String,
    /// Case id.
    c: String,
    /// Variant.
    v: String,
    /// Input as text.
    #[serde(skip_serializing_if = "Option::is_none")]
    i: Option<String>,
    /// Expected answer as text.
    #[serde(skip_serializing_if = "Option::is_none")]
    e: Option<String>,
    /// One cell per contender (`None`: the contender did not run this case).
    r: Vec<Option<CellData>>,
}

/// One case for one contender. Short keys: a 10,000-case report writes them 10,000 times.
#[derive(Serialize, Default)]
struct CellData {
    /// Score (0..=1).
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<f64>,
    /// Outcome: `pass`, `fail`, `error` or `removed` (in the baseline only).
    o: &'static str,
    /// How it moved against the baseline (`regressed`, `improved`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    st: Option<&'static str>,
    /// It fails the check.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    g: bool,
    /// Flaky: some tries passed, some failed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    fl: bool,
    /// `passed 2 of 3 tries`, for a repeated case.
    #[serde(skip_serializing_if = "Option::is_none")]
    tries: Option<String>,
    /// Each metric, in `Data::metrics`' order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    m: Vec<Option<f64>>,
    /// The output as text (JSON pretty-printed), else what the model said.
    #[serde(skip_serializing_if = "String::is_empty")]
    out: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    err: Option<String>,
    /// Why the reply was unusable.
    #[serde(skip_serializing_if = "Option::is_none")]
    re: Option<String>,
    /// Diagnostics, each as a line.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    dg: Vec<String>,
    /// Failed thresholds.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    th: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cost: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lat: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tin: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tout: Option<u64>,
    /// Baseline score.
    #[serde(skip_serializing_if = "Option::is_none")]
    b: Option<f64>,
    /// The unified diff of the output against the baseline's.
    #[serde(skip_serializing_if = "Option::is_none")]
    diff: Option<String>,
    /// The case's trajectory as an HTML fragment (see [`super::trajectory`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    tr: Option<String>,
    /// The tool calls the model asked for, each as `name(arguments)` (none asked for, or
    /// nobody could see: left out; the diagnostics of a tool-call check tell them apart).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tc: Vec<String>,
    /// What the case warns of.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    wn: Vec<String>,
    /// The reply's components (UI payloads) as pretty JSON; `[]` for explicitly none,
    /// absent when not reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    cp: Option<String>,
    /// The unified diff of the components against the baseline's, when they changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    cpd: Option<String>,
}

/// A value as the report shows it: a string as it is, anything else pretty JSON.
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        v => serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string()),
    }
}

fn diagnostic_lines(c: &CaseResult) -> Vec<String> {
    c.diagnostics
        .iter()
        .map(|d| {
            format!(
                "{}: want {}, got {} ({})",
                d.field, d.want, d.got, d.outcome
            )
        })
        .collect()
}

fn cell(c: &CaseResult, metrics: &[String], delta: Option<&CaseDelta>) -> CellData {
    let out = match &c.output {
        None | Some(Value::Null) => c.raw.clone().unwrap_or_default(),
        Some(v) => shown(v),
    };
    CellData {
        s: c.score,
        o: match (&c.error, c.passed) {
            (Some(_), _) => "error",
            (None, Some(true)) => "pass",
            _ => "fail",
        },
        st: delta.map(|d| d.status.as_str()),
        g: delta.is_some_and(|d| d.gated),
        fl: c.flaky(),
        tries: (c.repeats.len() > 1)
            .then(|| format!("passed {} of {} tries", c.passes(), c.tries())),
        m: if c.metrics.is_empty() {
            vec![]
        } else {
            metrics
                .iter()
                .map(|m| c.metrics.get(m).copied().flatten())
                .collect()
        },
        out,
        err: c.error.as_ref().map(|e| e.message.clone()),
        re: c.reply_error.clone(),
        dg: diagnostic_lines(c),
        th: c.failed_thresholds.clone(),
        cost: c.usage.cost_usd,
        lat: c.latency_s,
        tin: c.usage.input_tokens,
        tout: c.usage.output_tokens,
        b: delta.and_then(|d| d.baseline_score),
        diff: delta.and_then(crate::report::diff::output_diff),
        tr: super::trajectory(c),
        tc: c
            .tool_calls
            .iter()
            .flatten()
            .map(|t| format!("{}({})", t.name, t.arguments))
            .collect(),
        wn: c.warnings.clone(),
        cp: crate::results::components::pretty(c.components.as_deref()),
        cpd: delta.and_then(|d| d.components_diff.clone()),
    }
}

/// The case data of `run` (its cases read into it), each case beside the baseline's when
/// `comparison` has it.
pub(super) fn data(run: &RunResult, comparison: Option<&Comparison>) -> Data {
    let metrics: Vec<String> = crate::report::leaderboard::metrics_in_order(run)
        .iter()
        .map(|m| m.name.clone())
        .collect();
    let mut contenders: Vec<String> = Vec::new();
    let mut column: HashMap<String, usize> = HashMap::new();
    let mut col = |label: String, contenders: &mut Vec<String>| -> usize {
        *column.entry(label.clone()).or_insert_with(|| {
            contenders.push(label);
            contenders.len() - 1
        })
    };
    let mut deltas: HashMap<(String, &str, &str), &CaseDelta> = HashMap::new();
    for d in comparison.map(|c| c.cases.as_slice()).unwrap_or(&[]) {
        deltas.insert((contender_label(&d.contender), &d.dataset, &d.case), d);
    }
    let mut rows: Vec<Row> = Vec::new();
    let mut at: HashMap<(String, String), usize> = HashMap::new();
    let mut datasets: Vec<String> = Vec::new();
    let mut variants: Vec<String> = Vec::new();
    // Seen sets beside the lists: a suite may have as many variants as cases, and a scan of
    // the list per case made a 100,000-case report quadratic.
    let mut seen: HashSet<(bool, String)> = HashSet::new();
    let mut row_of = |dataset: &str, case: &str, variant: &str, rows: &mut Vec<Row>| -> usize {
        *at.entry((dataset.to_string(), case.to_string()))
            .or_insert_with(|| {
                if seen.insert((false, dataset.to_string())) {
                    datasets.push(dataset.to_string());
                }
                if !variant.is_empty() && seen.insert((true, variant.to_string())) {
                    variants.push(variant.to_string());
                }
                rows.push(Row {
                    d: dataset.to_string(),
                    c: case.to_string(),
                    v: variant.to_string(),
                    i: None,
                    e: None,
                    r: vec![],
                });
                rows.len() - 1
            })
    };
    for e in &run.experiments {
        let label = contender_label(&e.contender);
        let j = col(label.clone(), &mut contenders);
        for c in &e.cases {
            let i = row_of(&e.dataset, &c.case, &c.variant, &mut rows);
            let row = &mut rows[i];
            if row.i.is_none() {
                row.i = c.input.as_ref().map(shown);
            }
            if row.e.is_none() {
                row.e = c.expected.as_ref().map(shown);
            }
            if row.r.len() <= j {
                row.r.resize_with(j + 1, || None);
            }
            let delta = deltas
                .get(&(label.clone(), e.dataset.as_str(), c.case.as_str()))
                .copied();
            row.r[j] = Some(cell(c, &metrics, delta));
        }
    }
    // Cases the baseline ran and this run did not: a row saying so.
    for d in comparison.map(|c| c.cases.as_slice()).unwrap_or(&[]) {
        if d.status != crate::results::CaseStatus::Removed {
            continue;
        }
        let j = col(contender_label(&d.contender), &mut contenders);
        let i = row_of(&d.dataset, &d.case, "", &mut rows);
        let row = &mut rows[i];
        if row.r.len() <= j {
            row.r.resize_with(j + 1, || None);
        }
        row.r[j] = Some(CellData {
            o: "removed",
            st: Some(d.status.as_str()),
            g: d.gated,
            b: d.baseline_score,
            ..CellData::default()
        });
    }
    for r in &mut rows {
        r.r.resize_with(contenders.len(), || None);
    }
    Data {
        contenders,
        metrics,
        datasets,
        variants,
        compared: comparison.is_some_and(|c| c.baseline.is_some()),
        rows,
    }
}

/// Writes the case data of `run`, its cases read from `cases`, as [`script_json`] writes
/// [`data`] of the run held whole, in pieces (each piece to `put`): the lists of the
/// filters, then one row at a time. A row is a case across the contenders, each
/// contender's case read at the case's position in its experiment: the experiments of a
/// dataset hold its cases at the same positions (the runner logs each case at its place
/// in its dataset), which a first pass checks; where they do not (a run put together
/// otherwise), the cases are read into the run and written as [`data`] gives them.
pub(super) fn write_data(
    run: &RunResult,
    cases: CaseSource<'_>,
    comparison: Option<&Comparison>,
    put: &mut dyn FnMut(&str) -> Result<()>,
) -> Result<()> {
    let log = match cases {
        CaseSource::Run(_) => return put(&script_json(&data(run, comparison))),
        CaseSource::Log(log) => log,
    };
    let Some((datasets, variants)) = lists(run, cases, comparison)? else {
        let mut whole = run.clone();
        log.fill(&mut whole)?;
        return put(&script_json(&data(&whole, comparison)));
    };
    let metrics: Vec<String> = crate::report::leaderboard::metrics_in_order(run)
        .iter()
        .map(|m| m.name.clone())
        .collect();
    let labels: Vec<String> = run
        .experiments
        .iter()
        .map(|e| contender_label(&e.contender))
        .collect();
    let removed: Vec<&CaseDelta> = comparison
        .map(|c| c.cases.as_slice())
        .unwrap_or(&[])
        .iter()
        .filter(|d| d.status == crate::results::CaseStatus::Removed)
        .collect();
    let mut contenders: Vec<String> = Vec::new();
    for label in labels
        .iter()
        .cloned()
        .chain(removed.iter().map(|d| contender_label(&d.contender)))
    {
        if !contenders.contains(&label) {
            contenders.push(label);
        }
    }
    let column = |label: &str| contenders.iter().position(|c| c == label).unwrap_or(0);
    let mut deltas: HashMap<(String, &str, &str), &CaseDelta> = HashMap::new();
    for d in comparison.map(|c| c.cases.as_slice()).unwrap_or(&[]) {
        deltas.insert((contender_label(&d.contender), &d.dataset, &d.case), d);
    }
    let frame = script_json(&Data {
        contenders: contenders.clone(),
        metrics: metrics.clone(),
        datasets,
        variants,
        compared: comparison.is_some_and(|c| c.baseline.is_some()),
        rows: vec![],
    });
    let Some(head) = frame.strip_suffix("]}") else {
        return put(&frame);
    };
    put(head)?;
    let mut matched = vec![false; removed.len()];
    let mut first = true;
    let mut row_text = |row: &Row, put: &mut dyn FnMut(&str) -> Result<()>| -> Result<()> {
        let mut text = if first { String::new() } else { ",".into() };
        first = false;
        text.push_str(&script_json(row));
        put(&text)
    };
    let mut readers: Vec<CaseReader<'_>> = (0..run.experiments.len())
        .map(|i| cases.reader(i))
        .collect::<Result<_>>()?;
    for (i, e) in run.experiments.iter().enumerate() {
        let same: Vec<usize> = (0..run.experiments.len())
            .filter(|&k| run.experiments[k].dataset == e.dataset)
            .collect();
        let (earlier, later): (Vec<usize>, Vec<usize>) =
            same.into_iter().filter(|&k| k != i).partition(|&k| k < i);
        'cases: for c in cases.cases(i)? {
            let (p, c) = c?;
            for &k in &earlier {
                if readers[k].at(p)?.is_some() {
                    // Its row was written with the first experiment that ran it.
                    continue 'cases;
                }
            }
            let mut row = Row {
                d: e.dataset.clone(),
                c: c.case.clone(),
                v: c.variant.clone(),
                i: None,
                e: None,
                r: Vec::new(),
            };
            row.r.resize_with(contenders.len(), || None);
            let add = |m: usize, c: &CaseResult, row: &mut Row| {
                if row.i.is_none() {
                    row.i = c.input.as_ref().map(shown);
                }
                if row.e.is_none() {
                    row.e = c.expected.as_ref().map(shown);
                }
                let delta = deltas
                    .get(&(labels[m].clone(), e.dataset.as_str(), c.case.as_str()))
                    .copied();
                row.r[column(&labels[m])] = Some(cell(c, &metrics, delta));
            };
            add(i, &c, &mut row);
            for &m in &later {
                if let Some(other) = readers[m].at(p)? {
                    add(m, &other, &mut row);
                }
            }
            for (k, d) in removed.iter().enumerate() {
                if d.dataset == row.d && d.case == row.c {
                    matched[k] = true;
                    row.r[column(&contender_label(&d.contender))] = Some(removed_cell(d));
                }
            }
            row_text(&row, put)?;
        }
    }
    // Cases the baseline ran and this run did not: a row saying so.
    let mut rest: Vec<Row> = Vec::new();
    for (k, d) in removed.iter().enumerate() {
        if matched[k] {
            continue;
        }
        let at = match rest.iter().position(|r| r.d == d.dataset && r.c == d.case) {
            Some(at) => at,
            None => {
                rest.push(Row {
                    d: d.dataset.clone(),
                    c: d.case.clone(),
                    v: String::new(),
                    i: None,
                    e: None,
                    r: std::iter::repeat_with(|| None)
                        .take(contenders.len())
                        .collect(),
                });
                rest.len() - 1
            }
        };
        rest[at].r[column(&contender_label(&d.contender))] = Some(removed_cell(d));
    }
    for row in &rest {
        row_text(row, put)?;
    }
    put("]}")
}

/// A case the baseline ran and this run did not.
fn removed_cell(d: &CaseDelta) -> CellData {
    CellData {
        o: "removed",
        st: Some(d.status.as_str()),
        g: d.gated,
        b: d.baseline_score,
        ..CellData::default()
    }
}

/// The datasets and variants of the filters, as [`data`] lists them, read from `cases`;
/// `None` when the experiments of a dataset hold different cases at a position (their
/// cases cannot be matched by position).
fn lists(
    run: &RunResult,
    cases: CaseSource<'_>,
    comparison: Option<&Comparison>,
) -> Result<Option<(Vec<String>, Vec<String>)>> {
    let mut datasets: Vec<String> = Vec::new();
    let mut variants: Vec<String> = Vec::new();
    // The variants seen beside the list (a suite may have as many variants as cases).
    let mut seen: HashSet<String> = HashSet::new();
    let mut readers: Vec<CaseReader<'_>> = (0..run.experiments.len())
        .map(|i| cases.reader(i))
        .collect::<Result<_>>()?;
    for (i, e) in run.experiments.iter().enumerate() {
        let earlier: Vec<usize> = (0..i)
            .filter(|&k| run.experiments[k].dataset == e.dataset)
            .collect();
        for c in cases.cases(i)? {
            let (p, c) = c?;
            let mut first = true;
            // Against the first experiment with a case there, as every later one is: so
            // all of them agree.
            for &k in &earlier {
                if let Some(other) = readers[k].at(p)? {
                    if other.case != c.case {
                        return Ok(None);
                    }
                    first = false;
                    break;
                }
            }
            if first {
                if !datasets.contains(&e.dataset) {
                    datasets.push(e.dataset.clone());
                }
                if !c.variant.is_empty() && !seen.contains(&c.variant) {
                    seen.insert(c.variant.clone());
                    variants.push(c.variant.clone());
                }
            }
        }
    }
    for d in comparison.map(|c| c.cases.as_slice()).unwrap_or(&[]) {
        if d.status == crate::results::CaseStatus::Removed && !datasets.contains(&d.dataset) {
            datasets.push(d.dataset.clone());
        }
    }
    Ok(Some((datasets, variants)))
}

/// `value` as JSON text safe inside `<script type="application/json">`: `<`, `>`, `&` and
/// the two JavaScript line separators as `\u` escapes (JSON reads them back as the same
/// characters), so `</script>` or `<!--` in a model's output cannot end the element.
pub(crate) fn script_json<T: Serialize>(value: &T) -> String {
    let text = serde_json::to_string(value).unwrap_or_else(|_| "null".into());
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    for ch in text.chars() {
        match ch {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::testing::{case, experiment, run};

    /// Two contenders on `tax`, against a baseline of one: a row per case across both, the
    /// regressed case marked with its diff, a case only the baseline ran as `removed`, and
    /// input and expected shown as text.
    #[test]
    fn one_row_per_case_one_cell_per_contender_beside_the_baseline() {
        let mut a = case("a", Some(0.4), Some(false));
        a.input = Some(serde_json::json!("Case a."));
        a.expected = Some(serde_json::json!({"answer": "1"}));
        a.failed_thresholds = vec!["accuracy 0.4 < 0.5".into()];
        let mut n = run(
            "n",
            "f",
            "2026-01-02T00:00:00Z",
            vec![a, case("b", Some(1.0), Some(true))],
        );
        let mut other = experiment(vec![case("b", None, None)]);
        other.contender.id = "fake/parrot".into();
        other.cases[0].error = crate::results::testing::error("boom");
        n.experiments.push(other);
        let base = run(
            "b",
            "main",
            "2026-01-01T00:00:00Z",
            vec![
                case("a", Some(1.0), Some(true)),
                case("b", Some(1.0), Some(true)),
                case("c", Some(1.0), Some(true)),
            ],
        );
        let info = crate::results::BaselineInfo {
            id: "b".into(),
            branch: Some("main".into()),
            commit: None,
            started_at: "2026-01-01T00:00:00Z".parse().expect("a time"),
            reference: "main".into(),
        };
        let c = crate::gate::compare(Some((&base, info)), &n, 0.02);
        let d = data(&n, Some(&c));
        assert_eq!(d.contenders, ["fake/echo [temp 0]", "fake/parrot [temp 0]"]);
        assert!(d.compared);
        let keys: Vec<String> = d.rows.iter().map(|r| format!("{}/{}", r.d, r.c)).collect();
        assert_eq!(keys, ["tax/a", "tax/b", "tax/c"]);
        let a = &d.rows[0];
        assert_eq!(a.i.as_deref(), Some("Case a."));
        assert_eq!(a.e.as_deref(), Some("{\n  \"answer\": \"1\"\n}"));
        let cell = a.r[0].as_ref().expect("echo ran a");
        assert_eq!((cell.o, cell.st, cell.g), ("fail", Some("regressed"), true));
        assert_eq!(cell.b, Some(1.0));
        assert!(
            cell.diff
                .as_deref()
                .is_some_and(|d| d.contains("-  \"answer\": \"1\""))
        );
        assert!(a.r[1].is_none(), "parrot did not run a");
        let b = &d.rows[1];
        assert_eq!(
            b.r[1].as_ref().map(|c| (c.o, c.err.as_deref())),
            Some(("error", Some("boom")))
        );
        let removed = d.rows[2].r[0].as_ref().expect("the baseline's c");
        assert_eq!((removed.o, removed.st), ("removed", Some("removed")));
    }

    #[test]
    fn script_json_cannot_end_its_element_and_reads_back_the_same() {
        let v = serde_json::json!({"out": "</script><script>alert(1)</script><!-- & \u{2028}"});
        let text = script_json(&v);
        assert!(!text.contains('<') && !text.contains('>') && !text.contains('&'));
        let back: Value = serde_json::from_str(&text).expect("still JSON");
        assert_eq!(back, v);
    }
}
