//! The PostgreSQL history store: one history shared by every runner of a suite.
//!
//! The same tables and numbered migrations as the SQLite store (`migrations/postgres/`, the
//! PostgreSQL spelling of each), applied once and recorded in `evals_migrations` under an
//! advisory lock, so runners opening a new database at once migrate it once. A run is
//! inserted in one transaction and never rewritten; its number is taken inside that
//! transaction under a second advisory lock held to its commit, so runners storing at once
//! get distinct numbers. The baseline candidates are [`super::BASELINE_CANDIDATES`], the
//! query the SQLite store runs too.
//!
//! The URL's password never leaves the process: [`PgStore::location`] (what messages name)
//! leaves it out, and it is registered with the egress scrubber. `sslmode=require` (or
//! `verify-ca`/`verify-full`) connects over TLS (rustls, the platform's roots, the
//! certificate always verified); without it the connection is plain, as on a unix socket or
//! loopback.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use postgres::{Client, NoTls, Transaction};

use super::{BranchRun, HistoryError, RunFilter, RunSummary};
use crate::error::{Error, Result};
use crate::results::{CaseLog, RunResult};

/// Numbered migrations, the PostgreSQL spelling of the SQLite store's, one for one.
const MIGRATIONS: &[(&str, &str)] = &[
    (
        "0001_init",
        include_str!("migrations/postgres/0001_init.sql"),
    ),
    (
        "0002_run_numbers",
        include_str!("migrations/postgres/0002_run_numbers.sql"),
    ),
    (
        "0003_run_snapshots",
        include_str!("migrations/postgres/0003_run_snapshots.sql"),
    ),
    (
        "0004_read_indexes",
        include_str!("migrations/postgres/0004_read_indexes.sql"),
    ),
];

/// Advisory lock keys (any constant the database's other users are unlikely to take):
/// migrating, and numbering a run.
const MIGRATION_LOCK: i64 = 0x6576_616c_7301;
const NUMBER_LOCK: i64 = 0x6576_616c_7302;

/// How long connecting may take before the store gives up (unless the URL says).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether `value` names a PostgreSQL database rather than a SQLite file.
pub fn is_url(value: &str) -> bool {
    let v = value.trim_start().to_ascii_lowercase();
    v.starts_with("postgres://") || v.starts_with("postgresql://")
}

/// The URL without its password (in the user info or a `password=` parameter): what every
/// message names the store by.
pub fn redact(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(i) => (&url[..i + 3], &url[i + 3..]),
        None => ("", url),
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let authority = match authority.rfind('@') {
        Some(at) => {
            let (info, host) = authority.split_at(at);
            let user = info.split(':').next().unwrap_or_default();
            format!("{user}{host}")
        }
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let kept: Vec<&str> = query
                .split('&')
                .filter(|kv| {
                    !kv.split('=')
                        .next()
                        .unwrap_or_default()
                        .eq_ignore_ascii_case("password")
                })
                .collect();
            if kept.is_empty() {
                path.to_string()
            } else {
                format!("{path}?{}", kept.join("&"))
            }
        }
        None => tail.to_string(),
    };
    format!("{scheme}{authority}{tail}")
}

/// Registers the URL's password (as written and percent-decoded) with the egress scrubber,
/// so that nothing the run writes (its argv in a snapshot, a message) carries it.
pub fn register_password(url: &str) {
    let written = url
        .split_once("://")
        .map(|(_, rest)| rest)
        .and_then(|r| r.split(['/', '?']).next())
        .and_then(|a| a.rsplit_once('@'))
        .and_then(|(info, _)| info.split_once(':'))
        .map(|(_, p)| p.to_string());
    let param = url.split_once('?').and_then(|(_, q)| {
        q.split('&').find_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            k.eq_ignore_ascii_case("password").then(|| v.to_string())
        })
    });
    let found: Vec<String> = written.into_iter().chain(param).collect();
    let decoded: Vec<String> = found
        .iter()
        .map(|p| crate::text::percent_decoded(p))
        .collect();
    crate::secrets::register(found.into_iter().chain(decoded));
}

/// The PostgreSQL history database, connected: a [`super::HistoryStore`] many runners share.
pub struct PgStore {
    /// `None` only while dropping.
    client: Mutex<Option<Client>>,
    shown: String,
    migrated: usize,
}

impl PgStore {
    /// Connects to the database `url` names (`postgres://user:password@host:port/db`,
    /// `?sslmode=require` for TLS; the password from `PGPASSWORD` when the URL has none) and
    /// applies the migrations it has not had.
    pub fn open(url: &str) -> Result<PgStore> {
        outside_runtime(|| PgStore::connect(url))
    }

    fn connect(url: &str) -> Result<PgStore> {
        let shown = redact(url);
        let err = |why: String| -> Error {
            HistoryError::Postgres {
                shown: shown.clone(),
                why: crate::secrets::scrub(&why).into_owned(),
            }
            .into()
        };
        // rustls always verifies the server's certificate: the stricter modes are `require`.
        let spelled = url
            .replace("sslmode=verify-full", "sslmode=require")
            .replace("sslmode=verify-ca", "sslmode=require");
        let mut config: postgres::Config = spelled
            .parse()
            .map_err(|e: postgres::Error| err(format!("not a usable database URL ({e})")))?;
        if config.get_password().is_none()
            && let Ok(password) = std::env::var("PGPASSWORD")
        {
            config.password(password);
        }
        if let Some(password) = config.get_password() {
            crate::secrets::register([String::from_utf8_lossy(password).into_owned()]);
        }
        register_password(url);
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        config.application_name("evals");
        let client = match config.get_ssl_mode() {
            postgres::config::SslMode::Require => {
                let _ = rustls::crypto::ring::default_provider().install_default();
                let tls = <rustls::ClientConfig as rustls_platform_verifier::ConfigVerifierExt>::with_platform_verifier()
                    .map_err(|e| err(format!("cannot set up TLS: {e}")))?;
                config.connect(tokio_postgres_rustls::MakeRustlsConnect::new(tls))
            }
            _ => config.connect(NoTls),
        }
        .map_err(|e| err(describe(&e)))?;
        let mut store = PgStore {
            client: Mutex::new(Some(client)),
            shown,
            migrated: 0,
        };
        store.migrated = store.migrate()?;
        Ok(store)
    }

    /// How many migrations this open applied (none when another open had applied them).
    pub fn migrated(&self) -> usize {
        self.migrated
    }

    /// The URL without its password.
    pub fn location(&self) -> &str {
        &self.shown
    }

    fn path(&self) -> PathBuf {
        PathBuf::from(&self.shown)
    }

    /// Runs `f` on the connection, off any tokio runtime (the sync client panics inside one).
    pub(super) fn with<T: Send>(
        &self,
        f: impl FnOnce(&mut Client) -> Result<T> + Send,
    ) -> Result<T> {
        let mut guard = self.client.lock().unwrap_or_else(|e| e.into_inner());
        let client: &mut Client = guard
            .as_mut()
            .expect("the client lives until the store drops");
        outside_runtime(move || f(client))
    }

    fn migrate(&self) -> Result<usize> {
        let shown = self.shown.clone();
        self.with(|c| {
            let e = |e| pg_err(&shown, e);
            let mut tx = c.transaction().map_err(e)?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
                .map_err(e)?;
            tx.batch_execute(
                "CREATE TABLE IF NOT EXISTS evals_migrations (
                     version    INTEGER PRIMARY KEY,
                     name       TEXT NOT NULL,
                     applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
                 )",
            )
            .map_err(e)?;
            let version: i32 = tx
                .query_one(
                    "SELECT COALESCE(MAX(version), 0) FROM evals_migrations",
                    &[],
                )
                .map_err(e)?
                .get(0);
            let version = usize::try_from(version).unwrap_or(0);
            if version > MIGRATIONS.len() {
                return Err(HistoryError::TooNew {
                    path: PathBuf::from(&shown),
                    found: version,
                    known: MIGRATIONS.len(),
                }
                .into());
            }
            let mut applied = 0;
            for (i, (name, sql)) in MIGRATIONS.iter().enumerate().skip(version) {
                tx.batch_execute(sql).map_err(e)?;
                let n = i32::try_from(i + 1).unwrap_or(i32::MAX);
                tx.execute(
                    "INSERT INTO evals_migrations (version, name) VALUES ($1, $2)",
                    &[&n, name],
                )
                .map_err(e)?;
                applied += 1;
            }
            tx.commit().map_err(e)?;
            Ok(applied)
        })
    }

    /// Stores a run (cases in `cases`) in one transaction, taking the next number.
    pub fn store(&mut self, run: &RunResult, cases: &CaseLog) -> Result<()> {
        self.store_as(run, cases, None)
    }

    /// Stores a run held whole in memory under the number it has in another store (`evals
    /// history migrate`); a number another run holds is refused.
    pub fn insert_numbered(&mut self, run: &RunResult, number: i64) -> Result<()> {
        let sizes: Vec<usize> = run.experiments.iter().map(|e| e.cases.len()).collect();
        let log = CaseLog::new(&sizes)?;
        let mut bare = run.clone();
        for (i, e) in bare.experiments.iter_mut().enumerate() {
            for (j, c) in e.cases.drain(..).enumerate() {
                log.push(i, j, &c);
            }
        }
        self.store_as(&bare, &log, Some(number))
    }

    fn store_as(&mut self, run: &RunResult, cases: &CaseLog, number: Option<i64>) -> Result<()> {
        use crate::secrets::scrub;
        let snapshot = super::store::compact_snapshot(run, cases)?;
        let argv = serde_json::to_string(&run.run.argv).unwrap_or_else(|_| "[]".into());
        let argv = scrub(&argv).into_owned();
        // Without the planned cases' keys (they are in the snapshot), as SqliteStore::store.
        let settings = run
            .run
            .settings
            .without_cases_json()
            .unwrap_or_else(|_| "{}".into());
        let settings = scrub(&settings).into_owned();
        let shown = self.shown.clone();
        self.with(move |c| {
            let e = |e| pg_err(&shown, e);
            let r = &run.run;
            let mut tx = c.transaction().map_err(e)?;
            // Held to the commit: the next runner numbers its run after this one lands.
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&NUMBER_LOCK])
                .map_err(e)?;
            let suite = scrub(&r.suite).into_owned();
            let branch = r.branch.as_deref().map(|b| scrub(b).into_owned());
            let (command, mode) = (r.command.as_str(), r.mode.to_string());
            tx.execute(
                "INSERT INTO runs (id, suite, suite_fingerprint, branch, \"commit\", command, mode, argv, settings, started_at, finished_at, status, number)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8::text::jsonb, $9::text::jsonb, $10, $11, $12,
                         COALESCE($13, (SELECT COALESCE(MAX(number), 0) + 1 FROM runs)))",
                &[
                    &r.id, &suite, &r.suite_fingerprint, &branch, &r.commit, &command, &mode,
                    &argv, &settings, &r.started_at, &r.finished_at, &r.status.as_str(), &number,
                ],
            )
            .map_err(e)?;
            copy_snapshot(&mut tx, &r.id, snapshot.0).map_err(|why| HistoryError::Unwritten {
                path: Some(PathBuf::from(&shown)),
                what: "write the snapshot of",
                id: r.id.clone(),
                why,
            })?;
            let experiment = tx
                .prepare(
                    "INSERT INTO experiments (run_id, contender, dataset, score, cases_total, errors, failed, cost_usd)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
                )
                .map_err(e)?;
            let case_result = tx
                .prepare(
                    "INSERT INTO case_results (experiment_id, \"case\", fingerprint, score, passed, error)
                     VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
                )
                .map_err(e)?;
            let metric = tx
                .prepare("INSERT INTO metric_results (case_result_id, metric, value) VALUES ($1, $2, $3)")
                .map_err(e)?;
            for (i, x) in run.experiments.iter().enumerate() {
                let counts = [x.cases_total, x.errors, x.failed].map(|n| n as i64);
                let experiment_id: i64 = tx
                    .query_one(
                        &experiment,
                        &[
                            &r.id, &x.contender.key(), &x.dataset, &x.score,
                            &counts[0], &counts[1], &counts[2], &x.cost_usd,
                        ],
                    )
                    .map_err(e)?
                    .get(0);
                for case in cases.cases(i)? {
                    let case = case?;
                    let error = case.error.as_ref().map(|e| e.message.as_str());
                    let case_id: i64 = tx
                        .query_one(
                            &case_result,
                            &[
                                &experiment_id, &case.case, &case.fingerprint, &case.score,
                                &case.passed, &error,
                            ],
                        )
                        .map_err(e)?
                        .get(0);
                    for (name, value) in &case.metrics {
                        tx.execute(&metric, &[&case_id, name, value]).map_err(e)?;
                    }
                }
            }
            tx.commit().map_err(e)
        })
    }

    /// The run with this id, rebuilt from its snapshot.
    pub fn get(&self, id: &str) -> Result<Option<RunResult>> {
        let shown = self.shown.clone();
        let text: Option<String> = self.with(|c| {
            c.query_opt(
                "SELECT snapshot::text FROM run_snapshots WHERE run_id = $1",
                &[&id],
            )
            .map(|row| row.map(|r| r.get(0)))
            .map_err(|e| pg_err(&shown, e))
        })?;
        text.map(|t| {
            serde_json::from_str(&t).map_err(|e| {
                HistoryError::Unreadable {
                    path: self.path(),
                    id: id.to_string(),
                    why: e.to_string(),
                }
                .into()
            })
        })
        .transpose()
    }

    /// The id of the run `reference` names: its number (`3` or `#3`), its id, or a unique
    /// prefix of its id (at least 4 characters), as [`super::SqliteStore::find`].
    pub fn find(&self, reference: &str) -> Result<Option<String>> {
        let r = reference.trim();
        let digits = r.strip_prefix('#').unwrap_or(r);
        let shown = self.shown.clone();
        let e = |e| pg_err(&shown, e);
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            let Ok(n) = digits.parse::<i64>() else {
                return Ok(None);
            };
            return self.with(|c| {
                c.query_opt("SELECT id FROM runs WHERE number = $1", &[&n])
                    .map(|row| row.map(|r| r.get(0)))
                    .map_err(e)
            });
        }
        let exact: Option<String> = self.with(|c| {
            c.query_opt("SELECT id FROM runs WHERE id = $1", &[&r])
                .map(|row| row.map(|r| r.get(0)))
                .map_err(e)
        })?;
        if exact.is_some() {
            return Ok(exact);
        }
        let prefix_like = r.len() >= 4 && r.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
        if !prefix_like {
            return Ok(None);
        }
        let lower = r.to_ascii_lowercase();
        let len = i32::try_from(lower.len()).unwrap_or(i32::MAX);
        let (found, count) = self.with(|c| {
            let found: Vec<(String, i64)> = c
                .query(
                    "SELECT id, number FROM runs WHERE id >= $1 AND substr(id, 1, $2) = $1
                     ORDER BY number LIMIT 6",
                    &[&lower, &len],
                )
                .map_err(e)?
                .iter()
                .map(|row| (row.get(0), row.get(1)))
                .collect();
            let count: i64 = if found.len() > 1 {
                c.query_one(
                    "SELECT COUNT(*) FROM runs WHERE substr(id, 1, $2) = $1",
                    &[&lower, &len],
                )
                .map_err(e)?
                .get(0)
            } else {
                found.len() as i64
            };
            Ok((found, count))
        })?;
        match found.as_slice() {
            [] => Ok(None),
            [(id, _)] => Ok(Some(id.clone())),
            many => {
                let listed: Vec<String> = many
                    .iter()
                    .take(5)
                    .map(|(id, n)| format!("#{n} {id}"))
                    .collect();
                let more = if count > 5 { ", ..." } else { "" };
                Err(HistoryError::Ambiguous {
                    prefix: r.to_string(),
                    path: self.path(),
                    count: count as usize,
                    listed: format!("{}{more}", listed.join(", ")),
                }
                .into())
            }
        }
    }

    /// The baseline candidates: [`super::BASELINE_CANDIDATES`], as on SQLite.
    pub fn runs_on_branch(
        &self,
        suite: &str,
        branch: &str,
        before: &str,
        exclude_id: &str,
    ) -> Result<Vec<BranchRun>> {
        let shown = self.shown.clone();
        self.with(|c| {
            let rows = c
                .query(
                    super::BASELINE_CANDIDATES,
                    &[&suite, &branch, &before, &exclude_id],
                )
                .map_err(|e| pg_err(&shown, e))?;
            Ok(rows
                .iter()
                .map(|r| {
                    let settings: String = r.get(2);
                    BranchRun {
                        id: r.get(0),
                        suite_fingerprint: r.get(1),
                        selection: crate::results::Settings::selection_in(&settings),
                    }
                })
                .collect())
        })
    }

    /// Runs matching the filter, newest first.
    pub fn list(&self, filter: &RunFilter) -> Result<Vec<RunSummary>> {
        // `evals history` is the dashboard's list with fewer filters: one query serves both.
        self.runs(&super::RunQuery {
            suite: filter.suite.clone(),
            branch: filter.branch.clone(),
            limit: filter.limit,
            ..Default::default()
        })
    }
}

impl Drop for PgStore {
    fn drop(&mut self) {
        // Closing the connection blocks on the client's runtime: off any runtime too.
        let client = self
            .client
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(client) = client {
            outside_runtime(move || drop(client));
        }
    }
}

/// Writes the snapshot (in a temporary file) into `run_snapshots` through `COPY`, streamed:
/// the whole run's JSON is never one string here. COPY's text format escapes the backslash
/// and the line and field separators; compact JSON has no raw newline or tab, but keeps
/// `\` in its escapes.
fn copy_snapshot(
    tx: &mut Transaction<'_>,
    id: &str,
    mut file: std::fs::File,
) -> std::result::Result<(), String> {
    use std::io::{BufRead, Seek};
    file.seek(std::io::SeekFrom::Start(0))
        .map_err(|e| e.to_string())?;
    let mut writer = tx
        .copy_in("COPY run_snapshots (run_id, snapshot) FROM STDIN")
        .map_err(|e| describe(&e))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 16, &mut writer);
    let escape = |out: &mut dyn Write, bytes: &[u8]| -> std::io::Result<()> {
        let mut start = 0;
        for (i, b) in bytes.iter().enumerate() {
            let esc: &[u8] = match b {
                b'\\' => b"\\\\",
                b'\t' => b"\\t",
                b'\n' => b"\\n",
                b'\r' => b"\\r",
                _ => continue,
            };
            out.write_all(&bytes[start..i])?;
            out.write_all(esc)?;
            start = i + 1;
        }
        out.write_all(&bytes[start..])
    };
    let mut reader = std::io::BufReader::with_capacity(1 << 16, file);
    (|| -> std::io::Result<()> {
        escape(&mut out, id.as_bytes())?;
        out.write_all(b"\t")?;
        loop {
            let chunk = reader.fill_buf()?;
            if chunk.is_empty() {
                break;
            }
            let n = chunk.len();
            escape(&mut out, chunk)?;
            reader.consume(n);
        }
        out.write_all(b"\n")?;
        out.flush()
    })()
    .map_err(|e| e.to_string())?;
    drop(out);
    writer.finish().map_err(|e| describe(&e))?;
    Ok(())
}

/// What the server said (its message, detail and hint), else the client's error.
fn describe(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut s = db.message().to_string();
        if let Some(d) = db.detail() {
            s.push_str(&format!(" ({d})"));
        }
        return s;
    }
    let mut s = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(inner) = source {
        let text = inner.to_string();
        if !s.contains(&text) {
            s.push_str(&format!(": {text}"));
        }
        source = inner.source();
    }
    s
}

pub(super) fn pg_err(shown: &str, e: postgres::Error) -> Error {
    HistoryError::Postgres {
        shown: shown.to_string(),
        why: crate::secrets::scrub(&describe(&e)).into_owned(),
    }
    .into()
}

/// Runs `f` here, or on a thread of its own when this thread is inside a tokio runtime
/// (the sync client starts a runtime of its own, which tokio refuses inside another).
fn outside_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    if tokio::runtime::Handle::try_current().is_err() {
        return f();
    }
    std::thread::scope(|s| match s.spawn(f).join() {
        Ok(v) => v,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shown_url_has_no_password() {
        assert_eq!(
            redact("postgres://evals:s3cr%40t@db.example:5432/hist?sslmode=require"),
            "postgres://evals@db.example:5432/hist?sslmode=require"
        );
        assert_eq!(
            redact("postgresql://u:p@h/db?password=hunter22&sslmode=require"),
            "postgresql://u@h/db?sslmode=require"
        );
        assert_eq!(redact("postgres://h/db?password=x"), "postgres://h/db");
        assert_eq!(redact("postgres://u@h"), "postgres://u@h");
        assert!(is_url("postgresql://h/db") && is_url("POSTGRES://h"));
        assert!(!is_url("history.sqlite3") && !is_url("./postgres/h.db"));
    }

    #[test]
    fn the_password_is_registered_with_the_scrubber_as_written_and_decoded() {
        register_password("postgres://u:pw%2Fin-url-77@h/db?password=param-secret-9");
        let text = "a pw/in-url-77 b pw%2Fin-url-77 c param-secret-9";
        let scrubbed = crate::secrets::scrub(text);
        for s in ["pw/in-url-77", "pw%2Fin-url-77", "param-secret-9"] {
            assert!(!scrubbed.contains(s), "{scrubbed}");
        }
    }

    #[test]
    fn a_bad_url_is_named_without_its_password() {
        let e = PgStore::open("postgres://u:topsecretpw@h:notaport/db")
            .err()
            .expect("refused")
            .to_string();
        assert!(e.starts_with("postgres://u@h:notaport/db: "), "{e}");
        assert!(!e.contains("topsecretpw"), "{e}");
    }
}
