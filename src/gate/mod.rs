//! The regression gate: find the baseline a run is judged against, then judge it.
//!
//! `check` is the gate as `evals check` and `evals report --fail-on-regression` run it
//! ([`check()`], [`judge`]: a [`CheckPlan`] → [`Checked`], the comparison with notices and
//! the verdict); `baseline` turns `--baseline main|RUN_ID|run.json` into a stored run,
//! refusing one from the future or with another suite fingerprint ([`BaselineError`]);
//! `compare` applies the rules of DESIGN §8 and produces the
//! [`Comparison`](crate::results::Comparison) every report renders, its verdict's
//! [`Reason`](crate::results::Reason)s typed for each renderer to word;
//! `flaky` lists the cases whose verdict varied across a branch's last runs (`evals flaky`);
//! `threshold_failures` is the same rule (4) for `run` and `compare`, which have no
//! baseline; `limits` holds the run-wide floors of `--min-score` and `--min-pass-rate`.

pub(crate) mod baseline;
pub(crate) mod check;
pub(crate) mod compare;
pub mod flaky;
pub(crate) mod limits;
mod spill;

pub use crate::error::{BaselineError, LaterRuns};
pub use baseline::{Baseline, Loaded, resolve, resolve_logged};
pub use check::{
    CheckPlan, Checked, MissingBaseline, Notice, check, check_streamed, judge, judge_streamed,
};
pub use compare::{
    MaxIncrease, Rules, Stat, compare, compare_streamed, compare_with, stopped, threshold_failures,
};
pub use flaky::{FlakyCase, RunVerdict, flaky};
pub use limits::Limits;
