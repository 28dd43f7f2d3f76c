//! Anthropic's Messages API (`anthropic:`): `x-api-key` and `anthropic-version` headers,
//! `ANTHROPIC_API_KEY`, `max_tokens` always sent (the API requires it), `effort` as extended
//! thinking with a budget from [`thinking_budget`]'s table.

use serde_json::{Value, json};

use super::openai::{error_object, excerpt, failure_of};
use super::wire::{Api, Call, Forward, sse_data};
use super::{ChatRequest, Completion, Provider};
use crate::cassette::{Accept, CallError, HttpRequest, HttpResponse, Verdict};
use crate::results::Usage;
use crate::suite::Contender;
use crate::suite::config::Pricing;

/// Anthropic's API, where a section without `base_url` sends.
pub const ANTHROPIC_URL: &str = "https://api.anthropic.com/v1";
/// The `anthropic-version` header sent (a worker's own is kept).
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// `max_tokens` when neither the model entry, `defaults:` nor `--max-tokens` sets one: the
/// API refuses a request without it.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The Messages API provider.
#[derive(Debug, Clone, Copy, Default)]
pub struct Anthropic;

/// The thinking budget (`budget_tokens`) an effort asks for; `None` for `none` (thinking
/// disabled). The API's minimum is 1024:
///
/// | effort | budget_tokens |
/// |---|---|
/// | minimal | 1024 |
/// | low | 2048 |
/// | medium | 8192 |
/// | high | 16384 |
/// | xhigh | 32768 |
///
/// `max_tokens` must exceed the budget: when it does not, the budget is added to it, so
/// the reply keeps the tokens it was given.
pub fn thinking_budget(effort: &str) -> Option<u32> {
    match effort {
        "none" => None,
        "minimal" => Some(1024),
        "low" => Some(2048),
        "medium" => Some(8192),
        "high" => Some(16384),
        _ => Some(32768),
    }
}

impl Provider for Anthropic {
    fn key_env(&self, c: &Contender) -> Option<String> {
        Some(
            c.kind
                .api_key_env
                .clone()
                .unwrap_or_else(|| "ANTHROPIC_API_KEY".into()),
        )
    }

    fn sends(&self) -> bool {
        true
    }

    fn base_url(&self, c: &Contender) -> Option<String> {
        Some(
            c.kind
                .base_url
                .clone()
                .unwrap_or_else(|| ANTHROPIC_URL.to_string()),
        )
    }

    fn build_request(
        &self,
        c: &Contender,
        req: &ChatRequest,
        key: Option<&str>,
    ) -> Result<HttpRequest, CallError> {
        let mut body = json!({
            "model": c.info.model,
            "messages": req.turns(),
        });
        if let Some(s) = &req.system {
            body["system"] = json!(s);
        }
        if let Some(t) = &req.tools {
            body["tools"] = tools(t);
        }
        if let Some(choice) = &req.tool_choice {
            body["tool_choice"] = tool_choice(choice);
        }
        Ok(self.request(c, settings(c, body, true), key, &[]))
    }

    fn accept(&self) -> Accept {
        accept
    }

    fn read_response(
        &self,
        c: &Contender,
        resp: HttpResponse,
        pricing: Option<&Pricing>,
    ) -> Result<Completion, CallError> {
        let latency_s = resp.latency.as_secs_f64();
        super::refuse_failure(c, &resp, accept, self.key_env(c).as_deref())?;
        let text: String = resp
            .body
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect();
        let usage = super::priced(usage(&resp.body), pricing);
        // `stop_reason: "max_tokens"`: Anthropic's word for a reply cut at the limit.
        let truncated = (resp.body.get("stop_reason").and_then(Value::as_str)
            == Some("max_tokens"))
        .then(|| super::cut_note(c.info.max_tokens, &text, &usage));
        Ok(Completion {
            text,
            usage,
            latency_s,
            truncated,
            ..Completion::default()
        })
    }

    fn api(&self) -> Api {
        Api::AnthropicMessages
    }

    fn forward_call(&self, c: &Contender, call: &Call, key: Option<&str>) -> Option<Forward> {
        (call.api == Api::AnthropicMessages).then(|| Forward {
            request: self.request(c, settings(c, call.body.clone(), false), key, &call.headers),
            accept,
            usage,
        })
    }
}

impl Anthropic {
    fn request(
        &self,
        c: &Contender,
        body: Value,
        key: Option<&str>,
        call_headers: &[(String, String)],
    ) -> HttpRequest {
        let header = |name: &str| {
            call_headers
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        let mut headers = vec![
            ("content-type".to_string(), "application/json".to_string()),
            (
                "anthropic-version".to_string(),
                header("anthropic-version").unwrap_or_else(|| ANTHROPIC_VERSION.into()),
            ),
        ];
        if let Some(beta) = header("anthropic-beta") {
            headers.push(("anthropic-beta".into(), beta));
        }
        if let Some(k) = key {
            headers.push(("x-api-key".into(), k.to_string()));
        }
        HttpRequest {
            method: "POST".into(),
            url: format!("{}/messages", self.base_url(c).unwrap_or_default()),
            headers,
            body: Some(body),
            raw: None,
        }
    }
}

/// The contender's model, temperature, max tokens and effort on a Messages body.
/// `max_tokens` is the contender's, else the body's own (a worker's), else
/// [`DEFAULT_MAX_TOKENS`] (`always`: the prompt adapter's body has none).
fn settings(c: &Contender, mut body: Value, always: bool) -> Value {
    let Some(obj) = body.as_object_mut() else {
        return body;
    };
    obj.insert("model".into(), json!(c.info.model));
    if let Some(t) = c.temperature {
        obj.insert("temperature".into(), json!(t));
    }
    let own = obj.get("max_tokens").and_then(Value::as_u64);
    let mut max = c
        .info
        .max_tokens
        .map(u64::from)
        .or(own)
        .or(always.then_some(u64::from(DEFAULT_MAX_TOKENS)));
    if let Some(e) = &c.info.effort {
        match thinking_budget(e) {
            Some(budget) => {
                let budget = u64::from(budget);
                let m = max.unwrap_or(u64::from(DEFAULT_MAX_TOKENS));
                max = Some(if m > budget { m } else { m + budget });
                obj.insert(
                    "thinking".into(),
                    json!({"type": "enabled", "budget_tokens": budget}),
                );
            }
            None => {
                obj.insert("thinking".into(), json!({"type": "disabled"}));
            }
        }
    }
    if let Some(m) = max {
        obj.insert("max_tokens".into(), json!(m));
    }
    body
}

/// The prompt adapter's tools (OpenAI function definitions) as the Messages API's
/// `[{name, description, input_schema}]`; an entry of Anthropic's own (a server tool) as
/// written.
fn tools(offered: &Value) -> Value {
    use super::tools::Tool;
    super::tools::tools(offered)
        .into_iter()
        .map(|t| match t {
            Tool::Function(f) => {
                let mut tool = json!({
                    "name": f.name,
                    // Required by the API: a function of no arguments has an empty object.
                    "input_schema": f.parameters.cloned().unwrap_or_else(super::tools::no_arguments),
                });
                if let Some(d) = f.description {
                    tool["description"] = json!(d);
                }
                if let Some(strict) = f.strict {
                    tool["strict"] = json!(strict);
                }
                tool
            }
            Tool::Own(v) => v.clone(),
        })
        .collect()
}

/// OpenAI's `tool_choice` as the Messages API's `{type: auto | none | any | tool}`:
/// `required` is `any`, a named function is `{type: tool, name}`.
fn tool_choice(choice: &Value) -> Value {
    use super::tools::Choice;
    match super::tools::choice(choice) {
        Choice::Auto => json!({"type": "auto"}),
        Choice::None => json!({"type": "none"}),
        Choice::Required => json!({"type": "any"}),
        Choice::Named(name) => json!({"type": "tool", "name": name}),
        Choice::Own(v) => v.clone(),
    }
}

/// Whether a 2xx is a message: JSON with a `content` list and no error, or a stream with no
/// `error` event. The one judgement of Anthropic's 2xx, for the prompt adapter and the
/// gateway alike.
pub fn accept(resp: &HttpResponse) -> Verdict {
    if let Value::String(text) = &resp.body {
        let events = sse_data(text);
        if events.is_empty() {
            return Verdict::Failure {
                reason: format!("response is not JSON: {}", excerpt(&resp.body)),
                transient: false,
            };
        }
        return events
            .iter()
            .find(|e| e.get("type").and_then(Value::as_str) == Some("error"))
            .map_or(Verdict::Success, |e| {
                failure_of(e.get("error").unwrap_or(e))
            });
    }
    if let Some(e) = error_object(&resp.body) {
        return failure_of(e);
    }
    match resp.body.get("content") {
        Some(Value::Array(_)) => Verdict::Success,
        _ => Verdict::Failure {
            reason: format!("response has no content: {}", excerpt(&resp.body)),
            transient: false,
        },
    }
}

/// Tokens of a message (`usage.input_tokens`, `usage.output_tokens`), or of a stream: the
/// input from `message_start`, the output from the last `message_delta` (its counts are
/// cumulative).
pub fn usage(body: &Value) -> Usage {
    let num = |u: Option<&Value>, k: &str| u.and_then(|u| u.get(k)).and_then(Value::as_u64);
    match body {
        Value::String(text) => {
            let mut usage = Usage::default();
            for e in sse_data(text) {
                match e.get("type").and_then(Value::as_str) {
                    Some("message_start") => {
                        let u = e.pointer("/message/usage");
                        usage.input_tokens = num(u, "input_tokens").or(usage.input_tokens);
                        usage.output_tokens = num(u, "output_tokens").or(usage.output_tokens);
                    }
                    Some("message_delta") => {
                        let u = e.get("usage");
                        usage.input_tokens = num(u, "input_tokens").or(usage.input_tokens);
                        usage.output_tokens = num(u, "output_tokens").or(usage.output_tokens);
                    }
                    _ => {}
                }
            }
            usage
        }
        _ => {
            // `input_tokens` counts only what missed the cache; reads and writes are apart.
            let u = body.get("usage");
            let cached = num(u, "cache_read_input_tokens");
            let written = num(u, "cache_creation_input_tokens");
            Usage {
                input_tokens: num(u, "input_tokens")
                    .map(|i| i + cached.unwrap_or(0) + written.unwrap_or(0)),
                output_tokens: num(u, "output_tokens"),
                cached_tokens: cached,
                ..Usage::default()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_s_usage_is_its_start_s_input_and_its_last_delta_s_output() {
        let text = [
            r#"{"type":"message_start","message":{"usage":{"input_tokens":12,"output_tokens":1}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}}"#,
            r#"{"type":"message_stop"}"#,
        ]
        .iter()
        .map(|e| format!("event: x\ndata: {e}\n\n"))
        .collect::<String>();
        let u = usage(&Value::String(text));
        assert_eq!((u.input_tokens, u.output_tokens), (Some(12), Some(5)));
    }

    #[test]
    fn an_error_event_or_body_is_a_failure_transient_when_overloaded() {
        let ok = |body: Value| HttpResponse {
            status: 200,
            headers: vec![],
            body,
            latency: std::time::Duration::ZERO,
            raw: None,
        };
        assert_eq!(
            accept(&ok(json!({"type": "message", "content": []}))),
            Verdict::Success
        );
        let overloaded = json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
        assert!(matches!(
            accept(&ok(overloaded.clone())),
            Verdict::Failure {
                transient: true,
                ..
            }
        ));
        let stream = format!("event: error\ndata: {overloaded}\n\n");
        assert!(matches!(
            accept(&ok(Value::String(stream))),
            Verdict::Failure {
                transient: true,
                ..
            }
        ));
    }

    #[test]
    fn every_openai_tool_choice_has_its_messages_api_word_and_its_own_passes_as_written() {
        assert_eq!(tool_choice(&json!("auto")), json!({"type": "auto"}));
        assert_eq!(tool_choice(&json!("none")), json!({"type": "none"}));
        assert_eq!(tool_choice(&json!("required")), json!({"type": "any"}));
        assert_eq!(
            tool_choice(&json!({"type": "function", "function": {"name": "f"}})),
            json!({"type": "tool", "name": "f"})
        );
        let own = json!({"type": "any", "disable_parallel_tool_use": true});
        assert_eq!(tool_choice(&own), own);
        // A server tool of Anthropic's own is sent as written, beside the functions.
        let offered = json!([{"type": "function", "function": {"name": "f"}},
                             {"type": "web_search_20250305", "name": "web_search"}]);
        assert_eq!(
            tools(&offered),
            json!([{"name": "f", "input_schema": {"type": "object", "properties": {}}},
                   {"type": "web_search_20250305", "name": "web_search"}])
        );
    }
}
