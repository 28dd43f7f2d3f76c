//! Leaderboard figures shared by every renderer: per-dataset standings, the overall
//! standings (a contender across datasets), weighted scores and the best value.

use std::collections::BTreeMap;

use super::format::{money, pct};
use crate::results::aggregate;
use crate::results::{ExperimentResult, MetricDef, RunResult};
use crate::score::weighted;

/// The scorer's metrics, primary first: the order of every report's metric columns.
pub fn metrics_in_order(run: &RunResult) -> Vec<&MetricDef> {
    let mut m: Vec<&MetricDef> = run.run.metrics.iter().filter(|m| m.primary).collect();
    m.extend(run.run.metrics.iter().filter(|m| !m.primary));
    m
}

/// Whether the tables show a `truncated` column: when some reply was cut at the token limit.
pub fn shows_truncated(run: &RunResult) -> bool {
    run.experiments.iter().any(|e| e.truncated > 0)
}

/// Whether the tables show a `max` column (the reply's token cap): when the run's
/// contenders were sent different caps, so rows that differ only there are told apart.
pub fn shows_max_tokens(run: &RunResult) -> bool {
    let mut caps = run.experiments.iter().map(|e| e.contender.max_tokens);
    caps.next().is_some_and(|first| caps.any(|c| c != first))
}

/// The settings columns of a standings table, after `#` and model: effort, temp, and max
/// when [`shows_max_tokens`].
pub fn settings_columns(run: &RunResult) -> usize {
    2 + usize::from(shows_max_tokens(run))
}

/// A row's settings cells, as [`settings_columns`] counts them: `default` where the
/// provider's own default was sent.
pub fn settings_cells(run: &RunResult, e: &ExperimentResult) -> Vec<String> {
    let c = &e.contender;
    let mut cells = vec![
        c.effort.clone().unwrap_or_else(|| "default".into()),
        c.temperature.clone().unwrap_or_else(|| "default".into()),
    ];
    if shows_max_tokens(run) {
        cells.push(
            c.max_tokens
                .map_or_else(|| "default".into(), |m| m.to_string()),
        );
    }
    cells
}

/// The columns of a standings table: `#`, model, effort, temp, max (when
/// [`shows_max_tokens`]), wscore (when weighted), one per metric, then errors, truncated
/// (when [`shows_truncated`]), cost, time, latency, p95, tok_in, tok_out.
pub fn header(run: &RunResult) -> Vec<String> {
    let mut header = vec![
        "#".to_string(),
        "model".into(),
        "effort".into(),
        "temp".into(),
    ];
    if shows_max_tokens(run) {
        header.push("max".into());
    }
    if !run.run.weights.is_empty() {
        header.push("wscore".into());
    }
    header.extend(metrics_in_order(run).iter().map(|m| m.name.clone()));
    if repeated(run) {
        header.extend(REPEAT_COLUMNS.map(String::from));
    }
    header.push("errors".into());
    if shows_truncated(run) {
        header.push("truncated".into());
    }
    header.extend(["cost", "time", "latency", "p95", "tok_in", "tok_out"].map(String::from));
    if shows_judge_cost(run) {
        header.push("judge_cost".into());
    }
    header
}

/// Whether the tables end with a `judge_cost` column: when a judge scorer's calls reported a
/// cost (kept apart from the contenders' `cost`).
pub fn shows_judge_cost(run: &RunResult) -> bool {
    run.experiments.iter().any(|e| e.judge_cost_usd.is_some())
}

/// The columns a run with `--repeat K` (K > 1) adds after the metrics: the mean score's
/// 95% interval, the share of cases passing every try, and the flaky cases.
pub const REPEAT_COLUMNS: [&str; 3] = ["±", "pass^k", "flaky"];

/// Whether some experiment ran its cases more than once: the tables then have
/// [`REPEAT_COLUMNS`] (a run of one try each shows exactly what it always did).
pub fn repeated(run: &RunResult) -> bool {
    run.experiments.iter().any(|e| e.repeat.is_some())
}

/// An experiment's [`REPEAT_COLUMNS`]: `±4.1` (points), `pass^k` as a percentage (`pass^3
/// 66.7%` is written `66.7%` under its header), the flaky count; `-` where unknown.
pub fn repeat_cells(e: &ExperimentResult) -> [String; 3] {
    match &e.repeat {
        None => ["-".into(), "-".into(), "-".into()],
        Some(r) => [
            r.ci95
                .map(|h| format!("±{:.1}", h * 100.0))
                .unwrap_or_else(|| "-".into()),
            pct(Some(r.pass_hat_k)),
            r.flaky.to_string(),
        ],
    }
}

/// A table of experiments ranked best first.
pub struct Standings {
    /// `None` for the overall table.
    pub dataset: Option<String>,
    pub rows: Vec<ExperimentResult>,
    /// The best value: the cheapest error-free experiment within two points of the top score.
    pub best_value: Pick,
    /// The best weighted score: the highest `wscore` without errors (weighted suites only).
    pub best_weighted: Pick,
    /// Weights left out of this table's `wscore`, no row having their value (`cost` when no
    /// contender's cost is known).
    pub unweighed: Vec<String>,
}

/// A table's verdict on one question ("best value", "best weighted"): the row named, and the
/// table's top when it had errors, so a report never names a row beside a better one
/// without a word. Indexes are into [`Standings::rows`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pick {
    /// The row named best; never one with errors.
    pub row: Option<usize>,
    /// The table's top (errors included) when it had errors and so could not be named.
    pub top_with_errors: Option<usize>,
    /// The highest error-free row, when none qualified as `row`.
    pub best_error_free: Option<usize>,
}

/// How a [`Pick`] chooses among error-free rows.
#[derive(Debug, Clone, Copy)]
enum Rule {
    /// The cheapest within this much of the table's top value.
    CheapestWithin(f64),
    /// The highest.
    Highest,
}

/// How far under the table's top score the best value may be: two points.
const BEST_VALUE_WITHIN: f64 = 0.02;

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

/// With one dataset the overall standings would repeat its table row for row: reports print
/// this line where the overall table goes instead.
pub fn overall_note(tables: &[Standings]) -> Option<String> {
    match tables {
        [only] => only
            .dataset
            .as_ref()
            .map(|d| format!("overall: the same as the table of dataset {d} (the only dataset)")),
        _ => None,
    }
}

fn rank(
    dataset: Option<String>,
    mut rows: Vec<ExperimentResult>,
    weights: &[(String, f64)],
) -> Standings {
    let unweighed = if weights.is_empty() {
        vec![]
    } else {
        weighted::apply(&mut rows, weights)
    };
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
        Pick::default()
    } else {
        pick(&rows, |e| e.wscore, Rule::Highest)
    };
    Standings {
        dataset,
        rows,
        best_value,
        best_weighted,
        unweighed,
    }
}

/// One table per case variant (`complete`, `vague`, ...), each contender's cases of that
/// variant taken together across datasets (`--totals variant`), the cases read from
/// `cases` (a variant's cases at a time, as its figures are aggregated from them).
pub fn variant_standings(
    run: &RunResult,
    cases: crate::results::CaseSource<'_>,
) -> crate::error::Result<Vec<Standings>> {
    let primary = run
        .primary_metric()
        .map(|m| m.name.clone())
        .unwrap_or_default();
    // A run whose settings do not say (0) ran one case at a time.
    let workers = run.run.settings.parallelism.max(1);
    let mut variants: std::collections::BTreeSet<String> = Default::default();
    super::each_case(run, cases, |_, c| {
        if !variants.contains(&c.variant) {
            variants.insert(c.variant.clone());
        }
        Ok(())
    })?;
    variants
        .into_iter()
        .map(|v| {
            let mut groups: Vec<(
                crate::results::ContenderInfo,
                Vec<crate::results::CaseResult>,
            )> = Vec::new();
            for (i, e) in run.experiments.iter().enumerate() {
                let mut of_v = Vec::new();
                for c in cases.cases(i)? {
                    let (_, c) = c?;
                    if c.variant == v {
                        of_v.push(c.into_owned());
                    }
                }
                match groups.iter_mut().find(|(k, _)| *k == e.contender) {
                    Some((_, list)) => list.extend(of_v),
                    None => groups.push((e.contender.clone(), of_v)),
                }
            }
            let rows = groups
                .into_iter()
                .filter(|(_, cases)| !cases.is_empty())
                .map(|(contender, cases)| {
                    aggregate::aggregate(
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
            Ok(s)
        })
        .collect()
}

/// The best value: the cheapest error-free experiment within two points of the table's top
/// score, the top itself included whether or not it had errors.
pub fn best_value(rows: &[ExperimentResult]) -> Pick {
    pick(rows, |e| e.score, Rule::CheapestWithin(BEST_VALUE_WITHIN))
}

/// The one place a table names its best: `value` read from each row, the top taken over
/// every row (ties go to the one with fewer errors, then the first), the pick among the
/// error-free rows only.
fn pick(
    rows: &[ExperimentResult],
    value: impl Fn(&ExperimentResult) -> Option<f64>,
    rule: Rule,
) -> Pick {
    let highest = |error_free: bool| {
        rows.iter()
            .enumerate()
            .filter(|(_, e)| !error_free || e.errors == 0)
            .filter_map(|(i, e)| value(e).filter(|v| v.is_finite()).map(|v| (i, v, e.errors)))
            .fold(None, |acc: Option<(usize, f64, usize)>, x| match acc {
                Some(a) if a.1 > x.1 || (a.1 == x.1 && a.2 <= x.2) => Some(a),
                _ => Some(x),
            })
    };
    let Some((top, top_value, top_errors)) = highest(false) else {
        return Pick::default();
    };
    let row = match rule {
        Rule::Highest => highest(true).map(|(i, _, _)| i),
        Rule::CheapestWithin(within) => rows
            .iter()
            .enumerate()
            .filter(|(_, e)| {
                e.errors == 0 && value(e).is_some_and(|v| v >= top_value - within - 1e-12)
            })
            .min_by(|(_, a), (_, b)| {
                a.cost_usd
                    .unwrap_or(f64::INFINITY)
                    .total_cmp(&b.cost_usd.unwrap_or(f64::INFINITY))
                    .then(value(b).unwrap_or(0.0).total_cmp(&value(a).unwrap_or(0.0)))
            })
            .map(|(i, _)| i),
    };
    Pick {
        row,
        top_with_errors: (top_errors > 0).then_some(top),
        best_error_free: if row.is_none() {
            highest(true).map(|(i, _, _)| i)
        } else {
            None
        },
    }
}

/// `the top, x at 100.0%, had 1 error`: what a report adds when the top could not be named.
fn top_note(
    s: &Standings,
    p: &Pick,
    label: &dyn Fn(&ExperimentResult) -> String,
    value: &dyn Fn(&ExperimentResult) -> String,
) -> Option<String> {
    p.top_with_errors.map(|i| {
        let e = &s.rows[i];
        format!(
            "the top, {} at {}, had {}",
            label(e),
            value(e),
            crate::text::plural(e.errors, "error", "errors")
        )
    })
}

/// The best-value line under a table, the same in every report; `label` names a row.
pub fn best_value_text(s: &Standings, label: &dyn Fn(&ExperimentResult) -> String) -> String {
    let at = |e: &ExperimentResult| format!("{} at {}", pct(e.score), money(e.cost_usd));
    let top = top_note(s, &s.best_value, label, &|e| pct(e.score));
    match (s.best_value.row, top, s.best_value.best_error_free) {
        (Some(i), None, _) => format!("best value: {} — {}", label(&s.rows[i]), at(&s.rows[i])),
        (Some(i), Some(top), _) => {
            format!(
                "best value: {} — {}; {top}",
                label(&s.rows[i]),
                at(&s.rows[i])
            )
        }
        (None, Some(top), Some(j)) => format!(
            "best value: none within two points of the top: {top}; best error-free: {} — {}",
            label(&s.rows[j]),
            at(&s.rows[j])
        ),
        (None, _, _) => "best value: none (every experiment had errors)".into(),
    }
}

/// A line under a table for each row whose provider billed other than its cost (OpenRouter
/// with your own key, BYOK: it bills its fee, the upstream charges the inference), so the
/// cost column is never read as the bill.
pub fn billed_notes(s: &Standings, label: &dyn Fn(&ExperimentResult) -> String) -> Vec<String> {
    s.rows
        .iter()
        .filter_map(|e| {
            let billed = e.billed_usd?;
            Some(format!(
                "cost of {}: {} is the inference's (the upstream's, with your own key); the provider billed {}",
                label(e),
                money(e.cost_usd),
                money(Some(billed))
            ))
        })
        .collect()
}

/// The best-weighted line under a table of a weighted suite.
pub fn best_weighted_text(s: &Standings, label: &dyn Fn(&ExperimentResult) -> String) -> String {
    let top = top_note(s, &s.best_weighted, label, &|e| {
        format!("wscore {}", pct(e.wscore))
    });
    let line = match (s.best_weighted.row, top) {
        (Some(i), None) => format!(
            "best weighted: {} — wscore {}",
            label(&s.rows[i]),
            pct(s.rows[i].wscore)
        ),
        (Some(i), Some(top)) => format!(
            "best weighted: {} — wscore {}; {top}",
            label(&s.rows[i]),
            pct(s.rows[i].wscore)
        ),
        (None, _) if s.rows.iter().all(|e| e.errors == 0) => {
            "best weighted: none (no experiment has every weighted value)".into()
        }
        (None, _) => "best weighted: none (an experiment with errors cannot be best)".into(),
    };
    match s.unweighed.as_slice() {
        [] => line,
        names => format!(
            "{line} ({} unknown for every contender: left out of wscore)",
            names.join(", ")
        ),
    }
}

/// One row per contender over every dataset (the rule is [`aggregate::overall`]'s).
pub fn overall_rows(experiments: &[ExperimentResult]) -> Vec<ExperimentResult> {
    aggregate::overall(experiments)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::testing::experiment as stored;

    fn row(id: &str, score: f64, errors: usize, cost: f64) -> ExperimentResult {
        let mut e = stored(vec![]);
        e.contender.id = id.into();
        e.score = Some(score);
        e.wscore = Some(score);
        e.errors = errors;
        e.cost_usd = Some(cost);
        e
    }

    fn standings(rows: Vec<ExperimentResult>) -> Standings {
        Standings {
            dataset: Some("d".into()),
            best_value: best_value(&rows),
            best_weighted: pick(&rows, |e| e.wscore, Rule::Highest),
            rows,
            unweighed: vec![],
        }
    }

    fn name(e: &ExperimentResult) -> String {
        e.contender.id.clone()
    }

    #[test]
    fn best_value_is_the_cheapest_within_two_points_of_the_top() {
        let s = standings(vec![
            row("top", 1.0, 0, 0.5),
            row("close", 0.98, 0, 0.1),
            row("cheap", 0.5, 0, 0.0),
        ]);
        assert_eq!(s.best_value.row, Some(1));
        assert_eq!(s.best_value.top_with_errors, None);
        assert_eq!(
            best_value_text(&s, &name),
            "best value: close — 98.0% at $0.1000"
        );
    }

    #[test]
    fn a_top_with_errors_is_named_and_bounds_the_best_value() {
        let s = standings(vec![row("flaky", 1.0, 2, 0.5), row("weak", 0.2, 0, 0.0)]);
        assert_eq!(
            s.best_value.row, None,
            "20% is not within two points of 100%"
        );
        assert_eq!(
            best_value_text(&s, &name),
            "best value: none within two points of the top: the top, flaky at 100.0%, had 2 errors; best error-free: weak — 20.0% at $0"
        );
        assert_eq!(
            best_weighted_text(&s, &name),
            "best weighted: weak — wscore 20.0%; the top, flaky at wscore 100.0%, had 2 errors"
        );
        // A tie with the top goes to the row without errors: nothing to add.
        let s = standings(vec![row("flaky", 1.0, 1, 0.5), row("steady", 1.0, 0, 0.6)]);
        assert_eq!(
            best_value_text(&s, &name),
            "best value: steady — 100.0% at $0.6000"
        );
        let s = standings(vec![row("flaky", 1.0, 1, 0.5), row("broken", 0.9, 3, 0.6)]);
        assert_eq!(
            best_value_text(&s, &name),
            "best value: none (every experiment had errors)"
        );
    }

    #[test]
    fn an_experiment_with_errors_cannot_be_best_weighted() {
        let mut rows = vec![
            row("flaky", 0.99, 1, 0.0),
            row("steady", 0.7, 0, 0.0),
            row("better", 0.8, 0, 0.0),
        ];
        assert_eq!(pick(&rows, |e| e.wscore, Rule::Highest).row, Some(2));
        rows[2].wscore = None;
        assert_eq!(pick(&rows, |e| e.wscore, Rule::Highest).row, Some(1));
        rows[1].errors = 1;
        let p = pick(&rows, |e| e.wscore, Rule::Highest);
        assert_eq!((p.row, p.top_with_errors), (None, Some(0)));
    }
}
