//! The PostgreSQL history store: one history shared by every runner of a suite.
//!
//! The same tables and numbered migrations as the SQLite store (`migrations/postgres/`, the
//! PostgreSQL spelling of each), applied once and recorded in `evals_migrations` under an
//! advisory lock, so runners opening a new database at once migrate it once. A run is
//! inserted in one transaction and never rewritten; its number is taken inside that
//! transaction under a second advisory lock held to its commit, so runners storing at once
//! get distinct numbers. The rules every store shares (the baseline candidates, the
//! run-reference rule, the readers) are in `sql.rs`; this file holds PostgreSQL's spelling
//! of their queries.
//!
//! The URL's password never leaves the process: [`PgStore::location`] (what messages name)
//! leaves it out, and it is registered with the egress scrubber. `sslmode=require` (or
//! `verify-ca`/`verify-full`) connects over TLS (rustls, the platform's roots, the
//! certificate always verified); without it the connection is plain, as on a unix socket or
//! loopback.
//!
//! No wait on the server is unbounded. Connecting (TCP, TLS, start-up and authentication
//! together) gives up after the connect timeout, [`DEFAULT_CONNECT_TIMEOUT`] unless the
//! URL's `connect_timeout` or `PGCONNECT_TIMEOUT` says; a server that accepts the connection
//! and never answers is then not asked again for as long (so `check` waits once, not once
//! to store and once to find its baseline). Every statement runs under the session's
//! `statement_timeout` ([`DEFAULT_STATEMENT_TIMEOUT`] unless the URL's `statement_timeout`,
//! its `options=-c statement_timeout=…` or `EVALS_PG_STATEMENT_TIMEOUT` says), which the
//! server enforces with an error of its own; the client gives a silent server that long and
//! [`SILENCE_GRACE`] more, then drops the connection (the next call connects again). A wait
//! for another runner's lock may take [`LOCK_WAIT_FACTOR`] statement timeouts. The store
//! drives tokio-postgres on a runtime of its own, one call at a time, off any caller's
//! runtime.

use std::cell::Cell as Flag;
use std::future::Future;
use std::io::{Cursor, Write};
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::Duration;

use futures_util::SinkExt;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Config, CopyInSink, NoTls, Row, Statement, ToStatement};

use super::remote::{
    self, Fail, Keys, Limits, Wait, outside_runtime, remember_silence, server_err, silent_lately,
};
use super::sql::{self, Arg, Cell, Dialect, Query, Snapshot};
use super::url::{redact, register_password};
use super::{
    BranchRun, CaseQuery, CaseRun, HistoryError, HistoryReads, RunQuery, RunStore, RunSummary,
    ScorePoint, SnapshotLimit,
};
use crate::env::{EnvVars, PostgresVars};
use crate::error::{Error, Result};
use crate::results::{CaseLog, RunResult};

pub use super::remote::{LOCK_WAIT_FACTOR, SILENCE_GRACE};

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

/// How long connecting may take (the TCP connection, TLS, the start-up and authentication
/// together) unless the URL's `connect_timeout` (seconds) or `PGCONNECT_TIMEOUT` says.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one statement may run unless the URL's `statement_timeout`, its `options=-c
/// statement_timeout=…` or `EVALS_PG_STATEMENT_TIMEOUT` says (PostgreSQL's spelling:
/// milliseconds, or a number with `ms`, `s`, `min`, `h`, `d`; `0` turns it off).
pub const DEFAULT_STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);

/// What the session is told at each connection of a read-only store (`evals dashboard`).
const READ_ONLY: &str = "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY";

/// The variable that sets the statement timeout when the URL does not.
const STATEMENT_TIMEOUT_VAR: &str = EnvVars::EVALS_PG_STATEMENT_TIMEOUT;

/// The `statement_timeout` an `options` value (`-c statement_timeout=5s`,
/// `--statement_timeout=5s`) sets, as written.
fn statement_timeout_in_options(options: &str) -> Option<String> {
    let mut words = options.split_whitespace();
    while let Some(w) = words.next() {
        let setting = match w {
            "-c" => words.next(),
            w => w.strip_prefix("-c").or_else(|| w.strip_prefix("--")),
        };
        if let Some((k, v)) = setting.and_then(|s| s.split_once('='))
            && k.replace('-', "_") == "statement_timeout"
        {
            return Some(v.to_string());
        }
    }
    None
}

/// The URL without our own `statement_timeout` parameter (which libpq's URL does not have),
/// and that parameter's value.
fn without_our_keys(url: &str) -> (String, Option<String>) {
    let Some((base, query)) = url.split_once('?') else {
        return (url.to_string(), None);
    };
    let mut ours = None;
    let kept: Vec<&str> = query
        .split('&')
        .filter(|kv| match kv.split_once('=') {
            Some(("statement_timeout", v)) => {
                ours = Some(crate::text::percent_decoded(v));
                false
            }
            _ => true,
        })
        .collect();
    if kept.is_empty() {
        (base.to_string(), ours)
    } else {
        (format!("{base}?{}", kept.join("&")), ours)
    }
}

/// How PostgreSQL's messages name the keys that change its limits.
const KEYS: Keys = Keys {
    engine: "PostgreSQL",
    connect: "?connect_timeout=SECONDS in the URL (or PGCONNECT_TIMEOUT)",
    statement: "?statement_timeout=60s in the URL (or EVALS_PG_STATEMENT_TIMEOUT)",
    statement_inline: "?statement_timeout=60s in the URL, or EVALS_PG_STATEMENT_TIMEOUT",
};

/// The store's limits, read from the URL, the environment and the defaults.
type Timeouts = Limits;

impl Timeouts {
    /// Reads the limits (the URL's, then the environment's, then the defaults) and puts
    /// them in `config`: the TCP connect timeout, and the session's `statement_timeout` in
    /// its start-up options unless the URL's `options` set one.
    fn set(
        config: &mut Config,
        ours: Option<String>,
        var: impl Fn(&str) -> Option<String>,
    ) -> std::result::Result<Timeouts, String> {
        let (connect, connect_from) = match config.get_connect_timeout() {
            Some(d) => (*d, "connect_timeout in the URL"),
            None => match var("PGCONNECT_TIMEOUT").filter(|v| !v.trim().is_empty()) {
                Some(v) => match v.trim().parse::<u64>() {
                    Ok(s) if s > 0 => (Duration::from_secs(s), "PGCONNECT_TIMEOUT"),
                    _ => {
                        return Err(format!(
                            "PGCONNECT_TIMEOUT={v}: expected a whole number of seconds above 0; fix or unset it"
                        ));
                    }
                },
                None => (DEFAULT_CONNECT_TIMEOUT, "the default"),
            },
        };
        config.connect_timeout(connect);
        let in_options = config.get_options().and_then(statement_timeout_in_options);
        let (written, statement_from, key) = match (ours, in_options) {
            (Some(v), _) => (Some(v), "statement_timeout in the URL", "statement_timeout"),
            (None, Some(v)) => (
                Some(v),
                "options in the URL",
                "options=-c statement_timeout",
            ),
            (None, None) => match var(STATEMENT_TIMEOUT_VAR).filter(|v| !v.trim().is_empty()) {
                Some(v) => (Some(v), STATEMENT_TIMEOUT_VAR, STATEMENT_TIMEOUT_VAR),
                None => (None, "the default", ""),
            },
        };
        let statement = match &written {
            None => Some(DEFAULT_STATEMENT_TIMEOUT),
            Some(v) => match remote::duration(v) {
                Some(d) if d.is_zero() => None,
                Some(d) => Some(d),
                None => {
                    return Err(format!(
                        "{key}={v}: not a duration; write milliseconds, or a number with ms, s, min or h (30s), or 0 for none"
                    ));
                }
            },
        };
        if statement_from != "options in the URL" {
            let ms = statement.map_or(0, |d| d.as_millis().max(1));
            let mut options = config.get_options().unwrap_or_default().to_string();
            if !options.is_empty() {
                options.push(' ');
            }
            options.push_str(&format!("-c statement_timeout={ms}"));
            config.options(options);
        }
        let ports = config.get_ports();
        let server = config
            .get_hosts()
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let port = ports
                    .get(i)
                    .or_else(|| ports.first())
                    .copied()
                    .unwrap_or(5432);
                match h {
                    tokio_postgres::config::Host::Tcp(h) => format!("{h}:{port}"),
                    #[cfg(unix)]
                    tokio_postgres::config::Host::Unix(p) => {
                        format!("{}/.s.PGSQL.{port}", p.display())
                    }
                }
            })
            .collect::<Vec<_>>()
            .join(", ");
        Ok(Timeouts {
            connect,
            connect_from,
            statement,
            statement_from,
            server: if server.is_empty() {
                "the server".into()
            } else {
                server
            },
            keys: KEYS,
        })
    }

    /// What the server or the client said; a statement the server cancelled at its timeout
    /// says which limit and how to change it.
    fn said(&self, e: &tokio_postgres::Error) -> Fail {
        let mut s = describe(e);
        if e.code() == Some(&tokio_postgres::error::SqlState::QUERY_CANCELED) {
            s.push_str(&self.stopped_at_timeout());
        }
        Fail::Said(s)
    }
}

/// One connection: the client and the runtime it runs on (current-thread: the connection
/// is driven while a call waits, as the sync client does).
struct Conn {
    rt: tokio::runtime::Runtime,
    client: Client,
}

/// The PostgreSQL history database, connected: a [`super::HistoryStore`] many runners share.
pub struct PgStore {
    /// `None` before the first call, while dropping, and after a silent server's
    /// connection was dropped (the next call connects again).
    conn: Mutex<Option<Conn>>,
    config: Config,
    tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
    timeouts: Timeouts,
    /// The URL as given (the key of [`SILENT`]; never shown).
    url: String,
    read_only: bool,
    snapshot_limit: Option<SnapshotLimit>,
    shown: String,
    migrated: usize,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("shown", &self.shown)
            .finish_non_exhaustive()
    }
}

/// Waits on a connection's runtime, each wait bounded; a wait that ran out marks the
/// connection broken.
#[derive(Clone, Copy)]
struct Waiter<'a> {
    rt: &'a tokio::runtime::Runtime,
    t: &'a Timeouts,
    broken: &'a Flag<bool>,
}

impl Waiter<'_> {
    fn wait<T>(
        &self,
        kind: Wait,
        call: impl Future<Output = std::result::Result<T, tokio_postgres::Error>>,
    ) -> std::result::Result<T, Fail> {
        self.t.wait(self.rt, kind, call).map_err(|e| match e {
            Some(e) => self.t.said(&e),
            None => {
                self.broken.set(true);
                let waited = self.t.within(kind).unwrap_or_default();
                Fail::Silent(self.t.silent_at_statement(waited))
            }
        })
    }
}

/// The connection as a call sees it: statements each bounded by the statement timeout.
pub(super) struct Db<'a> {
    w: Waiter<'a>,
    client: &'a mut Client,
}

type Params<'p> = [&'p (dyn ToSql + Sync)];

impl Db<'_> {
    /// Runs `sql` (statements separated by `;`, no parameters).
    pub(super) fn batch_execute(&mut self, sql: &str) -> std::result::Result<(), Fail> {
        self.w.wait(Wait::Statement, self.client.batch_execute(sql))
    }

    /// The rows of a query.
    pub(super) fn query<S: ?Sized + ToStatement>(
        &mut self,
        sql: &S,
        params: &Params<'_>,
    ) -> std::result::Result<Vec<Row>, Fail> {
        self.w.wait(Wait::Statement, self.client.query(sql, params))
    }

    /// The row of a query that returns one or none.
    pub(super) fn query_opt<S: ?Sized + ToStatement>(
        &mut self,
        sql: &S,
        params: &Params<'_>,
    ) -> std::result::Result<Option<Row>, Fail> {
        self.w
            .wait(Wait::Statement, self.client.query_opt(sql, params))
    }

    /// Begins a transaction (rolled back when dropped uncommitted).
    pub(super) fn transaction(&mut self) -> std::result::Result<Tx<'_>, Fail> {
        let w = self.w;
        let tx = w.wait(Wait::Statement, self.client.transaction())?;
        Ok(Tx { w, tx })
    }
}

/// A transaction, its statements bounded as [`Db`]'s.
pub(super) struct Tx<'a> {
    w: Waiter<'a>,
    tx: tokio_postgres::Transaction<'a>,
}

impl<'a> Tx<'a> {
    pub(super) fn execute<S: ?Sized + ToStatement>(
        &mut self,
        sql: &S,
        params: &Params<'_>,
    ) -> std::result::Result<u64, Fail> {
        self.w.wait(Wait::Statement, self.tx.execute(sql, params))
    }

    pub(super) fn batch_execute(&mut self, sql: &str) -> std::result::Result<(), Fail> {
        self.w.wait(Wait::Statement, self.tx.batch_execute(sql))
    }

    pub(super) fn query_one<S: ?Sized + ToStatement>(
        &mut self,
        sql: &S,
        params: &Params<'_>,
    ) -> std::result::Result<Row, Fail> {
        self.w.wait(Wait::Statement, self.tx.query_one(sql, params))
    }

    pub(super) fn prepare(&mut self, sql: &str) -> std::result::Result<Statement, Fail> {
        self.w.wait(Wait::Statement, self.tx.prepare(sql))
    }

    /// Takes the advisory lock `key` until the transaction ends, waiting up to
    /// [`LOCK_WAIT_FACTOR`] statement timeouts for another runner holding it.
    pub(super) fn lock(&mut self, key: i64) -> std::result::Result<(), Fail> {
        let Some(limit) = self.w.t.statement else {
            return self
                .execute("SELECT pg_advisory_xact_lock($1)", &[&key])
                .map(|_| ());
        };
        let ms = limit.as_millis().max(1);
        self.batch_execute(&format!(
            "SET LOCAL statement_timeout = {}",
            ms * u128::from(LOCK_WAIT_FACTOR)
        ))?;
        self.w.wait(
            Wait::Lock,
            self.tx.execute("SELECT pg_advisory_xact_lock($1)", &[&key]),
        )?;
        self.batch_execute(&format!("SET LOCAL statement_timeout = {ms}"))
    }

    /// Starts `COPY … FROM STDIN`: write the data to what comes back, then
    /// [`CopyIn::finish`].
    pub(super) fn copy_in(&mut self, sql: &str) -> std::result::Result<CopyIn<'_>, Fail> {
        let sink = self.w.wait(Wait::Statement, self.tx.copy_in(sql))?;
        Ok(CopyIn {
            w: self.w,
            sink: Box::pin(sink),
            buf: Vec::with_capacity(COPY_CHUNK),
        })
    }

    pub(super) fn commit(self) -> std::result::Result<(), Fail> {
        self.w.wait(Wait::Statement, self.tx.commit())
    }
}

/// How much COPY data is sent at a time.
const COPY_CHUNK: usize = 1 << 16;

/// `COPY … FROM STDIN`'s data, sent a chunk at a time, each send bounded.
pub(super) struct CopyIn<'a> {
    w: Waiter<'a>,
    sink: Pin<Box<CopyInSink<Cursor<Vec<u8>>>>>,
    buf: Vec<u8>,
}

impl CopyIn<'_> {
    fn send(&mut self) -> std::result::Result<(), Fail> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(COPY_CHUNK));
        let sink = self.sink.as_mut();
        self.w.wait(Wait::Statement, async move {
            let mut sink = sink;
            sink.send(Cursor::new(chunk)).await
        })
    }

    /// Sends what is left and ends the COPY.
    pub(super) fn finish(mut self) -> std::result::Result<u64, Fail> {
        self.send()?;
        let sink = self.sink.as_mut();
        self.w.wait(Wait::Statement, sink.finish())
    }
}

impl Write for CopyIn<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= COPY_CHUNK {
            self.send()
                .map_err(|e| std::io::Error::other(e.to_string()))?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send()
            .map_err(|e| std::io::Error::other(e.to_string()))
    }
}

impl PgStore {
    /// Connects to the database `url` names (`postgres://user:password@host:port/db`,
    /// `?sslmode=require` for TLS) and applies the migrations it has not had. Connecting and
    /// every statement are bounded (see the module's docs for the limits and the keys that
    /// change them). Nothing is read from the environment: [`PgStore::open_with`] takes
    /// `PGPASSWORD` and the timeouts' variables.
    pub fn open(url: &str) -> Result<PgStore> {
        PgStore::open_with(url, &PostgresVars::default())
    }

    /// [`PgStore::open`], with the variables `vars` holds (an
    /// [`Environment`](crate::env::Environment)'s `postgres`) used where the URL leaves them
    /// out: the password (`PGPASSWORD`), the connect timeout (`PGCONNECT_TIMEOUT`) and the
    /// statement timeout (`EVALS_PG_STATEMENT_TIMEOUT`).
    pub fn open_with(url: &str, vars: &PostgresVars) -> Result<PgStore> {
        outside_runtime(|| PgStore::connect(url, vars))
    }

    fn connect(url: &str, vars: &PostgresVars) -> Result<PgStore> {
        let shown = redact(url);
        let err = |why: String| -> Error {
            HistoryError::Server {
                shown: shown.clone(),
                why: crate::secrets::scrub(&why).into_owned(),
            }
            .into()
        };
        register_password(url);
        let (libpq, ours) = without_our_keys(url);
        // rustls always verifies the server's certificate: the stricter modes are `require`.
        let spelled = libpq
            .replace("sslmode=verify-full", "sslmode=require")
            .replace("sslmode=verify-ca", "sslmode=require");
        let mut config: Config = spelled
            .parse()
            .map_err(|e: tokio_postgres::Error| err(format!("not a usable database URL ({e})")))?;
        if config.get_password().is_none()
            && let Some(password) = vars.get(EnvVars::PGPASSWORD)
        {
            config.password(password);
        }
        if let Some(password) = config.get_password() {
            crate::secrets::register([String::from_utf8_lossy(password).into_owned()]);
        }
        let timeouts =
            Timeouts::set(&mut config, ours, |k| vars.get(k)).map_err(|why| -> Error {
                Error::Usage(format!(
                    "{shown}: {}",
                    crate::secrets::scrub(&why).into_owned()
                ))
            })?;
        config.application_name("evals");
        let tls = match config.get_ssl_mode() {
            tokio_postgres::config::SslMode::Require => {
                let _ = rustls::crypto::ring::default_provider().install_default();
                let tls = <rustls::ClientConfig as rustls_platform_verifier::ConfigVerifierExt>::with_platform_verifier()
                    .map_err(|e| err(format!("cannot set up TLS: {e}")))?;
                Some(tokio_postgres_rustls::MakeRustlsConnect::new(tls))
            }
            _ => None,
        };
        let mut store = PgStore {
            conn: Mutex::new(None),
            config,
            tls,
            timeouts,
            url: url.to_string(),
            read_only: false,
            snapshot_limit: None,
            shown,
            migrated: 0,
        };
        store.migrated = store.migrate()?;
        Ok(store)
    }

    /// Opens the database at `url` (migrating it as [`PgStore::open`] does) with every
    /// later transaction of its session read-only (`evals dashboard`).
    pub fn open_read_only(url: &str) -> Result<PgStore> {
        PgStore::open(url)?.into_read_only()
    }

    /// [`PgStore::open_read_only`] with the variables of [`PgStore::open_with`].
    pub fn open_read_only_with(url: &str, vars: &PostgresVars) -> Result<PgStore> {
        PgStore::open_with(url, vars)?.into_read_only()
    }

    /// Makes every later transaction of the store's sessions read-only (`evals
    /// dashboard`), this one's and any it connects again.
    fn into_read_only(mut self) -> Result<PgStore> {
        self.read_only = true;
        let shown = self.shown.clone();
        self.with(|c| {
            c.batch_execute(READ_ONLY)
                .map_err(|e| server_err(&shown, e))
        })?;
        Ok(self)
    }

    /// How many migrations this open applied (none when another open had applied them).
    pub fn migrated(&self) -> usize {
        self.migrated
    }

    fn path(&self) -> PathBuf {
        PathBuf::from(&self.shown)
    }

    /// A new connection, within the connect timeout (a server silent lately is not asked
    /// again: its error comes back at once).
    fn dial(&self) -> Result<Conn> {
        let silent = |why: String| -> Error {
            HistoryError::ServerTimeout {
                shown: self.shown.clone(),
                why,
            }
            .into()
        };
        if let Some(why) = silent_lately(&self.url) {
            return Err(silent(why));
        }
        let rt = remote::runtime()?;
        let config = &self.config;
        let connecting = async {
            // The connection is driven on this runtime whenever a call waits on it.
            match &self.tls {
                None => config.connect(NoTls).await.map(|(client, connection)| {
                    tokio::spawn(async move {
                        let _ = connection.await;
                    });
                    client
                }),
                Some(tls) => config
                    .connect(tls.clone())
                    .await
                    .map(|(client, connection)| {
                        tokio::spawn(async move {
                            let _ = connection.await;
                        });
                        client
                    }),
            }
        };
        let t = &self.timeouts;
        let client = match rt.block_on(async { tokio::time::timeout(t.connect, connecting).await })
        {
            Ok(Ok(client)) => client,
            Ok(Err(e)) => return Err(server_err(&self.shown, t.said(&e))),
            Err(_) => {
                let why = t.silent_at_connect();
                remember_silence(&self.url, t.connect, &why);
                return Err(silent(why));
            }
        };
        let conn = Conn { rt, client };
        if self.read_only {
            let broken = Flag::new(false);
            let w = Waiter {
                rt: &conn.rt,
                t,
                broken: &broken,
            };
            w.wait(Wait::Statement, conn.client.batch_execute(READ_ONLY))
                .map_err(|e| server_err(&self.shown, e))?;
        }
        Ok(conn)
    }

    /// Runs `f` on the connection (made now if there is none), off any tokio runtime (the
    /// store blocks on one of its own); a connection that went silent or closed is dropped.
    pub(super) fn with<T: Send>(
        &self,
        f: impl FnOnce(&mut Db<'_>) -> Result<T> + Send,
    ) -> Result<T> {
        let mut guard = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let slot: &mut Option<Conn> = &mut guard;
        outside_runtime(move || {
            if slot.is_none() {
                *slot = Some(self.dial()?);
            }
            let conn = slot.as_mut().expect("connected just above");
            let broken = Flag::new(false);
            let out = {
                let mut db = Db {
                    w: Waiter {
                        rt: &conn.rt,
                        t: &self.timeouts,
                        broken: &broken,
                    },
                    client: &mut conn.client,
                };
                f(&mut db)
            };
            if broken.get() || conn.client.is_closed() {
                *slot = None;
            }
            out
        })
    }

    fn migrate(&self) -> Result<usize> {
        let shown = self.shown.clone();
        self.with(|c| {
            let e = |e| server_err(&shown, e);
            let mut tx = c.transaction().map_err(e)?;
            tx.lock(MIGRATION_LOCK).map_err(e)?;
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

    /// Stores a run (cases in `cases`) in one transaction, taking the next number or the
    /// one given.
    fn store_as(&mut self, run: &RunResult, cases: &CaseLog, number: Option<i64>) -> Result<()> {
        use crate::secrets::scrub;
        let snapshot = sql::compact_snapshot(run, cases)?;
        let (argv, settings) = sql::run_text(run);
        let shown = self.shown.clone();
        self.with(move |c| {
            let e = |e| server_err(&shown, e);
            let r = &run.run;
            let mut tx = c.transaction().map_err(e)?;
            // Held to the commit: the next runner numbers its run after this one lands.
            tx.lock(NUMBER_LOCK).map_err(e)?;
            let suite = scrub(&r.suite).into_owned();
            let branch = r.branch.as_deref().map(|b| scrub(b).into_owned());
            let (command, mode) = (r.command.as_str(), r.mode.to_string());
            let started_at = crate::results::time::text(&r.started_at);
            let finished_at = r.finished_at.as_ref().map(crate::results::time::text);
            tx.execute(
                "INSERT INTO runs (id, suite, suite_fingerprint, branch, \"commit\", command, mode, argv, settings, started_at, finished_at, status, number)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8::text::jsonb, $9::text::jsonb, $10, $11, $12,
                         COALESCE($13, (SELECT COALESCE(MAX(number), 0) + 1 FROM runs)))",
                &[
                    &r.id, &suite, &r.suite_fingerprint, &branch, &r.commit, &command, &mode,
                    &argv, &settings, &started_at, &finished_at, &r.status.as_str(), &number,
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
}

impl RunStore for PgStore {
    fn location(&self) -> String {
        self.shown.clone()
    }

    /// Stores a run (cases in `cases`) in one transaction, taking the next number.
    fn store(&mut self, run: &RunResult, cases: &CaseLog) -> Result<()> {
        self.store_as(run, cases, None)
    }

    fn insert_numbered(&mut self, run: &RunResult, number: i64) -> Result<()> {
        let (bare, log) = super::logged(run)?;
        self.store_as(&bare, &log, Some(number))
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

impl HistoryReads for PgStore {
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

/// The shared queries in PostgreSQL's spelling: `$N` parameters typed where a null may
/// come, `COLLATE "C"` columns (text compares byte-wise, as on SQLite), `LIMIT NULL` for
/// none.
fn sql_of(query: Query) -> &'static str {
    match query {
        Query::IdOfNumber => "SELECT id FROM runs WHERE number = $1",
        Query::Id => "SELECT id FROM runs WHERE id = $1",
        Query::Prefixed => {
            "SELECT id, number FROM runs WHERE id >= $1 AND substr(id, 1, $2::int8::int4) = $1
             ORDER BY number LIMIT 6"
        }
        Query::CountPrefixed => {
            "SELECT COUNT(*) FROM runs WHERE substr(id, 1, $2::int8::int4) = $1"
        }
        Query::BaselineCandidates => {
            "SELECT id, suite_fingerprint, CAST(settings AS TEXT), started_at FROM runs
             WHERE suite = $1 AND branch = $2 AND status = 'completed'
               AND id <> $4
               AND (started_at < $3 OR (started_at = $3 AND id < $4))
             ORDER BY started_at DESC, id DESC"
        }
        Query::Runs => {
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
             LIMIT $6"
        }
        Query::CaseRuns => {
            "SELECT r.number, r.id, r.started_at, r.branch, r.\"commit\", r.suite, r.status,
                x.contender, x.dataset, c.\"case\", c.fingerprint, c.score, c.passed, c.error
             FROM case_results c JOIN experiments x ON x.id = c.experiment_id
                  JOIN runs r ON r.id = x.run_id
             WHERE c.\"case\" = $1 AND ($2::text IS NULL OR x.dataset = $2)
               AND ($3::text IS NULL OR r.suite = $3) AND ($4::text IS NULL OR r.branch = $4)
             ORDER BY r.started_at DESC, r.id DESC, x.id DESC
             LIMIT $5"
        }
        Query::Scores => {
            "SELECT r.number, r.id, r.started_at, r.\"commit\", r.suite, x.contender, x.dataset, x.score
             FROM (SELECT id, number, started_at, \"commit\", suite FROM runs
                   WHERE branch = $1 AND status = 'completed' AND ($2::text IS NULL OR suite = $2)
                   ORDER BY started_at DESC, id DESC LIMIT $3) r
             JOIN experiments x ON x.run_id = r.id
             ORDER BY r.started_at, r.id, x.id"
        }
    }
}

/// A PostgreSQL value as a shared row's cell, by its column's type.
fn cell(row: &Row, i: usize) -> std::result::Result<Cell, tokio_postgres::Error> {
    let ty = row.columns()[i].type_();
    Ok(if *ty == Type::INT8 {
        row.try_get::<_, Option<i64>>(i)?
            .map_or(Cell::Null, Cell::Int)
    } else if *ty == Type::INT4 {
        row.try_get::<_, Option<i32>>(i)?
            .map_or(Cell::Null, |n| Cell::Int(n.into()))
    } else if *ty == Type::FLOAT8 {
        row.try_get::<_, Option<f64>>(i)?
            .map_or(Cell::Null, Cell::Real)
    } else if *ty == Type::BOOL {
        row.try_get::<_, Option<bool>>(i)?
            .map_or(Cell::Null, |b| Cell::Int(b.into()))
    } else {
        row.try_get::<_, Option<String>>(i)?
            .map_or(Cell::Null, Cell::Text)
    })
}

impl Dialect for PgStore {
    fn shown(&self) -> PathBuf {
        self.path()
    }

    fn rows(&self, query: Query, args: &[Arg<'_>]) -> Result<Vec<sql::Row>> {
        let shown = self.shown.clone();
        let limits = &self.timeouts;
        self.with(|c| {
            let texts: Vec<Option<&str>> = args
                .iter()
                .map(|a| match a {
                    Arg::Text(t) => *t,
                    _ => None,
                })
                .collect();
            let ints: Vec<Option<i64>> = args
                .iter()
                .map(|a| match *a {
                    Arg::Int(n) => n,
                    Arg::Limit(l) => Arg::limit(l),
                    Arg::Text(_) => None,
                })
                .collect();
            let params: Vec<&(dyn ToSql + Sync)> = args
                .iter()
                .enumerate()
                .map(|(i, a)| match a {
                    Arg::Text(_) => &texts[i] as &(dyn ToSql + Sync),
                    _ => &ints[i] as &(dyn ToSql + Sync),
                })
                .collect();
            let rows = c
                .query(sql_of(query), &params)
                .map_err(|e| server_err(&shown, e))?;
            rows.iter()
                .map(|r| {
                    (0..r.len())
                        .map(|i| cell(r, i))
                        .collect::<std::result::Result<Vec<Cell>, _>>()
                        .map(sql::Row)
                        .map_err(|e| server_err(&shown, limits.said(&e)))
                })
                .collect()
        })
    }

    fn snapshot(&self, id: &str, limit: Option<u64>) -> Result<Option<Snapshot>> {
        let shown = self.shown.clone();
        let limit = limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX));
        let row: Option<(Option<String>, i64)> = self.with(|c| {
            c.query_opt(
                "SELECT CASE WHEN $2::int8 IS NULL OR octet_length(snapshot::text) <= $2 THEN snapshot::text END,
                        octet_length(snapshot::text)::int8
                   FROM run_snapshots WHERE run_id = $1",
                &[&id, &limit],
            )
            .map(|row| row.map(|r| (r.get(0), r.get(1))))
            .map_err(|e| server_err(&shown, e))
        })?;
        Ok(row.map(|(text, size)| match text {
            Some(text) => Snapshot::Bytes(text.into_bytes()),
            None => Snapshot::Over(u64::try_from(size).unwrap_or(0)),
        }))
    }

    fn snapshot_limit(&self) -> Option<SnapshotLimit> {
        self.snapshot_limit
    }

    fn unexpected(&self, query: Query, why: String) -> Error {
        server_err(&self.shown, Fail::Said(format!("{query:?}: {why}")))
    }
}

impl Drop for PgStore {
    fn drop(&mut self) {
        // A runtime may not be dropped inside another: the connection goes off any runtime.
        let conn = self
            .conn
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(conn) = conn {
            outside_runtime(move || drop(conn));
        }
    }
}

/// Writes the snapshot (in a temporary file) into `run_snapshots` through `COPY`, streamed:
/// the whole run's JSON is never one string here. COPY's text format escapes the backslash
/// and the line and field separators; compact JSON has no raw newline or tab, but keeps
/// `\` in its escapes.
fn copy_snapshot(
    tx: &mut Tx<'_>,
    id: &str,
    mut file: std::fs::File,
) -> std::result::Result<(), String> {
    use std::io::{BufRead, Seek};
    file.seek(std::io::SeekFrom::Start(0))
        .map_err(|e| e.to_string())?;
    let mut writer = tx
        .copy_in("COPY run_snapshots (run_id, snapshot) FROM STDIN")
        .map_err(|e| e.to_string())?;
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
        escape(&mut writer, id.as_bytes())?;
        writer.write_all(b"\t")?;
        loop {
            let chunk = reader.fill_buf()?;
            if chunk.is_empty() {
                break;
            }
            let n = chunk.len();
            escape(&mut writer, chunk)?;
            reader.consume(n);
        }
        writer.write_all(b"\n")
    })()
    .map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())?;
    Ok(())
}

/// What the server said (its message, detail and hint), else the client's error.
fn describe(e: &tokio_postgres::Error) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

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
            .expect_err("refused")
            .to_string();
        assert!(e.starts_with("postgres://u@h:notaport/db: "), "{e}");
        assert!(!e.contains("topsecretpw"), "{e}");
    }

    #[test]
    fn the_statement_timeout_is_found_in_options_and_ours_is_taken_out_of_the_url() {
        assert_eq!(
            statement_timeout_in_options("-c search_path=x -c statement_timeout=5s").as_deref(),
            Some("5s")
        );
        assert_eq!(
            statement_timeout_in_options("-cstatement_timeout=7").as_deref(),
            Some("7")
        );
        assert_eq!(
            statement_timeout_in_options("--statement-timeout=9s").as_deref(),
            Some("9s")
        );
        assert_eq!(statement_timeout_in_options("-c lock_timeout=1s"), None);
        assert_eq!(
            without_our_keys(
                "postgres://h/db?sslmode=require&statement_timeout=2s&connect_timeout=3"
            ),
            (
                "postgres://h/db?sslmode=require&connect_timeout=3".to_string(),
                Some("2s".to_string())
            )
        );
        assert_eq!(
            without_our_keys("postgres://h/db?statement_timeout=1min"),
            ("postgres://h/db".to_string(), Some("1min".to_string()))
        );
        assert_eq!(
            without_our_keys("postgres://h/db"),
            ("postgres://h/db".to_string(), None)
        );
    }

    #[test]
    fn the_limits_come_from_the_url_then_the_environment_then_the_defaults() {
        let limits = |url: &str, env: &[(&str, &str)]| {
            let (libpq, ours) = without_our_keys(url);
            let mut config: Config = libpq.parse().expect("a URL");
            let env: Vec<(String, String)> = env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            Timeouts::set(&mut config, ours, |k| {
                env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
            })
            .map(|t| (t, config))
        };
        let (t, config) = limits("postgres://u@db.example:6543/h", &[]).unwrap();
        assert_eq!(
            (t.connect, t.connect_from, t.statement, t.statement_from),
            (
                DEFAULT_CONNECT_TIMEOUT,
                "the default",
                Some(DEFAULT_STATEMENT_TIMEOUT),
                "the default"
            )
        );
        assert_eq!(t.server, "db.example:6543");
        assert_eq!(config.get_options(), Some("-c statement_timeout=30000"));
        assert_eq!(config.get_connect_timeout(), Some(&DEFAULT_CONNECT_TIMEOUT));

        let env = [("PGCONNECT_TIMEOUT", "4"), (STATEMENT_TIMEOUT_VAR, "2s")];
        let (t, config) = limits("postgres://u@h/db", &env).unwrap();
        assert_eq!(
            (t.connect.as_secs(), t.connect_from),
            (4, "PGCONNECT_TIMEOUT")
        );
        assert_eq!(
            (t.statement, t.statement_from),
            (Some(Duration::from_secs(2)), STATEMENT_TIMEOUT_VAR)
        );
        assert_eq!(config.get_options(), Some("-c statement_timeout=2000"));

        let url = "postgres://u@h/db?connect_timeout=3&statement_timeout=0";
        let (t, config) = limits(url, &env).unwrap();
        assert_eq!(
            (t.connect.as_secs(), t.connect_from),
            (3, "connect_timeout in the URL")
        );
        assert_eq!(
            (t.statement, t.statement_from),
            (None, "statement_timeout in the URL")
        );
        assert_eq!(config.get_options(), Some("-c statement_timeout=0"));

        let url = "postgres://u@h/db?options=-c%20statement_timeout%3D7s";
        let (t, config) = limits(url, &env).unwrap();
        assert_eq!(
            (t.statement, t.statement_from),
            (Some(Duration::from_secs(7)), "options in the URL")
        );
        assert_eq!(config.get_options(), Some("-c statement_timeout=7s"));

        let e = limits("postgres://u@h/db?statement_timeout=soon", &[])
            .err()
            .unwrap();
        assert_eq!(
            e,
            "statement_timeout=soon: not a duration; write milliseconds, or a number with ms, s, min or h (30s), or 0 for none"
        );
        let e = limits("postgres://u@h/db", &[("PGCONNECT_TIMEOUT", "x")])
            .err()
            .unwrap();
        assert!(
            e.starts_with("PGCONNECT_TIMEOUT=x: expected a whole number"),
            "{e}"
        );
    }
}
