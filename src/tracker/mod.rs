//! Trackers: where a run's results go beside the local JSON snapshot (always written). At
//! most one remote tracker runs: `otlp` (OTLP/HTTP traces), `logfire` (the same traces to
//! Logfire) or `braintrust` (an experiment per contender and dataset, a row per case).
//!
//! Which one: `--tracker NAME`, else `tracker:` in the config, else the environment, where
//! exactly one tracker's key being set selects it ([`choose`]); two keys and no choice is
//! an error, `--local` (or `--tracker none`) means none. A chosen tracker whose key is
//! missing fails before any model is called ([`build`]).
//!
//! A tracker is a [`Sink`] ([`TrackerSink`]): while cases run it only notes when each one
//! finished (a lock and a store); everything is sent when the run finishes, experiment by
//! experiment, in batches, the cases streamed back from the run's case log on a thread of
//! its own. Its calls go straight through reqwest, never the cassette layer, so they are
//! never recorded; a tracker that fails (its server down, a 500) stops sending, and the
//! CLI warns once: the run's result and exit code stand.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};
use crate::results::{CaseLog, ExperimentResult, RunResult};
use crate::runner::{Event, Notices, Sink};
use crate::suite::Suite;
use crate::suite::config::TrackerName;

pub mod braintrust;
pub mod otlp;

/// A remote tracker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// OTLP/HTTP protobuf traces to `OTEL_EXPORTER_OTLP_ENDPOINT`.
    Otlp,
    /// The same traces to Logfire, `LOGFIRE_TOKEN` as the authorization.
    Logfire,
    /// Braintrust's REST API, `BRAINTRUST_API_KEY`.
    Braintrust,
}

impl Kind {
    /// Every remote tracker.
    pub const ALL: [Kind; 3] = [Kind::Otlp, Kind::Logfire, Kind::Braintrust];

    /// Its name, as `--tracker` and `tracker:` write it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Otlp => "otlp",
            Kind::Logfire => "logfire",
            Kind::Braintrust => "braintrust",
        }
    }

    /// The variable whose being set selects it when nothing else chose. `otlp` has none:
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` is often set for other programs, and sending a run's
    /// results somewhere must be asked for.
    pub fn selecting_key(self) -> Option<&'static str> {
        match self {
            Kind::Otlp => None,
            Kind::Logfire => Some("LOGFIRE_TOKEN"),
            Kind::Braintrust => Some("BRAINTRUST_API_KEY"),
        }
    }
}

/// The names `--tracker` takes.
pub const NAMES: &[&str] = &["local", "none", "otlp", "logfire", "braintrust"];

fn of_name(name: TrackerName) -> Option<Kind> {
    match name {
        TrackerName::Local | TrackerName::None => None,
        TrackerName::Otlp => Some(Kind::Otlp),
        TrackerName::Logfire => Some(Kind::Logfire),
        TrackerName::Braintrust => Some(Kind::Braintrust),
    }
}

/// Which remote tracker a run has (`None`: the local snapshot alone), and what chose it, in
/// words (`-v` prints it, errors quote it).
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// The tracker; `None` for local only.
    pub kind: Option<Kind>,
    /// Why: `--tracker braintrust`, `tracker: logfire in evals/.llm-evals.config.yml`, ...
    pub why: String,
}

/// Picks the tracker: `--tracker NAME` (`flag`; `--local` as `none`), then the config's
/// `tracker:` (`config`, in the file `config_path`), then the environment (`env`), where
/// exactly one tracker's key being set selects it. Two keys set and nothing chosen is a
/// usage error asking for `--tracker` or `tracker:`; so is an unknown name, and `--local`
/// beside `--tracker` naming a remote one.
pub fn choose(
    flag: Option<&str>,
    local: bool,
    config: Option<TrackerName>,
    config_path: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Choice> {
    if let Some(name) = flag {
        let name = name.trim();
        let kind = match name {
            "local" | "none" => None,
            "otlp" => Some(Kind::Otlp),
            "logfire" => Some(Kind::Logfire),
            "braintrust" => Some(Kind::Braintrust),
            other => {
                let hint = crate::suggest::did_you_mean(other, NAMES)
                    .map(|s| format!(" (did you mean '{s}'?)"))
                    .unwrap_or_default();
                return Err(Error::Usage(format!(
                    "--tracker {other}: no such tracker{hint}; the trackers are local (or none), otlp, logfire and braintrust"
                )));
            }
        };
        if local && let Some(k) = kind {
            return Err(Error::Usage(format!(
                "--local and --tracker {}: the one keeps results local, the other sends them; drop one",
                k.name()
            )));
        }
        return Ok(Choice {
            kind,
            why: format!("--tracker {name}"),
        });
    }
    if local {
        return Ok(Choice {
            kind: None,
            why: "--local".into(),
        });
    }
    if let Some(name) = config {
        let written = serde_json::to_value(name)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        return Ok(Choice {
            kind: of_name(name),
            why: format!("tracker: {written} in {config_path}"),
        });
    }
    let set: Vec<(Kind, &str)> = Kind::ALL
        .iter()
        .filter_map(|&k| k.selecting_key().map(|v| (k, v)))
        .filter(|(_, v)| env(v).is_some())
        .collect();
    match set.as_slice() {
        [] => Ok(Choice {
            kind: None,
            why: "no tracker's key is set: BRAINTRUST_API_KEY, LOGFIRE_TOKEN".into(),
        }),
        [(k, var)] => Ok(Choice {
            kind: Some(*k),
            why: format!("{var} is set, and no other tracker's key"),
        }),
        many => {
            let vars: Vec<&str> = many.iter().map(|(_, v)| *v).collect();
            let names: Vec<&str> = many.iter().map(|(k, _)| k.name()).collect();
            let all = if many.len() == 2 { "both" } else { "all" };
            Err(Error::Usage(format!(
                "{} are {all} set: choose the tracker with --tracker {} (or tracker: in {config_path}), or keep results local with --local",
                vars.join(" and "),
                names.join("|"),
            )))
        }
    }
}

/// What [`build`] reads beside the suite: the flags.
#[derive(Debug, Clone, Default)]
pub struct Flags {
    /// `--project NAME`: the tracker's project, over the config's `project:`.
    pub project: Option<String>,
}

/// Builds the chosen tracker's sink, checking before any model is called that its key is
/// set (naming the variable) and its URLs are URLs; `None` for local only. Variables are
/// read through the suite ([`Suite::var`]: the run's environment `env`, then the suite's
/// `env_files`); every key and header
/// value read is registered with the egress scrubber. `-v` lines say where each thing came
/// from.
pub fn build(
    choice: &Choice,
    suite: &Suite,
    env: &crate::env::Environment,
    cases: &crate::suite::Cases,
    flags: &Flags,
    notices: &dyn Notices,
) -> Result<Option<TrackerSink>> {
    let Some(kind) = choice.kind else {
        return Ok(None);
    };
    let env = |name: &str| suite.var(env, name);
    let missing = |var: &str, example: &str| {
        Error::Usage(format!(
            "tracker {} (from {}): {var} is not set: export {var}={example}, or keep results local with --local",
            kind.name(),
            choice.why
        ))
    };
    let sections = &suite.config.trackers;
    let backend = match kind {
        Kind::Otlp => {
            let url = otlp_env_url(&env)
                .ok_or_else(|| missing("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318"))?;
            let headers = otlp_env_headers(&env)?;
            notices.verbose(&format!(
                "tracker otlp: traces to {url}{}",
                header_names(&headers)
            ));
            Backend::Otlp(otlp::Exporter::new(
                kind,
                check_url(kind, &url)?,
                headers,
                sections.otlp.include_replies.unwrap_or(false),
            )?)
        }
        Kind::Logfire => {
            let otel_url = otlp_env_url(&env);
            let otel_headers = env("OTEL_EXPORTER_OTLP_HEADERS");
            let (url, headers) = if otel_url.is_some() || otel_headers.is_some() {
                let base = env("LOGFIRE_BASE_URL")
                    .unwrap_or_else(|| otlp::LOGFIRE_DEFAULT_URL.to_string());
                let url = otel_url.unwrap_or_else(|| traces_url(&base));
                let headers = otlp_env_headers(&env)?;
                notices.verbose(&format!(
                    "tracker logfire: OTEL_EXPORTER_OTLP_ENDPOINT/HEADERS are set and win over LOGFIRE_BASE_URL and LOGFIRE_TOKEN: traces to {url}{}",
                    header_names(&headers)
                ));
                (url, headers)
            } else {
                let token = env("LOGFIRE_TOKEN")
                    .ok_or_else(|| missing("LOGFIRE_TOKEN", "<a Logfire write token>"))?;
                crate::secrets::register([token.clone()]);
                let (base, from) = match env("LOGFIRE_BASE_URL") {
                    Some(b) => (b, "LOGFIRE_BASE_URL"),
                    None => (otlp::LOGFIRE_DEFAULT_URL.to_string(), "the default"),
                };
                let url = traces_url(&base);
                notices.verbose(&format!(
                    "tracker logfire: traces to {url} ({from}), authorized by LOGFIRE_TOKEN"
                ));
                (url, vec![("authorization".to_string(), token)])
            };
            Backend::Otlp(otlp::Exporter::new(
                kind,
                check_url(kind, &url)?,
                headers,
                sections.logfire.include_replies.unwrap_or(false),
            )?)
        }
        Kind::Braintrust => {
            let key = env("BRAINTRUST_API_KEY")
                .ok_or_else(|| missing("BRAINTRUST_API_KEY", "<your Braintrust API key>"))?;
            crate::secrets::register([key.clone()]);
            let api = env("BRAINTRUST_API_URL")
                .unwrap_or_else(|| braintrust::DEFAULT_API_URL.to_string());
            let (project, from) = match (env("BRAINTRUST_PROJECT_ID"), &flags.project) {
                (Some(id), _) => (braintrust::Project::Id(id), "BRAINTRUST_PROJECT_ID"),
                (None, Some(name)) => (braintrust::Project::Name(name.clone()), "--project"),
                (None, None) => match &suite.config.project {
                    Some(name) => (braintrust::Project::Name(name.clone()), "project:"),
                    None => (
                        braintrust::Project::Name(suite.name.clone()),
                        "the suite's name (no project: in the config)",
                    ),
                },
            };
            notices.verbose(&format!(
                "tracker braintrust: {api}, project {} ({from})",
                project.shown()
            ));
            Backend::Braintrust(braintrust::Client::new(
                check_url(kind, &api)?,
                key,
                project,
                sections.braintrust.include_replies.unwrap_or(true),
            )?)
        }
    };
    Ok(Some(TrackerSink::new(backend, cases)))
}

/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as it is, else `OTEL_EXPORTER_OTLP_ENDPOINT` with
/// `/v1/traces` (the OTLP/HTTP rule).
fn otlp_env_url(env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .or_else(|| env("OTEL_EXPORTER_OTLP_ENDPOINT").map(|b| traces_url(&b)))
}

fn traces_url(base: &str) -> String {
    format!("{}/v1/traces", base.trim().trim_end_matches('/'))
}

/// `OTEL_EXPORTER_OTLP_HEADERS` (`k=v,k2=v2`, values URL-encoded), each value registered
/// with the egress scrubber (an authorization is a secret whatever the variable's name).
fn otlp_env_headers(env: &dyn Fn(&str) -> Option<String>) -> Result<Vec<(String, String)>> {
    let Some(raw) = env("OTEL_EXPORTER_OTLP_HEADERS") else {
        return Ok(vec![]);
    };
    let headers = parse_headers(&raw).map_err(|why| {
        Error::Usage(format!(
            "OTEL_EXPORTER_OTLP_HEADERS: {why}; write it as key=value,key2=value2 (values URL-encoded)"
        ))
    })?;
    crate::secrets::register(headers.iter().map(|(_, v)| v.clone()));
    Ok(headers)
}

/// `k=v,k2=v2` with percent-decoded values; an empty item is skipped.
pub fn parse_headers(raw: &str) -> std::result::Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for item in raw.split(',') {
        if item.trim().is_empty() {
            continue;
        }
        let Some((k, v)) = item.split_once('=') else {
            return Err(format!("'{}' has no '='", item.trim()));
        };
        let k = k.trim();
        if k.is_empty() {
            return Err("a header has no name".into());
        }
        let v = percent_decode(v.trim())
            .ok_or_else(|| format!("the value of {k} is not valid URL-encoded UTF-8"))?;
        out.push((k.to_string(), v));
    }
    Ok(out)
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// ` (headers: a, b)`: the names only, never the values.
fn header_names(headers: &[(String, String)]) -> String {
    if headers.is_empty() {
        return String::new();
    }
    let names: Vec<&str> = headers.iter().map(|(k, _)| k.as_str()).collect();
    format!(
        " (headers from OTEL_EXPORTER_OTLP_HEADERS: {})",
        names.join(", ")
    )
}

fn check_url(kind: Kind, url: &str) -> Result<String> {
    match reqwest::Url::parse(url.trim()) {
        Ok(u) if u.scheme() == "http" || u.scheme() == "https" => Ok(url.trim().to_string()),
        _ => Err(Error::Usage(format!(
            "tracker {}: '{url}' is not an http(s) URL; fix the variable that gave it",
            kind.name()
        ))),
    }
}

/// The HTTP client every tracker sends with: plain reqwest (no cassette, no redirect of
/// `EVALS_REDIRECT`), each request capped so a hung server delays the end of a run by
/// seconds, not forever.
pub(crate) fn http_client() -> Result<reqwest::Client> {
    // reqwest is built without a default TLS crypto provider; install ring's once (an error
    // only means one is installed already).
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| Error::Failed(format!("cannot start the tracker's HTTP client: {e}")))
}

/// A failed request, in words: `POST URL: HTTP 500: body` or the transport's error. The
/// CLI scrubs it when it warns.
pub(crate) async fn failure(what: &str, response: reqwest::Response) -> String {
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    let body: String = body.chars().take(200).collect();
    let body = body.trim();
    if body.is_empty() {
        format!("{what}: HTTP {status}")
    } else {
        format!("{what}: HTTP {status}: {body}")
    }
}

/// The transport error of a request, with its causes.
pub(crate) fn transport(what: &str, e: &reqwest::Error) -> String {
    let mut msg = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let text = cause.to_string();
        if !msg.contains(&text) {
            msg.push_str(": ");
            msg.push_str(&text);
        }
        source = cause.source();
    }
    format!("{what}: {msg}")
}

/// When an experiment ran and when each of its cases finished (Unix nanoseconds), taken as
/// the events came.
#[derive(Debug, Clone, Default)]
pub struct Timing {
    /// The contender's key and the dataset: which experiment of the finished run it is.
    pub key: (String, String),
    /// When its first case was about to start.
    pub start: u64,
    /// When its last case finished.
    pub end: u64,
    /// When each case finished, by position (0: it never did).
    pub ends: Vec<u64>,
}

/// What the tracker did, for the CLI to tell once the run is over.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sent {
    /// What was sent where (`tracker otlp: 4 experiment spans and 16 case spans to URL`).
    pub summary: Option<String>,
    /// Pages to open (Braintrust's experiments), `name: URL`.
    pub urls: Vec<String>,
    /// Why it stopped sending, when it failed: warned once, the run stands.
    pub failure: Option<String>,
}

/// The tracker's sending half.
enum Backend {
    Otlp(otlp::Exporter),
    Braintrust(braintrust::Client),
}

/// A remote tracker as a sink of the run's events: see the module doc.
pub struct TrackerSink {
    backend: Backend,
    /// The run's selected cases by dataset (an experiment's positions are into these), for
    /// what a row shows of each case (its input and expected answer), read again from the
    /// suite's files only when sent.
    cases: HashMap<String, crate::suite::Cases>,
    timing: Mutex<Vec<Timing>>,
    outcome: Mutex<Option<Sent>>,
}

impl std::fmt::Debug for TrackerSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrackerSink")
            .field("kind", &self.kind())
            .finish_non_exhaustive()
    }
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl TrackerSink {
    fn new(backend: Backend, cases: &crate::suite::Cases) -> TrackerSink {
        TrackerSink {
            backend,
            cases: cases.by_dataset().into_iter().collect(),
            timing: Mutex::new(Vec::new()),
            outcome: Mutex::new(None),
        }
    }

    /// Which tracker it is.
    pub fn kind(&self) -> Kind {
        match &self.backend {
            Backend::Otlp(e) => e.kind(),
            Backend::Braintrust(_) => Kind::Braintrust,
        }
    }

    /// What it sent, or why it stopped; `None` before the run finished.
    pub fn outcome(&self) -> Option<Sent> {
        lock(&self.outcome).take()
    }

    /// Sends the finished run, on a thread of its own with its own runtime (a sink may be
    /// told `RunFinished` inside a caller's runtime, where blocking on another would panic).
    fn send(&self, run: &RunResult, log: &CaseLog) -> Sent {
        let timing = std::mem::take(&mut *lock(&self.timing));
        let job = || -> Sent {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    return Sent {
                        failure: Some(format!("cannot start its runtime: {e}")),
                        ..Sent::default()
                    };
                }
            };
            let view = RunView {
                run,
                log,
                timing: &timing,
                cases: &self.cases,
            };
            rt.block_on(async {
                match &self.backend {
                    Backend::Otlp(e) => e.send(&view).await,
                    Backend::Braintrust(c) => c.send(&view).await,
                }
            })
        };
        std::thread::scope(|s| {
            s.spawn(job).join().unwrap_or_else(|_| Sent {
                failure: Some("its sender crashed".into()),
                ..Sent::default()
            })
        })
    }
}

impl Sink for TrackerSink {
    fn event(&self, event: &Event<'_>) {
        match event {
            Event::RunStarted { experiments, .. } => {
                lock(&self.timing).resize(*experiments, Timing::default());
            }
            Event::ExperimentStarted {
                index,
                contender,
                dataset,
                cases,
            } => {
                let mut t = lock(&self.timing);
                if t.len() <= *index {
                    t.resize(index + 1, Timing::default());
                }
                t[*index] = Timing {
                    key: (contender.key(), dataset.to_string()),
                    start: now_ns(),
                    end: 0,
                    ends: vec![0; *cases],
                };
            }
            Event::CaseFinished {
                experiment,
                position,
                ..
            } => {
                let now = now_ns();
                if let Some(slot) = lock(&self.timing)
                    .get_mut(*experiment)
                    .and_then(|t| t.ends.get_mut(*position))
                {
                    *slot = now;
                }
            }
            Event::ExperimentFinished { index, .. } => {
                let now = now_ns();
                if let Some(t) = lock(&self.timing).get_mut(*index) {
                    t.end = now;
                }
            }
            Event::RunFinished { run, cases } => {
                let sent = self.send(run, cases);
                *lock(&self.outcome) = Some(sent);
            }
        }
    }
}

/// The finished run as a backend reads it: experiments with their timing, cases streamed
/// from the log, each case's input and expected answer on demand.
pub(crate) struct RunView<'a> {
    pub(crate) run: &'a RunResult,
    log: &'a CaseLog,
    timing: &'a [Timing],
    cases: &'a HashMap<String, crate::suite::Cases>,
}

impl<'a> RunView<'a> {
    /// An experiment's timing (found by its contender and dataset), or one made of now
    /// when its events were never seen.
    pub(crate) fn timing(&self, e: &ExperimentResult) -> Timing {
        let key = (e.contender.key(), e.dataset.clone());
        self.timing
            .iter()
            .find(|t| t.key == key)
            .cloned()
            .unwrap_or_else(|| {
                let now = now_ns();
                Timing {
                    key,
                    start: now,
                    end: now,
                    ends: vec![],
                }
            })
    }

    /// The case results of the `i`-th experiment, in case order.
    pub(crate) fn results(&self, i: usize) -> Result<crate::results::Cases<'a>> {
        self.log.cases(i)
    }

    /// Where each case of `dataset` stands in its experiments, by id.
    pub(crate) fn positions(&self, dataset: &str) -> HashMap<String, usize> {
        self.cases
            .get(dataset)
            .map(|cases| {
                cases
                    .heads()
                    .enumerate()
                    .map(|(i, h)| (h.id.to_string(), i))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The case at `position` of `dataset`, read again from the suite's files.
    pub(crate) fn case(&self, dataset: &str, position: usize) -> Option<crate::suite::Case> {
        let cases = self.cases.get(dataset)?;
        if position >= cases.len() {
            return None;
        }
        cases.get(position).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_flag_beats_the_config_which_beats_the_environment() {
        let both: &[(&str, &str)] = &[("BRAINTRUST_API_KEY", "k"), ("LOGFIRE_TOKEN", "t")];
        let env = env_of(both);
        let c = choose(
            Some("otlp"),
            false,
            Some(TrackerName::Logfire),
            "c.yml",
            &env,
        )
        .unwrap();
        assert_eq!(
            (c.kind, c.why.as_str()),
            (Some(Kind::Otlp), "--tracker otlp")
        );
        let c = choose(None, false, Some(TrackerName::Logfire), "c.yml", &env).unwrap();
        assert_eq!(
            (c.kind, c.why.as_str()),
            (Some(Kind::Logfire), "tracker: logfire in c.yml")
        );
        let err = choose(None, false, None, "c.yml", &env).unwrap_err();
        assert!(err.is_bad_input());
        assert!(
            err.to_string().starts_with(
                "LOGFIRE_TOKEN and BRAINTRUST_API_KEY are both set: choose the tracker with --tracker logfire|braintrust (or tracker: in c.yml)"
            ),
            "{err}"
        );
        let one = env_of(&[("BRAINTRUST_API_KEY", "k")]);
        let c = choose(None, false, None, "c.yml", &one).unwrap();
        assert_eq!(c.kind, Some(Kind::Braintrust));
        assert_eq!(
            c.why,
            "BRAINTRUST_API_KEY is set, and no other tracker's key"
        );
        let c = choose(None, true, None, "c.yml", &env).unwrap();
        assert_eq!((c.kind, c.why.as_str()), (None, "--local"));
        let c = choose(
            Some("none"),
            false,
            Some(TrackerName::Braintrust),
            "c",
            &env,
        )
        .unwrap();
        assert_eq!(c.kind, None);
        let none = env_of(&[]);
        assert_eq!(choose(None, false, None, "c", &none).unwrap().kind, None);
    }

    #[test]
    fn an_unknown_name_or_local_beside_a_remote_tracker_is_a_usage_error() {
        let env = env_of(&[]);
        let err = choose(Some("braintrst"), false, None, "c", &env).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("--tracker braintrst: no such tracker (did you mean 'braintrust'?)"),
            "{err}"
        );
        let err = choose(Some("otlp"), true, None, "c", &env).unwrap_err();
        assert!(err.is_bad_input());
        assert!(
            err.to_string().contains("--local and --tracker otlp"),
            "{err}"
        );
    }

    #[test]
    fn otlp_headers_are_key_value_pairs_with_url_encoded_values() {
        assert_eq!(
            parse_headers("Authorization=Bearer%20abc,x-team = a%2Cb ,").unwrap(),
            [
                ("Authorization".to_string(), "Bearer abc".to_string()),
                ("x-team".to_string(), "a,b".to_string())
            ]
        );
        assert!(parse_headers("novalue").is_err());
        assert!(parse_headers("k=%zz").is_err());
    }
}
