//! The sinks every `evals run` has beside the progress bars: the history store and the JSON
//! snapshot. Both act when the run finishes (stopped runs too), streaming the cases from
//! the run's case log; each keeps how it went for the caller to tell.

use std::path::PathBuf;
use std::sync::Mutex;

use super::events::{Event, Sink};
use crate::error::Result;
use crate::history::HistoryStore;
use crate::results::{CaseLog, RunResult};

/// Where a run's snapshot goes, decided once the run is known (its name has the command and
/// the time in it).
pub type SnapshotPath = Box<dyn Fn(&RunResult) -> PathBuf + Send + Sync>;

/// Stores the finished run in a [`HistoryStore`], opened when the run finishes (so a run
/// that never finishes creates no file).
pub struct HistorySink<S> {
    open: Box<dyn Fn() -> Result<S> + Send + Sync>,
    outcome: Mutex<Option<Result<String>>>,
}

impl<S: HistoryStore> HistorySink<S> {
    /// A sink storing into the store `open` opens.
    pub fn new(open: impl Fn() -> Result<S> + Send + Sync + 'static) -> HistorySink<S> {
        HistorySink {
            open: Box::new(open),
            outcome: Mutex::new(None),
        }
    }

    /// Where the run was stored, or why it could not be; `None` before the run finished.
    pub fn outcome(&self) -> Option<Result<String>> {
        lock(&self.outcome).take()
    }

    fn store(&self, run: &RunResult, cases: &CaseLog) -> Result<String> {
        let mut store = (self.open)()?;
        store.store(run, cases)?;
        Ok(store.location())
    }
}

impl<S: HistoryStore> Sink for HistorySink<S> {
    fn event(&self, event: &Event<'_>) {
        if let Event::RunFinished { run, cases } = event {
            *lock(&self.outcome) = Some(self.store(run, cases));
        }
    }
}

/// Writes the finished run's JSON snapshot, pretty, its cases streamed from the case log
/// into a temporary file renamed into place at the end (a reader never sees half a file),
/// every piece scrubbed of secrets ([`crate::error::write_atomic_streamed`]).
pub struct SnapshotSink {
    path: SnapshotPath,
    outcome: Mutex<Option<Result<PathBuf>>>,
}

impl SnapshotSink {
    /// A sink writing to the path `path` names for the run.
    pub fn new(path: SnapshotPath) -> SnapshotSink {
        SnapshotSink {
            path,
            outcome: Mutex::new(None),
        }
    }

    /// The file written, or why it was not; `None` before the run finished.
    pub fn outcome(&self) -> Option<Result<PathBuf>> {
        lock(&self.outcome).take()
    }
}

/// Writes `run` (its cases in `cases`) to `path` as the JSON snapshot, byte for byte what
/// [`crate::report::json::Json`] renders for the whole run.
pub fn save_snapshot(path: &std::path::Path, run: &RunResult, cases: &CaseLog) -> Result<()> {
    crate::error::write_atomic_streamed(path, |out| {
        crate::results::write_json(run, cases, true, out)?;
        out.write_all(b"\n")
            .map_err(|e| crate::error::Error::io(path, e))
    })
}

impl Sink for SnapshotSink {
    fn event(&self, event: &Event<'_>) {
        if let Event::RunFinished { run, cases } = event {
            let path = (self.path)(run);
            let done = save_snapshot(&path, run, cases).map(|()| path);
            *lock(&self.outcome) = Some(done);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
