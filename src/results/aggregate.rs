//! The one aggregation: an experiment's figures (means, score, errors, cost, tokens,
//! latency, time) summed case by case as the cases finish, so the runner never holds the
//! cases to compute them; and the overall row of a contender over several datasets.
//!
//! Two rules, each kept where it was (the figures every report shows are unchanged):
//! - within an experiment (and a `--totals variant` table), a metric's mean is weighted by
//!   each case's `weight:` ([`Aggregator`]);
//! - across datasets (the overall table), each dataset's mean is weighted by how many of its
//!   cases were scored ([`overall`]). With case weights other than 1 the two differ: a
//!   weight-3 case scoring 1 in one dataset and a weight-1 case scoring 0 in another give an
//!   overall 50% (one scored case each), not the 75% their weights would.

use std::collections::BTreeMap;

use super::{CaseResult, ContenderInfo, ExperimentResult, Latency, RepeatStats};

/// The wall time of running cases with these durations on `workers` workers, in order,
/// each case starting on the first free worker. Computed from call latencies, so a replay
/// reports the figure the recording did. The [`Aggregator`] packs its cases the same way
/// as they come; this is the rule written out whole, which its tests hold it to.
#[cfg(test)]
pub(crate) fn makespan(durations: &[f64], workers: usize) -> f64 {
    let mut free = vec![0.0f64; workers.max(1)];
    for d in durations {
        let (i, _) = free
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(b.1))
            .unwrap_or((0, &0.0));
        free[i] += d;
    }
    free.into_iter().fold(0.0, f64::max)
}

/// An experiment's figures, case by case. Cases finish in any order, but sums of floats
/// depend on their order: each case's figures (a few numbers, never the case) wait in a
/// small buffer until every case before it has come, and are folded in case order, so the
/// result is the same bit for bit whatever order the workers finished in. The buffer holds
/// only the cases that finished while an earlier one was still running.
#[derive(Debug, Clone, Default)]
pub struct Aggregator {
    primary: String,
    /// Each metric, in the order first met: (weighted sum, weight) over the values present.
    sums: Vec<(String, f64, f64)>,
    /// The score's weighted sum and weight, the fallback when no metric is the primary.
    score: (f64, f64),
    cases: usize,
    errors: usize,
    failed: usize,
    truncated: usize,
    /// Cases that made a call; the cost turns `None` once one of them had none.
    called: usize,
    cost: Option<f64>,
    /// What the providers billed, and whether any case's bill differed from its cost.
    billed: f64,
    billed_apart: bool,
    tokens_in: Option<u64>,
    tokens_out: Option<u64>,
    /// What the judges' calls cost, apart from the contender's `cost`.
    judge_cost: Option<f64>,
    /// Latencies of scored cases that made a call (for the mean and the p95).
    latencies: Latencies,
    /// When each of the `-p` workers is next free, cases packed in order ([`makespan`]).
    free: Vec<f64>,
    /// The position of the next case to fold, and the figures of later ones already here.
    next: usize,
    pending: BTreeMap<usize, Figures>,
    /// The repeats' running figures (`--repeat K`), a few numbers whatever the suite's size.
    repeats: RepeatSums,
}

/// What [`RepeatStats`] is computed from, summed case by case: the most tries a case had,
/// the scored cases' means (count, sum, sum of squares, for the interval), the cases'
/// `pass^k` and `pass@k`, and the flaky ones.
#[derive(Debug, Clone, Default)]
struct RepeatSums {
    k: usize,
    cases: usize,
    scored: usize,
    sum: f64,
    sum_sq: f64,
    hat: f64,
    at: f64,
    flaky: usize,
}

/// What the aggregate reads of one case.
#[derive(Debug, Clone)]
struct Figures {
    error: bool,
    truncated: bool,
    passed: Option<bool>,
    weight: f64,
    score: Option<f64>,
    metrics: Vec<(String, Option<f64>)>,
    latency_s: Option<f64>,
    duration_s: f64,
    cost_usd: Option<f64>,
    billed_usd: Option<f64>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    judge_cost_usd: Option<f64>,
    tries: usize,
    passes: usize,
}

impl Aggregator {
    /// An empty aggregate ranked by `primary` (the scorer's primary metric), its time
    /// packed on `workers` workers.
    pub fn new(primary: &str, workers: usize) -> Aggregator {
        Aggregator {
            primary: primary.to_string(),
            cost: Some(0.0),
            free: vec![0.0; workers.max(1)],
            ..Aggregator::default()
        }
    }

    /// Adds the case at position `index` of its experiment.
    pub fn add(&mut self, index: usize, c: &CaseResult) {
        let f = Figures {
            error: c.error.is_some(),
            truncated: c.truncated,
            passed: c.passed,
            weight: c.weight,
            score: c.score,
            metrics: c.metrics.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            latency_s: c.latency_s,
            duration_s: c.duration_s,
            cost_usd: c.usage.cost_usd,
            billed_usd: c.usage.billed_usd,
            input_tokens: c.usage.input_tokens,
            output_tokens: c.usage.output_tokens,
            judge_cost_usd: c.judge_usage.cost_usd,
            tries: c.tries(),
            passes: c.passes(),
        };
        self.pending.insert(index, f);
        while let Some(f) = self.pending.remove(&self.next) {
            self.fold(f);
            self.next += 1;
        }
    }

    /// The positions below `n` that no case was added at.
    pub fn missing(&self, n: usize) -> impl Iterator<Item = usize> + '_ {
        (self.next..n).filter(|i| !self.pending.contains_key(i))
    }

    fn fold(&mut self, c: Figures) {
        self.cases += 1;
        let r = &mut self.repeats;
        r.k = r.k.max(c.tries);
        r.cases += 1;
        let (n, p) = (c.tries as u64, c.passes as u64);
        r.hat += super::stats::pass_hat_k(n, p, n);
        r.at += super::stats::pass_at_k(n, p, n);
        if c.tries > 1 && c.passes > 0 && c.passes < c.tries {
            r.flaky += 1;
        }
        if let (false, Some(s)) = (c.error, c.score) {
            r.scored += 1;
            r.sum += s;
            r.sum_sq += s * s;
        }
        if let Some((i, _)) = self
            .free
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(b.1))
        {
            self.free[i] += c.duration_s;
        }
        if c.passed == Some(false) {
            self.failed += 1;
        }
        if let Some(v) = c.judge_cost_usd {
            self.judge_cost = Some(self.judge_cost.unwrap_or(0.0) + v);
        }
        if c.latency_s.is_some() {
            self.called += 1;
            self.cost = match (self.cost, c.cost_usd) {
                (Some(sum), Some(v)) => Some(sum + v),
                _ => None,
            };
            // What the provider billed where it differs from the cost, else the cost.
            if let Some(b) = c.billed_usd.or(c.cost_usd) {
                self.billed += b;
            }
            self.billed_apart |= c.billed_usd.is_some();
            add_tokens(&mut self.tokens_in, c.input_tokens);
            add_tokens(&mut self.tokens_out, c.output_tokens);
        }
        if c.error {
            self.errors += 1;
            return;
        }
        if c.truncated {
            self.truncated += 1;
        }
        for (k, v) in c.metrics {
            let i = match self.sums.iter().position(|(n, _, _)| *n == k) {
                Some(i) => i,
                None => {
                    self.sums.push((k, 0.0, 0.0));
                    self.sums.len() - 1
                }
            };
            if let Some(v) = v {
                self.sums[i].1 += v * c.weight;
                self.sums[i].2 += c.weight;
            }
        }
        if let Some(s) = c.score {
            self.score.0 += s * c.weight;
            self.score.1 += c.weight;
        }
        if let Some(l) = c.latency_s {
            self.latencies.push(l);
        }
    }

    /// The experiment's result, its `cases` left empty (they are where the sinks put them).
    /// Cases after one that never ran (a stopped run) are folded in order too.
    pub fn finish(mut self, contender: ContenderInfo, dataset: String) -> ExperimentResult {
        for f in std::mem::take(&mut self.pending).into_values() {
            self.fold(f);
        }
        let means: BTreeMap<String, Option<f64>> = self
            .sums
            .iter()
            .map(|(n, s, w)| (n.clone(), (*w > 0.0).then(|| s / w)))
            .collect();
        let score = means.get(&self.primary).copied().flatten().or_else(|| {
            let (s, w) = self.score;
            (w > 0.0).then(|| s / w)
        });
        let latency = self.latencies.latency();
        ExperimentResult {
            contender,
            dataset,
            means,
            score,
            cases_total: self.cases,
            errors: self.errors,
            failed: self.failed,
            truncated: self.truncated,
            cost_usd: if self.called == 0 { None } else { self.cost },
            billed_usd: self.billed_apart.then_some(self.billed),
            tokens_in: self.tokens_in,
            tokens_out: self.tokens_out,
            latency,
            time_s: self.free.iter().copied().fold(0.0, f64::max),
            wscore: None,
            repeat: self.repeats.stats(),
            cases: vec![],
            judge_cost_usd: self.judge_cost,
        }
    }
}

impl RepeatSums {
    /// The figures, when some case ran more than once.
    fn stats(&self) -> Option<RepeatStats> {
        let cases = self.cases.max(1) as f64;
        (self.k > 1).then(|| RepeatStats {
            k: self.k,
            ci95: super::stats::ci95_of_sums(self.scored, self.sum, self.sum_sq),
            pass_hat_k: self.hat / cases,
            pass_at_k: self.at / cases,
            flaky: self.flaky,
        })
    }
}

fn add_tokens(sum: &mut Option<u64>, v: Option<u64>) {
    if let Some(v) = v {
        *sum = Some(sum.unwrap_or(0) + v);
    }
}

/// Sums an experiment's case results (in case order) into its figures, the cases kept.
pub fn aggregate(
    contender: ContenderInfo,
    dataset: String,
    primary: &str,
    cases: Vec<CaseResult>,
    workers: usize,
) -> ExperimentResult {
    let mut agg = Aggregator::new(primary, workers);
    for (i, c) in cases.iter().enumerate() {
        agg.add(i, c);
    }
    ExperimentResult {
        cases,
        ..agg.finish(contender, dataset)
    }
}

/// One row per contender over every dataset: means weighted by scored cases, sums of errors,
/// cost, time and tokens; p95 is the mean of the datasets' p95 (an approximation to rank by).
pub fn overall(experiments: &[ExperimentResult]) -> Vec<ExperimentResult> {
    let mut groups: Vec<(String, Vec<&ExperimentResult>)> = Vec::new();
    for e in experiments {
        let k = e.contender.key();
        match groups.iter_mut().find(|(key, _)| *key == k) {
            Some((_, v)) => v.push(e),
            None => groups.push((k, vec![e])),
        }
    }
    groups.into_iter().map(|(_, es)| overall_row(&es)).collect()
}

fn overall_row(es: &[&ExperimentResult]) -> ExperimentResult {
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
        truncated: es.iter().map(|e| e.truncated).sum(),
        cost_usd: opt_sum(|e| e.cost_usd),
        billed_usd: es
            .iter()
            .any(|e| e.billed_usd.is_some())
            .then(|| es.iter().filter_map(|e| e.billed_usd.or(e.cost_usd)).sum()),
        tokens_in: tok_sum(|e| e.tokens_in),
        tokens_out: tok_sum(|e| e.tokens_out),
        latency: Latency {
            mean_s,
            p95_s: (!p95s.is_empty()).then(|| p95s.iter().sum::<f64>() / p95s.len() as f64),
        },
        time_s: es.iter().map(|e| e.time_s).sum(),
        wscore: None,
        repeat: overall_repeats(es),
        cases: vec![],
        judge_cost_usd: {
            let v: Vec<f64> = es.iter().filter_map(|e| e.judge_cost_usd).collect();
            (!v.is_empty()).then(|| v.iter().sum())
        },
    }
}

/// The datasets' repeat figures together: `pass^k` and `pass@k` weighted by cases, flaky
/// cases summed; the interval is per dataset only (its sums are not kept).
fn overall_repeats(es: &[&ExperimentResult]) -> Option<RepeatStats> {
    let rs: Vec<(&RepeatStats, f64)> = es
        .iter()
        .filter_map(|e| e.repeat.as_ref().map(|r| (r, e.cases_total as f64)))
        .collect();
    let n: f64 = rs.iter().map(|(_, n)| n).sum();
    (!rs.is_empty()).then(|| RepeatStats {
        k: rs.iter().map(|(r, _)| r.k).max().unwrap_or(1),
        ci95: None,
        pass_hat_k: rs.iter().map(|(r, n)| r.pass_hat_k * n).sum::<f64>() / n.max(1.0),
        pass_at_k: rs.iter().map(|(r, n)| r.pass_at_k * n).sum::<f64>() / n.max(1.0),
        flaky: rs.iter().map(|(r, _)| r.flaky).sum(),
    })
}

/// Nearest-rank percentile of sorted values.
/// Every latency of an experiment, for its exact mean and p95, in memory that does not
/// grow with the cases when they repeat values (a replay's latencies are whole recorded
/// milliseconds): kept as each distinct value and how many times it came, sorted, with the
/// latest few thousand waiting to be merged in.
#[derive(Debug, Clone, Default)]
struct Latencies {
    /// Distinct values in `f64::total_cmp` order, with their counts.
    runs: Vec<(f64, u64)>,
    pending: Vec<f64>,
}

impl Latencies {
    const PENDING: usize = 4096;

    fn push(&mut self, l: f64) {
        self.pending.push(l);
        if self.pending.len() >= Self::PENDING {
            self.merge();
        }
    }

    fn merge(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        self.pending.sort_by(f64::total_cmp);
        let mut merged = Vec::with_capacity(self.runs.len() + self.pending.len());
        let (mut a, mut b) = (
            self.runs.iter().copied().peekable(),
            self.pending.iter().peekable(),
        );
        let add = |v: f64, n: u64, merged: &mut Vec<(f64, u64)>| match merged.last_mut() {
            Some((last, count)) if last.total_cmp(&v).is_eq() => *count += n,
            _ => merged.push((v, n)),
        };
        loop {
            match (a.peek(), b.peek()) {
                (Some(&(v, n)), Some(&&w)) => {
                    if v.total_cmp(&w).is_le() {
                        add(v, n, &mut merged);
                        a.next();
                    } else {
                        add(w, 1, &mut merged);
                        b.next();
                    }
                }
                (Some(&(v, n)), None) => {
                    add(v, n, &mut merged);
                    a.next();
                }
                (None, Some(&&w)) => {
                    add(w, 1, &mut merged);
                    b.next();
                }
                (None, None) => break,
            }
        }
        merged.shrink_to_fit();
        self.runs = merged;
        self.pending.clear();
    }

    /// The mean and the nearest-rank p95, the figures the sorted list of every latency gave
    /// (the mean summed in that order).
    fn latency(&mut self) -> Latency {
        self.merge();
        let len: u64 = self.runs.iter().map(|&(_, n)| n).sum();
        let sorted = || {
            self.runs
                .iter()
                .flat_map(|&(v, n)| std::iter::repeat_n(v, n as usize))
        };
        let p95_s = (len > 0).then(|| {
            let rank = ((0.95 * len as f64).ceil() as u64).clamp(1, len);
            let mut seen = 0;
            self.runs
                .iter()
                .find(|&&(_, n)| {
                    seen += n;
                    seen >= rank
                })
                .map_or(f64::NAN, |&(v, _)| v)
        });
        Latency {
            mean_s: (len > 0).then(|| sorted().sum::<f64>() / len as f64),
            p95_s,
        }
    }
}

/// The nearest-rank `q` quantile of a sorted list (what [`Latencies`] gives the p95 of).
#[cfg(test)]
fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Usage;

    #[test]
    fn makespan_packs_cases_on_free_workers() {
        assert_eq!(makespan(&[1.0, 1.0, 1.0, 1.0], 2), 2.0);
        assert_eq!(makespan(&[3.0, 1.0, 1.0, 1.0], 2), 3.0);
        assert_eq!(makespan(&[], 4), 0.0);
    }

    #[test]
    fn latencies_kept_by_value_give_the_sorted_lists_mean_and_p95() {
        // Repeating values (as a replay's whole milliseconds) and distinct ones, over
        // several merges, against the sorted list they replace.
        let mut values: Vec<f64> = (0..10_000u32)
            .map(|i| f64::from((i * 7919) % 613) / 1000.0)
            .chain((0..5_000u32).map(|i| f64::from(i) * 1e-7 + 0.1))
            .chain([0.0, -0.0, 0.3, 0.3])
            .collect();
        let mut kept = Latencies::default();
        for &v in &values {
            kept.push(v);
        }
        values.sort_by(f64::total_cmp);
        let got = kept.latency();
        assert!(kept.runs.len() < values.len());
        assert_eq!(
            got.mean_s.map(f64::to_bits),
            Some((values.iter().sum::<f64>() / values.len() as f64).to_bits())
        );
        assert_eq!(got.p95_s, percentile(&values, 0.95));
        assert_eq!(Latencies::default().latency(), Latency::default());
        let mut one = Latencies::default();
        one.push(2.0);
        assert_eq!(one.latency().p95_s, Some(2.0));
    }

    #[test]
    fn p95_is_nearest_rank() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.95), Some(19.0));
        assert_eq!(percentile(&[2.0], 0.95), Some(2.0));
    }

    fn case(id: &str, score: Option<f64>, weight: f64, latency: Option<f64>) -> CaseResult {
        CaseResult {
            case: id.into(),
            variant: String::new(),
            fingerprint: String::new(),
            score,
            metrics: [("acc".to_string(), score)].into(),
            passed: score.map(|s| s >= 0.5),
            failed_thresholds: vec![],
            truncated: false,
            error: score.is_none().then(|| {
                crate::results::CaseError::new(crate::results::CaseErrorKind::Other, "boom")
            }),
            reply_error: None,
            output: None,
            raw: None,
            diagnostics: vec![],
            usage: Usage {
                input_tokens: latency.map(|_| 10),
                output_tokens: None,
                cost_usd: latency.map(|_| 0.5),
                ..Usage::default()
            },
            latency_s: latency,
            duration_s: latency.unwrap_or(0.0),
            tags: vec![],
            weight,
            repeats: vec![],
            judge_usage: Default::default(),
            input: None,
            expected: None,
            trajectory: vec![],
            tool_calls: None,
            warnings: vec![],
            components: None,
        }
    }

    fn contender() -> ContenderInfo {
        ContenderInfo {
            id: "fake/echo".into(),
            provider: "fake".into(),
            model: "echo".into(),
            effort: None,
            temperature: None,
            max_tokens: None,
        }
    }

    #[test]
    fn cases_added_in_any_order_give_the_figures_of_case_order() {
        let cases = vec![
            case("a", Some(1.0), 3.0, Some(3.0)),
            case("b", Some(0.0), 1.0, Some(1.0)),
            case("c", None, 1.0, Some(1.0)),
            case("d", Some(0.5), 1.0, None),
        ];
        let in_order = aggregate(contender(), "d".into(), "acc", cases.clone(), 2);
        let mut agg = Aggregator::new("acc", 2);
        for i in [3, 1, 0, 2] {
            agg.add(i, &cases[i]);
        }
        let shuffled = agg.finish(contender(), "d".into());
        assert_eq!(
            shuffled,
            ExperimentResult {
                cases: vec![],
                ..in_order.clone()
            }
        );
        // Weighted by case weight: (3·1 + 1·0 + 1·0.5) / 5.
        assert_eq!(in_order.score, Some(0.7));
        assert_eq!((in_order.errors, in_order.failed), (1, 1));
        assert_eq!(in_order.cost_usd, Some(1.5));
        assert_eq!(in_order.tokens_in, Some(30));
        // [3, 1] on one worker and [1, 0] on the other: 3 s.
        assert_eq!(in_order.time_s, 3.0);
        assert_eq!(in_order.time_s, makespan(&[3.0, 1.0, 1.0, 0.0], 2));
        assert_eq!(in_order.latency.p95_s, Some(3.0));
    }

    #[test]
    fn sums_of_floats_come_out_the_same_bit_for_bit_in_any_finishing_order() {
        // 0.1 + 0.2 + 0.3 differs from 0.3 + 0.2 + 0.1 in the last bit.
        let cases: Vec<CaseResult> = [0.1, 0.2, 0.3, 0.7, 0.11]
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let mut c = case(&format!("c{i}"), Some(v), 1.0, Some(v));
                c.usage.cost_usd = Some(v);
                c
            })
            .collect();
        let want = aggregate(contender(), "d".into(), "acc", cases.clone(), 3);
        for order in [[4, 3, 2, 1, 0], [2, 0, 4, 1, 3], [1, 2, 3, 4, 0]] {
            let mut agg = Aggregator::new("acc", 3);
            for i in order {
                agg.add(i, &cases[i]);
            }
            let got = agg.finish(contender(), "d".into());
            assert_eq!(
                got.cost_usd.map(f64::to_bits),
                want.cost_usd.map(f64::to_bits)
            );
            assert_eq!(got.score.map(f64::to_bits), want.score.map(f64::to_bits));
            assert_eq!(got.time_s.to_bits(), want.time_s.to_bits());
        }
    }

    #[test]
    fn a_case_that_never_ran_leaves_the_later_ones_folded_in_order() {
        let cases = [
            case("a", Some(1.0), 1.0, Some(1.0)),
            case("b", Some(0.0), 1.0, Some(2.0)),
            case("c", Some(0.5), 1.0, Some(3.0)),
        ];
        let mut agg = Aggregator::new("acc", 1);
        agg.add(2, &cases[2]);
        agg.add(0, &cases[0]);
        let got = agg.finish(contender(), "d".into());
        let want = aggregate(
            contender(),
            "d".into(),
            "acc",
            vec![cases[0].clone(), cases[2].clone()],
            1,
        );
        assert_eq!(
            got,
            ExperimentResult {
                cases: vec![],
                ..want
            }
        );
        assert_eq!(got.cases_total, 2);
    }

    #[test]
    fn the_overall_row_weights_each_dataset_by_its_scored_cases_not_by_case_weight() {
        let a = aggregate(
            contender(),
            "a".into(),
            "acc",
            vec![case("x", Some(1.0), 3.0, None)],
            1,
        );
        let b = aggregate(
            contender(),
            "b".into(),
            "acc",
            vec![case("y", Some(0.0), 1.0, None)],
            1,
        );
        let rows = overall(&[a, b]);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].score, Some(0.5));
        assert_eq!(rows[0].cases_total, 2);
    }
}
