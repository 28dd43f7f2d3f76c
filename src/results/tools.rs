//! Tool calls a model asked for, read from the responses that carried them: the one reader
//! of every wire shape evals speaks (OpenAI chat completions and Responses, Anthropic
//! messages, Gemini), so a prompt adapter's reply and an exec adapter's gateway see them
//! the same way, observed rather than guessed from the answer's text.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One call a model asked for: the function's name and its arguments (parsed JSON when the
/// wire sends them as a JSON string, as OpenAI does).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The function's name.
    pub name: String,
    /// Its arguments; `{}` when none were sent.
    #[serde(default)]
    pub arguments: Value,
}

impl ToolCall {
    /// The calls a response body asks for: `Some([])` for a response of a known shape with
    /// none, `None` for a body whose shape is unknown (nothing could be observed).
    pub fn observed_in(body: &Value) -> Option<Vec<ToolCall>> {
        let args = |v: Option<&Value>| match v {
            Some(Value::String(s)) => {
                serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
            }
            Some(v) => v.clone(),
            None => Value::Object(Default::default()),
        };
        let named = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
        // OpenAI chat completions: choices[].message.tool_calls[].function.
        if let Some(choices) = body.get("choices").and_then(Value::as_array) {
            let calls = choices
                .iter()
                .filter_map(|c| c.get("message")?.get("tool_calls")?.as_array())
                .flatten()
                .filter_map(|t| {
                    let f = t.get("function")?;
                    Some(ToolCall {
                        name: named(f, "name")?,
                        arguments: args(f.get("arguments")),
                    })
                })
                .collect();
            return Some(calls);
        }
        // OpenAI Responses: output[] of type function_call.
        if body.get("object").and_then(Value::as_str) == Some("response")
            && let Some(output) = body.get("output").and_then(Value::as_array)
        {
            return Some(
                output
                    .iter()
                    .filter(|o| o.get("type").and_then(Value::as_str) == Some("function_call"))
                    .filter_map(|o| {
                        Some(ToolCall {
                            name: named(o, "name")?,
                            arguments: args(o.get("arguments")),
                        })
                    })
                    .collect(),
            );
        }
        // Anthropic messages: content[] of type tool_use.
        if body.get("type").and_then(Value::as_str) == Some("message")
            && let Some(content) = body.get("content").and_then(Value::as_array)
        {
            return Some(
                content
                    .iter()
                    .filter(|c| c.get("type").and_then(Value::as_str) == Some("tool_use"))
                    .filter_map(|c| {
                        Some(ToolCall {
                            name: named(c, "name")?,
                            arguments: args(c.get("input")),
                        })
                    })
                    .collect(),
            );
        }
        // Gemini: candidates[].content.parts[].functionCall.
        if let Some(candidates) = body.get("candidates").and_then(Value::as_array) {
            return Some(
                candidates
                    .iter()
                    .filter_map(|c| c.get("content")?.get("parts")?.as_array())
                    .flatten()
                    .filter_map(|p| {
                        let f = p.get("functionCall")?;
                        Some(ToolCall {
                            name: named(f, "name")?,
                            arguments: args(f.get("args")),
                        })
                    })
                    .collect(),
            );
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn tool_calls_are_read_from_every_wire_shape_and_an_unknown_one_is_none() {
        let want = Some(vec![ToolCall {
            name: "weather".into(),
            arguments: json!({"city": "Paris"}),
        }]);
        let chat = json!({"choices": [{"message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "weather", "arguments": "{\"city\": \"Paris\"}"}}]}}]});
        assert_eq!(ToolCall::observed_in(&chat), want);
        let responses = json!({"object": "response", "output": [
            {"type": "function_call", "name": "weather", "arguments": "{\"city\":\"Paris\"}"}]});
        assert_eq!(ToolCall::observed_in(&responses), want);
        let anthropic = json!({"type": "message", "content": [
            {"type": "text", "text": "let me look"},
            {"type": "tool_use", "id": "t", "name": "weather", "input": {"city": "Paris"}}]});
        assert_eq!(ToolCall::observed_in(&anthropic), want);
        let gemini = json!({"candidates": [{"content": {"parts": [
            {"functionCall": {"name": "weather", "args": {"city": "Paris"}}}]}}]});
        assert_eq!(ToolCall::observed_in(&gemini), want);
        // A plain answer is "no calls"; a body of no known shape is "nobody could see".
        let plain = json!({"choices": [{"message": {"role": "assistant", "content": "hi"}}]});
        assert_eq!(ToolCall::observed_in(&plain), Some(vec![]));
        assert_eq!(ToolCall::observed_in(&json!({"answer": "Paris"})), None);
    }
}
