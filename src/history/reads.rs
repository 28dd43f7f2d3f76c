//! What a reader of the history asks beyond the gate's needs (`evals dashboard`): runs by
//! suite, branch, status and date; one case across runs; a branch's experiment scores over
//! time. Each is one indexed query (migration 0004) on either store, read from the
//! queryable tables, never from the snapshots.

use rusqlite::named_params;
use serde::Serialize;

#[cfg(feature = "postgres")]
use super::PgStore;
use super::{RunSummary, SqliteStore};
use crate::error::Result;

/// Which runs [`super::HistoryStore::runs`] returns, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunQuery {
    /// Only runs of this suite.
    pub suite: Option<String>,
    /// Only runs on this branch.
    pub branch: Option<String>,
    /// Only runs with this status: completed, interrupted or aborted.
    pub status: Option<String>,
    /// Only runs that started at or after this time (RFC 3339, or a prefix such as a date:
    /// times compare as text).
    pub since: Option<String>,
    /// Only runs that started before this time (as `since`).
    pub before: Option<String>,
    /// At most this many runs.
    pub limit: Option<usize>,
}

/// Which results of one case [`super::HistoryStore::case_runs`] returns.
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
    /// When the run started (RFC 3339, UTC).
    pub started_at: String,
    /// The run's git branch, when known.
    pub branch: Option<String>,
    /// The run's git commit, when known.
    pub commit: Option<String>,
    /// The run's suite.
    pub suite: String,
    /// The run's status: completed, interrupted or aborted.
    pub status: String,
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
    /// When the run started (RFC 3339, UTC).
    pub started_at: String,
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

fn limit_of(limit: Option<usize>) -> Option<i64> {
    limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX))
}

/// The runs in time order (`runs_by_started`, read backwards and cut at the limit), each
/// one's figures from its experiments (`experiments_by_run`).
const SQLITE_RUNS: &str =
    "SELECT r.id, r.started_at, r.branch, r.\"commit\", r.suite, r.command, r.mode, r.status,
        (SELECT COALESCE(SUM(x.cases_total), 0) FROM experiments x WHERE x.run_id = r.id),
        (SELECT AVG(x.score) FROM experiments x WHERE x.run_id = r.id),
        (SELECT COALESCE(SUM(x.errors), 0) FROM experiments x WHERE x.run_id = r.id),
        r.number
 FROM runs r
 WHERE ($1 IS NULL OR r.suite = $1) AND ($2 IS NULL OR r.branch = $2)
   AND ($3 IS NULL OR r.status = $3)
   AND ($4 IS NULL OR r.started_at >= $4) AND ($5 IS NULL OR r.started_at < $5)
 ORDER BY r.started_at DESC, r.id DESC
 LIMIT $6";

#[cfg(feature = "postgres")]
const PG_RUNS: &str =
    "SELECT r.id, r.started_at, r.branch, r.\"commit\", r.suite, r.command, r.mode, r.status,
        (SELECT COALESCE(SUM(x.cases_total), 0)::bigint FROM experiments x WHERE x.run_id = r.id),
        (SELECT AVG(x.score) FROM experiments x WHERE x.run_id = r.id),
        (SELECT COALESCE(SUM(x.errors), 0)::bigint FROM experiments x WHERE x.run_id = r.id),
        r.number
 FROM runs r
 WHERE ($1::text IS NULL OR r.suite = $1) AND ($2::text IS NULL OR r.branch = $2)
   AND ($3::text IS NULL OR r.status = $3)
   AND ($4::text IS NULL OR r.started_at >= $4) AND ($5::text IS NULL OR r.started_at < $5)
 ORDER BY r.started_at DESC, r.id DESC
 LIMIT $6";

/// The case's rows found by `case_results_by_case`, newest run first.
const SQLITE_CASE: &str =
    "SELECT r.number, r.id, r.started_at, r.branch, r.\"commit\", r.suite, r.status,
        x.contender, x.dataset, c.\"case\", c.fingerprint, c.score, c.passed, c.error
 FROM case_results c JOIN experiments x ON x.id = c.experiment_id JOIN runs r ON r.id = x.run_id
 WHERE c.\"case\" = $1 AND ($2 IS NULL OR x.dataset = $2) AND ($3 IS NULL OR r.suite = $3)
   AND ($4 IS NULL OR r.branch = $4)
 ORDER BY r.started_at DESC, r.id DESC, x.id DESC
 LIMIT $5";

#[cfg(feature = "postgres")]
const PG_CASE: &str = "SELECT r.number, r.id, r.started_at, r.branch, r.\"commit\", r.suite, r.status,
        x.contender, x.dataset, c.\"case\", c.fingerprint, c.score, c.passed, c.error
 FROM case_results c JOIN experiments x ON x.id = c.experiment_id JOIN runs r ON r.id = x.run_id
 WHERE c.\"case\" = $1 AND ($2::text IS NULL OR x.dataset = $2) AND ($3::text IS NULL OR r.suite = $3)
   AND ($4::text IS NULL OR r.branch = $4)
 ORDER BY r.started_at DESC, r.id DESC, x.id DESC
 LIMIT $5";

/// The newest completed runs on a branch (`runs_by_branch_started`), then their
/// experiments (`experiments_by_run`), oldest first.
const SQLITE_SCORES: &str =
    "SELECT r.number, r.id, r.started_at, r.\"commit\", r.suite, x.contender, x.dataset, x.score
 FROM (SELECT id, number, started_at, \"commit\", suite FROM runs
       WHERE branch = $1 AND status = 'completed' AND ($2 IS NULL OR suite = $2)
       ORDER BY started_at DESC, id DESC LIMIT $3) r
 JOIN experiments x ON x.run_id = r.id
 ORDER BY r.started_at, r.id, x.id";

#[cfg(feature = "postgres")]
const PG_SCORES: &str =
    "SELECT r.number, r.id, r.started_at, r.\"commit\", r.suite, x.contender, x.dataset, x.score
 FROM (SELECT id, number, started_at, \"commit\", suite FROM runs
       WHERE branch = $1 AND status = 'completed' AND ($2::text IS NULL OR suite = $2)
       ORDER BY started_at DESC, id DESC LIMIT $3) r
 JOIN experiments x ON x.run_id = r.id
 ORDER BY r.started_at, r.id, x.id";

fn count(n: i64) -> usize {
    usize::try_from(n).unwrap_or(0)
}

impl SqliteStore {
    /// Runs matching `q`, newest first.
    pub fn runs(&self, q: &RunQuery) -> Result<Vec<RunSummary>> {
        let mut stmt = self.conn().prepare(SQLITE_RUNS).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(
                named_params! {
                    "$1": q.suite, "$2": q.branch, "$3": q.status, "$4": q.since,
                    "$5": q.before, "$6": limit_of(q.limit).unwrap_or(-1),
                },
                |r| {
                    Ok(RunSummary {
                        number: r.get(11)?,
                        id: r.get(0)?,
                        started_at: r.get(1)?,
                        branch: r.get(2)?,
                        commit: r.get(3)?,
                        suite: r.get(4)?,
                        command: r.get(5)?,
                        mode: r.get(6)?,
                        status: r.get(7)?,
                        cases: count(r.get(8)?),
                        score: r.get(9)?,
                        errors: count(r.get(10)?),
                    })
                },
            )
            .map_err(|e| self.err(e))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(|e| self.err(e))
    }

    /// The results of one case across runs, oldest first.
    pub fn case_runs(&self, q: &CaseQuery) -> Result<Vec<CaseRun>> {
        let mut stmt = self.conn().prepare(SQLITE_CASE).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(
                named_params! {
                    "$1": q.case, "$2": q.dataset, "$3": q.suite, "$4": q.branch,
                    "$5": limit_of(q.limit).unwrap_or(-1),
                },
                |r| {
                    Ok(CaseRun {
                        number: r.get(0)?,
                        run_id: r.get(1)?,
                        started_at: r.get(2)?,
                        branch: r.get(3)?,
                        commit: r.get(4)?,
                        suite: r.get(5)?,
                        status: r.get(6)?,
                        contender: r.get(7)?,
                        dataset: r.get(8)?,
                        case: r.get(9)?,
                        fingerprint: r.get(10)?,
                        score: r.get(11)?,
                        passed: r.get(12)?,
                        error: r.get(13)?,
                    })
                },
            )
            .map_err(|e| self.err(e))?;
        let mut rows = rows
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(|e| self.err(e))?;
        rows.reverse();
        Ok(rows)
    }

    /// Each experiment's score in the last `last` completed runs on `branch`, oldest first.
    pub fn scores_on_branch(
        &self,
        branch: &str,
        suite: Option<&str>,
        last: usize,
    ) -> Result<Vec<ScorePoint>> {
        let mut stmt = self
            .conn()
            .prepare(SQLITE_SCORES)
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(
                named_params! {"$1": branch, "$2": suite, "$3": limit_of(Some(last))},
                |r| {
                    Ok(ScorePoint {
                        number: r.get(0)?,
                        run_id: r.get(1)?,
                        started_at: r.get(2)?,
                        commit: r.get(3)?,
                        suite: r.get(4)?,
                        contender: r.get(5)?,
                        dataset: r.get(6)?,
                        score: r.get(7)?,
                    })
                },
            )
            .map_err(|e| self.err(e))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(|e| self.err(e))
    }
}

#[cfg(feature = "postgres")]
impl PgStore {
    /// Opens the database at `url` (migrating it as [`PgStore::open`] does) with every
    /// later transaction of its session read-only (`evals dashboard`).
    pub fn open_read_only(url: &str) -> Result<PgStore> {
        PgStore::open(url)?.into_read_only()
    }

    /// [`PgStore::open_read_only`] with the variables of [`PgStore::open_with`].
    pub fn open_read_only_with(url: &str, vars: &crate::env::PostgresVars) -> Result<PgStore> {
        PgStore::open_with(url, vars)?.into_read_only()
    }

    /// Runs matching `q`, newest first, as [`SqliteStore::runs`].
    pub fn runs(&self, q: &RunQuery) -> Result<Vec<RunSummary>> {
        let shown = self.location().to_string();
        let limit = limit_of(q.limit);
        self.with(|c| {
            let rows = c
                .query(
                    PG_RUNS,
                    &[&q.suite, &q.branch, &q.status, &q.since, &q.before, &limit],
                )
                .map_err(|e| super::postgres::pg_err(&shown, e))?;
            Ok(rows
                .iter()
                .map(|r| RunSummary {
                    number: r.get(11),
                    id: r.get(0),
                    started_at: r.get(1),
                    branch: r.get(2),
                    commit: r.get(3),
                    suite: r.get(4),
                    command: r.get(5),
                    mode: r.get(6),
                    status: r.get(7),
                    cases: count(r.get(8)),
                    score: r.get(9),
                    errors: count(r.get(10)),
                })
                .collect())
        })
    }

    /// The results of one case across runs, oldest first, as [`SqliteStore::case_runs`].
    pub fn case_runs(&self, q: &CaseQuery) -> Result<Vec<CaseRun>> {
        let shown = self.location().to_string();
        let limit = limit_of(q.limit);
        self.with(|c| {
            let rows = c
                .query(PG_CASE, &[&q.case, &q.dataset, &q.suite, &q.branch, &limit])
                .map_err(|e| super::postgres::pg_err(&shown, e))?;
            Ok(rows
                .iter()
                .rev()
                .map(|r| CaseRun {
                    number: r.get(0),
                    run_id: r.get(1),
                    started_at: r.get(2),
                    branch: r.get(3),
                    commit: r.get(4),
                    suite: r.get(5),
                    status: r.get(6),
                    contender: r.get(7),
                    dataset: r.get(8),
                    case: r.get(9),
                    fingerprint: r.get(10),
                    score: r.get(11),
                    passed: r.get(12),
                    error: r.get(13),
                })
                .collect())
        })
    }

    /// Each experiment's score in the last `last` completed runs on `branch`, oldest first.
    pub fn scores_on_branch(
        &self,
        branch: &str,
        suite: Option<&str>,
        last: usize,
    ) -> Result<Vec<ScorePoint>> {
        let shown = self.location().to_string();
        let limit = limit_of(Some(last));
        self.with(|c| {
            let rows = c
                .query(PG_SCORES, &[&branch, &suite, &limit])
                .map_err(|e| super::postgres::pg_err(&shown, e))?;
            Ok(rows
                .iter()
                .map(|r| ScorePoint {
                    number: r.get(0),
                    run_id: r.get(1),
                    started_at: r.get(2),
                    commit: r.get(3),
                    suite: r.get(4),
                    contender: r.get(5),
                    dataset: r.get(6),
                    score: r.get(7),
                })
                .collect())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::HistoryStore;
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
            HistoryStore::runs(&h, &q)
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
            status: Some("aborted".into()),
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
