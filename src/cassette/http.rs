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
    /// The JSON body, if any.
    pub body: Option<Value>,
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
    /// The body as JSON; a body that is not JSON is a JSON string holding its text.
    pub body: Value,
    /// How long the exchange took; on replay, the recorded figure, so latencies compare.
    pub latency: Duration,
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
