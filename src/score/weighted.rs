//! The weighted score (`wscore`): one column that folds accuracy, errors, cost and speed
//! into the number a user ranks by, with weights the suite writes down.
//!
//! `wscore = Σ|w|·goodness / Σ|w|`, from 0 to 1, higher is better. A negative weight means
//! lower is better: a metric's goodness is its value (clamped to 0..1), or 1 - value under a
//! negative weight. `cost`, `time`, `latency` and `p95` are not fractions, so they go on a
//! log scale between the lowest and highest value in the table (each doubling costs the
//! same, however absurd the priciest contender); a value of 0 is floored at 1e-9 for the
//! logarithm, which makes it the table's minimum. Because of that scale a weighted score is
//! comparable only within one table: call [`apply`] once per table.
//!
//! `errors` is special: an error-free experiment earns the errors weight in full, any error
//! earns none of it, and after the mean `15 + 5·n` points come off for `n ≥ 1` errors (20
//! for one, 25 for two), down to 0. An experiment missing any other weighted value (an
//! unknown cost, no latency) gets no weighted score at all rather than a flattering one.

use crate::results::{ExperimentResult, MetricDef};
use crate::suggest::did_you_mean;

/// Names any suite may weight, besides its scorer's metrics.
pub const WEIGHTABLE_BUILTINS: &[&str] = &["score", "errors", "time", "cost", "latency", "p95"];

/// τ-bench's reliability (`--repeat K`: the share of cases passing every try; with one try
/// each, the share passing), weightable too; kept out of [`WEIGHTABLE_BUILTINS`] so the
/// lists the messages give stay as they were.
pub const PASS_HAT_K: &str = "pass^k";

/// Columns that are refused by name: tokens say nothing about quality; weight `cost` instead.
const TOKEN_COLUMNS: &[&str] = &[
    "tok_in",
    "tok_out",
    "tokens",
    "tokens_in",
    "tokens_out",
    "input_tokens",
    "output_tokens",
];

/// Columns measured in dollars or seconds, scored on a log scale across the table.
const LOG_SCALED: &[&str] = &["cost", "time", "latency", "p95"];

/// The floor for a zero cost or time before taking its logarithm.
const LOG_FLOOR: f64 = 1e-9;

/// One weight's direction and real share of the weighted score, for `evals weights`.
#[derive(Debug, Clone, PartialEq)]
pub struct Share {
    /// The column weighed (`exact`, `cost`).
    pub name: String,
    /// Its weight as the config gives it.
    pub weight: f64,
    /// Whether a lower value is better (a negative weight, and always `errors`).
    pub lower_is_better: bool,
    /// `|w| / Σ|w| × 100`.
    pub percent: f64,
}

/// Checks a suite's weights before any model is called: every name is a built-in or a
/// metric of the scorer, tokens are refused, and each weight is a finite non-zero number
/// given once.
pub fn validate_weights(weights: &[(String, f64)], metrics: &[MetricDef]) -> Result<(), String> {
    let metric_names: Vec<&str> = metrics.iter().map(|m| m.name.as_str()).collect();
    let mut known: Vec<&str> = WEIGHTABLE_BUILTINS.to_vec();
    known.extend(
        metric_names
            .iter()
            .copied()
            .filter(|m| !WEIGHTABLE_BUILTINS.contains(m)),
    );
    if weights.is_empty() {
        return Err(format!(
            "`weighted_score.weights` is empty; weight at least one of {}",
            known.join(", ")
        ));
    }
    for (i, (name, weight)) in weights.iter().enumerate() {
        if TOKEN_COLUMNS.contains(&name.as_str()) {
            return Err(format!(
                "{name} cannot be weighted: tokens are not a measure of quality; weight `cost` instead"
            ));
        }
        if !known.contains(&name.as_str()) && name != PASS_HAT_K {
            let hint = match did_you_mean(name, &known) {
                Some(s) => format!(" (did you mean `{s}`?)"),
                None => String::new(),
            };
            return Err(format!(
                "`{name}` cannot be weighted{hint}: it is neither a built-in nor a metric of the \
                 scorer; weightable: {}",
                known.join(", ")
            ));
        }
        if !weight.is_finite() || *weight == 0.0 {
            return Err(format!(
                "the weight of `{name}` is {weight}; give it a non-zero number or remove it"
            ));
        }
        if weights[..i].iter().any(|(other, _)| other == name) {
            return Err(format!("`{name}` is weighted twice; keep one weight"));
        }
    }
    Ok(())
}

/// Each weight's direction and share, in the order given. `errors` is always lower-is-better,
/// whatever the sign of its weight.
pub fn shares(weights: &[(String, f64)]) -> Vec<Share> {
    let total: f64 = weights.iter().map(|(_, w)| w.abs()).sum();
    weights
        .iter()
        .map(|(name, w)| Share {
            name: name.clone(),
            weight: *w,
            lower_is_better: *w < 0.0 || name == "errors",
            percent: if total > 0.0 {
                w.abs() / total * 100.0
            } else {
                0.0
            },
        })
        .collect()
}

/// Sets `wscore` on every experiment of one table (the log scales span this slice). A
/// weight whose value no experiment of the table has (`cost` in a suite whose providers
/// report none and that has no `pricing:`) is left out of every row's score alike, rather
/// than leaving every row unscored; its names are returned, for the reports to say so.
pub fn apply(experiments: &mut [ExperimentResult], weights: &[(String, f64)]) -> Vec<String> {
    let unknown: Vec<String> = weights
        .iter()
        .map(|(n, _)| n)
        .filter(|n| *n != "errors")
        .filter(|n| !experiments.is_empty() && experiments.iter().all(|e| raw(e, n).is_none()))
        .cloned()
        .collect();
    let kept: Vec<(String, f64)> = weights
        .iter()
        .filter(|(n, _)| !unknown.contains(n))
        .cloned()
        .collect();
    let weights = kept.as_slice();
    // The lowest and highest log value of each log-scaled column in the table.
    let ranges: Vec<(&str, Option<(f64, f64)>)> = LOG_SCALED
        .iter()
        .map(|&name| {
            let logs = experiments
                .iter()
                .filter_map(|e| raw(e, name))
                .map(|v| v.max(LOG_FLOOR).ln());
            let range = logs.fold(None, |acc: Option<(f64, f64)>, l| match acc {
                None => Some((l, l)),
                Some((lo, hi)) => Some((lo.min(l), hi.max(l))),
            });
            (name, range)
        })
        .collect();
    for e in experiments.iter_mut() {
        e.wscore = wscore(e, weights, &ranges);
    }
    unknown
}

/// The value a weight reads from an experiment; `None` when unknown.
fn raw(e: &ExperimentResult, name: &str) -> Option<f64> {
    match name {
        "score" => e.score,
        "errors" => Some(e.errors as f64),
        "time" => Some(e.time_s),
        "cost" => e.cost_usd,
        "latency" => e.latency.mean_s,
        "p95" => e.latency.p95_s,
        PASS_HAT_K => e.repeat.as_ref().map(|r| r.pass_hat_k).or_else(|| {
            (e.cases_total > 0).then(|| {
                (e.cases_total - e.errors - e.failed.min(e.cases_total - e.errors)) as f64
                    / e.cases_total as f64
            })
        }),
        metric => e.means.get(metric).copied().flatten(),
    }
    .filter(|v| v.is_finite())
}

fn wscore(
    e: &ExperimentResult,
    weights: &[(String, f64)],
    ranges: &[(&str, Option<(f64, f64)>)],
) -> Option<f64> {
    let mut sum = 0.0;
    let mut total = 0.0;
    for (name, w) in weights {
        let goodness = if name == "errors" {
            if e.errors == 0 { 1.0 } else { 0.0 }
        } else {
            let v = raw(e, name)?;
            let level = match ranges.iter().find(|(n, _)| n == name) {
                // Where the value sits between the table's lowest (0) and highest (1).
                Some((_, Some((lo, hi)))) if hi > lo => (v.max(LOG_FLOOR).ln() - lo) / (hi - lo),
                Some(_) => 0.0,
                None => v.clamp(0.0, 1.0),
            };
            if *w < 0.0 { 1.0 - level } else { level }
        };
        sum += w.abs() * goodness;
        total += w.abs();
    }
    if total <= 0.0 {
        return None;
    }
    let mut score = sum / total;
    if e.errors > 0 && weights.iter().any(|(n, _)| n == "errors") {
        score -= (15.0 + 5.0 * e.errors as f64) / 100.0;
    }
    Some(score.max(0.0))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::results::{ContenderInfo, Latency};

    fn weights(pairs: &[(&str, f64)]) -> Vec<(String, f64)> {
        pairs.iter().map(|(n, w)| (n.to_string(), *w)).collect()
    }

    fn experiment(id: &str) -> ExperimentResult {
        ExperimentResult {
            contender: ContenderInfo {
                id: id.into(),
                provider: "fake".into(),
                model: id.into(),
                effort: None,
                temperature: None,
                max_tokens: None,
            },
            dataset: "tax".into(),
            means: BTreeMap::new(),
            score: Some(1.0),
            cases_total: 4,
            errors: 0,
            failed: 0,
            truncated: 0,
            cost_usd: Some(0.01),
            billed_usd: None,
            tokens_in: None,
            tokens_out: None,
            latency: Latency {
                mean_s: Some(1.0),
                p95_s: Some(2.0),
            },
            time_s: 10.0,
            wscore: None,
            repeat: None,
            cases: vec![],
            judge_cost_usd: None,
        }
    }

    fn metric(name: &str) -> MetricDef {
        MetricDef {
            name: name.into(),
            description: String::new(),
            primary: false,
            higher_is_better: true,
        }
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-9)
    }

    fn seed_weights() -> Vec<(String, f64)> {
        weights(&[
            ("exact", 10.0),
            ("score", 5.0),
            ("latency", -5.0),
            ("cost", -5.0),
            ("time", -3.0),
            ("errors", -8.0),
            ("hallucinated_rate", -6.0),
            ("invalid_rate", -8.0),
        ])
    }

    #[test]
    fn the_blogs_weights_have_the_blogs_shares() {
        let shares = shares(&seed_weights());
        let pct = |name: &str| {
            shares
                .iter()
                .find(|s| s.name == name)
                .map(|s| s.percent)
                .unwrap_or(-1.0)
        };
        assert!((pct("exact") - 20.0).abs() < 1e-9);
        assert!((pct("errors") + pct("invalid_rate") - 32.0).abs() < 1e-9);
        assert!((pct("hallucinated_rate") - 12.0).abs() < 1e-9);
        assert!((pct("cost") - 10.0).abs() < 1e-9);
        assert!((pct("latency") - 10.0).abs() < 1e-9);
        assert!((pct("time") - 6.0).abs() < 1e-9);
        assert!((shares.iter().map(|s| s.percent).sum::<f64>() - 100.0).abs() < 1e-9);
        let lower: Vec<&str> = shares
            .iter()
            .filter(|s| s.lower_is_better)
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(
            lower,
            vec![
                "latency",
                "cost",
                "time",
                "errors",
                "hallucinated_rate",
                "invalid_rate"
            ]
        );
    }

    #[test]
    fn each_doubling_of_cost_costs_the_same() {
        let mut table: Vec<ExperimentResult> = [0.001, 0.002, 0.004, 0.008]
            .iter()
            .map(|c| ExperimentResult {
                cost_usd: Some(*c),
                ..experiment("m")
            })
            .collect();
        apply(&mut table, &weights(&[("cost", -1.0)]));
        let w: Vec<f64> = table.iter().map(|e| e.wscore.unwrap_or(-1.0)).collect();
        for (got, want) in w.iter().zip([1.0, 2.0 / 3.0, 1.0 / 3.0, 0.0]) {
            assert!((got - want).abs() < 1e-9, "{w:?}");
        }
    }

    #[test]
    fn a_positive_weight_on_a_log_column_uses_it_as_is() {
        let mut table = vec![
            ExperimentResult {
                time_s: 1.0,
                ..experiment("a")
            },
            ExperimentResult {
                time_s: 100.0,
                ..experiment("b")
            },
        ];
        apply(&mut table, &weights(&[("time", 1.0)]));
        assert!(close(table[0].wscore, 0.0));
        assert!(close(table[1].wscore, 1.0));
    }

    #[test]
    fn a_free_contender_is_the_cheapest() {
        let mut table = vec![
            ExperimentResult {
                cost_usd: Some(0.0),
                ..experiment("local")
            },
            ExperimentResult {
                cost_usd: Some(0.5),
                ..experiment("pricey")
            },
        ];
        apply(&mut table, &weights(&[("cost", -1.0)]));
        assert!(close(table[0].wscore, 1.0));
        assert!(close(table[1].wscore, 0.0));
    }

    #[test]
    fn metrics_count_as_they_are_or_inverted_under_a_negative_weight() {
        let mut e = experiment("m");
        e.score = Some(0.8);
        e.means.insert("hallucinated_rate".into(), Some(0.25));
        let mut table = vec![e];
        apply(
            &mut table,
            &weights(&[("score", 3.0), ("hallucinated_rate", -1.0)]),
        );
        // (3 × 0.8 + 1 × 0.75) / 4
        assert!(close(table[0].wscore, 0.7875));
    }

    #[test]
    fn one_error_takes_twenty_points_off() {
        let w = weights(&[("score", 1.0), ("errors", -1.0)]);
        let run = |errors: usize, score: f64| {
            let mut table = vec![ExperimentResult {
                errors,
                score: Some(score),
                ..experiment("m")
            }];
            apply(&mut table, &w);
            table[0].wscore
        };
        // No errors: the errors weight is earned in full.
        assert!(close(run(0, 0.9), 0.95));
        // One error: the weight is not earned, and 20 points come off the mean.
        assert!(close(run(1, 0.9), 0.45 - 0.20));
        assert!(close(run(2, 0.9), 0.45 - 0.25));
        assert!(close(run(3, 0.9), 0.45 - 0.30));
        assert!(close(run(3, 0.2), 0.0));
    }

    #[test]
    fn errors_are_not_deducted_when_errors_are_not_weighted() {
        let mut table = vec![ExperimentResult {
            errors: 2,
            score: Some(0.9),
            ..experiment("m")
        }];
        apply(&mut table, &weights(&[("score", 1.0)]));
        assert!(close(table[0].wscore, 0.9));
    }

    #[test]
    fn a_missing_weighted_value_leaves_no_wscore() {
        let mut table = vec![
            ExperimentResult {
                cost_usd: None,
                ..experiment("unknown-cost")
            },
            experiment("known"),
        ];
        table[1].means.insert("exact".into(), Some(1.0));
        apply(&mut table, &weights(&[("score", 1.0), ("cost", -1.0)]));
        assert_eq!(table[0].wscore, None);
        assert!(close(table[1].wscore, 1.0));
        apply(&mut table, &weights(&[("exact", 1.0)]));
        assert_eq!(table[0].wscore, None);
        assert!(close(table[1].wscore, 1.0));
    }

    #[test]
    fn validate_accepts_builtins_and_scorer_metrics() {
        let metrics = [
            metric("exact"),
            metric("hallucinated_rate"),
            metric("invalid_rate"),
        ];
        assert_eq!(validate_weights(&seed_weights(), &metrics), Ok(()));
    }

    #[test]
    fn validate_refuses_tokens_unknown_names_zero_and_duplicates() {
        let metrics = [metric("exact")];
        let err = |w: &[(&str, f64)]| {
            validate_weights(&weights(w), &metrics)
                .err()
                .unwrap_or_default()
        };
        assert!(err(&[("tok_in", -1.0)]).starts_with("tok_in cannot be weighted"));
        assert_eq!(
            err(&[("exactt", 1.0)]),
            "`exactt` cannot be weighted (did you mean `exact`?): it is neither a built-in nor a \
             metric of the scorer; weightable: score, errors, time, cost, latency, p95, exact"
        );
        assert!(err(&[("cost", 0.0)]).contains("non-zero"));
        assert!(err(&[("cost", -1.0), ("cost", -2.0)]).contains("weighted twice"));
        assert!(err(&[]).contains("is empty"));
    }

    #[test]
    fn pass_k_may_be_weighted_and_is_the_pass_rate_with_one_try_each() {
        assert_eq!(validate_weights(&weights(&[("pass^k", 1.0)]), &[]), Ok(()));
        let mut e = experiment("a");
        e.cases_total = 4;
        e.errors = 1;
        e.failed = 1;
        assert_eq!(raw(&e, "pass^k"), Some(0.5));
        e.repeat = Some(crate::results::RepeatStats {
            k: 3,
            ci95: None,
            pass_hat_k: 0.25,
            pass_at_k: 1.0,
            flaky: 2,
        });
        let mut table = vec![e];
        apply(&mut table, &weights(&[("pass^k", 1.0)]));
        assert_eq!(table[0].wscore, Some(0.25));
    }
}
