//! The OpenAI Responses API (`openai:` or a `base_url` section with `api: responses`):
//! `input` and `instructions` in, `output[]` out, `reasoning.effort`, `max_output_tokens`.
//! Also how any OpenAI-shaped provider forwards a worker's `/v1/responses` and
//! `/v1/embeddings` calls.

use serde_json::{Value, json};

use super::openai::{Flavour, OpenAiCompatible, error_object, excerpt, failure_of};
use super::wire::{Api, Call, Forward, sse_data};
use super::{ChatRequest, Completion, Provider};
use crate::cassette::{Accept, CallError, HttpRequest, HttpResponse, Verdict};
use crate::results::Usage;
use crate::suite::Contender;
use crate::suite::config::Pricing;

/// The Responses API provider: OpenAI's (`OPENAI_API_KEY`), or a section's `base_url` and
/// `api_key_env`.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAiResponses;

/// Its OpenAI-compatible twin, for the headers, the URL and the chat calls it forwards.
const TWIN: OpenAiCompatible = OpenAiCompatible {
    flavour: Flavour::OpenAi,
};

impl Provider for OpenAiResponses {
    fn key_env(&self, c: &Contender) -> Option<String> {
        Some(
            c.kind
                .api_key_env
                .clone()
                .unwrap_or_else(|| "OPENAI_API_KEY".into()),
        )
    }

    fn sends(&self) -> bool {
        true
    }

    fn base_url(&self, c: &Contender) -> Option<String> {
        TWIN.base_url(c)
    }

    fn build_request(
        &self,
        c: &Contender,
        req: &ChatRequest,
        key: Option<&str>,
    ) -> Result<HttpRequest, CallError> {
        // A conversation goes as input items; the user message alone as text.
        let input = if req.messages.is_empty() {
            json!(req.user)
        } else {
            json!(req.turns())
        };
        let mut body = json!({ "model": c.info.model, "input": input });
        if let Some(s) = &req.system {
            body["instructions"] = json!(s);
        }
        if req.json {
            body["text"] = json!({"format": {"type": "json_object"}});
        }
        if let Some(t) = &req.tools {
            body["tools"] = tools(t);
        }
        if let Some(choice) = &req.tool_choice {
            body["tool_choice"] = tool_choice(choice);
        }
        Ok(TWIN.forward_to(c, "/responses", contender_settings(c, body), key))
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
        let usage = super::priced(usage(&resp.body), pricing);
        let text = output_text(&resp.body);
        // An `incomplete` response cut at `max_output_tokens`.
        let truncated = (resp
            .body
            .pointer("/incomplete_details/reason")
            .and_then(Value::as_str)
            == Some("max_output_tokens"))
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
        Api::Responses
    }

    fn forward_call(&self, c: &Contender, call: &Call, key: Option<&str>) -> Option<Forward> {
        TWIN.forward_call(c, call, key)
    }
}

/// The contender's model, temperature, max tokens and effort on a Responses body (effort
/// into the body's own `reasoning` object, beside a `summary` it may ask for).
pub(super) fn contender_settings(c: &Contender, mut body: Value) -> Value {
    let Some(obj) = body.as_object_mut() else {
        return body;
    };
    obj.insert("model".into(), json!(c.info.model));
    if let Some(t) = c.temperature {
        obj.insert("temperature".into(), json!(t));
    }
    if let Some(m) = c.info.max_tokens {
        obj.insert("max_output_tokens".into(), json!(m));
    }
    if let Some(e) = &c.info.effort {
        let reasoning = obj.entry("reasoning").or_insert_with(|| json!({}));
        if !reasoning.is_object() {
            *reasoning = json!({});
        }
        reasoning["effort"] = json!(e);
    }
    body
}

/// The prompt adapter's tools (OpenAI chat function definitions) as the Responses API's
/// flat `{type: function, name, description, parameters, strict}`; an entry of its own
/// (`{type: web_search}`) as written. `strict` is the definition's, else `false`: chat
/// completions' default, where the Responses API's own default (strict) would refuse
/// the schemas chat completions takes.
fn tools(offered: &Value) -> Value {
    use super::tools::Tool;
    super::tools::tools(offered)
        .into_iter()
        .map(|t| match t {
            Tool::Function(f) => {
                let mut tool = json!({
                    "type": "function",
                    "name": f.name,
                    "parameters": f.parameters.cloned().unwrap_or_else(super::tools::no_arguments),
                    "strict": f.strict.unwrap_or(false),
                });
                if let Some(d) = f.description {
                    tool["description"] = json!(d);
                }
                tool
            }
            Tool::Own(v) => v.clone(),
        })
        .collect()
}

/// OpenAI's chat `tool_choice` as the Responses API's: the same words (`auto`, `none`,
/// `required`), a named function flat as `{type: function, name}`.
fn tool_choice(choice: &Value) -> Value {
    use super::tools::Choice;
    match super::tools::choice(choice) {
        Choice::Auto => json!("auto"),
        Choice::None => json!("none"),
        Choice::Required => json!("required"),
        Choice::Named(name) => json!({"type": "function", "name": name}),
        Choice::Own(v) => v.clone(),
    }
}

/// The text of a response: every `output_text` of its `message` items, in order (reasoning
/// items left out).
pub(super) fn output_text(body: &Value) -> String {
    body.get("output")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|item| item.get("type").and_then(Value::as_str) == Some("message"))
        .filter_map(|item| item.get("content").and_then(Value::as_array))
        .flatten()
        .filter(|part| part.get("type").and_then(Value::as_str) == Some("output_text"))
        .filter_map(|part| part.get("text").and_then(Value::as_str))
        .collect()
}

/// Whether a 2xx is a response: JSON with an `output` list and no error (`"error": null`
/// is none; a `failed` status is one), or a stream with no `error` or `response.failed`
/// event.
pub fn accept(resp: &HttpResponse) -> Verdict {
    if let Value::String(text) = &resp.body {
        let events = sse_data(text);
        if events.is_empty() {
            return Verdict::Failure {
                reason: format!("response is not JSON: {}", excerpt(&resp.body)),
                transient: false,
            };
        }
        for e in &events {
            match e.get("type").and_then(Value::as_str) {
                Some("error") => return failure_of(e.get("error").unwrap_or(e)),
                Some("response.failed") => {
                    return failure_of(
                        e.pointer("/response/error")
                            .filter(|v| !v.is_null())
                            .unwrap_or(e),
                    );
                }
                _ => {}
            }
        }
        return Verdict::Success;
    }
    if let Some(e) = error_object(&resp.body) {
        return failure_of(e);
    }
    match resp.body.get("output") {
        Some(Value::Array(_)) => Verdict::Success,
        _ => Verdict::Failure {
            reason: format!("response has no output: {}", excerpt(&resp.body)),
            transient: false,
        },
    }
}

/// Tokens of a response body (`usage.input_tokens`, `usage.output_tokens`), or of a
/// stream's `response.completed` event.
pub fn usage(body: &Value) -> Usage {
    let of = |u: &Value| Usage {
        input_tokens: u.get("input_tokens").and_then(Value::as_u64),
        output_tokens: u.get("output_tokens").and_then(Value::as_u64),
        cost_usd: u.get("cost").and_then(Value::as_f64),
        cached_tokens: u
            .pointer("/input_tokens_details/cached_tokens")
            .and_then(Value::as_u64),
        reasoning_tokens: u
            .pointer("/output_tokens_details/reasoning_tokens")
            .and_then(Value::as_u64),
        ..Usage::default()
    };
    match body {
        Value::String(text) => sse_data(text)
            .iter()
            .rev()
            .find_map(|e| {
                e.pointer("/response/usage")
                    .filter(|u| u.is_object())
                    .map(of)
            })
            .unwrap_or_default(),
        _ => body.get("usage").map(of).unwrap_or_default(),
    }
}

/// Whether a 2xx of `/v1/embeddings` is one: a `data` list and no error.
pub fn accept_embeddings(resp: &HttpResponse) -> Verdict {
    if let Some(e) = error_object(&resp.body) {
        return failure_of(e);
    }
    match resp.body.get("data") {
        Some(Value::Array(_)) => Verdict::Success,
        _ => Verdict::Failure {
            reason: format!("response has no data: {}", excerpt(&resp.body)),
            transient: false,
        },
    }
}

/// How an OpenAI-shaped provider forwards a worker's `/v1/responses` or `/v1/embeddings`
/// call: the contender's settings on a Responses body; an embeddings call keeps its own
/// model (an embedding model is not the contender) and is only sent to the contender's
/// server with its key.
pub(super) fn forward(
    twin: &OpenAiCompatible,
    c: &Contender,
    call: &Call,
    key: Option<&str>,
) -> Option<Forward> {
    match call.api {
        Api::Responses => Some(Forward {
            request: twin.forward_to(
                c,
                "/responses",
                contender_settings(c, call.body.clone()),
                key,
            ),
            accept,
            usage,
        }),
        Api::Embeddings => Some(Forward {
            request: twin.forward_to(c, "/embeddings", call.body.clone(), key),
            accept: accept_embeddings,
            usage: super::usage_in,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(body: Value) -> HttpResponse {
        HttpResponse {
            status: 200,
            headers: vec![],
            body,
            latency: std::time::Duration::ZERO,
            raw: None,
        }
    }

    #[test]
    fn a_failed_response_or_an_error_event_is_a_failure_and_error_null_is_none() {
        let good = json!({"output": [], "error": null});
        assert_eq!(accept(&ok(good)), Verdict::Success);
        assert!(matches!(
            accept(&ok(
                json!({"status": "failed", "error": {"code": "server_error", "message": "boom"}, "output": []})
            )),
            Verdict::Failure {
                transient: true,
                ..
            }
        ));
        let stream = "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"error\":{\"code\":\"rate_limit_exceeded\",\"message\":\"slow\"}}}\n\n";
        assert!(matches!(
            accept(&ok(Value::String(stream.into()))),
            Verdict::Failure {
                transient: true,
                ..
            }
        ));
    }

    #[test]
    fn every_openai_tool_choice_has_its_responses_shape_and_a_strict_function_stays_strict() {
        assert_eq!(tool_choice(&json!("auto")), json!("auto"));
        assert_eq!(tool_choice(&json!("none")), json!("none"));
        assert_eq!(tool_choice(&json!("required")), json!("required"));
        let own = json!({"type": "function", "name": "f"});
        assert_eq!(tool_choice(&own), own);
        let offered = json!([
            {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}, "strict": true}},
            {"type": "web_search"},
        ]);
        assert_eq!(
            tools(&offered),
            json!([{"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": true},
                   {"type": "web_search"}])
        );
    }
}
