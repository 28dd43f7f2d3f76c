//! The sinks every `evals run` has beside the progress bars: the history store and the JSON
//! snapshot. Both act when the run finishes (stopped runs too), streaming the cases from
//! the run's case log; each keeps how it went for the caller to tell.

use std::path::PathBuf;
use std::sync::Mutex;

use super::events::{Event, Sink};
use crate::error::Result;
use crate::history::RunStore;
use crate::results::{CaseLog, RunResult};

/// Where a run's snapshot goes, decided once the run is known (its name has the command and
/// the time in it).
pub type SnapshotPath = Box<dyn Fn(&RunResult) -> PathBuf + Send + Sync>;

/// Stores the finished run in a [`RunStore`], opened when the run finishes (so a run
/// that never finishes creates no file).
pub struct HistorySink<S> {
    open: Box<dyn Fn() -> Result<S> + Send + Sync>,
    outcome: Mutex<Option<Result<String>>>,
}

impl<S> std::fmt::Debug for HistorySink<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HistorySink").finish_non_exhaustive()
    }
}

impl<S: RunStore> HistorySink<S> {
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

impl<S: RunStore> Sink for HistorySink<S> {
    fn event(&self, event: &Event<'_>) {
        if let Event::RunFinished { run, cases } = event {
            *lock(&self.outcome) = Some(self.store(run, cases));
        }
    }
}

/// Writes the finished run's JSON snapshot, pretty, its cases streamed from the case log
/// into a temporary file renamed into place at the end (a reader never sees half a file),
/// every piece scrubbed of secrets ([`crate::fs::write_atomic_streamed`]).
pub struct SnapshotSink {
    path: SnapshotPath,
    outcome: Mutex<Option<Result<PathBuf>>>,
}

impl std::fmt::Debug for SnapshotSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnapshotSink").finish_non_exhaustive()
    }
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
    crate::fs::write_atomic_streamed(path, |out| {
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

/// Prints the terminal leaderboard (the per-dataset tables and the overall one, no
/// breakdown) when the run finishes, from the experiments' figures alone: no case is read.
/// Its text goes through the egress scrubber to the writer given (stdout for
/// [`LeaderboardSink::stdout`]).
pub struct LeaderboardSink {
    color: bool,
    out: Mutex<Box<dyn std::io::Write + Send>>,
}

impl std::fmt::Debug for LeaderboardSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderboardSink").finish_non_exhaustive()
    }
}

impl LeaderboardSink {
    /// A sink printing on `out`, in colour or not.
    pub fn new(out: Box<dyn std::io::Write + Send>, color: bool) -> LeaderboardSink {
        LeaderboardSink {
            color,
            out: Mutex::new(out),
        }
    }

    /// A sink printing on stdout, without colour.
    pub fn stdout() -> LeaderboardSink {
        LeaderboardSink::new(Box::new(std::io::stdout()), false)
    }
}

impl Sink for LeaderboardSink {
    fn event(&self, event: &Event<'_>) {
        use crate::report::Report;
        if let Event::RunFinished { run, .. } = event {
            let text = crate::report::terminal::Terminal {
                color: self.color,
                breakdown: false,
                totals: crate::report::terminal::Totals::Overall,
                width: None,
                explain: true,
            }
            .render(run, None);
            let mut out = lock(&self.out);
            // A closed pipe is the reader's choice; the run's result stands.
            let _ = out.write_all(&crate::secrets::scrub_bytes(text.as_bytes()));
            let _ = out.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::testing::{case, run};

    /// A writer whose bytes the test reads after.
    #[derive(Clone, Default)]
    struct Shared(std::sync::Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            lock(&self.0).extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn finished(sink: &dyn Sink, whole: &RunResult) {
        let log = CaseLog::new(&[whole.experiments[0].cases.len()]).unwrap();
        let mut bare = whole.clone();
        for (j, c) in bare.experiments[0].cases.drain(..).enumerate() {
            log.push(0, j, &c);
        }
        sink.event(&Event::RunFinished {
            run: &bare,
            cases: &log,
        });
    }

    #[test]
    fn the_leaderboard_sink_prints_the_board_of_the_whole_run_from_figures_alone() {
        use crate::report::Report;
        let whole = run(
            "r1",
            "main",
            "2026-01-01T00:00:00Z",
            vec![
                case("a", Some(0.5), Some(true)),
                case("b", Some(1.0), Some(true)),
            ],
        );
        let out = Shared::default();
        finished(&LeaderboardSink::new(Box::new(out.clone()), false), &whole);
        let want = crate::report::terminal::Terminal {
            color: false,
            breakdown: false,
            totals: crate::report::terminal::Totals::Overall,
            width: None,
            explain: true,
        }
        .render(&whole, None);
        assert_eq!(String::from_utf8(lock(&out.0).clone()).unwrap(), want);
    }

    #[test]
    fn the_snapshot_and_history_sinks_write_what_the_whole_run_would() {
        let dir = tempfile::tempdir().unwrap();
        let whole = run(
            "r1",
            "main",
            "2026-01-01T00:00:00Z",
            vec![case("a", Some(0.5), Some(true)), case("b", None, None)],
        );
        let path = dir.path().join("run.json");
        let snapshot = SnapshotSink::new(Box::new({
            let path = path.clone();
            move |_: &RunResult| path.clone()
        }));
        finished(&snapshot, &whole);
        assert_eq!(snapshot.outcome().unwrap().unwrap(), path);
        use crate::report::Report;
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            crate::report::json::Json.render(&whole, None)
        );
        let db = dir.path().join("h.sqlite3");
        let history = HistorySink::new({
            let db = db.clone();
            move || crate::history::SqliteStore::open(&db)
        });
        finished(&history, &whole);
        assert_eq!(
            history.outcome().unwrap().unwrap(),
            db.display().to_string()
        );
        let stored = crate::history::SqliteStore::open(&db)
            .unwrap()
            .get("r1")
            .unwrap();
        assert_eq!(stored, Some(whole));
    }
}
