//! The OpenAI-compatible chat completions provider: OpenRouter, OpenAI, and any
//! `base_url` section (Ollama, vLLM, llama.cpp, LM Studio, LiteLLM).

use serde_json::{Value, json};

use super::{ChatRequest, Completion, Provider, price};
use crate::cassette::{
    Accept, CallError, ErrorClass, HttpRequest, HttpResponse, Verdict, classify_error, error_words,
};
use crate::results::Usage;
use crate::suite::Contender;
use crate::suite::config::Pricing;

/// OpenRouter's API, where a section without `base_url` sends.
pub const OPENROUTER_URL: &str = "https://openrouter.ai/api/v1";
/// OpenAI's API, where a section without `base_url` sends.
pub const OPENAI_URL: &str = "https://api.openai.com/v1";

/// Which OpenAI-compatible server it is: each differs a little in what it is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// `openrouter:`: `reasoning: {effort}`, an `x-title` header, vendors paused apart.
    OpenRouter,
    /// `openai:`: `max_completion_tokens` for the max tokens.
    OpenAi,
    /// A `base_url` section (Ollama, vLLM, llama.cpp, LM Studio, LiteLLM), keyed by its
    /// `api_key_env` when it has one.
    Custom,
}

/// The OpenAI chat completions provider, in one of its flavours.
#[derive(Debug, Clone, Copy)]
pub struct OpenAiCompatible {
    /// Which server it is.
    pub flavour: Flavour,
}

impl Provider for OpenAiCompatible {
    fn key_env(&self, contender: &Contender) -> Option<String> {
        match self.flavour {
            Flavour::OpenRouter => Some("OPENROUTER_API_KEY".into()),
            Flavour::OpenAi => Some("OPENAI_API_KEY".into()),
            Flavour::Custom => contender.kind.api_key_env.clone(),
        }
    }

    fn sends(&self) -> bool {
        true
    }

    fn base_url(&self, contender: &Contender) -> Option<String> {
        let default = match self.flavour {
            Flavour::OpenRouter => OPENROUTER_URL,
            Flavour::OpenAi => OPENAI_URL,
            Flavour::Custom => "",
        };
        Some(
            contender
                .kind
                .base_url
                .clone()
                .unwrap_or_else(|| default.to_string()),
        )
    }

    fn build_request(
        &self,
        contender: &Contender,
        req: &ChatRequest,
        key: Option<&str>,
    ) -> Result<HttpRequest, CallError> {
        Ok(self.request(contender, req, key))
    }

    fn accept(&self) -> Accept {
        accept
    }

    fn read_response(
        &self,
        contender: &Contender,
        resp: HttpResponse,
        pricing: Option<&Pricing>,
    ) -> Result<Completion, CallError> {
        parse_response(contender, resp, pricing, self.key_env(contender).as_deref())
    }

    /// An OpenRouter vendor (`openrouter/openai`) pauses apart from the others; elsewhere
    /// (OpenAI, a LiteLLM or vLLM proxy serving many models) the model alone, unless the
    /// section says `pause: section`.
    fn vendor(&self, c: &Contender) -> String {
        let vendor = match self.flavour {
            Flavour::OpenRouter => c.info.model.split('/').next(),
            _ => None,
        };
        super::pause_key(c, vendor)
    }

    fn forward_request(
        &self,
        contender: &Contender,
        body: Value,
        key: Option<&str>,
    ) -> Option<HttpRequest> {
        Some(self.forward(contender, body, key))
    }

    fn accept_forwarded(&self) -> Accept {
        accept_forwarded
    }

    /// Chat completions as [`Provider::forward_request`] makes them; `/v1/responses` and
    /// `/v1/embeddings` sent to the same server (OpenAI, OpenRouter, vLLM and LiteLLM serve
    /// them too).
    fn forward_call(
        &self,
        c: &Contender,
        call: &super::wire::Call,
        key: Option<&str>,
    ) -> Option<super::wire::Forward> {
        match call.api {
            super::wire::Api::ChatCompletions => Some(super::wire::Forward {
                request: self.forward(c, call.body.clone(), key),
                accept: accept_forwarded,
                usage: usage_in,
            }),
            _ => super::responses::forward(self, c, call, key),
        }
    }
}

impl OpenAiCompatible {
    /// The request body and headers. Temperature, max tokens and effort are sent only when
    /// set.
    fn request(&self, c: &Contender, req: &ChatRequest, key: Option<&str>) -> HttpRequest {
        let base = self.base_url(c).unwrap_or_default();
        let mut messages = Vec::new();
        if let Some(s) = &req.system {
            messages.push(json!({"role": "system", "content": s}));
        }
        messages.extend(req.turns());
        let mut body = json!({ "model": c.info.model, "messages": messages });
        let obj = body.as_object_mut().expect("json! object");
        if let Some(tools) = &req.tools {
            obj.insert("tools".into(), tools.clone());
        }
        if let Some(choice) = &req.tool_choice {
            obj.insert("tool_choice".into(), choice.clone());
        }
        if let Some(t) = c.temperature {
            obj.insert("temperature".into(), json!(t));
        }
        if let Some(m) = c.info.max_tokens {
            let field = if self.flavour == Flavour::OpenAi {
                "max_completion_tokens"
            } else {
                "max_tokens"
            };
            obj.insert(field.into(), json!(m));
        }
        if let Some(e) = &c.info.effort {
            match self.flavour {
                Flavour::OpenRouter => {
                    obj.insert("reasoning".into(), json!({ "effort": e }));
                }
                _ => {
                    obj.insert("reasoning_effort".into(), json!(e));
                }
            }
        }
        if req.json {
            obj.insert("response_format".into(), json!({"type": "json_object"}));
        }
        let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
        if let Some(k) = key {
            headers.push(("authorization".to_string(), format!("Bearer {k}")));
        }
        if self.flavour == Flavour::OpenRouter {
            headers.push(("x-title".to_string(), "llm-evals".to_string()));
        }
        HttpRequest {
            method: "POST".into(),
            url: format!("{base}/chat/completions"),
            headers,
            body: Some(body),
            raw: None,
        }
    }
}

/// Whether a 2xx response is a chat completion: a JSON body with a choice and no error
/// object (`"error": null` is none). The cassette layer records only what this accepts, and
/// the retries retry what it calls transient.
pub fn accept(resp: &HttpResponse) -> Verdict {
    match &resp.body {
        Value::String(_) => Verdict::Failure {
            reason: format!("response is not JSON: {}", excerpt(&resp.body)),
            transient: false,
        },
        body => accept_json(body),
    }
}

/// [`accept`] for a call an exec adapter made through the gateway, which may ask for a
/// stream (`stream: true`): server-sent events are a success unless one carries an error.
pub fn accept_forwarded(resp: &HttpResponse) -> Verdict {
    let Value::String(text) = &resp.body else {
        return accept_json(&resp.body);
    };
    let events: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .collect();
    if events.is_empty() {
        return accept(resp);
    }
    for event in events {
        if let Ok(v) = serde_json::from_str::<Value>(event)
            && let Some(e) = error_in(&v)
        {
            return failure_of(e);
        }
    }
    Verdict::Success
}

fn accept_json(body: &Value) -> Verdict {
    if let Some(e) = error_in(body) {
        return failure_of(e);
    }
    match body.get("choices").and_then(|c| c.get(0)) {
        Some(_) => Verdict::Success,
        None => Verdict::Failure {
            reason: format!("response has no choices: {}", excerpt(body)),
            transient: false,
        },
    }
}

/// The error a body (or a stream event) carries: its own `error`, or OpenRouter's
/// per-choice one (`choices[0].error`, with `finish_reason: "error"`), which comes in a 200
/// when the upstream failed after the response began.
fn error_in(body: &Value) -> Option<&Value> {
    error_object(body).or_else(|| {
        body.get("choices")
            .and_then(Value::as_array)
            .and_then(|cs| cs.iter().find_map(error_object))
    })
}

/// The body's `error`, when it holds one: `null` (or `false`, or `""`) is no error.
pub(super) fn error_object(body: &Value) -> Option<&Value> {
    body.get("error").filter(|e| match e {
        Value::Null | Value::Bool(false) => false,
        Value::String(s) => !s.trim().is_empty(),
        _ => true,
    })
}

/// A 2xx carrying an error object: an error of the case, retried when its code or type says
/// the server failed or is overloaded (OpenRouter relays an upstream's 502 or 529 so; others
/// say `server_error`, `overloaded_error`), never when the key, the quota or the request is
/// the problem.
pub(super) fn failure_of(error: &Value) -> Verdict {
    let message = error_message(error);
    let words = error_words(error);
    let transient = classify_error(error) == ErrorClass::Transient;
    let kind = words.first().map(|w| format!(" ({w})")).unwrap_or_default();
    Verdict::Failure {
        reason: format!("provider error{kind}: {message}"),
        transient,
    }
}

/// Reads a chat completion. A non-2xx status, or a 2xx that [`accept`] refuses (not JSON, an
/// error object, no choices), is a transport failure (an error of the case, never a 0); an
/// empty answer is the model's and is left to the adapter. `key_env` names the variable the
/// contender's key came from, for a 401 or 403.
fn parse_response(
    c: &Contender,
    resp: HttpResponse,
    pricing: Option<&Pricing>,
    key_env: Option<&str>,
) -> Result<Completion, CallError> {
    let latency_s = resp.latency.as_secs_f64();
    if !(200..300).contains(&resp.status) {
        return Err(CallError::Transport(status_error(c, &resp, key_env)));
    }
    if let Verdict::Failure { reason, .. } = accept(&resp) {
        return Err(CallError::Transport(format!("{}: {reason}", c.id())));
    }
    let choice = resp
        .body
        .get("choices")
        .and_then(|c| c.get(0))
        .unwrap_or(&Value::Null);
    let message = choice.get("message").unwrap_or(&Value::Null);
    let text = match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    };
    let refusal = refusal_of(&resp.body);
    let usage = priced(usage_of(&resp), pricing);
    let truncated = truncation_of(&resp.body, c.info.max_tokens, &text, &usage);
    Ok(Completion {
        text,
        usage,
        latency_s,
        refusal,
        truncated,
        components: None,
    })
}

/// The model's refusal (`message.refusal`, with no content), when it declined.
pub fn refusal_of(body: &Value) -> Option<String> {
    crate::cassette::dig(body, &["choices", "0", "message", "refusal"])
        .and_then(Value::as_str)
        .filter(|r| !r.trim().is_empty())
        .map(str::to_string)
}

/// `usage` with its cost from `pricing:` when the provider reported none.
pub fn priced(mut usage: Usage, pricing: Option<&Pricing>) -> Usage {
    if usage.cost_usd.is_none() {
        usage.cost_usd = price(&usage, pricing);
    }
    usage
}

/// The message of a non-2xx: the contender, the status and what the error says; a 401 or
/// 403 names the variable the key came from, since that is what to fix.
pub fn status_error(c: &Contender, resp: &HttpResponse, key_env: Option<&str>) -> String {
    // vLLM and some proxies write the error at the top (`{"object": "error", "message"}`).
    let error = error_object(&resp.body).or_else(|| {
        resp.body
            .get("message")
            .is_some_and(Value::is_string)
            .then_some(&resp.body)
    });
    let detail = error
        .map(error_message)
        .unwrap_or_else(|| excerpt(&resp.body));
    let fix = match (resp.status, key_env) {
        (401 | 403, Some(var)) => {
            format!(" (the key is {var}: check that it is set to a valid key for this provider)")
        }
        _ => String::new(),
    };
    format!("{}: HTTP {}: {detail}{fix}", c.id(), resp.status)
}

/// Whether the reply was cut at the token limit (`finish_reason: "length"` in the choice,
/// or in a stream's last event that has one), said for the reader: the limit when the
/// contender sets it, and, when a reasoning model spent every token thinking and returned
/// nothing, that too. `None` when the reply ended on its own.
pub fn truncation_of(
    body: &Value,
    max_tokens: Option<u32>,
    text: &str,
    usage: &Usage,
) -> Option<String> {
    let finish = |v: &Value| {
        crate::cassette::dig(v, &["choices", "0", "finish_reason"])
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let reason = match body {
        Value::String(sse) => sse
            .lines()
            .rev()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find_map(|v| finish(&v)),
        body => finish(body),
    }?;
    (reason == "length").then(|| cut_note(max_tokens, text, usage))
}

/// What to tell the reader of a reply cut at the token limit: the limit when the contender
/// sets it, and, when a reasoning model spent every token thinking and returned nothing,
/// that too. Every provider's reading of its own "cut" signal ends here.
pub fn cut_note(max_tokens: Option<u32>, text: &str, usage: &Usage) -> String {
    let limit = match max_tokens {
        Some(n) => format!("cut at max_tokens ({n})"),
        None => "cut at the provider's token limit".to_string(),
    };
    match usage.reasoning_tokens {
        Some(r) if r > 0 && text.trim().is_empty() => format!(
            "{limit}: the model spent every token reasoning ({r} reasoning tokens) and returned no answer; raise max_tokens or lower the effort"
        ),
        _ => limit,
    }
}

/// A value for a message: scrubbed, on one line, cut at a word.
pub(super) fn excerpt(v: &Value) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    // Scrubbed before it is cut: a key across the cut would keep its first half.
    crate::text::one_line_cut(&crate::secrets::scrub(&s), 200)
}

/// What an error object says, for a message: its `message`, and where OpenRouter relays an
/// upstream's failure ("Provider returned error") the provider's name and its own words
/// (`metadata.raw`), which hold the cause. One hidden cause gets its fix: OpenAI refuses
/// `response_format: json_object` unless a message says "json", which the prompt adapter's
/// `json: true` asks for.
pub fn error_message(error: &Value) -> String {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| excerpt(error));
    let meta = error.get("metadata");
    let raw = meta.and_then(|m| m.get("raw")).map(|r| match r {
        // `raw` is the upstream's body, often JSON text: its message says more.
        Value::String(text) => serde_json::from_str::<Value>(text)
            .ok()
            .and_then(|v| {
                v.pointer("/error/message")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .unwrap_or_else(|| text.clone()),
        other => other
            .pointer("/error/message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| other.to_string()),
    });
    let provider = meta
        .and_then(|m| m.get("provider_name"))
        .and_then(Value::as_str);
    let text = match (provider, raw) {
        (Some(p), Some(r)) => format!("{message} ({p}: {r})"),
        (None, Some(r)) => format!("{message} ({r})"),
        (Some(p), None) => format!("{message} ({p})"),
        (None, None) => message,
    };
    // The fix goes after the cut: it is ours, and the point of the message.
    let fix = if text
        .to_ascii_lowercase()
        .contains("must contain the word 'json'")
    {
        "; `json: true` sends `response_format: json_object`, which OpenAI accepts only when \
         a message says \"JSON\": mention JSON in the adapter's system or user prompt"
    } else {
        ""
    };
    format!("{}{fix}", excerpt(&Value::String(text)))
}

impl OpenAiCompatible {
    /// A request an exec adapter sent to the gateway, made the contender's: its model, and
    /// its effort, temperature and max tokens where set, on the adapter's own body; the
    /// provider's URL and headers, with the real key.
    fn forward(&self, c: &Contender, mut body: Value, key: Option<&str>) -> HttpRequest {
        let template = self.request(
            c,
            &ChatRequest {
                system: None,
                user: String::new(),
                json: false,
                ..Default::default()
            },
            key,
        );
        if let (Value::Object(obj), Some(Value::Object(ours))) = (&mut body, template.body) {
            for (k, v) in ours {
                // The messages and response format are the adapter's; the model and the
                // contender's settings are ours.
                if k != "messages" {
                    obj.insert(k, v);
                }
            }
            if c.info.max_tokens.is_some() && self.flavour == Flavour::OpenAi {
                obj.remove("max_tokens");
            }
        }
        HttpRequest {
            body: Some(body),
            ..template
        }
    }
}

impl OpenAiCompatible {
    /// `body` sent to `path` below the contender's base URL, with the provider's headers
    /// and the real key.
    pub(super) fn forward_to(
        &self,
        c: &Contender,
        path: &str,
        body: Value,
        key: Option<&str>,
    ) -> HttpRequest {
        let template = self.request(c, &ChatRequest::default(), key);
        HttpRequest {
            method: "POST".into(),
            url: format!("{}{path}", self.base_url(c).unwrap_or_default()),
            headers: template.headers,
            body: Some(body),
            raw: None,
        }
    }
}

/// Tokens and cost from an OpenAI-shaped response (its body, or the last event that
/// carries `usage` in a server-sent-events body, `stream: true`): [`usage_in`] its body,
/// else, for the cost, a LiteLLM proxy's `x-litellm-response-cost` header.
pub fn usage_of(resp: &HttpResponse) -> Usage {
    let mut usage = usage_in(&resp.body);
    if usage.cost_usd.is_none() {
        usage.cost_usd = resp
            .headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("x-litellm-response-cost"))
            .and_then(|(_, v)| v.trim().parse::<f64>().ok())
            .filter(|c| c.is_finite() && *c >= 0.0);
    }
    usage
}

/// Tokens and cost an OpenAI-shaped body reports. The cost is `usage.cost` (OpenRouter);
/// with OpenRouter and your own key (BYOK) it is OpenRouter's fee plus the upstream's
/// charge (`cost_details.upstream_inference_cost`), and what OpenRouter billed is kept
/// apart.
pub fn usage_in(body: &Value) -> Usage {
    let byok = crate::cassette::dig(body, &["usage", "is_byok"]).and_then(Value::as_bool);
    crate::cassette::RecordedUsage::from_body(body)
        .map(|u| {
            let (cost, billed) = match (u.cost, u.upstream_cost) {
                (Some(fee), Some(up)) if byok == Some(true) || (fee == 0.0 && up > 0.0) => {
                    (Some(fee + up), Some(fee))
                }
                (cost, _) => (cost, None),
            };
            Usage {
                input_tokens: u.prompt_tokens,
                output_tokens: u.completion_tokens,
                cost_usd: cost,
                cached_tokens: u.cached_tokens,
                reasoning_tokens: u.reasoning_tokens,
                billed_usd: billed,
            }
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_excerpt_is_scrubbed_before_it_is_cut() {
        let key = "excerpt-cut-secret-0123456789abcdef";
        crate::secrets::register([key]);
        // The key straddles the 200th character: cut first, its first half would remain.
        let text = format!("{}{key} and more", "x".repeat(190));
        let shown = excerpt(&Value::String(text));
        assert!(!shown.contains("excerpt-cut"), "{shown}");
        assert!(shown.contains("[REDACTED]"), "{shown}");
    }

    fn ok(body: Value) -> HttpResponse {
        HttpResponse {
            status: 200,
            headers: vec![],
            body,
            latency: std::time::Duration::ZERO,
            raw: None,
        }
    }

    fn verdict(body: Value) -> (bool, bool) {
        match accept(&ok(body)) {
            Verdict::Success => (true, false),
            Verdict::Failure { transient, .. } => (false, transient),
        }
    }

    #[test]
    fn a_completion_is_accepted_and_error_null_is_no_error() {
        let choices = json!([{"message": {"content": "hi"}}]);
        assert_eq!(verdict(json!({"choices": choices})), (true, false));
        assert_eq!(
            verdict(json!({"choices": choices, "error": null})),
            (true, false)
        );
    }

    #[test]
    fn garbage_no_choices_and_error_objects_are_failures_transient_only_when_the_server_says() {
        assert_eq!(verdict(json!("<html>bad gateway</html>")), (false, false));
        assert_eq!(verdict(json!({"id": "gen-1"})), (false, false));
        assert_eq!(verdict(json!({"choices": []})), (false, false));
        for transient in [
            json!({"code": 502, "message": "upstream failed"}),
            json!({"code": "529", "message": "overloaded"}),
            json!({"type": "server_error", "message": "The server had an error"}),
            json!({"type": "overloaded_error", "message": "Overloaded"}),
            json!({"code": "rate_limit_exceeded", "message": "slow down"}),
        ] {
            assert_eq!(
                verdict(json!({"error": transient.clone()})),
                (false, true),
                "{transient}"
            );
        }
        for permanent in [
            json!({"code": "insufficient_quota", "type": "insufficient_quota", "message": "You exceeded your current quota"}),
            json!({"code": "invalid_api_key", "type": "invalid_request_error", "message": "Incorrect API key"}),
            json!({"code": 401, "message": "No auth credentials found"}),
            json!({"code": 402, "message": "Insufficient credits"}),
            json!({"message": "something"}),
            json!("a bare string"),
        ] {
            assert_eq!(
                verdict(json!({"error": permanent.clone(), "choices": [{}]})),
                (false, false),
                "{permanent}"
            );
        }
        let Verdict::Failure { reason, .. } = accept(&ok(
            json!({"error": {"code": 502, "message": "upstream failed"}}),
        )) else {
            panic!()
        };
        assert_eq!(reason, "provider error (502): upstream failed");
    }

    #[test]
    fn a_forwarded_stream_is_accepted_unless_an_event_carries_an_error() {
        let sse = |events: &[&str]| {
            let text: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
            accept_forwarded(&ok(Value::String(text)))
        };
        assert_eq!(
            sse(&[r#"{"choices":[{"delta":{"content":"hi"}}]}"#, "[DONE]"]),
            Verdict::Success
        );
        assert!(matches!(
            sse(&[r#"{"error":{"code":502,"message":"upstream died"}}"#]),
            Verdict::Failure {
                transient: true,
                ..
            }
        ));
        assert!(matches!(
            accept_forwarded(&ok(json!("<html>oops</html>"))),
            Verdict::Failure {
                transient: false,
                ..
            }
        ));
        // The provider itself never asks for a stream: events are not its success shape.
        assert!(matches!(
            accept(&ok(Value::String("data: {}\n\n".into()))),
            Verdict::Failure { .. }
        ));
    }

    #[test]
    fn usage_is_read_from_a_body_or_from_the_last_stream_event_with_usage() {
        let body =
            serde_json::json!({"usage": {"prompt_tokens": 5, "completion_tokens": 2, "cost": 0.5}});
        assert_eq!(usage_of(&ok(body)).input_tokens, Some(5));
        let sse = Value::String(
            "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":4}}\n\ndata: [DONE]\n".into(),
        );
        let u = usage_of(&ok(sse));
        assert_eq!(
            (u.input_tokens, u.output_tokens, u.cost_usd),
            (Some(9), Some(4), None)
        );
    }
}
