//! `check` = a run + the gate → a verdict: the policy around [`compare`](super::compare())
//! that `evals check` and `evals report --fail-on-regression` share.
//!
//! The baseline is found once ([`super::baseline`]); a run that is the first on its own
//! baseline branch is the first baseline (gated on thresholds and errors alone); no usable
//! baseline is refused or, with [`MissingBaseline::Pass`], warned about and gated without;
//! a baseline that shares no case with the run is warned about. What the caller should
//! say comes back as [`Notice`]s, in order, never printed here.

use std::fmt;
use std::path::Path;

use super::baseline::{Found, resolve_in_history, resolve_or_first};
use super::{BaselineError, Rules, compare_with, resolve};
use crate::history::{History, HistoryStore};
use crate::results::{Comparison, RunResult};

/// What to do when no usable baseline is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
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
    /// The tolerance and what fails beyond the four rules.
    pub rules: Rules,
    /// What to do when no usable baseline is found (`--missing-baseline`).
    pub missing: MissingBaseline,
    /// Whether a run on the baseline branch itself, with no earlier compatible run there,
    /// is that branch's first baseline (`check`) rather than a missing baseline (`report`,
    /// which judges stored runs).
    pub first_on_own_branch: bool,
    /// Whether `baseline` may name a JSON snapshot file on disk (`check`, `report`); when
    /// not, it is only ever a run or a branch of the history, and no file is looked at
    /// (`evals dashboard`: a URL's `?baseline=` must never make it read one).
    pub snapshot_files: bool,
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
            snapshot_files: true,
        }
    }
}

/// Something the gate found worth saying, beside the verdict.
#[derive(Debug)]
#[non_exhaustive]
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
                "{e}\n  (a missing baseline passes: gating on thresholds and errors alone)"
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
}

/// Runs the gate on `run` as `plan` says, reading baselines from `history` (`None`: it
/// could not be opened), which lives at `history_path` (named in messages).
pub fn judge(
    run: &RunResult,
    plan: &CheckPlan,
    history: Option<&dyn HistoryStore>,
    history_path: &Path,
) -> Checked {
    let mut notices = Vec::new();
    let mut refused = None;
    let mut first = false;
    let baseline = match &plan.baseline {
        None => None,
        Some(reference) => {
            let found = if !plan.snapshot_files {
                resolve_in_history(
                    reference,
                    run,
                    history,
                    history_path,
                    plan.first_on_own_branch,
                )
            } else if plan.first_on_own_branch {
                resolve_or_first(reference, run, history, history_path)
            } else {
                resolve(reference, run, history, history_path).map(|b| Found::Baseline(Box::new(b)))
            };
            match found {
                Ok(Found::Baseline(b)) => Some(*b),
                Ok(Found::First(note)) => {
                    notices.push(Notice::FirstBaseline(note));
                    // Only a completed run is ever a baseline (the note says so otherwise).
                    first = run.run.status == crate::results::RunStatus::Completed;
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
    let mut checked = judge(
        run,
        plan,
        opened.as_ref().map(|h| h as &dyn HistoryStore),
        history_path,
    );
    notices.append(&mut checked.notices);
    checked.notices = notices;
    checked
}

/// [`check`] on the history at `location`, a SQLite file or a PostgreSQL database (named in
/// messages without its password), opened with `env`'s variables
/// ([`Location::open_with`](crate::history::Location::open_with)).
pub fn check_in(
    run: &RunResult,
    plan: &CheckPlan,
    location: &crate::history::Location,
    env: &crate::env::Environment,
) -> Checked {
    let mut opened = None;
    let mut notices = Vec::new();
    if plan.baseline.is_some() {
        match location.open_with(env) {
            Ok(h) => opened = Some(h),
            Err(e) => notices.push(Notice::HistoryUnreadable(e.to_string())),
        }
    }
    let shown = std::path::PathBuf::from(location.shown());
    let mut checked = judge(
        run,
        plan,
        opened.as_ref().map(|h| h as &dyn HistoryStore),
        &shown,
    );
    notices.append(&mut checked.notices);
    checked.notices = notices;
    checked
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::testing::{case, run};

    const T0: &str = "2026-01-01T00:00:00Z";
    const T1: &str = "2026-01-02T00:00:00Z";

    fn setup() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("h.sqlite3");
        (dir, path)
    }

    fn plan(baseline: &str, missing: MissingBaseline) -> CheckPlan {
        CheckPlan::check(Some(baseline.into()), Rules::tolerance(0.02), missing)
    }

    #[test]
    fn a_tolerance_outside_zero_to_one_is_a_usage_error() {
        for bad in [-0.01, 1.5, f64::NAN] {
            let e = Rules::new(bad, false).expect_err("refused");
            assert!(e.is_bad_input());
            assert!(
                e.to_string()
                    .ends_with(": expected a fraction between 0 and 1 (0.02 is two points)"),
                "{e}"
            );
        }
        assert!(Rules::new(0.0, true).is_ok_and(|r| r.fail_on_case_decline));
    }

    #[test]
    fn no_baseline_under_fail_is_refused_with_exit_2_and_still_gated_for_the_reports() {
        let (_d, path) = setup();
        let me = run("me", "feature", T1, vec![case("a", Some(0.1), Some(false))]);
        let checked = check(&me, &plan("main", MissingBaseline::Fail), &path);
        let refused = checked.refused.as_ref().expect("refused");
        assert!(
            refused
                .to_string()
                .starts_with("no completed run of suite tax-intake on branch main"),
            "{refused}"
        );
        assert!(checked.refused.is_some() && !checked.passed());
        assert!(!checked.passed());
        // The reports still get the thresholds-and-errors verdict.
        assert!(checked.comparison.baseline.is_none());
        assert!(!checked.comparison.verdict.passed);
        assert!(checked.notices.is_empty(), "{:?}", checked.notices);
    }

    #[test]
    fn no_baseline_under_pass_warns_and_gates_on_thresholds_alone() {
        let (_d, path) = setup();
        let me = run("me", "feature", T1, vec![case("a", Some(1.0), Some(true))]);
        let checked = check(&me, &plan("main", MissingBaseline::Pass), &path);
        assert!(checked.refused.is_none());
        assert!(checked.passed());
        assert!(checked.refused.is_none() && checked.passed());
        let [Notice::BaselinePassed(e)] = checked.notices.as_slice() else {
            panic!("{:?}", checked.notices);
        };
        assert!(checked.notices[0].is_warning());
        assert!(
            checked.notices[0].to_string().ends_with(
                "\n  (a missing baseline passes: gating on thresholds and errors alone)"
            ),
            "{e}"
        );
    }

    #[test]
    fn the_first_check_on_its_branch_is_the_first_baseline_unless_it_stopped_early() {
        let (_d, path) = setup();
        let mut me = run("me", "main", T1, vec![case("a", Some(1.0), Some(true))]);
        let checked = check(&me, &plan("main", MissingBaseline::Fail), &path);
        assert!(checked.refused.is_none());
        assert!(checked.comparison.first_baseline);
        assert_eq!(
            checked
                .notices
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>(),
            ["no earlier run of main: this run is the first baseline"]
        );
        assert!(!checked.notices[0].is_warning());
        me.run.status = crate::results::RunStatus::Aborted;
        let checked = check(&me, &plan("main", MissingBaseline::Fail), &path);
        assert!(!checked.comparison.first_baseline);
        assert!(
            checked.notices[0]
                .to_string()
                .contains("this run stopped early"),
            "{:?}",
            checked.notices
        );
        assert!(checked.refused.is_none() && !checked.passed());
        // `report` judges stored runs: there, the same branch is a missing baseline.
        let h = History::open(&path).expect("open");
        let report = CheckPlan {
            first_on_own_branch: false,
            ..plan("main", MissingBaseline::Fail)
        };
        let me = run("me", "main", T1, vec![]);
        let judged = judge(&me, &report, Some(&h), &path);
        assert!(judged.refused.is_some());
    }

    #[test]
    fn a_baseline_sharing_no_case_is_a_warning() {
        let (_d, path) = setup();
        let mut h = History::open(&path).expect("open");
        h.insert(&run(
            "base",
            "main",
            T0,
            vec![case("z", Some(1.0), Some(true))],
        ))
        .expect("insert");
        let me = run("me", "feature", T1, vec![case("a", Some(1.0), Some(true))]);
        let checked = judge(&me, &plan("main", MissingBaseline::Fail), Some(&h), &path);
        assert_eq!(
            checked.comparison.baseline.as_ref().map(|b| b.id.as_str()),
            Some("base")
        );
        assert!(matches!(
            checked.notices.as_slice(),
            [Notice::NothingCompared]
        ));
        assert!(checked.notices[0].is_warning());
        assert!(checked.passed());
    }

    #[test]
    fn a_blank_baseline_is_none_and_an_unreadable_one_keeps_its_own_error_for_report() {
        let p = CheckPlan::check(
            Some("  ".into()),
            Rules::tolerance(0.02),
            Default::default(),
        );
        assert_eq!(p.baseline, None);
        let io = crate::error::Error::Failed("disk on fire".into());
        let b = BaselineError::from(io);
        assert_eq!(b.to_string(), "disk on fire");
        // `check` exits 2 on it; `report` keeps the error's own exit code.
        assert!(crate::error::Error::Baseline(b).is_bad_input());
        let b = BaselineError::from(crate::error::Error::Failed("disk on fire".into()));
        assert!(!b.into_error().is_bad_input());
    }
}
