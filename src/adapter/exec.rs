//! The exec adapter: your production prompt builder and parser, in any language.
//!
//! `evals` starts `command` (an argv list, never a shell string) as up to `-p` worker
//! processes per experiment. A worker reads one JSON line per case on stdin,
//! `{"id", "case": {"id", "dataset", "variant", "input", "metadata"}, "model": {"id",
//! "provider", "effort", "temperature", "max_tokens"}}` (never the expected answer), and
//! answers with one JSON object, `{"id", "output", "raw", "usage", "error", "tool_calls"?,
//! "components"?}` (`tool_calls`: calls it reports beside those the gateway saw in the
//! responses it relayed, which the reply carries first; `components`: UI payloads
//! `[{protocol, version, payload, tool?}]`, `null` or absent "not reported", `[]` "none"):
//! posted to `EVALS_ANSWER_URL` (the gateway's `/answer/<token>`), off stdout, where
//! libraries print what they like; or as a line on stdout, the first that is a JSON object
//! with the case's `id`. Every other stdout line is stray output: scrubbed, written where
//! the worker's stderr goes (marked `stdout, not the answer (<case>)`) and named on the case
//! as a warning; once a worker has posted an answer, no stdout line is its answer again. It
//! calls the model
//! through the gateway (`OPENAI_BASE_URL`, with its own token as `OPENAI_API_KEY`). A worker
//! that exits, answers with something that is not the protocol, or takes too long is an
//! error of that case (no score) and is replaced for the next case.
//!
//! # What a worker gets
//!
//! Its environment is built from nothing (`env_clear`), never inherited whole, so keys in
//! evals' environment (`GITHUB_TOKEN`, `ANTHROPIC_API_KEY`, the suite's own) stay there:
//!
//! - from evals' environment, when set: [`BASIC_ENV`](crate::worker::BASIC_ENV) (`PATH`, `HOME`, `USER`, `LOGNAME`,
//!   `SHELL`, `LANG`, `LANGUAGE`, `TZ`, `TMPDIR`, `TERM`, the XDG base folders; `SYSTEMROOT`
//!   and friends on Windows) and every `LC_*`, none of them secret-named;
//! - [`OFFLINE_DEFAULTS`]: settings that keep known libraries on the gateway and off the
//!   network (no tracing to api.openai.com, no telemetry, no cost map or model downloaded),
//!   each one under what `adapter.pass_env` and `adapter.env` set;
//! - in replay, `HTTP_PROXY`, `HTTPS_PROXY` and `ALL_PROXY` (and lowercase) on the
//!   gateway, with `NO_PROXY=127.0.0.1,localhost`: a worker's connection to any other host
//!   is refused there ("replay is offline") and named on its case
//!   (`tried to reach api.openai.com:443 (refused: replay is offline)`); unset in record,
//!   auto and live, where a worker reaches the network as it would in production;
//! - the variables the config names in `adapter.pass_env` (copied from evals' environment
//!   when set; never one of the suite's API key variables);
//! - the adapter's `env:` map, as written;
//! - `OPENAI_BASE_URL` and `EVALS_BASE_URL` (the gateway) and `OPENAI_API_KEY` (the
//!   worker's own gateway token, worthless anywhere else); for Anthropic's and Google's
//!   SDKs the same token as `ANTHROPIC_API_KEY` and `GEMINI_API_KEY`, and the gateway's
//!   root as `ANTHROPIC_BASE_URL` and `GOOGLE_GEMINI_BASE_URL`.
//!
//! Its stderr is piped, read line by line, scrubbed of every known secret and credential
//! pattern ([`crate::secrets::scrub`]) and written to the run's
//! `log/<command>.warnings.<stamp>.log` (or evals' own stderr while progress bars draw,
//! which is that same log). It runs in its own process group; when it stops (the end of its
//! experiment, a crash, a timeout, Ctrl-C) that group is killed, and on Linux everything it
//! started is found and ended too, even a descendant that left the group with `setsid`
//! (see `worker/reap.rs`).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use super::gateway::{AnswerSlot, Binding, Gateway, Posted, Spent, UpstreamApi, UpstreamSet};
use super::{Adapter, AdapterSession, BoxFuture, CaseModel};
use crate::results::{CaseError, CaseErrorKind, Component, Reply, ToolCall, Usage};
use crate::suite::{Case, Contender, Suite};
use crate::worker::{Pool, Worker};

pub use crate::worker::StderrTo;

/// What every worker's environment sets unless `adapter.pass_env` or `adapter.env` says
/// otherwise: the known libraries' own switches that keep them on the gateway and off the
/// network. A library that traces, reports telemetry or downloads at import would send
/// prompts and outputs where no cassette or scrubber sees them (openai-agents posts its
/// traces to `https://api.openai.com/v1/traces/ingest` with the worker's token), and in
/// replay it would wait on a network that is not there (litellm fetches its cost map at
/// every import).
pub const OFFLINE_DEFAULTS: &[(&str, &str)] = &[
    // openai-agents: no traces to api.openai.com.
    ("OPENAI_AGENTS_DISABLE_TRACING", "1"),
    // litellm (and DSPy, which calls through it): the cost map bundled, not downloaded.
    ("LITELLM_LOCAL_MODEL_COST_MAP", "True"),
    // Hugging Face hub, transformers: no downloads, no telemetry.
    ("HF_HUB_OFFLINE", "1"),
    ("HF_HUB_DISABLE_TELEMETRY", "1"),
    // LangChain and LangSmith: no traces to LangSmith.
    ("LANGCHAIN_TRACING_V2", "false"),
    ("LANGSMITH_TRACING", "false"),
    // CrewAI: no telemetry, no tracing, no OpenTelemetry exporter.
    ("CREWAI_DISABLE_TELEMETRY", "true"),
    ("CREWAI_TRACING_ENABLED", "false"),
    ("OTEL_SDK_DISABLED", "true"),
    // Haystack, Agno, Traceloop (OpenLLMetry): no telemetry.
    ("HAYSTACK_TELEMETRY_ENABLED", "False"),
    ("AGNO_TELEMETRY", "false"),
    ("TRACELOOP_TELEMETRY", "false"),
    // Chroma and mem0 (`ANONYMIZED_TELEMETRY`); the convention many tools honour.
    ("ANONYMIZED_TELEMETRY", "False"),
    ("DO_NOT_TRACK", "1"),
];

/// How to start workers.
#[derive(Debug, Clone)]
pub struct ExecAdapter {
    /// The worker's argv (`adapter.command`), the program first; never a shell string.
    pub command: Vec<String>,
    /// Variables set for every worker (`adapter.env`), as written: over those copied from
    /// evals' environment, under the gateway's three.
    pub env: BTreeMap<String, String>,
    /// Variables copied from evals' environment (`adapter.pass_env`).
    pub pass_env: Vec<String>,
    /// Workers run here (the project folder), so relative paths in `command` work.
    pub cwd: PathBuf,
    /// Where workers' stderr goes.
    pub stderr: StderrTo,
    /// How long a worker may take over one case.
    pub case_timeout: Duration,
    /// The longest answer line a worker may print (`cassettes.max_response_bytes`): a
    /// longer one is an error of the case (kind `too-large`).
    pub max_answer: u64,
    /// The stderr readers of stopped workers, still writing what was left in the pipe.
    readers: Arc<std::sync::Mutex<Vec<JoinHandle<()>>>>,
    /// The run's gateway, once [`Adapter::start_run`] started it.
    gateway: std::sync::OnceLock<Arc<Gateway>>,
    /// The program's other APIs (`adapter.upstreams`), their credentials resolved.
    upstreams: Arc<UpstreamSet>,
    /// The largest request body the gateway takes from a worker (`adapter.max_request_bytes`).
    pub max_request_bytes: u64,
}

impl ExecAdapter {
    /// The adapter for a suite's `adapter: { kind: exec }`: checks that `command` names a
    /// program here (on `PATH`, or a file relative to the project folder) and sends the
    /// workers' stderr to `log/adapter.<stamp>.log`. Starts nothing yet.
    pub fn new(
        suite: &Suite,
        command: &[String],
        env: &BTreeMap<String, String>,
        pass_env: &[String],
    ) -> crate::error::Result<ExecAdapter> {
        crate::worker::Launch {
            role: "adapter",
            key: "adapter.command",
            command: command.to_vec(),
            cwd: suite.project_dir.clone(),
            stderr: StderrTo::Stderr {
                shown: String::new(),
            },
            readers: Arc::default(),
            max_answer: suite.config.cassettes.response_limit(),
        }
        .check_program(&suite.display_path)
        .map_err(crate::error::Error::Config)?;
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
        let log = PathBuf::from("log").join(format!("adapter.{stamp}.log"));
        Ok(ExecAdapter {
            command: command.to_vec(),
            env: env.clone(),
            pass_env: pass_env.to_vec(),
            cwd: suite.project_dir.clone(),
            stderr: StderrTo::File {
                path: suite.project_dir.join(&log),
                shown: log.display().to_string(),
            },
            case_timeout: Duration::from_secs_f64(
                suite.config.defaults.timeout.unwrap_or(120.0) * 5.0,
            ),
            max_answer: suite.config.cassettes.response_limit(),
            readers: Arc::default(),
            gateway: std::sync::OnceLock::new(),
            upstreams: Arc::default(),
            max_request_bytes: super::gateway::DEFAULT_MAX_REQUEST_BYTES,
        })
    }

    /// `adapter.max_request_bytes` when the config sets it (else the 32 MiB default).
    pub fn with_max_request_bytes(mut self, limit: Option<u64>) -> ExecAdapter {
        if let Some(limit) = limit {
            self.max_request_bytes = limit;
        }
        self
    }

    /// The program's other APIs (`adapter.upstreams`): each worker gets
    /// `EVALS_UPSTREAM_<NAME>_URL` on the gateway; the credential, read from `key_env` (the
    /// run's environment, `env`, or `env_files`), stays in evals.
    pub fn with_upstreams(
        mut self,
        suite: &Suite,
        env: &crate::env::Environment,
        upstreams: &crate::suite::config::Upstreams,
    ) -> ExecAdapter {
        let apis = upstreams
            .apis
            .iter()
            .map(|(name, u)| {
                let key = u
                    .key_env
                    .as_ref()
                    .map(|var| (var.clone(), suite.var(env, var)));
                // A stdio MCP server's requests are filed under `stdio://<name>`.
                let (base_url, stdio) = match &u.command {
                    Some(command) => (
                        format!("stdio://{name}"),
                        Some(super::mcp_stdio::Launch {
                            command: command.clone(),
                            cwd: suite.project_dir.clone(),
                            env: self.server_env(crate::env::process_vars()),
                        }),
                    ),
                    None => (u.base_url.trim_end_matches('/').to_string(), None),
                };
                let api = UpstreamApi {
                    base_url,
                    header: u.header_name(),
                    key,
                    mcp: u.kind == Some(crate::suite::config::UpstreamKind::Mcp),
                    stdio,
                };
                (name.clone(), api)
            })
            .collect();
        self.upstreams = Arc::new(UpstreamSet {
            apis,
            config: upstreams.clone(),
            stdio: Arc::default(),
        });
        self
    }

    /// A stdio MCP server's environment, from evals' own (`parent`): the workers' basics,
    /// `pass_env` and `adapter.env`, none of the gateway's variables.
    fn server_env(
        &self,
        parent: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> BTreeMap<OsString, OsString> {
        let mut out = crate::worker::basic_env(parent, &self.pass_env);
        out.extend(
            self.env
                .iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v))),
        );
        out
    }

    /// A worker's whole environment, from evals' own (`parent`): see the module docs.
    /// `proxy`: the gateway's proxy URL for this worker (replay), else `None`.
    pub(crate) fn worker_env(
        &self,
        parent: impl IntoIterator<Item = (OsString, OsString)>,
        base_url: &str,
        token: &str,
        proxy: Option<&str>,
    ) -> BTreeMap<OsString, OsString> {
        let mut out: BTreeMap<OsString, OsString> = OFFLINE_DEFAULTS
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect();
        if let Some(proxy) = proxy {
            for k in PROXY_VARS {
                out.insert(k.into(), proxy.into());
            }
            for k in ["NO_PROXY", "no_proxy"] {
                out.insert(k.into(), "127.0.0.1,localhost".into());
            }
        }
        out.extend(crate::worker::basic_env(parent, &self.pass_env));
        out.extend(
            self.env
                .iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v))),
        );
        // Anthropic's and Google's SDKs add their own `/v1` and `/v1beta` to the root.
        let root = base_url.strip_suffix("/v1").unwrap_or(base_url);
        for (name, api) in &self.upstreams.apis {
            let url = format!("{root}/upstream/{name}/{token}/");
            if api.stdio.is_some() {
                // The relay (this very program) the worker's MCP client starts.
                let relay = serde_json::json!([relay_program(), "mcp-relay", url]);
                out.insert(
                    super::mcp_stdio::command_var(name).into(),
                    relay.to_string().into(),
                );
            } else {
                out.insert(
                    crate::suite::config::upstream_url_var(name).into(),
                    url.into(),
                );
            }
        }
        let answer_url = format!("{root}/answer/{token}");
        for (k, v) in [
            ("EVALS_ANSWER_URL", answer_url.as_str()),
            ("OPENAI_BASE_URL", base_url),
            ("EVALS_BASE_URL", base_url),
            ("OPENAI_API_KEY", token),
            ("ANTHROPIC_BASE_URL", root),
            ("ANTHROPIC_API_KEY", token),
            ("GOOGLE_GEMINI_BASE_URL", root),
            ("GEMINI_API_KEY", token),
        ] {
            out.insert(k.into(), v.into());
        }
        out
    }

    /// Where its workers' stderr (and stray stdout) goes, as messages name it.
    fn stderr_shown(&self) -> &str {
        match &self.stderr {
            StderrTo::File { shown, .. } | StderrTo::Stderr { shown } => shown,
        }
    }

    /// How its workers are started.
    fn launch(&self) -> crate::worker::Launch {
        crate::worker::Launch {
            role: "adapter",
            key: "adapter.command",
            command: self.command.clone(),
            cwd: self.cwd.clone(),
            stderr: self.stderr.clone(),
            readers: self.readers.clone(),
            max_answer: self.max_answer,
        }
    }

    fn spawn(&self, base_url: &str, token: &str, proxy: Option<&str>) -> Result<Worker, String> {
        self.launch().spawn(
            self.worker_env(crate::env::process_vars(), base_url, token, proxy),
            "OPENAI_API_KEY",
            token,
        )
    }

    /// Ends what is left of the run's workers: on Linux, every descendant evals adopted
    /// (see `worker/reap.rs`); then waits (two seconds at most) for the stderr readers to
    /// write the last lines. Call once every worker is gone, before the run reports.
    pub async fn finish(&self) {
        crate::worker::sweep();
        self.launch().join_readers().await;
    }
}

impl Adapter for ExecAdapter {
    fn runs_workers(&self) -> bool {
        true
    }

    fn route_stderr(&mut self, to: StderrTo) {
        self.stderr = to;
    }

    fn start_run(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async {
            let gateway = Gateway::start(self.max_request_bytes)
                .await
                .map_err(|e| format!("cannot start the adapter gateway on 127.0.0.1: {e}"))?;
            let _ = self.gateway.set(Arc::new(gateway));
            Ok(())
        })
    }

    /// An experiment's workers: at most `-p`, reused case after case, stopped when the
    /// session is dropped.
    fn start(self: Arc<Self>) -> Arc<dyn AdapterSession> {
        let gateway = self.gateway.get().cloned();
        Arc::new(ExecSession {
            adapter: self,
            gateway,
            pool: Pool::default(),
        })
    }

    fn finish_run(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.finish())
    }

    fn take_warnings(&self) -> Vec<String> {
        self.gateway
            .get()
            .map(|g| refused_warnings(&g.take_refused()))
            .unwrap_or_default()
    }
}

/// The variables a worker's HTTP clients read their proxy from (set in replay).
const PROXY_VARS: &[&str] = &[
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
];

/// The run's warnings of the attempts its workers made to reach other hosts in replay: a
/// line per host, naming the cases (a few) and the attempts made between cases.
/// The program a worker's MCP client starts as a stdio MCP server's relay: the running
/// `evals` (its `mcp-relay` command), else `evals` on the `PATH`.
fn relay_program() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.to_str().map(str::to_string))
        .unwrap_or_else(|| "evals".into())
}

fn refused_warnings(refused: &[super::gateway::Refused]) -> Vec<String> {
    let mut hosts: Vec<&str> = Vec::new();
    for r in refused {
        if !hosts.contains(&r.host.as_str()) {
            hosts.push(&r.host);
        }
    }
    hosts
        .into_iter()
        .map(|host| {
            let mut during: Vec<&str> = Vec::new();
            let mut between: Vec<&str> = Vec::new();
            for r in refused.iter().filter(|r| r.host == host) {
                let list = if r.during { &mut during } else { &mut between };
                let case = r.case.as_deref().unwrap_or("no case yet");
                if !list.contains(&case) {
                    list.push(case);
                }
            }
            // In case order, whatever order the workers ran them in.
            during.sort_unstable();
            between.sort_unstable();
            let named = |cases: &[&str]| {
                let shown: Vec<&str> = cases.iter().take(3).copied().collect();
                let more = match cases.len().saturating_sub(3) {
                    0 => String::new(),
                    n => format!(" and {n} more"),
                };
                format!("{}{more}", shown.join(", "))
            };
            let mut when = Vec::new();
            if !during.is_empty() {
                when.push(format!(
                    "during {} ({})",
                    crate::text::plural(during.len(), "case", "cases"),
                    named(&during)
                ));
            }
            if !between.is_empty() {
                when.push(format!("between cases (after {})", named(&between)));
            }
            format!(
                "workers tried to reach {host} {} (refused: replay is offline): a library \
                 calling out on its own; turn it off in adapter.env (README: \"Byte for \
                 byte, and off the network\"), or make the call an adapter.upstreams API so \
                 it is recorded",
                when.join(" and ")
            )
        })
        .collect()
}

/// One experiment of an exec adapter: its idle workers and the run's gateway.
struct ExecSession {
    adapter: Arc<ExecAdapter>,
    gateway: Option<Arc<Gateway>>,
    pool: Pool,
}

impl AdapterSession for ExecSession {
    /// One case through a worker: bind the worker's token to this case's contender and
    /// cassette session, hand it the case, read its answer. `Err` is an error of the case
    /// (a crash, a transport failure or a cassette miss below the gateway).
    fn answer<'a>(
        &'a self,
        model: CaseModel<'a>,
    ) -> BoxFuture<'a, Result<super::Answer, CaseError>> {
        Box::pin(async move {
            let Some(gateway) = &self.gateway else {
                return Err(CaseError::new(
                    CaseErrorKind::Other,
                    "the exec adapter has no gateway in this run",
                ));
            };
            let (contender, case) = (model.contender, model.case);
            let adapter_error = |e: String| CaseError::new(CaseErrorKind::Adapter, e);
            let session = Arc::new(model.open().map_err(CaseError::from)?);
            let base_url = gateway.base_url();
            let token = format!("evals-{}", uuid::Uuid::now_v7().simple());
            // Replay is offline: a worker's connections to other hosts go to the gateway's
            // proxy, which refuses them and names them on the case.
            let proxy = (session.mode() == crate::cassette::Mode::Replay)
                .then(|| gateway.proxy_url(&token));
            let mut worker = self
                .pool
                .take(|| self.adapter.spawn(&base_url, &token, proxy.as_deref()))
                .await
                .map_err(adapter_error)?;
            let spent = Arc::new(std::sync::Mutex::new(Spent::default()));
            let (slot, posted) = AnswerSlot::new(self.adapter.max_answer);
            gateway.bind(
                &worker.token,
                Binding {
                    contender: contender.clone(),
                    case: case.clone(),
                    provider: model.provider.clone(),
                    session: session.clone(),
                    api_key: model.api_key.clone(),
                    pricing: model.pricing,
                    spent: spent.clone(),
                    upstreams: self.adapter.upstreams.clone(),
                    fixtures: super::upstreams::fixtures_dir(case),
                    answer: Some(slot),
                },
            );
            let answer = ask(
                &mut worker,
                case,
                contender,
                self.adapter.case_timeout,
                posted,
            )
            .await;
            gateway.unbind(&worker.token);
            if answer.is_ok() {
                self.pool.put(worker).await;
            }
            let spent = spent
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone();
            let unmade = self.unmade(&session);
            let finished = match Arc::try_unwrap(session) {
                Ok(s) => s.finish().map(|_| ()).map_err(CaseError::from),
                Err(_) => Err(adapter_error(
                    "adapter: answered while one of its calls was still in flight".to_string(),
                )),
            };
            // What the gateway saw first (a cassette miss with its diff, a failed call): the
            // worker's crash or broken answer is most often its consequence (a library that
            // raised, printed, exited).
            if let Some(e) = spent.error {
                return Err(e);
            }
            let (mut reply, stray) = answer?;
            if let Some(e) = unmade {
                return Err(e);
            }
            finished?;
            // The model declined and the adapter could make nothing of it: the refusal's
            // words are the reply's text and its diagnostic, as with the prompt adapter.
            if let Some(words) = spent.refusal
                && reply.output.is_none()
            {
                reply.error = Some(format!("refused: {words}"));
                if reply.raw.as_deref().is_none_or(|r| r.trim().is_empty()) {
                    reply.raw = Some(words);
                }
            }
            if spent.calls > 0 {
                // What the gateway measured (the recording's figures on replay), not what
                // the adapter says it spent.
                reply.usage = spent.usage;
            }
            // The calls seen at the gateway first (the model's, with the tools MCP servers
            // ran paired to them), then those the worker adds; none: no tool-call
            // information (`None`), which is not "no calls".
            let seen = crate::results::ToolCall::with_ran(spent.tool_calls, &spent.mcp_tool_calls);
            reply.tool_calls = match (seen, reply.tool_calls.take()) {
                (None, None) => None,
                (seen, own) => Some(seen.into_iter().chain(own).flatten().collect()),
            };
            // Seen whenever the program could call through the gateway: none is no calls.
            reply.trajectory = (spent.calls > 0 || !self.adapter.upstreams.apis.is_empty())
                .then_some(spent.trajectory);
            Ok(super::Answer {
                reply,
                latency_s: (spent.calls > 0).then_some(spent.latency_s),
                truncated: spent.truncated,
                warnings: spent
                    .offline
                    .iter()
                    .map(|host| format!("tried to reach {host} (refused: replay is offline)"))
                    .chain((stray.lines > 0).then(|| {
                        format!(
                            "printed {}: written to {}",
                            stray.described(),
                            self.adapter.stderr_shown()
                        )
                    }))
                    .collect(),
            })
        })
    }
}

impl ExecSession {
    /// The error of a case whose program no longer made a recorded request to a strict
    /// upstream (replay only): the first such recording, and how many there were.
    fn unmade(&self, session: &crate::cassette::Session) -> Option<CaseError> {
        let set = &self.adapter.upstreams;
        let unmade: Vec<_> = session
            .unreplayed_upstream()
            .into_iter()
            .filter(|i| {
                i.upstream
                    .as_deref()
                    .is_some_and(|u| set.config.strict_for(u))
            })
            .collect();
        let first = unmade.first()?;
        let name = first.upstream.as_deref().unwrap_or_default();
        let more = match unmade.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        Some(CaseError::new(
            CaseErrorKind::Miss,
            format!(
                "upstream {name}: the recorded request {} {} was never made{more} ({}): the adapter no longer sends it; record the case again, or set `strict: false` under adapter.upstreams",
                first.request.method,
                first.request.url,
                session.path().display()
            ),
        ))
    }
}

/// What a worker prints for a case.
#[derive(Debug, Deserialize)]
struct Answer {
    id: Value,
    #[serde(default)]
    output: Option<Value>,
    #[serde(default)]
    raw: Option<String>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<String>,
    /// Tool calls the worker reports beside those the gateway saw.
    #[serde(default)]
    tool_calls: Option<Vec<ToolCall>>,
    /// The UI payloads it returns beside its text; `null` or absent: not reported, `[]`:
    /// explicitly none.
    #[serde(default)]
    components: Option<Vec<Component>>,
}

/// The line a worker reads for a case: never the expected answer.
pub fn request_line(case: &Case, contender: &Contender) -> String {
    json!({
        "id": case.key(),
        "case": {
            "id": case.id,
            "dataset": case.dataset,
            "variant": case.variant,
            "input": case.input.to_value(),
            "metadata": case.metadata,
        },
        "model": {
            "id": contender.info.id,
            "provider": contender.info.provider,
            "effort": contender.info.effort,
            "temperature": contender.temperature,
            "max_tokens": contender.info.max_tokens,
        },
    })
    .to_string()
}

/// Sends a case and reads the answer: what the worker posts to `EVALS_ANSWER_URL`
/// (`posted`), or else the first stdout line that is a JSON object with the case's `id`;
/// every other stdout line is stray (logged, counted in what is returned). Once a worker
/// has posted an answer, its stdout is never read as one again. `Err` is a crashed or
/// broken worker (an error of the case of kind `adapter`) or one that gave no answer in
/// time (`timeout`). An answer with `error` is the model's failure (scored 0).
async fn ask(
    worker: &mut Worker,
    case: &Case,
    contender: &Contender,
    timeout: Duration,
    posted: tokio::sync::oneshot::Receiver<Posted>,
) -> Result<(Reply, crate::worker::Stray), CaseError> {
    let wanted = case.key();
    let is_answer = |line: &str| {
        serde_json::from_str::<Value>(line)
            .ok()
            .is_some_and(|v| v.get("id").and_then(Value::as_str) == Some(wanted.as_str()))
    };
    // A slot dropped unanswered (it never is while the case is bound) leaves stdout.
    let posted = async {
        match posted.await {
            Ok(p) => p,
            Err(_) => std::future::pending().await,
        }
    };
    let label = format!("{} {wanted}", contender.id());
    let (got, stray) = worker
        .exchange_with(
            &request_line(case, contender),
            timeout,
            &is_answer,
            posted,
            &label,
        )
        .await
        .map_err(|f| {
            let kind = if f.timeout {
                CaseErrorKind::Timeout
            } else if f.too_large {
                CaseErrorKind::TooLarge
            } else {
                CaseErrorKind::Adapter
            };
            CaseError::new(kind, f.message)
        })?;
    let (text, from) = match got {
        crate::worker::Answered::Line(text) => (text, "its answer is not the protocol's JSON line"),
        crate::worker::Answered::Channel(posted) => {
            worker.stdout_is_stray = true;
            (
                posted?,
                "the answer it posted to EVALS_ANSWER_URL is not the protocol's JSON object",
            )
        }
    };
    Ok((parse_answer(&text, &wanted, from)?, stray))
}

/// A worker's answer to case `wanted`, from its text; `Err` names what is wrong (`from`
/// says where the text came from).
fn parse_answer(text: &str, wanted: &str, from: &str) -> Result<Reply, CaseError> {
    let broken = |e: String| CaseError::new(CaseErrorKind::Adapter, e);
    let answer: Answer = serde_json::from_str(text).map_err(|e| {
        // Scrubbed before it is cut: a key across the cut would keep its first half.
        let shown: String = crate::secrets::scrub(text).chars().take(120).collect();
        broken(format!("adapter: {from} ({e}): {shown}"))
    })?;
    if answer.id.as_str() != Some(wanted) {
        return Err(broken(format!(
            "adapter: answered id {} for case {wanted}",
            answer.id
        )));
    }
    Ok(Reply {
        output: answer.output,
        raw: answer.raw,
        error: answer.error,
        usage: answer.usage.unwrap_or_default(),
        tool_calls: answer.tool_calls,
        trajectory: None,
        components: answer.components,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An adapter with `env` (`adapter.env`) and `pass_env`, and nothing started.
    fn adapter(env: &[(&str, &str)], pass_env: &[&str]) -> ExecAdapter {
        ExecAdapter {
            command: vec!["w".into()],
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            pass_env: pass_env.iter().map(|v| v.to_string()).collect(),
            cwd: PathBuf::from("."),
            stderr: StderrTo::Stderr {
                shown: "the terminal".into(),
            },
            case_timeout: Duration::from_secs(1),
            max_answer: 1024,
            readers: Arc::default(),
            gateway: std::sync::OnceLock::new(),
            upstreams: Arc::default(),
            max_request_bytes: super::super::gateway::DEFAULT_MAX_REQUEST_BYTES,
        }
    }

    #[test]
    fn a_worker_environment_is_the_allow_list_pass_env_env_and_the_gateway() {
        let adapter = adapter(&[("FROM_CONFIG", "1")], &["MY_SETTING"]);
        let parent = [
            ("PATH", "/bin"),
            ("LC_ALL", "C"),
            ("LC_SECRET_TOKEN", "x"),
            ("MY_SETTING", "on"),
            ("GITHUB_TOKEN", "t"),
            ("OPENAI_API_KEY", "sk-real"),
            ("UNLISTED", "u"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let env = adapter.worker_env(parent, "http://127.0.0.1:1/v1", "evals-token", None);
        let got: Vec<(&str, &str)> = env
            .iter()
            .map(|(k, v)| (k.to_str().unwrap(), v.to_str().unwrap()))
            .filter(|(k, _)| !OFFLINE_DEFAULTS.iter().any(|(d, _)| d == k))
            .collect();
        assert_eq!(
            got,
            [
                ("ANTHROPIC_API_KEY", "evals-token"),
                ("ANTHROPIC_BASE_URL", "http://127.0.0.1:1"),
                ("EVALS_ANSWER_URL", "http://127.0.0.1:1/answer/evals-token"),
                ("EVALS_BASE_URL", "http://127.0.0.1:1/v1"),
                ("FROM_CONFIG", "1"),
                ("GEMINI_API_KEY", "evals-token"),
                ("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:1"),
                ("LC_ALL", "C"),
                ("MY_SETTING", "on"),
                ("OPENAI_API_KEY", "evals-token"),
                ("OPENAI_BASE_URL", "http://127.0.0.1:1/v1"),
                ("PATH", "/bin"),
            ]
        );
    }

    #[test]
    fn a_worker_gets_the_offline_defaults_under_its_config_and_in_replay_the_refusing_proxy() {
        let var = |env: &BTreeMap<OsString, OsString>, k: &str| {
            env.get(&OsString::from(k))
                .map(|v| v.to_str().unwrap().to_string())
        };
        let parent = || {
            [
                ("LANGSMITH_TRACING", "true"),
                ("HTTPS_PROXY", "http://corp:3128"),
            ]
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        };
        // Record: every default, no proxy; evals' own proxy is not inherited.
        let plain = adapter(&[], &[]).worker_env(parent(), "http://127.0.0.1:1/v1", "t", None);
        for (k, v) in OFFLINE_DEFAULTS {
            assert_eq!(var(&plain, k).as_deref(), Some(*v), "{k}");
        }
        assert_eq!(
            var(&plain, "OPENAI_AGENTS_DISABLE_TRACING").as_deref(),
            Some("1")
        );
        assert_eq!(var(&plain, "HTTPS_PROXY"), None);
        // Replay: the gateway's proxy, loopback straight; `adapter.env` and `pass_env` win.
        let proxy = "http://evals:t@127.0.0.1:1";
        let replay = adapter(
            &[("OPENAI_AGENTS_DISABLE_TRACING", "0")],
            &["LANGSMITH_TRACING"],
        )
        .worker_env(parent(), "http://127.0.0.1:1/v1", "t", Some(proxy));
        for k in PROXY_VARS {
            assert_eq!(var(&replay, k).as_deref(), Some(proxy), "{k}");
        }
        for k in ["NO_PROXY", "no_proxy"] {
            assert_eq!(var(&replay, k).as_deref(), Some("127.0.0.1,localhost"));
        }
        assert_eq!(
            var(&replay, "OPENAI_AGENTS_DISABLE_TRACING").as_deref(),
            Some("0")
        );
        assert_eq!(var(&replay, "LANGSMITH_TRACING").as_deref(), Some("true"));
        assert_eq!(
            var(&replay, "LITELLM_LOCAL_MODEL_COST_MAP").as_deref(),
            Some("True")
        );
    }

    #[test]
    fn refused_hosts_are_one_warning_each_naming_their_cases() {
        use super::super::gateway::Refused;
        let r = |host: &str, case: &str, during: bool| Refused {
            host: host.into(),
            case: Some(case.into()),
            during,
        };
        let warnings = refused_warnings(&[
            r("api.openai.com:443", "fake/echo d/a", true),
            r("example.com:80", "fake/echo d/a", true),
            r("api.openai.com:443", "fake/echo d/a", true),
            r("api.openai.com:443", "fake/echo d/b", false),
        ]);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0].starts_with(
                "workers tried to reach api.openai.com:443 during 1 case (fake/echo d/a) and \
                 between cases (after fake/echo d/b) (refused: replay is offline): "
            ),
            "{}",
            warnings[0]
        );
        assert!(warnings[1].starts_with("workers tried to reach example.com:80 during 1 case"));
    }
}
