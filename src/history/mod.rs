//! Run history: where a run came from (git) and, in a store, every run kept.
//!
//! [`HistoryStore`] is what the run's sinks and the gate's baseline lookup need of a store;
//! [`SqliteStore`] (a file beside the project, the default) is the one implementation
//! today. A store for a shared database (PostgreSQL) implements the same trait.

mod error;
pub(crate) mod git;
pub(crate) mod store;

pub use error::HistoryError;
pub use store::{BranchRun, History, RunFilter, RunSummary, SqliteStore};

use crate::error::Result;
use crate::results::{CaseLog, RunResult};

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
}
