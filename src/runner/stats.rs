use std::collections::BTreeMap;

use crate::results::{CaseResult, ContenderInfo, ExperimentResult, Latency};

/// The wall time of running cases with these durations on `workers` workers, in order,
/// each case starting on the first free worker. Computed from call latencies, so a replay
/// reports the figure the recording did.
pub fn makespan(durations: &[f64], workers: usize) -> f64 {
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

/// Sums an experiment's case results into its means, errors, cost, tokens and latency.
pub fn aggregate(
    contender: ContenderInfo,
    dataset: String,
    primary: &str,
    cases: Vec<CaseResult>,
    workers: usize,
) -> ExperimentResult {
    let scored: Vec<&CaseResult> = cases.iter().filter(|c| c.error.is_none()).collect();
    let mut sums: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    let mut names: Vec<String> = Vec::new();
    for c in &scored {
        for (k, v) in &c.metrics {
            if !names.contains(k) {
                names.push(k.clone());
            }
            if let Some(v) = v {
                let e = sums.entry(k.clone()).or_default();
                e.0 += v * c.weight;
                e.1 += c.weight;
            }
        }
    }
    let mut means = BTreeMap::new();
    for n in names {
        let m = sums.get(&n).filter(|(_, w)| *w > 0.0).map(|(s, w)| s / w);
        means.insert(n, m);
    }
    let score = means.get(primary).copied().flatten().or_else(|| {
        let (s, w) = scored
            .iter()
            .filter_map(|c| c.score.map(|s| (s * c.weight, c.weight)))
            .fold((0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
        (w > 0.0).then(|| s / w)
    });
    let errors = cases.iter().filter(|c| c.error.is_some()).count();
    let failed = cases.iter().filter(|c| c.passed == Some(false)).count();
    let called: Vec<&CaseResult> = cases.iter().filter(|c| c.latency_s.is_some()).collect();
    let cost_usd = if called.is_empty() || called.iter().any(|c| c.usage.cost_usd.is_none()) {
        None
    } else {
        Some(called.iter().filter_map(|c| c.usage.cost_usd).sum())
    };
    let sum_tokens = |f: fn(&CaseResult) -> Option<u64>| -> Option<u64> {
        let v: Vec<u64> = called.iter().filter_map(|c| f(c)).collect();
        (!v.is_empty()).then(|| v.iter().sum())
    };
    let tokens_in = sum_tokens(|c| c.usage.input_tokens);
    let tokens_out = sum_tokens(|c| c.usage.output_tokens);
    let mut lats: Vec<f64> = scored.iter().filter_map(|c| c.latency_s).collect();
    lats.sort_by(f64::total_cmp);
    let latency = Latency {
        mean_s: (!lats.is_empty()).then(|| lats.iter().sum::<f64>() / lats.len() as f64),
        p95_s: percentile(&lats, 0.95),
    };
    let durations: Vec<f64> = cases.iter().map(|c| c.duration_s).collect();
    ExperimentResult {
        contender,
        dataset,
        means,
        score,
        cases_total: cases.len(),
        errors,
        failed,
        cost_usd,
        tokens_in,
        tokens_out,
        latency,
        time_s: makespan(&durations, workers),
        wscore: None,
        cases,
    }
}

/// Nearest-rank percentile of sorted values.
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

    #[test]
    fn makespan_packs_cases_on_free_workers() {
        assert_eq!(makespan(&[1.0, 1.0, 1.0, 1.0], 2), 2.0);
        assert_eq!(makespan(&[3.0, 1.0, 1.0, 1.0], 2), 3.0);
        assert_eq!(makespan(&[], 4), 0.0);
    }

    #[test]
    fn p95_is_nearest_rank() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.95), Some(19.0));
        assert_eq!(percentile(&[2.0], 0.95), Some(2.0));
    }
}
