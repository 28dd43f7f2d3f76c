//! The MySQL / MariaDB history store: one history shared by every runner of a suite, on
//! MySQL 8.0+ or MariaDB 10.11+.
//!
//! The same tables and numbered migrations as the SQLite store (`migrations/mysql/`, the
//! MySQL spelling of each), applied once and recorded in `evals_migrations` under a named
//! lock (`GET_LOCK`), so runners opening a new database at once migrate it once. MySQL
//! commits each DDL statement as it goes, so a migration stopped midway is applied again
//! whole, its statements that had taken effect skipped (a table, column or index already
//! there, a column already gone). Text keys are in a binary collation without padding
//! (`utf8mb4_0900_bin` on MySQL 8, `utf8mb4_nopad_bin` on MariaDB): ids, suites and
//! branches compare exactly and order byte-wise, as on SQLite. A run is inserted in one
//! transaction and never rewritten; its number is taken inside that transaction under a
//! second named lock held to its commit, so runners storing at once get distinct numbers.
//! Its snapshot is kept in parts of at most `SNAPSHOT_PART` bytes (one value is capped by
//! the server's `max_allowed_packet`), streamed from a temporary file.
//!
//! The URL is `mysql://user:password@host:port/database` (or `mariadb://`), with these keys:
//! `ssl-mode` (`DISABLED`, the default without `ssl-ca`; `REQUIRED`, `VERIFY_CA` (the
//! default with `ssl-ca`) and `VERIFY_IDENTITY`: TLS, the certificate and the host name
//! checked, as rustls always checks them: mysql_async 0.37 cannot leave the name out with
//! rustls 0.23), `ssl-ca` (the CA certificate to trust, PEM; else the bundled web roots),
//! `connect-timeout` (seconds) and `statement-timeout` (`30s`, `500ms`, `0` for none).
//! `PREFERRED` is refused: a store never falls back to plain text.
//! The password never leaves the process: [`RunStore::location`] leaves it out, and it is
//! registered with the egress scrubber.
//!
//! No wait on the server is unbounded. Connecting (TCP, TLS, the handshake) gives up after
//! the connect timeout ([`DEFAULT_CONNECT_TIMEOUT`]); a server that accepts the connection
//! and never answers is then not asked again for as long. Every statement runs under the
//! session's statement timeout ([`DEFAULT_STATEMENT_TIMEOUT`]: `max_statement_time` on
//! MariaDB, every statement; `max_execution_time` on MySQL, its reads), and the client gives
//! a silent server that long and [`super::remote::SILENCE_GRACE`] more, then drops the
//! connection (the next call connects again). A wait for another runner's lock may take
//! [`super::remote::LOCK_WAIT_FACTOR`] statement timeouts. The store drives mysql_async on
//! a runtime of its own, one call at a time, off any caller's runtime.

use std::cell::Cell as Flag;
use std::future::Future;
use std::io::Read;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{Opts, OptsBuilder, Params, SslOpts, Value};

use super::remote::{
    self, Fail, Keys, Limits, Wait, outside_runtime, remember_silence, server_err, silent_lately,
};
use super::sql::{self, Arg, CaseRow, Cell, Dialect, Query, Row, Snapshot};
use super::url::{redact, register_password};
use super::{
    BranchRun, CaseQuery, CaseRun, HistoryError, HistoryReads, RunQuery, RunStore, RunSummary,
    ScorePoint, SnapshotLimit,
};
use crate::error::{Error, Result};
use crate::results::{CaseLog, RunResult};

/// Numbered migrations, the MySQL spelling of the SQLite store's, one for one.
const MIGRATIONS: &[(&str, &str)] = &[
    ("0001_init", include_str!("migrations/mysql/0001_init.sql")),
    (
        "0002_run_numbers",
        include_str!("migrations/mysql/0002_run_numbers.sql"),
    ),
    (
        "0003_run_snapshots",
        include_str!("migrations/mysql/0003_run_snapshots.sql"),
    ),
    (
        "0004_read_indexes",
        include_str!("migrations/mysql/0004_read_indexes.sql"),
    ),
];

/// The server's errors a migration applied again meets where its statements had taken
/// effect before it was stopped: a table, a column or an index already there (1050, 1060,
/// 1061), a column already gone (1054, 1091).
const ALREADY_DONE: &[u16] = &[1050, 1054, 1060, 1061, 1091];

/// The binary collations without padding, the first the server has chosen.
const COLLATIONS: &[&str] = &["utf8mb4_0900_bin", "utf8mb4_nopad_bin", "utf8mb4_bin"];

/// How long connecting may take (TCP, TLS and the handshake together) unless the URL's
/// `connect-timeout` (seconds) says.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one statement may run unless the URL's `statement-timeout` says (`30s`,
/// `500ms`, a number of milliseconds, `0` for none).
pub const DEFAULT_STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);

/// The largest part a snapshot is stored in.
pub(crate) const SNAPSHOT_PART: usize = 1 << 20;

/// How MySQL's messages name the keys that change its limits.
const KEYS: Keys = Keys {
    engine: "MySQL",
    connect: "?connect-timeout=SECONDS in the URL",
    statement: "?statement-timeout=60s in the URL",
    statement_inline: "?statement-timeout=60s in the URL",
};

/// The keys a URL may have, as messages list them.
const URL_KEYS: &str = "ssl-mode, ssl-ca, connect-timeout and statement-timeout";

/// How the connection is secured (`ssl-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tls {
    /// Plain text.
    Disabled,
    /// TLS, the certificate and the host name checked against the roots (`REQUIRED`,
    /// `VERIFY_CA` and `VERIFY_IDENTITY`: rustls always checks; mysql_async's "skip the
    /// name" matches an error text rustls 0.23 no longer writes, so `VERIFY_CA` would be
    /// refused by name anyway, or worse, pass by accident if it ever did).
    Verified,
}

/// A `mysql://` URL, read.
#[derive(Debug, Clone, PartialEq)]
struct Target {
    user: Option<String>,
    password: Option<String>,
    host: String,
    port: u16,
    database: String,
    tls: Tls,
    ca: Option<PathBuf>,
    connect: Option<Duration>,
    /// `Some(None)`: turned off.
    statement: Option<Option<Duration>>,
}

impl Target {
    /// Reads `url`; the error is what is wrong and how to write it, without the URL.
    fn parse(url: &str) -> std::result::Result<Target, String> {
        let url = url.trim();
        let rest = url
            .split_once("://")
            .map(|(_, rest)| rest)
            .ok_or("not a mysql:// URL")?;
        let (head, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, path) = head.split_once('/').unwrap_or((head, ""));
        let (info, hostport) = match authority.rsplit_once('@') {
            Some((info, hostport)) => (Some(info), hostport),
            None => (None, authority),
        };
        let decode = crate::text::percent_decoded;
        let (user, mut password) = match info.map(|i| i.split_once(':').unwrap_or((i, ""))) {
            Some((u, p)) => (
                Some(decode(u)).filter(|u| !u.is_empty()),
                info.filter(|i| i.contains(':')).map(|_| decode(p)),
            ),
            None => (None, None),
        };
        let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
            let (h, after) = v6.split_once(']').ok_or("an IPv6 host without its `]`")?;
            (h.to_string(), after.strip_prefix(':'))
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (hostport.to_string(), None),
            }
        };
        if host.is_empty() {
            return Err("no host: write mysql://user:password@host:3306/database".into());
        }
        let port = match port {
            None | Some("") => 3306,
            Some(p) => p
                .parse()
                .map_err(|_| format!("port {p}: not a port number; write host:3306"))?,
        };
        let database = decode(path.trim_end_matches('/'));
        if database.is_empty() || database.contains('/') {
            return Err(
                "no database in the URL: write mysql://user:password@host:3306/DATABASE".into(),
            );
        }
        let mut target = Target {
            user,
            password: None,
            host,
            port,
            database,
            tls: Tls::Disabled,
            ca: None,
            connect: None,
            statement: None,
        };
        let mut mode = None;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let key = k.to_ascii_lowercase().replace('_', "-");
            let value = decode(v);
            match key.as_str() {
                "password" => password = Some(value),
                "ssl-mode" | "sslmode" => {
                    mode = Some(
                        match value.to_ascii_uppercase().replace('-', "_").as_str() {
                            "DISABLED" => Tls::Disabled,
                            "REQUIRED" | "VERIFY_CA" | "VERIFY_IDENTITY" => Tls::Verified,
                            "PREFERRED" => {
                                return Err(format!(
                                    "{k}={v}: a history never falls back to a plain connection; write ssl-mode=REQUIRED (TLS) or ssl-mode=DISABLED"
                                ));
                            }
                            _ => {
                                return Err(format!(
                                    "{k}={v}: not an ssl-mode; write DISABLED, REQUIRED, VERIFY_CA or VERIFY_IDENTITY"
                                ));
                            }
                        },
                    )
                }
                "ssl-ca" => target.ca = Some(PathBuf::from(value)),
                "connect-timeout" => match value.trim().parse::<u64>() {
                    Ok(s) if s > 0 => target.connect = Some(Duration::from_secs(s)),
                    _ => {
                        return Err(format!(
                            "{k}={v}: expected a whole number of seconds above 0 (connect-timeout=10)"
                        ));
                    }
                },
                "statement-timeout" => match remote::duration(&value) {
                    Some(d) if d.is_zero() => target.statement = Some(None),
                    Some(d) => target.statement = Some(Some(d)),
                    None => {
                        return Err(format!(
                            "{k}={v}: not a duration; write milliseconds, or a number with ms, s, min or h (30s), or 0 for none"
                        ));
                    }
                },
                _ => {
                    return Err(format!(
                        "{k}: not a key of a mysql:// history URL; the keys are {URL_KEYS}"
                    ));
                }
            }
        }
        target.password = password;
        target.tls = match (mode, &target.ca) {
            (Some(Tls::Disabled), Some(_)) => {
                return Err(
                    "ssl-ca with ssl-mode=DISABLED: drop ssl-ca, or write ssl-mode=VERIFY_CA"
                        .into(),
                );
            }
            (Some(mode), _) => mode,
            // A CA given alone asks for TLS checked against it, as the mysql client does.
            (None, Some(_)) => Tls::Verified,
            (None, None) => Tls::Disabled,
        };
        Ok(target)
    }

    /// The server as messages name it.
    fn server(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The limits, from the URL, else the defaults.
    fn limits(&self) -> Limits {
        let (connect, connect_from) = match self.connect {
            Some(d) => (d, "connect-timeout in the URL"),
            None => (DEFAULT_CONNECT_TIMEOUT, "the default"),
        };
        let (statement, statement_from) = match self.statement {
            Some(d) => (d, "statement-timeout in the URL"),
            None => (Some(DEFAULT_STATEMENT_TIMEOUT), "the default"),
        };
        Limits {
            connect,
            connect_from,
            statement,
            statement_from,
            server: self.server(),
            keys: KEYS,
        }
    }

    /// A named lock's name for this database (server-wide, so the database is in it;
    /// hashed, as a name is at most 64 characters).
    fn lock(&self, what: &str) -> String {
        use sha2::Digest;
        let hash = sha2::Sha256::digest(self.database.as_bytes());
        format!("evals:{what}:{}", &hex::encode(hash)[..16])
    }
}

/// The statements of a migration: `--` comments dropped, cut at each `;`, the collation put
/// in.
fn statements(sql: &str, collation: &str) -> Vec<String> {
    let text: String = sql
        .lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n");
    text.split(';')
        .map(|s| s.trim().replace("{collation}", collation))
        .filter(|s| !s.is_empty())
        .collect()
}

/// `sql` with its `$N` parameters as MySQL's `?`, and which argument each `?` takes.
fn positional(sql: &str) -> (String, Vec<usize>) {
    let mut out = String::with_capacity(sql.len());
    let mut order = Vec::new();
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) {
            let mut n = 0usize;
            while let Some(d) = chars.peek().and_then(|d| d.to_digit(10)) {
                n = n * 10 + d as usize;
                chars.next();
            }
            out.push('?');
            order.push(n.saturating_sub(1));
        } else {
            out.push(c);
        }
    }
    (out, order)
}

/// A shared argument as a MySQL value.
fn value(arg: &Arg<'_>) -> Value {
    match *arg {
        Arg::Text(t) => t.map_or(Value::NULL, |t| Value::Bytes(t.as_bytes().to_vec())),
        Arg::Int(n) => n.map_or(Value::NULL, Value::Int),
        // MySQL has no LIMIT NULL: none is the largest.
        Arg::Limit(l) => Value::Int(Arg::limit(l).unwrap_or(i64::MAX)),
    }
}

/// A MySQL value as a shared row's cell (text comes as bytes; a sum as a decimal's text).
fn cell(v: Option<Value>) -> Cell {
    match v {
        None | Some(Value::NULL) => Cell::Null,
        Some(Value::Int(n)) => Cell::Int(n),
        Some(Value::UInt(n)) => Cell::Int(i64::try_from(n).unwrap_or(i64::MAX)),
        Some(Value::Float(x)) => Cell::Real(x.into()),
        Some(Value::Double(x)) => Cell::Real(x),
        Some(Value::Bytes(b)) => Cell::Text(String::from_utf8_lossy(&b).into_owned()),
        Some(other) => Cell::Text(other.as_sql(true).trim_matches('\'').to_string()),
    }
}

/// What the server said (its message), else the client's error and its causes.
fn describe(e: &mysql_async::Error) -> String {
    if let mysql_async::Error::Server(s) = e {
        return s.message.clone();
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

/// The server's error code, for a statement it refused.
fn code(e: &mysql_async::Error) -> Option<u16> {
    match e {
        mysql_async::Error::Server(s) => Some(s.code),
        _ => None,
    }
}

/// One connection: the client, the runtime it runs on, and which server it is.
struct Conn {
    rt: tokio::runtime::Runtime,
    conn: mysql_async::Conn,
    /// MariaDB rather than MySQL (their statement timeouts differ).
    mariadb: bool,
}

/// The MySQL or MariaDB history database, connected: a [`super::HistoryStore`] many
/// runners share.
pub struct MysqlStore {
    /// `None` before the first call, while dropping, and after a silent server's
    /// connection was dropped (the next call connects again).
    conn: Mutex<Option<Conn>>,
    opts: Opts,
    target: Target,
    limits: Limits,
    /// The URL as given (the key of the silent servers; never shown).
    url: String,
    read_only: bool,
    snapshot_limit: Option<SnapshotLimit>,
    shown: String,
    migrated: usize,
}

impl std::fmt::Debug for MysqlStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MysqlStore")
            .field("shown", &self.shown)
            .finish_non_exhaustive()
    }
}

/// Waits on a connection's runtime, each wait bounded; a wait that ran out, or a
/// connection that broke, marks the connection for dropping.
#[derive(Clone, Copy)]
struct Waiter<'a> {
    rt: &'a tokio::runtime::Runtime,
    limits: &'a Limits,
    broken: &'a Flag<bool>,
}

impl Waiter<'_> {
    fn wait<T>(
        &self,
        kind: Wait,
        call: impl Future<Output = std::result::Result<T, mysql_async::Error>>,
    ) -> std::result::Result<T, Fail> {
        self.limits
            .wait(self.rt, kind, call)
            .map_err(|e| self.fail(kind, e))
    }

    /// A call's error (`None`: no answer within the limit of `kind`) in words.
    fn fail(&self, kind: Wait, e: Option<mysql_async::Error>) -> Fail {
        match e {
            Some(e) => {
                if e.is_fatal() {
                    self.broken.set(true);
                }
                let mut why = describe(&e);
                // MariaDB's max_statement_time, MySQL's max_execution_time.
                if matches!(code(&e), Some(1969 | 3024)) {
                    why.push_str(&self.limits.stopped_at_timeout());
                }
                Fail::Said(why)
            }
            None => {
                self.broken.set(true);
                let waited = self.limits.within(kind).unwrap_or_default();
                Fail::Silent(self.limits.silent_at_statement(waited))
            }
        }
    }
}

/// The connection as a call sees it: statements each bounded by the statement timeout.
struct Session<'a> {
    w: Waiter<'a>,
    conn: &'a mut mysql_async::Conn,
    mariadb: bool,
}

type Step<T> = std::result::Result<T, Fail>;

impl Session<'_> {
    /// Runs `sql` (one statement, no parameters).
    fn run(&mut self, sql: &str) -> Step<()> {
        self.w.wait(Wait::Statement, self.conn.query_drop(sql))
    }

    /// Runs `sql`, a server's error whose code is in `done` taken for success.
    fn run_unless(&mut self, sql: &str, done: &[u16]) -> Step<()> {
        let w = self.w;
        match w
            .limits
            .wait(w.rt, Wait::Statement, self.conn.query_drop(sql))
        {
            Ok(()) => Ok(()),
            Err(Some(e)) if code(&e).is_some_and(|c| done.contains(&c)) => Ok(()),
            Err(e) => Err(w.fail(Wait::Statement, e)),
        }
    }

    /// The rows of `sql` with `params` (`?` in order), as shared rows.
    fn rows(&mut self, sql: &str, params: Vec<Value>) -> Step<Vec<Row>> {
        let rows: Vec<mysql_async::Row> = self.w.wait(
            Wait::Statement,
            self.conn.exec(sql, Params::Positional(params)),
        )?;
        Ok(rows
            .into_iter()
            .map(|r| Row(r.unwrap_raw().into_iter().map(cell).collect()))
            .collect())
    }

    /// Runs `sql` with `params`; the id it inserted, if any.
    fn exec(&mut self, sql: &str, params: Vec<Value>) -> Step<Option<u64>> {
        self.w.wait(
            Wait::Statement,
            self.conn.exec_drop(sql, Params::Positional(params)),
        )?;
        Ok(self.conn.last_insert_id())
    }

    /// The one integer `sql` answers.
    fn int(&mut self, sql: &str, params: Vec<Value>) -> Step<i64> {
        let rows = self.rows(sql, params)?;
        match rows.first().and_then(|r| r.0.first()) {
            Some(Cell::Int(n)) => Ok(*n),
            Some(Cell::Text(t)) => t
                .parse()
                .map_err(|_| Fail::Said(format!("{sql}: answered {t:?}, not a number"))),
            _ => Ok(0),
        }
    }

    /// Sets the session's statement timeout to `limit` (`None`: none): MariaDB's
    /// `max_statement_time` (seconds, every statement), MySQL's `max_execution_time`
    /// (milliseconds, its reads).
    fn statement_timeout(&mut self, limit: Option<Duration>) -> Step<()> {
        let sql = match (self.mariadb, limit) {
            (true, l) => format!(
                "SET SESSION max_statement_time = {:.3}",
                l.map_or(0.0, |d| d.as_secs_f64())
            ),
            (false, l) => format!(
                "SET SESSION max_execution_time = {}",
                l.map_or(0, |d| d.as_millis().max(1))
            ),
        };
        self.run(&sql)
    }

    /// Takes the named lock `name` for the session, waiting up to
    /// [`super::remote::LOCK_WAIT_FACTOR`] statement timeouts for another runner holding
    /// it; `what` names it in the error.
    fn lock(&mut self, name: &str, what: &str) -> Step<()> {
        let limits = self.w.limits;
        let wait = limits.within(Wait::Lock).map(|d| d - remote::SILENCE_GRACE);
        // The wait is the lock's own: the statement limit is raised around it.
        self.statement_timeout(wait.map(|d| d + Duration::from_secs(1)))?;
        let secs = wait.map_or(-1, |d| d.as_secs().max(1) as i64);
        let got = self.w.wait(
            Wait::Lock,
            self.conn.exec_first::<Option<i64>, _, _>(
                "SELECT GET_LOCK(?, ?)",
                Params::Positional(vec![Value::from(name), Value::Int(secs)]),
            ),
        );
        self.statement_timeout(limits.statement)?;
        match got? {
            Some(Some(1)) => Ok(()),
            _ => Err(Fail::Said(format!(
                "another runner held the history's {what} lock for {} (ten statement timeouts; the statement timeout is {}, {}): it may be storing a large run; try again, or allow longer with {}",
                wait.map_or("ever".into(), remote::shown_duration),
                limits
                    .statement
                    .map_or("none".into(), remote::shown_duration),
                limits.statement_from,
                limits.keys.statement
            ))),
        }
    }

    /// Lets go of the named lock `name`.
    fn unlock(&mut self, name: &str) -> Step<()> {
        self.w
            .wait(
                Wait::Statement,
                self.conn.exec_drop(
                    "SELECT RELEASE_LOCK(?)",
                    Params::Positional(vec![Value::from(name)]),
                ),
            )
            .map(|_| ())
    }

    /// Whether the connection is to be dropped (silent, or broken).
    fn broken(&self) -> bool {
        self.w.broken.get()
    }
}

impl MysqlStore {
    /// Connects to the database `url` names (`mysql://user:password@host:port/db`, the keys
    /// in the module's docs) and applies the migrations it has not had. Connecting and
    /// every statement are bounded.
    pub fn open(url: &str) -> Result<MysqlStore> {
        outside_runtime(|| MysqlStore::connect(url))
    }

    /// Opens the database at `url` (migrating it as [`MysqlStore::open`] does) with every
    /// later transaction of its session read-only (`evals dashboard`).
    pub fn open_read_only(url: &str) -> Result<MysqlStore> {
        let mut store = MysqlStore::open(url)?;
        store.read_only = true;
        let shown = store.shown.clone();
        store.with(|s| {
            s.run("SET SESSION TRANSACTION READ ONLY")
                .map_err(|e| server_err(&shown, e))
        })?;
        Ok(store)
    }

    /// How many migrations this open applied (none when another open had applied them).
    pub fn migrated(&self) -> usize {
        self.migrated
    }

    fn connect(url: &str) -> Result<MysqlStore> {
        let shown = redact(url);
        register_password(url);
        let target = Target::parse(url)
            .map_err(|why| Error::Usage(format!("{shown}: {}", crate::secrets::scrub(&why))))?;
        if let Some(p) = &target.password {
            crate::secrets::register([p.clone()]);
        }
        let mut ssl = None;
        if target.tls != Tls::Disabled {
            let _ = rustls::crypto::ring::default_provider().install_default();
            let mut opts = SslOpts::default();
            if let Some(ca) = &target.ca {
                if !ca.is_file() {
                    return Err(Error::Usage(format!(
                        "{shown}: ssl-ca={}: no such file; give the path of the server's CA certificate (PEM)",
                        ca.display()
                    )));
                }
                opts = opts
                    .with_root_certs(vec![ca.clone().into()])
                    .with_disable_built_in_roots(true);
            }
            ssl = Some(opts);
        }
        let opts = OptsBuilder::default()
            .ip_or_hostname(target.host.clone())
            .tcp_port(target.port)
            .user(target.user.clone())
            .pass(target.password.clone())
            .db_name(Some(target.database.clone()))
            // Never a unix socket in place of the host asked for (and its TLS).
            .prefer_socket(false)
            .ssl_opts(ssl)
            .tcp_nodelay(true);
        let mut store = MysqlStore {
            conn: Mutex::new(None),
            opts: opts.into(),
            limits: target.limits(),
            target,
            url: url.to_string(),
            read_only: false,
            snapshot_limit: None,
            shown,
            migrated: 0,
        };
        store.migrated = store.migrate()?;
        Ok(store)
    }

    fn path(&self) -> PathBuf {
        PathBuf::from(&self.shown)
    }

    /// A new connection, within the connect timeout (a server silent lately is not asked
    /// again: its error comes back at once), its session set up.
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
        let limits = &self.limits;
        let connecting = mysql_async::Conn::new(self.opts.clone());
        let mut conn =
            match rt.block_on(async { tokio::time::timeout(limits.connect, connecting).await }) {
                Ok(Ok(conn)) => conn,
                Ok(Err(e)) => return Err(server_err(&self.shown, Fail::Said(describe(&e)))),
                Err(_) => {
                    let why = limits.silent_at_connect();
                    remember_silence(&self.url, limits.connect, &why);
                    return Err(silent(why));
                }
            };
        let broken = Flag::new(false);
        let w = Waiter {
            rt: &rt,
            limits,
            broken: &broken,
        };
        let version: Option<String> = w
            .wait(Wait::Statement, conn.query_first("SELECT VERSION()"))
            .map_err(|e| server_err(&self.shown, e))?;
        let version = version.unwrap_or_default();
        let mariadb = version.to_ascii_lowercase().contains("mariadb");
        let major: u32 = version
            .split('.')
            .next()
            .and_then(|m| m.parse().ok())
            .unwrap_or(0);
        if !mariadb && major < 8 {
            return Err(server_err(
                &self.shown,
                Fail::Said(format!(
                    "the server is MySQL {version}, and a history needs MySQL 8.0 or later (or MariaDB 10.11 or later)"
                )),
            ));
        }
        let mut s = Session {
            w,
            conn: &mut conn,
            mariadb,
        };
        let mut setup = vec![
            "SET NAMES utf8mb4".to_string(),
            "SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION,ERROR_FOR_DIVISION_BY_ZERO'".to_string(),
        ];
        if let Some(limit) = limits.statement {
            // A row lock another runner holds is waited for as long as a statement.
            setup.push(format!(
                "SET SESSION innodb_lock_wait_timeout = {}",
                limit.as_secs().max(1)
            ));
        }
        if self.read_only {
            setup.push("SET SESSION TRANSACTION READ ONLY".to_string());
        }
        for sql in &setup {
            s.run(sql).map_err(|e| server_err(&self.shown, e))?;
        }
        s.statement_timeout(limits.statement)
            .map_err(|e| server_err(&self.shown, e))?;
        Ok(Conn { rt, conn, mariadb })
    }

    /// Runs `f` on the connection (made now if there is none), off any tokio runtime (the
    /// store blocks on one of its own); a connection that went silent or broke is dropped.
    fn with<T: Send>(&self, f: impl FnOnce(&mut Session<'_>) -> Result<T> + Send) -> Result<T> {
        let mut guard = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let slot: &mut Option<Conn> = &mut guard;
        outside_runtime(move || {
            if slot.is_none() {
                *slot = Some(self.dial()?);
            }
            let conn = slot.as_mut().expect("connected just above");
            let broken = Flag::new(false);
            let out = {
                let mut s = Session {
                    w: Waiter {
                        rt: &conn.rt,
                        limits: &self.limits,
                        broken: &broken,
                    },
                    conn: &mut conn.conn,
                    mariadb: conn.mariadb,
                };
                f(&mut s)
            };
            if broken.get() {
                *slot = None;
            }
            out
        })
    }

    fn migrate(&self) -> Result<usize> {
        let shown = self.shown.clone();
        let lock = self.target.lock("migrate");
        self.with(|s| {
            let e = |e| server_err(&shown, e);
            s.lock(&lock, "migration").map_err(e)?;
            let out = (|| -> Result<usize> {
                s.run(
                    "CREATE TABLE IF NOT EXISTS evals_migrations (
                         version    INT NOT NULL PRIMARY KEY,
                         name       VARCHAR(255) NOT NULL,
                         applied_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
                     ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
                )
                .map_err(e)?;
                let version = s
                    .int("SELECT COALESCE(MAX(version), 0) FROM evals_migrations", vec![])
                    .map_err(e)?;
                let version = usize::try_from(version).unwrap_or(0);
                if version > MIGRATIONS.len() {
                    return Err(HistoryError::TooNew {
                        path: PathBuf::from(&shown),
                        found: version,
                        known: MIGRATIONS.len(),
                    }
                    .into());
                }
                if version == MIGRATIONS.len() {
                    return Ok(0);
                }
                let have: Vec<String> = s
                    .rows(
                        "SELECT COLLATION_NAME FROM information_schema.COLLATIONS
                         WHERE COLLATION_NAME IN ('utf8mb4_0900_bin', 'utf8mb4_nopad_bin', 'utf8mb4_bin')",
                        vec![],
                    )
                    .map_err(e)?
                    .into_iter()
                    .filter_map(|r| match r.0.into_iter().next() {
                        Some(Cell::Text(t)) => Some(t),
                        _ => None,
                    })
                    .collect();
                let collation = COLLATIONS
                    .iter()
                    .find(|c| have.iter().any(|h| h == *c))
                    .copied()
                    .unwrap_or("utf8mb4_bin");
                let mut applied = 0;
                for (i, (name, sql)) in MIGRATIONS.iter().enumerate().skip(version) {
                    for statement in statements(sql, collation) {
                        // Applied already by an open stopped before it was recorded.
                        s.run_unless(&statement, ALREADY_DONE).map_err(e)?;
                    }
                    s.exec(
                        "INSERT INTO evals_migrations (version, name) VALUES (?, ?)",
                        vec![Value::Int(i as i64 + 1), Value::from(*name)],
                    )
                    .map_err(e)?;
                    applied += 1;
                }
                Ok(applied)
            })();
            if !s.broken() {
                let _ = s.unlock(&lock);
            }
            out
        })
    }

    /// Stores a run (cases in `cases`) in one transaction, taking the next number or the
    /// one given, its snapshot in parts.
    fn store_as(&mut self, run: &RunResult, cases: &CaseLog, number: Option<i64>) -> Result<()> {
        use crate::secrets::scrub;
        let snapshot = sql::compact_snapshot(run, cases)?;
        let (argv, settings) = sql::run_text(run);
        let shown = self.shown.clone();
        let lock = self.target.lock("number");
        self.with(move |s| {
            let e = |e| server_err(&shown, e);
            let r = &run.run;
            // Held to the commit: the next runner numbers its run after this one lands.
            s.lock(&lock, "run-number").map_err(e)?;
            let out = (|| -> Result<()> {
                s.run("START TRANSACTION").map_err(e)?;
                let number = match number {
                    Some(n) => n,
                    None => s
                        .int("SELECT COALESCE(MAX(number), 0) + 1 FROM runs", vec![])
                        .map_err(e)?,
                };
                let text = |t: &str| Value::from(t);
                let opt = |t: Option<&str>| t.map_or(Value::NULL, Value::from);
                s.exec(
                    "INSERT INTO runs (id, suite, suite_fingerprint, branch, `commit`, command, mode, argv, settings, started_at, finished_at, status, number)
                     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    vec![
                        text(&r.id),
                        text(&scrub(&r.suite)),
                        text(&r.suite_fingerprint),
                        opt(r.branch.as_deref().map(scrub).as_deref()),
                        opt(r.commit.as_deref()),
                        text(r.command.as_str()),
                        text(&r.mode.to_string()),
                        text(&argv),
                        text(&settings),
                        text(&crate::results::time::text(&r.started_at)),
                        opt(r.finished_at.as_ref().map(crate::results::time::text).as_deref()),
                        text(r.status.as_str()),
                        Value::Int(number),
                    ],
                )
                .map_err(e)?;
                let unwritten = |why: String| -> Error {
                    HistoryError::Unwritten {
                        path: Some(PathBuf::from(&shown)),
                        what: "write the snapshot of",
                        id: r.id.clone(),
                        why,
                    }
                    .into()
                };
                let mut file = snapshot.0;
                std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(0))
                    .map_err(|err| unwritten(err.to_string()))?;
                let mut part = vec![0u8; SNAPSHOT_PART];
                for n in 0.. {
                    let got = read_part(&mut file, &mut part).map_err(|err| unwritten(err.to_string()))?;
                    if got == 0 && n > 0 {
                        break;
                    }
                    s.exec(
                        "INSERT INTO run_snapshots (run_id, part, body) VALUES (?, ?, ?)",
                        vec![text(&r.id), Value::Int(n), Value::Bytes(part[..got].to_vec())],
                    )
                    .map_err(e)?;
                    if got < SNAPSHOT_PART {
                        break;
                    }
                }
                for (i, x) in run.experiments.iter().enumerate() {
                    let counts = [x.cases_total, x.errors, x.failed].map(|n| Value::Int(n as i64));
                    let [total, errors, failed] = counts;
                    let experiment = s
                        .exec(
                            "INSERT INTO experiments (run_id, contender, dataset, score, cases_total, errors, failed, cost_usd)
                             VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                            vec![
                                text(&r.id),
                                text(&x.contender.key()),
                                text(&x.dataset),
                                x.score.into(),
                                total,
                                errors,
                                failed,
                                x.cost_usd.into(),
                            ],
                        )
                        .map_err(e)?
                        .unwrap_or_default();
                    let mut lines = cases.cases(i)?;
                    while let Some(line) = lines.next_line() {
                        let c: CaseRow<'_> =
                            serde_json::from_slice(line?).map_err(crate::results::unreadable)?;
                        let case_id = s
                            .exec(
                                "INSERT INTO case_results (experiment_id, `case`, fingerprint, score, passed, error)
                                 VALUES (?, ?, ?, ?, ?, ?)",
                                vec![
                                    Value::UInt(experiment),
                                    text(&c.case),
                                    text(&c.fingerprint),
                                    c.score.into(),
                                    c.passed.map_or(Value::NULL, |p| Value::Int(p.into())),
                                    opt(c.error.as_deref()),
                                ],
                            )
                            .map_err(e)?
                            .unwrap_or_default();
                        for (name, value) in &c.metrics {
                            s.exec(
                                "INSERT INTO metric_results (case_result_id, metric, value) VALUES (?, ?, ?)",
                                vec![Value::UInt(case_id), text(name), (*value).into()],
                            )
                            .map_err(e)?;
                        }
                    }
                }
                s.run("COMMIT").map_err(e)
            })();
            if !s.broken() {
                if out.is_err() {
                    let _ = s.run("ROLLBACK");
                }
                let _ = s.unlock(&lock);
            }
            out
        })
    }
}

/// Fills `buf` from `file` as far as it goes: how many bytes it read (fewer at the end).
fn read_part(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read(&mut buf[got..])? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got)
}

impl RunStore for MysqlStore {
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

impl HistoryReads for MysqlStore {
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

/// The shared queries in MySQL's spelling (`$N` turned into `?` by [`positional`]):
/// backquoted keywords, binary collations (text compares byte-wise, as on SQLite), the
/// largest number for no limit.
fn sql_of(query: Query) -> &'static str {
    match query {
        Query::IdOfNumber => "SELECT id FROM runs WHERE number = $1",
        Query::Id => "SELECT id FROM runs WHERE id = $1",
        Query::Prefixed => {
            "SELECT id, number FROM runs WHERE id >= $1 AND SUBSTRING(id, 1, $2) = $1
             ORDER BY number LIMIT 6"
        }
        Query::CountPrefixed => "SELECT COUNT(*) FROM runs WHERE SUBSTRING(id, 1, $2) = $1",
        Query::BaselineCandidates => {
            "SELECT id, suite_fingerprint, CAST(settings AS CHAR), started_at FROM runs
             WHERE suite = $1 AND branch = $2 AND status = 'completed'
               AND id <> $4
               AND (started_at < $3 OR (started_at = $3 AND id < $4))
             ORDER BY started_at DESC, id DESC"
        }
        Query::Runs => {
            "SELECT r.id, r.started_at, r.branch, r.`commit`, r.suite, r.command, r.mode, r.status,
                (SELECT COALESCE(SUM(x.cases_total), 0) FROM experiments x WHERE x.run_id = r.id),
                (SELECT AVG(x.score) FROM experiments x WHERE x.run_id = r.id),
                (SELECT COALESCE(SUM(x.errors), 0) FROM experiments x WHERE x.run_id = r.id),
                r.number
             FROM runs r
             WHERE ($1 IS NULL OR r.suite = $1) AND ($2 IS NULL OR r.branch = $2)
               AND ($3 IS NULL OR r.status = $3)
               AND ($4 IS NULL OR r.started_at >= $4) AND ($5 IS NULL OR r.started_at < $5)
             ORDER BY r.started_at DESC, r.id DESC
             LIMIT $6"
        }
        Query::CaseRuns => {
            "SELECT r.number, r.id, r.started_at, r.branch, r.`commit`, r.suite, r.status,
                x.contender, x.dataset, c.`case`, c.fingerprint, c.score, c.passed, c.error
             FROM case_results c JOIN experiments x ON x.id = c.experiment_id
                  JOIN runs r ON r.id = x.run_id
             WHERE c.`case` = $1 AND ($2 IS NULL OR x.dataset = $2)
               AND ($3 IS NULL OR r.suite = $3) AND ($4 IS NULL OR r.branch = $4)
             ORDER BY r.started_at DESC, r.id DESC, x.id DESC
             LIMIT $5"
        }
        Query::Scores => {
            "SELECT r.number, r.id, r.started_at, r.`commit`, r.suite, x.contender, x.dataset, x.score
             FROM (SELECT id, number, started_at, `commit`, suite FROM runs
                   WHERE branch = $1 AND status = 'completed' AND ($2 IS NULL OR suite = $2)
                   ORDER BY started_at DESC, id DESC LIMIT $3) r
             JOIN experiments x ON x.run_id = r.id
             ORDER BY r.started_at, r.id, x.id"
        }
    }
}

impl Dialect for MysqlStore {
    fn shown(&self) -> PathBuf {
        self.path()
    }

    fn rows(&self, query: Query, args: &[Arg<'_>]) -> Result<Vec<Row>> {
        let (sql, order) = positional(sql_of(query));
        let params: Vec<Value> = order
            .iter()
            .map(|&i| args.get(i).map_or(Value::NULL, value))
            .collect();
        let shown = self.shown.clone();
        self.with(move |s| s.rows(&sql, params).map_err(|e| server_err(&shown, e)))
    }

    fn snapshot(&self, id: &str, limit: Option<u64>) -> Result<Option<Snapshot>> {
        let shown = self.shown.clone();
        self.with(move |s| {
            let e = |e| server_err(&shown, e);
            let found = s
                .rows(
                    "SELECT COUNT(*), COALESCE(SUM(LENGTH(body)), 0) FROM run_snapshots WHERE run_id = ?",
                    vec![Value::from(id)],
                )
                .map_err(e)?;
            let (parts, size) = match found.first().map(|r| r.0.as_slice()) {
                Some([parts, size]) => (number(parts), number(size)),
                _ => (0, 0),
            };
            if parts == 0 {
                return Ok(None);
            }
            let size = u64::try_from(size).unwrap_or(0);
            if limit.is_some_and(|l| size > l) {
                return Ok(Some(Snapshot::Over(size)));
            }
            let bodies: Vec<Vec<u8>> = s
                .w
                .wait(
                    Wait::Statement,
                    s.conn.exec_map(
                        "SELECT body FROM run_snapshots WHERE run_id = ? ORDER BY part",
                        Params::Positional(vec![Value::from(id)]),
                        |body: Vec<u8>| body,
                    ),
                )
                .map_err(e)?;
            Ok(Some(Snapshot::Bytes(bodies.concat())))
        })
    }

    fn snapshot_limit(&self) -> Option<SnapshotLimit> {
        self.snapshot_limit
    }

    fn unexpected(&self, query: Query, why: String) -> Error {
        server_err(&self.shown, Fail::Said(format!("{query:?}: {why}")))
    }
}

/// A cell's integer (a count, a sum's decimal text), 0 when it is none.
fn number(c: &Cell) -> i64 {
    match c {
        Cell::Int(n) => *n,
        Cell::Text(t) => t.trim().parse().unwrap_or(0),
        Cell::Real(x) => *x as i64,
        Cell::Null => 0,
    }
}

impl Drop for MysqlStore {
    fn drop(&mut self) {
        let conn = self
            .conn
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(Conn { rt, conn, .. }) = conn {
            // Said goodbye within a second (a runtime may not be dropped inside another).
            outside_runtime(move || {
                let _ = rt.block_on(async {
                    tokio::time::timeout(Duration::from_secs(1), conn.disconnect()).await
                });
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_read_with_its_keys_and_defaults() {
        let t = Target::parse(
            "mysql://evals:p%40ss@db.example:3307/hist?ssl-mode=VERIFY_CA&ssl-ca=%2Fca.pem&connect-timeout=3&statement-timeout=2s",
        )
        .unwrap();
        assert_eq!(
            t,
            Target {
                user: Some("evals".into()),
                password: Some("p@ss".into()),
                host: "db.example".into(),
                port: 3307,
                database: "hist".into(),
                tls: Tls::Verified,
                ca: Some(PathBuf::from("/ca.pem")),
                connect: Some(Duration::from_secs(3)),
                statement: Some(Some(Duration::from_secs(2))),
            }
        );
        let l = t.limits();
        assert_eq!(
            (l.connect_from, l.statement_from, l.server.as_str()),
            (
                "connect-timeout in the URL",
                "statement-timeout in the URL",
                "db.example:3307"
            )
        );
        let t = Target::parse("mariadb://u@[::1]/db").unwrap();
        let l = t.limits();
        assert_eq!(
            (t.server(), t.tls, t.password),
            ("[::1]:3306".into(), Tls::Disabled, None)
        );
        assert_eq!(
            (l.connect, l.statement),
            (DEFAULT_CONNECT_TIMEOUT, Some(DEFAULT_STATEMENT_TIMEOUT))
        );
        // A CA alone asks for TLS checked against it, as REQUIRED does.
        assert_eq!(
            Target::parse("mysql://h/db?ssl-ca=/c").unwrap().tls,
            Tls::Verified
        );
        assert_eq!(
            Target::parse("mysql://h/db?ssl_mode=required").unwrap().tls,
            Tls::Verified
        );
        assert_eq!(
            Target::parse("mysql://h/db?statement-timeout=0")
                .unwrap()
                .limits()
                .statement,
            None
        );
    }

    #[test]
    fn a_bad_url_says_what_is_wrong_and_how_to_write_it() {
        let e = |url: &str| Target::parse(url).unwrap_err();
        assert_eq!(
            e("mysql://u@h:3306"),
            "no database in the URL: write mysql://user:password@host:3306/DATABASE"
        );
        assert_eq!(
            e("mysql://u@h:x/db"),
            "port x: not a port number; write host:3306"
        );
        assert_eq!(
            e("mysql://h/db?sslmode=PREFERRED"),
            "sslmode=PREFERRED: a history never falls back to a plain connection; write ssl-mode=REQUIRED (TLS) or ssl-mode=DISABLED"
        );
        assert_eq!(
            e("mysql://h/db?pool_max=3"),
            "pool_max: not a key of a mysql:// history URL; the keys are ssl-mode, ssl-ca, connect-timeout and statement-timeout"
        );
        assert_eq!(
            e("mysql://h/db?statement-timeout=soon"),
            "statement-timeout=soon: not a duration; write milliseconds, or a number with ms, s, min or h (30s), or 0 for none"
        );
        assert_eq!(
            e("mysql://h/db?connect-timeout=0"),
            "connect-timeout=0: expected a whole number of seconds above 0 (connect-timeout=10)"
        );
        assert_eq!(
            e("mysql://h/db?ssl-mode=DISABLED&ssl-ca=/c"),
            "ssl-ca with ssl-mode=DISABLED: drop ssl-ca, or write ssl-mode=VERIFY_CA"
        );
    }

    #[test]
    fn a_bad_url_is_named_without_its_password() {
        let e = MysqlStore::open("mysql://u:topsecretpw@h:notaport/db")
            .expect_err("refused")
            .to_string();
        assert!(
            e.starts_with("mysql://u@h:notaport/db: port notaport: not a port number"),
            "{e}"
        );
        assert!(!e.contains("topsecretpw"), "{e}");
    }

    #[test]
    fn parameters_become_positional_in_their_order_repeats_included() {
        assert_eq!(
            positional("a = $1 AND (b < $3 OR (b = $3 AND c < $12))"),
            (
                "a = ? AND (b < ? OR (b = ? AND c < ?))".to_string(),
                vec![0, 2, 2, 11]
            )
        );
    }

    #[test]
    fn a_migration_is_cut_into_statements_with_its_collation() {
        let got = statements(
            "-- a comment; with a semicolon\nCREATE TABLE t (a INT) COLLATE={collation};\n\nDROP TABLE u;\n",
            "utf8mb4_nopad_bin",
        );
        assert_eq!(
            got,
            [
                "CREATE TABLE t (a INT) COLLATE=utf8mb4_nopad_bin",
                "DROP TABLE u"
            ]
        );
        for (_, sql) in MIGRATIONS {
            assert!(!statements(sql, "c").is_empty());
        }
    }

    #[test]
    fn lock_names_are_per_database_and_short() {
        let a = Target::parse("mysql://h/one").unwrap();
        let b = Target::parse("mysql://h/two").unwrap();
        assert_ne!(a.lock("number"), b.lock("number"));
        assert_ne!(a.lock("number"), a.lock("migrate"));
        assert!(a.lock("migrate").len() <= 64);
    }
}
