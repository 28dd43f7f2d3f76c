//! Providers: turn a chat request into an HTTP request for a contender, and read the
//! answer back. They never know about cassettes: the transport below them records and
//! replays (see `cassette`).

mod fake;
mod openai;

use crate::cassette::{CallError, HttpRequest, Session};
use crate::results::Usage;
use crate::suite::config::Pricing;
use crate::suite::{Contender, ProviderKind};

pub use openai::{
    accept, accept_forwarded, build_request, forward_request, parse_response, usage_of,
};

/// The models of the offline `fake` provider.
pub const FAKE_MODELS: &[&str] = &["echo", "parrot"];

/// What the adapter asks of a model.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    pub system: Option<String>,
    pub user: String,
    /// Ask for a JSON object (`response_format: json_object`).
    pub json: bool,
}

/// What a model said, with its usage. `raw` is the provider's whole response body.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub text: String,
    pub usage: Usage,
    /// Seconds the call took (the recorded latency on replay).
    pub latency_s: f64,
}

/// Calls one contender: builds the request, sends it through the cassette session, reads
/// the answer. `key` is the API key value (none in replay, where nothing is sent).
pub async fn complete(
    contender: &Contender,
    req: &ChatRequest,
    key: Option<&str>,
    pricing: Option<&Pricing>,
    session: &Session,
) -> Result<Completion, CallError> {
    match &contender.kind {
        ProviderKind::Fake => Ok(fake::complete(contender, req)),
        ProviderKind::TypeSafe => Err(CallError::Transport(format!(
            "{}: the typesafe provider cannot send requests yet (no typesafe consumer); it has a catalog and pricing only",
            contender.id()
        ))),
        _ => {
            let http = build_request(contender, req, key);
            let resp = session.send(http, accept).await?;
            parse_response(contender, resp, pricing)
        }
    }
}

/// The fake provider's answer to a chat request (the gateway serves it to exec adapters).
pub fn fake_complete(contender: &Contender, req: &ChatRequest) -> Completion {
    fake::complete(contender, req)
}

/// The HTTP request a contender would send for `req` (used by `cassettes status`).
pub fn predict_request(contender: &Contender, req: &ChatRequest) -> Option<HttpRequest> {
    match contender.kind {
        ProviderKind::Fake | ProviderKind::TypeSafe => None,
        _ => Some(build_request(contender, req, None)),
    }
}

/// Cost from `pricing:` (dollars per million tokens) when the provider reported none.
pub fn price(usage: &Usage, pricing: Option<&Pricing>) -> Option<f64> {
    let p = pricing?;
    let i = usage.input_tokens? as f64;
    let o = usage.output_tokens? as f64;
    Some((i * p.input + o * p.output) / 1_000_000.0)
}
