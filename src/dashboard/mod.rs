//! `evals dashboard`: a read-only web app over the history, on axum.
//!
//! It reads a store opened for reading alone ([`Location::open_read_only`]) through the
//! [`crate::history::HistoryStore`] traits, so a SQLite file and a PostgreSQL or MySQL database serve alike. Only GET
//! and HEAD are answered (anything else is 405 with `Allow: GET, HEAD`, before routing):
//! there is no write path. Pages: the runs list with filters (`/?suite=&branch=&status=&since=&until=`),
//! a run's page (`/runs/N`: its HTML report, compared with its baseline as `check` compares,
//! through [`crate::gate::judge`]), one case across runs (`/case?case=&dataset=`), the
//! trend of each experiment's primary score on a branch (`/trend`), and JSON for each
//! (`/runs.json`, `/runs/N.json` the snapshot, `/case.json`, `/trend.json`). The store is
//! called on tokio's blocking threads, one call at a time.
//!
//! It reads nothing it was not started on: a query parameter names a branch or a run of the
//! served history, never a file (the gate's baseline is looked up with
//! [`crate::gate::Baseline::parse_in_history`]: never a file). Any web page can make a browser send a GET to a
//! loopback port (`<img src=…>`), so a request another site made (`Sec-Fetch-Site:
//! cross-site` or `same-site`, or an `Origin` other than the dashboard's own) is refused with
//! 403 before any handler runs, and so is a foreign `Host` on loopback (DNS rebinding).
//! Every read is capped ([`Limits`]): a request's line and headers, a body (never read;
//! refused over the cap), a run's snapshot read from the store (the run's and its
//! baseline's), and the rows a page lists.

mod pages;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;

use crate::error::{Error, Result};
use crate::gate::{CheckPlan, MissingBaseline, Rules};
use crate::history::{
    AnyStore, CaseQuery, HistoryReads, Location, RunQuery, RunStore, SnapshotLimit,
};
use crate::results::{RunResult, RunStatus};
use crate::runner::Cancel;

pub use pages::{At, CaseSeries, Filters};

/// How the dashboard is served. Start from [`Options::default`] (127.0.0.1, any free port,
/// `main` as the baseline, the default limits) and set what differs; new fields may come
/// (`#[non_exhaustive]`).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Options {
    /// The address to listen on (`127.0.0.1` unless told otherwise).
    pub bind: IpAddr,
    /// The port; 0 takes any free one.
    pub port: u16,
    /// What a run page compares each run with (a branch, or a run of the history; never a
    /// file): `main` by default.
    pub baseline: String,
    /// What it reads at most.
    pub limits: Limits,
    /// Stops serving when tripped (the CLI trips it on Ctrl-C or SIGTERM; the library
    /// installs no signal handler).
    pub cancel: Cancel,
    /// The environment a PostgreSQL history is opened with (its `PGPASSWORD` and timeouts:
    /// [`Location::open_read_only_with`](crate::history::Location::open_read_only_with));
    /// [`Environment::default`](crate::env::Environment::default) reads nothing.
    pub env: crate::env::Environment,
}

/// The dashboard's caps on what a request can make it read: documented defaults, each
/// changed by a flag of `evals dashboard`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// A request's target and headers together, in bytes (`--max-request-bytes`): over
    /// it, 431 (414 for a long target). A request body is never read; one declared larger
    /// is refused with 413.
    pub request_bytes: usize,
    /// A run's snapshot read from the history, in bytes (`--max-run-bytes`): the run a page
    /// shows and its baseline. Over it the page says so and nothing of it is read.
    pub run_bytes: u64,
}

impl Limits {
    /// 16 KiB: a URL and a browser's headers take a few hundred bytes.
    pub const DEFAULT_REQUEST_BYTES: usize = 16 * 1024;
    /// 256 MiB: a 10,000-case run's snapshot is tens of MiB.
    pub const DEFAULT_RUN_BYTES: u64 = 256 * 1024 * 1024;
}

impl Default for Options {
    fn default() -> Options {
        Options {
            bind: IpAddr::from([127, 0, 0, 1]),
            port: 0,
            baseline: "main".into(),
            limits: Limits::default(),
            cancel: Cancel::new(),
            env: crate::env::Environment::default(),
        }
    }
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            request_bytes: Limits::DEFAULT_REQUEST_BYTES,
            run_bytes: Limits::DEFAULT_RUN_BYTES,
        }
    }
}

/// The dashboard's state: the store, read one call at a time.
struct Dashboard {
    store: Mutex<AnyStore>,
    location: String,
    baseline: String,
}

/// The runs list shows at most this many unless `limit` says.
const DEFAULT_LIMIT: usize = 200;

/// The most runs a list (`limit`) or a case's history reads.
const MAX_LIMIT: usize = 10_000;

/// The trend reads this many runs of the branch unless `last` says.
const DEFAULT_TREND: usize = 50;

/// The most runs a trend (`last`) reads.
const MAX_TREND: usize = 1_000;

/// The longest `?baseline=`: a git branch name or a run id is far shorter.
const MAX_REFERENCE: usize = 255;

/// Opens the history at `location` for reading and serves the dashboard on it until
/// `options.cancel` trips; `ready` is told the bound address first (the actual port when it
/// was 0).
pub fn serve(location: &Location, options: &Options, ready: impl FnOnce(SocketAddr)) -> Result<()> {
    let baseline = baseline_reference(&options.baseline).map_err(|why| {
        Error::Usage(format!(
            "--baseline {}: {why}",
            crate::text::shell_word(&options.baseline)
        ))
    })?;
    let mut store = location.open_read_only_with(&options.env)?;
    store.limit_snapshots(SnapshotLimit {
        bytes: options.limits.run_bytes,
        key: "--max-run-bytes",
    });
    let state = Arc::new(Dashboard {
        store: Mutex::new(store),
        location: location.shown(),
        baseline,
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::Failed(format!("cannot start the dashboard's runtime: {e}")))?;
    runtime.block_on(async move {
        let addr = SocketAddr::new(options.bind, options.port);
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
            Error::Usage(format!(
                "cannot listen on {addr}: {e}; pass another --port (0 takes a free one)"
            ))
        })?;
        let bound = listener
            .local_addr()
            .map_err(|e| Error::Failed(format!("cannot read the bound address: {e}")))?;
        ready(bound);
        let hosts = bound
            .ip()
            .is_loopback()
            .then(|| loopback_hosts(bound.port()));
        let cancel = options.cancel.clone();
        let guard = Guard {
            hosts,
            limits: options.limits,
        };
        axum::serve(listener, router(state, guard))
            .with_graceful_shutdown(async move { cancel.cancelled().await })
            .await
            .map_err(|e| Error::Failed(format!("the dashboard stopped: {e}")))
    })
}

/// The `Host` a browser sends to a loopback dashboard on `port`. A page elsewhere that
/// points its own name at 127.0.0.1 (DNS rebinding) sends its name instead, and is refused.
fn loopback_hosts(port: u16) -> Vec<String> {
    ["127.0.0.1", "localhost", "[::1]"]
        .iter()
        .flat_map(|h| [format!("{h}:{port}"), h.to_string()])
        .collect()
}

/// What every request is checked against before any handler runs.
struct Guard {
    /// On loopback, the `Host`s answered (`None`: any, as bound to another address).
    hosts: Option<Vec<String>>,
    limits: Limits,
}

fn router(state: Arc<Dashboard>, guard: Guard) -> Router {
    Router::new()
        .route("/", get(runs_page))
        .route("/runs.json", get(runs_json))
        .route("/runs/{run}", get(run_page))
        .route("/case", get(case_page))
        .route("/case.json", get(case_json))
        .route("/trend", get(trend_page))
        .route("/trend.json", get(trend_json))
        .fallback(|| async { not_found("no such page") })
        .layer(axum::middleware::from_fn_with_state(
            Arc::new(guard),
            read_only,
        ))
        .with_state(state)
}

/// A plain-text refusal.
fn refuse(status: StatusCode, text: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text,
    )
        .into_response()
}

/// Why a request is refused before it reaches a page, if it is: a foreign `Host` on
/// loopback, another site's request, a target, headers or a declared body over the caps.
fn refusal(guard: &Guard, req: &Request) -> Option<Response> {
    let headers = req.headers();
    let text = |name: header::HeaderName| {
        headers
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).to_ascii_lowercase())
    };
    let host = text(header::HOST);
    if let (Some(allowed), Some(h)) = (guard.hosts.as_ref(), host.as_ref())
        && !allowed.contains(h)
    {
        return Some(refuse(
            StatusCode::FORBIDDEN,
            "403 forbidden: this dashboard answers to 127.0.0.1 or localhost only\n".into(),
        ));
    }
    // A browser says which site made the request: a page elsewhere (any other origin, a
    // file, another port of this machine) is refused, whatever it asks for. Typing the URL
    // or following a link on the dashboard itself is `none` or `same-origin`.
    let site = text(header::HeaderName::from_static("sec-fetch-site"));
    let origin = text(header::ORIGIN);
    let own = host.as_ref().map(|h| format!("http://{h}"));
    let foreign_origin = origin.as_ref().is_some_and(|o| Some(o) != own.as_ref());
    if matches!(site.as_deref(), Some("cross-site" | "same-site")) || foreign_origin {
        let from = match (&origin, &site) {
            (Some(o), _) => format!("Origin: {o}"),
            (None, Some(s)) => format!("Sec-Fetch-Site: {s}"),
            (None, None) => "a foreign origin".into(),
        };
        tell_refused(&from, req.uri().path());
        return Some(refuse(
            StatusCode::FORBIDDEN,
            "403 forbidden: the dashboard answers requests made from its own pages or typed in the address bar, not from other sites; open the URL directly\n".into(),
        ));
    }
    let limit = guard.limits.request_bytes;
    let target = req.uri().to_string().len();
    if target > limit {
        return Some(refuse(
            StatusCode::URI_TOO_LONG,
            format!(
                "414 URI too long: {target} bytes, over the dashboard's limit of {limit} (--max-request-bytes)\n"
            ),
        ));
    }
    let head: usize = target
        + headers
            .iter()
            .map(|(k, v)| k.as_str().len() + v.len() + 4)
            .sum::<usize>();
    if head > limit {
        return Some(refuse(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            format!(
                "431 request header fields too large: {head} bytes, over the dashboard's limit of {limit} (--max-request-bytes)\n"
            ),
        ));
    }
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let chunked = headers.contains_key(header::TRANSFER_ENCODING);
    if chunked || declared.is_some_and(|n| n > limit as u64) {
        return Some(refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "413 content too large: the dashboard reads no request body (over {limit} bytes, or of unknown length, is refused)\n"
            ),
        ));
    }
    None
}

/// How many refused cross-site requests are told on stderr (a page may send thousands).
const TOLD_REFUSALS: usize = 20;

/// Tells stderr that another site's request for `path` was refused (the first
/// [`TOLD_REFUSALS`] of them, then that the rest go untold).
fn tell_refused(from: &str, path: &str) {
    static TOLD: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = TOLD.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let shown = |s: &str| -> String { s.chars().filter(|c| !c.is_control()).take(200).collect() };
    let (from, path) = (shown(from), shown(path));
    if n < TOLD_REFUSALS {
        eprintln!(
            "warning: refused a request another site made ({from}) for {path}: a web page tried to read the dashboard"
        );
    } else if n == TOLD_REFUSALS {
        eprintln!(
            "warning: more requests from other sites were refused; they are not told one by one"
        );
    }
}

/// GET and HEAD only, whatever the path: the dashboard writes nothing. Only requests
/// [`refusal`] lets through. Every answer says how it may be used: nothing loaded from
/// elsewhere, no framing, no sniffing.
async fn read_only(State(guard): State<Arc<Guard>>, req: Request, next: Next) -> Response {
    let mut res = if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut res = refuse(
            StatusCode::METHOD_NOT_ALLOWED,
            "405 method not allowed: the dashboard is read-only (GET, HEAD)\n".into(),
        );
        res.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        res
    } else if let Some(refused) = refusal(&guard, &req) {
        refused
    } else {
        next.run(req).await
    };
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; form-action 'self'; frame-ancestors 'none'",
        ),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::HeaderName::from_static("cross-origin-resource-policy"),
        HeaderValue::from_static("same-origin"),
    );
    res
}

/// A page as it is sent: every page's final text passes through the egress scrubber (the
/// history's rows were scrubbed as they were stored; this is for what was rendered from
/// them) and has its control characters shown ([`crate::text::visible`]).
fn html(status: StatusCode, body: String) -> Response {
    let body = crate::text::visible(&crate::secrets::scrub(&body)).into_owned();
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response()
}

/// JSON as it is sent, through the egress scrubber.
fn json(text: String) -> Response {
    let text = crate::secrets::scrub(&text).into_owned();
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        text,
    )
        .into_response()
}

fn not_found(what: &str) -> Response {
    html(
        StatusCode::NOT_FOUND,
        pages::layout("Not found", &format!("<p>{}</p>", pages::esc(what))),
    )
}

/// What a page handler ends in: a response, or an error shown as a page.
enum Failure {
    BadRequest(String),
    NotFound(String),
    Store(Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::Store(e)
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        match self {
            Failure::BadRequest(m) => html(
                StatusCode::BAD_REQUEST,
                pages::layout("Bad request", &format!("<p>{}</p>", pages::esc(&m))),
            ),
            Failure::NotFound(m) => not_found(&m),
            Failure::Store(e) => html(
                StatusCode::INTERNAL_SERVER_ERROR,
                pages::layout(
                    "The history could not be read",
                    &format!("<p>{}</p>", pages::esc(&e.to_string())),
                ),
            ),
        }
    }
}

type Answer = std::result::Result<Response, Failure>;

/// Runs `f` on the store on a blocking thread (every store's calls block).
async fn with_store(
    state: Arc<Dashboard>,
    f: impl FnOnce(&Dashboard, &AnyStore) -> Answer + Send + 'static,
) -> Response {
    let done = tokio::task::spawn_blocking(move || {
        let store = state.store.lock().unwrap_or_else(|e| e.into_inner());
        f(&state, &store)
    })
    .await;
    match done {
        Ok(Ok(r)) => r,
        Ok(Err(f)) => f.into_response(),
        Err(e) => Failure::Store(Error::Failed(format!("a page failed: {e}"))).into_response(),
    }
}

/// The filters as a store query: the days checked, `until` made the next day's start.
fn run_query(f: &Filters) -> std::result::Result<RunQuery, Failure> {
    let day = |flag: &str,
               v: &Option<String>|
     -> std::result::Result<Option<chrono::NaiveDate>, Failure> {
        match v.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => chrono::NaiveDate::parse_from_str(v, "%Y-%m-%d")
                .map(Some)
                .map_err(|_| {
                    Failure::BadRequest(format!("{flag}={v}: expected a day as YYYY-MM-DD"))
                }),
        }
    };
    let since = day("since", &f.since)?;
    let until = day("until", &f.until)?;
    let status = match f.status.as_deref().filter(|s| !s.is_empty()) {
        None => None,
        Some(s) => Some(RunStatus::parse(s).ok_or_else(|| {
            Failure::BadRequest(format!(
                "status={s}: expected completed, interrupted or aborted"
            ))
        })?),
    };
    let text = |v: &Option<String>| v.clone().filter(|v| !v.trim().is_empty());
    Ok(RunQuery {
        suite: text(&f.suite),
        branch: text(&f.branch),
        status,
        since: since.map(|d| d.format("%Y-%m-%d").to_string()),
        before: until
            .and_then(|d| d.succ_opt())
            .map(|d| d.format("%Y-%m-%d").to_string()),
        limit: Some(bounded("limit", f.limit, DEFAULT_LIMIT, MAX_LIMIT)?),
    })
}

/// A count from the query (`limit`, `last`): `default` when absent, refused past `max`.
fn bounded(
    key: &str,
    value: Option<usize>,
    default: usize,
    max: usize,
) -> std::result::Result<usize, Failure> {
    match value {
        None => Ok(default),
        Some(n) if (1..=max).contains(&n) => Ok(n),
        Some(n) => Err(Failure::BadRequest(format!(
            "{key}={n}: expected 1 to {max}"
        ))),
    }
}

async fn runs_page(State(s): State<Arc<Dashboard>>, Query(f): Query<Filters>) -> Response {
    with_store(s, move |d, store| {
        let runs = store.runs(&run_query(&f)?)?;
        let title = format!("Runs in {}", d.location);
        Ok(html(
            StatusCode::OK,
            pages::layout(&title, &pages::runs(&runs, &f)),
        ))
    })
    .await
}

async fn runs_json(State(s): State<Arc<Dashboard>>, Query(f): Query<Filters>) -> Response {
    with_store(s, move |_, store| {
        let runs = store.runs(&run_query(&f)?)?;
        Ok(json(to_json(&runs)?))
    })
    .await
}

fn to_json(v: &impl serde::Serialize) -> std::result::Result<String, Failure> {
    serde_json::to_string_pretty(v)
        .map_err(|e| Failure::Store(Error::Failed(format!("could not write JSON: {e}"))))
}

#[derive(Debug, Deserialize)]
struct RunParams {
    baseline: Option<String>,
}

/// `value` as a baseline the dashboard may look up: a branch or a run of the history,
/// spelled as git allows a branch (`main`, `release/1.2`) or as a run (`3`, `#3`, an id or
/// its prefix). Anything else (a path above all: `/etc/passwd`, `../x.json`) is refused
/// with why, and never looked at; the gate takes no file from the dashboard either.
fn baseline_reference(value: &str) -> std::result::Result<String, String> {
    let v = value.trim();
    let fix = "name a branch (main) or a run (#3, or its id) of this history: the dashboard reads no file";
    if v.is_empty() {
        return Err(format!("empty; {fix}"));
    }
    if v.chars().count() > MAX_REFERENCE {
        return Err(format!("longer than {MAX_REFERENCE} characters; {fix}"));
    }
    let why = if v.starts_with('/') || v.ends_with('/') {
        Some("a branch name cannot start or end with '/'")
    } else if v.starts_with('.') || v.starts_with('-') {
        Some("a branch name cannot start with '.' or '-'")
    } else if v.contains("..") || v.contains("//") {
        Some("a branch name cannot hold '..' or '//'")
    } else if v.ends_with(".lock") {
        Some("a branch name cannot end with .lock")
    } else if v
        .chars()
        .any(|c| c.is_control() || c.is_whitespace() || "\\:?*[~^".contains(c))
    {
        Some("a branch name cannot hold a space, a control character or any of \\ : ? * [ ~ ^")
    } else {
        None
    };
    match why {
        Some(why) => Err(format!("not a branch or a run ({why}); {fix}")),
        None => Ok(v.to_string()),
    }
}

fn stored(store: &AnyStore, reference: &str) -> std::result::Result<RunResult, Failure> {
    let missing = || Failure::NotFound(format!("no run {reference} in this history"));
    let id = store.find(reference)?.ok_or_else(missing)?;
    store.get(&id)?.ok_or_else(missing)
}

async fn run_page(
    State(s): State<Arc<Dashboard>>,
    Path(reference): Path<String>,
    Query(p): Query<RunParams>,
) -> Response {
    with_store(s, move |d, store| {
        if let Some(reference) = reference.strip_suffix(".json") {
            let run = stored(store, reference)?;
            return Ok(json(crate::report::render(
                crate::report::Format::Json,
                Default::default(),
                &run,
                None,
            )));
        }
        let baseline = match p.baseline.filter(|b| !b.trim().is_empty()) {
            Some(b) => baseline_reference(&b).map_err(|why| {
                Failure::BadRequest(format!("baseline={}: {why}", crate::text::shell_word(&b)))
            })?,
            None => d.baseline.clone(),
        };
        let run = stored(store, &reference)?;
        // The gate as `check` runs it: the first run on the baseline branch is its first
        // baseline; a missing baseline is said, and the run judged without one. Never a
        // file: a URL names what the history holds.
        let plan = CheckPlan {
            baseline: crate::gate::Baseline::parse_in_history(&baseline),
            rules: Rules::new(0.02, false)?,
            missing: MissingBaseline::Pass,
            first_on_own_branch: true,
        };
        let checked = crate::gate::judge(&run, &plan, Some(&**store), &PathBuf::from(&d.location));
        let notes: Vec<String> = checked.notices.iter().map(|n| n.to_string()).collect();
        let report = crate::report::render(
            crate::report::Format::Html,
            Default::default(),
            &run,
            Some(&checked.comparison),
        );
        let mut cases: Vec<(String, String)> = Vec::new();
        for e in &run.experiments {
            for c in &e.cases {
                cases.push((e.dataset.clone(), c.case.clone()));
            }
        }
        cases.sort();
        cases.dedup();
        let mut page = pages::framed_report(&report, &notes);
        let links = pages::case_links(&run.run.suite, &cases);
        match page.rfind("</body>") {
            Some(i) => page.insert_str(i, &links),
            None => page.push_str(&links),
        }
        Ok(html(StatusCode::OK, page))
    })
    .await
}

#[derive(Debug, Clone, Deserialize)]
struct CaseParams {
    case: Option<String>,
    dataset: Option<String>,
    suite: Option<String>,
    branch: Option<String>,
    limit: Option<usize>,
}

fn case_series(
    store: &AnyStore,
    p: &CaseParams,
) -> std::result::Result<(String, Vec<CaseSeries>), Failure> {
    let text = |v: &Option<String>| v.clone().filter(|v| !v.trim().is_empty());
    let case = text(&p.case)
        .ok_or_else(|| Failure::BadRequest("which case? pass case=ID (and dataset=NAME)".into()))?;
    let rows = store.case_runs(&CaseQuery {
        case: case.clone(),
        dataset: text(&p.dataset),
        suite: text(&p.suite),
        branch: text(&p.branch),
        limit: Some(bounded("limit", p.limit, 1000, MAX_LIMIT)?),
    })?;
    Ok((case, pages::series(rows)))
}

async fn case_page(State(s): State<Arc<Dashboard>>, Query(p): Query<CaseParams>) -> Response {
    with_store(s, move |_, store| {
        let (case, series) = case_series(store, &p)?;
        let title = match &p.dataset {
            Some(d) if !d.is_empty() => format!("Case {d} / {case}"),
            _ => format!("Case {case}"),
        };
        Ok(html(
            StatusCode::OK,
            pages::layout(&title, &pages::case(&case, &series)),
        ))
    })
    .await
}

async fn case_json(State(s): State<Arc<Dashboard>>, Query(p): Query<CaseParams>) -> Response {
    with_store(s, move |_, store| {
        let (_, series) = case_series(store, &p)?;
        Ok(json(to_json(&series)?))
    })
    .await
}

#[derive(Debug, Clone, Deserialize)]
struct TrendParams {
    branch: Option<String>,
    suite: Option<String>,
    last: Option<usize>,
}

impl TrendParams {
    fn branch(&self) -> String {
        self.branch
            .clone()
            .filter(|b| !b.trim().is_empty())
            .unwrap_or_else(|| "main".into())
    }
}

async fn trend_page(State(s): State<Arc<Dashboard>>, Query(p): Query<TrendParams>) -> Response {
    with_store(s, move |_, store| {
        let branch = p.branch();
        let points = store.scores_on_branch(
            &branch,
            p.suite.as_deref().filter(|s| !s.is_empty()),
            bounded("last", p.last, DEFAULT_TREND, MAX_TREND)?,
        )?;
        let title = format!("Primary score on {branch}");
        Ok(html(
            StatusCode::OK,
            pages::layout(&title, &pages::trend(&branch, &points)),
        ))
    })
    .await
}

async fn trend_json(State(s): State<Arc<Dashboard>>, Query(p): Query<TrendParams>) -> Response {
    with_store(s, move |_, store| {
        let points = store.scores_on_branch(
            &p.branch(),
            p.suite.as_deref().filter(|s| !s.is_empty()),
            bounded("last", p.last, DEFAULT_TREND, MAX_TREND)?,
        )?;
        Ok(json(to_json(&points)?))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_baseline_is_a_branch_or_a_run_never_a_path() {
        for good in [
            "main",
            "release/1.2",
            "feature/x-y_z",
            "#3",
            "3",
            "0198ffff-0000",
            "there.json",
        ] {
            assert_eq!(baseline_reference(good).as_deref(), Ok(good), "{good}");
        }
        for bad in [
            "/dev/zero",
            "/etc/passwd",
            "../x.json",
            "a/../b",
            "./x",
            "-x",
            "a b",
            "a\\b",
            "C:x",
            "x/",
            "a//b",
            "x.lock",
            "a\u{1b}b",
            "",
            " ",
        ] {
            let e = baseline_reference(bad).expect_err(bad);
            assert!(e.ends_with("the dashboard reads no file"), "{bad}: {e}");
        }
        assert!(baseline_reference(&"a".repeat(256)).is_err());
        assert!(baseline_reference(&"a".repeat(255)).is_ok());
    }
}
