//! The wire APIs an exec worker's SDK may call through the gateway, and what a provider
//! makes of such a call ([`Forward`]): the request it sends, how it judges a 2xx, and how
//! it reads the usage (of a body or of a stream's events). Each API's judgement of a 2xx is
//! one function, shared by the prompt adapter and the gateway, so "a 200 with an error body
//! is a failed exchange" is decided in one place per API.

use serde_json::Value;

use crate::cassette::{Accept, HttpRequest};
use crate::results::Usage;

/// An API a worker's SDK speaks to the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Api {
    /// OpenAI `POST /v1/chat/completions` (and every OpenAI-compatible server).
    ChatCompletions,
    /// OpenAI `POST /v1/responses`.
    Responses,
    /// OpenAI `POST /v1/embeddings`.
    Embeddings,
    /// Anthropic `POST /v1/messages`.
    AnthropicMessages,
    /// Gemini `POST /v1beta/models/{model}:generateContent` (or `:streamGenerateContent`).
    Gemini,
}

impl Api {
    /// How messages name it.
    pub fn name(self) -> &'static str {
        match self {
            Api::ChatCompletions => "OpenAI chat completions API",
            Api::Responses => "OpenAI Responses API",
            Api::Embeddings => "OpenAI embeddings API",
            Api::AnthropicMessages => "Anthropic Messages API",
            Api::Gemini => "Gemini API",
        }
    }

    /// The gateway endpoint serving it, as messages name it.
    pub fn endpoint(self) -> &'static str {
        match self {
            Api::ChatCompletions => "POST /v1/chat/completions",
            Api::Responses => "POST /v1/responses",
            Api::Embeddings => "POST /v1/embeddings",
            Api::AnthropicMessages => "POST /v1/messages",
            Api::Gemini => "POST /v1beta/models/{model}:generateContent",
        }
    }
}

/// One call a worker made through the gateway, as the gateway read it.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The API it was made in.
    pub api: Api,
    /// The JSON body.
    pub body: Value,
    /// Whether it asks for a stream of server-sent events (Gemini says so in its path:
    /// `:streamGenerateContent`; the others in the body's `stream`).
    pub stream: bool,
    /// Headers of the call that shape the API's answer and carry no secret
    /// (`anthropic-version`, `anthropic-beta`), names lowercase.
    pub headers: Vec<(String, String)>,
}

/// What a provider makes of a [`Call`]: the request to send through the cassette layer,
/// how a 2xx is judged (only a success is recorded) and how its usage is read.
#[derive(Debug, Clone)]
pub struct Forward {
    /// The contender's request: its model and settings on the worker's body, its URL, the
    /// real key.
    pub request: HttpRequest,
    /// The API's judgement of a 2xx (JSON or a stream).
    pub accept: Accept,
    /// Tokens (and cost, when reported) of a response body or of a stream's events.
    pub usage: fn(&Value) -> Usage,
}

/// The JSON `data:` of each event of a server-sent-events body, in order (`[DONE]` and
/// other non-JSON data left out).
pub fn sse_data(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .collect()
}

/// Whether a body is a server-sent-events stream (kept as text: a JSON string).
pub fn is_stream(body: &Value) -> bool {
    matches!(body, Value::String(s) if s.lines().any(|l| l.starts_with("data:")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_is_read_event_by_event_and_done_is_no_event() {
        let text = "event: a\ndata: {\"n\":1}\n\ndata: {\"n\":2}\n\ndata: [DONE]\n\n";
        assert_eq!(
            sse_data(text),
            vec![serde_json::json!({"n": 1}), serde_json::json!({"n": 2})]
        );
        assert!(is_stream(&Value::String(text.into())));
        assert!(!is_stream(&Value::String("<html>".into())));
        assert!(!is_stream(&serde_json::json!({"data": 1})));
    }
}
