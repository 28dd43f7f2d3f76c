//! GitHub: the Actions environment, read once ([`Env`]), and the REST client of `evals
//! comment`, which puts the check's Markdown on the pull request as one comment, updated in
//! place on every push (found by the hidden marker line the Markdown report writes), or
//! with `--issue TITLE` keeps it in one open issue of that title (a scheduled job's),
//! closed with `--close` when the trouble is over.

use std::ffi::OsString;
use std::time::Duration;

use serde_json::{Value, json};

use super::args::{CommentArgs, Global};
use super::exit;
use super::output::Out;
use llm_evals::env::{EnvVars, Environment};
use llm_evals::error::{Error, Result};
use llm_evals::report::markdown::{MARKER, comment_body, marker_in};
use llm_evals::suite::{Locate, Suite};

/// `evals comment FILE`: the Markdown on the pull request, as one comment updated in place.
pub(crate) fn comment(g: &Global, a: &CommentArgs, env: &Environment, out: &Out) -> Result<i32> {
    // The suite's keys (and its env_files' secrets) are scrubbed from the comment too, when
    // there is a suite here; a comment needs none.
    if let Ok(cwd) = std::env::current_dir() {
        let locate = Locate {
            config: g.config.clone(),
            no_search: g.no_search,
        };
        let _ = Suite::locate(&cwd, &locate);
    }
    let markdown = llm_evals::fs::read_regular_text(
        &a.file,
        &a.file.display().to_string(),
        llm_evals::fs::MAX_NAMED_FILE_BYTES,
    )
    .map_err(|e| e.named_by("evals comment FILE", None))?;
    let issue = a.issue.clone().map(|title| (title, a.close));
    let target = Target::new(&Env::read(env), a.pr, issue, a.repo.clone())?;
    match post(&target, &markdown)? {
        Posted::ReadOnly(note) => out.warn(&note),
        posted => out.note(&posted.said(&target.thread)),
    }
    Ok(exit::OK)
}

/// GitHub's REST API, unless `GITHUB_API_URL` says otherwise.
const DEFAULT_API: &str = "https://api.github.com";

/// How long one API call may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// The `GITHUB_*` variables of the PR comment and the job summary, each blank one as unset
/// (the branch and commit ones, `GITHUB_HEAD_REF`/`GITHUB_REF_NAME`/`GITHUB_SHA`, are
/// `history::git`'s).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Env {
    /// `GITHUB_TOKEN`: what may write the comment.
    pub token: Option<String>,
    /// `GITHUB_REPOSITORY`: `owner/name`.
    pub repository: Option<String>,
    /// `GITHUB_API_URL` (GitHub Enterprise).
    pub api_url: Option<String>,
    /// `GITHUB_EVENT_PATH`: the event payload (the pull request's number, a fork's head).
    pub event_path: Option<String>,
    /// `GITHUB_STEP_SUMMARY`: the file `check` appends its Markdown to.
    pub step_summary: Option<OsString>,
    /// `GITHUB_RUN_ID`: the workflow run, which every job of a sharded check shares.
    pub run_id: Option<String>,
    /// `GITHUB_RUN_ATTEMPT`: which attempt of the run (a re-run is a new attempt).
    pub run_attempt: Option<String>,
}

impl Env {
    /// The `GITHUB_*` variables of `env` (the process's, as the CLI read it).
    pub fn read(env: &Environment) -> Env {
        let var = |k: &str| env.var(k).filter(|v| !v.trim().is_empty());
        Env {
            token: var(EnvVars::GITHUB_TOKEN),
            repository: var(EnvVars::GITHUB_REPOSITORY),
            api_url: var(EnvVars::GITHUB_API_URL),
            event_path: var(EnvVars::GITHUB_EVENT_PATH),
            step_summary: env
                .var_os(EnvVars::GITHUB_STEP_SUMMARY)
                .filter(|v| !v.is_empty()),
            run_id: var(EnvVars::GITHUB_RUN_ID),
            run_attempt: var(EnvVars::GITHUB_RUN_ATTEMPT),
        }
    }

    /// The run group of a sharded check (`--group`'s default): `GITHUB_RUN_ID-GITHUB_RUN_ATTEMPT`
    /// (attempt 1 when unset), so a re-run's shards never mix with the first attempt's.
    pub fn run_group(&self) -> Option<String> {
        let id = self.run_id.as_deref()?;
        Some(format!(
            "{id}-{}",
            self.run_attempt.as_deref().unwrap_or("1")
        ))
    }
}

/// Where the comment goes and with which token.
#[derive(Debug, Clone)]
pub struct Target {
    /// `https://api.github.com` or `GITHUB_API_URL` (GitHub Enterprise).
    pub api_url: String,
    /// Whether `api_url` came from `GITHUB_API_URL` (what an unreachable API's message names).
    pub api_url_from_env: bool,
    /// `owner/name`.
    pub repo: String,
    /// The pull request whose comment it is, or the issue.
    pub thread: Thread,
    pub token: String,
    /// The head repository (`owner/name`) when the event says the pull request comes from
    /// a fork: GitHub gives such workflows a read-only token, so a refusal is expected.
    pub fork: Option<String>,
}

/// Where the report goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Thread {
    /// One comment on this pull request.
    Pr(u64),
    /// The body of the one open issue of this title (found by title and the report's
    /// marker); with `close`, closed with this report, and none opened.
    Issue { title: String, close: bool },
}

/// What happened to the comment or the issue; its URL when the API gave one.
#[derive(Debug, Clone, PartialEq)]
pub enum Posted {
    Created(Option<String>),
    Updated(Option<String>),
    /// Refused on a fork's pull request (a read-only token): the note says why.
    ReadOnly(String),
    /// An issue opened with the report: its number and URL.
    Opened(u64, Option<String>),
    /// The open issue's body replaced with the report.
    Refreshed(u64, Option<String>),
    /// The open issue given the report and closed (`--close`).
    Closed(u64, Option<String>),
    /// `--close` with no open issue of the title: nothing done.
    NoneOpen,
}

impl Posted {
    /// What `evals comment` says: `commented on #7: URL`, `updated the comment on #7`
    /// (no dangling colon when the API answered without a URL), `opened issue #12 "evals
    /// drift": URL`, or the read-only note.
    pub fn said(&self, thread: &Thread) -> String {
        let at = |url: &Option<String>| url.as_ref().map(|u| format!(": {u}")).unwrap_or_default();
        let (pr, title) = match thread {
            Thread::Pr(n) => (*n, ""),
            Thread::Issue { title, .. } => (0, title.as_str()),
        };
        match self {
            Posted::Created(url) => format!("commented on #{pr}{}", at(url)),
            Posted::Updated(url) => format!("updated the comment on #{pr}{}", at(url)),
            Posted::ReadOnly(note) => note.clone(),
            Posted::Opened(n, url) => format!("opened issue #{n} {title:?}{}", at(url)),
            Posted::Refreshed(n, url) => format!("updated issue #{n} {title:?}{}", at(url)),
            Posted::Closed(n, url) => format!("closed issue #{n} {title:?}{}", at(url)),
            Posted::NoneOpen => format!("no open issue {title:?}: nothing to close"),
        }
    }
}

impl Target {
    /// From flags and the Actions environment: `GITHUB_TOKEN`, `GITHUB_REPOSITORY`,
    /// `GITHUB_API_URL`, and the PR number from `--pr` or `GITHUB_EVENT_PATH`.
    /// Every input that is missing is named in the one error, each with its fix. `issue`
    /// (`--issue TITLE`, with `--close`) needs no pull request.
    pub fn new(
        env: &Env,
        pr: Option<u64>,
        issue: Option<(String, bool)>,
        repo: Option<String>,
    ) -> Result<Target> {
        let repo = repo.or_else(|| env.repository.clone());
        let mut missing = Vec::new();
        if env.token.is_none() {
            missing.push(if issue.is_some() {
                "GITHUB_TOKEN is not set: the issue needs a token that may write issues (in Actions: `permissions: { issues: write }` and `env: GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}`)"
            } else {
                "GITHUB_TOKEN is not set: the comment needs a token that may write pull-request comments (in Actions: `env: GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}`)"
            });
        }
        if repo.is_none() {
            missing.push("no repository: pass --repo OWNER/NAME or set GITHUB_REPOSITORY");
        }
        if issue.is_none() && pr.is_none() && env.event_path.is_none() {
            missing.push(NO_PR);
        }
        if let Some((title, _)) = &issue
            && title.trim().is_empty()
        {
            return Err(Error::Usage(
                "--issue \"\": give the issue a title, e.g. --issue \"evals drift\"".into(),
            ));
        }
        let (token, repo) = match (env.token.clone(), repo) {
            (Some(token), Some(repo)) if missing.is_empty() => (token, repo),
            _ if missing.len() == 1 => return Err(Error::Usage(missing[0].to_string())),
            _ => {
                return Err(Error::Usage(format!(
                    "evals comment is missing {} inputs:\n  {}",
                    missing.len(),
                    missing.join("\n  ")
                )));
            }
        };
        if repo.split('/').filter(|p| !p.is_empty()).count() != 2 {
            return Err(Error::Usage(format!("--repo {repo}: expected OWNER/NAME")));
        }
        let event_path = env.event_path.clone();
        let (thread, fork) = match (issue, pr) {
            (Some((title, close)), _) => (
                Thread::Issue {
                    title: title.trim().to_string(),
                    close,
                },
                None,
            ),
            (None, Some(n)) => (Thread::Pr(n), event_path.and_then(|p| fork_from_event(&p))),
            (None, None) => (
                Thread::Pr(pr_from_event(event_path.clone())?),
                event_path.and_then(|p| fork_from_event(&p)),
            ),
        };
        let from_env = env.api_url.clone();
        let api_url_from_env = from_env.is_some();
        let api_url = from_env
            .unwrap_or_else(|| DEFAULT_API.into())
            .trim_end_matches('/')
            .to_string();
        Ok(Target {
            api_url,
            api_url_from_env,
            repo,
            thread,
            token,
            fork,
        })
    }
}

/// The head repository of a pull request from a fork, from the event payload:
/// `pull_request.head.repo.fork`, or a head repository other than the base one.
fn fork_from_event(path: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let event: Value = serde_json::from_str(&text).ok()?;
    let head = event.pointer("/pull_request/head/repo")?;
    let name = |v: &Value| {
        v.get("full_name")
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let base = event.pointer("/pull_request/base/repo").and_then(name);
    let head_name = name(head);
    let forked = head.get("fork").and_then(Value::as_bool) == Some(true)
        || (head_name.is_some() && base.is_some() && head_name != base);
    forked.then(|| head_name.unwrap_or_else(|| "a fork".into()))
}

/// What `evals comment` says when a fork's read-only token was refused.
fn read_only_note(pr: u64, fork: &str) -> String {
    format!(
        "no comment on #{pr}: the pull request comes from {fork}, and GitHub gives a fork's workflows a read-only GITHUB_TOKEN; the verdict is in the job summary and the check's exit code"
    )
}

/// A 403 on a fork's pull request: refused by design, not by a misconfiguration.
struct ReadOnly(String);

/// No `--pr` and no event file.
const NO_PR: &str =
    "no pull request: pass --pr N, or run in a pull_request workflow (GITHUB_EVENT_PATH)";

fn pr_from_event(path: Option<String>) -> Result<u64> {
    let Some(path) = path else {
        return Err(Error::Usage(NO_PR.into()));
    };
    let text = llm_evals::fs::read_text(std::path::Path::new(&path), &path)
        .map_err(|e| e.named_by("GITHUB_EVENT_PATH", None))?;
    let event: Value = serde_json::from_str(&text)
        .map_err(|e| Error::Usage(format!("{path}: not a GitHub event payload: {e}")))?;
    event
        .pointer("/pull_request/number")
        .or_else(|| event.pointer("/issue/number"))
        .or_else(|| event.get("number"))
        .and_then(Value::as_u64)
        .ok_or_else(|| {
            Error::Usage(format!(
                "{path}: this event has no pull request number; pass --pr N (comments go on pull requests)"
            ))
        })
}

/// Creates the comment, or updates the one that carries the marker: the suite's
/// (`<!-- evals:<suite> -->`), or, for a comment written before markers named their suite,
/// the old one.
pub fn post(target: &Target, markdown: &str) -> Result<Posted> {
    // The request body leaves the process: it passes through the egress scrubber.
    let body = comment_body(&llm_evals::secrets::scrub(markdown));
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Failed(format!("cannot start the runtime: {e}")))?;
    rt.block_on(post_async(target, &body))
}

/// How many times a rate-limited call is tried again, and the longest wait for one.
const RATE_LIMIT_RETRIES: u32 = 3;
const RATE_LIMIT_MAX_WAIT: Duration = Duration::from_secs(60);
/// The most comment pages read (GitHub's page size times this many comments).
const MAX_PAGES: u32 = 100;

/// How long GitHub asks us to wait, when an answer is a rate limit: a 429, or a 403 with
/// `x-ratelimit-remaining: 0` (`retry-after` seconds, else until `x-ratelimit-reset`).
fn rate_limited(resp: &reqwest::Response) -> Option<Duration> {
    let status = resp.status().as_u16();
    let h = |k: &str| {
        resp.headers()
            .get(k)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let exhausted = h("x-ratelimit-remaining") == Some("0");
    if !(status == 429 || (status == 403 && (exhausted || h("retry-after").is_some()))) {
        return None;
    }
    if let Some(s) = h("retry-after").and_then(|v| v.parse::<u64>().ok()) {
        return Some(Duration::from_secs(s));
    }
    if let Some(reset) = h("x-ratelimit-reset").and_then(|v| v.parse::<u64>().ok()) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        return Some(Duration::from_secs(reset.saturating_sub(now) + 1));
    }
    // GitHub's advice for a secondary limit with neither header: a minute.
    Some(Duration::from_secs(60))
}

/// The `rel="next"` URL of a `Link` header.
fn next_link(resp: &reqwest::Response) -> Option<String> {
    let link = resp.headers().get("link")?.to_str().ok()?;
    link.split(',').find_map(|part| {
        let (url, params) = part.split_once(';')?;
        params
            .split(';')
            .any(|p| {
                let p = p.trim().replace(' ', "");
                p == "rel=\"next\"" || p == "rel=next"
            })
            .then(|| {
                url.trim()
                    .trim_start_matches('<')
                    .trim_end_matches('>')
                    .to_string()
            })
    })
}

/// Sends a request with the token, waiting out and retrying a rate limit (a few times, a
/// bounded wait).
async fn send(
    t: &Target,
    req: reqwest::RequestBuilder,
    what: &'static str,
) -> Result<reqwest::Response> {
    let req = req
        .bearer_auth(&t.token)
        .header("accept", "application/vnd.github+json")
        .header("x-github-api-version", "2022-11-28");
    let mut tries = 0;
    loop {
        let attempt = req.try_clone().expect("a JSON or empty body clones");
        let resp = attempt.send().await.map_err(|e| http_error(t, what, &e))?;
        match rate_limited(&resp) {
            Some(wait) if tries < RATE_LIMIT_RETRIES && wait <= RATE_LIMIT_MAX_WAIT => {
                tries += 1;
                eprintln!(
                    "note: GitHub's rate limit: waiting {}s to {what}",
                    wait.as_secs()
                );
                tokio::time::sleep(wait).await;
            }
            _ => return Ok(resp),
        }
    }
}

/// Reads a list endpoint page by page from `?per_page=100&page=1` (following GitHub's `Link:
/// <...>; rel="next"`, or, from a proxy that drops it, the next page after a full one),
/// handing each page to `visit` until it says it found what it looked for.
async fn each_page(
    t: &Target,
    client: &reqwest::Client,
    list: &str,
    what: &'static str,
    mut visit: impl FnMut(&[Value]) -> bool,
) -> Result<std::result::Result<(), ReadOnly>> {
    let page = |n: u32| {
        let sep = if list.contains('?') { '&' } else { '?' };
        format!("{list}{sep}per_page=100&page={n}")
    };
    let mut url = Some(page(1));
    let mut pages = 0;
    while let Some(u) = url.take() {
        pages += 1;
        let resp = send(t, client.get(&u), what).await?;
        let next = next_link(&resp);
        let items: Vec<Value> = match read(t, resp, what).await? {
            Ok(items) => items,
            Err(read_only) => return Ok(Err(read_only)),
        };
        if visit(&items) || pages >= MAX_PAGES {
            break;
        }
        url = next.or_else(|| (items.len() >= 100).then(|| page(pages + 1)));
    }
    Ok(Ok(()))
}

async fn post_async(t: &Target, body: &str) -> Result<Posted> {
    let client = reqwest::Client::builder()
        .timeout(TIMEOUT)
        .user_agent(concat!("llm-evals/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| Error::Failed(format!("cannot start the HTTP client: {e}")))?;
    match &t.thread {
        Thread::Pr(pr) => comment_async(t, &client, *pr, body).await,
        Thread::Issue { title, close } => issue_async(t, &client, title, *close, body).await,
    }
}

/// The pull request's comment: the one with the suite's marker updated (else one with the
/// old marker), or a new one.
async fn comment_async(
    t: &Target,
    client: &reqwest::Client,
    pr: u64,
    body: &str,
) -> Result<Posted> {
    let ours = marker_in(body).unwrap_or(MARKER).to_string();
    // The suite's marker wins; a comment with the old marker is updated when none has it.
    let mut existing: Option<u64> = None;
    let mut legacy: Option<u64> = None;
    let list = format!("{}/repos/{}/issues/{pr}/comments", t.api_url, t.repo);
    let walked = each_page(t, client, &list, "list the comments", |comments| {
        for c in comments {
            let (Some(b), Some(id)) = (
                c.get("body").and_then(Value::as_str),
                c.get("id").and_then(Value::as_u64),
            ) else {
                continue;
            };
            match marker_in(b) {
                Some(m) if m == ours => {
                    existing = Some(id);
                    return true;
                }
                Some(m) if m == MARKER && legacy.is_none() => legacy = Some(id),
                _ => {}
            }
        }
        false
    })
    .await?;
    if let Err(ReadOnly(fork)) = walked {
        return Ok(Posted::ReadOnly(read_only_note(pr, &fork)));
    }
    let existing = existing.or(legacy);
    let payload = json!({ "body": body });
    let (resp, what) = match existing {
        Some(id) => {
            let url = format!("{}/repos/{}/issues/comments/{id}", t.api_url, t.repo);
            let what = "update the comment";
            (
                send(t, client.patch(&url).json(&payload), what).await?,
                what,
            )
        }
        None => {
            let what = "create the comment";
            (
                send(t, client.post(&list).json(&payload), what).await?,
                what,
            )
        }
    };
    Ok(match read::<Value>(t, resp, what).await? {
        Ok(c) if existing.is_some() => Posted::Updated(html_url(&c)),
        Ok(c) => Posted::Created(html_url(&c)),
        Err(ReadOnly(fork)) => Posted::ReadOnly(read_only_note(pr, &fork)),
    })
}

/// The one open issue titled `title` that carries the report's marker: its body replaced
/// (and with `close`, closed), or a new issue (never with `close`).
async fn issue_async(
    t: &Target,
    client: &reqwest::Client,
    title: &str,
    close: bool,
    body: &str,
) -> Result<Posted> {
    let ours = marker_in(body).unwrap_or(MARKER).to_string();
    let mut open: Option<u64> = None;
    let list = format!("{}/repos/{}/issues?state=open", t.api_url, t.repo);
    // The issues list holds pull requests too (with a `pull_request` key): never those.
    each_page(t, client, &list, "list the open issues", |issues| {
        open = issues.iter().find_map(|i| {
            let ours = i.get("pull_request").is_none()
                && i.get("title").and_then(Value::as_str).map(str::trim) == Some(title)
                && i.get("body").and_then(Value::as_str).and_then(marker_in) == Some(&ours);
            ours.then(|| i.get("number").and_then(Value::as_u64))
                .flatten()
        });
        open.is_some()
    })
    .await?
    .map_err(|_| Error::Failed("could not list the open issues: HTTP 403".into()))?;
    let number = |i: &Value| i.get("number").and_then(Value::as_u64);
    let refused = |_| Error::Failed("could not write the issue: HTTP 403".into());
    match (open, close) {
        (None, true) => Ok(Posted::NoneOpen),
        (None, false) => {
            let url = format!("{}/repos/{}/issues", t.api_url, t.repo);
            let what = "open the issue";
            let payload = json!({ "title": title, "body": body });
            let resp = send(t, client.post(&url).json(&payload), what).await?;
            let i: Value = read(t, resp, what).await?.map_err(refused)?;
            Ok(Posted::Opened(number(&i).unwrap_or_default(), html_url(&i)))
        }
        (Some(n), close) => {
            let url = format!("{}/repos/{}/issues/{n}", t.api_url, t.repo);
            let (what, payload) = if close {
                let closed =
                    json!({ "body": body, "state": "closed", "state_reason": "completed" });
                ("close the issue", closed)
            } else {
                ("update the issue", json!({ "body": body }))
            };
            let resp = send(t, client.patch(&url).json(&payload), what).await?;
            let i: Value = read(t, resp, what).await?.map_err(refused)?;
            let url = html_url(&i);
            Ok(if close {
                Posted::Closed(n, url)
            } else {
                Posted::Refreshed(n, url)
            })
        }
    }
}

fn html_url(c: &Value) -> Option<String> {
    c.get("html_url")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(str::to_string)
}

/// A call that got no answer, said as what happened (connection refused, DNS, TLS, timeout)
/// to which API, and where that URL comes from. Never the token: it is in no error.
fn http_error(t: &Target, what: &str, e: &reqwest::Error) -> Error {
    let api = &t.api_url;
    let hint = if t.api_url_from_env {
        format!(
            "{api} (GITHUB_API_URL): check that GITHUB_API_URL is the GitHub API (GitHub Enterprise: https://HOST/api/v3), or unset it for {DEFAULT_API}"
        )
    } else {
        format!(
            "{api}: check that this machine reaches it (GitHub Enterprise: set GITHUB_API_URL to https://HOST/api/v3)"
        )
    };
    Error::Failed(format!("could not {what}: {}", failure(e, api, &hint)))
}

/// The cause of a failed call, from reqwest's error and its chain of sources; `at` names
/// the API and the fix.
fn failure(e: &reqwest::Error, api: &str, at: &str) -> String {
    // An io::Error's source() skips the error it wraps (rustls's, another io::Error):
    // step into it instead.
    let mut chain: Vec<&(dyn std::error::Error + 'static)> = Vec::new();
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = next {
        chain.push(err);
        next = match err
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
        {
            Some(inner) => Some(inner),
            None => err.source(),
        };
    }
    let innermost = chain.last().map(|e| e.to_string()).unwrap_or_default();
    let timed_out = || format!("timed out after {}s waiting for {at}", TIMEOUT.as_secs());
    if e.is_timeout() {
        return timed_out();
    }
    for err in &chain {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            match io.kind() {
                std::io::ErrorKind::ConnectionRefused => {
                    return format!("connection refused by {at}");
                }
                std::io::ErrorKind::ConnectionReset => return format!("connection reset by {at}"),
                std::io::ErrorKind::TimedOut => return timed_out(),
                _ => {}
            }
        }
        if let Some(tls) = err.downcast_ref::<rustls::Error>() {
            return format!("TLS failure ({tls}) with {at}");
        }
        // hyper's connector says "dns error" around the resolver's own error.
        if err.to_string() == "dns error" {
            let host = reqwest::Url::parse(api)
                .ok()
                .and_then(|u| u.host_str().map(str::to_string))
                .unwrap_or_else(|| api.to_string());
            return format!("DNS lookup of {host} failed ({innermost}) for {at}");
        }
    }
    if e.is_connect() {
        format!("cannot connect ({innermost}) to {at}")
    } else {
        format!("{innermost}, from {at}")
    }
}

/// The answer's JSON; `Err(ReadOnly)` when a fork's pull request refused the token.
async fn read<T: serde::de::DeserializeOwned>(
    t: &Target,
    resp: reqwest::Response,
    what: &str,
) -> Result<std::result::Result<T, ReadOnly>> {
    let status = resp.status();
    let text = resp.text().await.map_err(|e| http_error(t, what, &e))?;
    if let (403, Some(fork)) = (status.as_u16(), &t.fork) {
        return Ok(Err(ReadOnly(fork.clone())));
    }
    if !status.is_success() {
        let message = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_string))
            .unwrap_or_else(|| text.chars().take(200).collect());
        let hint = match (status.as_u16(), &t.thread) {
            (401, _) => " (is GITHUB_TOKEN valid?)",
            (403 | 404, Thread::Pr(_)) => {
                " (does the token have `pull-requests: write`, and is the PR number right? A fork's pull request gets a read-only token)"
            }
            (403 | 404, Thread::Issue { .. }) => {
                " (does the token have `issues: write`, and is the repository right?)"
            }
            _ => "",
        };
        return Err(Error::Failed(format!(
            "could not {what}: HTTP {status}: {message}{hint}"
        )));
    }
    serde_json::from_str(&text).map(Ok).map_err(|e| {
        Error::Failed(format!(
            "could not {what}: GitHub answered something unexpected: {e}"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A resolver that finds no address, as a DNS failure looks to reqwest (no network).
    struct NoSuchHost;

    impl reqwest::dns::Resolve for NoSuchHost {
        fn resolve(&self, _: reqwest::dns::Name) -> reqwest::dns::Resolving {
            Box::pin(async { Err("Name or service not known".into()) })
        }
    }

    #[test]
    fn a_dns_failure_names_the_host_and_where_the_url_came_from() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let api = "http://ghe.example.test/api/v3";
        let e = rt.block_on(async {
            reqwest::Client::builder()
                .dns_resolver(NoSuchHost)
                .build()
                .unwrap()
                .get(format!("{api}/repos/a/b/issues/1/comments"))
                .send()
                .await
                .unwrap_err()
        });
        let target = |from_env| Target {
            api_url: api.into(),
            api_url_from_env: from_env,
            repo: "a/b".into(),
            thread: Thread::Pr(1),
            token: "t".into(),
            fork: None,
        };
        assert_eq!(
            http_error(&target(true), "list the comments", &e).to_string(),
            format!(
                "could not list the comments: DNS lookup of ghe.example.test failed (Name or service not known) for {api} (GITHUB_API_URL): check that GITHUB_API_URL is the GitHub API (GitHub Enterprise: https://HOST/api/v3), or unset it for https://api.github.com"
            )
        );
        assert!(
            http_error(&target(false), "list the comments", &e)
                .to_string()
                .ends_with(&format!(
                    "for {api}: check that this machine reaches it (GitHub Enterprise: set GITHUB_API_URL to https://HOST/api/v3)"
                ))
        );
    }
}
