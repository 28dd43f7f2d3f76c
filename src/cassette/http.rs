//! The exchange between a provider and the cassette layer: requests, responses, a
//! provider's judgement of a 2xx, the errors of a call, and the [`Upstream`] that sends a
//! request for real.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::miss::Miss;
use crate::error::CassetteError;

/// An HTTP request a provider (or the exec gateway) wants sent. Providers build these;
/// the cassette layer answers them from a recording or forwards them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HttpRequest {
    /// `POST`, `GET`: part of the fingerprint.
    pub method: String,
    /// The canonical URL (the provider's real endpoint), part of the fingerprint.
    pub url: String,
    /// Every header to send, auth included; only allow-listed ones are ever written.
    pub headers: Vec<(String, String)>,
    /// The JSON body, if any (a body that is not JSON: a JSON string holding its text, or
    /// its bytes in base64 under [`ENCODING`]): what the fingerprint, the diffs and the
    /// providers read.
    pub body: Option<Value>,
    /// The body's text exactly as it is to be sent, when it is not what `body` serializes
    /// to: an exec worker's own request relayed by the gateway (its key order, spacing and
    /// number spelling kept, only the contender's fields changed). `None`: `body`
    /// serialized ([`HttpRequest::body_bytes`]).
    pub raw: Option<String>,
}

impl HttpRequest {
    /// The bytes the body goes over the wire as: [`HttpRequest::raw`] when set, else the
    /// text of a text body (one with a `content-type` that is not JSON), the bytes of a
    /// base64 one, or the compact JSON of `body`. `None`: no body. `Err`: base64 that does
    /// not decode.
    pub fn body_bytes(&self) -> Result<Option<Vec<u8>>, String> {
        if let Some(raw) = &self.raw {
            return Ok(Some(raw.clone().into_bytes()));
        }
        let Some(body) = &self.body else {
            return Ok(None);
        };
        let content_type = header(&self.headers, "content-type");
        Ok(Some(match body {
            Value::String(text) if header(&self.headers, ENCODING) == Some("base64") => {
                use base64::Engine as _;
                base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .map_err(|e| format!("cannot decode the body: {e}"))?
            }
            Value::String(text) if content_type.is_some_and(|t| !is_json(t)) => {
                text.clone().into_bytes()
            }
            _ => serde_json::to_vec(body).map_err(|e| format!("cannot encode the body: {e}"))?,
        }))
    }
}

/// The value of header `name` (any case) in `headers`.
pub(crate) fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Whether a `content-type` is JSON (`application/json`, `…+json`).
pub(crate) fn is_json(content_type: &str) -> bool {
    content_type.to_ascii_lowercase().contains("json")
}

/// The header (in an [`HttpRequest`] or [`HttpResponse`] of an exec adapter's other API)
/// saying the body is a JSON string holding the bytes in base64 (`base64`): a body that is
/// not UTF-8 text. Kept in the cassette beside `content-type`; never sent.
pub const ENCODING: &str = "x-evals-encoding";

/// What came back: status, headers, the body (JSON, or a JSON string holding non-JSON
/// text), and how long the exchange took (the recorded latency on replay).
#[derive(Debug, Clone, PartialEq)]
pub struct HttpResponse {
    /// The HTTP status; a non-2xx is an answer too, for the provider to read.
    pub status: u16,
    /// The headers, names lowercase; on replay only the recorded (allow-listed) ones.
    pub headers: Vec<(String, String)>,
    /// The body as JSON; a body that is not JSON is a JSON string holding its text (or its
    /// bytes in base64, under [`ENCODING`]).
    pub body: Value,
    /// The body's text exactly as it came (live) or as the cassette keeps it, when it is not
    /// what [`HttpResponse::body_bytes`] would make of `body` (a provider's key order,
    /// spacing and number spelling): what an exec worker is sent back, byte for byte.
    /// `None`: `body` says it all.
    pub raw: Option<String>,
    /// How long the exchange took; on replay, the recorded figure, so latencies compare.
    pub latency: Duration,
}

impl HttpResponse {
    /// The bytes the body is passed on as (to an exec worker): [`HttpResponse::raw`] when
    /// set, else the bytes of a base64 body, the text of a text body (a stream, a
    /// `content-type` that is not JSON, or none given), nothing for a `null` body with no
    /// type, or the compact JSON of `body`.
    pub fn body_bytes(&self) -> Vec<u8> {
        body_bytes(
            self.raw.as_deref(),
            &self.body,
            self.headers.iter().map(|(k, v)| (k, v)),
        )
    }
}

/// [`HttpResponse::body_bytes`] of a response's parts (a recorded one's too: what replay
/// will pass on, so a recording keeps `raw` only where it differs).
pub(crate) fn body_bytes<'a>(
    raw: Option<&str>,
    body: &Value,
    headers: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> Vec<u8> {
    if let Some(raw) = raw {
        return raw.as_bytes().to_vec();
    }
    let (mut content_type, mut base64) = (None, false);
    for (k, v) in headers {
        if k.eq_ignore_ascii_case("content-type") {
            content_type = Some(v.as_str());
        } else if k.eq_ignore_ascii_case(ENCODING) {
            base64 = v == "base64";
        }
    }
    match body {
        Value::String(text) if base64 => {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .unwrap_or_default()
        }
        Value::String(text)
            if content_type.is_some_and(|t| !is_json(t)) || super::sse::has_data(text) =>
        {
            text.clone().into_bytes()
        }
        Value::Null if content_type.is_none() => Vec::new(),
        body => serde_json::to_vec(body).unwrap_or_default(),
    }
}

/// A provider's judgement of a 2xx response: whether it is the provider's success shape.
/// Only a success is recorded, so a recording always replays as one.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Verdict {
    /// The provider's answer: recorded, and read into a completion.
    Success,
    /// Not a usable answer (not JSON, an error object, no choices): an error of the case,
    /// never recorded. `transient`: the provider says another attempt may succeed (an
    /// overloaded or failing server), so it is retried like a 5xx.
    Failure {
        /// What is wrong with it, for the case's error.
        reason: String,
        /// Whether another attempt may succeed.
        transient: bool,
    },
}

/// How the provider that built a request judges its 2xx responses. It goes with the request
/// through the cassette layer and the retries below it, which thereby know a success
/// without knowing the provider (providers, in turn, never know about cassettes).
pub type Accept = fn(&HttpResponse) -> Verdict;

/// Takes every 2xx response for a success: for callers with no shape to check.
pub fn any_2xx(_: &HttpResponse) -> Verdict {
    Verdict::Success
}

/// What a provider's error object says of another attempt, from its `code`, `type` and
/// `status` words (OpenAI, OpenRouter, Anthropic and Gemini shapes alike). One table for
/// every reader: a 2xx carrying it, and a retryable status (a 429 that says
/// `insufficient_quota` means "out of credit", which no wait mends).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorClass {
    /// The key, the quota, the billing or the request is the problem: never retried.
    Permanent,
    /// The server failed, is overloaded or limits the rate: another attempt may succeed.
    Transient,
    /// It says neither.
    Unknown,
}

/// The lowercase `code`, `type` and `status` words of a provider's error object, in that
/// order.
pub fn error_words(error: &Value) -> Vec<String> {
    ["code", "type", "status"]
        .iter()
        .filter_map(|k| error.get(*k))
        .filter_map(|v| match v {
            Value::String(s) => Some(s.to_ascii_lowercase()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
        .collect()
}

/// [`ErrorClass`] of a provider's error object (the value of a body's `error`).
pub fn classify_error(error: &Value) -> ErrorClass {
    const PERMANENT: &[&str] = &[
        "quota",
        "billing",
        "credit",
        "invalid",
        "auth",
        "permission",
        "forbidden",
        "not_found",
        "context_length",
        "content_filter",
        "moderation",
    ];
    const TRANSIENT: &[&str] = &[
        "server_error",
        "overloaded",
        "internal",
        "unavailable",
        "timeout",
        "timed_out",
        "rate_limit",
        "resource_exhausted",
        "bad_gateway",
        "try_again",
    ];
    let words = error_words(error);
    if words
        .iter()
        .any(|w| PERMANENT.iter().any(|p| w.contains(p)))
    {
        return ErrorClass::Permanent;
    }
    let transient = words.iter().any(|w| match w.parse::<u16>() {
        Ok(code) => code == 408 || code == 429 || (500..600).contains(&code),
        Err(_) => TRANSIENT.iter().any(|t| w.contains(t)),
    });
    if transient {
        ErrorClass::Transient
    } else {
        ErrorClass::Unknown
    }
}

/// Why a request got no response. Every variant is an *error* of the case (no score).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// Network failure, timeout, or a non-retryable/exhausted HTTP failure.
    #[error("{0}")]
    Transport(String),
    /// A connection refused at a loopback or private address (`127.0.0.1`, `localhost`,
    /// `10.x`, `192.168.x`, `fc00::/7`...): a local server that is not running, which no wait
    /// mends, so it is not retried (a refused remote host is a [`CallError::Transport`] and
    /// is). Counts as a transport error of the case.
    #[error("{0}")]
    NotListening(String),
    /// Replay found no recording: the nearest one, the field-by-field diff and the hint.
    #[error("{0}")]
    Miss(Box<Miss>),
    /// The cassette could not be read or written (corrupt, future format, secret found).
    #[error("{0}")]
    Cassette(CassetteError),
    /// The response (live or recorded) is over `cassettes.max_response_bytes`: not
    /// retried, not recorded.
    #[error("{0}")]
    TooLarge(String),
}

impl From<CassetteError> for CallError {
    fn from(e: CassetteError) -> CallError {
        CallError::Cassette(e)
    }
}

impl From<Miss> for CallError {
    fn from(m: Miss) -> CallError {
        CallError::Miss(Box::new(m))
    }
}

/// The error of a response body over the limit; `size` is what is known of it (`None`:
/// more than `over`, which is how far it was read).
pub(crate) fn too_large(what: &str, size: Option<u64>, over: u64, limit: u64) -> CallError {
    let size = match size {
        Some(n) => human_bytes(n),
        None => format!("over {}", human_bytes(over)),
    };
    CallError::TooLarge(format!(
        "{what} is {size}, over cassettes.max_response_bytes ({}): raise it in the config \
         if this is expected",
        human_bytes(limit)
    ))
}

/// The future an [`Upstream`] returns.
pub type UpstreamFuture<'a> =
    Pin<Box<dyn Future<Output = Result<HttpResponse, CallError>> + Send + 'a>>;

/// Sends requests for real. The runner wraps it with retries/rate limits later. `accept`
/// is the provider's judgement of a 2xx response (a retry layer retries a transient
/// failure); the client itself has no use for it.
pub trait Upstream: Send + Sync {
    /// Sends `req` on `route`; an error is the call's, never a status (a non-2xx is an answer).
    fn send<'a>(&'a self, req: HttpRequest, route: &'a Route, accept: Accept)
    -> UpstreamFuture<'a>;
}

pub(crate) use crate::text::human_bytes;

/// How a live call is scheduled: the vendor it pauses on a retry, and the rate limits it
/// waits on. The cassette layer passes it to the [`Upstream`](super::Upstream) untouched;
/// replayed calls never wait.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Route {
    /// `openrouter/openai`, `local`: a retry pauses every call with the same vendor.
    pub vendor: String,
    pub limits: Vec<Limit>,
}

/// One `rate_limit: { burst, per_minute }`, keyed by where it was set.
#[derive(Debug, Clone, PartialEq)]
pub struct Limit {
    pub key: String,
    pub burst: u32,
    pub per_minute: u32,
}
