//! The comparison of a run against its baseline, as `check` computes it and reports render it.
//!
//! It names the baseline, the tolerance, each experiment's mean primary score before and
//! after (over the cases both runs share), every case whose status is worth a reviewer's
//! look, and the verdict with its typed reasons. It travels beside the run (never inside
//! it): the gate returns it, every report renders it, the JSON snapshot writes it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::model::{CaseErrorKind, ContenderInfo, Diagnostic, RunStatus};

/// What `check` concluded, and against what. The JSON snapshot writes it beside the run
/// (`report::json`), each reason in words.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Comparison {
    /// The run compared against; `None` when `check` gated on thresholds and errors alone.
    pub baseline: Option<BaselineInfo>,
    /// How far (0..=1) an experiment's mean primary score may fall before it regresses.
    pub tolerance: f64,
    /// Each experiment of this run beside the baseline's (none without a baseline); one the
    /// baseline did not run has no baseline mean and nothing matched.
    pub experiments: Vec<ExperimentDelta>,
    /// Every case that is not plainly unchanged, plus unchanged cases failing thresholds.
    pub cases: Vec<CaseDelta>,
    /// Cases that matched the baseline and scored the same.
    pub unchanged: usize,
    /// The run stopped early (`aborted`, `interrupted`): how, and how many of its planned
    /// case runs (case × contender) never ran. Those are neither new nor removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Stopped>,
    /// No baseline because this run is the first on the baseline branch itself (`check
    /// --baseline main` on main with nothing earlier): the baseline of the next check.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub first_baseline: bool,
    /// Passed or not, and every reason it did not.
    pub verdict: Verdict,
}

/// How a run that stopped early ended, and what it left undone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stopped {
    /// `aborted` or `interrupted`.
    pub status: RunStatus,
    /// Case runs (case × contender) planned and never run.
    pub not_run: usize,
    /// Case runs planned.
    pub planned: usize,
}

impl Comparison {
    /// A baseline was given but shares no case with the run: every case is new, changed or
    /// removed, so nothing was compared with it. A case that errors now, where the
    /// baseline scored it, was compared (it errored); a stopped run that ran nothing
    /// compared nothing, and its verdict already says so.
    pub fn compared_nothing(&self) -> bool {
        let ran_nothing = self
            .stopped
            .as_ref()
            .is_some_and(|s| s.not_run >= s.planned);
        let compared = |d: &CaseDelta| match d.status {
            CaseStatus::New | CaseStatus::Changed | CaseStatus::Removed => false,
            CaseStatus::Errored => d.baseline_score.is_some() || d.baseline_passed.is_some(),
            _ => true,
        };
        self.baseline.is_some()
            && !ran_nothing
            && self.experiments.iter().all(|e| e.matched == 0)
            && self.unchanged == 0
            && !self.cases.iter().any(compared)
    }
}

/// Which run was the baseline and how it was named.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineInfo {
    /// The baseline run's id.
    pub id: String,
    /// The git branch it ran on; `None` when that was not known.
    pub branch: Option<String>,
    /// The git commit it ran at; `None` when that was not known.
    pub commit: Option<String>,
    /// When it started (written RFC 3339, UTC).
    #[serde(with = "super::time::as_text")]
    pub started_at: super::Timestamp,
    /// What `--baseline` said: a branch, a run id or a file.
    pub reference: String,
}

/// One experiment (contender × dataset) before and after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentDelta {
    /// The contender: provider, model and settings.
    pub contender: ContenderInfo,
    /// The dataset: the folder under `datasets/`.
    pub dataset: String,
    /// Mean primary score over the cases both runs scored with the same fingerprint.
    pub baseline: Option<f64>,
    /// The same mean in this run; for an experiment the baseline did not run, its mean over
    /// every scored case.
    pub candidate: Option<f64>,
    /// `candidate - baseline`: negative when the score fell; `None` unless both means are known.
    pub delta: Option<f64>,
    /// How many cases the means are taken over.
    pub matched: usize,
    /// Fell by more than the tolerance (rule 1): this fails the check.
    pub regressed: bool,
    /// The paired test of the statistical gate (when a side ran `--repeat K` > 1, or with
    /// `--stat`); absent otherwise, and in snapshots from before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<PairedTest>,
    /// Dollars spent on the cases both runs share ([`Measure::Cost`]); absent when neither
    /// side's is known, and in snapshots from before it.
    #[serde(default, skip_serializing_if = "Measured::is_unknown")]
    pub cost_usd: Measured,
    /// Tokens in and out on the shared cases ([`Measure::Tokens`]).
    #[serde(default, skip_serializing_if = "Measured::is_unknown")]
    pub tokens: Measured,
    /// The median of the shared cases' recorded call latency, in seconds
    /// ([`Measure::Latency`]).
    #[serde(default, skip_serializing_if = "Measured::is_unknown")]
    pub latency_p50_s: Measured,
}

impl ExperimentDelta {
    /// The experiment's figure of `measure` before and after.
    pub fn measured(&self, measure: Measure) -> Measured {
        match measure {
            Measure::Cost => self.cost_usd,
            Measure::Tokens => self.tokens,
            Measure::Latency => self.latency_p50_s,
        }
    }
}

/// What a run spends, gated against the baseline's by `--max-cost-increase`,
/// `--max-tokens-increase` and `--max-latency-increase`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Measure {
    /// Dollars, the contender's calls (a judge's cost apart).
    Cost,
    /// Tokens in and out.
    Tokens,
    /// The median (p50) of the cases' recorded call latency: the recorded figure on
    /// replay, so the same on every replay.
    Latency,
}

impl Measure {
    /// Every measure, in the order the reports list them.
    pub const ALL: [Measure; 3] = [Measure::Cost, Measure::Tokens, Measure::Latency];

    /// How the reports name it: `cost`, `tokens`, `p50 latency`.
    pub fn as_str(self) -> &'static str {
        match self {
            Measure::Cost => "cost",
            Measure::Tokens => "tokens",
            Measure::Latency => "p50 latency",
        }
    }

    /// Its flag: `--max-cost-increase`.
    pub fn flag(self) -> &'static str {
        match self {
            Measure::Cost => "--max-cost-increase",
            Measure::Tokens => "--max-tokens-increase",
            Measure::Latency => "--max-latency-increase",
        }
    }
}

/// One measure of an experiment over the cases both runs share (same case, same
/// fingerprint, neither errored), before and after. `None` is unknown, never 0: a side
/// with one shared case of unknown cost has no cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// The baseline's figure.
    pub baseline: Option<f64>,
    /// This run's figure.
    pub candidate: Option<f64>,
    /// How many shared cases it is taken over.
    pub cases: usize,
}

impl Measured {
    /// Neither side known (nothing to write).
    pub fn is_unknown(&self) -> bool {
        self.baseline.is_none() && self.candidate.is_none()
    }

    /// The rise as a fraction of the baseline (`0.23` is 23% more, negative a fall):
    /// `None` unless both sides are known; infinite for a rise from 0.
    pub fn change(&self) -> Option<f64> {
        let (b, c) = (self.baseline?, self.candidate?);
        Some(if b > 0.0 {
            (c - b) / b
        } else if c > 0.0 {
            f64::INFINITY
        } else {
            0.0
        })
    }
}

/// The statistical gate's test of one experiment: the drop is a regression only when it is
/// past the tolerance *and* significant; past the tolerance and not significant, it is
/// inconclusive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairedTest {
    /// Which test: `mcnemar` (every shared case scored 0 or 1 once on each side, exact) or
    /// `sign-flip` (a paired permutation test on the cases' means over their tries).
    pub method: String,
    /// The one-sided p-value that the candidate is this much lower by chance.
    pub p_value: f64,
    /// The significance level (`--alpha`).
    pub alpha: f64,
    /// Tries per case: the most either side ran.
    pub k: usize,
    /// Past the tolerance but not significant: reported, gated only by
    /// `--inconclusive fail`.
    pub inconclusive: bool,
    /// About how many tries per case would decide an inconclusive drop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats_to_decide: Option<usize>,
}

/// How a case moved between the baseline and this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum CaseStatus {
    /// Met its thresholds in the baseline and no longer does (gated).
    Regressed,
    /// Errors now: a transport failure, a cassette miss, a crashed adapter (gated).
    Errored,
    /// Scored lower without crossing a threshold (reported, not gated).
    Declined,
    /// Scored higher (reported).
    Improved,
    /// Same score (listed only when it fails its thresholds).
    Unchanged,
    /// Not in the baseline.
    New,
    /// In the baseline, not in this run.
    Removed,
    /// Its fingerprint differs (input, expected, metadata or thresholds changed): not compared.
    Changed,
}

impl CaseStatus {
    /// The status as the reports and the JSON snapshot write it: `regressed`, `new`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            CaseStatus::Regressed => "regressed",
            CaseStatus::Errored => "errored",
            CaseStatus::Declined => "declined",
            CaseStatus::Improved => "improved",
            CaseStatus::Unchanged => "unchanged",
            CaseStatus::New => "new",
            CaseStatus::Removed => "removed",
            CaseStatus::Changed => "changed",
        }
    }
}

/// One case before and after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseDelta {
    /// The contender that ran the case.
    pub contender: ContenderInfo,
    /// The case's dataset.
    pub dataset: String,
    /// The case id within its dataset: `vague`, `vague/003`.
    pub case: String,
    /// How it moved, and so whether it was compared at all.
    pub status: CaseStatus,
    /// Its score in the baseline (0..=1); `None` when it was not there or had no score.
    pub baseline_score: Option<f64>,
    /// Its score in this run (0..=1); `None` when it was removed or errors now.
    pub candidate_score: Option<f64>,
    /// Whether it met its thresholds in the baseline; `None` when it was not there or errored.
    pub baseline_passed: Option<bool>,
    /// Whether it meets them in this run; `None` when it was removed or errors now.
    pub candidate_passed: Option<bool>,
    /// Thresholds this run failed, as `metric value < minimum`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_thresholds: Vec<String>,
    /// Why it has no score in this run (the error's message), when it errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What failed, when the case errored; absent in a snapshot from before kinds were
    /// written (read the kind from `error` then, [`CaseErrorKind::of_message`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<CaseErrorKind>,
    /// Diagnostics this run has that the baseline did not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<Diagnostic>,
    /// The baseline's output (what the diff report compares); `None` when it had none.
    pub baseline_output: Option<Value>,
    /// This run's output; `None` when it had none.
    pub candidate_output: Option<Value>,
    /// The model's own failure in this run (not JSON, refused, empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_error: Option<String>,
    /// What the model said in this run when its reply was unusable (its whole text; the
    /// reports show it on one line, cut: see [`super::one_line`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub said: Option<String>,
    /// The unified diff of the case's components (its UI payloads), baseline to this run,
    /// when they changed; `None` when they did not, or the baseline lacks the case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub components_diff: Option<String>,
    /// Whether this case fails the check (a regression, an error, a failed threshold).
    pub gated: bool,
}

impl CaseDelta {
    /// How far the score moved (`candidate - baseline`); `None` unless both runs scored the case.
    pub fn delta(&self) -> Option<f64> {
        Some(self.candidate_score? - self.baseline_score?)
    }
}

/// Passed or not, and why not.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Verdict {
    /// Whether the run passes the check: true exactly when `reasons` is empty.
    pub passed: bool,
    /// Why it failed, one reason per failure, as data: each report words them.
    pub reasons: Vec<Reason>,
}

/// One reason a run fails the gate. The gate says what failed; each report says it in
/// its own words (`report::verdict`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Reason {
    /// The run stopped early: a partial run cannot pass.
    Stopped(Stopped),
    /// Rule 1: an experiment's mean primary score fell by more than the tolerance.
    ExperimentFell {
        /// The experiment's contender.
        contender: ContenderInfo,
        /// The experiment's dataset.
        dataset: String,
        /// The means over the cases both runs scored alike.
        baseline: f64,
        /// This run's mean (0..=1).
        candidate: f64,
        /// How far (0..=1) it was allowed to fall.
        tolerance: f64,
    },
    /// Rule 3: a case errors now (a cassette miss included).
    CaseErrored {
        /// The case.
        at: CaseRef,
        /// The error, when there is one to tell.
        error: Option<String>,
        /// What failed (a miss is grouped with the others by it), when known.
        kind: Option<CaseErrorKind>,
    },
    /// Rule 2: a case met its thresholds on `baseline` and now fails them.
    CaseRegressed {
        /// The case.
        at: CaseRef,
        /// The baseline's branch, or `run ID`.
        baseline: String,
        /// The thresholds it fails now, as `metric value < minimum`.
        failed: Vec<String>,
    },
    /// `--fail-on-case-regression`: a compared case's score dropped.
    CaseDeclined {
        /// The case.
        at: CaseRef,
        /// Its score in the baseline.
        baseline: Option<f64>,
        /// Its score in this run.
        candidate: Option<f64>,
    },
    /// Rule 4: a case fails its thresholds.
    BelowThreshold {
        /// The case.
        at: CaseRef,
        /// The thresholds it fails, as `metric value < minimum`.
        failed: Vec<String>,
    },
    /// `--min-score`: an experiment's mean primary score is below the floor.
    BelowMinScore {
        /// The experiment's contender.
        contender: ContenderInfo,
        /// The experiment's dataset.
        dataset: String,
        /// The experiment's mean primary score (0..=1).
        score: f64,
        /// The floor `--min-score` set (0..=1).
        min: f64,
    },
    /// `--min-pass-rate`: too few of an experiment's cases passed.
    BelowPassRate {
        /// The experiment's contender.
        contender: ContenderInfo,
        /// The experiment's dataset.
        dataset: String,
        /// Cases that passed (met their thresholds).
        passed: usize,
        /// Cases in the experiment, errored ones included: they did not pass.
        cases: usize,
        /// The share of cases `--min-pass-rate` asks to pass (0..=1).
        min: f64,
    },
    /// `--inconclusive fail`: an experiment's mean fell by more than the tolerance, but not
    /// significantly at `alpha`.
    Inconclusive {
        /// The experiment's contender.
        contender: ContenderInfo,
        /// The experiment's dataset.
        dataset: String,
        /// The means over the cases both runs scored alike.
        baseline: f64,
        /// This run's mean (0..=1).
        candidate: f64,
        /// The paired test.
        test: PairedTest,
    },
    /// `--max-cost-increase` and its kin: an experiment's cost, tokens or p50 latency on
    /// the shared cases rose by more than the percentage allowed.
    Rose {
        /// The experiment's contender.
        contender: ContenderInfo,
        /// The experiment's dataset.
        dataset: String,
        /// What rose.
        measure: Measure,
        /// The baseline's figure (dollars, tokens or seconds).
        baseline: f64,
        /// This run's.
        candidate: f64,
        /// The rise allowed, in percent (`10` is 10%).
        allowed: f64,
    },
    /// A reason read back from a JSON snapshot, in the words it was written with.
    Recorded(String),
}

/// The case a [`Reason`] is about, and the model's reply when it was unusable.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseRef {
    /// The contender that ran the case.
    pub contender: ContenderInfo,
    /// The case's dataset.
    pub dataset: String,
    /// The case id within its dataset.
    pub case: String,
    /// The model's own failure (not JSON, refused, empty), when its reply was unusable.
    pub reply_error: Option<String>,
    /// What the model said then (its whole text).
    pub said: Option<String>,
}

impl<'de> Deserialize<'de> for Reason {
    /// A snapshot holds each reason in words: it is read back as [`Reason::Recorded`].
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Reason::Recorded)
    }
}
