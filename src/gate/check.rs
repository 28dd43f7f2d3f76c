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

use super::baseline::{Baseline, Found, resolve_logged, resolve_or_first};
use super::{BaselineError, Rules, compare_streamed};
use crate::history::RunStore;
use crate::results::{CaseSource, Comparison, Measure, RunResult};

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
    /// `--baseline`: a branch, a run or a snapshot file ([`Baseline::parse`] reads the
    /// flag's value); `None` gates on thresholds and errors alone.
    pub baseline: Option<Baseline>,
    /// The tolerance and what fails beyond the four rules.
    pub rules: Rules,
    /// What to do when no usable baseline is found (`--missing-baseline`).
    pub missing: MissingBaseline,
    /// Whether a run on the baseline branch itself, with no earlier compatible run there,
    /// is that branch's first baseline (`check`) rather than a missing baseline (`report`,
    /// which judges stored runs).
    pub first_on_own_branch: bool,
}

impl CheckPlan {
    /// `check`'s plan: the first run on the baseline branch is its first baseline.
    pub fn check(baseline: Option<Baseline>, rules: Rules, missing: MissingBaseline) -> CheckPlan {
        CheckPlan {
            baseline,
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
    /// A gated measure (`--max-cost-increase` and its kin) is unknown on a side of an
    /// experiment: it was not compared, neither failed nor passed on a figure made up.
    NotMeasured {
        /// What could not be compared.
        measure: Measure,
        /// The experiment, as the reports label it.
        experiment: String,
        /// Unknown in the baseline (else in this run; both: both).
        baseline: bool,
        /// Unknown in this run.
        candidate: bool,
    },
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
            Notice::NotMeasured {
                measure,
                experiment,
                baseline,
                candidate,
            } => {
                let side = match (baseline, candidate) {
                    (true, true) => "in both runs",
                    (true, false) => "in the baseline",
                    _ => "in this run",
                };
                let fix = match measure {
                    Measure::Cost => {
                        "price the model under `pricing:` in the config (or use a provider that reports cost) and record again"
                    }
                    Measure::Tokens => {
                        "record with a provider that reports token usage"
                    }
                    Measure::Latency => "record again: a recording keeps each call's latency",
                };
                write!(
                    f,
                    "{}: the {} of {experiment} is unknown {side}, so it could not be compared (not gated, never taken for 0); {fix}",
                    measure.flag(),
                    measure.as_str()
                )
            }
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

/// Runs the gate on `run` as `plan` says, reading baselines from `history` (`None`: there
/// is none, or it could not be opened), which lives at `history_path` (named in messages).
/// A baseline whose cases cannot be read back is an unusable baseline (refused, or under
/// [`MissingBaseline::Pass`] warned about).
pub fn judge(
    run: &RunResult,
    plan: &CheckPlan,
    history: Option<&dyn RunStore>,
    history_path: &Path,
) -> Checked {
    match judge_streamed(run, CaseSource::Run(run), plan, history, history_path) {
        Ok(checked) => checked,
        // This run's cases are in memory: what failed to read is the baseline's.
        Err(e) => {
            let mut checked = judge(
                run,
                &CheckPlan {
                    baseline: None,
                    ..plan.clone()
                },
                None,
                history_path,
            );
            let e = BaselineError::from(e);
            match plan.missing {
                MissingBaseline::Fail => checked.refused = Some(e),
                MissingBaseline::Pass => checked.notices.insert(0, Notice::BaselinePassed(e)),
            }
            checked
        }
    }
}

/// [`judge`] of a run whose cases are in `cases` (the case log a streamed run leaves):
/// the baseline is read with its cases in a case log too ([`RunStore::get_logged`]) and
/// the two are compared a case at a time ([`super::compare_streamed`]), so a check of
/// 100,000 cases against a baseline of 100,000 needs no more memory than one of 1,000.
/// Fails when a case log or a temporary file cannot be read or written.
pub fn judge_streamed(
    run: &RunResult,
    cases: CaseSource<'_>,
    plan: &CheckPlan,
    history: Option<&dyn RunStore>,
    history_path: &Path,
) -> crate::error::Result<Checked> {
    let mut notices = Vec::new();
    let mut refused = None;
    let mut first = false;
    let baseline = match &plan.baseline {
        None => None,
        Some(reference) => {
            let found = if plan.first_on_own_branch {
                resolve_or_first(reference, run, history, history_path)
            } else {
                resolve_logged(reference, run, history, history_path)
                    .map(|b| Found::Baseline(Box::new(b)))
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
    let mut comparison = compare_streamed(
        baseline
            .as_ref()
            .map(|b| (&b.run, CaseSource::Log(&b.cases), b.info.clone())),
        run,
        cases,
        plan.rules,
    )?;
    comparison.first_baseline = first;
    if comparison.compared_nothing() {
        notices.push(Notice::NothingCompared);
    }
    notices.extend(not_measured(&comparison, &plan.rules));
    Ok(Checked {
        comparison,
        notices,
        refused,
    })
}

/// The gated measures of the compared experiments that a side does not know.
pub(super) fn not_measured(c: &Comparison, rules: &Rules) -> Vec<Notice> {
    let mut out = Vec::new();
    for m in Measure::ALL {
        if rules.max_increase.of(m).is_none() {
            continue;
        }
        for e in c.experiments.iter() {
            let f = e.measured(m);
            if f.cases > 0 && (f.baseline.is_none() || f.candidate.is_none()) {
                out.push(Notice::NotMeasured {
                    measure: m,
                    experiment: format!("{} · {}", e.contender.label(), e.dataset),
                    baseline: f.baseline.is_none(),
                    candidate: f.candidate.is_none(),
                });
            }
        }
    }
    out
}

/// [`judge`] with baselines from `history`, an open store (named in messages by its
/// [`RunStore::location`]). The caller opens it: `evals check` opens the history only when
/// the plan names a baseline, and gates without one when it does not open
/// ([`Notice::HistoryUnreadable`]: a snapshot file still works).
pub fn check(run: &RunResult, plan: &CheckPlan, history: &dyn RunStore) -> Checked {
    let shown = std::path::PathBuf::from(history.location());
    judge(run, plan, Some(history), &shown)
}

/// [`check()`] of a run whose cases are in `cases` ([`judge_streamed`]).
pub fn check_streamed(
    run: &RunResult,
    cases: CaseSource<'_>,
    plan: &CheckPlan,
    history: &dyn RunStore,
) -> crate::error::Result<Checked> {
    let shown = std::path::PathBuf::from(history.location());
    judge_streamed(run, cases, plan, Some(history), &shown)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::History;
    use crate::results::testing::{case, run};

    const T0: &str = "2026-01-01T00:00:00Z";
    const T1: &str = "2026-01-02T00:00:00Z";

    fn setup() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("h.sqlite3");
        (dir, path)
    }

    fn open(path: &Path) -> History {
        History::open(path).expect("open the history")
    }

    fn plan(baseline: &str, missing: MissingBaseline) -> CheckPlan {
        CheckPlan::check(Baseline::parse(baseline), Rules::tolerance(0.02), missing)
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
        let checked = check(&me, &plan("main", MissingBaseline::Fail), &open(&path));
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
        let checked = check(&me, &plan("main", MissingBaseline::Pass), &open(&path));
        assert!(checked.refused.is_none());
        assert!(checked.passed());
        assert!(checked.refused.is_none() && checked.passed());
        let [Notice::BaselinePassed(e)] = checked.notices.as_slice() else {
            panic!("{:?}", checked.notices);
        };
        assert!(checked.notices[0].is_warning());
        assert!(
            checked.notices[0]
                .to_string()
                .ends_with("\n  (--missing-baseline pass: gating on thresholds and errors alone)"),
            "{e}"
        );
    }

    #[test]
    fn the_first_check_on_its_branch_is_the_first_baseline_unless_it_stopped_early() {
        let (_d, path) = setup();
        let mut me = run("me", "main", T1, vec![case("a", Some(1.0), Some(true))]);
        let checked = check(&me, &plan("main", MissingBaseline::Fail), &open(&path));
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
        let checked = check(&me, &plan("main", MissingBaseline::Fail), &open(&path));
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
        assert_eq!(Baseline::parse("  "), None);
        let io = crate::error::Error::Failed("disk on fire".into());
        let b = BaselineError::from(io);
        assert_eq!(b.to_string(), "disk on fire");
        // `check` exits 2 on it; `report` keeps the error's own exit code.
        assert!(crate::error::Error::Baseline(b).is_bad_input());
        let b = BaselineError::from(crate::error::Error::Failed("disk on fire".into()));
        assert!(!b.into_error().is_bad_input());
    }
}
