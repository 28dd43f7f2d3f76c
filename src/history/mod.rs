//! Run history: where a run came from (git) and, in a store, every run kept.
//!
//! Two traits say what a store does. [`RunStore`] is what the run's sinks and the gate need:
//! store a run, read one back, find one by reference, list the baseline candidates.
//! [`HistoryReads`] is what a reader of the history needs beyond that (`evals history`,
//! `evals flaky`, `evals dashboard`): runs by filter, one case across runs, a branch's
//! trend, a cap on the snapshots read. [`HistoryStore`] is both, for a caller that takes "a
//! full history"; every type with both has it.
//!
//! Three stores implement them: [`SqliteStore`] (a file beside the project, the default),
//! [`PgStore`] (a PostgreSQL database many runners share) and [`MysqlStore`] (a MySQL or
//! MariaDB database, the same). What the three share is written once in `sql.rs` (the
//! run-reference rule, the baseline candidates, the readers, the row mapping); each store's
//! file holds its connection, its migrations and its dialect's SQL. [`Location`] is where a
//! history is, as `--history`, `EVALS_HISTORY`, `history.url` or `DATABASE_URL` named it,
//! and opens it as an [`AnyStore`].

pub mod git;
mod location;
#[cfg(feature = "mysql")]
pub mod mysql;
#[cfg(feature = "postgres")]
pub mod postgres;
mod reads;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod remote;
mod sql;
mod sqlite;
pub mod url;

pub use crate::error::HistoryError;
pub use location::Location;
#[cfg(feature = "mysql")]
pub use mysql::MysqlStore;
#[cfg(feature = "postgres")]
pub use postgres::PgStore;
pub use reads::{BranchRun, CaseQuery, CaseRun, RunFilter, RunQuery, RunSummary, ScorePoint};
pub use sqlite::{History, SqliteStore};

use crate::error::{Error, Result};
use crate::results::{CaseLog, RunResult};

/// A cap on the size of the run snapshots a store reads back
/// ([`HistoryReads::limit_snapshots`]): a run over it is an error naming `key`, and its
/// snapshot is never read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotLimit {
    /// The largest snapshot read, in bytes.
    pub bytes: u64,
    /// What sets it, as the error names it (`--max-run-bytes`).
    pub key: &'static str,
}

/// Where runs are kept, as the run's sinks and the gate use it. A run is stored once, at
/// its end, with its final status (a stopped run too, as `interrupted` or `aborted`), and
/// never rewritten.
pub trait RunStore {
    /// Where the store is, as a message names it (a path, a database URL without its
    /// password).
    fn location(&self) -> String;

    /// Stores a finished run whose case results are in `cases` (its experiments' `cases`
    /// empty): every row in one transaction, the cases streamed from the log.
    fn store(&mut self, run: &RunResult, cases: &CaseLog) -> Result<()>;

    /// Stores a run held whole in memory (its cases in its experiments), through
    /// [`RunStore::store`]: its cases logged as the runner logs them.
    fn insert(&mut self, run: &RunResult) -> Result<()> {
        let (bare, log) = logged(run)?;
        self.store(&bare, &log)
    }

    /// Stores `run` under the `number` it had in another history (`evals history
    /// migrate`); a number another run holds is refused. Only a database history takes a
    /// number given: by default this refuses.
    fn insert_numbered(&mut self, run: &RunResult, number: i64) -> Result<()> {
        let _ = (run, number);
        Err(Error::Usage(format!(
            "{}: this history numbers its own runs; migrate into a database history (postgres:// or mysql://)",
            self.location()
        )))
    }

    /// The run with this id, as it was stored.
    fn get(&self, id: &str) -> Result<Option<RunResult>>;

    /// The run with this id for the gate: as [`RunStore::get`] reads it, but its cases in
    /// a case log instead of in its experiments, and without its planned cases' keys
    /// ([`crate::results::snapshot::read_logged`]), so a baseline of 100,000 cases is
    /// held in no more memory than one of 1,000. By default read whole, then logged.
    fn get_logged(&self, id: &str) -> Result<Option<(RunResult, CaseLog)>> {
        self.get(id)?.map(|r| logged(&r)).transpose()
    }

    /// The id of the run `reference` names: its number (`3` or `#3`), its id, or a unique
    /// prefix of its id (at least 4 characters). `None` when no run matches; a prefix that
    /// matches several runs is an error listing them.
    fn find(&self, reference: &str) -> Result<Option<String>>;

    /// The completed runs of `suite` on `branch` that started before the run `exclude_id`
    /// (which started at `before`), newest first: the baseline candidates. Never a run from
    /// the future: `started_at` has whole seconds, so within `before`'s second the
    /// time-ordered (v7, taken at the start) ids decide which run came first.
    fn runs_on_branch(
        &self,
        suite: &str,
        branch: &str,
        before: &str,
        exclude_id: &str,
    ) -> Result<Vec<BranchRun>>;
}

/// What a reader of the history asks beyond the gate's needs (`evals history`, `evals
/// flaky`, `evals dashboard`).
pub trait HistoryReads {
    /// Runs matching the query (suite, branch, status, a time range), newest first.
    fn runs(&self, query: &RunQuery) -> Result<Vec<RunSummary>>;

    /// One case's results across runs (each contender's), oldest run first.
    fn case_runs(&self, query: &CaseQuery) -> Result<Vec<CaseRun>>;

    /// Each experiment's primary score in the last `last` completed runs on `branch` (of
    /// `suite`, when given), oldest first: a trend.
    fn scores_on_branch(
        &self,
        branch: &str,
        suite: Option<&str>,
        last: usize,
    ) -> Result<Vec<ScorePoint>>;

    /// Refuses from now on to read back any run whose snapshot is larger than `limit` (the
    /// run and its baseline alike): `evals dashboard` caps what a request can make it read.
    fn limit_snapshots(&mut self, limit: SnapshotLimit);

    /// Runs matching the filter, newest first (`evals history`): [`HistoryReads::runs`]
    /// with fewer filters.
    fn list(&self, filter: &RunFilter) -> Result<Vec<RunSummary>> {
        self.runs(&RunQuery {
            suite: filter.suite.clone(),
            branch: filter.branch.clone(),
            limit: filter.limit,
            ..Default::default()
        })
    }

    /// The id of the newest run (of `suite`, when given).
    fn latest(&self, suite: Option<&str>) -> Result<Option<String>> {
        Ok(self
            .list(&RunFilter {
                suite: suite.map(str::to_string),
                branch: None,
                limit: Some(1),
            })?
            .into_iter()
            .next()
            .map(|r| r.id))
    }
}

/// A full history: a [`RunStore`] that a reader can also ask ([`HistoryReads`]). Every type
/// with both traits has this one; take `&dyn HistoryStore` where both are needed.
pub trait HistoryStore: RunStore + HistoryReads {}

impl<T: RunStore + HistoryReads + ?Sized> HistoryStore for T {}

/// Any store, open: what a [`Location`] opens (a SQLite file or a database).
pub type AnyStore = Box<dyn HistoryStore + Send>;

impl<T: RunStore + ?Sized> RunStore for Box<T> {
    fn location(&self) -> String {
        (**self).location()
    }

    fn store(&mut self, run: &RunResult, cases: &CaseLog) -> Result<()> {
        (**self).store(run, cases)
    }

    fn insert(&mut self, run: &RunResult) -> Result<()> {
        (**self).insert(run)
    }

    fn insert_numbered(&mut self, run: &RunResult, number: i64) -> Result<()> {
        (**self).insert_numbered(run, number)
    }

    fn get(&self, id: &str) -> Result<Option<RunResult>> {
        (**self).get(id)
    }

    fn get_logged(&self, id: &str) -> Result<Option<(RunResult, CaseLog)>> {
        (**self).get_logged(id)
    }

    fn find(&self, reference: &str) -> Result<Option<String>> {
        (**self).find(reference)
    }

    fn runs_on_branch(
        &self,
        suite: &str,
        branch: &str,
        before: &str,
        exclude_id: &str,
    ) -> Result<Vec<BranchRun>> {
        (**self).runs_on_branch(suite, branch, before, exclude_id)
    }
}

impl<T: HistoryReads + ?Sized> HistoryReads for Box<T> {
    fn runs(&self, query: &RunQuery) -> Result<Vec<RunSummary>> {
        (**self).runs(query)
    }

    fn case_runs(&self, query: &CaseQuery) -> Result<Vec<CaseRun>> {
        (**self).case_runs(query)
    }

    fn scores_on_branch(
        &self,
        branch: &str,
        suite: Option<&str>,
        last: usize,
    ) -> Result<Vec<ScorePoint>> {
        (**self).scores_on_branch(branch, suite, last)
    }

    fn limit_snapshots(&mut self, limit: SnapshotLimit) {
        (**self).limit_snapshots(limit)
    }

    fn list(&self, filter: &RunFilter) -> Result<Vec<RunSummary>> {
        (**self).list(filter)
    }

    fn latest(&self, suite: Option<&str>) -> Result<Option<String>> {
        (**self).latest(suite)
    }
}

/// A run held whole in memory (its cases in its experiments) as a store takes it: the run
/// without its cases, and its cases in a case log, as the runner logs them.
pub(crate) fn logged(run: &RunResult) -> Result<(RunResult, CaseLog)> {
    let sizes: Vec<usize> = run.experiments.iter().map(|e| e.cases.len()).collect();
    let log = CaseLog::new(&sizes)?;
    let mut bare = run.clone();
    for (i, e) in bare.experiments.iter_mut().enumerate() {
        for (j, c) in e.cases.drain(..).enumerate() {
            log.push(i, j, &c);
        }
    }
    Ok((bare, log))
}

/// The error of a snapshot over `limit`.
pub(crate) fn too_large(
    path: std::path::PathBuf,
    id: &str,
    size: u64,
    limit: Option<SnapshotLimit>,
) -> Error {
    let (limit, key) = limit.map_or((0, "the limit"), |l| (l.bytes, l.key));
    HistoryError::TooLarge {
        path,
        id: id.to_string(),
        size,
        limit,
        key,
    }
    .into()
}
