//! `evals dashboard`: a read-only web app over the history, on axum.
//!
//! It reads a store opened for reading alone ([`Location::open_read_only`]) through the
//! [`HistoryStore`] trait, so a SQLite file and a PostgreSQL database serve alike. Only GET
//! and HEAD are answered (anything else is 405 with `Allow: GET, HEAD`, before routing):
//! there is no write path. Pages: the runs list with filters (`/?suite=&branch=&status=&since=&until=`),
//! a run's page (`/runs/N`: its HTML report, compared with its baseline as `check` compares,
//! through [`crate::gate::judge`]), one case across runs (`/case?case=&dataset=`), the
//! trend of each experiment's primary score on a branch (`/trend`), and JSON for each
//! (`/runs.json`, `/runs/N.json` the snapshot, `/case.json`, `/trend.json`). The store is
//! called on tokio's blocking threads, one call at a time.

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
use crate::history::{AnyStore, CaseQuery, HistoryStore, Location, RunQuery};
use crate::results::RunResult;

pub use pages::{At, CaseSeries, Filters};

/// How the dashboard is served.
#[derive(Debug, Clone)]
pub struct Options {
    /// The address to listen on (`127.0.0.1` unless told otherwise).
    pub bind: IpAddr,
    /// The port; 0 takes any free one.
    pub port: u16,
    /// What a run page compares each run with, as `check --baseline` reads it (a branch, a
    /// run): `main` by default.
    pub baseline: String,
}

/// The dashboard's state: the store, read one call at a time.
struct Dashboard {
    store: Mutex<AnyStore>,
    location: String,
    baseline: String,
}

/// The runs list shows at most this many unless `limit` says.
const DEFAULT_LIMIT: usize = 200;

/// The trend reads this many runs of the branch unless `last` says.
const DEFAULT_TREND: usize = 50;

/// Opens the history at `location` for reading and serves the dashboard on it until
/// Ctrl-C; `ready` is told the bound address first (the actual port when it was 0).
pub fn serve(location: &Location, options: &Options, ready: impl FnOnce(SocketAddr)) -> Result<()> {
    let store = location.open_read_only()?;
    let state = Arc::new(Dashboard {
        store: Mutex::new(store),
        location: location.shown(),
        baseline: options.baseline.clone(),
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
        axum::serve(listener, router(state, hosts))
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
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

fn router(state: Arc<Dashboard>, hosts: Option<Vec<String>>) -> Router {
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
            Arc::new(hosts),
            read_only,
        ))
        .with_state(state)
}

/// GET and HEAD only, whatever the path: the dashboard writes nothing. On loopback, only
/// for a loopback `Host`. Every answer says how it may be used: nothing loaded from
/// elsewhere, no framing, no sniffing.
async fn read_only(
    State(hosts): State<Arc<Option<Vec<String>>>>,
    req: Request,
    next: Next,
) -> Response {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_ascii_lowercase);
    let foreign = match (hosts.as_ref(), host) {
        (Some(allowed), Some(h)) => !allowed.contains(&h),
        _ => false,
    };
    let mut res = if foreign {
        (
            StatusCode::FORBIDDEN,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "403 forbidden: this dashboard answers to 127.0.0.1 or localhost only\n",
        )
            .into_response()
    } else if req.method() == Method::GET || req.method() == Method::HEAD {
        next.run(req).await
    } else {
        let mut res = (
            StatusCode::METHOD_NOT_ALLOWED,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "405 method not allowed: the dashboard is read-only (GET, HEAD)\n",
        )
            .into_response();
        res.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        res
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

/// Runs `f` on the store on a blocking thread (SQLite and the sync PostgreSQL client
/// block).
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
    let status = f.status.clone().filter(|s| !s.is_empty());
    if let Some(s) = &status
        && !["completed", "interrupted", "aborted"].contains(&s.as_str())
    {
        return Err(Failure::BadRequest(format!(
            "status={s}: expected completed, interrupted or aborted"
        )));
    }
    let text = |v: &Option<String>| v.clone().filter(|v| !v.trim().is_empty());
    Ok(RunQuery {
        suite: text(&f.suite),
        branch: text(&f.branch),
        status,
        since: since.map(|d| d.format("%Y-%m-%d").to_string()),
        before: until
            .and_then(|d| d.succ_opt())
            .map(|d| d.format("%Y-%m-%d").to_string()),
        limit: Some(f.limit.unwrap_or(DEFAULT_LIMIT)),
    })
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
        let run = stored(store, &reference)?;
        let baseline = p
            .baseline
            .filter(|b| !b.trim().is_empty())
            .unwrap_or_else(|| d.baseline.clone());
        // The gate as `check` runs it: the first run on the baseline branch is its first
        // baseline; a missing baseline is said, and the run judged without one.
        let plan = CheckPlan {
            baseline: Some(baseline),
            rules: Rules::new(0.02, false)?,
            missing: MissingBaseline::Pass,
            first_on_own_branch: true,
        };
        let checked = crate::gate::judge(
            &run,
            &plan,
            Some(store as &dyn HistoryStore),
            &PathBuf::from(&d.location),
        );
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
        limit: Some(p.limit.unwrap_or(1000)),
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
            p.last.unwrap_or(DEFAULT_TREND),
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
            p.last.unwrap_or(DEFAULT_TREND),
        )?;
        Ok(json(to_json(&points)?))
    })
    .await
}
