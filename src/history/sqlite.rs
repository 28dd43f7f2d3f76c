//! The SQLite history store: every run kept, once, so `check` can find a baseline.
//!
//! A run is inserted in one transaction and never rewritten. Besides the queryable tables
//! (runs, experiments, case results, metric results) each run keeps its full JSON snapshot,
//! so a baseline is rebuilt exactly as it was written. The schema is a list of numbered SQL
//! migrations compiled into the binary and tracked in `PRAGMA user_version`. WAL mode and a
//! busy timeout let parallel CI jobs write to the same file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};

use super::sql::{self, Arg, CaseRow, Cell, Dialect, Query, Row, Snapshot};
use super::{
    BranchRun, CaseQuery, CaseRun, HistoryError, HistoryReads, RunQuery, RunStore, RunSummary,
    ScorePoint, SnapshotLimit,
};
use crate::error::{Error, Result};
use crate::results::{CaseLog, RunResult};

/// Numbered migrations; `user_version` holds how many have run.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_init.sql"),
    include_str!("migrations/0002_run_numbers.sql"),
    include_str!("migrations/0003_run_snapshots.sql"),
    include_str!("migrations/0004_read_indexes.sql"),
];

/// How long a writer waits for another process's lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The SQLite history database, open: the default [`super::HistoryStore`].
pub struct SqliteStore {
    conn: Connection,
    path: PathBuf,
    snapshot_limit: Option<SnapshotLimit>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// The name the rest of the crate knew the store by.
pub type History = SqliteStore;

impl SqliteStore {
    /// The default location: `<project>/.evals/history.sqlite3`.
    pub fn default_path(project_dir: &Path) -> PathBuf {
        project_dir.join(".evals").join("history.sqlite3")
    }

    /// Opens (creating it and its folder if needed) and migrates the store at `path`.
    pub fn open(path: &Path) -> Result<SqliteStore> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let conn = Connection::open(path).map_err(|e| sql_err(path, e))?;
        let h = SqliteStore {
            conn,
            path: path.to_path_buf(),
            snapshot_limit: None,
        };
        h.conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| h.err(e))?;
        h.wal()?;
        h.conn
            .execute_batch("PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL")
            .map_err(|e| h.err(e))?;
        h.migrate()?;
        Ok(h)
    }

    /// The file the store is in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Switches to WAL mode. SQLite answers a journal-mode change that meets another
    /// process's lock with SQLITE_BUSY at once, without the busy handler, so two processes
    /// opening a new history together retry here for as long as the busy timeout.
    fn wal(&self) -> Result<()> {
        let start = std::time::Instant::now();
        loop {
            // journal_mode returns a row, so it is read rather than executed.
            match self
                .conn
                .query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))
            {
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if matches!(
                        e.code,
                        rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                    ) && start.elapsed() < BUSY_TIMEOUT =>
                {
                    std::thread::sleep(Duration::from_millis(5));
                }
                r => return r.map_err(|e| self.err(e)),
            }
        }
    }

    pub(super) fn err(&self, e: rusqlite::Error) -> Error {
        sql_err(&self.path, e)
    }

    fn migrate(&self) -> Result<()> {
        // An immediate transaction so two processes opening a new file do not both migrate.
        self.conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(|e| self.err(e))?;
        let result = (|| {
            let version: i64 = self
                .conn
                .query_row("PRAGMA user_version", [], |r| r.get(0))
                .map_err(|e| self.err(e))?;
            let version = usize::try_from(version).unwrap_or(0);
            if version > MIGRATIONS.len() {
                return Err(HistoryError::TooNew {
                    path: self.path.clone(),
                    found: version,
                    known: MIGRATIONS.len(),
                }
                .into());
            }
            for (i, sql) in MIGRATIONS.iter().enumerate().skip(version) {
                self.conn.execute_batch(sql).map_err(|e| self.err(e))?;
                self.conn
                    .execute_batch(&format!("PRAGMA user_version = {}", i + 1))
                    .map_err(|e| self.err(e))?;
            }
            Ok(())
        })();
        let end = if result.is_ok() { "COMMIT" } else { "ROLLBACK" };
        self.conn.execute_batch(end).map_err(|e| self.err(e))?;
        result
    }

    fn store_with(
        &mut self,
        run: &RunResult,
        cases: &CaseLog,
        snapshot: impl FnOnce() -> Result<(std::fs::File, u64)>,
    ) -> Result<()> {
        let path = self.path.clone();
        let e = |e: rusqlite::Error| sql_err(&path, e);
        // The run's own text passes through the egress scrubber here.
        use crate::secrets::scrub;
        let (argv, settings) = sql::run_text(run);
        // The page cache bounded for the insert (SQLite's default is 2 MiB): the rows of a
        // large run spill to the write-ahead log as they are written instead.
        self.conn
            .execute_batch("PRAGMA cache_size = -1024")
            .map_err(e)?;
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(e)?;
        let r = &run.run;
        {
            let mut insert = tx
                .prepare(
                    "INSERT INTO runs (id, suite, suite_fingerprint, branch, \"commit\", command, mode, argv, settings, started_at, finished_at, status, number)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12,
                             (SELECT COALESCE(MAX(number), 0) + 1 FROM runs))",
                )
                .map_err(e)?;
            let (suite, branch, mode) = (
                scrub(&r.suite),
                r.branch.as_deref().map(scrub),
                r.mode.to_string(),
            );
            let started_at = crate::results::time::text(&r.started_at);
            let finished_at = r.finished_at.as_ref().map(crate::results::time::text);
            let values: [&dyn rusqlite::ToSql; 12] = [
                &r.id,
                &suite,
                &r.suite_fingerprint,
                &branch,
                &r.commit,
                &r.command.as_str(),
                &mode,
                &argv,
                &settings,
                &started_at,
                &finished_at,
                &r.status.as_str(),
            ];
            for (i, v) in values.iter().enumerate() {
                insert.raw_bind_parameter(i + 1, v).map_err(e)?;
            }
            insert.raw_execute().map_err(e)?;
        }
        {
            // Prepared once: a run of 10,000 cases is ~60,000 rows.
            let mut experiment = tx
                .prepare_cached(
                    "INSERT INTO experiments (run_id, contender, dataset, score, cases_total, errors, failed, cost_usd)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                )
                .map_err(e)?;
            let mut case_result = tx
                .prepare_cached(
                    "INSERT INTO case_results (experiment_id, \"case\", fingerprint, score, passed, error)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )
                .map_err(e)?;
            let mut metric = tx
                .prepare_cached("INSERT INTO metric_results (case_result_id, metric, value) VALUES (?1, ?2, ?3)")
                .map_err(e)?;
            for (i, x) in run.experiments.iter().enumerate() {
                let experiment_id = experiment
                    .insert(params![
                        r.id,
                        x.contender.key(),
                        x.dataset,
                        x.score,
                        x.cases_total as i64,
                        x.errors as i64,
                        x.failed as i64,
                        x.cost_usd
                    ])
                    .map_err(e)?;
                let mut lines = cases.cases(i)?;
                while let Some(line) = lines.next_line() {
                    let c: CaseRow<'_> =
                        serde_json::from_slice(line?).map_err(crate::results::unreadable)?;
                    let case_id = case_result
                        .insert(params![
                            experiment_id,
                            c.case,
                            c.fingerprint,
                            c.score,
                            c.passed,
                            c.error
                        ])
                        .map_err(e)?;
                    for (name, value) in &c.metrics {
                        metric.execute(params![case_id, name, value]).map_err(e)?;
                    }
                }
            }
        }
        // The snapshot's bytes go in after its row, in place: `zeroblob` reserves them (the
        // table's last column, so SQLite never builds them in memory), and the blob is
        // written from the temporary file. The whole run's JSON is never one string here.
        let snapshot = snapshot()?;
        tx.execute(
            "INSERT INTO run_snapshots (run_id, snapshot) VALUES (?1, zeroblob(?2))",
            params![r.id, snapshot.1 as i64],
        )
        .map_err(e)?;
        {
            let rowid = tx.last_insert_rowid();
            let mut blob = tx
                .blob_open(rusqlite::MAIN_DB, "run_snapshots", "snapshot", rowid, false)
                .map_err(e)?;
            let mut file = snapshot.0;
            std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(0))
                .and_then(|_| std::io::copy(&mut file, &mut blob))
                .map_err(|err| HistoryError::Unwritten {
                    path: Some(path.to_path_buf()),
                    what: "write the snapshot of",
                    id: r.id.clone(),
                    why: err.to_string(),
                })?;
        }
        tx.commit().map_err(e)
    }
}

impl SqliteStore {
    /// Opens the store at `path` for reading alone (`evals dashboard`): the connection is
    /// read-only and `query_only`, so no statement through it can write. A history whose
    /// schema is older than this binary's is first migrated as any command would (through
    /// [`SqliteStore::open`]), so the readers' indexes are there.
    pub fn open_read_only(path: &Path) -> Result<SqliteStore> {
        let read = || -> Result<(SqliteStore, usize)> {
            let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
                | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX
                | rusqlite::OpenFlags::SQLITE_OPEN_URI;
            let conn = Connection::open_with_flags(path, flags).map_err(|e| sql_err(path, e))?;
            let h = SqliteStore {
                conn,
                path: path.to_path_buf(),
                snapshot_limit: None,
            };
            h.conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| h.err(e))?;
            h.conn
                .execute_batch("PRAGMA query_only=ON")
                .map_err(|e| h.err(e))?;
            let version: i64 = h
                .conn
                .query_row("PRAGMA user_version", [], |r| r.get(0))
                .map_err(|e| h.err(e))?;
            Ok((h, usize::try_from(version).unwrap_or(0)))
        };
        let (h, version) = read()?;
        if version >= MIGRATIONS.len() {
            if version > MIGRATIONS.len() {
                return Err(HistoryError::TooNew {
                    path: path.to_path_buf(),
                    found: version,
                    known: MIGRATIONS.len(),
                }
                .into());
            }
            return Ok(h);
        }
        drop(h);
        drop(SqliteStore::open(path)?);
        Ok(read()?.0)
    }

    /// The connection, for the tests' own look at the tables.
    #[cfg(test)]
    pub(super) fn conn(&self) -> &Connection {
        &self.conn
    }
}

impl RunStore for SqliteStore {
    fn location(&self) -> String {
        self.path.display().to_string()
    }

    /// Stores a run whose case results are in `cases` (its experiments' `cases` empty), in
    /// one transaction at the end of the run: the run row with its final status, then each
    /// experiment and its case and metric rows, each case read from the log, inserted and
    /// dropped; the snapshot column is written from a temporary file. Memory stays flat, and
    /// the write lock is held for the insert alone, not for the whole run (parallel CI jobs
    /// share a history and wait at most the busy timeout for it).
    fn store(&mut self, run: &RunResult, cases: &CaseLog) -> Result<()> {
        // The snapshot (the log read, scrubbed and copied into a temporary file) is made on
        // a thread of its own while this one inserts the rows: the two passes over the log
        // share the cores instead of following each other.
        std::thread::scope(|scope| {
            let snapshot = scope.spawn(|| sql::compact_snapshot(run, cases));
            self.store_with(run, cases, || {
                snapshot
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
        })
    }

    fn get(&self, id: &str) -> Result<Option<RunResult>> {
        sql::get(self, id)
    }

    fn get_logged(&self, id: &str) -> Result<Option<(RunResult, CaseLog)>> {
        sql::get_logged(self, id)
    }

    fn find(&self, reference: &str) -> Result<Option<String>> {
        sql::find(self, reference)
    }

    fn runs_on_branch(
        &self,
        suite: &str,
        branch: &str,
        before: &str,
        exclude_id: &str,
    ) -> Result<Vec<BranchRun>> {
        sql::runs_on_branch(self, suite, branch, before, exclude_id)
    }
}

impl HistoryReads for SqliteStore {
    fn runs(&self, query: &RunQuery) -> Result<Vec<RunSummary>> {
        sql::runs(self, query)
    }

    fn case_runs(&self, query: &CaseQuery) -> Result<Vec<CaseRun>> {
        sql::case_runs(self, query)
    }

    fn scores_on_branch(
        &self,
        branch: &str,
        suite: Option<&str>,
        last: usize,
    ) -> Result<Vec<ScorePoint>> {
        sql::scores_on_branch(self, branch, suite, last)
    }

    fn limit_snapshots(&mut self, limit: SnapshotLimit) {
        self.snapshot_limit = Some(limit);
    }
}

/// The shared queries in SQLite's spelling: `?N` numbered parameters, text compared
/// byte-wise (SQLite's default), `LIMIT -1` for none.
fn sql_of(query: Query) -> &'static str {
    match query {
        Query::IdOfNumber => "SELECT id FROM runs WHERE number = ?1",
        Query::Id => "SELECT id FROM runs WHERE id = ?1",
        Query::Prefixed => {
            "SELECT id, number FROM runs WHERE id >= ?1 AND substr(id, 1, ?2) = ?1
             ORDER BY number LIMIT 6"
        }
        Query::CountPrefixed => "SELECT COUNT(*) FROM runs WHERE substr(id, 1, ?2) = ?1",
        Query::BaselineCandidates => {
            "SELECT id, suite_fingerprint, CAST(settings AS TEXT), started_at FROM runs
             WHERE suite = ?1 AND branch = ?2 AND status = 'completed'
               AND id <> ?4
               AND (started_at < ?3 OR (started_at = ?3 AND id < ?4))
             ORDER BY started_at DESC, id DESC"
        }
        // The runs in time order (`runs_by_started`, read backwards and cut at the limit),
        // each one's figures from its experiments (`experiments_by_run`).
        Query::Runs => {
            "SELECT r.id, r.started_at, r.branch, r.\"commit\", r.suite, r.command, r.mode, r.status,
                (SELECT COALESCE(SUM(x.cases_total), 0) FROM experiments x WHERE x.run_id = r.id),
                (SELECT AVG(x.score) FROM experiments x WHERE x.run_id = r.id),
                (SELECT COALESCE(SUM(x.errors), 0) FROM experiments x WHERE x.run_id = r.id),
                r.number
             FROM runs r
             WHERE (?1 IS NULL OR r.suite = ?1) AND (?2 IS NULL OR r.branch = ?2)
               AND (?3 IS NULL OR r.status = ?3)
               AND (?4 IS NULL OR r.started_at >= ?4) AND (?5 IS NULL OR r.started_at < ?5)
             ORDER BY r.started_at DESC, r.id DESC
             LIMIT ?6"
        }
        // The case's rows found by `case_results_by_case`, newest run first.
        Query::CaseRuns => {
            "SELECT r.number, r.id, r.started_at, r.branch, r.\"commit\", r.suite, r.status,
                x.contender, x.dataset, c.\"case\", c.fingerprint, c.score, c.passed, c.error
             FROM case_results c JOIN experiments x ON x.id = c.experiment_id
                  JOIN runs r ON r.id = x.run_id
             WHERE c.\"case\" = ?1 AND (?2 IS NULL OR x.dataset = ?2)
               AND (?3 IS NULL OR r.suite = ?3) AND (?4 IS NULL OR r.branch = ?4)
             ORDER BY r.started_at DESC, r.id DESC, x.id DESC
             LIMIT ?5"
        }
        // The newest completed runs on a branch (`runs_by_branch_started`), then their
        // experiments (`experiments_by_run`), oldest first.
        Query::Scores => {
            "SELECT r.number, r.id, r.started_at, r.\"commit\", r.suite, x.contender, x.dataset, x.score
             FROM (SELECT id, number, started_at, \"commit\", suite FROM runs
                   WHERE branch = ?1 AND status = 'completed' AND (?2 IS NULL OR suite = ?2)
                   ORDER BY started_at DESC, id DESC LIMIT ?3) r
             JOIN experiments x ON x.run_id = r.id
             ORDER BY r.started_at, r.id, x.id"
        }
    }
}

impl Dialect for SqliteStore {
    fn shown(&self) -> PathBuf {
        self.path.clone()
    }

    fn rows(&self, query: Query, args: &[Arg<'_>]) -> Result<Vec<Row>> {
        let values: Vec<rusqlite::types::Value> = args
            .iter()
            .map(|a| {
                use rusqlite::types::Value;
                match *a {
                    Arg::Text(t) => t.map_or(Value::Null, |t| Value::Text(t.to_string())),
                    Arg::Int(n) => n.map_or(Value::Null, Value::Integer),
                    Arg::Limit(l) => Value::Integer(Arg::limit(l).unwrap_or(-1)),
                }
            })
            .collect();
        let mut stmt = self
            .conn
            .prepare_cached(sql_of(query))
            .map_err(|e| self.err(e))?;
        let columns = stmt.column_count();
        let rows = stmt
            .query_map(rusqlite::params_from_iter(values), |r| {
                (0..columns)
                    .map(|i| {
                        use rusqlite::types::ValueRef;
                        Ok(match r.get_ref(i)? {
                            ValueRef::Null => Cell::Null,
                            ValueRef::Integer(n) => Cell::Int(n),
                            ValueRef::Real(x) => Cell::Real(x),
                            ValueRef::Text(t) | ValueRef::Blob(t) => {
                                Cell::Text(String::from_utf8_lossy(t).into_owned())
                            }
                        })
                    })
                    .collect::<rusqlite::Result<Vec<Cell>>>()
                    .map(Row)
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<rusqlite::Result<Vec<Row>>>()
            .map_err(|e| self.err(e))
    }

    fn snapshot(&self, id: &str, limit: Option<u64>) -> Result<Option<Snapshot>> {
        let limit = limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX));
        let row: Option<(Option<Vec<u8>>, i64)> = self
            .conn
            .query_row(
                "SELECT CASE WHEN ?2 IS NULL OR octet_length(snapshot) <= ?2 THEN snapshot END,
                        octet_length(snapshot)
                   FROM run_snapshots WHERE run_id = ?1",
                rusqlite::params![id, limit],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        Ok(row.map(|(bytes, size)| match bytes {
            Some(bytes) => Snapshot::Bytes(bytes),
            None => Snapshot::Over(u64::try_from(size).unwrap_or(0)),
        }))
    }

    /// Read from the blob a buffer at a time: the snapshot is never one allocation.
    fn read_snapshot(
        &self,
        id: &str,
        limit: Option<u64>,
        read: &mut dyn FnMut(&mut dyn std::io::Read) -> Result<()>,
    ) -> Result<Option<std::result::Result<(), u64>>> {
        let row: Option<(i64, i64)> = self
            .conn
            .query_row(
                "SELECT rowid, octet_length(snapshot) FROM run_snapshots WHERE run_id = ?1",
                rusqlite::params![id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        let Some((rowid, size)) = row else {
            return Ok(None);
        };
        let size = u64::try_from(size).unwrap_or(0);
        if limit.is_some_and(|l| size > l) {
            return Ok(Some(Err(size)));
        }
        let mut blob = self
            .conn
            .blob_open(rusqlite::MAIN_DB, "run_snapshots", "snapshot", rowid, true)
            .map_err(|e| self.err(e))?;
        read(&mut blob)?;
        Ok(Some(Ok(())))
    }

    fn snapshot_limit(&self) -> Option<SnapshotLimit> {
        self.snapshot_limit
    }

    fn unexpected(&self, query: Query, why: String) -> Error {
        HistoryError::Sqlite {
            shown: self.path.display().to_string(),
            why: format!("{query:?}: {why}"),
        }
        .into()
    }
}

fn sql_err(path: &Path, e: rusqlite::Error) -> Error {
    // Named as the user would type it: relative to where they are, when it is below.
    let shown = std::env::current_dir()
        .ok()
        .and_then(|cwd| path.strip_prefix(cwd).ok().map(Path::to_path_buf))
        .unwrap_or_else(|| path.to_path_buf());
    let shown = shown.display().to_string();
    let damaged = match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => Some("not a SQLite database"),
        Some(rusqlite::ErrorCode::DatabaseCorrupt) => Some("a damaged SQLite database"),
        _ => None,
    };
    match damaged {
        // Not a problem of the run: the file is not what a history is (exit 2).
        Some(what) => HistoryError::NotAHistory { shown, what }.into(),
        None => HistoryError::Sqlite {
            shown,
            why: e.to_string(),
        }
        .into(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::history::{HistoryReads, RunFilter, RunStore};
    use crate::results::testing::{case, run};

    /// The newest baseline candidate.
    fn latest_on_branch(
        h: &SqliteStore,
        suite: &str,
        branch: &str,
        before: &str,
        exclude_id: &str,
    ) -> Result<Option<BranchRun>> {
        Ok(h.runs_on_branch(suite, branch, before, exclude_id)?
            .into_iter()
            .next())
    }

    #[test]
    fn insert_then_get_round_trips_the_whole_run() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("nested/.evals/history.sqlite3");
        let mut h = History::open(&path).expect("open");
        let r = run(
            "r1",
            "main",
            "2026-01-01T00:00:00Z",
            vec![case("a", Some(0.5), Some(true))],
        );
        h.insert(&r).expect("insert");
        assert_eq!(h.get("r1").expect("get"), Some(r));
        assert_eq!(h.get("nope").expect("get"), None);
        // Reopening does not re-run the migrations.
        drop(h);
        let h = History::open(&path).expect("reopen");
        assert_eq!(h.list(&RunFilter::default()).expect("list").len(), 1);
    }

    #[test]
    fn the_settings_column_holds_no_case_keys_and_the_snapshot_all_of_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut h = History::open(&dir.path().join("h.sqlite3")).expect("open");
        let mut r = run(
            "r1",
            "main",
            "2026-01-01T00:00:00Z",
            vec![case("a", Some(0.5), Some(true))],
        );
        r.run.settings.cases = vec!["d/a".to_string(), "d/b".to_string()].into();
        r.run.settings.parallelism = 7;
        r.run.settings.selection = Some(crate::results::Selection {
            datasets: vec!["d".into()],
            ..Default::default()
        });
        h.insert(&r).expect("insert");
        let column: String = h
            .conn
            .query_row("SELECT settings FROM runs", [], |row| row.get(0))
            .expect("settings");
        let mut whole = serde_json::to_value(&r.run.settings).expect("settings");
        whole.as_object_mut().expect("an object").remove("cases");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&column).expect("JSON"),
            whole
        );
        assert_eq!(
            crate::results::Settings::selection_in(&column),
            r.run.settings.selection
        );
        assert_eq!(h.get("r1").expect("get"), Some(r));
    }

    #[test]
    fn a_run_is_never_rewritten() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut h = History::open(&dir.path().join("h.sqlite3")).expect("open");
        let r = run(
            "r1",
            "main",
            "2026-01-01T00:00:00Z",
            vec![case("a", Some(0.5), Some(true))],
        );
        h.insert(&r).expect("insert");
        // Another run under the same id: refused for its id, and nothing of it lands.
        let other = run(
            "r1",
            "feature",
            "2026-02-02T00:00:00Z",
            vec![case("b", Some(0.9), Some(true)), case("c", None, None)],
        );
        let err = h.insert(&other).expect_err("a second run r1").to_string();
        assert!(err.contains("UNIQUE constraint failed: runs.id"), "{err}");
        assert_eq!(h.get("r1").expect("get"), Some(r));
        let runs = h.list(&RunFilter::default()).expect("list");
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].branch.as_deref(), Some("main"));
        let cases: i64 = h
            .conn
            .query_row("SELECT COUNT(*) FROM case_results", [], |row| row.get(0))
            .expect("count case rows");
        assert_eq!(cases, 1, "the refused run's cases are not stored");
    }

    #[test]
    fn opening_a_new_history_from_many_connections_at_once_waits_for_the_lock() {
        for round in 0..4 {
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join("h.sqlite3");
            let start = std::sync::Arc::new(std::sync::Barrier::new(8));
            let handles: Vec<_> = (0..8)
                .map(|t| {
                    let (path, start) = (path.clone(), start.clone());
                    std::thread::spawn(move || {
                        start.wait();
                        let mut h = History::open(&path)
                            .unwrap_or_else(|e| panic!("round {round}, connection {t}: {e}"));
                        h.insert(&run(
                            &format!("t{t}"),
                            "main",
                            "2026-01-01T00:00:00Z",
                            vec![],
                        ))
                        .expect("insert");
                    })
                })
                .collect();
            for h in handles {
                h.join().expect("thread");
            }
            let h = History::open(&path).expect("open");
            assert_eq!(h.list(&RunFilter::default()).expect("list").len(), 8);
        }
    }

    #[test]
    fn two_threads_inserting_at_once_both_land() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("h.sqlite3");
        History::open(&path).expect("create");
        let handles: Vec<_> = (0..2)
            .map(|t| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let mut h = History::open(&path).expect("open");
                    for i in 0..20 {
                        let cases = (0..5)
                            .map(|c| case(&format!("c{c}"), Some(1.0), Some(true)))
                            .collect();
                        h.insert(&run(
                            &format!("t{t}-{i}"),
                            "main",
                            "2026-01-01T00:00:00Z",
                            cases,
                        ))
                        .expect("insert");
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().expect("thread");
        }
        let h = History::open(&path).expect("open");
        assert_eq!(h.list(&RunFilter::default()).expect("list").len(), 40);
    }

    #[test]
    fn latest_on_branch_never_returns_a_run_from_the_future() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut h = History::open(&dir.path().join("h.sqlite3")).expect("open");
        h.insert(&run("old", "main", "2026-01-01T00:00:00Z", vec![]))
            .expect("insert");
        h.insert(&run("new", "main", "2026-01-03T00:00:00Z", vec![]))
            .expect("insert");
        h.insert(&run("other", "feature", "2026-01-02T00:00:00Z", vec![]))
            .expect("insert");
        let got = latest_on_branch(&h, "tax-intake", "main", "2026-01-02T00:00:00Z", "me")
            .expect("query")
            .expect("a run");
        assert_eq!(got.id, "old");
        let got = latest_on_branch(&h, "tax-intake", "main", "2026-01-04T00:00:00Z", "new")
            .expect("query")
            .expect("a run");
        assert_eq!(got.id, "old", "the current run is excluded");
        // Within one second, the run whose id is later started later: not a baseline.
        h.insert(&run("0001-b", "main", "2026-01-05T00:00:00Z", vec![]))
            .expect("insert");
        h.insert(&run("0001-d", "main", "2026-01-05T00:00:00Z", vec![]))
            .expect("insert");
        let got = latest_on_branch(&h, "tax-intake", "main", "2026-01-05T00:00:00Z", "0001-c")
            .expect("query")
            .expect("a run");
        assert_eq!(
            got.id, "0001-b",
            "a later run of the same second is the future"
        );
        assert!(
            latest_on_branch(&h, "other-suite", "main", "2027-01-01T00:00:00Z", "")
                .expect("query")
                .is_none()
        );
    }

    #[test]
    fn list_filters_and_summarizes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut h = History::open(&dir.path().join("h.sqlite3")).expect("open");
        h.insert(&run(
            "a",
            "main",
            "2026-01-01T00:00:00Z",
            vec![
                case("x", Some(1.0), Some(true)),
                case("y", Some(0.0), Some(false)),
            ],
        ))
        .expect("insert");
        h.insert(&run("b", "feature", "2026-01-02T00:00:00Z", vec![]))
            .expect("insert");
        let all = h.list(&RunFilter::default()).expect("list");
        assert_eq!(
            all.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            ["b", "a"]
        );
        let main = h
            .list(&RunFilter {
                branch: Some("main".into()),
                ..Default::default()
            })
            .expect("list");
        assert_eq!(main.len(), 1);
        assert_eq!(main[0].cases, 2);
        assert_eq!(main[0].score, Some(0.5));
        assert_eq!(
            h.list(&RunFilter {
                limit: Some(1),
                ..Default::default()
            })
            .expect("list")
            .len(),
            1
        );
    }

    #[test]
    fn runs_stored_before_numbers_existed_are_numbered_by_when_they_started() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("h.sqlite3");
        {
            // A history written by a version without migration 0002.
            let conn = Connection::open(&path).expect("open");
            conn.execute_batch(MIGRATIONS[0]).expect("0001");
            conn.execute_batch("PRAGMA user_version = 1")
                .expect("version");
            for (id, started) in [("b", "2026-01-02T00:00:00Z"), ("a", "2026-01-01T00:00:00Z")] {
                conn.execute(
                    "INSERT INTO runs (id, suite, suite_fingerprint, command, mode, argv, settings, started_at, status, snapshot)
                     VALUES (?1, 's', 'fp', 'check', 'replay', '[]', '{}', ?2, 'completed', '{}')",
                    params![id, started],
                )
                .expect("insert");
            }
        }
        let mut h = History::open(&path).expect("migrate");
        h.insert(&run("c", "main", "2025-12-31T00:00:00Z", vec![]))
            .expect("insert");
        let numbers: Vec<(String, i64)> = h
            .list(&RunFilter::default())
            .expect("list")
            .into_iter()
            .map(|r| (r.id, r.number))
            .collect();
        // A new run takes the next number, whenever it started.
        assert_eq!(
            numbers,
            [
                ("b".to_string(), 2),
                ("a".to_string(), 1),
                ("c".to_string(), 3)
            ]
        );
    }

    #[test]
    fn find_takes_a_number_an_id_or_a_unique_prefix() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut h = History::open(&dir.path().join("h.sqlite3")).expect("open");
        for id in ["0198aa-1111", "0198aa-2222", "0198bb-3333"] {
            h.insert(&run(id, "main", "2026-01-01T00:00:00Z", vec![]))
                .expect("insert");
        }
        let find = |r: &str| h.find(r).expect("find");
        assert_eq!(find("2").as_deref(), Some("0198aa-2222"));
        assert_eq!(find("#3").as_deref(), Some("0198bb-3333"));
        assert_eq!(find("4"), None);
        assert_eq!(find("0198aa-1111").as_deref(), Some("0198aa-1111"));
        assert_eq!(find("0198B").as_deref(), Some("0198bb-3333"));
        assert_eq!(find("0198aa-2").as_deref(), Some("0198aa-2222"));
        assert_eq!(find("019"), None, "under 4 characters is no prefix");
        assert_eq!(find("main"), None);
        let e = h.find("0198a").expect_err("ambiguous");
        assert!(e.is_bad_input());
        assert!(
            e.to_string()
                .starts_with("run id prefix 0198a matches 2 runs in ")
                && e.to_string().contains("(#1 0198aa-1111, #2 0198aa-2222)"),
            "{e}"
        );
    }
}
