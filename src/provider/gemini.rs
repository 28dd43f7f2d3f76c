//! Google's Gemini API (`gemini:`): `generateContent` (and `streamGenerateContent` for a
//! worker's stream), the key in the `x-goog-api-key` header (never `?key=` in a URL, which
//! would reach logs and cassettes), `GEMINI_API_KEY` or `GOOGLE_API_KEY`, `effort` as
//! `thinkingConfig.thinkingBudget`, usage from `usageMetadata`.

use serde_json::{Value, json};

use super::openai::{error_object, excerpt, failure_of};
use super::wire::{Api, Call, Forward, sse_data};
use super::{ChatRequest, Completion, Provider};
use crate::cassette::{Accept, CallError, HttpRequest, HttpResponse, Verdict};
use crate::results::Usage;
use crate::suite::Contender;
use crate::suite::config::Pricing;

/// The Gemini API, where a section without `base_url` sends.
pub const GEMINI_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// The Gemini provider.
#[derive(Debug, Clone, Copy, Default)]
pub struct Gemini;

/// The `thinkingBudget` an effort asks for (0 turns thinking off where the model allows):
///
/// | effort | thinkingBudget |
/// |---|---|
/// | none | 0 |
/// | minimal | 512 |
/// | low | 1024 |
/// | medium | 8192 |
/// | high | 24576 |
/// | xhigh | 32768 |
pub fn gemini_thinking_budget(effort: &str) -> u32 {
    match effort {
        "none" => 0,
        "minimal" => 512,
        "low" => 1024,
        "medium" => 8192,
        "high" => 24576,
        _ => 32768,
    }
}

impl Provider for Gemini {
    /// `api_key_env`, else `GEMINI_API_KEY` (read from `GOOGLE_API_KEY` when only that one
    /// is set, the names Google's SDKs read: [`crate::suite::Suite::key_var`]).
    fn key_env(&self, c: &Contender) -> Option<String> {
        Some(
            c.kind
                .api_key_env
                .clone()
                .unwrap_or_else(|| crate::env::EnvVars::GEMINI_API_KEY.into()),
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
                .unwrap_or_else(|| GEMINI_URL.to_string()),
        )
    }

    fn build_request(
        &self,
        c: &Contender,
        req: &ChatRequest,
        key: Option<&str>,
    ) -> Result<HttpRequest, CallError> {
        let mut body = json!({
            // Gemini's turns are `user` and `model`, each a list of parts.
            "contents": req.turns().iter().map(|t| json!({
                "role": if t["role"] == "assistant" { "model" } else { "user" },
                "parts": [{"text": t["content"].as_str().unwrap_or_default()}],
            })).collect::<Vec<_>>(),
        });
        if let Some(s) = &req.system {
            body["systemInstruction"] = json!({"parts": [{"text": s}]});
        }
        if req.json {
            body["generationConfig"] = json!({"responseMimeType": "application/json"});
        }
        if let Some(t) = &req.tools {
            body["tools"] = tools(t);
        }
        if let Some(choice) = &req.tool_choice {
            body["toolConfig"] = json!({"functionCallingConfig": function_calling(choice)});
        }
        Ok(self.request(c, settings(c, body), false, key))
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
            .pointer("/candidates/0/content/parts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            // A thought summary is not the answer.
            .filter(|p| p.get("thought").and_then(Value::as_bool) != Some(true))
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect();
        let usage = super::priced(usage(&resp.body), pricing);
        // `finishReason: "MAX_TOKENS"`: Gemini's word for a reply cut at the limit.
        let truncated = (resp
            .body
            .pointer("/candidates/0/finishReason")
            .and_then(Value::as_str)
            == Some("MAX_TOKENS"))
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
        Api::Gemini
    }

    fn forward_call(&self, c: &Contender, call: &Call, key: Option<&str>) -> Option<Forward> {
        (call.api == Api::Gemini).then(|| Forward {
            request: self.request(c, settings(c, call.body.clone()), call.stream, key),
            accept,
            usage,
        })
    }
}

impl Gemini {
    fn request(&self, c: &Contender, body: Value, stream: bool, key: Option<&str>) -> HttpRequest {
        let base = self.base_url(c).unwrap_or_default();
        let model = c.info.model.trim_start_matches("models/");
        let method = if stream {
            "streamGenerateContent?alt=sse"
        } else {
            "generateContent"
        };
        let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
        if let Some(k) = key {
            headers.push(("x-goog-api-key".into(), k.to_string()));
        }
        HttpRequest {
            method: "POST".into(),
            url: format!("{base}/models/{model}:{method}"),
            headers,
            body: Some(body),
        }
    }
}

/// The contender's temperature, max tokens and effort in the body's `generationConfig`
/// (the model is in the URL).
fn settings(c: &Contender, mut body: Value) -> Value {
    let Some(obj) = body.as_object_mut() else {
        return body;
    };
    let config = obj.entry("generationConfig").or_insert_with(|| json!({}));
    if !config.is_object() {
        *config = json!({});
    }
    if let Some(t) = c.temperature {
        config["temperature"] = json!(t);
    }
    if let Some(m) = c.info.max_tokens {
        config["maxOutputTokens"] = json!(m);
    }
    if let Some(e) = &c.info.effort {
        let thinking = config
            .as_object_mut()
            .expect("an object")
            .entry("thinkingConfig")
            .or_insert_with(|| json!({}));
        if !thinking.is_object() {
            *thinking = json!({});
        }
        thinking["thinkingBudget"] = json!(gemini_thinking_budget(e));
    }
    if config.as_object().is_some_and(|o| o.is_empty()) {
        obj.remove("generationConfig");
    }
    body
}

/// Whether a 2xx is an answer: JSON with `candidates` (or a `promptFeedback` saying the
/// prompt was blocked: the model's refusal) and no error, or a stream with no event
/// carrying an error.
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
            .find_map(|e| error_object(e))
            .map_or(Verdict::Success, failure_of);
    }
    if let Some(e) = error_object(&resp.body) {
        return failure_of(e);
    }
    if resp.body.get("candidates").is_some_and(Value::is_array)
        || resp.body.get("promptFeedback").is_some()
    {
        return Verdict::Success;
    }
    Verdict::Failure {
        reason: format!("response has no candidates: {}", excerpt(&resp.body)),
        transient: false,
    }
}

/// The prompt adapter's tools (OpenAI function definitions) as Gemini's: the functions in
/// one `{functionDeclarations: [{name, description, parametersJsonSchema}]}` (their
/// parameters are JSON Schema, which `parametersJsonSchema` takes as is; `parameters`
/// wants Gemini's OpenAPI subset), then each entry of Gemini's own (`{googleSearch: {}}`)
/// as written.
fn tools(offered: &Value) -> Value {
    use super::tools::Tool;
    let mut declarations = Vec::new();
    let mut own = Vec::new();
    for t in super::tools::tools(offered) {
        match t {
            Tool::Function(f) => {
                let mut d = json!({"name": f.name});
                if let Some(text) = f.description {
                    d["description"] = json!(text);
                }
                if let Some(p) = f.parameters {
                    d["parametersJsonSchema"] = p.clone();
                }
                declarations.push(d);
            }
            Tool::Own(v) => own.push(v.clone()),
        }
    }
    let mut out = Vec::new();
    if !declarations.is_empty() {
        out.push(json!({"functionDeclarations": declarations}));
    }
    out.extend(own);
    Value::Array(out)
}

/// OpenAI's `tool_choice` as Gemini's `functionCallingConfig`: `mode` `AUTO`, `NONE` or
/// `ANY` (`required`), a named function `ANY` with `allowedFunctionNames: [name]`.
fn function_calling(choice: &Value) -> Value {
    use super::tools::Choice;
    match super::tools::choice(choice) {
        Choice::Auto => json!({"mode": "AUTO"}),
        Choice::None => json!({"mode": "NONE"}),
        Choice::Required => json!({"mode": "ANY"}),
        Choice::Named(name) => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
        Choice::Own(v) => v.clone(),
    }
}

/// Tokens from `usageMetadata` (thoughts count as output: they are billed so), of a body or
/// of the last stream event carrying it.
pub fn usage(body: &Value) -> Usage {
    let of = |m: &Value| {
        let num = |k: &str| m.get(k).and_then(Value::as_u64);
        let output = match (num("candidatesTokenCount"), num("thoughtsTokenCount")) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        Usage {
            input_tokens: num("promptTokenCount"),
            output_tokens: output,
            cached_tokens: num("cachedContentTokenCount"),
            reasoning_tokens: num("thoughtsTokenCount"),
            ..Usage::default()
        }
    };
    match body {
        Value::String(text) => sse_data(text)
            .iter()
            .rev()
            .find_map(|e| e.get("usageMetadata").map(of))
            .unwrap_or_default(),
        _ => body.get("usageMetadata").map(of).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_counts_thoughts_as_output_and_a_stream_s_last_metadata_wins() {
        let body = json!({"usageMetadata": {"promptTokenCount": 8, "candidatesTokenCount": 3, "thoughtsTokenCount": 4}});
        let u = usage(&body);
        assert_eq!((u.input_tokens, u.output_tokens), (Some(8), Some(7)));
        let stream = "data: {\"candidates\":[],\"usageMetadata\":{\"promptTokenCount\":8}}\r\n\r\ndata: {\"candidates\":[],\"usageMetadata\":{\"promptTokenCount\":8,\"candidatesTokenCount\":2}}\r\n\r\n";
        let u = usage(&Value::String(stream.into()));
        assert_eq!((u.input_tokens, u.output_tokens), (Some(8), Some(2)));
    }

    #[test]
    fn every_openai_tool_choice_has_its_function_calling_mode_and_its_own_passes_as_written() {
        assert_eq!(function_calling(&json!("auto")), json!({"mode": "AUTO"}));
        assert_eq!(function_calling(&json!("none")), json!({"mode": "NONE"}));
        assert_eq!(function_calling(&json!("required")), json!({"mode": "ANY"}));
        let own = json!({"mode": "VALIDATED"});
        assert_eq!(function_calling(&own), own);
        // Functions in one declarations tool, Gemini's own tools after it.
        let offered =
            json!([{"type": "function", "function": {"name": "f"}}, {"googleSearch": {}}]);
        assert_eq!(
            tools(&offered),
            json!([{"functionDeclarations": [{"name": "f"}]}, {"googleSearch": {}}])
        );
        assert_eq!(
            tools(&json!([{"googleSearch": {}}])),
            json!([{"googleSearch": {}}])
        );
    }
}
