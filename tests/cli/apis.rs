//! Every API users call: the native Anthropic, Gemini and OpenAI Responses providers of the
//! prompt adapter (the exact request each sends, the completion each reads), and the
//! unmodified official SDKs (Python `openai`, `anthropic`, `google-genai`; npm `openai`)
//! through exec adapters and the gateway: recorded against a wiremock upstream speaking each
//! API, streams included, then checked offline with the upstream gone.

use serde_json::{Value, json};
use wiremock::{Mock, Request, Respond, ResponseTemplate};

use crate::harness::{MINI_SCHEMA, Project};
use crate::mock::Server;

/// A prompt-adapter suite over one case, and the provider sections in `providers`.
fn prompt_suite(providers: &str) -> Project {
    Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "suite: apis\nrequest_types: [prompt]\nadapter:\n  kind: prompt\n  system: \"Answer in JSON.\"\n  user: \"{{{{ input }}}}\"\n  json: true\n{MINI_SCHEMA}defaults: {{ max_tokens: 64 }}\npricing:\n  claude-x: {{ input: 3.0, output: 15.0 }}\n{providers}"
            ),
        )
        .file(
            "evals/datasets/d/cases.jsonl",
            "{\"id\": \"one\", \"input\": \"What is it?\", \"expected\": {\"answer\": \"x\"}}\n",
        )
}

const LIVE: &[&str] = &["compare", "--cassettes", "live", "--no-autosave"];

/// The question a request asks, in whichever API it is.
fn question(body: &Value) -> String {
    let q = body
        .pointer("/messages/0/content")
        .or_else(|| body.pointer("/contents/0/parts/0/text"))
        .or_else(|| body.get("input"))
        .cloned()
        .unwrap_or_default();
    match q {
        Value::String(s) => s,
        // The Responses API's input as a list of messages.
        Value::Array(items) => items
            .last()
            .and_then(|m| m.get("content"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        _ => String::new(),
    }
}

fn sse(events: &[(&str, Value)]) -> ResponseTemplate {
    let text: String = events
        .iter()
        .map(|(name, data)| {
            if name.is_empty() {
                format!("data: {data}\n\n")
            } else {
                format!("event: {name}\ndata: {data}\n\n")
            }
        })
        .collect();
    ResponseTemplate::new(200).set_body_raw(text, "text/event-stream")
}

/// An upstream speaking all four APIs: OpenAI chat completions and Responses, Anthropic
/// Messages, Gemini generateContent; each in JSON or, asked so, as a stream. It answers
/// `{"answer": <the question>}` in two pieces, with 7 input and 3 output tokens.
struct Upstream;

impl Respond for Upstream {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let path = req.url.path().to_string();
        if path.ends_with("/models") {
            return ResponseTemplate::new(200).set_body_json(json!({"object": "list", "data": []}));
        }
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        let q = question(&body);
        let (head, tail) = ("{\"answer\": ".to_string(), format!("{}}}", json!(q)));
        let text = format!("{head}{tail}");
        let stream = body["stream"] == true || path.contains(":streamGenerateContent");
        let model = body["model"].clone();
        if path.ends_with("/chat/completions") {
            if !stream {
                return ResponseTemplate::new(200).set_body_json(json!({
                    "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": model,
                    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
                }));
            }
            let chunk = |delta: Value, finish: Value| {
                json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": model,
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            };
            let mut done = ResponseTemplate::new(200);
            let events = [
                ("", chunk(json!({"role": "assistant", "content": head}), Value::Null)),
                ("", chunk(json!({"content": tail}), Value::Null)),
                ("", chunk(json!({}), json!("stop"))),
                ("", json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": model, "choices": [],
                             "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}})),
            ];
            let text: String = events
                .iter()
                .map(|(_, d)| format!("data: {d}\n\n"))
                .chain(["data: [DONE]\n\n".to_string()])
                .collect();
            done = done.set_body_raw(text, "text/event-stream");
            return done;
        }
        if path.ends_with("/responses") {
            let response = |status: &str, output: Value, usage: Value| {
                json!({"id": "resp_1", "object": "response", "created_at": 0, "status": status, "model": model,
                       "output": output, "usage": usage, "error": null, "incomplete_details": null,
                       "instructions": null, "metadata": {}, "parallel_tool_calls": true, "temperature": 1.0,
                       "tool_choice": "auto", "tools": [], "top_p": 1.0})
            };
            let message = json!([{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                                  "content": [{"type": "output_text", "text": text, "annotations": []}]}]);
            let usage = json!({"input_tokens": 7, "output_tokens": 3, "total_tokens": 10,
                               "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}});
            if !stream {
                return ResponseTemplate::new(200).set_body_json(response("completed", message, usage));
            }
            let delta = |n: u64, d: &str| {
                json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
                       "content_index": 0, "delta": d, "sequence_number": n, "logprobs": []})
            };
            return sse(&[
                ("response.created", json!({"type": "response.created", "sequence_number": 0,
                                             "response": response("in_progress", json!([]), Value::Null)})),
                ("response.output_text.delta", delta(1, &head)),
                ("response.output_text.delta", delta(2, &tail)),
                ("response.completed", json!({"type": "response.completed", "sequence_number": 3,
                                               "response": response("completed", message, usage)})),
            ]);
        }
        if path.ends_with("/messages") {
            if !stream {
                return ResponseTemplate::new(200).set_body_json(json!({
                    "id": "msg_1", "type": "message", "role": "assistant", "model": model,
                    "content": [{"type": "text", "text": text}],
                    "stop_reason": "end_turn", "stop_sequence": null,
                    "usage": {"input_tokens": 7, "output_tokens": 3},
                }));
            }
            let delta = |t: &str| {
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}})
            };
            return sse(&[
                ("message_start", json!({"type": "message_start", "message": {
                    "id": "msg_1", "type": "message", "role": "assistant", "model": model, "content": [],
                    "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 7, "output_tokens": 1}}})),
                ("content_block_start", json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})),
                ("ping", json!({"type": "ping"})),
                ("content_block_delta", delta(&head)),
                ("content_block_delta", delta(&tail)),
                ("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
                ("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                                          "usage": {"output_tokens": 3}})),
                ("message_stop", json!({"type": "message_stop"})),
            ]);
        }
        if path.contains("generateContent") || path.contains("GenerateContent") {
            let chunk = |t: &str, usage: Value| {
                let mut c = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": t}]}, "index": 0}],
                                   "modelVersion": "gem-x"});
                if !usage.is_null() {
                    c["candidates"][0]["finishReason"] = json!("STOP");
                    c["usageMetadata"] = usage;
                }
                c
            };
            let usage = json!({"promptTokenCount": 7, "candidatesTokenCount": 3, "totalTokenCount": 10});
            if !stream {
                return ResponseTemplate::new(200).set_body_json(chunk(&text, usage));
            }
            let text = format!(
                "data: {}\r\n\r\ndata: {}\r\n\r\n",
                chunk(&head, Value::Null),
                chunk(&tail, usage)
            );
            return ResponseTemplate::new(200).set_body_raw(text, "text/event-stream");
        }
        ResponseTemplate::new(404).set_body_json(json!({"error": {"message": format!("no {path} here")}}))
    }
}

fn upstream() -> Server {
    let s = Server::start();
    s.mount(Mock::given(wiremock::matchers::any()).respond_with(Upstream));
    s
}

#[test]
fn anthropic_sends_the_messages_api_with_its_headers_and_thinking_and_reads_text_and_usage() {
    let s = upstream();
    let p = prompt_suite(&format!(
        "anthropic:\n  base_url: {}/v1\n  models:\n    - model: claude-x\n      effort: high\n      temperature: 1\n",
        s.uri()
    ));
    let d = p
        .evals(LIVE)
        .env("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
        .ok();
    let requests = s.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r.url.path(), "/v1/messages");
    assert_eq!(r.url.query(), None, "no key in the URL");
    let header = |k: &str| r.headers.get(k).map(|v| v.to_str().unwrap().to_string());
    assert_eq!(header("x-api-key").as_deref(), Some("sk-ant-test-0123456789"));
    assert_eq!(header("anthropic-version").as_deref(), Some("2023-06-01"));
    assert_eq!(header("authorization"), None);
    let body: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(
        body,
        json!({
            "model": "claude-x",
            "system": "Answer in JSON.",
            "messages": [{"role": "user", "content": "What is it?"}],
            "temperature": 1.0,
            // high is a 16384-token thinking budget; max_tokens must exceed it, so the
            // reply keeps its 64.
            "thinking": {"type": "enabled", "budget_tokens": 16384},
            "max_tokens": 16448,
        })
    );
    // The reply is read from its text block (the answer is the question: scored 0 against
    // "x", but read, so not an error), and priced from `pricing:` (7 in, 3 out).
    assert_eq!(d.cell("anthropic/claude-x", "errors"), "0");
    assert_eq!(d.cell("anthropic/claude-x", "cost"), "$0.000066");
    d.stdout_lacks("sk-ant-test");
}

#[test]
fn gemini_sends_generate_content_with_the_key_in_a_header_and_its_thinking_budget() {
    let s = upstream();
    let p = prompt_suite(&format!(
        "gemini:\n  base_url: {}/v1beta\n  models:\n    - model: gem-x\n      effort: low\n",
        s.uri()
    ))
    .file(
        "evals/datasets/d/cases.jsonl",
        "{\"id\": \"one\", \"input\": \"x\", \"expected\": {\"answer\": \"x\"}}\n",
    );
    let d = p.evals(LIVE).env("GEMINI_API_KEY", "AIzaTestKey0123456789").ok();
    let requests = s.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r.url.path(), "/v1beta/models/gem-x:generateContent");
    assert_eq!(r.url.query(), None, "never ?key=");
    assert_eq!(
        r.headers.get("x-goog-api-key").unwrap().to_str().unwrap(),
        "AIzaTestKey0123456789"
    );
    let body: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(
        body,
        json!({
            "contents": [{"role": "user", "parts": [{"text": "x"}]}],
            "systemInstruction": {"parts": [{"text": "Answer in JSON."}]},
            "generationConfig": {
                "responseMimeType": "application/json",
                "maxOutputTokens": 64,
                "thinkingConfig": {"thinkingBudget": 1024},
            },
        })
    );
    // The answer {"answer": "x"} is read from the candidate's parts.
    assert_eq!(d.cell("gemini/gem-x", "field_accuracy"), "100.0%");
    d.stdout_lacks("AIzaTestKey");
}

#[test]
fn api_responses_sends_input_and_reasoning_effort_and_reads_output_text_recorded_and_replayed() {
    let mut s = upstream();
    let p = prompt_suite(&format!(
        "openai:\n  base_url: {}/v1\n  api: responses\n  models:\n    - model: gpt-r\n      effort: medium\n",
        s.uri()
    ))
    .file(
        "evals/datasets/d/cases.jsonl",
        "{\"id\": \"one\", \"input\": \"x\", \"expected\": {\"answer\": \"x\"}}\n",
    );
    let d = p
        .evals(&["record", "--no-autosave"])
        .env("OPENAI_API_KEY", "sk-resp-test-0123456789")
        .ok();
    let requests = s.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r.url.path(), "/v1/responses");
    assert_eq!(
        r.headers.get("authorization").unwrap().to_str().unwrap(),
        "Bearer sk-resp-test-0123456789"
    );
    let body: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(
        body,
        json!({
            "model": "gpt-r",
            "instructions": "Answer in JSON.",
            "input": "x",
            "text": {"format": {"type": "json_object"}},
            "max_output_tokens": 64,
            "reasoning": {"effort": "medium"},
        })
    );
    assert_eq!(d.cell("openai/gpt-r", "field_accuracy"), "100.0%");
    s.stop();
    let rep = p.evals(&["compare", "--cassettes", "replay", "--no-autosave"]).ok();
    assert_eq!(rep.cell("openai/gpt-r", "field_accuracy"), "100.0%");
}
