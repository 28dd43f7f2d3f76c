//! Run history: where a run came from (git) and, in a store, every run kept.
//!
//! [`HistoryStore`] is what the run's sinks and the gate's baseline lookup need of a store;
//! [`SqliteStore`] (a file beside the project, the default) and [`PgStore`] (a PostgreSQL
//! database many runners share) implement it. [`Location`] is where a history is, as
//! `--history`, `EVALS_HISTORY`, `history.url` or `DATABASE_URL` named it, and opens it.

pub mod git;
#[cfg(feature = "postgres")]
pub mod postgres;
pub(crate) mod reads;
pub(crate) mod store;
pub mod url;

pub use crate::error::HistoryError;
#[cfg(feature = "postgres")]
pub use postgres::PgStore;
pub use reads::{CaseQuery, CaseRun, RunQuery, ScorePoint};
pub use store::{BranchRun, History, RunFilter, RunSummary, SqliteStore};

use crate::error::Result;
use crate::results::{CaseLog, RunResult};

/// A cap on the size of the run snapshots a store reads back ([`AnyStore::limit_snapshots`]):
/// a run over it is an error naming `key`, and its snapshot is never read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotLimit {
    /// The largest snapshot read, in bytes.
    pub bytes: u64,
    /// What sets it, as the error names it (`--max-run-bytes`).
    pub key: &'static str,
}

/// The error of a snapshot over `limit`.
pub(crate) fn too_large(
    path: std::path::PathBuf,
    id: &str,
    size: u64,
    limit: Option<SnapshotLimit>,
) -> crate::error::Error {
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

/// Where runs are kept. A run is stored once, at its end, with its final status (a stopped
/// run too, as `interrupted` or `aborted`), and never rewritten.
pub trait HistoryStore {
    /// Where the store is, as a message names it (a path, a database URL without its
    /// password).
    fn location(&self) -> String;

    /// Stores a finished run whose case results are in `cases` (its experiments' `cases`
    /// empty): every row in one transaction, the cases streamed from the log.
    fn store(&mut self, run: &RunResult, cases: &CaseLog) -> Result<()>;

    /// Stores a run held whole in memory (its cases in its experiments), through
    /// [`HistoryStore::store`]: its cases logged as the runner logs them.
    fn insert(&mut self, run: &RunResult) -> Result<()> {
        let sizes: Vec<usize> = run.experiments.iter().map(|e| e.cases.len()).collect();
        let log = CaseLog::new(&sizes)?;
        let mut bare = run.clone();
        for (i, e) in bare.experiments.iter_mut().enumerate() {
            for (j, c) in e.cases.drain(..).enumerate() {
                log.push(i, j, &c);
            }
        }
        self.store(&bare, &log)
    }

    /// The run with this id, as it was stored.
    fn get(&self, id: &str) -> Result<Option<RunResult>>;

    /// The id of the run `reference` names (a number, an id, a unique id prefix).
    fn find(&self, reference: &str) -> Result<Option<String>>;

    /// The completed runs of `suite` on `branch` that started before the run `exclude_id`
    /// (which started at `before`), newest first: the baseline candidates.
    fn runs_on_branch(
        &self,
        suite: &str,
        branch: &str,
        before: &str,
        exclude_id: &str,
    ) -> Result<Vec<BranchRun>>;

    /// Runs matching the filter, newest first (`evals history`).
    fn list(&self, filter: &RunFilter) -> Result<Vec<RunSummary>>;

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
}

impl HistoryStore for SqliteStore {
    fn location(&self) -> String {
        self.path().display().to_string()
    }

    fn store(&mut self, run: &RunResult, cases: &CaseLog) -> Result<()> {
        SqliteStore::store(self, run, cases)
    }

    fn get(&self, id: &str) -> Result<Option<RunResult>> {
        SqliteStore::get(self, id)
    }

    fn find(&self, reference: &str) -> Result<Option<String>> {
        SqliteStore::find(self, reference)
    }

    fn runs_on_branch(
        &self,
        suite: &str,
        branch: &str,
        before: &str,
        exclude_id: &str,
    ) -> Result<Vec<BranchRun>> {
        SqliteStore::runs_on_branch(self, suite, branch, before, exclude_id)
    }

    fn list(&self, filter: &RunFilter) -> Result<Vec<RunSummary>> {
        SqliteStore::list(self, filter)
    }

    fn runs(&self, query: &RunQuery) -> Result<Vec<RunSummary>> {
        SqliteStore::runs(self, query)
    }

    fn case_runs(&self, query: &CaseQuery) -> Result<Vec<CaseRun>> {
        SqliteStore::case_runs(self, query)
    }

    fn scores_on_branch(
        &self,
        branch: &str,
        suite: Option<&str>,
        last: usize,
    ) -> Result<Vec<ScorePoint>> {
        SqliteStore::scores_on_branch(self, branch, suite, last)
    }
}

/// The baseline candidates, one query for either store (the baseline rule is the same on
/// both): the completed runs of suite `$1` on branch `$2` that started before `$3` (within
/// its second, those whose time-ordered id is below `$4`), `$4` itself left out, newest
/// first. Text compares byte-wise on both (SQLite's default, `COLLATE "C"` columns on
/// PostgreSQL).
pub const BASELINE_CANDIDATES: &str =
    "SELECT id, suite_fingerprint, CAST(settings AS TEXT) FROM runs
 WHERE suite = $1 AND branch = $2 AND status = 'completed'
   AND id <> $4
   AND (started_at < $3 OR (started_at = $3 AND id < $4))
 ORDER BY started_at DESC, id DESC";

#[cfg(feature = "postgres")]
impl HistoryStore for PgStore {
    fn location(&self) -> String {
        PgStore::location(self).to_string()
    }

    fn store(&mut self, run: &RunResult, cases: &CaseLog) -> Result<()> {
        PgStore::store(self, run, cases)
    }

    fn get(&self, id: &str) -> Result<Option<RunResult>> {
        PgStore::get(self, id)
    }

    fn find(&self, reference: &str) -> Result<Option<String>> {
        PgStore::find(self, reference)
    }

    fn runs_on_branch(
        &self,
        suite: &str,
        branch: &str,
        before: &str,
        exclude_id: &str,
    ) -> Result<Vec<BranchRun>> {
        PgStore::runs_on_branch(self, suite, branch, before, exclude_id)
    }

    fn list(&self, filter: &RunFilter) -> Result<Vec<RunSummary>> {
        PgStore::list(self, filter)
    }

    fn runs(&self, query: &RunQuery) -> Result<Vec<RunSummary>> {
        PgStore::runs(self, query)
    }

    fn case_runs(&self, query: &CaseQuery) -> Result<Vec<CaseRun>> {
        PgStore::case_runs(self, query)
    }

    fn scores_on_branch(
        &self,
        branch: &str,
        suite: Option<&str>,
        last: usize,
    ) -> Result<Vec<ScorePoint>> {
        PgStore::scores_on_branch(self, branch, suite, last)
    }
}

/// Where a history is: a SQLite file or a PostgreSQL database.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Location {
    /// A SQLite file.
    Sqlite(std::path::PathBuf),
    /// A `postgres://` / `postgresql://` URL, its password in it (never shown: see
    /// [`Location::shown`]).
    Postgres(String),
}

impl Location {
    /// `value` as a location: a PostgreSQL URL, else a file (relative to `base`).
    pub fn parse(value: &str, base: &std::path::Path) -> Location {
        if url::is_postgres(value) {
            url::register_password(value);
            Location::Postgres(value.trim().to_string())
        } else {
            Location::Sqlite(base.join(value))
        }
    }

    /// How messages name it: the path, or the URL without its password.
    pub fn shown(&self) -> String {
        match self {
            Location::Sqlite(p) => p.display().to_string(),
            Location::Postgres(url) => url::redact(url),
        }
    }

    /// Whether there may be runs there: the file exists (a database is always asked).
    pub fn exists(&self) -> bool {
        match self {
            Location::Sqlite(p) => p.is_file(),
            Location::Postgres(_) => true,
        }
    }

    /// Opens (creating and migrating as needed) the store. Nothing is read from the
    /// environment: a PostgreSQL URL must hold what it needs ([`Location::open_with`] takes
    /// `PGPASSWORD` and the timeouts' variables from an environment).
    pub fn open(&self) -> Result<AnyStore> {
        self.open_with(&crate::env::Environment::default())
    }

    /// [`Location::open`], a PostgreSQL store given what `env` holds of its variables
    /// ([`Environment::postgres`](crate::env::Environment::postgres)) where its URL leaves
    /// them out.
    pub fn open_with(&self, env: &crate::env::Environment) -> Result<AnyStore> {
        #[cfg(not(feature = "postgres"))]
        let _ = env;
        Ok(match self {
            Location::Sqlite(p) => AnyStore::Sqlite(SqliteStore::open(p)?),
            #[cfg(feature = "postgres")]
            Location::Postgres(url) => {
                AnyStore::Postgres(Box::new(PgStore::open_with(url, &env.postgres)?))
            }
            #[cfg(not(feature = "postgres"))]
            Location::Postgres(url) => return Err(without_postgres(url)),
        })
    }

    /// Opens the store for reading alone (`evals dashboard`): a read-only SQLite
    /// connection, or a PostgreSQL session whose transactions are read-only. Either is
    /// migrated first when its schema is older than this binary's, as any command would.
    pub fn open_read_only(&self) -> Result<AnyStore> {
        self.open_read_only_with(&crate::env::Environment::default())
    }

    /// [`Location::open_read_only`], with `env`'s PostgreSQL variables as
    /// [`Location::open_with`].
    pub fn open_read_only_with(&self, env: &crate::env::Environment) -> Result<AnyStore> {
        #[cfg(not(feature = "postgres"))]
        let _ = env;
        Ok(match self {
            Location::Sqlite(p) => AnyStore::Sqlite(SqliteStore::open_read_only(p)?),
            #[cfg(feature = "postgres")]
            Location::Postgres(url) => {
                AnyStore::Postgres(Box::new(PgStore::open_read_only_with(url, &env.postgres)?))
            }
            #[cfg(not(feature = "postgres"))]
            Location::Postgres(url) => return Err(without_postgres(url)),
        })
    }
}

/// A PostgreSQL URL given to a build without the `postgres` feature.
#[cfg(not(feature = "postgres"))]
fn without_postgres(url: &str) -> crate::error::Error {
    crate::error::Error::Usage(format!(
        "{}: this build of evals has no PostgreSQL history (the `postgres` feature): build it with `--features postgres`, or keep the history in a SQLite file",
        url::redact(url)
    ))
}

/// Either store, open: what a [`Location`] opens.
#[non_exhaustive]
#[derive(Debug)]
pub enum AnyStore {
    /// A SQLite file.
    Sqlite(SqliteStore),
    /// A PostgreSQL database (boxed: its client is the larger).
    #[cfg(feature = "postgres")]
    Postgres(Box<PgStore>),
}

impl AnyStore {
    fn inner(&self) -> &dyn HistoryStore {
        match self {
            AnyStore::Sqlite(s) => s,
            #[cfg(feature = "postgres")]
            AnyStore::Postgres(s) => s.as_ref(),
        }
    }

    /// Stores `run` under the `number` it had in another history (`evals history migrate`):
    /// only a database history takes a number given.
    pub fn insert_numbered(&mut self, run: &RunResult, number: i64) -> Result<()> {
        let _ = (run, number);
        match self {
            AnyStore::Sqlite(s) => Err(crate::error::Error::Usage(format!(
                "{}: a SQLite history numbers its own runs; migrate into a database history",
                s.path().display()
            ))),
            #[cfg(feature = "postgres")]
            AnyStore::Postgres(s) => s.insert_numbered(run, number),
        }
    }

    /// Refuses to read back any run whose snapshot is larger than `limit` (the run and its
    /// baseline alike): `evals dashboard` caps what a request can make it read.
    pub fn limit_snapshots(&mut self, limit: SnapshotLimit) {
        match self {
            AnyStore::Sqlite(s) => s.limit_snapshots(limit),
            #[cfg(feature = "postgres")]
            AnyStore::Postgres(s) => s.limit_snapshots(limit),
        }
    }

    /// The id of the newest run (of `suite`, when given).
    pub fn latest(&self, suite: Option<&str>) -> Result<Option<String>> {
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

impl HistoryStore for AnyStore {
    fn location(&self) -> String {
        self.inner().location()
    }

    fn store(&mut self, run: &RunResult, cases: &CaseLog) -> Result<()> {
        match self {
            AnyStore::Sqlite(s) => s.store(run, cases),
            #[cfg(feature = "postgres")]
            AnyStore::Postgres(s) => s.store(run, cases),
        }
    }

    fn get(&self, id: &str) -> Result<Option<RunResult>> {
        self.inner().get(id)
    }

    fn find(&self, reference: &str) -> Result<Option<String>> {
        self.inner().find(reference)
    }

    fn runs_on_branch(
        &self,
        suite: &str,
        branch: &str,
        before: &str,
        exclude_id: &str,
    ) -> Result<Vec<BranchRun>> {
        self.inner()
            .runs_on_branch(suite, branch, before, exclude_id)
    }

    fn list(&self, filter: &RunFilter) -> Result<Vec<RunSummary>> {
        self.inner().list(filter)
    }

    fn runs(&self, query: &RunQuery) -> Result<Vec<RunSummary>> {
        self.inner().runs(query)
    }

    fn case_runs(&self, query: &CaseQuery) -> Result<Vec<CaseRun>> {
        self.inner().case_runs(query)
    }

    fn scores_on_branch(
        &self,
        branch: &str,
        suite: Option<&str>,
        last: usize,
    ) -> Result<Vec<ScorePoint>> {
        self.inner().scores_on_branch(branch, suite, last)
    }
}
