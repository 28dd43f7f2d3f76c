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

    /// The call of an MCP `tools/call` request body (`{method, params: {name,
    /// arguments}}`); `None` for any other message.
    pub fn of_mcp_request(body: &Value) -> Option<ToolCall> {
        if body.get("method").and_then(Value::as_str) != Some("tools/call") {
            return None;
        }
        let params = body.get("params")?;
        Some(ToolCall {
            name: params.get("name")?.as_str()?.to_string(),
            arguments: params
                .get("arguments")
                .cloned()
                .unwrap_or_else(|| Value::Object(Default::default())),
        })
    }

    /// The calls a case made: those the model asked for (`asked`, `None`: nobody could
    /// see), and the tools an MCP server ran (`ran`). A tool run is the model's call when
    /// one it asked for has the same name and arguments and is not yet paired with another
    /// run: counted once. A run no asked call pairs with (an agent calling a tool on its
    /// own, or with other arguments than the model's) is a call of its own, after the
    /// model's.
    pub fn with_ran(asked: Option<Vec<ToolCall>>, ran: &[ToolCall]) -> Option<Vec<ToolCall>> {
        if ran.is_empty() {
            return asked;
        }
        let mut calls = asked.unwrap_or_default();
        let mut paired = vec![false; calls.len()];
        for run in ran {
            match (0..calls.len()).find(|&i| !paired[i] && calls[i] == *run) {
                Some(i) => paired[i] = true,
                None => {
                    calls.push(run.clone());
                    paired.push(true);
                }
            }
        }
        Some(calls)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_tool_an_mcp_server_ran_counts_once_with_the_models_call_and_alone_without_it() {
        let call = |name: &str, order: &str| ToolCall {
            name: name.into(),
            arguments: json!({"order": order}),
        };
        let ran = ToolCall::of_mcp_request(&json!({"jsonrpc": "2.0", "id": 3,
            "method": "tools/call", "params": {"name": "lookup", "arguments": {"order": "42"}}}))
        .unwrap();
        assert_eq!(ran, call("lookup", "42"));
        assert_eq!(
            ToolCall::of_mcp_request(&json!({"method": "tools/list", "params": {}})),
            None
        );
        // Nothing ran: what the model asked, `None` kept (no information is not no calls).
        assert_eq!(ToolCall::with_ran(None, &[]), None);
        // The model asked lookup(42) twice and the agent ran it twice: two calls, not four.
        let asked = vec![call("lookup", "42"), call("lookup", "42")];
        assert_eq!(
            ToolCall::with_ran(Some(asked.clone()), &[ran.clone(), ran.clone()]),
            Some(asked.clone())
        );
        // A run with other arguments, or with no model call seen, is a call of its own.
        assert_eq!(
            ToolCall::with_ran(Some(asked.clone()), &[call("lookup", "43")]),
            Some(vec![
                call("lookup", "42"),
                call("lookup", "42"),
                call("lookup", "43")
            ])
        );
        assert_eq!(
            ToolCall::with_ran(None, std::slice::from_ref(&ran)),
            Some(vec![ran])
        );
    }

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
