//! What the stores answer, as types: a run's line (`evals history`), the baseline
//! candidates (the gate), and what a reader asks beyond the gate's needs (`evals
//! dashboard`): runs by suite, branch, status and date; one case across runs; a branch's
//! experiment scores over time. Each is one indexed query (migration 0004) on every store,
//! read from the queryable tables, never from the snapshots.

use serde::Serialize;

/// One line of `evals history`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    /// The run's number in this store: 1, 2, 3 in the order runs were stored; never reused.
    pub number: i64,
    /// The run's id.
    pub id: String,
    /// When it started.
    #[serde(serialize_with = "crate::results::time::as_text::serialize")]
    pub started_at: crate::results::Timestamp,
    /// The git branch it ran on; `None` when that was not known.
    pub branch: Option<String>,
    /// The git commit it ran at; `None` when that was not known.
    pub commit: Option<String>,
    /// The suite's name.
    pub suite: String,
    /// The command that made it: run, compare, record, check.
    pub command: String,
    /// The cassette mode: replay, record, auto, live.
    pub mode: String,
    /// How it ended.
    pub status: crate::results::RunStatus,
    /// Cases run, over every experiment.
    pub cases: usize,
    /// Mean of the experiments' primary scores.
    pub score: Option<f64>,
    /// Cases that errored, over every experiment.
    pub errors: usize,
}

/// Which runs [`super::HistoryReads::list`] returns, newest first.
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    /// Only runs of this suite.
    pub suite: Option<String>,
    /// Only runs on this branch.
    pub branch: Option<String>,
    /// At most this many runs.
    pub limit: Option<usize>,
}

/// A baseline candidate ([`super::RunStore::runs_on_branch`]), as far as baseline
/// resolution cares.
#[derive(Debug, Clone)]
pub struct BranchRun {
    /// The run's id.
    pub id: String,
    /// Its suite fingerprint: a baseline must have this run's.
    pub suite_fingerprint: String,
    /// When it started.
    pub started_at: crate::results::Timestamp,
    /// The run's `settings.selection`: what `-m/-d/-c/-e/-t/--max-tokens` narrowed or
    /// changed; `None` for a run stored before selections were recorded.
    pub selection: Option<crate::results::Selection>,
}

/// Which runs [`super::HistoryReads::runs`] returns, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunQuery {
    /// Only runs of this suite.
    pub suite: Option<String>,
    /// Only runs on this branch.
    pub branch: Option<String>,
    /// Only runs that ended this way.
    pub status: Option<crate::results::RunStatus>,
    /// Only runs that started at or after this time (RFC 3339, or a prefix such as a date:
    /// times compare as text).
    pub since: Option<String>,
    /// Only runs that started before this time (as `since`).
    pub before: Option<String>,
    /// At most this many runs.
    pub limit: Option<usize>,
}

/// Which results of one case [`super::HistoryReads::case_runs`] returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CaseQuery {
    /// The case's id (`vague/001`).
    pub case: String,
    /// Only in this dataset.
    pub dataset: Option<String>,
    /// Only in runs of this suite.
    pub suite: Option<String>,
    /// Only in runs on this branch.
    pub branch: Option<String>,
    /// Only the newest this many results.
    pub limit: Option<usize>,
}

/// One case's result in one run, under one contender.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseRun {
    /// The run's number in the store.
    pub number: i64,
    /// The run's id.
    pub run_id: String,
    /// When the run started.
    #[serde(serialize_with = "crate::results::time::as_text::serialize")]
    pub started_at: crate::results::Timestamp,
    /// The run's git branch, when known.
    pub branch: Option<String>,
    /// The run's git commit, when known.
    pub commit: Option<String>,
    /// The run's suite.
    pub suite: String,
    /// How the run ended.
    pub status: crate::results::RunStatus,
    /// The contender (`ContenderInfo::key`).
    pub contender: String,
    /// The case's dataset.
    pub dataset: String,
    /// The case's id.
    pub case: String,
    /// The case's fingerprint in that run (its input, expected and thresholds).
    pub fingerprint: String,
    /// Its primary score; `None` when it errored.
    pub score: Option<f64>,
    /// Whether it met its thresholds; `None` when it has none or errored.
    pub passed: Option<bool>,
    /// Its error's message, when it errored.
    pub error: Option<String>,
}

impl CaseRun {
    /// Whether it failed: errored, or missed its thresholds.
    pub fn failed(&self) -> bool {
        self.error.is_some() || self.passed == Some(false)
    }

    /// `pass`, `fail` or `error`, as `evals flaky` words a verdict.
    pub fn verdict(&self) -> &'static str {
        if self.error.is_some() {
            "error"
        } else if self.passed == Some(false) {
            "fail"
        } else {
            "pass"
        }
    }
}

/// One experiment's primary score in one run (a point of a trend).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScorePoint {
    /// The run's number in the store.
    pub number: i64,
    /// The run's id.
    pub run_id: String,
    /// When the run started.
    #[serde(serialize_with = "crate::results::time::as_text::serialize")]
    pub started_at: crate::results::Timestamp,
    /// The run's git commit, when known.
    pub commit: Option<String>,
    /// The run's suite.
    pub suite: String,
    /// The contender (`ContenderInfo::key`).
    pub contender: String,
    /// The dataset.
    pub dataset: String,
    /// The experiment's mean primary score.
    pub score: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{HistoryReads, RunStore, SqliteStore};
    use crate::results::testing::{case, run};

    #[test]
    fn runs_filter_by_branch_status_and_date_and_a_case_reads_across_runs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("h.sqlite3");
        let mut h = SqliteStore::open(&path).expect("open");
        for (id, branch, day, passed) in [
            ("a", "main", "01", true),
            ("b", "main", "02", true),
            ("c", "feature", "03", false),
            ("d", "main", "04", false),
        ] {
            let started = format!("2026-01-{day}T00:00:00Z");
            let cases = vec![
                case("x", Some(if passed { 1.0 } else { 0.2 }), Some(passed)),
                case("y", Some(1.0), Some(true)),
            ];
            h.insert(&run(id, branch, &started, cases)).expect("insert");
        }
        drop(h);
        let h = SqliteStore::open_read_only(&path).expect("open read-only");
        let ids = |q: RunQuery| -> Vec<String> {
            h.runs(&q)
                .expect("runs")
                .into_iter()
                .map(|r| r.id)
                .collect()
        };
        assert_eq!(ids(RunQuery::default()), ["d", "c", "b", "a"]);
        let main = RunQuery {
            branch: Some("main".into()),
            ..Default::default()
        };
        assert_eq!(ids(main.clone()), ["d", "b", "a"]);
        let dates = RunQuery {
            since: Some("2026-01-02".into()),
            before: Some("2026-01-04".into()),
            ..Default::default()
        };
        assert_eq!(ids(dates), ["c", "b"]);
        let aborted = RunQuery {
            status: Some(crate::results::RunStatus::Aborted),
            ..Default::default()
        };
        assert!(ids(aborted).is_empty());
        let x = h
            .case_runs(&CaseQuery {
                case: "x".into(),
                ..Default::default()
            })
            .expect("case");
        let seen: Vec<(i64, &str)> = x.iter().map(|c| (c.number, c.verdict())).collect();
        assert_eq!(seen, [(1, "pass"), (2, "pass"), (3, "fail"), (4, "fail")]);
        let on_main = h
            .case_runs(&CaseQuery {
                case: "x".into(),
                branch: Some("main".into()),
                limit: Some(2),
                ..Default::default()
            })
            .expect("case");
        assert_eq!(
            on_main.iter().map(|c| c.number).collect::<Vec<_>>(),
            [2, 4],
            "the newest two on main, oldest first"
        );
        let trend = h.scores_on_branch("main", None, 2).expect("trend");
        assert_eq!(
            trend.iter().map(|p| p.run_id.as_str()).collect::<Vec<_>>(),
            ["b", "d"]
        );
        // No statement through the read-only store writes.
        let e = h
            .conn()
            .execute_batch("DELETE FROM runs")
            .expect_err("read-only");
        assert!(e.to_string().contains("readonly"), "{e}");
    }

    #[test]
    fn a_history_from_before_the_readers_indexes_is_migrated_then_read_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("h.sqlite3");
        drop(SqliteStore::open(&path).expect("open"));
        // As a version without migration 0004 left it.
        let old = rusqlite::Connection::open(&path).expect("open");
        old.execute_batch(
            "DROP INDEX case_results_by_case; DROP INDEX runs_by_branch_started;
             DROP INDEX runs_by_started; PRAGMA user_version = 3",
        )
        .expect("downgrade");
        drop(old);
        let h = SqliteStore::open_read_only(&path).expect("open read-only");
        let indexes: i64 = h
            .conn()
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name IN
                 ('case_results_by_case', 'runs_by_branch_started', 'runs_by_started')",
                [],
                |r| r.get(0),
            )
            .expect("count");
        assert_eq!(indexes, 3);
        assert!(
            h.conn().execute_batch("DELETE FROM runs").is_err(),
            "read-only"
        );
    }
}
