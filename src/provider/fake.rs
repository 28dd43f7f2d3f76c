//! The offline provider: deterministic answers from the prompt itself.
//!
//! `fake/echo` answers with the last JSON object in the user message (or the whole message
//! when it holds none); `fake/parrot` says the same object back in its own words (keys in
//! reverse order, pretty-printed). A suite whose inputs carry their answers scores 100% with
//! both. `fake/oracle` knows the answer: it replies with the case's `expected` value (as
//! JSON), so a suite whose inputs hold only the question (the one `evals init` writes)
//! scores 100% with it. All three make the pipeline testable without a network. There are
//! no other fake models: the plan refuses them.

use super::{ChatRequest, Completion, Provider};

/// The models of the offline `fake` provider.
const MODELS: &[&str] = &["echo", "parrot", "oracle"];
use crate::cassette::CallError;
use crate::results::Usage;
use crate::suite::{Case, Contender};

/// The `fake` provider (see the module docs).
#[derive(Debug, Clone, Copy, Default)]
pub struct Fake;

impl Provider for Fake {
    fn models(&self) -> Option<Vec<String>> {
        Some(MODELS.iter().map(|m| m.to_string()).collect())
    }

    fn answer(
        &self,
        contender: &Contender,
        case: &Case,
        req: &ChatRequest,
    ) -> Result<Completion, CallError> {
        Ok(complete(contender, case, req))
    }
}

fn complete(contender: &Contender, case: &Case, req: &ChatRequest) -> Completion {
    let text = match contender.info.model.as_str() {
        "echo" => last_json_object(&req.user).unwrap_or_else(|| req.user.clone()),
        // A string is said as it is (a text answer); anything else as compact JSON. A case
        // with no `expected` gets `{}`, as an unknown question would.
        "oracle" => match &case.expected {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => "{}".to_string(),
        },
        "parrot" => match last_json_object(&req.user)
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        {
            Some(serde_json::Value::Object(m)) => {
                let pairs: Vec<String> = m
                    .iter()
                    .rev()
                    .map(|(k, v)| format!("  {}: {}", serde_json::Value::String(k.clone()), v))
                    .collect();
                format!("{{\n{}\n}}", pairs.join(",\n"))
            }
            _ => req.user.clone(),
        },
        _ => "{}".to_string(),
    };
    let input_tokens = req.system.as_deref().map(words).unwrap_or(0) + words(&req.user);
    let output_tokens = words(&text);
    Completion {
        usage: Usage {
            input_tokens: Some(input_tokens),
            output_tokens: Some(output_tokens),
            cost_usd: Some(0.0),
            ..Usage::default()
        },
        text,
        latency_s: 0.0,
        ..Completion::default()
    }
}

fn words(s: &str) -> u64 {
    s.split_whitespace().count() as u64
}

fn last_json_object(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    for start in (0..bytes.len()).rev() {
        if bytes[start] == b'{' {
            let mut de =
                serde_json::Deserializer::from_str(&s[start..]).into_iter::<serde_json::Value>();
            if let Some(Ok(v @ serde_json::Value::Object(_))) = de.next() {
                // Prefer the outermost object that ends the text: keep scanning left while
                // a larger object still parses.
                let mut best = v;
                for s2 in (0..start).rev() {
                    if bytes[s2] == b'{' {
                        let mut de2 = serde_json::Deserializer::from_str(&s[s2..])
                            .into_iter::<serde_json::Value>();
                        if let Some(Ok(v2 @ serde_json::Value::Object(_))) = de2.next() {
                            best = v2;
                        }
                    }
                }
                return Some(best.to_string());
            }
        }
    }
    None
}
