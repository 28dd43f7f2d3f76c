//! `check` = a run + the gate → a verdict: the policy around [`compare`](super::compare)
//! that `evals check` and `evals report --fail-on-regression` share.
//!
//! The baseline is found once ([`super::baseline`]); a run that is the first on its own
//! baseline branch is the first baseline (gated on thresholds and errors alone); no usable
//! baseline is refused or, with [`MissingBaseline::Pass`], warned about and gated without;
//! a baseline that shares no case with the run is warned about. What the caller should
//! say comes back as [`Notice`]s, in order, never printed here.

use std::fmt;
use std::path::Path;

use super::baseline::{Found, resolve_or_first};
use super::{BaselineError, Rules, compare_with, resolve};
use crate::error::exit;
use crate::history::History;
use crate::results::{Comparison, RunResult};

/// What to do when no usable baseline is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MissingBaseline {
    /// Exit 2 with the reason.
    #[default]
    Fail,
    /// Warn and gate on thresholds and errors alone.
    Pass,
}

/// Everything the gate needs beyond the run itself, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckPlan {
    /// `--baseline`: a branch, a run (number, id, unique prefix) or a snapshot file;
    /// `None` gates on thresholds and errors alone.
    pub baseline: Option<String>,
    pub rules: Rules,
    pub missing: MissingBaseline,
    /// Whether a run on the baseline branch itself, with no earlier compatible run there,
    /// is that branch's first baseline (`check`) rather than a missing baseline (`report`,
    /// which judges stored runs).
    pub first_on_own_branch: bool,
}

impl CheckPlan {
    /// `check`'s plan: a blank `--baseline` is none, and the first run on the baseline
    /// branch is its first baseline.
    pub fn check(baseline: Option<String>, rules: Rules, missing: MissingBaseline) -> CheckPlan {
        CheckPlan {
            baseline: baseline.filter(|b| !b.trim().is_empty()),
            rules,
            missing,
            first_on_own_branch: true,
        }
    }
}

/// Something the gate found worth saying, beside the verdict.
#[derive(Debug)]
pub enum Notice {
    /// The history could not be opened: baselines come from snapshot files only.
    HistoryUnreadable(String),
    /// This run is the first baseline of its branch (or, stopped early, is not and says so).
    FirstBaseline(String),
    /// No usable baseline, and [`MissingBaseline::Pass`]: gated without one.
    BaselinePassed(BaselineError),
    /// The baseline shares no case with the run, so nothing was compared with it.
    NothingCompared,
}

impl Notice {
    /// A warning (the others are notes).
    pub fn is_warning(&self) -> bool {
        !matches!(self, Notice::FirstBaseline(_))
    }
}

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Notice::HistoryUnreadable(e) | Notice::FirstBaseline(e) => f.write_str(e),
            Notice::BaselinePassed(e) => write!(
                f,
                "{e}\n  (--missing-baseline pass: gating on thresholds and errors alone)"
            ),
            Notice::NothingCompared => f.write_str(
                "the baseline shares no case with this run (every case is new, changed or removed): nothing was compared with it",
            ),
        }
    }
}

/// The gate's conclusion on a run.
#[derive(Debug)]
pub struct Checked {
    /// The baseline, the deltas and the verdict (thresholds and errors alone without a
    /// baseline); the reports render it beside the run.
    pub comparison: Comparison,
    /// What to tell the user, in order.
    pub notices: Vec<Notice>,
    /// No usable baseline under [`MissingBaseline::Fail`]: the check fails with this (exit
    /// 2) once its reports, gated without a baseline, are written.
    pub refused: Option<BaselineError>,
}

impl Checked {
    /// Whether the run passed the gate.
    pub fn passed(&self) -> bool {
        self.refused.is_none() && self.comparison.verdict.passed
    }

    /// `check`'s exit code for `run`: 130 interrupted, 1 aborted or failed, 0 passed, 2
    /// without a usable baseline.
    pub fn exit_code(&self, run: &RunResult) -> i32 {
        match &self.refused {
            Some(_) => exit::USAGE,
            None => exit::of_run(&run.run.status, self.comparison.verdict.passed),
        }
    }
}

/// Runs the gate on `run` as `plan` says, reading baselines from `history` (`None`: it
/// could not be opened), which lives at `history_path` (named in messages).
pub fn judge(
    run: &RunResult,
    plan: &CheckPlan,
    history: Option<&History>,
    history_path: &Path,
) -> Checked {
    let mut notices = Vec::new();
    let mut refused = None;
    let mut first = false;
    let baseline = match &plan.baseline {
        None => None,
        Some(reference) => {
            let found = if plan.first_on_own_branch {
                resolve_or_first(reference, run, history, history_path)
            } else {
                resolve(reference, run, history, history_path).map(|b| Found::Baseline(Box::new(b)))
            };
            match found {
                Ok(Found::Baseline(b)) => Some(*b),
                Ok(Found::First(note)) => {
                    notices.push(Notice::FirstBaseline(note));
                    // Only a completed run is ever a baseline (the note says so otherwise).
                    first = run.run.status == "completed";
                    None
                }
                Err(e) => {
                    let e = BaselineError::from(e);
                    match plan.missing {
                        MissingBaseline::Fail => refused = Some(e),
                        MissingBaseline::Pass => notices.push(Notice::BaselinePassed(e)),
                    }
                    None
                }
            }
        }
    };
    let mut comparison = compare_with(
        baseline.as_ref().map(|(b, info)| (b, info.clone())),
        run,
        plan.rules,
    );
    comparison.first_baseline = first;
    if comparison.compared_nothing() {
        notices.push(Notice::NothingCompared);
    }
    Checked {
        comparison,
        notices,
        refused,
    }
}

/// [`judge`], opening the history at `history_path` when the plan names a baseline (a
/// store that does not open is a [`Notice::HistoryUnreadable`]; a snapshot file still works).
pub fn check(run: &RunResult, plan: &CheckPlan, history_path: &Path) -> Checked {
    let mut opened = None;
    let mut notices = Vec::new();
    if plan.baseline.is_some() {
        match History::open(history_path) {
            Ok(h) => opened = Some(h),
            Err(e) => notices.push(Notice::HistoryUnreadable(e.to_string())),
        }
    }
    let mut checked = judge(run, plan, opened.as_ref(), history_path);
    notices.append(&mut checked.notices);
    checked.notices = notices;
    checked
}
