//! The OpenAI-compatible chat completions provider: OpenRouter, OpenAI, and any
//! `base_url` section (Ollama, vLLM, llama.cpp, LM Studio, LiteLLM).

use serde_json::{Value, json};

use super::{ChatRequest, Completion, price};
use crate::cassette::{CallError, HttpRequest, HttpResponse};
use crate::results::Usage;
use crate::suite::config::Pricing;
use crate::suite::{Contender, ProviderKind};

/// The request body and headers. Temperature, max tokens and effort are sent only when set.
pub fn build_request(c: &Contender, req: &ChatRequest, key: Option<&str>) -> HttpRequest {
    let base = match &c.kind {
        ProviderKind::OpenRouter { base_url }
        | ProviderKind::OpenAi { base_url }
        | ProviderKind::Custom { base_url, .. } => base_url.as_str(),
        _ => "",
    };
    let mut messages = Vec::new();
    if let Some(s) = &req.system {
        messages.push(json!({"role": "system", "content": s}));
    }
    messages.push(json!({"role": "user", "content": req.user}));
    let mut body = json!({ "model": c.info.model, "messages": messages });
    let obj = body.as_object_mut().expect("json! object");
    if let Some(t) = c.temperature {
        obj.insert("temperature".into(), json!(t));
    }
    if let Some(m) = c.info.max_tokens {
        let field = if matches!(c.kind, ProviderKind::OpenAi { .. }) {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        obj.insert(field.into(), json!(m));
    }
    if let Some(e) = &c.info.effort {
        match c.kind {
            ProviderKind::OpenRouter { .. } => {
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
    if matches!(c.kind, ProviderKind::OpenRouter { .. }) {
        headers.push(("x-title".to_string(), "llm-evals".to_string()));
    }
    HttpRequest {
        method: "POST".into(),
        url: format!("{base}/chat/completions"),
        headers,
        body: Some(body),
    }
}

/// Reads a chat completion. A non-2xx status or an `error` body is a transport failure (an
/// error of the case, never a 0); an empty answer is the model's and is left to the adapter.
pub fn parse_response(
    c: &Contender,
    resp: HttpResponse,
    pricing: Option<&Pricing>,
) -> Result<Completion, CallError> {
    let latency_s = resp.latency.as_secs_f64();
    let err_message = |v: &Value| -> Option<String> {
        let e = v.get("error")?;
        Some(
            e.get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| e.to_string()),
        )
    };
    if !(200..300).contains(&resp.status) {
        let detail = err_message(&resp.body).unwrap_or_else(|| excerpt(&resp.body));
        return Err(CallError::Transport(format!(
            "{}: HTTP {}: {detail}",
            c.id(),
            resp.status
        )));
    }
    if let Some(m) = err_message(&resp.body) {
        return Err(CallError::Transport(format!(
            "{}: provider error: {m}",
            c.id()
        )));
    }
    let Some(choice) = resp.body.get("choices").and_then(|c| c.get(0)) else {
        return Err(CallError::Transport(format!(
            "{}: response has no choices: {}",
            c.id(),
            excerpt(&resp.body)
        )));
    };
    let message = choice.get("message").cloned().unwrap_or(Value::Null);
    let text = match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    };
    let mut usage = usage_of(&resp.body);
    if usage.cost_usd.is_none() {
        usage.cost_usd = price(&usage, pricing);
    }
    Ok(Completion {
        text,
        usage,
        latency_s,
    })
}

fn excerpt(v: &Value) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut out: String = s.chars().take(200).collect();
    if s.chars().count() > 200 {
        out.push('…');
    }
    out
}

/// A request an exec adapter sent to the gateway, made the contender's: its model, and its
/// effort, temperature and max tokens where set, on the adapter's own body; the provider's
/// URL and headers, with the real key.
pub fn forward_request(c: &Contender, mut body: Value, key: Option<&str>) -> HttpRequest {
    let template = build_request(
        c,
        &ChatRequest {
            system: None,
            user: String::new(),
            json: false,
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
        if c.info.max_tokens.is_some() && matches!(c.kind, ProviderKind::OpenAi { .. }) {
            obj.remove("max_tokens");
        }
    }
    HttpRequest {
        body: Some(body),
        ..template
    }
}

/// Tokens and cost from an OpenAI-shaped response body, or from the last event that carries
/// `usage` in a server-sent-events body (`stream: true`).
pub fn usage_of(body: &Value) -> Usage {
    if let Value::String(text) = body {
        let last = text
            .lines()
            .rev()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|v| v.get("usage").is_some_and(|u| !u.is_null()));
        return last.map(|v| usage_of(&v)).unwrap_or_default();
    }
    let u = body.get("usage");
    let num = |k: &str| u.and_then(|u| u.get(k)).and_then(Value::as_u64);
    Usage {
        input_tokens: num("prompt_tokens").or_else(|| num("input_tokens")),
        output_tokens: num("completion_tokens").or_else(|| num("output_tokens")),
        cost_usd: u.and_then(|u| u.get("cost")).and_then(Value::as_f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_is_read_from_a_body_or_from_the_last_stream_event_with_usage() {
        let body =
            serde_json::json!({"usage": {"prompt_tokens": 5, "completion_tokens": 2, "cost": 0.5}});
        assert_eq!(usage_of(&body).input_tokens, Some(5));
        let sse = Value::String(
            "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":4}}\n\ndata: [DONE]\n".into(),
        );
        let u = usage_of(&sse);
        assert_eq!(
            (u.input_tokens, u.output_tokens, u.cost_usd),
            (Some(9), Some(4), None)
        );
    }
}
