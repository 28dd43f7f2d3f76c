//! Floors set for one run: LLMEvalForge's `--min-score` (an experiment's mean primary score)
//! and `--min-pass-rate` (the share of an experiment's cases that pass). They are kept in
//! the run's settings, so a report of the stored run later gates it the same way.

use super::compare::EPS;
use crate::results::{ExperimentResult, Reason, RunResult};

/// The run's floors, each a fraction in 0..=1: a part of the run's settings, so the type
/// lives with them in the result model; the rules that apply them are here.
pub use crate::results::Limits;

impl Limits {
    /// No floor is set (the run's settings then keep no `limits`).
    pub fn is_empty(&self) -> bool {
        self.min_score.is_none() && self.min_pass_rate.is_none()
    }

    /// The limits a run was made with (`settings.limits`); none for runs made without.
    pub fn of(run: &RunResult) -> Limits {
        run.run.settings.limits.unwrap_or_default()
    }

    /// Whether a case failing its thresholds fails the run by itself (rule 4), or only
    /// counts against `--min-pass-rate`.
    pub fn each_case_gates(&self) -> bool {
        self.min_pass_rate.is_none()
    }

    /// Why an experiment (its cases in it) falls short of these limits, one reason each.
    pub fn misses(&self, exp: &ExperimentResult) -> Vec<Reason> {
        let passed = exp.cases.iter().filter(|c| c.passed == Some(true)).count();
        self.misses_of(exp, passed, exp.cases.len())
    }

    /// [`Limits::misses`] of an experiment whose cases are elsewhere: `passed` of its
    /// `cases` passed (one that errored did not).
    pub fn misses_of(&self, exp: &ExperimentResult, passed: usize, cases: usize) -> Vec<Reason> {
        let mut out = Vec::new();
        if let (Some(min), Some(score)) = (self.min_score, exp.score)
            && score + EPS < min
        {
            out.push(Reason::BelowMinScore {
                contender: exp.contender.clone(),
                dataset: exp.dataset.clone(),
                score,
                min,
            });
        }
        if let Some(min) = self.min_pass_rate
            && cases > 0
        {
            // Over every case: one that errored did not pass.
            let rate = passed as f64 / cases as f64;
            if rate + EPS < min {
                out.push(Reason::BelowPassRate {
                    contender: exp.contender.clone(),
                    dataset: exp.dataset.clone(),
                    passed,
                    cases,
                    min,
                });
            }
        }
        out
    }
}
