//! The record/replay transport: modes, per-case sessions, and the live HTTP client.
//!
//! A [`Transport`] is made once per run with a [`Mode`]; each case opens a [`Session`] on
//! its cassette, sends its requests through it (concurrently if it likes), and calls
//! [`Session::finish`] to write what was recorded. Providers call `send` and never learn
//! whether the answer came from the network or from a file.

use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::str::FromStr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use regex::Regex;
use serde_json::Value;

use super::fingerprint::fingerprint;
use super::format::{
    Cassette, FORMAT, Interaction, RecordedRequest, RecordedResponse, RecordedUsage, parse,
};
use super::http::{CallError, HttpRequest, HttpResponse};
use super::matcher::{Matcher, describe_difference, nearest};
use super::redact::Redactor;
use super::store::{self, CassetteKey};
use crate::results::ContenderInfo;

/// Request headers that may be written to a cassette; everything else (auth, SDK
/// telemetry, cookies) is dropped.
const REQUEST_HEADERS: &[&str] = &["content-type", "accept"];
/// Response headers that may be written (`retry-after` so replayed rate limits behave).
const RESPONSE_HEADERS: &[&str] = &["content-type", "retry-after"];

/// How the transport uses cassettes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Answer only from cassettes; a request with no recording is an error of the case.
    Replay,
    /// Always call upstream; rewrite the cassette of every case that ran.
    Record,
    /// Replay what is recorded, call upstream and record what is not.
    Auto,
    /// Call upstream; read and write nothing.
    Live,
}

impl Mode {
    /// The mode to run in: with `CI` set, `auto` acts as `replay` (no writes on CI).
    pub fn resolve(self, ci: bool) -> Mode {
        match self {
            Mode::Auto if ci => Mode::Replay,
            other => other,
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Replay => "replay",
            Mode::Record => "record",
            Mode::Auto => "auto",
            Mode::Live => "live",
        })
    }
}

impl FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Mode, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "replay" => Ok(Mode::Replay),
            "record" => Ok(Mode::Record),
            "auto" => Ok(Mode::Auto),
            "live" => Ok(Mode::Live),
            _ => Err(format!(
                "unknown cassette mode `{s}`; use replay, record, auto or live"
            )),
        }
    }
}

/// Where cassettes live and what to leave out of them.
#[derive(Debug, Clone, Default)]
pub struct CassetteOptions {
    /// The cassette folder (`evals/cassettes`).
    pub dir: PathBuf,
    /// Dotted body paths (`user`, `metadata.trace_id`) left out of fingerprints and diffs.
    pub ignore_fields: Vec<String>,
    /// Patterns replaced with `[REDACTED]` in URLs and bodies before a write.
    pub redact: Vec<Regex>,
    /// Secret values (the API keys the suite uses) scrubbed before a write, and refused if
    /// still present. Values shorter than 8 characters are ignored.
    pub secrets: Vec<String>,
}

/// What a cassette records about its case, and the hint a miss ends with.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionMeta {
    /// `dataset/case id`.
    pub case: String,
    pub contender: ContenderInfo,
    /// The last line of a miss, e.g. "run `evals record -c vague` to record it".
    pub hint: String,
}

/// The future an [`Upstream`] returns.
pub type UpstreamFuture<'a> =
    Pin<Box<dyn Future<Output = Result<HttpResponse, CallError>> + Send + 'a>>;

/// Sends requests for real. The runner wraps it with retries/rate limits later.
pub trait Upstream: Send + Sync {
    fn send<'a>(&'a self, req: HttpRequest) -> UpstreamFuture<'a>;
}

/// The real HTTP client: a `reqwest::Client` with a per-call timeout.
#[derive(Debug, Clone)]
pub struct LiveClient {
    client: reqwest::Client,
    timeout: Duration,
    redirects: Vec<(String, String)>,
}

impl LiveClient {
    /// A client whose calls time out after `timeout`. A request whose URL starts with the
    /// first string of a `redirects` pair is sent to the second instead (the canonical URL
    /// stays in the cassette and the fingerprint): used to record against a local server.
    pub fn new(
        timeout: Duration,
        redirects: Vec<(String, String)>,
    ) -> Result<LiveClient, CallError> {
        // reqwest is built without a default TLS crypto provider; install ring's once.
        // An error only means one is installed already.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .build()
            .map_err(|e| CallError::Transport(format!("cannot start the HTTP client: {e}")))?;
        Ok(LiveClient {
            client,
            timeout,
            redirects,
        })
    }

    fn target_url(&self, url: &str) -> String {
        for (from, to) in &self.redirects {
            if let Some(rest) = url.strip_prefix(from.as_str()) {
                return format!("{to}{rest}");
            }
        }
        url.to_string()
    }

    async fn send_now(&self, req: HttpRequest) -> Result<HttpResponse, CallError> {
        let method_name = req.method.to_ascii_uppercase();
        let target = self.target_url(&req.url);
        let what = if target == req.url {
            format!("{method_name} {}", req.url)
        } else {
            format!("{method_name} {} (sent to {target})", req.url)
        };
        let method = reqwest::Method::from_bytes(method_name.as_bytes())
            .map_err(|_| CallError::Transport(format!("{what}: not an HTTP method")))?;
        let mut builder = self.client.request(method, &target).timeout(self.timeout);
        let mut has_content_type = false;
        for (name, value) in &req.headers {
            has_content_type |= name.eq_ignore_ascii_case("content-type");
            builder = builder.header(name.as_str(), value.as_str());
        }
        if let Some(body) = &req.body {
            let bytes = serde_json::to_vec(body).map_err(|e| {
                CallError::Transport(format!("{what}: cannot encode the body: {e}"))
            })?;
            if !has_content_type {
                builder = builder.header("content-type", "application/json");
            }
            builder = builder.body(bytes);
        }
        let started = Instant::now();
        let response = builder
            .send()
            .await
            .map_err(|e| CallError::Transport(format!("{what}: {}", self.describe(&e))))?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_ascii_lowercase(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let text = response
            .text()
            .await
            .map_err(|e| CallError::Transport(format!("{what}: {}", self.describe(&e))))?;
        let latency = started.elapsed();
        let body = match serde_json::from_str::<Value>(&text) {
            Ok(json) => json,
            Err(_) => Value::String(text),
        };
        Ok(HttpResponse {
            status,
            headers,
            body,
            latency,
        })
    }

    fn describe(&self, error: &reqwest::Error) -> String {
        if error.is_timeout() {
            return format!("timed out after {}", human_duration(self.timeout));
        }
        // The innermost cause says what happened ("Connection refused (os error 111)").
        let mut source: &dyn std::error::Error = error;
        while let Some(next) = source.source() {
            if let Some(io) = next.downcast_ref::<std::io::Error>() {
                match io.kind() {
                    std::io::ErrorKind::ConnectionRefused => return "connection refused".into(),
                    std::io::ErrorKind::TimedOut => {
                        return format!("timed out after {}", human_duration(self.timeout));
                    }
                    _ => {}
                }
            }
            source = next;
        }
        if error.is_connect() {
            format!("cannot connect: {source}")
        } else {
            source.to_string()
        }
    }
}

impl Upstream for LiveClient {
    fn send<'a>(&'a self, req: HttpRequest) -> UpstreamFuture<'a> {
        Box::pin(self.send_now(req))
    }
}

fn human_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 && d.as_secs() > 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// Opens a [`Session`] per case on its cassette, in one [`Mode`].
pub struct Transport {
    mode: Mode,
    options: Arc<CassetteOptions>,
    redactor: Arc<Redactor>,
    upstream: Arc<dyn Upstream>,
}

impl Transport {
    pub fn new(mode: Mode, options: CassetteOptions, upstream: Arc<dyn Upstream>) -> Transport {
        let redactor = Redactor::new(&options.secrets, &options.redact);
        Transport {
            mode,
            options: Arc::new(options),
            redactor: Arc::new(redactor),
            upstream,
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The cassette file of `key`.
    pub fn path(&self, key: &CassetteKey) -> PathBuf {
        self.options.dir.join(key.relative_path())
    }

    /// Opens the session of one case. In replay and auto, its cassette is loaded now: a
    /// corrupt or future-format file is an error naming the file; an absent one is not
    /// (replay reports it on the first request).
    pub fn session(&self, key: &CassetteKey, meta: SessionMeta) -> Result<Session, CallError> {
        let path = self.path(key);
        let recorded = match self.mode {
            Mode::Replay | Mode::Auto => match std::fs::read_to_string(&path) {
                Ok(text) => Some(parse(&text, &path)?),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => {
                    return Err(CallError::Cassette(format!(
                        "{}: cannot read cassette: {e}",
                        path.display()
                    )));
                }
            },
            Mode::Record | Mode::Live => None,
        };
        let recorded_interactions = recorded.map(|c| c.interactions);
        let matcher = Matcher::new(recorded_interactions.as_deref().unwrap_or_default());
        Ok(Session {
            mode: self.mode,
            path,
            meta,
            options: Arc::clone(&self.options),
            redactor: Arc::clone(&self.redactor),
            upstream: Arc::clone(&self.upstream),
            recorded: recorded_interactions,
            state: Mutex::new(State {
                matcher,
                exchanged: Vec::new(),
                fetched_live: false,
            }),
        })
    }
}

/// One case's use of its cassette. `send` may be called concurrently.
pub struct Session {
    mode: Mode,
    path: PathBuf,
    meta: SessionMeta,
    options: Arc<CassetteOptions>,
    redactor: Arc<Redactor>,
    upstream: Arc<dyn Upstream>,
    /// The cassette as loaded; `None` when there was none (or the mode reads none).
    recorded: Option<Vec<Interaction>>,
    state: Mutex<State>,
}

struct State {
    matcher: Matcher,
    /// What this session exchanged, in order: replayed hits (auto) and live calls.
    exchanged: Vec<Interaction>,
    /// Whether any request went upstream (auto writes only then).
    fetched_live: bool,
}

impl Session {
    /// The cassette file this session reads and writes.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Answers `req` from the cassette or upstream, as the mode says. Replayed responses
    /// carry the recorded latency; recorded ones the latency as written (whole ms).
    pub async fn send(&self, req: HttpRequest) -> Result<HttpResponse, CallError> {
        match self.mode {
            Mode::Live => self.upstream.send(req).await,
            Mode::Record => self.fetch(req).await,
            Mode::Replay => {
                let recorded = self.scrubbed_request(&req);
                let fp = fingerprint(&recorded.to_http(), &self.options.ignore_fields);
                match self.replay(&fp) {
                    Some(response) => Ok(response),
                    None => Err(self.miss(&recorded)),
                }
            }
            Mode::Auto => {
                let recorded = self.scrubbed_request(&req);
                let fp = fingerprint(&recorded.to_http(), &self.options.ignore_fields);
                match self.replay(&fp) {
                    Some(response) => Ok(response),
                    None => self.fetch(req).await,
                }
            }
        }
    }

    /// Writes the cassette when the mode and the session call for it, and returns its path.
    /// Record writes every exchange of the session (nothing if there was none), replacing
    /// the old file; auto writes (hits and new exchanges, in order) only if something was
    /// fetched live; replay and live write nothing. A secret still present after scrubbing
    /// stops the write with an error naming its kind.
    pub fn finish(self) -> Result<Option<PathBuf>, CallError> {
        let state = self
            .state
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        let write = match self.mode {
            Mode::Record => !state.exchanged.is_empty(),
            Mode::Auto => state.fetched_live,
            Mode::Replay | Mode::Live => false,
        };
        if !write {
            return Ok(None);
        }
        let cassette = Cassette {
            format: FORMAT,
            case: self.meta.case,
            contender: self.meta.contender,
            recorded_at: chrono::Utc::now(),
            evals_version: env!("CARGO_PKG_VERSION").to_string(),
            interactions: state.exchanged,
        };
        store::write(&self.path, &cassette, &self.redactor)?;
        Ok(Some(self.path))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn replay(&self, fp: &str) -> Option<HttpResponse> {
        let recorded = self.recorded.as_ref()?;
        let mut state = self.lock();
        let interaction = recorded.get(state.matcher.take(fp)?)?;
        if self.mode == Mode::Auto {
            state.exchanged.push(interaction.clone());
        }
        Some(interaction.to_response())
    }

    async fn fetch(&self, req: HttpRequest) -> Result<HttpResponse, CallError> {
        let request = self.scrubbed_request(&req);
        let fp = fingerprint(&request.to_http(), &self.options.ignore_fields);
        let mut response = self.upstream.send(req).await?;
        let latency_ms = u64::try_from(response.latency.as_millis()).unwrap_or(u64::MAX);
        // Report what replay will report, so a recorded run and its replay agree exactly.
        response.latency = Duration::from_millis(latency_ms);
        let interaction = Interaction {
            fingerprint: fp,
            request,
            response: RecordedResponse {
                status: response.status,
                headers: self.allowed(&response.headers, RESPONSE_HEADERS),
                body: self.redactor.scrub_value(&response.body),
            },
            latency_ms,
            usage: RecordedUsage::from_body(&response.body),
        };
        let mut state = self.lock();
        state.exchanged.push(interaction);
        state.fetched_live = true;
        Ok(response)
    }

    /// The request as it would be written: allow-listed headers, secrets scrubbed.
    fn scrubbed_request(&self, req: &HttpRequest) -> RecordedRequest {
        RecordedRequest {
            method: req.method.to_ascii_uppercase(),
            url: self.redactor.scrub_str(&req.url),
            headers: self.allowed(&req.headers, REQUEST_HEADERS),
            body: req.body.as_ref().map(|b| self.redactor.scrub_value(b)),
        }
    }

    fn allowed(
        &self,
        headers: &[(String, String)],
        allow: &[&str],
    ) -> std::collections::BTreeMap<String, String> {
        headers
            .iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .filter(|(k, _)| allow.contains(&k.as_str()))
            .map(|(k, v)| (k, self.redactor.scrub_str(v)))
            .collect()
    }

    /// The error of a replay miss: the diff against the nearest recording, and the hint.
    fn miss(&self, request: &RecordedRequest) -> CallError {
        let path = self.path.display();
        let hint = &self.meta.hint;
        let Some(recorded) = self.recorded.as_ref() else {
            return CallError::Miss(format!("no cassette for this case ({path})\n{hint}"));
        };
        let ignore = &self.options.ignore_fields;
        let mut message = format!("no recording matches this request ({path})\n");
        match nearest(request, recorded, ignore) {
            None => message.push_str("  the cassette holds no interactions\n"),
            Some(index) => {
                let lines = describe_difference(&recorded[index].request, request, ignore);
                if lines.is_empty() {
                    let times = recorded
                        .iter()
                        .filter(|i| i.fingerprint == recorded[index].fingerprint)
                        .count();
                    message.push_str(&format!(
                        "  this request was recorded {times} time(s) and every recording is \
                         used: it was sent more often than when recorded\n"
                    ));
                }
                for line in lines {
                    message.push_str("  ");
                    message.push_str(&line);
                    message.push('\n');
                }
            }
        }
        message.push_str(hint);
        CallError::Miss(message)
    }
}
