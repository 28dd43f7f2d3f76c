//! Why no usable baseline was found: each failure of `--baseline` as data, worded with
//! its fix. `check` exits 2 on any of them (or, with `--missing-baseline pass`, warns and
//! gates on thresholds and errors alone); [`crate::error::Error::Baseline`] carries one.

use std::path::PathBuf;

/// A baseline that could not be found or used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BaselineError {
    /// `--baseline x.json` names no file.
    #[error(
        "{reference}: no such file; name a run's JSON snapshot (or let a missing baseline pass: MissingBaseline::Pass)"
    )]
    NoSuchFile {
        /// The file, as `--baseline` named it.
        reference: String,
    },
    /// A run number or id that the history does not hold.
    #[error(
        "no run {reference} in {}; name a run the history holds (or let a missing baseline pass: MissingBaseline::Pass)",
        history.display()
    )]
    NoSuchRun {
        /// What `--baseline` said.
        reference: String,
        /// The history file searched.
        history: PathBuf,
    },
    /// A run found in the history that could not be read back a moment later.
    #[error("run {id} vanished from {} while it was read; {rerun}", history.display())]
    Vanished {
        /// The run's id.
        id: String,
        /// The history file it was found in.
        history: PathBuf,
        /// What to run again.
        rerun: &'static str,
    },
    /// The history holds the baseline but could not be opened.
    #[error(
        "the history {} could not be opened, so no baseline can be read from it; fix it, or compare with a run's JSON snapshot",
        history.display()
    )]
    NoHistory {
        /// The history file.
        history: PathBuf,
    },
    /// The run named has another suite fingerprint.
    #[error(
        "baseline run {id} ({reference}) has suite fingerprint {}, this run has {} (the scorer, schema, thresholds or version changed): re-run the baseline, or let a missing baseline pass (MissingBaseline::Pass)",
        short(theirs),
        short(ours)
    )]
    Fingerprint {
        /// The baseline run's id.
        id: String,
        /// What `--baseline` said.
        reference: String,
        /// Its suite fingerprint.
        theirs: String,
        /// This run's.
        ours: String,
    },
    /// No completed run of the suite on the branch, before this run.
    #[error(
        "no completed run of suite {suite} on branch {branch} in {}; store a completed run of {branch} first (or let a missing baseline pass: MissingBaseline::Pass)",
        history.display()
    )]
    NoRunOnBranch {
        /// The suite's name.
        suite: String,
        /// The baseline branch.
        branch: String,
        /// The history file searched.
        history: PathBuf,
    },
    /// No run of the suite on the branch started before this run, but some completed runs
    /// are dated after it and after this machine's clock: a clock (theirs or this
    /// machine's) is wrong.
    #[error(
        "no run of suite {} on branch {} in {} started before this run ({}), but {} completed \
         run{} there {} dated after it and after this machine's clock, the newest by {}: a clock is wrong (the machine that \
         ran them, or this one); fix it and run again, or compare with one of them by number, \
         or let a missing baseline pass (MissingBaseline::Pass)",
        .0.suite,
        .0.branch,
        .0.history.display(),
        .0.started,
        .0.count,
        if .0.count == 1 { "" } else { "s" },
        if .0.count == 1 { "is" } else { "are" },
        .0.ahead
    )]
    Later(Box<LaterRuns>),
    /// The branch's newest run has another suite fingerprint, and no earlier one matches.
    #[error(
        "baseline run {newest} on {branch} has suite fingerprint {}, this run has {} (the scorer, schema, thresholds or version changed), and no earlier run on {branch} matches: re-run on {branch}, or let a missing baseline pass (MissingBaseline::Pass)",
        short(theirs),
        short(ours)
    )]
    BranchFingerprint {
        /// The baseline branch.
        branch: String,
        /// The id of its newest run of the suite.
        newest: String,
        /// That run's suite fingerprint.
        theirs: String,
        /// This run's.
        ours: String,
    },
    /// Runs on the branch match the fingerprint but none selected what this run selects.
    #[error(
        "no run on {branch} selected what this run selects ({ours}); the newest, {newest}, selected {theirs}: run {branch} with the same selection, or let a missing baseline pass (MissingBaseline::Pass)"
    )]
    Selection {
        /// The baseline branch.
        branch: String,
        /// The id of its newest run of the suite (the fingerprint matches).
        newest: String,
        /// This run's selection, as flags (`-m a,b -d x`, or `everything`).
        ours: String,
        /// The newest run's.
        theirs: String,
    },
    /// The baseline could not be read: the history or the snapshot failed (the error says how).
    #[error("{0}")]
    Unreadable(Box<crate::error::Error>),
}

impl BaselineError {
    /// The message for `to`: to the command line, the fix names `evals` commands and
    /// `--missing-baseline pass`.
    pub fn message(&self, to: super::Audience) -> String {
        if to == super::Audience::Library {
            return self.to_string();
        }
        const OR_PASS: &str = "or pass --missing-baseline pass";
        match self {
            BaselineError::NoSuchFile { reference } => format!(
                "{reference}: no such file; pass a snapshot written by `evals export` or `evals check --json FILE` ({OR_PASS})"
            ),
            BaselineError::NoSuchRun { reference, history } => format!(
                "no run {reference} in {}; list runs with `evals history` ({OR_PASS})",
                history.display()
            ),
            BaselineError::NoHistory { history } => format!(
                "the history {} could not be opened, so no baseline can be read from it; fix the file or pass --baseline FILE.json",
                history.display()
            ),
            BaselineError::Fingerprint {
                id,
                reference,
                theirs,
                ours,
            } => format!(
                "baseline run {id} ({reference}) has suite fingerprint {}, this run has {} (the scorer, schema, thresholds or version changed): re-run the baseline, {OR_PASS}",
                short(theirs),
                short(ours)
            ),
            BaselineError::NoRunOnBranch {
                suite,
                branch,
                history,
            } => format!(
                "no completed run of suite {suite} on branch {branch} in {}; run `evals check` on {branch} first ({OR_PASS})",
                history.display()
            ),
            BaselineError::Later(l) => format!(
                "no run of suite {} on branch {} in {} started before this run ({}), but {} completed \
                 run{} there {} dated after it and after this machine's clock, the newest by {}: a clock is wrong (the machine that \
                 ran them, or this one); fix it and run again, or compare with one of them by number \
                 (`evals history`, then --baseline N), {OR_PASS}",
                l.suite,
                l.branch,
                l.history.display(),
                l.started,
                l.count,
                if l.count == 1 { "" } else { "s" },
                if l.count == 1 { "is" } else { "are" },
                l.ahead
            ),
            BaselineError::BranchFingerprint {
                branch,
                newest,
                theirs,
                ours,
            } => format!(
                "baseline run {newest} on {branch} has suite fingerprint {}, this run has {} (the scorer, schema, thresholds or version changed), and no earlier run on {branch} matches: re-run on {branch}, {OR_PASS}",
                short(theirs),
                short(ours)
            ),
            BaselineError::Selection {
                branch,
                newest,
                ours,
                theirs,
            } => format!(
                "no run on {branch} selected what this run selects ({ours}); the newest, {newest}, selected {theirs}: run `evals check` on {branch} with the same -m/-d/-c/-e/-t flags, {OR_PASS}"
            ),
            BaselineError::Unreadable(e) => e.message(to),
            BaselineError::Vanished { .. } => self.to_string(),
        }
    }

    /// Back into the crate's error: an unreadable baseline as the error that made it so
    /// (with that error's exit code), any other as [`crate::error::Error::Baseline`].
    pub fn into_error(self) -> crate::error::Error {
        match self {
            BaselineError::Unreadable(e) => *e,
            other => crate::error::Error::Baseline(other),
        }
    }
}

impl From<crate::error::Error> for BaselineError {
    /// A failure while finding the baseline: itself when it is one, else unreadable.
    fn from(e: crate::error::Error) -> Self {
        match e {
            crate::error::Error::Baseline(b) => b,
            other => BaselineError::Unreadable(Box::new(other)),
        }
    }
}

/// A fingerprint's first 12 characters, as messages show it.
fn short(fp: &str) -> &str {
    fp.get(..12).unwrap_or(fp)
}

/// What [`BaselineError::Later`] says: a branch whose runs are all dated after this one.
#[derive(Debug)]
pub struct LaterRuns {
    /// The suite's name.
    pub suite: String,
    /// The baseline branch.
    pub branch: String,
    /// The history file searched.
    pub history: PathBuf,
    /// How many completed runs there are dated after this one.
    pub count: usize,
    /// When this run started (RFC 3339).
    pub started: String,
    /// How far the newest of them is after it, in words.
    pub ahead: String,
}
