//! The gateway: an OpenAI-compatible endpoint `evals` serves on 127.0.0.1 for exec adapters.
//!
//! Each worker process gets its own token as `OPENAI_API_KEY`; while a worker is on a case,
//! its token is bound to that case's contender and cassette session. A call is rewritten
//! with the contender's model (and its effort, temperature and max tokens, where set) and
//! sent to the contender's real provider, with the real key, through the cassette layer: an
//! exec adapter's calls are recorded and replayed like any other. Unknown tokens are refused.
//!
//! The program's other APIs (`adapter.upstreams`) are served under
//! `/upstream/<name>/<token>/`: a request there goes to the API's real base URL with its real
//! credential (from `key_env`, put in `header`, never the worker's), through the same
//! cassette session, recorded beside the model's calls in call order; in replay an
//! unexpected or exhausted request, or (when strict) a recorded one never made, errors the
//! case whatever the program makes of it. A case's hand-written `fixtures/` answer an API
//! with no recording.
//!
//! `POST /answer/<token>` (a worker's `EVALS_ANSWER_URL`) takes the worker's answer to the
//! case it is on, off its stdout: once per case, up to `cassettes.max_response_bytes`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

use crate::cassette::{CallError, HttpRequest, Session, Verdict};
use crate::provider::Provider;
use crate::provider::wire::{Api, Call, Forward};
use crate::results::{CaseError, CaseErrorKind, Usage};
use crate::suite::config::Pricing;
use crate::suite::{Case, Contender};

/// What a token is bound to while its worker is on a case.
pub struct Binding {
    pub contender: Contender,
    /// The case the worker is on (an offline provider answers from it: `mock_response`).
    pub case: Case,
    /// The contender's provider: it forwards the call, or answers it.
    pub provider: Arc<dyn Provider>,
    pub session: Arc<Session>,
    pub api_key: Option<String>,
    pub pricing: Option<Pricing>,
    /// Usage and call latency summed over the case's calls.
    pub spent: Arc<Mutex<Spent>>,
    /// The adapter's other APIs (`adapter.upstreams`), shared by the run's cases.
    pub upstreams: Arc<UpstreamSet>,
    /// The case's hand-written answers of those APIs (`<case>/fixtures/`), if it has any.
    pub fixtures: Option<std::path::PathBuf>,
    /// Where an answer posted to `EVALS_ANSWER_URL` goes (the exec adapter's case).
    pub answer: Option<AnswerSlot>,
}

/// What a worker posted to `EVALS_ANSWER_URL`: its answer's text, or why it was refused.
pub type Posted = Result<String, CaseError>;

/// The answer channel of a case on the gateway: the first answer a worker posts to
/// `POST /answer/<token>` while on the case goes to the case's exchange; a second one is
/// refused (409).
pub struct AnswerSlot {
    sender: Mutex<Option<tokio::sync::oneshot::Sender<Posted>>>,
    /// The largest answer taken (`cassettes.max_response_bytes`).
    limit: u64,
}

impl AnswerSlot {
    /// A slot taking answers of up to `limit` bytes, and the end its case waits on.
    pub fn new(limit: u64) -> (AnswerSlot, tokio::sync::oneshot::Receiver<Posted>) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        (
            AnswerSlot {
                sender: Mutex::new(Some(tx)),
                limit,
            },
            rx,
        )
    }
}

/// The adapter's other APIs as the gateway sends to them.
#[derive(Debug, Clone, Default)]
pub struct UpstreamSet {
    /// Each API by name.
    pub apis: indexmap::IndexMap<String, UpstreamApi>,
    /// The config's `upstreams:` (strictness).
    pub config: crate::suite::config::Upstreams,
    /// The stdio MCP servers started for the workers' relays.
    pub stdio: Arc<super::mcp_stdio::Connections>,
}

/// One upstream API: where it is and its credential.
#[derive(Clone)]
pub struct UpstreamApi {
    /// The real base URL, without a trailing `/`.
    pub base_url: String,
    /// The header the credential goes in (lowercase).
    pub header: String,
    /// `key_env` and its value (`None` when it is not set).
    pub key: Option<(String, Option<String>)>,
    /// An MCP server over streamable HTTP or stdio (`kind: mcp`).
    pub mcp: bool,
    /// A stdio MCP server (`command:`): how evals starts it when a request goes live.
    pub stdio: Option<super::mcp_stdio::Launch>,
}

impl std::fmt::Debug for UpstreamApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamApi")
            .field("base_url", &self.base_url)
            .field("header", &self.header)
            .finish_non_exhaustive()
    }
}

/// What a case's calls through the gateway cost.
#[derive(Debug, Clone, Default)]
pub struct Spent {
    pub usage: Usage,
    pub latency_s: f64,
    pub calls: usize,
    /// The first call that failed below the gateway (transport, cassette miss): the case's
    /// error, whatever the adapter makes of the failed call.
    pub error: Option<CaseError>,
    /// The first call cut at the token limit, said for the reader.
    pub truncated: Option<String>,
    /// The words of the first call the model refused (`message.refusal`).
    pub refusal: Option<String>,
    /// The tool calls in the responses the worker received, in order; `None` until a
    /// response of a shape [`crate::results::ToolCall::observed_in`] reads.
    pub tool_calls: Option<Vec<crate::results::ToolCall>>,
    /// The tools MCP servers ran for the worker (`tools/call` requests answered), in order.
    pub mcp_tool_calls: Vec<crate::results::ToolCall>,
    /// Every call the worker made through the gateway, in order: the case's trajectory.
    pub trajectory: Vec<crate::results::Step>,
    /// The hosts (`host:port`) the worker tried to reach through the gateway's proxy in
    /// replay, refused, each once, in order.
    pub offline: Vec<String>,
}

impl Spent {
    /// A model call of the trajectory: to `url` (the forwarded request's, whose path and
    /// query it names; else the gateway's `path`), answered with `status`.
    fn model_step(&mut self, b: &Binding, url: Option<&str>, path: &str, status: Option<u16>) {
        let (path, query) = match url.map(path_of) {
            Some((path, query)) => (path, query),
            None => (path.to_string(), Default::default()),
        };
        self.trajectory.push(crate::results::Step {
            kind: crate::results::StepKind::Model,
            name: b.contender.id().to_string(),
            model: Some(b.contender.info.model.clone()),
            method: "POST".into(),
            path,
            query,
            body: None,
            status,
        });
    }
}

/// The path and the query of a URL (`https://host/v1beta/models/m:x?alt=sse`).
fn path_of(url: &str) -> (String, std::collections::BTreeMap<String, String>) {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let rest = rest.find('/').map_or("/", |at| &rest[at..]);
    let rest = rest.split_once('#').map_or(rest, |(r, _)| r);
    match rest.split_once('?') {
        Some((path, query)) => (
            path.to_string(),
            crate::results::trajectory::query_map(query),
        ),
        None => (rest.to_string(), Default::default()),
    }
}

/// The contender's request as the worker sent it: its body's text kept byte for byte but
/// for what the provider changed on `sent` (the worker's body, parsed).
fn as_sent(mut forward: HttpRequest, text: &str, sent: &Value) -> HttpRequest {
    if let Some(body) = &forward.body {
        forward.raw = Some(super::splice::splice(text, sent, body));
    }
    forward
}

struct Bindings {
    by_token: Mutex<HashMap<String, Arc<Binding>>>,
    /// The largest request body taken from a worker (`adapter.max_request_bytes`).
    max_request_bytes: u64,
    /// Where the gateway listens: a proxied request to it is served, not refused.
    addr: SocketAddr,
    /// Each token's last case (`fake/echo d/a`), kept after it is unbound: an attempt a
    /// worker makes between cases (a tracer flushing) is named after it.
    last_case: Mutex<HashMap<String, String>>,
    /// The workers' attempts to reach other hosts through the gateway's proxy (replay).
    refused: Mutex<Vec<Refused>>,
}

/// A worker's attempt to reach a host other than the gateway, refused (replay).
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    /// `host:port`.
    pub host: String,
    /// The case the worker was on (`fake/echo d/a`), or its last one.
    pub case: Option<String>,
    /// Whether the worker was on that case then (not between cases).
    pub during: bool,
}

/// The largest request body a worker may send by default (`adapter.max_request_bytes`):
/// 32 MiB, room for images and long documents. A larger one errors its case, named.
pub const DEFAULT_MAX_REQUEST_BYTES: u64 = 32 * 1024 * 1024;

/// A running gateway; dropped with the run's runtime.
pub struct Gateway {
    pub addr: SocketAddr,
    bindings: Arc<Bindings>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway").field("addr", &self.addr).finish()
    }
}

impl Gateway {
    /// Serves on an ephemeral port of 127.0.0.1 (loopback only), taking request bodies of
    /// up to `max_request_bytes` (`adapter.max_request_bytes`).
    pub async fn start(max_request_bytes: u64) -> std::io::Result<Gateway> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let bindings = Arc::new(Bindings {
            by_token: Mutex::default(),
            max_request_bytes,
            addr,
            last_case: Mutex::default(),
            refused: Mutex::default(),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(chat))
            .route("/chat/completions", post(chat))
            .route("/v1/responses", post(responses))
            .route("/responses", post(responses))
            .route("/v1/embeddings", post(embeddings))
            .route("/embeddings", post(embeddings))
            .route("/v1/models", axum::routing::get(models))
            .route("/models", axum::routing::get(models))
            .route("/v1/messages", post(messages))
            .route("/v1beta/models/{call}", post(gemini))
            // google-genai asks `v1` unless told `GOOGLE_GENAI_API_VERSION=beta`.
            .route("/v1/models/{call}", post(gemini))
            .route("/upstream/{*rest}", axum::routing::any(upstream))
            .route("/answer/{token}", post(answer))
            .fallback(unknown_endpoint)
            // The body is read (and bounded) once, by `limit_body`; axum's own 2 MiB default
            // would answer a bare 413 that no case hears of.
            .layer(axum::middleware::from_fn_with_state(
                bindings.clone(),
                limit_body,
            ))
            .layer(axum::extract::DefaultBodyLimit::disable())
            // A proxy's request (`CONNECT`, or an absolute URL) before anything else.
            .layer(axum::middleware::from_fn_with_state(
                bindings.clone(),
                refuse_proxying,
            ))
            .with_state(bindings.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Gateway { addr, bindings })
    }

    /// `http://127.0.0.1:PORT/v1`, handed to workers as `OPENAI_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The proxy URL a worker's HTTP clients are pointed at in replay, its token as the
    /// password (`HTTPS_PROXY`): every attempt to reach another host is refused and named
    /// on the worker's case.
    pub fn proxy_url(&self, token: &str) -> String {
        format!("http://evals:{token}@{}", self.addr)
    }

    /// The attempts to reach other hosts refused since the last call, in order.
    pub fn take_refused(&self) -> Vec<Refused> {
        std::mem::take(
            &mut *self
                .bindings
                .refused
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    pub fn bind(&self, token: &str, binding: Binding) {
        self.bindings
            .last_case
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(token.to_string(), binding.label());
        let mut map = self
            .bindings
            .by_token
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.insert(token.to_string(), Arc::new(binding));
    }

    pub fn unbind(&self, token: &str) {
        let mut map = self
            .bindings
            .by_token
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.remove(token);
    }
}

fn error(status: StatusCode, message: &str) -> Response {
    (
        status,
        // Final: the SDK must not retry what evals already retried (or cannot answer).
        [(SHOULD_RETRY, "false")],
        axum::Json(json!({"error": {"message": message, "type": "evals_gateway"}})),
    )
        .into_response()
}

async fn chat(
    State(bindings): State<Arc<Bindings>>,
    headers: HeaderMap,
    uri: axum::http::Uri,
    body: String,
) -> Response {
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    let binding = {
        let map = bindings
            .by_token
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.get(token).cloned()
    };
    let Some(b) = binding else {
        return error(
            StatusCode::UNAUTHORIZED,
            "unknown token: use the OPENAI_API_KEY evals gave this worker, while it is on a case",
        );
    };
    let Ok(request) = serde_json::from_str::<Value>(&body) else {
        return error(StatusCode::BAD_REQUEST, "the body is not JSON");
    };
    let call = Call {
        api: Api::ChatCompletions,
        stream: request.get("stream") == Some(&Value::Bool(true)),
        body: request.clone(),
        headers: vec![],
    };
    let forwarded = b
        .provider
        .sends()
        .then(|| {
            b.provider
                .forward_call(&b.contender, &call, b.api_key.as_deref())
        })
        .flatten();
    if forwarded.is_none() && b.provider.api() != Api::ChatCompletions {
        // A provider speaking another API the gateway serves is never translated into.
        return mismatch(&b, Api::ChatCompletions);
    }
    // A forwarded response is judged here; a translated one was judged (and read) by its
    // provider already, and is a chat completion by construction.
    let mut url = None;
    let (result, accept) = match forwarded {
        Some(Forward {
            request, accept, ..
        }) => {
            url = Some(request.url.clone());
            (
                b.session
                    .send(as_sent(request, &body, &call.body), accept)
                    .await,
                accept,
            )
        }
        None => (
            translated_response(&b, &request).await,
            crate::cassette::any_2xx as crate::cassette::Accept,
        ),
    };
    let mut spent = b
        .spent
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    spent.calls += 1;
    spent.model_step(
        &b,
        url.as_deref(),
        uri.path(),
        result
            .as_ref()
            .ok()
            .map(|r: &crate::cassette::HttpResponse| r.status),
    );
    match result {
        Ok(resp) => {
            spent.latency_s += resp.latency.as_secs_f64();
            if !(200..300).contains(&resp.status) {
                // A rejected key, a bad request, an exhausted rate limit: a failure of the
                // call, not an answer of the model. The case errors, whatever the adapter
                // makes of it (the adapter still gets the response, as it would in production).
                let message = crate::provider::status_error(
                    &b.contender,
                    &resp,
                    b.provider.key_env(&b.contender).as_deref(),
                );
                spent
                    .error
                    .get_or_insert_with(|| CaseError::new(CaseErrorKind::Transport, message));
            } else if let Verdict::Failure { reason, .. } = accept(&resp) {
                // A 200 holding garbage or an error object: not an answer either (and not
                // recorded). The adapter gets it as it came.
                spent.error.get_or_insert_with(|| {
                    CaseError::new(
                        CaseErrorKind::Transport,
                        format!("{}: {reason}", b.contender.id()),
                    )
                });
            }
            let usage =
                crate::provider::priced(crate::provider::usage_of(&resp), b.pricing.as_ref());
            // A call cut at the token limit: whatever the adapter makes of it, the reader
            // is told (and the leaderboard counts it truncated).
            if spent.refusal.is_none() {
                spent.refusal = crate::provider::refusal_of(&resp.body);
            }
            if spent.truncated.is_none() {
                spent.truncated = crate::provider::truncation_of(
                    &resp.body,
                    b.contender.info.max_tokens,
                    "",
                    &usage,
                );
            }
            spent.usage.add(&usage);
            // Observed in what the worker received, never inferred from its answer.
            if let Some(calls) = crate::results::ToolCall::observed_in(&resp.body) {
                spent.tool_calls.get_or_insert_with(Vec::new).extend(calls);
            }
            drop(spent);
            passed_on(resp)
        }
        Err(e) => {
            let message = e.to_string();
            spent.error.get_or_insert_with(|| CaseError::from(e));
            error(StatusCode::BAD_GATEWAY, &message)
        }
    }
}

/// A provider that does not speak the OpenAI shape itself (`fake`, `mock`, one of yours):
/// the call's messages asked of it as the prompt adapter would ask them, through the case's
/// cassette session, and its answer sent back OpenAI-shaped.
async fn translated_response(
    b: &Binding,
    request: &Value,
) -> Result<crate::cassette::HttpResponse, CallError> {
    let (contender, case) = (&b.contender, &b.case);
    let messages = request
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let text_of = |role: &str| {
        messages
            .iter()
            .rev()
            .find(|m| m.get("role").and_then(Value::as_str) == Some(role))
            .and_then(|m| m.get("content").and_then(Value::as_str))
            .map(str::to_string)
    };
    let req = crate::provider::ChatRequest {
        system: text_of("system"),
        user: text_of("user").unwrap_or_default(),
        json: false,
        ..Default::default()
    };
    let completion = crate::provider::complete(
        b.provider.as_ref(),
        contender,
        case,
        &req,
        b.api_key.as_deref(),
        b.pricing.as_ref(),
        &b.session,
    )
    .await?;
    Ok(crate::cassette::HttpResponse {
        status: 200,
        headers: vec![],
        body: json!({
            "object": "chat.completion",
            "model": contender.info.model,
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": completion.text}}],
            "usage": {
                "prompt_tokens": completion.usage.input_tokens,
                "completion_tokens": completion.usage.output_tokens,
                "cost": completion.usage.cost_usd,
            },
        }),
        latency: std::time::Duration::from_secs_f64(completion.latency_s.max(0.0)),
        raw: None,
    })
}

/// The header both official SDKs (OpenAI's, Anthropic's) honour before retrying: a failure
/// the gateway passes on is final (its retries ran below the cassette layer), and a replay
/// miss never succeeds on a second try, so one missed case is one request.
const SHOULD_RETRY: &str = "x-should-retry";

impl Binding {
    /// The contender and the case, as a warning names them: `fake/echo d/a`.
    fn label(&self) -> String {
        format!("{} {}", self.contender.id(), self.case.key())
    }

    /// The case's [`Spent`], locked.
    pub(crate) fn spent_lock(&self) -> std::sync::MutexGuard<'_, Spent> {
        self.spent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Reads a request's body whole, up to `adapter.max_request_bytes`, before any handler: a
/// larger one (by its `Content-Length`, or as it streams) is refused with a 413 naming the
/// limit and the key, and errors the case of the worker that sent it (never a 0 for the
/// model: the case never reached it).
async fn limit_body(
    State(bindings): State<Arc<Bindings>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    use axum::body::HttpBody as _;
    let limit = bindings.max_request_bytes;
    let (parts, mut body) = req.into_parts();
    let over = |size: Option<u64>| {
        let size = match size {
            Some(n) => crate::text::human_bytes(n),
            None => format!("over {}", crate::text::human_bytes(limit)),
        };
        let message = format!(
            "the adapter sent {} {} a request body of {size}, over adapter.max_request_bytes \
             ({}): raise adapter.max_request_bytes in the config if this is expected",
            parts.method,
            parts.uri.path(),
            crate::text::human_bytes(limit)
        );
        if let Some(b) = binding_of(&bindings, &token_in(&parts.headers, &parts.uri)) {
            b.session.mark_failed();
            let mut spent = b.spent_lock();
            spent.calls += 1;
            spent.error.get_or_insert_with(|| {
                CaseError::new(
                    CaseErrorKind::TooLarge,
                    format!("{}: {message}", b.contender.id()),
                )
            });
        }
        error(StatusCode::PAYLOAD_TOO_LARGE, &message)
    };
    let declared = parts
        .headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok());
    if let Some(n) = declared.filter(|&n| n > limit) {
        return over(Some(n));
    }
    let mut bytes = Vec::with_capacity(declared.unwrap_or(0) as usize);
    while let Some(frame) =
        std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await
    {
        let Ok(frame) = frame else {
            return error(
                StatusCode::BAD_REQUEST,
                "the request body could not be read",
            );
        };
        if let Ok(data) = frame.into_data() {
            if (bytes.len() + data.len()) as u64 > limit {
                return over(None);
            }
            bytes.extend_from_slice(&data);
        }
    }
    next.run(axum::extract::Request::from_parts(
        parts,
        axum::body::Body::from(bytes),
    ))
    .await
}

/// A request made to the gateway as to a proxy (`HTTPS_PROXY`, set for workers in
/// replay): a `CONNECT` tunnel or an absolute URL to another host. Replay is offline: it
/// is refused (403, final) and the host named on the worker's case; one to the gateway
/// itself (a client that proxies loopback too) is served as if sent straight.
async fn refuse_proxying(
    State(bindings): State<Arc<Bindings>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let uri = req.uri();
    let host = match (req.method() == axum::http::Method::CONNECT, uri.authority()) {
        (true, Some(a)) => a.to_string(),
        (false, Some(a)) if uri.scheme().is_some() => {
            let port = a.port_u16().unwrap_or(match uri.scheme_str() {
                Some("https") => 443,
                _ => 80,
            });
            let own = port == bindings.addr.port()
                && matches!(a.host(), "127.0.0.1" | "localhost" | "[::1]");
            if own {
                return next.run(req).await;
            }
            format!("{}:{port}", a.host())
        }
        (true, None) => "an unnamed host".to_string(),
        (false, _) => return next.run(req).await,
    };
    let token = proxy_token(req.headers());
    let refused = match binding_of(&bindings, &token) {
        Some(b) => {
            let mut spent = b.spent_lock();
            if !spent.offline.contains(&host) {
                spent.offline.push(host.clone());
            }
            Refused {
                host: host.clone(),
                case: Some(b.label()),
                during: true,
            }
        }
        None => Refused {
            host: host.clone(),
            case: bindings
                .last_case
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get(&token)
                .cloned(),
            during: false,
        },
    };
    bindings
        .refused
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(refused);
    (
        StatusCode::FORBIDDEN,
        [(SHOULD_RETRY, "false"), ("connection", "close")],
        format!(
            "evals: replay is offline: this worker tried to reach {host}, which only a \
             recording run may; the gateway ({}) is the one address that answers\n",
            bindings.addr
        ),
    )
        .into_response()
}

/// The worker's token in a proxy's `Proxy-Authorization: Basic` (from the proxy URL's
/// user and password, `evals:<token>`).
fn proxy_token(headers: &HeaderMap) -> String {
    use base64::Engine as _;
    headers
        .get("proxy-authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|b| {
            base64::engine::general_purpose::STANDARD
                .decode(b.trim())
                .ok()
        })
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|pair| {
            let (user, password) = pair.split_once(':').unwrap_or((&pair, ""));
            [password, user]
                .into_iter()
                .find(|t| t.starts_with("evals-"))
                .map(str::to_string)
        })
        .unwrap_or_default()
}

/// The token of a request to the gateway: in the path of an upstream's (or its
/// `x-evals-token` header), else where the model APIs' SDKs put it.
fn token_in(headers: &HeaderMap, uri: &axum::http::Uri) -> String {
    match uri.path().strip_prefix("/upstream/") {
        Some(rest) => super::upstreams::split(rest, headers).1.to_string(),
        None => token_of(headers, uri),
    }
}

/// `/upstream/<name>/<token>/<path>`: a call to one of the adapter's other APIs.
async fn upstream(
    State(bindings): State<Arc<Bindings>>,
    method: axum::http::Method,
    axum::extract::Path(rest): axum::extract::Path<String>,
    headers: HeaderMap,
    uri: axum::http::Uri,
    body: axum::body::Bytes,
) -> Response {
    let (name, token, path) = super::upstreams::split(&rest, &headers);
    let Some(b) = binding_of(&bindings, token) else {
        return error(
            StatusCode::UNAUTHORIZED,
            "unknown token: call the upstream at the EVALS_UPSTREAM_<NAME>_URL evals gave this worker, while it is on a case",
        );
    };
    super::upstreams::serve(
        b,
        name,
        method.as_str(),
        &path,
        &headers,
        uri.query(),
        &body,
    )
    .await
}

/// `POST /answer/<token>` (`EVALS_ANSWER_URL`): a worker's answer to the case it is on,
/// off its stdout, so whatever its libraries print there is never taken for it.
async fn answer(
    State(bindings): State<Arc<Bindings>>,
    axum::extract::Path(token): axum::extract::Path<String>,
    body: axum::body::Bytes,
) -> Response {
    let slot = binding_of(&bindings, &token);
    let Some(slot) = slot.as_ref().and_then(|b| b.answer.as_ref()) else {
        return error(
            StatusCode::CONFLICT,
            "no case is waiting for this answer: post the answer to the EVALS_ANSWER_URL evals gave this worker, once per case, before reading the next case",
        );
    };
    let Some(sender) = slot
        .sender
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take()
    else {
        return error(
            StatusCode::CONFLICT,
            "this case was answered already: post one answer per case",
        );
    };
    let (status, posted) = if body.len() as u64 > slot.limit {
        let message = format!(
            "adapter: the answer it posted to EVALS_ANSWER_URL is {}, over the limit on a \
             worker's answer ({}, cassettes.max_response_bytes); raise \
             cassettes.max_response_bytes in the config if this is expected",
            crate::text::human_bytes(body.len() as u64),
            crate::text::human_bytes(slot.limit)
        );
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            Err(CaseError::new(CaseErrorKind::TooLarge, message)),
        )
    } else {
        match String::from_utf8(body.to_vec()) {
            Ok(text) => (StatusCode::OK, Ok(text)),
            Err(_) => (
                StatusCode::BAD_REQUEST,
                Err(CaseError::new(
                    CaseErrorKind::Adapter,
                    "adapter: the answer it posted to EVALS_ANSWER_URL is not UTF-8: post the protocol's JSON object",
                )),
            ),
        }
    };
    let message = posted.as_ref().err().map(|e| e.message.clone());
    // The case may have ended (a timeout) as the answer came: then nobody hears it.
    let _ = sender.send(posted);
    match message {
        None => (status, axum::Json(json!({"received": true}))).into_response(),
        Some(m) => error(status, &m),
    }
}

/// A response marked final when it is a failure (not a 2xx).
fn final_failure(mut resp: Response) -> Response {
    if !resp.status().is_success() {
        resp.headers_mut()
            .insert(SHOULD_RETRY, axum::http::HeaderValue::from_static("false"));
    }
    resp
}

/// Every endpoint the gateway serves, for the 404 of any other.
const ENDPOINTS: &[&str] = &[
    "POST /v1/chat/completions",
    "POST /v1/responses",
    "POST /v1/embeddings",
    "GET /v1/models",
    "POST /v1/messages",
    "POST /v1beta/models/{model}:generateContent",
    "POST /v1beta/models/{model}:streamGenerateContent",
    "POST /v1/models/{model}:generateContent",
    "POST /v1/models/{model}:streamGenerateContent",
];

/// The token a call carries, however its SDK sends it: `Authorization: Bearer` (OpenAI,
/// some Anthropic versions), `x-api-key` (Anthropic), `x-goog-api-key` (Gemini), or a
/// `?key=` query (an old Gemini client).
fn token_of(headers: &HeaderMap, uri: &axum::http::Uri) -> String {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    header("authorization")
        .and_then(|v| v.strip_prefix("Bearer "))
        .or_else(|| header("x-api-key"))
        .or_else(|| header("x-goog-api-key"))
        .map(str::to_string)
        .or_else(|| {
            uri.query()?
                .split('&')
                .find_map(|kv| kv.strip_prefix("key="))
                .map(str::to_string)
        })
        .unwrap_or_default()
}

fn binding_of(bindings: &Bindings, token: &str) -> Option<Arc<Binding>> {
    let map = bindings
        .by_token
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    map.get(token).cloned()
}

/// An error in the shape the caller's SDK reads (so it raises with the message), final.
fn api_error(api: Api, status: StatusCode, message: &str) -> Response {
    let body = match api {
        Api::AnthropicMessages => json!({
            "type": "error",
            "error": {"type": "evals_gateway", "message": message},
        }),
        Api::Gemini => json!({
            "error": {"code": status.as_u16(), "message": message, "status": "EVALS_GATEWAY"},
        }),
        _ => json!({"error": {"message": message, "type": "evals_gateway"}}),
    };
    (status, [(SHOULD_RETRY, "false")], axum::Json(body)).into_response()
}

/// A call's case error, once (the first failure of a case is its error).
fn fail_case(b: &Binding, message: String) {
    let mut spent = b
        .spent
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    spent.calls += 1;
    spent
        .error
        .get_or_insert_with(|| CaseError::new(CaseErrorKind::Transport, message));
}

async fn responses(
    State(bindings): State<Arc<Bindings>>,
    headers: HeaderMap,
    uri: axum::http::Uri,
    body: String,
) -> Response {
    serve(&bindings, Api::Responses, None, &headers, &uri, &body).await
}

async fn embeddings(
    State(bindings): State<Arc<Bindings>>,
    headers: HeaderMap,
    uri: axum::http::Uri,
    body: String,
) -> Response {
    serve(&bindings, Api::Embeddings, None, &headers, &uri, &body).await
}

async fn messages(
    State(bindings): State<Arc<Bindings>>,
    headers: HeaderMap,
    uri: axum::http::Uri,
    body: String,
) -> Response {
    serve(
        &bindings,
        Api::AnthropicMessages,
        None,
        &headers,
        &uri,
        &body,
    )
    .await
}

/// `POST /v1beta/models/{model}:generateContent` or `:streamGenerateContent`: the model in
/// the path is the worker's, replaced by the contender's like any other.
async fn gemini(
    State(bindings): State<Arc<Bindings>>,
    axum::extract::Path(call): axum::extract::Path<String>,
    headers: HeaderMap,
    uri: axum::http::Uri,
    body: String,
) -> Response {
    let stream = match call.rsplit_once(':').map(|(_, method)| method) {
        Some("generateContent") => false,
        Some("streamGenerateContent") => true,
        _ => return unknown(&bindings, &headers, &uri, "POST").await,
    };
    serve(&bindings, Api::Gemini, Some(stream), &headers, &uri, &body).await
}

/// `GET /v1/models`: the contender's model, the one model a worker on a case can ask (any
/// name it sends is replaced by it). Answered here: nothing to record.
async fn models(
    State(bindings): State<Arc<Bindings>>,
    headers: HeaderMap,
    uri: axum::http::Uri,
) -> Response {
    let Some(b) = binding_of(&bindings, &token_of(&headers, &uri)) else {
        return api_error(
            Api::ChatCompletions,
            StatusCode::UNAUTHORIZED,
            UNKNOWN_TOKEN,
        );
    };
    axum::Json(json!({
        "object": "list",
        "data": [{
            "id": b.contender.info.model,
            "object": "model",
            "created": 0,
            "owned_by": b.contender.info.provider,
        }],
    }))
    .into_response()
}

const UNKNOWN_TOKEN: &str = "unknown token: use the key evals gave this worker (OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY), while it is on a case";

async fn unknown_endpoint(
    State(bindings): State<Arc<Bindings>>,
    method: axum::http::Method,
    headers: HeaderMap,
    uri: axum::http::Uri,
) -> Response {
    unknown(&bindings, &headers, &uri, method.as_str()).await
}

/// Any other path: a JSON 404 naming the endpoints served, and an error of the case (an
/// SDK's call evals cannot serve says nothing about the model).
async fn unknown(
    bindings: &Bindings,
    headers: &HeaderMap,
    uri: &axum::http::Uri,
    method: &str,
) -> Response {
    let message = format!(
        "the evals gateway does not serve {method} {}; it serves {}",
        uri.path(),
        ENDPOINTS.join(", ")
    );
    if let Some(b) = binding_of(bindings, &token_of(headers, uri)) {
        fail_case(
            &b,
            format!("{}: adapter called {message}", b.contender.id()),
        );
    }
    api_error(Api::ChatCompletions, StatusCode::NOT_FOUND, &message)
}

/// A worker called `api`, which the contender's provider does not speak: an API-shaped
/// error naming both, and an error of the case (never a 0 for the model).
fn mismatch(b: &Binding, api: Api) -> Response {
    let theirs = b.provider.api();
    let message = format!(
        "{} speaks the {} ({}), but this worker called the {} ({}); the gateway does not translate between them: call the contender's API from the adapter, or run it with contenders whose provider speaks the {}",
        b.contender.id(),
        theirs.name(),
        theirs.endpoint(),
        api.name(),
        api.endpoint(),
        api.name()
    );
    fail_case(b, message.clone());
    api_error(api, StatusCode::BAD_REQUEST, &message)
}

/// A call in `api` (`stream`: Gemini's, from its path): forwarded by the contender's
/// provider through the case's cassette session, or refused naming both APIs when the
/// provider speaks another.
async fn serve(
    bindings: &Bindings,
    api: Api,
    stream: Option<bool>,
    headers: &HeaderMap,
    uri: &axum::http::Uri,
    body: &str,
) -> Response {
    let Some(b) = binding_of(bindings, &token_of(headers, uri)) else {
        return api_error(api, StatusCode::UNAUTHORIZED, UNKNOWN_TOKEN);
    };
    let Ok(parsed) = serde_json::from_str::<Value>(body) else {
        return api_error(api, StatusCode::BAD_REQUEST, "the body is not JSON");
    };
    let call = Call {
        api,
        stream: stream.unwrap_or_else(|| parsed.get("stream") == Some(&Value::Bool(true))),
        body: parsed,
        headers: ["anthropic-version", "anthropic-beta"]
            .iter()
            .filter_map(|k| {
                let v = headers.get(*k)?.to_str().ok()?;
                Some((k.to_string(), v.to_string()))
            })
            .collect(),
    };
    let forward = b.provider.sends().then(|| {
        b.provider
            .forward_call(&b.contender, &call, b.api_key.as_deref())
    });
    let Some(Forward {
        request,
        accept,
        usage,
    }) = forward.flatten()
    else {
        return mismatch(&b, api);
    };
    let url = request.url.clone();
    let result = b
        .session
        .send(as_sent(request, body, &call.body), accept)
        .await;
    let mut spent = b
        .spent
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    spent.calls += 1;
    spent.model_step(
        &b,
        Some(&url),
        uri.path(),
        result.as_ref().ok().map(|r| r.status),
    );
    let resp = match result {
        Ok(resp) => resp,
        Err(e) => {
            let message = e.to_string();
            spent.error.get_or_insert_with(|| CaseError::from(e));
            return api_error(api, StatusCode::BAD_GATEWAY, &message);
        }
    };
    spent.latency_s += resp.latency.as_secs_f64();
    let failure = if !(200..300).contains(&resp.status) {
        crate::provider::refuse_failure(
            &b.contender,
            &resp,
            accept,
            b.provider.key_env(&b.contender).as_deref(),
        )
        .err()
        .map(|e| e.to_string())
    } else if let Verdict::Failure { reason, .. } = accept(&resp) {
        Some(format!("{}: {reason}", b.contender.id()))
    } else {
        None
    };
    if let Some(message) = failure {
        // Not an answer of the model: the case errors, whatever the adapter makes of it
        // (it still gets the response, as it would in production).
        spent
            .error
            .get_or_insert_with(|| CaseError::new(CaseErrorKind::Transport, message));
    }
    spent.usage.add(&crate::provider::priced(
        usage(&resp.body),
        b.pricing.as_ref(),
    ));
    // Observed in what the worker received (a Responses, Anthropic or Gemini body), as for
    // chat completions.
    if let Some(calls) = crate::results::ToolCall::observed_in(&resp.body) {
        spent.tool_calls.get_or_insert_with(Vec::new).extend(calls);
    }
    drop(spent);
    passed_on(resp)
}

/// A response as the worker gets it: its status, its content type, and its body's bytes
/// as they came ([`crate::cassette::HttpResponse::body_bytes`]: live, or as recorded; a
/// stream with its content type, event for event), final when it is a failure.
fn passed_on(resp: crate::cassette::HttpResponse) -> Response {
    let status = StatusCode::from_u16(resp.status).unwrap_or(StatusCode::BAD_GATEWAY);
    let given = resp
        .headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        .map(|(_, v)| v.clone());
    let content_type = if crate::provider::wire::is_stream(&resp.body) {
        given
            .filter(|t| t.contains("event-stream"))
            .unwrap_or_else(|| "text/event-stream".into())
    } else {
        given.unwrap_or_else(|| "application/json".into())
    };
    let content_type = axum::http::HeaderValue::from_str(&content_type)
        .unwrap_or(axum::http::HeaderValue::from_static("application/json"));
    final_failure(
        (
            status,
            [(axum::http::header::CONTENT_TYPE, content_type)],
            resp.body_bytes(),
        )
            .into_response(),
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use serde_json::{Value, json};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;
    use crate::cassette::{
        Accept, CassetteOptions, HttpRequest, HttpResponse, Mode, Route, Transport, Upstream,
        UpstreamFuture,
    };
    use crate::provider::{ChatRequest, Completion, Registry};
    use crate::suite::config::Pricing;

    /// A provider with a wire format of its own (`{"question"}` in, `{"answer"}` out) and
    /// no OpenAI shape to forward.
    struct Atlas;

    impl Provider for Atlas {
        fn sends(&self) -> bool {
            true
        }

        fn build_request(
            &self,
            c: &Contender,
            req: &ChatRequest,
            _key: Option<&str>,
        ) -> Result<HttpRequest, CallError> {
            Ok(HttpRequest {
                method: "POST".into(),
                url: "http://atlas.test/lookup".into(),
                headers: vec![],
                body: Some(json!({"model": c.info.model, "question": req.user})),
                raw: None,
            })
        }

        fn read_response(
            &self,
            _: &Contender,
            resp: crate::cassette::HttpResponse,
            _: Option<&Pricing>,
        ) -> Result<Completion, CallError> {
            Ok(Completion {
                text: resp.body["answer"].as_str().unwrap_or_default().into(),
                usage: Usage {
                    input_tokens: Some(3),
                    output_tokens: Some(1),
                    cost_usd: Some(0.5),
                    ..Usage::default()
                },
                latency_s: 0.25,
                ..Completion::default()
            })
        }
    }

    /// Answers every request with Paris, keeping what it was sent.
    #[derive(Default)]
    struct Server {
        sent: Mutex<Vec<HttpRequest>>,
    }

    impl Upstream for Server {
        fn send<'a>(&'a self, req: HttpRequest, _: &'a Route, _: Accept) -> UpstreamFuture<'a> {
            self.sent.lock().unwrap().push(req);
            Box::pin(async {
                Ok(HttpResponse {
                    status: 200,
                    headers: vec![],
                    body: json!({"answer": "Paris"}),
                    latency: std::time::Duration::from_millis(250),
                    raw: None,
                })
            })
        }
    }

    async fn post(gateway: &Gateway, token: &str, body: &Value) -> Value {
        let body = body.to_string();
        let mut stream = tokio::net::TcpStream::connect(gateway.addr).await.unwrap();
        let head = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {token}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(body.as_bytes()).await.unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).await.unwrap();
        let (_, body) = text.split_once("\r\n\r\n").unwrap();
        serde_json::from_str(body).unwrap()
    }

    /// The world-atlas fixture's contender (of the `atlas` provider) and its first case.
    fn world_atlas() -> (Contender, Case) {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let suite = crate::suite::Suite::load(
            &root.join("fixtures/world-atlas/evals/.llm-evals.config.yml"),
            root,
        )
        .unwrap();
        let mut providers = Registry::default();
        providers.register("atlas", Atlas);
        let lineup = crate::suite::lineup::expand(&suite.config, &Default::default(), &providers);
        (
            lineup.contenders[0].clone(),
            suite.cases.cases.get(0).unwrap(),
        )
    }

    /// The case's cassette session on `transport`.
    fn session_of(transport: &Transport, contender: &Contender, case: &Case) -> Session {
        transport
            .session(
                &crate::runner::cassette_key(contender, case),
                crate::cassette::SessionMeta {
                    case: case.key(),
                    contender: (&contender.info).into(),
                    hint: String::new(),
                    route: Route::default(),
                    base_url: String::new(),
                },
            )
            .unwrap()
    }

    #[tokio::test]
    async fn a_call_to_a_provider_that_does_not_speak_openai_is_translated_both_ways() {
        let (contender, case) = world_atlas();
        let server = Arc::new(Server::default());
        let transport = Transport::new(Mode::Live, CassetteOptions::default(), server.clone());
        let session = session_of(&transport, &contender, &case);
        let gateway = Gateway::start(DEFAULT_MAX_REQUEST_BYTES).await.unwrap();
        let spent = Arc::new(Mutex::new(Spent::default()));
        gateway.bind(
            "tok",
            Binding {
                contender: contender.clone(),
                case,
                provider: Arc::new(Atlas),
                session: Arc::new(session),
                api_key: None,
                pricing: None,
                spent: spent.clone(),
                upstreams: Arc::default(),
                fixtures: None,
                answer: None,
            },
        );
        let answer = post(
            &gateway,
            "tok",
            &json!({"model": "anything", "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "The capital of France?"},
            ]}),
        )
        .await;
        assert_eq!(
            answer["choices"][0]["message"]["content"], "Paris",
            "{answer}"
        );
        assert_eq!(answer["usage"]["prompt_tokens"], 3);
        // The provider's own request, from the call's last user message.
        let sent = server.sent.lock().unwrap().clone();
        assert_eq!(sent.len(), 1);
        assert_eq!(
            sent[0].body,
            Some(json!({"model": contender.info.model, "question": "The capital of France?"}))
        );
        let spent = spent.lock().unwrap().clone();
        assert_eq!((spent.calls, spent.error), (1, None));
        assert_eq!(spent.usage.cost_usd, Some(0.5));
        assert!((spent.latency_s - 0.25).abs() < 1e-9);
    }

    #[tokio::test]
    async fn an_answer_is_posted_once_per_case_under_the_limit_and_never_without_a_case() {
        let (contender, case) = world_atlas();
        let transport = Transport::new(
            Mode::Live,
            CassetteOptions::default(),
            Arc::new(Server::default()),
        );
        let gateway = Gateway::start(DEFAULT_MAX_REQUEST_BYTES).await.unwrap();
        let bind = |token: &str, limit: u64| {
            let (slot, posted) = AnswerSlot::new(limit);
            gateway.bind(
                token,
                Binding {
                    contender: contender.clone(),
                    case: case.clone(),
                    provider: Arc::new(Atlas),
                    session: Arc::new(session_of(&transport, &contender, &case)),
                    api_key: None,
                    pricing: None,
                    spent: Arc::default(),
                    upstreams: Arc::default(),
                    fixtures: None,
                    answer: Some(slot),
                },
            );
            posted
        };
        let answer = br#"{"id": "d/a", "output": 1}"#;
        let posted = bind("tok", 1024);
        let (status, _, _) = raw(&gateway, "POST", "/answer/tok", "application/json", answer).await;
        assert_eq!(status, 200);
        assert_eq!(
            posted.await.unwrap().unwrap(),
            String::from_utf8_lossy(answer)
        );
        // A second answer to the same case, and one from a token on no case: refused.
        let (status, _, body) = raw(&gateway, "POST", "/answer/tok", "text/plain", answer).await;
        assert_eq!(status, 409, "{}", String::from_utf8_lossy(&body));
        assert!(String::from_utf8_lossy(&body).contains("this case was answered already"));
        let (status, _, body) = raw(&gateway, "POST", "/answer/nobody", "text/plain", answer).await;
        assert_eq!(status, 409);
        assert!(String::from_utf8_lossy(&body).contains("no case is waiting for this answer"));
        // Over `cassettes.max_response_bytes`: refused, and the case hears why.
        let posted = bind("small", 8);
        let (status, _, _) = raw(&gateway, "POST", "/answer/small", "text/plain", answer).await;
        assert_eq!(status, 413);
        let e = posted.await.unwrap().unwrap_err();
        assert_eq!(e.kind, CaseErrorKind::TooLarge);
        assert!(
            e.message.contains(
                "over the limit on a worker's answer (8 bytes, cassettes.max_response_bytes)"
            ),
            "{}",
            e.message
        );
    }

    /// `method path` with `body` of type `content_type` through the gateway: the status,
    /// the content type and the body bytes of the answer.
    async fn raw(
        gateway: &Gateway,
        method: &str,
        path: &str,
        content_type: &str,
        body: &[u8],
    ) -> (u16, String, Vec<u8>) {
        let mut stream = tokio::net::TcpStream::connect(gateway.addr).await.unwrap();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer worker-junk\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(body).await.unwrap();
        let mut bytes = Vec::new();
        stream.read_to_end(&mut bytes).await.unwrap();
        let at = bytes.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        let head = String::from_utf8_lossy(&bytes[..at]).to_string();
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        let content_type = head
            .lines()
            .find_map(|l| l.strip_prefix("content-type: "))
            .unwrap_or_default()
            .to_string();
        (status, content_type, bytes[at + 4..].to_vec())
    }

    #[tokio::test]
    async fn an_upstreams_text_and_bytes_are_recorded_with_their_type_and_replayed_as_they_came() {
        use wiremock::matchers::{body_bytes, body_string, header, method, path};
        use wiremock::{Mock, MockServer, ResponseTemplate};
        const KEY: &str = "files-key-0123456789abcdef";
        let png: Vec<u8> = vec![0x89, b'P', b'N', b'G', 0, 0xff, 0xfe, 1];
        let api = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path("/api/logo"))
            .and(header("x-api-key", KEY))
            .respond_with(ResponseTemplate::new(200).set_body_raw(png.clone(), "image/png"))
            .mount(&api)
            .await;
        Mock::given(method("POST"))
            .and(path("/api/notes"))
            .and(body_string("plain words"))
            .respond_with(ResponseTemplate::new(404).set_body_raw("no such note", "text/plain"))
            .mount(&api)
            .await;
        Mock::given(method("PUT"))
            .and(path("/api/blob"))
            .and(body_bytes(vec![0xff, 0xfe, 0]))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"stored": 3})))
            .mount(&api)
            .await;

        let (contender, case) = world_atlas();
        let dir = tempfile::tempdir().unwrap();
        let options = CassetteOptions {
            dir: dir.path().to_path_buf(),
            secrets: vec![KEY.into()],
            ..CassetteOptions::default()
        };
        let upstreams = Arc::new(UpstreamSet {
            apis: [(
                "files".to_string(),
                UpstreamApi {
                    base_url: format!("{}/api", api.uri()),
                    header: "x-api-key".into(),
                    key: Some(("FILES_KEY".into(), Some(KEY.into()))),
                    mcp: false,
                    stdio: None,
                },
            )]
            .into_iter()
            .collect(),
            config: Default::default(),
            stdio: Default::default(),
        });
        let gateway = Gateway::start(DEFAULT_MAX_REQUEST_BYTES).await.unwrap();
        let key = crate::runner::cassette_key(&contender, &case);
        let meta = crate::cassette::SessionMeta {
            case: case.key(),
            contender: (&contender.info).into(),
            hint: String::new(),
            route: Route::default(),
            base_url: String::new(),
        };
        // Three calls, recorded live, then replayed with no network: the same answers.
        let mut answers = vec![];
        let offline = Arc::new(Server::default());
        for mode in [Mode::Record, Mode::Replay] {
            let transport = match mode {
                Mode::Record => Transport::new(
                    mode,
                    options.clone(),
                    Arc::new(
                        crate::cassette::LiveClient::new(std::time::Duration::from_secs(5), vec![])
                            .unwrap(),
                    ),
                ),
                _ => Transport::new(mode, options.clone(), offline.clone()),
            };
            let session = Arc::new(transport.session(&key, meta.clone()).unwrap());
            let token = format!("evals-{mode}");
            let spent = Arc::new(Mutex::new(Spent::default()));
            gateway.bind(
                &token,
                Binding {
                    contender: contender.clone(),
                    case: case.clone(),
                    provider: Arc::new(Atlas),
                    session: session.clone(),
                    api_key: None,
                    pricing: None,
                    spent: spent.clone(),
                    upstreams: upstreams.clone(),
                    fixtures: None,
                    answer: None,
                },
            );
            let at = |p: &str| format!("/upstream/files/{token}/{p}");
            let got = vec![
                raw(&gateway, "GET", &at("logo"), "application/json", b"").await,
                raw(&gateway, "POST", &at("notes"), "text/plain", b"plain words").await,
                raw(
                    &gateway,
                    "PUT",
                    &at("blob"),
                    "application/octet-stream",
                    &[0xff, 0xfe, 0],
                )
                .await,
            ];
            gateway.unbind(&token);
            let spent = spent.lock().unwrap().clone();
            assert_eq!(spent.error, None, "{mode}");
            let statuses: Vec<Option<u16>> = spent.trajectory.iter().map(|s| s.status).collect();
            assert_eq!(statuses, [Some(200), Some(404), Some(200)], "{mode}");
            Arc::try_unwrap(session).ok().unwrap().finish().unwrap();
            answers.push(got);
        }
        assert_eq!(answers[0][0], (200, "image/png".to_string(), png));
        assert_eq!(
            answers[0][1],
            (404, "text/plain".to_string(), b"no such note".to_vec())
        );
        assert_eq!(answers[0][2].2, br#"{"stored":3}"#.to_vec());
        assert_eq!(answers[0], answers[1], "replayed as they came");
        assert!(
            offline.sent.lock().unwrap().is_empty(),
            "replay used no network"
        );
        // The cassette keeps text as text, bytes as base64, each with its type; no key.
        let file = std::fs::read_to_string(key.path_in(dir.path())).unwrap();
        let cassette: Value = serde_json::from_str(&file).unwrap();
        let i = &cassette["interactions"];
        assert_eq!(i[0]["response"]["headers"]["content-type"], "image/png");
        assert_eq!(i[0]["response"]["headers"]["x-evals-encoding"], "base64");
        assert_eq!(i[0]["response"]["body"], "iVBORwD//gE=");
        assert_eq!(i[1]["request"]["body"], "plain words");
        assert_eq!(i[1]["request"]["headers"]["content-type"], "text/plain");
        assert_eq!(i[2]["request"]["headers"]["x-evals-encoding"], "base64");
        assert_eq!(i[2]["request"]["body"], "//4A");
        assert!(
            !file.contains(KEY) && !file.contains("worker-junk"),
            "{file}"
        );
    }

    /// Sends `head` (a request line and headers) to the gateway; its status.
    async fn status_of(gateway: &Gateway, head: &str) -> u16 {
        let mut stream = tokio::net::TcpStream::connect(gateway.addr).await.unwrap();
        stream
            .write_all(format!("{head}\r\n\r\n").as_bytes())
            .await
            .unwrap();
        // The head is enough (a kept-alive connection never ends): read until it is in.
        let mut text = Vec::new();
        let mut buf = [0u8; 1024];
        let deadline = std::time::Duration::from_secs(10);
        while !text.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = tokio::time::timeout(deadline, stream.read(&mut buf))
                .await
                .expect("an answer within 10 s")
                .unwrap();
            assert!(n > 0, "closed without an answer");
            text.extend_from_slice(&buf[..n]);
        }
        let text = String::from_utf8_lossy(&text);
        text.split(' ').nth(1).unwrap().parse().unwrap()
    }

    #[tokio::test]
    async fn a_proxied_request_to_another_host_is_refused_and_named_on_the_workers_case() {
        use base64::Engine as _;
        let (contender, case) = world_atlas();
        let transport = Transport::new(
            Mode::Replay,
            CassetteOptions::default(),
            Arc::new(Server::default()),
        );
        let session = session_of(&transport, &contender, &case);
        let gateway = Gateway::start(DEFAULT_MAX_REQUEST_BYTES).await.unwrap();
        let spent = Arc::new(Mutex::new(Spent::default()));
        let token = "evals-0123";
        gateway.bind(
            token,
            Binding {
                contender: contender.clone(),
                case: case.clone(),
                provider: Arc::new(Atlas),
                session: Arc::new(session),
                api_key: None,
                pricing: None,
                spent: spent.clone(),
                upstreams: Arc::default(),
                fixtures: None,
                answer: None,
            },
        );
        let auth = format!(
            "proxy-authorization: Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("evals:{token}"))
        );
        assert_eq!(
            gateway.proxy_url(token),
            format!("http://evals:{token}@{}", gateway.addr)
        );
        // A tunnel (HTTPS) and an absolute URL (HTTP): both refused, both named.
        let connect =
            format!("CONNECT api.openai.com:443 HTTP/1.1\r\nhost: api.openai.com:443\r\n{auth}");
        assert_eq!(status_of(&gateway, &connect).await, 403);
        let get = format!(
            "GET http://example.com/v1/chat/completions HTTP/1.1\r\nhost: example.com\r\n{auth}\r\nconnection: close"
        );
        assert_eq!(status_of(&gateway, &get).await, 403);
        assert_eq!(status_of(&gateway, &connect).await, 403);
        assert_eq!(
            spent.lock().unwrap().offline,
            ["api.openai.com:443", "example.com:80"],
            "each host once, in order"
        );
        // One to the gateway itself is served as if sent straight.
        let own = format!(
            "GET http://127.0.0.1:{}/v1/models HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer {token}\r\nconnection: close",
            gateway.addr.port()
        );
        assert_eq!(status_of(&gateway, &own).await, 200);
        // Between cases: named after the worker's last case, for the run's warning.
        gateway.unbind(token);
        assert_eq!(status_of(&gateway, &connect).await, 403);
        let refused = gateway.take_refused();
        assert_eq!(refused.len(), 4, "{refused:?}");
        let label = format!("{} {}", contender.id(), case.key());
        assert_eq!(
            refused[3],
            Refused {
                host: "api.openai.com:443".into(),
                case: Some(label.clone()),
                during: false,
            }
        );
        assert!(
            refused[..3]
                .iter()
                .all(|r| r.during && r.case.as_deref() == Some(&label))
        );
        assert!(gateway.take_refused().is_empty(), "taken once");
    }
}
