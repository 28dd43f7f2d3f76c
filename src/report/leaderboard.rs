//! Leaderboard figures shared by every renderer: per-dataset standings, the overall
//! standings (a contender across datasets), weighted scores and the best value.

use std::collections::BTreeMap;

use crate::results::{ExperimentResult, Latency, MetricDef, RunResult};
use crate::score::weighted;

/// The scorer's metrics, primary first: the order of every report's metric columns.
pub fn metrics_in_order(run: &RunResult) -> Vec<&MetricDef> {
    let mut m: Vec<&MetricDef> = run.run.metrics.iter().filter(|m| m.primary).collect();
    m.extend(run.run.metrics.iter().filter(|m| !m.primary));
    m
}

/// The columns of a standings table: `#`, model, effort, temp, wscore (when weighted), one
/// per metric, then errors, cost, time, latency, p95, tok_in, tok_out.
pub fn header(run: &RunResult) -> Vec<String> {
    let mut header = vec![
        "#".to_string(),
        "model".into(),
        "effort".into(),
        "temp".into(),
    ];
    if !run.run.weights.is_empty() {
        header.push("wscore".into());
    }
    header.extend(metrics_in_order(run).iter().map(|m| m.name.clone()));
    header.extend(
        [
            "errors", "cost", "time", "latency", "p95", "tok_in", "tok_out",
        ]
        .map(String::from),
    );
    header
}

/// A table of experiments ranked best first.
pub struct Standings {
    /// `None` for the overall table.
    pub dataset: Option<String>,
    pub rows: Vec<ExperimentResult>,
    /// Index into `rows` of the best value (cheapest error-free within two points of the top).
    pub best_value: Option<usize>,
    /// Index into `rows` of the best weighted score.
    pub best_weighted: Option<usize>,
}

/// Per-dataset standings, then the overall one (only when there is more than one dataset).
pub fn standings(run: &RunResult) -> (Vec<Standings>, Option<Standings>) {
    let mut by_dataset: BTreeMap<String, Vec<ExperimentResult>> = BTreeMap::new();
    for e in &run.experiments {
        by_dataset
            .entry(e.dataset.clone())
            .or_default()
            .push(e.clone());
    }
    let tables = by_dataset
        .into_iter()
        .map(|(d, rows)| rank(Some(d), rows, &run.run.weights))
        .collect::<Vec<_>>();
    let overall =
        (tables.len() > 1).then(|| rank(None, overall_rows(&run.experiments), &run.run.weights));
    (tables, overall)
}

fn rank(
    dataset: Option<String>,
    mut rows: Vec<ExperimentResult>,
    weights: &[(String, f64)],
) -> Standings {
    if !weights.is_empty() {
        weighted::apply(&mut rows, weights);
    }
    let key = |e: &ExperimentResult| {
        if weights.is_empty() {
            e.score
        } else {
            e.wscore
        }
    };
    rows.sort_by(|a, b| {
        key(b)
            .unwrap_or(f64::NEG_INFINITY)
            .total_cmp(&key(a).unwrap_or(f64::NEG_INFINITY))
            .then(a.errors.cmp(&b.errors))
            .then(a.contender.cmp(&b.contender))
    });
    let best_value = best_value(&rows);
    let best_weighted = if weights.is_empty() {
        None
    } else {
        weighted::best(&rows)
    };
    Standings {
        dataset,
        rows,
        best_value,
        best_weighted,
    }
}

/// One table per case variant (`complete`, `vague`, ...), each contender's cases of that
/// variant taken together across datasets (`--totals variant`).
pub fn variant_standings(run: &RunResult) -> Vec<Standings> {
    let primary = run
        .primary_metric()
        .map(|m| m.name.clone())
        .unwrap_or_default();
    let workers = run
        .run
        .settings
        .get("parallelism")
        .and_then(|p| p.as_u64())
        .unwrap_or(1) as usize;
    let mut variants: Vec<String> = run
        .experiments
        .iter()
        .flat_map(|e| e.cases.iter().map(|c| c.variant.clone()))
        .collect();
    variants.sort();
    variants.dedup();
    variants
        .into_iter()
        .map(|v| {
            let mut groups: Vec<(
                crate::results::ContenderInfo,
                Vec<crate::results::CaseResult>,
            )> = Vec::new();
            for e in &run.experiments {
                let cases = e.cases.iter().filter(|c| c.variant == v).cloned();
                match groups.iter_mut().find(|(k, _)| *k == e.contender) {
                    Some((_, list)) => list.extend(cases),
                    None => groups.push((e.contender.clone(), cases.collect())),
                }
            }
            let rows = groups
                .into_iter()
                .filter(|(_, cases)| !cases.is_empty())
                .map(|(contender, cases)| {
                    crate::runner::aggregate(
                        contender,
                        format!("variant {v}"),
                        &primary,
                        cases,
                        workers,
                    )
                })
                .collect();
            let mut s = rank(Some(v.clone()), rows, &run.run.weights);
            s.dataset = Some(format!("variant {v}"));
            s
        })
        .collect()
}

/// The cheapest error-free experiment within two points of the top score.
pub fn best_value(rows: &[ExperimentResult]) -> Option<usize> {
    let top = rows
        .iter()
        .filter(|e| e.errors == 0)
        .filter_map(|e| e.score)
        .fold(f64::NEG_INFINITY, f64::max);
    if !top.is_finite() {
        return None;
    }
    rows.iter()
        .enumerate()
        .filter(|(_, e)| e.errors == 0 && e.score.is_some_and(|s| s >= top - 0.02 - 1e-12))
        .min_by(|(_, a), (_, b)| {
            a.cost_usd
                .unwrap_or(f64::INFINITY)
                .total_cmp(&b.cost_usd.unwrap_or(f64::INFINITY))
                .then(b.score.unwrap_or(0.0).total_cmp(&a.score.unwrap_or(0.0)))
        })
        .map(|(i, _)| i)
}

/// One row per contender over every dataset: means weighted by scored cases, sums of errors,
/// cost, time and tokens; p95 is the mean of the datasets' p95 (an approximation to rank by).
pub fn overall_rows(experiments: &[ExperimentResult]) -> Vec<ExperimentResult> {
    let mut groups: Vec<(String, Vec<&ExperimentResult>)> = Vec::new();
    for e in experiments {
        let k = e.contender.key();
        match groups.iter_mut().find(|(key, _)| *key == k) {
            Some((_, v)) => v.push(e),
            None => groups.push((k, vec![e])),
        }
    }
    groups
        .into_iter()
        .map(|(_, es)| {
            let first = es[0];
            let scored = |e: &ExperimentResult| (e.cases_total - e.errors) as f64;
            let mut means: BTreeMap<String, Option<f64>> = BTreeMap::new();
            let names: std::collections::BTreeSet<&String> =
                es.iter().flat_map(|e| e.means.keys()).collect();
            for n in names {
                let (s, w) = es
                    .iter()
                    .filter_map(|e| {
                        e.means
                            .get(n)
                            .copied()
                            .flatten()
                            .map(|v| (v * scored(e), scored(e)))
                    })
                    .fold((0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
                means.insert(n.clone(), (w > 0.0).then(|| s / w));
            }
            let (s, w) = es
                .iter()
                .filter_map(|e| e.score.map(|v| (v * scored(e), scored(e))))
                .fold((0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
            let opt_sum = |f: fn(&ExperimentResult) -> Option<f64>| -> Option<f64> {
                es.iter().map(|e| f(e)).sum::<Option<f64>>()
            };
            let tok_sum = |f: fn(&ExperimentResult) -> Option<u64>| -> Option<u64> {
                let v: Vec<u64> = es.iter().filter_map(|e| f(e)).collect();
                (!v.is_empty()).then(|| v.iter().sum())
            };
            let lat_n: f64 = es
                .iter()
                .filter(|e| e.latency.mean_s.is_some())
                .map(|e| scored(e))
                .sum();
            let mean_s = (lat_n > 0.0).then(|| {
                es.iter()
                    .filter_map(|e| e.latency.mean_s.map(|m| m * scored(e)))
                    .sum::<f64>()
                    / lat_n
            });
            let p95s: Vec<f64> = es.iter().filter_map(|e| e.latency.p95_s).collect();
            ExperimentResult {
                contender: first.contender.clone(),
                dataset: "(all)".into(),
                means,
                score: (w > 0.0).then(|| s / w),
                cases_total: es.iter().map(|e| e.cases_total).sum(),
                errors: es.iter().map(|e| e.errors).sum(),
                failed: es.iter().map(|e| e.failed).sum(),
                cost_usd: opt_sum(|e| e.cost_usd),
                tokens_in: tok_sum(|e| e.tokens_in),
                tokens_out: tok_sum(|e| e.tokens_out),
                latency: Latency {
                    mean_s,
                    p95_s: (!p95s.is_empty()).then(|| p95s.iter().sum::<f64>() / p95s.len() as f64),
                },
                time_s: es.iter().map(|e| e.time_s).sum(),
                wscore: None,
                cases: vec![],
            }
        })
        .collect()
}
