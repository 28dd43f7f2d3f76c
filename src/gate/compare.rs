//! The gate's rules, applied to a run and (optionally) its baseline.
//!
//! (1) an experiment whose mean primary score fell by more than the tolerance regressed;
//! (2) a case that met its thresholds in the baseline and now does not regressed, whatever
//! the tolerance; (3) a case that now errors (a cassette miss included) regressed; (4) a
//! case failing its thresholds, or erroring, fails the check on every run, baseline or not
//! (with `--min-pass-rate`, the share of passing cases is the rule instead of each case,
//! and `--min-score` sets a floor on each experiment's mean: see [`Limits`]).
//! Improvements, declines, new, changed and removed cases are reported, never gated, except
//! that [`Rules::fail_on_case_decline`] (`report --fail-on-case-regression`) gates any
//! decline. Cases compare only where their fingerprints match.
//!
//! With [`Rules::max_cost_increase`] (and its kin for tokens and p50 latency), an
//! experiment whose figure on the cases both runs share rose past the percentage allowed
//! regressed too ([`Reason::Rose`]). The figures come from the recordings (usage, cost and
//! latency replay as recorded), so the same replay gives the same verdict; a figure unknown
//! on either side is never taken for 0: it is not compared ([`Measured`]).

use std::collections::{BTreeMap, HashSet};

use super::Limits;
use super::spill::{Figures, Index, Seen};
use crate::error::Result;
use crate::results::{
    BaselineInfo, CaseDelta, CaseRef, CaseResult, CaseSource, CaseStatus, Comparison,
    ExperimentDelta, ExperimentResult, Measure, Measured, PairedTest, Reason, RunResult, RunStatus,
    Stopped, Verdict,
};

/// Scores closer than this are the same score (they went through JSON and sums).
pub(super) const EPS: f64 = 1e-9;

/// What the gate fails on beyond the four rules. Built by [`Rules::new`] (or
/// [`Rules::tolerance`]) and the chained setters: `Rules::new(0.02, false)?
/// .max_cost_increase(10.0)?`.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Rules {
    /// How far (0..=1) an experiment's mean primary score may fall (rule 1).
    pub tolerance: f64,
    /// Also fail on any compared case whose score dropped at all (`--fail-on-case-regression`).
    pub fail_on_case_decline: bool,
    /// The statistical gate: `--stat`, `--alpha`, `--inconclusive`.
    pub stat: Stat,
    /// How far (percent) an experiment's cost, tokens and p50 latency may rise over the
    /// baseline's on the shared cases; each `None` is not gated.
    pub max_increase: MaxIncrease,
}

/// `--max-cost-increase`, `--max-tokens-increase`, `--max-latency-increase`: the rise each
/// measure may take, in percent (`10.0` is 10%); `None` is not gated (still reported).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MaxIncrease {
    /// Dollars spent.
    pub cost: Option<f64>,
    /// Tokens in and out.
    pub tokens: Option<f64>,
    /// The p50 of the recorded latency.
    pub latency: Option<f64>,
}

impl MaxIncrease {
    /// The rise `measure` may take, in percent.
    pub fn of(&self, measure: Measure) -> Option<f64> {
        match measure {
            Measure::Cost => self.cost,
            Measure::Tokens => self.tokens,
            Measure::Latency => self.latency,
        }
    }
}

/// How the statistical gate judges rule 1 (DESIGN §8 with repeats): on when either run has
/// tries (`--repeat K` > 1), or always with `force` (`--stat`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stat {
    /// Test even when every case ran once on both sides (`--stat`).
    pub force: bool,
    /// The significance level (`--alpha`, default 0.05).
    pub alpha: f64,
    /// An inconclusive drop fails the check (`--inconclusive fail`).
    pub inconclusive_fails: bool,
}

impl Default for Stat {
    fn default() -> Stat {
        Stat {
            force: false,
            alpha: 0.05,
            inconclusive_fails: false,
        }
    }
}

impl Rules {
    /// The rules of `--tolerance` and `--fail-on-case-regression`, the tolerance checked:
    /// a fraction in 0..=1, else a usage error (exit 2).
    pub fn new(tolerance: f64, fail_on_case_decline: bool) -> crate::error::Result<Rules> {
        if !(0.0..=1.0).contains(&tolerance) {
            return Err(crate::error::Error::invalid(
                crate::error::Setting::Tolerance,
                tolerance,
                "expected a fraction between 0 and 1 (0.02 is two points)",
            ));
        }
        Ok(Rules {
            tolerance,
            fail_on_case_decline,
            stat: Stat::default(),
            max_increase: MaxIncrease::default(),
        })
    }

    /// These rules with `--max-cost-increase PCT`: an experiment whose cost on the shared
    /// cases rose by more than `percent` (10.0 is 10%) regresses. A negative or non-finite
    /// percentage is a usage error (exit 2).
    pub fn max_cost_increase(self, percent: f64) -> crate::error::Result<Rules> {
        self.max_increase(Measure::Cost, percent)
    }

    /// These rules with `--max-tokens-increase PCT` (tokens in and out), checked as
    /// [`Rules::max_cost_increase`].
    pub fn max_tokens_increase(self, percent: f64) -> crate::error::Result<Rules> {
        self.max_increase(Measure::Tokens, percent)
    }

    /// These rules with `--max-latency-increase PCT` (the p50 of the recorded latency),
    /// checked as [`Rules::max_cost_increase`].
    pub fn max_latency_increase(self, percent: f64) -> crate::error::Result<Rules> {
        self.max_increase(Measure::Latency, percent)
    }

    /// These rules with the rise `measure` may take, in percent, checked: 0 or more.
    pub fn max_increase(mut self, measure: Measure, percent: f64) -> crate::error::Result<Rules> {
        use crate::error::Setting;
        if !(percent.is_finite() && percent >= 0.0) {
            let setting = match measure {
                Measure::Cost => Setting::MaxCostIncrease,
                Measure::Tokens => Setting::MaxTokensIncrease,
                Measure::Latency => Setting::MaxLatencyIncrease,
            };
            return Err(crate::error::Error::invalid(
                setting,
                percent,
                "expected a percentage of 0 or more (10 allows a rise of 10%)",
            ));
        }
        let slot = match measure {
            Measure::Cost => &mut self.max_increase.cost,
            Measure::Tokens => &mut self.max_increase.tokens,
            Measure::Latency => &mut self.max_increase.latency,
        };
        *slot = Some(percent);
        Ok(self)
    }

    /// These rules with the statistical gate's flags, `alpha` checked: a level strictly
    /// between 0 and 1, else a usage error (exit 2).
    pub fn with_stat(mut self, stat: Stat) -> crate::error::Result<Rules> {
        if !(stat.alpha > 0.0 && stat.alpha < 1.0) {
            return Err(crate::error::Error::invalid(
                crate::error::Setting::Alpha,
                stat.alpha,
                "expected a significance level between 0 and 1 (0.05 is the usual)",
            ));
        }
        self.stat = stat;
        Ok(self)
    }

    /// Rule 1's tolerance alone, unchecked.
    pub fn tolerance(tolerance: f64) -> Rules {
        Rules {
            tolerance,
            fail_on_case_decline: false,
            stat: Stat::default(),
            max_increase: MaxIncrease::default(),
        }
    }
}

/// Compares `run` with `baseline` (none: thresholds and errors alone) and gives the verdict.
pub fn compare(
    baseline: Option<(&RunResult, BaselineInfo)>,
    run: &RunResult,
    tolerance: f64,
) -> Comparison {
    compare_with(baseline, run, Rules::tolerance(tolerance))
}

/// [`compare`] under `rules`.
pub fn compare_with(
    baseline: Option<(&RunResult, BaselineInfo)>,
    run: &RunResult,
    rules: Rules,
) -> Comparison {
    let baseline = baseline.map(|(b, info)| (b, CaseSource::Run(b), info));
    // Both runs are held whole: their cases are read from memory, the index and the
    // figures kept in memory too, so nothing here reads or writes a file.
    compare_streamed(baseline, run, CaseSource::Run(run), rules)
        .expect("a comparison of runs held whole reads nothing that can fail")
}

/// [`compare_with`] of runs whose cases are read from `cases_of_run` (this run's) and the
/// baseline's own source, one case at a time: with both in case logs, nothing a case is
/// held in memory (a baseline case is found by its id through an index on disk, and the
/// figures a median or the paired test needs are written to a temporary file), so a check
/// of 100,000 cases needs no more memory than one of 1,000. Only the comparison's own
/// list of changed and failing cases grows, with what changed. Fails when a case log or a
/// temporary file cannot be read or written.
pub fn compare_streamed(
    baseline: Option<(&RunResult, CaseSource<'_>, BaselineInfo)>,
    run: &RunResult,
    cases_of_run: CaseSource<'_>,
    rules: Rules,
) -> Result<Comparison> {
    let tolerance = rules.tolerance;
    let base_name = baseline
        .as_ref()
        .map(|(_, _, info)| {
            info.branch
                .clone()
                .unwrap_or_else(|| format!("run {}", info.id))
        })
        .unwrap_or_default();
    let base_exps: BTreeMap<(String, String), (usize, &ExperimentResult)> = baseline
        .as_ref()
        .map(|(b, _, _)| {
            b.experiments
                .iter()
                .enumerate()
                .map(|(j, e)| ((e.contender.key(), e.dataset.clone()), (j, e)))
                .collect()
        })
        .unwrap_or_default();
    let base_source = baseline.as_ref().map(|(_, s, _)| *s);
    // What `Sum` starts its sums from (so a sum here has the bits an iterator's sum has).
    let zero: f64 = std::iter::empty::<f64>().sum();

    let mut experiments = Vec::new();
    let mut cases = Vec::new();
    let mut unchanged = 0;
    let mut reasons = Vec::new();
    let mut seen = HashSet::new();
    let limits = Limits::of(run);
    // A run that stopped early: the case runs it planned and never ran are not "removed".
    // Only such a run needs its plan (a completed one ran all of it).
    let completed = run.run.status == RunStatus::Completed;
    let planned = if completed {
        HashSet::new()
    } else {
        planned(run, cases_of_run)?
    };
    let stopped = stopped_in(run, cases_of_run, &planned);
    let never_ran = |exp: &ExperimentResult, bc: &CaseResult| {
        stopped.is_some()
            && planned.contains(&(exp.contender.key(), format!("{}/{}", exp.dataset, bc.case)))
    };
    if let Some(s) = &stopped {
        reasons.push(Reason::Stopped(s.clone()));
    }
    // Figures of runs held whole stay in memory; of a case log, on disk.
    let disk = matches!(cases_of_run, CaseSource::Log(_))
        || matches!(base_source, Some(CaseSource::Log(_)));

    for (i, exp) in run.experiments.iter().enumerate() {
        let key = (exp.contender.key(), exp.dataset.clone());
        seen.insert(key.clone());
        let base = base_exps.get(&key).copied();
        // Tries per case on each side (the most of either), and whether every shared case
        // scored 0 or 1 once: what the statistical gate needs, read as the cases go by.
        let mut k = 1;
        // The baseline's cases are walked in step with this run's while the ids agree
        // (the usual case: the same dataset, a few cases added or removed); a case out of
        // step is found by its id through an index, built the first time one is.
        let mut walk = match (base, base_source) {
            (Some((j, _)), Some(source)) => Some(Walk::new(source, j)?),
            _ => None,
        };
        let mut matched_at = Seen::default();
        // The matched cases' weighted sums (weight, baseline, candidate) and count.
        let (mut w, mut bw, mut cw, mut matched) = (zero, zero, zero, 0usize);
        let mut pairs = Figures::new(disk);
        let mut binary = true;
        // Each shared case's tries' variance, both sides summed (the noise more tries shrink).
        let (mut spread, mut spread_n) = (zero, 0usize);
        // The spend over the cases both runs share, each side (`None`: one was unknown).
        let mut shared = 0usize;
        let (mut cost, mut tokens) = ([Some(zero); 2], [Some(zero); 2]);
        let mut latency = [Figures::new(disk), Figures::new(disk)];
        let (mut total, mut passed) = (0usize, 0usize);
        for c in cases_of_run.cases(i)? {
            let (_, c) = c?;
            let c: &CaseResult = &c;
            k = k.max(c.tries());
            total += 1;
            passed += usize::from(c.passed == Some(true));
            let found = match &mut walk {
                Some(walk) => walk.find(&c.case)?,
                None => None,
            };
            if let Some((at, _)) = &found {
                matched_at.insert(*at);
            }
            let b = found.as_ref().map(|(_, b)| &**b);
            let mut d = case_delta(exp, b, c, baseline.is_some(), limits.each_case_gates());
            if rules.fail_on_case_decline && d.status == CaseStatus::Declined {
                d.gated = true;
            }
            let same = b.filter(|b| crate::fingerprint::same(&b.fingerprint, &c.fingerprint));
            if let (Some(b), Some(cs)) = (same, c.score)
                && let Some(bs) = b.score
            {
                w += c.weight;
                bw += bs * c.weight;
                cw += cs * c.weight;
                matched += 1;
                pairs.push(bs)?;
                pairs.push(cs)?;
                binary &= [bs, cs]
                    .iter()
                    .all(|v| v.abs() < EPS || (v - 1.0).abs() < EPS);
                let tries = |c: &CaseResult| -> Vec<f64> {
                    c.repeats.iter().filter_map(|r| r.score).collect()
                };
                spread += crate::results::stats::variance(&tries(b))
                    + crate::results::stats::variance(&tries(c));
                spread_n += 1;
            }
            // The spend of a case both runs share, erroring on neither side (an error is
            // its own regression, and its spend stopped short): cost and tokens are sums
            // (a repeated case's per try), latency the median of the cases' recorded call
            // time, over the cases that made calls.
            if let Some(b) = same.filter(|b| b.error.is_none() && c.error.is_none()) {
                shared += 1;
                for (side, x) in [b, c].into_iter().enumerate() {
                    let tries = x.tries() as f64;
                    cost[side] = cost[side].zip(x.usage.cost_usd).map(|(s, v)| s + v / tries);
                    let used = x.usage.input_tokens.zip(x.usage.output_tokens);
                    tokens[side] = tokens[side]
                        .zip(used)
                        .map(|(s, (i, o))| s + (i + o) as f64 / tries);
                    if let Some(l) = x.latency_s {
                        latency[side].push(l)?;
                    }
                }
            }
            if d.gated {
                reasons.push(case_reason(&d, &base_name));
            }
            if d.status == CaseStatus::Unchanged && !d.gated {
                unchanged += 1;
            } else {
                cases.push(d);
            }
        }
        reasons.extend(limits.misses_of(exp, passed, total));
        if let (Some((j, _)), Some(source)) = (base, base_source) {
            for bc in source.cases(j)? {
                let (at, bc) = bc?;
                k = k.max(bc.tries());
                if !matched_at.contains(at) && !never_ran(exp, &bc) {
                    cases.push(removed(exp, &bc));
                }
            }
            let (bm, cm) = if matched == 0 || w <= 0.0 {
                (None, None)
            } else {
                (Some(bw / w), Some(cw / w))
            };
            let delta = bm.zip(cm).map(|(b, c)| c - b);
            let past = delta.is_some_and(|d| -d > tolerance + EPS);
            let binary = k == 1 && binary;
            let test = if rules.stat.force || k > 1 {
                let within = spread / spread_n.max(1) as f64;
                let pairs: Vec<(f64, f64)> =
                    pairs.all()?.chunks_exact(2).map(|p| (p[0], p[1])).collect();
                paired_test(&pairs, within, binary, k, past, rules.stat)
            } else {
                None
            };
            let regressed = past && !test.as_ref().is_some_and(|t| t.inconclusive);
            if let (Some(t), Some(baseline), Some(candidate)) = (&test, bm, cm)
                && t.inconclusive
                && rules.stat.inconclusive_fails
            {
                reasons.push(Reason::Inconclusive {
                    contender: exp.contender.clone(),
                    dataset: exp.dataset.clone(),
                    baseline,
                    candidate,
                    test: t.clone(),
                });
            }
            if let (true, Some(baseline), Some(candidate)) = (regressed, bm, cm) {
                reasons.push(Reason::ExperimentFell {
                    contender: exp.contender.clone(),
                    dataset: exp.dataset.clone(),
                    baseline,
                    candidate,
                    tolerance,
                });
            }
            let measured = |sides: [Option<f64>; 2]| -> Measured {
                if shared == 0 {
                    return Measured::default();
                }
                Measured {
                    baseline: sides[0],
                    candidate: sides[1],
                    cases: shared,
                }
            };
            let [lb, lc] = &mut latency;
            let (cost_usd, tokens, latency_p50_s) = (
                measured(cost),
                measured(tokens),
                measured([lb.median()?, lc.median()?]),
            );
            for (m, figure) in Measure::ALL.iter().zip([cost_usd, tokens, latency_p50_s]) {
                if let Some(reason) = rose(exp, *m, figure, rules.max_increase.of(*m)) {
                    reasons.push(reason);
                }
            }
            experiments.push(ExperimentDelta {
                contender: exp.contender.clone(),
                dataset: exp.dataset.clone(),
                baseline: bm,
                candidate: cm,
                delta,
                matched,
                regressed,
                test,
                cost_usd,
                tokens,
                latency_p50_s,
            });
        } else if baseline.is_some() {
            experiments.push(ExperimentDelta {
                contender: exp.contender.clone(),
                dataset: exp.dataset.clone(),
                baseline: None,
                candidate: exp.score,
                delta: None,
                matched: 0,
                regressed: false,
                test: None,
                cost_usd: Measured::default(),
                tokens: Measured::default(),
                latency_p50_s: Measured::default(),
            });
        }
    }
    // Experiments the baseline ran and this run did not: every case is removed.
    if let Some(source) = base_source {
        for ((k, d), (j, b)) in &base_exps {
            if !seen.contains(&(k.clone(), d.clone())) {
                for bc in source.cases(*j)? {
                    let (_, bc) = bc?;
                    if !never_ran(b, &bc) {
                        cases.push(removed(b, &bc));
                    }
                }
            }
        }
    }

    Ok(Comparison {
        baseline: baseline.map(|(_, _, info)| info),
        tolerance,
        experiments,
        cases,
        unchanged,
        stopped,
        first_baseline: false,
        verdict: Verdict {
            passed: reasons.is_empty(),
            reasons,
        },
    })
}

/// A baseline experiment's cases as this run's are compared: read in order while the ids
/// agree, else found by id ([`Index`]).
struct Walk<'a> {
    source: CaseSource<'a>,
    experiment: usize,
    ahead: std::iter::Peekable<crate::results::SourceCases<'a>>,
    index: Option<(Index<'a>, crate::results::CaseReader<'a>)>,
}

impl<'a> Walk<'a> {
    fn new(source: CaseSource<'a>, experiment: usize) -> Result<Walk<'a>> {
        Ok(Walk {
            source,
            experiment,
            ahead: source.cases(experiment)?.peekable(),
            index: None,
        })
    }

    /// The baseline case whose id is `id`, with its position.
    fn find(&mut self, id: &str) -> Result<Option<(usize, std::borrow::Cow<'a, CaseResult>)>> {
        let ahead = &mut self.ahead;
        let in_step = match ahead.peek() {
            Some(Ok((_, b))) => b.case == id,
            // Taken, so that its error is the answer.
            Some(Err(_)) => true,
            None => false,
        };
        if in_step {
            return ahead.next().transpose();
        }
        let (index, reader) = match &mut self.index {
            Some(built) => built,
            none => {
                let (source, j) = (self.source, self.experiment);
                none.insert((Index::build(source, j)?, source.reader(j)?))
            }
        };
        let found = index.find(id, reader)?;
        // Found further on: the walk goes on from there (what it passes is found by id,
        // or is removed).
        if let Some((at, _)) = &found {
            while let Some(Ok((next, _))) = ahead.peek() {
                if *next > *at {
                    break;
                }
                ahead.next();
            }
        }
        Ok(found)
    }
}

/// The reason an experiment's `figure` rose past the `allowed` percentage, if it did; an
/// unknown side is not compared (the gate's caller says so: [`super::Notice`]).
fn rose(
    exp: &ExperimentResult,
    measure: Measure,
    figure: Measured,
    allowed: Option<f64>,
) -> Option<Reason> {
    let allowed = allowed?;
    let change = figure.change()?;
    (change * 100.0 > allowed + EPS).then(|| Reason::Rose {
        contender: exp.contender.clone(),
        dataset: exp.dataset.clone(),
        measure,
        baseline: figure.baseline.unwrap_or(0.0),
        candidate: figure.candidate.unwrap_or(0.0),
        allowed,
    })
}

/// The paired test of one experiment's shared cases (baseline score, candidate score,
/// weight): McNemar's exact test when every case scored 0 or 1 once on both sides, else the
/// sign-flip test on the cases' means. A drop `past` the tolerance whose p-value is not
/// under alpha is inconclusive, with the tries that would likely decide it.
fn paired_test(
    pairs: &[(f64, f64)],
    within: f64,
    binary: bool,
    k: usize,
    past: bool,
    stat: Stat,
) -> Option<PairedTest> {
    use crate::results::stats;
    let p_value = stats::paired_p(pairs, binary)?;
    let inconclusive = past && p_value >= stat.alpha;
    let diffs: Vec<f64> = pairs.iter().map(|(b, c)| c - b).collect();
    Some(PairedTest {
        method: if binary { "mcnemar" } else { "sign-flip" }.into(),
        p_value,
        alpha: stat.alpha,
        k,
        inconclusive,
        repeats_to_decide: inconclusive
            .then(|| stats::repeats_to_decide(&diffs, within, k, stat.alpha))
            .flatten(),
    })
}

/// How `run` stopped early (`aborted`, `interrupted`), and how many of its planned case
/// runs never ran; `None` for a completed run.
pub fn stopped(run: &RunResult) -> Option<Stopped> {
    if run.run.status == RunStatus::Completed {
        return None;
    }
    let planned = planned(run, CaseSource::Run(run)).expect("a run's own cases read in memory");
    stopped_in(run, CaseSource::Run(run), &planned)
}

fn stopped_in(
    run: &RunResult,
    cases: CaseSource<'_>,
    planned: &HashSet<(String, String)>,
) -> Option<Stopped> {
    (run.run.status != RunStatus::Completed).then(|| {
        let ran: usize = (0..run.experiments.len()).map(|i| cases.len(i)).sum();
        Stopped {
            status: run.run.status,
            not_run: planned.len().saturating_sub(ran),
            planned: planned.len(),
        }
    })
}

/// The case runs the run planned: (contender key, `dataset/case`), from its settings (held
/// in memory: only a run that stopped early needs it).
fn planned(run: &RunResult, cases: CaseSource<'_>) -> Result<HashSet<(String, String)>> {
    let settings = &run.run.settings;
    let mut out = HashSet::new();
    for c in &settings.contenders {
        for k in settings.cases.iter() {
            out.insert((c.key(), k.into_owned()));
        }
    }
    // A run whose settings do not list its plan: what it ran is all it planned.
    for (i, e) in run.experiments.iter().enumerate() {
        for c in cases.cases(i)? {
            let (_, c) = c?;
            out.insert((e.contender.key(), format!("{}/{}", e.dataset, c.case)));
        }
    }
    Ok(out)
}

/// Rule (4) for a run with no baseline (`run`, `compare`), errors left out (each is its
/// own failure, reported apart): the cases failing their thresholds and the experiments
/// missing the run's limits, one reason each, as `check` gives them.
pub fn threshold_failures(run: &RunResult) -> Vec<Reason> {
    let limits = Limits::of(run);
    let mut out = Vec::new();
    for exp in &run.experiments {
        if limits.each_case_gates() {
            for c in &exp.cases {
                if c.error.is_none() && c.passed == Some(false) {
                    out.push(Reason::BelowThreshold {
                        at: CaseRef {
                            contender: exp.contender.clone(),
                            dataset: exp.dataset.clone(),
                            case: c.case.clone(),
                            reply_error: c.reply_error.clone(),
                            said: c.unusable_said(),
                        },
                        failed: c.failed_thresholds.clone(),
                    });
                }
            }
        }
        out.extend(limits.misses(exp));
    }
    out
}

fn case_delta(
    exp: &ExperimentResult,
    b: Option<&CaseResult>,
    c: &CaseResult,
    has_baseline: bool,
    each_case_gates: bool,
) -> CaseDelta {
    let comparable = b.is_some_and(|b| crate::fingerprint::same(&b.fingerprint, &c.fingerprint));
    let status = if c.error.is_some() {
        CaseStatus::Errored
    } else if has_baseline && b.is_none() {
        CaseStatus::New
    } else if b.is_some() && !comparable {
        CaseStatus::Changed
    } else if let Some(b) = b {
        // Rule 2 over tries: every baseline try met the thresholds and most tries now fail
        // (one try each: passed, then failed).
        if b.passed == Some(true) && b.passes() == b.tries() && c.passed == Some(false) {
            CaseStatus::Regressed
        } else {
            match (b.score, c.score) {
                (Some(bs), Some(cs)) if cs > bs + EPS => CaseStatus::Improved,
                (Some(bs), Some(cs)) if cs < bs - EPS => CaseStatus::Declined,
                // The baseline errored and this run scored: an improvement.
                (None, Some(_)) => CaseStatus::Improved,
                _ => CaseStatus::Unchanged,
            }
        }
    } else {
        // No baseline at all: only failures are worth listing.
        CaseStatus::Unchanged
    };
    let gated = matches!(status, CaseStatus::Regressed | CaseStatus::Errored)
        || (each_case_gates && c.passed == Some(false));
    let diagnostics = c
        .diagnostics
        .iter()
        .filter(|d| !b.is_some_and(|b| b.diagnostics.contains(d)))
        .cloned()
        .collect();
    CaseDelta {
        contender: exp.contender.clone(),
        dataset: exp.dataset.clone(),
        case: c.case.clone(),
        status,
        baseline_score: b.and_then(|b| b.score),
        candidate_score: c.score,
        baseline_passed: b.and_then(|b| b.passed),
        candidate_passed: c.passed,
        failed_thresholds: c.failed_thresholds.clone(),
        error: c.error.as_ref().map(|e| e.message.clone()),
        error_kind: c.error.as_ref().map(|e| e.kind),
        diagnostics,
        baseline_output: b.and_then(|b| b.output.clone()),
        candidate_output: c.output.clone(),
        reply_error: c.reply_error.clone(),
        said: c.unusable_said(),
        components_diff: b.and_then(|b| {
            crate::results::components::diff(b.components.as_deref(), c.components.as_deref())
        }),
        gated,
    }
}

fn removed(exp: &ExperimentResult, bc: &CaseResult) -> CaseDelta {
    CaseDelta {
        contender: exp.contender.clone(),
        dataset: exp.dataset.clone(),
        case: bc.case.clone(),
        status: CaseStatus::Removed,
        baseline_score: bc.score,
        candidate_score: None,
        baseline_passed: bc.passed,
        candidate_passed: None,
        failed_thresholds: vec![],
        error: None,
        error_kind: None,
        diagnostics: vec![],
        baseline_output: bc.output.clone(),
        candidate_output: None,
        reply_error: None,
        said: None,
        components_diff: None,
        gated: false,
    }
}

fn case_reason(d: &CaseDelta, base: &str) -> Reason {
    let at = CaseRef {
        contender: d.contender.clone(),
        dataset: d.dataset.clone(),
        case: d.case.clone(),
        reply_error: d.reply_error.clone(),
        said: d.said.clone(),
    };
    match d.status {
        CaseStatus::Errored => Reason::CaseErrored {
            at,
            error: d.error.clone(),
            kind: d.error_kind,
        },
        CaseStatus::Regressed => Reason::CaseRegressed {
            at,
            baseline: base.to_string(),
            failed: d.failed_thresholds.clone(),
        },
        // Gated only under --fail-on-case-regression; a threshold failure says so first.
        CaseStatus::Declined if d.candidate_passed != Some(false) => Reason::CaseDeclined {
            at,
            baseline: d.baseline_score,
            candidate: d.candidate_score,
        },
        _ => Reason::BelowThreshold {
            at,
            failed: d.failed_thresholds.clone(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::testing::{case, run};

    /// The reasons in the words every report gives them.
    fn words(reasons: &[Reason]) -> Vec<String> {
        reasons
            .iter()
            .map(crate::report::verdict::reason_text)
            .collect()
    }

    fn info(b: &RunResult) -> BaselineInfo {
        BaselineInfo {
            id: b.run.id.clone(),
            branch: b.run.branch.clone(),
            commit: b.run.commit.clone(),
            started_at: b.run.started_at,
            reference: "main".into(),
        }
    }

    fn check(base: &RunResult, cand: &RunResult, tol: f64) -> Comparison {
        compare(Some((base, info(base))), cand, tol)
    }

    /// [`compare`], as every test here makes it: twice, see [`compare_with`].
    fn compare(
        baseline: Option<(&RunResult, BaselineInfo)>,
        run: &RunResult,
        tolerance: f64,
    ) -> Comparison {
        compare_with(baseline, run, Rules::tolerance(tolerance))
    }

    /// Every comparison of these tests is made twice, the runs held whole and the runs'
    /// cases in case logs (each baseline case found through the index on disk, the
    /// figures for the medians and the paired test in temporary files): the two must be
    /// the same, field for field.
    fn compare_with(
        baseline: Option<(&RunResult, BaselineInfo)>,
        run: &RunResult,
        rules: Rules,
    ) -> Comparison {
        let whole = super::compare_with(baseline.clone(), run, rules);
        let (bare, log) = crate::history::logged(run).expect("logged");
        let base = baseline.map(|(b, info)| (crate::history::logged(b).expect("logged"), info));
        let streamed = compare_streamed(
            base.as_ref()
                .map(|((b, log), info)| (b, CaseSource::Log(log), info.clone())),
            &bare,
            CaseSource::Log(&log),
            rules,
        )
        .expect("streamed");
        assert_eq!(streamed, whole, "the comparison of case logs differs");
        whole
    }

    fn status(c: &Comparison, id: &str) -> Option<CaseStatus> {
        c.cases.iter().find(|d| d.case == id).map(|d| d.status)
    }

    const T0: &str = "2026-01-01T00:00:00Z";

    #[test]
    fn a_stopped_run_says_so_and_lists_no_unrun_case_as_removed() {
        let all = || {
            vec![
                case("a", Some(0.9), Some(true)),
                case("b", Some(0.9), Some(true)),
                case("c", Some(0.9), Some(true)),
            ]
        };
        let base = run("base", "main", T0, all());
        let mut cand = run("cand", "f", T0, vec![case("a", Some(0.9), Some(true))]);
        cand.run.status = RunStatus::Aborted;
        cand.run.settings = serde_json::from_value(serde_json::json!({
            "contenders": [cand.experiments[0].contender.clone()],
            "cases": ["tax/a", "tax/b", "tax/c"],
        }))
        .expect("settings");
        let c = check(&base, &cand, 0.02);
        assert!(!c.verdict.passed);
        assert_eq!(c.stopped.as_ref().map(|s| s.not_run), Some(2));
        assert!(c.cases.iter().all(|d| d.status != CaseStatus::Removed));
        assert!(!c.compared_nothing());
        assert!(
            crate::report::verdict::verdict_text(&cand, Some(&c))
                .starts_with("evals check: stopped early (aborted): 2 of 3 cases did not run"),
            "{}",
            crate::report::verdict::verdict_text(&cand, Some(&c))
        );
    }

    #[test]
    fn a_stopped_run_whose_every_ran_case_errored_still_compared_them() {
        let base = run(
            "base",
            "main",
            T0,
            vec![
                case("a", Some(0.9), Some(true)),
                case("b", Some(0.9), Some(true)),
            ],
        );
        let mut errored = case("a", None, None);
        errored.error = crate::results::testing::error("HTTP 400");
        let mut cand = run("cand", "f", T0, vec![errored]);
        cand.run.status = RunStatus::Aborted;
        cand.run.settings = serde_json::from_value(serde_json::json!({
            "contenders": [cand.experiments[0].contender.clone()],
            "cases": ["tax/a", "tax/b"],
        }))
        .expect("settings");
        let c = check(&base, &cand, 0.02);
        assert_eq!(c.cases[0].status, CaseStatus::Errored);
        assert!(!c.compared_nothing(), "a was compared: it errors now");
        // A stopped run that ran nothing: the verdict says so, not "shares no case".
        cand.experiments[0].cases.clear();
        assert!(!check(&base, &cand, 0.02).compared_nothing());
        // A baseline of other cases: nothing compared.
        let other = run("o", "main", T0, vec![case("z", Some(0.9), Some(true))]);
        let mut fresh = case("a", None, None);
        fresh.error = crate::results::testing::error("HTTP 400");
        let lone = run("l", "f", T0, vec![fresh]);
        assert!(check(&other, &lone, 0.02).compared_nothing());
    }

    #[test]
    fn identical_runs_pass() {
        let b = run("b", "main", T0, vec![case("a", Some(0.8), Some(true))]);
        let c = check(&b, &b.clone(), 0.02);
        assert!(c.verdict.passed, "{:?}", c.verdict.reasons);
        assert_eq!(c.unchanged, 1);
        assert!(c.cases.is_empty());
    }

    #[test]
    fn rule1_mean_drop_beyond_tolerance_regresses() {
        let b = run(
            "b",
            "main",
            T0,
            vec![case("a", Some(0.8), None), case("b", Some(0.8), None)],
        );
        let n = run(
            "n",
            "f",
            T0,
            vec![case("a", Some(0.7), None), case("b", Some(0.8), None)],
        );
        let c = check(&b, &n, 0.02);
        assert!(!c.verdict.passed);
        assert!(c.experiments[0].regressed);
        assert!(
            words(&c.verdict.reasons)[0].contains("mean score fell 5.0 points"),
            "{:?}",
            c.verdict.reasons
        );
        assert_eq!(status(&c, "a"), Some(CaseStatus::Declined));
        // A looser tolerance lets the same drop through.
        assert!(check(&b, &n, 0.1).verdict.passed);
    }

    #[test]
    fn rule1_drop_of_exactly_the_tolerance_passes() {
        let b = run("b", "main", T0, vec![case("a", Some(0.80), None)]);
        let n = run("n", "f", T0, vec![case("a", Some(0.78), None)]);
        assert!(check(&b, &n, 0.02).verdict.passed);
        let n = run("n", "f", T0, vec![case("a", Some(0.779), None)]);
        assert!(!check(&b, &n, 0.02).verdict.passed);
    }

    #[test]
    fn rule2_a_case_that_stops_meeting_thresholds_regresses_whatever_the_tolerance() {
        let b = run("b", "main", T0, vec![case("a", Some(0.81), Some(true))]);
        let mut fail = case("a", Some(0.80), Some(false));
        fail.failed_thresholds = vec!["accuracy 0.80 < 0.81".into()];
        let n = run("n", "f", T0, vec![fail]);
        let c = check(&b, &n, 0.5);
        assert!(!c.verdict.passed);
        assert_eq!(status(&c, "a"), Some(CaseStatus::Regressed));
        assert!(
            words(&c.verdict.reasons)[0]
                .contains("met its thresholds on main, now fails (accuracy 0.80 < 0.81)")
        );
    }

    #[test]
    fn rule3_a_case_that_now_errors_regresses() {
        let b = run("b", "main", T0, vec![case("a", Some(1.0), Some(true))]);
        let mut err = case("a", None, None);
        err.error = crate::results::testing::error("cassette miss: no recording for this request");
        let c = check(&b, &run("n", "f", T0, vec![err]), 0.02);
        assert!(!c.verdict.passed);
        assert_eq!(status(&c, "a"), Some(CaseStatus::Errored));
        assert!(words(&c.verdict.reasons)[0].contains("cassette miss"));
    }

    #[test]
    fn rule4_thresholds_and_errors_gate_without_a_baseline() {
        let ok = run("n", "f", T0, vec![case("a", Some(1.0), Some(true))]);
        let c = compare(None, &ok, 0.02);
        assert!(c.verdict.passed);
        assert!(c.baseline.is_none());
        let n = run(
            "n",
            "f",
            T0,
            vec![
                case("a", Some(1.0), Some(true)),
                case("b", Some(0.1), Some(false)),
            ],
        );
        let c = compare(None, &n, 0.02);
        assert!(!c.verdict.passed);
        assert_eq!(c.verdict.reasons.len(), 1);
        assert!(
            words(&c.verdict.reasons)[0]
                .contains("fake/echo [temp 0] · tax · b: fails its thresholds")
        );
    }

    #[test]
    fn run_and_compare_gate_by_the_same_rule_as_check_less_its_errors() {
        let mut err = case("e", None, None);
        err.error = crate::results::testing::error("HTTP 500");
        let mut fail = case("b", Some(0.1), Some(false));
        fail.failed_thresholds = vec!["accuracy 0.1 < 0.8".into()];
        let n = run(
            "n",
            "f",
            T0,
            vec![case("a", Some(1.0), Some(true)), fail, err],
        );
        let checked = words(&compare(None, &n, 0.02).verdict.reasons);
        assert_eq!(checked.len(), 2, "{checked:?}");
        assert_eq!(
            words(&threshold_failures(&n)),
            vec!["fake/echo [temp 0] · tax · b: fails its thresholds (accuracy 0.1 < 0.8)"]
        );
        assert!(checked.contains(&words(&threshold_failures(&n))[0]));
    }

    #[test]
    fn min_pass_rate_gates_the_share_and_min_score_the_mean() {
        let mut n = run(
            "n",
            "f",
            T0,
            vec![
                case("a", Some(1.0), Some(true)),
                case("b", Some(1.0), Some(true)),
                case("c", Some(0.4), Some(false)),
            ],
        );
        let with = |n: &mut RunResult, limits: serde_json::Value| {
            n.run.settings =
                serde_json::from_value(serde_json::json!({ "limits": limits })).expect("settings");
            (
                words(&threshold_failures(n)),
                words(&compare(None, n, 0.02).verdict.reasons),
            )
        };
        // 2 of 3 pass: enough for 0.6, and the failing case no longer gates alone.
        let (failed, checked) = with(&mut n, serde_json::json!({"min_pass_rate": 0.6}));
        assert!(
            failed.is_empty() && checked.is_empty(),
            "{failed:?} {checked:?}"
        );
        let (failed, checked) = with(&mut n, serde_json::json!({"min_pass_rate": 0.7}));
        assert_eq!(
            failed,
            vec![
                "fake/echo [temp 0] · tax: 66.7% of cases passed (2 of 3), below --min-pass-rate 70.0%"
            ]
        );
        assert_eq!(checked, failed);
        // The mean is 0.8: --min-score 0.8 passes (inclusive), 0.81 does not.
        let (failed, _) = with(
            &mut n,
            serde_json::json!({"min_pass_rate": 0.6, "min_score": 0.8}),
        );
        assert!(failed.is_empty(), "{failed:?}");
        let (failed, _) = with(
            &mut n,
            serde_json::json!({"min_pass_rate": 0.6, "min_score": 0.81}),
        );
        assert_eq!(
            failed,
            vec!["fake/echo [temp 0] · tax: mean score 80.0% is below --min-score 81.0%"]
        );
        // --min-score alone leaves each case to pass.
        let (failed, _) = with(&mut n, serde_json::json!({"min_score": 0.5}));
        assert_eq!(failed.len(), 1);
        assert!(
            failed[0].contains("· c: fails its thresholds"),
            "{failed:?}"
        );
    }

    #[test]
    fn rule4_a_case_failing_in_both_runs_still_fails() {
        let b = run("b", "main", T0, vec![case("a", Some(0.1), Some(false))]);
        let c = check(&b, &b.clone(), 0.02);
        assert!(!c.verdict.passed);
        assert_eq!(status(&c, "a"), Some(CaseStatus::Unchanged));
    }

    #[test]
    fn cases_reordered_added_and_removed_are_each_matched_by_their_id() {
        let ids = |r: &[&str], score: f64| -> Vec<CaseResult> {
            r.iter()
                .map(|id| case(id, Some(score), Some(true)))
                .collect()
        };
        let b = run(
            "b",
            "main",
            T0,
            ids(&["a", "b", "c", "d", "e", "f", "g", "h"], 0.5),
        );
        // `b` removed, `x` added, `g` before `c`, `a` last: in step, out of it, back in.
        let n = run(
            "n",
            "f",
            T0,
            ids(&["x", "c", "g", "d", "e", "f", "h", "a", "y"], 0.75),
        );
        let c = check(&b, &n, 0.0);
        assert_eq!(c.experiments[0].matched, 7);
        for id in ["a", "c", "d", "e", "f", "g", "h"] {
            assert_eq!(status(&c, id), Some(CaseStatus::Improved), "{id}");
        }
        assert_eq!(status(&c, "b"), Some(CaseStatus::Removed));
        assert_eq!(
            (status(&c, "x"), status(&c, "y")),
            (Some(CaseStatus::New), Some(CaseStatus::New))
        );
        assert_eq!(c.cases.len(), 10);
    }

    #[test]
    fn new_changed_removed_and_improved_are_reported_not_gated() {
        let b = run(
            "b",
            "main",
            T0,
            vec![
                case("same", Some(0.5), Some(true)),
                case("gone", Some(1.0), Some(true)),
                case("edited", Some(1.0), Some(true)),
                case("better", Some(0.5), Some(true)),
            ],
        );
        let mut edited = case("edited", Some(0.0), Some(true));
        edited.fingerprint = "fp-edited-v2".into();
        let n = run(
            "n",
            "f",
            T0,
            vec![
                case("same", Some(0.5), Some(true)),
                edited,
                case("better", Some(0.9), Some(true)),
                case("fresh", Some(0.0), Some(true)),
            ],
        );
        let c = check(&b, &n, 0.0);
        assert!(c.verdict.passed, "{:?}", c.verdict.reasons);
        assert_eq!(status(&c, "gone"), Some(CaseStatus::Removed));
        assert_eq!(status(&c, "edited"), Some(CaseStatus::Changed));
        assert_eq!(status(&c, "better"), Some(CaseStatus::Improved));
        assert_eq!(status(&c, "fresh"), Some(CaseStatus::New));
        // The mean is over matched cases only: the changed case's 1.0 → 0.0 does not count.
        assert_eq!(c.experiments[0].matched, 2);
        assert!(c.experiments[0].delta.is_some_and(|d| d > 0.0));
    }

    #[test]
    fn a_baseline_with_the_old_cut_fingerprints_still_compares_case_by_case() {
        let full = |id: &str| crate::fingerprint::of_json(&serde_json::json!(id));
        let cut = |mut c: CaseResult| {
            c.fingerprint = full(&c.case)[..16].to_string();
            c
        };
        let whole = |mut c: CaseResult| {
            c.fingerprint = full(&c.case);
            c
        };
        let b = run(
            "b",
            "main",
            T0,
            vec![
                cut(case("same", Some(0.5), Some(true))),
                cut(case("better", Some(0.5), Some(true))),
            ],
        );
        let n = run(
            "n",
            "f",
            T0,
            vec![
                whole(case("same", Some(0.5), Some(true))),
                whole(case("better", Some(0.9), Some(true))),
            ],
        );
        let c = check(&b, &n, 0.0);
        assert_eq!(status(&c, "better"), Some(CaseStatus::Improved));
        assert_ne!(status(&c, "same"), Some(CaseStatus::Changed));
        assert_eq!(c.experiments[0].matched, 2);
    }

    #[test]
    fn fail_on_case_decline_gates_any_drop_of_a_compared_case() {
        let b = run(
            "b",
            "main",
            T0,
            vec![
                case("a", Some(0.8), Some(true)),
                case("b", Some(0.8), Some(true)),
            ],
        );
        let n = run(
            "n",
            "f",
            T0,
            vec![
                case("a", Some(0.79), Some(true)),
                case("b", Some(0.9), Some(true)),
            ],
        );
        assert!(check(&b, &n, 0.5).verdict.passed);
        let strict = Rules::new(0.5, true).unwrap();
        let c = compare_with(Some((&b, info(&b))), &n, strict);
        assert!(!c.verdict.passed);
        assert_eq!(
            words(&c.verdict.reasons),
            [
                "fake/echo [temp 0] · tax · a: score fell 1.0 points (80.0% → 79.0%); --fail-on-case-regression fails any drop"
            ]
        );
        assert_eq!(status(&c, "b"), Some(CaseStatus::Improved));
    }

    /// A case tried as often as `tries` says, each try's score given, passing a try at
    /// `min` or more; merged as the runner merges them (mean score, most tries passing).
    fn tried(id: &str, tries: &[f64], min: f64) -> CaseResult {
        let repeats: Vec<crate::results::Repeat> = tries
            .iter()
            .map(|&s| crate::results::Repeat {
                score: Some(s),
                passed: Some(s >= min),
                error: None,
            })
            .collect();
        let passes = repeats.iter().filter(|r| r.passed == Some(true)).count();
        let mean = tries.iter().sum::<f64>() / tries.len() as f64;
        let mut c = case(id, Some(mean), Some(2 * passes >= tries.len()));
        c.repeats = repeats;
        c
    }

    fn forty(f: impl Fn(usize) -> Vec<f64>) -> Vec<CaseResult> {
        (0..40)
            .map(|i| tried(&format!("c{i}"), &f(i), 0.5))
            .collect()
    }

    const T1: &str = "2026-01-02T00:00:00Z";

    #[test]
    fn a_drop_past_the_tolerance_on_40_consistent_cases_is_a_regression_and_from_one_noisy_case_inconclusive()
     {
        let b = run("b", "main", T0, forty(|_| vec![1.0, 1.0, 1.0]));
        // Every case 2.5 points lower on every try: the mean falls 2.5 points.
        let consistent = run("n", "f", T1, forty(|_| vec![0.975, 0.975, 0.975]));
        let c = check(&b, &consistent, 0.02);
        let t = c.experiments[0].test.clone().expect("tested: K = 3");
        assert!(t.p_value < 0.05, "{t:?}");
        assert_eq!(
            (t.method.as_str(), t.k, t.inconclusive),
            ("sign-flip", 3, false)
        );
        assert!(c.experiments[0].regressed);
        assert!(!c.verdict.passed);
        // The same 2.5-point fall, all of it from one case of the 40: a coin flip.
        let noisy = run(
            "n",
            "f",
            T1,
            forty(|i| {
                if i == 7 {
                    vec![0.0, 0.0, 0.0]
                } else {
                    vec![1.0; 3]
                }
            }),
        );
        let c = check(&b, &noisy, 0.02);
        let d = &c.experiments[0];
        assert!((d.delta.unwrap() + 0.025).abs() < 1e-9);
        let t = d.test.clone().expect("tested");
        assert_eq!(t.p_value, 0.5);
        assert!(t.inconclusive && !d.regressed);
        // Its tries all alike: more tries would not decide it, more cases would.
        assert_eq!(t.repeats_to_decide, None);
        // Not gated by default (case c7 fails its tries: rule 4 aside, see below) ...
        let rule1: Vec<&Reason> = c
            .verdict
            .reasons
            .iter()
            .filter(|r| {
                matches!(
                    r,
                    Reason::ExperimentFell { .. } | Reason::Inconclusive { .. }
                )
            })
            .collect();
        assert!(rule1.is_empty(), "{rule1:?}");
        // ... and gated with --inconclusive fail, the p-value and the tries in its words.
        let strict = Rules::tolerance(0.02)
            .with_stat(Stat {
                inconclusive_fails: true,
                ..Stat::default()
            })
            .unwrap();
        let c = compare_with(Some((&b, info(&b))), &noisy, strict);
        let said = words(&c.verdict.reasons);
        let undecided: Vec<&String> = said.iter().filter(|w| w.contains("inconclusive")).collect();
        assert_eq!(undecided.len(), 1, "{said:?}");
        assert!(
            undecided[0].starts_with(
                "fake/echo [temp 0] · tax: inconclusive: mean score fell 2.5 points (100.0% → 97.5%), past the tolerance but not significant (p = 0.500, alpha 0.05); more tries would not decide it (the cases differ, not their tries); --inconclusive fail gates it"
            ),
            "{}",
            undecided[0]
        );
        assert!(undecided[0].ends_with("--inconclusive fail gates it"));
    }

    #[test]
    fn the_verdict_says_2_regressions_1_inconclusive() {
        let mut b = run("b", "main", T0, forty(|_| vec![1.0, 1.0, 1.0]));
        let mut other = b.experiments[0].clone();
        other.dataset = "other".into();
        b.experiments.push(other);
        // tax: every case lower (a regression of the mean) and c0 now fails 2 of 3 tries
        // (it passed all 3 on main: a case regression).
        let mut n = run(
            "n",
            "f",
            T1,
            forty(|i| {
                if i == 0 {
                    vec![1.0, 0.2, 0.2]
                } else {
                    vec![0.95; 3]
                }
            }),
        );
        // other: one case of 20 fell half-way on its mean, its tries all over the place
        // (flaky, still passing on most): inconclusive.
        let twenty = |f: &dyn Fn(usize) -> Vec<f64>| -> Vec<CaseResult> {
            (0..20)
                .map(|i| tried(&format!("c{i}"), &f(i), 0.5))
                .collect()
        };
        b.experiments[1].cases = twenty(&|_| vec![1.0; 3]);
        let mut other = n.experiments[0].clone();
        other.dataset = "other".into();
        other.cases = twenty(&|i| {
            if i == 7 {
                vec![1.0, 0.0, 0.5]
            } else {
                vec![1.0; 3]
            }
        });
        n.experiments.push(other);
        let c = check(&b, &n, 0.02);
        assert_eq!(status(&c, "c0"), Some(CaseStatus::Regressed));
        let said = crate::report::verdict::Terminal::of(&n, &c);
        assert!(
            said.line == "evals check: 2 regressions, 1 inconclusive in tax-intake (main → f)",
            "{}",
            said.line
        );
        assert!(
            said.reasons
                .iter()
                .any(|r| r.starts_with("  fake/echo [temp 0] · other: inconclusive:")),
            "{:?}",
            said.reasons
        );
    }

    #[test]
    fn a_case_passing_2_of_3_tries_is_flaky_not_a_regression_and_rule_2_reads_every_try() {
        let b = run("b", "main", T0, vec![tried("a", &[1.0, 1.0, 1.0], 0.5)]);
        let flaky = tried("a", &[1.0, 0.0, 1.0], 0.5);
        assert!(flaky.flaky() && !flaky.mostly_fails());
        assert_eq!((flaky.passes(), flaky.tries()), (2, 3));
        let n = run("n", "f", T1, vec![flaky]);
        let c = check(&b, &n, 1.0);
        assert_ne!(status(&c, "a"), Some(CaseStatus::Regressed));
        assert!(c.verdict.passed, "{:?}", words(&c.verdict.reasons));
        // Most tries fail now: a regression.
        let n = run("n", "f", T1, vec![tried("a", &[1.0, 0.0, 0.0], 0.5)]);
        assert_eq!(
            status(&check(&b, &n, 1.0), "a"),
            Some(CaseStatus::Regressed)
        );
        // The baseline itself was flaky: it never met its thresholds on every try.
        let b = run("b", "main", T0, vec![tried("a", &[1.0, 0.0, 1.0], 0.5)]);
        assert_ne!(
            status(&check(&b, &n, 1.0), "a"),
            Some(CaseStatus::Regressed)
        );
    }

    #[test]
    fn once_per_case_the_gate_is_as_before_unless_stat_asks_and_pass_rates_get_mcnemar() {
        let b = run("b", "main", T0, forty(|_| vec![1.0]));
        let n = run("n", "f", T1, forty(|i| vec![if i < 5 { 0.0 } else { 1.0 }]));
        let c = check(&b, &n, 0.02);
        assert_eq!(c.experiments[0].test, None);
        assert!(c.experiments[0].regressed);
        let stat = Rules::tolerance(0.02)
            .with_stat(Stat {
                force: true,
                ..Stat::default()
            })
            .unwrap();
        let c = compare_with(Some((&b, info(&b))), &n, stat);
        let t = c.experiments[0].test.clone().unwrap();
        // 5 lost, none gained: 1/32.
        assert_eq!((t.method.as_str(), t.p_value), ("mcnemar", 1.0 / 32.0));
        assert!(c.experiments[0].regressed);
        assert!(
            Rules::tolerance(0.02)
                .with_stat(Stat {
                    alpha: 1.5,
                    ..Stat::default()
                })
                .is_err()
        );
    }

    /// A case that spent `cost` dollars, `tokens` tokens (half in, half out) in `latency` s.
    fn spent(id: &str, cost: Option<f64>, tokens: u64, latency: f64) -> CaseResult {
        let mut c = case(id, Some(1.0), Some(true));
        c.usage = crate::results::Usage {
            input_tokens: Some(tokens / 2),
            output_tokens: Some(tokens - tokens / 2),
            cost_usd: cost,
            ..Default::default()
        };
        c.latency_s = Some(latency);
        c
    }

    #[test]
    fn a_cost_rise_past_the_allowed_percentage_is_a_typed_regression_in_words() {
        let b = run(
            "b",
            "main",
            T0,
            vec![
                spent("a", Some(0.0206), 1000, 1.0),
                spent("b", Some(0.0206), 1000, 2.0),
            ],
        );
        // 23% more dollars, 30% more tokens, the p50 latency 1.5 s → 1.65 s (+10%).
        let n = run(
            "n",
            "f",
            T1,
            vec![
                spent("a", Some(0.02535), 1300, 1.1),
                spent("b", Some(0.02535), 1300, 2.2),
            ],
        );
        let gate = |rules: Rules| compare_with(Some((&b, info(&b))), &n, rules);
        // Not gated: the figures are there, the check passes.
        let c = gate(Rules::tolerance(0.02));
        assert!(c.verdict.passed, "{:?}", c.verdict.reasons);
        let d = &c.experiments[0];
        assert_eq!(d.cost_usd.cases, 2);
        assert!((d.cost_usd.change().unwrap() - 0.2306).abs() < 1e-3);
        assert_eq!(
            (d.tokens.baseline, d.tokens.candidate),
            (Some(2000.0), Some(2600.0))
        );
        assert_eq!(d.latency_p50_s.baseline, Some(1.5));
        assert_eq!(
            crate::report::verdict::moved(&c),
            ["cost +23%", "tokens +30%"]
        );
        // --max-cost-increase 10: a regression, its reason typed and worded.
        let c = gate(Rules::tolerance(0.02).max_cost_increase(10.0).unwrap());
        assert!(!c.verdict.passed);
        assert!(matches!(
            c.verdict.reasons.as_slice(),
            [Reason::Rose {
                measure: Measure::Cost,
                ..
            }]
        ));
        assert_eq!(
            words(&c.verdict.reasons),
            [
                "fake/echo [temp 0] · tax: cost rose 23% (0.0412 → 0.0507 USD), more than the 10% allowed"
            ]
        );
        assert_eq!(
            crate::report::verdict::Terminal::of(&n, &c).line,
            "evals check: 1 regression in tax-intake (main → f)"
        );
        // 50% allowed: passes.
        assert!(
            gate(Rules::tolerance(0.02).max_cost_increase(50.0).unwrap())
                .verdict
                .passed
        );
        // Tokens: 30% over 20 fails, over 30 passes (inclusive).
        let c = gate(Rules::tolerance(0.02).max_tokens_increase(20.0).unwrap());
        assert_eq!(
            words(&c.verdict.reasons),
            [
                "fake/echo [temp 0] · tax: tokens rose 30% (2,000 → 2,600 tokens), more than the 20% allowed"
            ]
        );
        assert!(
            gate(Rules::tolerance(0.02).max_tokens_increase(30.0).unwrap())
                .verdict
                .passed
        );
        // Latency: +10% over 5 fails, over 10 passes.
        let c = gate(Rules::tolerance(0.02).max_latency_increase(5.0).unwrap());
        assert_eq!(
            words(&c.verdict.reasons),
            [
                "fake/echo [temp 0] · tax: p50 latency rose 10% (1.50 → 1.65 s), more than the 5% allowed"
            ]
        );
        assert!(
            gate(Rules::tolerance(0.02).max_latency_increase(10.0).unwrap())
                .verdict
                .passed
        );
    }

    #[test]
    fn an_unknown_cost_on_either_side_is_never_taken_for_zero() {
        let b = run(
            "b",
            "main",
            T0,
            vec![spent("a", Some(0.01), 100, 1.0), spent("b", None, 100, 1.0)],
        );
        let n = run(
            "n",
            "f",
            T1,
            vec![
                spent("a", Some(0.05), 100, 1.0),
                spent("b", Some(0.05), 100, 1.0),
            ],
        );
        let rules = Rules::tolerance(0.02).max_cost_increase(0.0).unwrap();
        let c = compare_with(Some((&b, info(&b))), &n, rules);
        // One baseline case has no cost: the baseline's cost is unknown, not 0.01.
        let d = &c.experiments[0];
        assert_eq!(
            (d.cost_usd.baseline, d.cost_usd.candidate),
            (None, Some(0.1))
        );
        assert_eq!(d.cost_usd.change(), None);
        assert!(c.verdict.passed, "{:?}", c.verdict.reasons);
        assert!(crate::report::verdict::moved(&c).is_empty());
        // The check says so.
        let plan = super::super::CheckPlan::check(None, rules, super::super::MissingBaseline::Fail);
        let said: Vec<String> = super::super::check::not_measured(&c, &plan.rules)
            .iter()
            .map(|n| n.to_string())
            .collect();
        assert_eq!(said.len(), 1);
        assert!(
            said[0].starts_with("--max-cost-increase: the cost of fake/echo [temp 0] · tax is unknown in the baseline, so it could not be compared"),
            "{said:?}"
        );
        // An errored case is left out of the shared cases (its spend stopped short).
        let mut err = spent("b", Some(0.0), 0, 0.0);
        err.error = crate::results::testing::error("HTTP 500");
        let n = run("n", "f", T1, vec![spent("a", Some(0.05), 100, 1.0), err]);
        let b = run(
            "b",
            "main",
            T0,
            vec![
                spent("a", Some(0.01), 100, 1.0),
                spent("b", Some(0.01), 100, 1.0),
            ],
        );
        let c = compare_with(Some((&b, info(&b))), &n, rules);
        assert_eq!(c.experiments[0].cost_usd.cases, 1);
        assert_eq!(c.experiments[0].cost_usd.baseline, Some(0.01));
    }

    #[test]
    fn a_negative_or_endless_rise_allowed_is_a_usage_error_naming_the_flag() {
        for bad in [-1.0, f64::NAN, f64::INFINITY] {
            let e = Rules::tolerance(0.02)
                .max_cost_increase(bad)
                .expect_err("refused");
            assert!(e.is_bad_input());
            let said = e.message(crate::error::Audience::CommandLine);
            assert!(said.starts_with("--max-cost-increase "), "{said}");
            assert!(
                said.ends_with("expected a percentage of 0 or more (10 allows a rise of 10%)"),
                "{said}"
            );
        }
        assert_eq!(
            Rules::tolerance(0.02)
                .max_tokens_increase(0.0)
                .unwrap()
                .max_increase
                .of(Measure::Tokens),
            Some(0.0)
        );
    }

    #[test]
    fn a_case_run_three_times_costs_per_try_against_a_baseline_run_once() {
        let b = run("b", "main", T0, vec![spent("a", Some(0.01), 100, 1.0)]);
        let mut thrice = tried("a", &[1.0, 1.0, 1.0], 0.5);
        thrice.usage = spent("a", Some(0.03), 300, 1.0).usage;
        let n = run("n", "f", T1, vec![thrice]);
        let rules = Rules::tolerance(0.02)
            .max_cost_increase(0.0)
            .unwrap()
            .max_tokens_increase(0.0)
            .unwrap();
        let c = compare_with(Some((&b, info(&b))), &n, rules);
        assert!(c.verdict.passed, "{:?}", words(&c.verdict.reasons));
        assert_eq!(c.experiments[0].tokens.candidate, Some(100.0));
    }
}
