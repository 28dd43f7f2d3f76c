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

/// The text of a message's content: a string, or its text parts joined.
fn text_of(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let text: String = parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            (!text.is_empty()).then_some(text)
        }
        _ => None,
    }
}

/// The question a request asks, in whichever API it is: its last user message's text (a
/// framework may put a system message, or a tool's turn, around it).
fn question(body: &Value) -> String {
    if let Some(q) = body
        .get("messages")
        .and_then(Value::as_array)
        .and_then(|m| {
            m.iter()
                .rev()
                .filter(|m| m["role"] == "user")
                .find_map(|m| text_of(&m["content"]))
        })
    {
        return q;
    }
    let q = body
        .pointer("/contents/0/parts/0/text")
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

/// A request offering tools: the model's turn in a tool call. Without a tool's result in
/// the conversation yet, it asks `lookup` with `{"q": <the question>}`; with one, it answers
/// `{"answer": <the tool's result>}`. Chat completions, Anthropic Messages and Gemini.
fn tool_turn(path: &str, body: &Value) -> Option<ResponseTemplate> {
    let tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
    if !tools {
        return None;
    }
    let model = body["model"].clone();
    let q = question(body);
    let answer = |result: &str| json!({"answer": result}).to_string();
    if path.ends_with("/chat/completions") {
        let result = body["messages"]
            .as_array()?
            .iter()
            .find(|m| m["role"] == "tool")
            .and_then(|m| text_of(&m["content"]));
        let (message, finish) = match result {
            Some(r) => (json!({"role": "assistant", "content": answer(&r)}), "stop"),
            None => (
                json!({"role": "assistant", "content": null, "tool_calls": [{
                    "id": "call_1", "type": "function",
                    "function": {"name": "lookup", "arguments": json!({"q": q}).to_string()}}]}),
                "tool_calls",
            ),
        };
        return Some(ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-t", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "finish_reason": finish, "message": message}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
        })));
    }
    if path.ends_with("/messages") {
        let result = body["messages"].as_array()?.iter().find_map(|m| {
            m["content"].as_array()?.iter().find_map(|b| {
                (b["type"] == "tool_result").then(|| text_of(&b["content"]).unwrap_or_default())
            })
        });
        let (content, stop) = match result {
            Some(r) => (json!([{"type": "text", "text": answer(&r)}]), "end_turn"),
            None => (
                json!([{"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": q}}]),
                "tool_use",
            ),
        };
        return Some(ResponseTemplate::new(200).set_body_json(json!({
            "id": "msg_t", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop, "stop_sequence": null,
            "usage": {"input_tokens": 7, "output_tokens": 3},
        })));
    }
    if path.contains("generateContent") {
        let result = body["contents"].as_array()?.iter().find_map(|c| {
            c["parts"].as_array()?.iter().find_map(|p| {
                let r = p.pointer("/functionResponse/response")?;
                Some(match r.get("result").or_else(|| r.get("output")) {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                    None => r.to_string(),
                })
            })
        });
        let part = match result {
            Some(r) => json!({"text": answer(&r)}),
            None => json!({"functionCall": {"name": "lookup", "args": {"q": q}}}),
        };
        return Some(ResponseTemplate::new(200).set_body_json(json!({
            "candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 3, "totalTokenCount": 10},
            "modelVersion": "gem-x",
        })));
    }
    None
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
/// `{"answer": <the question>}` in two pieces, with 7 input and 3 output tokens; a request
/// offering tools gets a tool call first ([`tool_turn`]).
pub(crate) struct Upstream;

impl Respond for Upstream {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let path = req.url.path().to_string();
        if path.ends_with("/models") {
            return ResponseTemplate::new(200).set_body_json(json!({"object": "list", "data": []}));
        }
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        if let Some(turn) = tool_turn(&path, &body) {
            return turn;
        }
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
                (
                    "",
                    chunk(json!({"role": "assistant", "content": head}), Value::Null),
                ),
                ("", chunk(json!({"content": tail}), Value::Null)),
                ("", chunk(json!({}), json!("stop"))),
                (
                    "",
                    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": model, "choices": [],
                             "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}}),
                ),
            ];
            let text: String = events
                .iter()
                .map(|(_, d)| format!("data: {d}\n\n"))
                .chain(["data: [DONE]\n\n".to_string()])
                .collect();
            done = done.set_body_raw(text, "text/event-stream");
            return done;
        }
        if path.ends_with("/embeddings") {
            return ResponseTemplate::new(200).set_body_json(json!({
                "object": "list", "model": model,
                "data": [{"object": "embedding", "index": 0, "embedding": [0.5, 0.25]}],
                "usage": {"prompt_tokens": 2, "total_tokens": 2},
            }));
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
                return ResponseTemplate::new(200).set_body_json(response(
                    "completed",
                    message,
                    usage,
                ));
            }
            let delta = |n: u64, d: &str| {
                json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
                       "content_index": 0, "delta": d, "sequence_number": n, "logprobs": []})
            };
            return sse(&[
                (
                    "response.created",
                    json!({"type": "response.created", "sequence_number": 0,
                                             "response": response("in_progress", json!([]), Value::Null)}),
                ),
                ("response.output_text.delta", delta(1, &head)),
                ("response.output_text.delta", delta(2, &tail)),
                (
                    "response.completed",
                    json!({"type": "response.completed", "sequence_number": 3,
                                               "response": response("completed", message, usage)}),
                ),
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
            let delta = |t: &str| json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}});
            return sse(&[
                (
                    "message_start",
                    json!({"type": "message_start", "message": {
                    "id": "msg_1", "type": "message", "role": "assistant", "model": model, "content": [],
                    "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 7, "output_tokens": 1}}}),
                ),
                (
                    "content_block_start",
                    json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                ),
                ("ping", json!({"type": "ping"})),
                ("content_block_delta", delta(&head)),
                ("content_block_delta", delta(&tail)),
                (
                    "content_block_stop",
                    json!({"type": "content_block_stop", "index": 0}),
                ),
                (
                    "message_delta",
                    json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                                          "usage": {"output_tokens": 3}}),
                ),
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
            let usage =
                json!({"promptTokenCount": 7, "candidatesTokenCount": 3, "totalTokenCount": 10});
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
        ResponseTemplate::new(404)
            .set_body_json(json!({"error": {"message": format!("no {path} here")}}))
    }
}

/// A wiremock server answering every request as [`Upstream`] does.
pub(crate) fn upstream() -> Server {
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
    assert_eq!(
        header("x-api-key").as_deref(),
        Some("sk-ant-test-0123456789")
    );
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
    let d = p
        .evals(LIVE)
        .env("GEMINI_API_KEY", "AIzaTestKey0123456789")
        .ok();
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
fn gemini_falls_back_to_google_api_key_and_gemini_api_key_wins_when_both_are_set() {
    let s = upstream();
    let p = prompt_suite(&format!(
        "gemini:\n  base_url: {}/v1beta\n  models:\n    - model: gem-x\n",
        s.uri()
    ))
    .file(
        "evals/datasets/d/cases.jsonl",
        "{\"id\": \"one\", \"input\": \"x\", \"expected\": {\"answer\": \"x\"}}\n",
    );
    let key = |r: &Request| {
        r.headers
            .get("x-goog-api-key")
            .map(|v| v.to_str().unwrap().to_string())
    };
    let d = p
        .evals(LIVE)
        .env("GOOGLE_API_KEY", "AIzaGoogleOnly0123456789")
        .ok();
    assert_eq!(
        key(&s.requests()[0]).as_deref(),
        Some("AIzaGoogleOnly0123456789")
    );
    d.stdout_lacks("AIzaGoogleOnly");
    p.evals(LIVE)
        .env("GOOGLE_API_KEY", "AIzaGoogleOnly0123456789")
        .env("GEMINI_API_KEY", "AIzaGeminiWins0123456789")
        .ok();
    assert_eq!(
        key(&s.requests()[1]).as_deref(),
        Some("AIzaGeminiWins0123456789")
    );
    // Neither set: refused before any call, naming the variable to set.
    p.evals(LIVE).code(2).stderr_has("GEMINI_API_KEY");
    assert_eq!(s.requests().len(), 2);
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
    let rep = p
        .evals(&["compare", "--cassettes", "replay", "--no-autosave"])
        .ok();
    assert_eq!(rep.cell("openai/gpt-r", "field_accuracy"), "100.0%");
}

/// One adapter for every SDK: the case's section picks the SDK (`anthropic`, `gemini`,
/// `openai` chat completions, `resp` the Responses API); an input starting with `stream`
/// asks for a stream. Every HTTP request the OpenAI and Anthropic SDKs send is logged to
/// `attempts.log`, so a test can count what the SDK did (retries included).
const PY_ADAPTER: &str = r#"
import json, os, sys
import httpx2 as httpx

def log(request):
    with open("attempts.log", "a") as f:
        f.write(request.url.path + "\n")

http = httpx.Client(event_hooks={"request": [log]})

def ask(provider, q, stream):
    if q == "unknown":
        from openai import OpenAI
        c = OpenAI(http_client=http)
        if provider == "openai":
            return c.post("/no/such/endpoint", body={}, cast_to=httpx.Response).text
        # Another API than the contender's.
        msgs = [{"role": "user", "content": q}]
        return c.chat.completions.create(model="any", messages=msgs).choices[0].message.content
    if provider == "anthropic":
        import anthropic
        c = anthropic.Anthropic(http_client=http)
        msgs = [{"role": "user", "content": q}]
        if stream:
            with c.messages.stream(model="any", max_tokens=256, messages=msgs) as s:
                return "".join(s.text_stream)
        r = c.messages.create(model="any", max_tokens=256, messages=msgs)
        return "".join(b.text for b in r.content if b.type == "text")
    if provider == "gemini":
        from google import genai
        c = genai.Client()
        if stream:
            return "".join(ch.text or "" for ch in c.models.generate_content_stream(model="any", contents=q))
        return c.models.generate_content(model="any", contents=q).text
    from openai import OpenAI
    c = OpenAI(http_client=http)
    if provider == "resp":
        if stream:
            events = c.responses.create(model="any", input=q, stream=True)
            return "".join(e.delta for e in events if e.type == "response.output_text.delta")
        return c.responses.create(model="any", input=q).output_text
    if q == "embed":
        r = c.embeddings.create(model="text-embedding-3-small", input=q)
        ok = r.model == "text-embedding-3-small" and r.data[0].embedding == [0.5, 0.25]
        return json.dumps({"answer": q if ok else "wrong: %s" % r})
    if q == "models":
        ids = [m.id for m in c.models.list()]
        return json.dumps({"answer": q if ids == ["gpt-x"] else "wrong: %s" % ids})
    msgs = [{"role": "user", "content": q}]
    if stream:
        chunks = c.chat.completions.create(model="any", messages=msgs, stream=True,
                                           stream_options={"include_usage": True})
        return "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    return c.chat.completions.create(model="any", messages=msgs).choices[0].message.content

for line in sys.stdin:
    msg = json.loads(line)
    q = msg["case"]["input"]
    out = {"id": msg["id"], "usage": None}
    try:
        raw = ask(msg["model"]["provider"], q, q.startswith("stream"))
        out["raw"] = raw
        out["output"] = json.loads(raw)
    except Exception as e:
        out["error"] = "%s: %s" % (type(e).__name__, e)
    print(json.dumps(out), flush=True)
"#;

/// The provider sections of the SDK suites, one per API, all on `upstream`.
pub(crate) fn section(name: &str, upstream: &str) -> String {
    match name {
        "anthropic" => format!("anthropic:\n  base_url: {upstream}/v1\n  models: [claude-x]\n"),
        "gemini" => format!("gemini:\n  base_url: {upstream}/v1beta\n  models: [gem-x]\n"),
        "openai" => format!("openai:\n  base_url: {upstream}/v1\n  models: [gpt-x]\n"),
        _ => format!(
            "resp:\n  base_url: {upstream}/v1\n  api: responses\n  api_key_env: OPENAI_API_KEY\n  models: [gpt-r]\n"
        ),
    }
}

/// A suite whose exec adapter is `adapter` (`command`, and its file), asking the contenders
/// of `sections` on `upstream`.
fn sdk_suite(
    adapter: (&str, &str, &str),
    sections: &[&str],
    upstream: &str,
    cases: &[&str],
) -> Project {
    let lines: String = cases
        .iter()
        .map(|q| {
            format!(
                "{{\"id\": \"{q}\", \"input\": \"{q}\", \"expected\": {{\"answer\": \"{q}\"}}}}\n"
            )
        })
        .collect();
    let sections: String = sections.iter().map(|n| section(n, upstream)).collect();
    Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "suite: sdks\nrequest_types: [prompt]\nadapter:\n  kind: exec\n  command: {}\n{MINI_SCHEMA}{sections}",
                adapter.0
            ),
        )
        .file(adapter.1, adapter.2)
        .file("evals/datasets/d/cases.jsonl", &lines)
}

fn python_adapter() -> (String, &'static str, &'static str) {
    let py = crate::sdk::python();
    (
        format!("[{}, evals/adapter.py]", py.display()),
        "evals/adapter.py",
        PY_ADAPTER,
    )
}

pub(crate) const KEYS: &[(&str, &str)] = &[
    ("ANTHROPIC_API_KEY", "sk-ant-real-0123456789"),
    ("GEMINI_API_KEY", "AIza-real-0123456789"),
    ("OPENAI_API_KEY", "sk-openai-real-0123456789"),
];

pub(crate) fn with_keys(mut run: crate::harness::Run) -> crate::harness::Run {
    for (k, v) in KEYS {
        run = run.env(k, v);
    }
    run
}

/// Records through the SDKs, then checks offline: the same scores and costs, no errors.
fn record_then_check_offline(p: &Project, mut s: Server, contenders: &[&str]) -> Vec<Request> {
    with_keys(p.evals(&["record", "--format", "json", "-o", "rec.json"])).ok();
    let requests = s.requests();
    s.stop();
    let rec: Value = serde_json::from_str(&p.read("rec.json")).unwrap();
    let experiments = rec["experiments"].as_array().unwrap();
    assert_eq!(experiments.len(), contenders.len(), "{rec}");
    for e in experiments {
        assert_eq!(e["errors"], 0, "{e}");
        assert_eq!(e["means"]["field_accuracy"], 1.0, "{e}");
    }
    // The upstream is gone, and the keys with it: every call replays from the cassettes.
    p.evals(&["check", "--format", "json", "-o", "chk.json"])
        .ok();
    let chk: Value = serde_json::from_str(&p.read("chk.json")).unwrap();
    for (r, c) in experiments
        .iter()
        .zip(chk["experiments"].as_array().unwrap())
    {
        assert_eq!(r["contender"]["id"], c["contender"]["id"]);
        assert_eq!(c["errors"], 0, "{c}");
        assert_eq!(r["means"], c["means"], "identical scores");
        assert_eq!(r["cost_usd"], c["cost_usd"]);
        assert_eq!(
            (&r["tokens_in"], &r["tokens_out"]),
            (&c["tokens_in"], &c["tokens_out"]),
            "usage read from the replayed streams too"
        );
    }
    requests
}

#[test]
fn the_official_python_sdks_record_through_the_gateway_and_check_offline_streams_included() {
    let s = upstream();
    let (command, file, text) = python_adapter();
    let p = sdk_suite(
        (&command, file, text),
        &["anthropic", "gemini", "openai", "resp"],
        &s.uri(),
        &["plain", "stream-1"],
    );
    let requests = record_then_check_offline(
        &p,
        s,
        &[
            "anthropic/claude-x",
            "gemini/gem-x",
            "openai/gpt-x",
            "resp/gpt-r",
        ],
    );
    let mut seen: Vec<(String, String)> = requests
        .iter()
        .map(|r| {
            let body: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
            let key = ["x-api-key", "x-goog-api-key", "authorization"]
                .iter()
                .find_map(|k| r.headers.get(*k))
                .map(|v| v.to_str().unwrap().to_string())
                .unwrap_or_default();
            assert!(
                r.url.query().is_none_or(|q| !q.contains("key=")),
                "{}",
                r.url
            );
            let model = body["model"].as_str().unwrap_or("(in the path)");
            (format!("{} {model}", r.url.path()), key)
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            (
                "/v1/chat/completions gpt-x",
                "Bearer sk-openai-real-0123456789"
            ),
            (
                "/v1/chat/completions gpt-x",
                "Bearer sk-openai-real-0123456789"
            ),
            ("/v1/messages claude-x", "sk-ant-real-0123456789"),
            ("/v1/messages claude-x", "sk-ant-real-0123456789"),
            ("/v1/responses gpt-r", "Bearer sk-openai-real-0123456789"),
            ("/v1/responses gpt-r", "Bearer sk-openai-real-0123456789"),
            (
                "/v1beta/models/gem-x:generateContent (in the path)",
                "AIza-real-0123456789"
            ),
            (
                "/v1beta/models/gem-x:streamGenerateContent (in the path)",
                "AIza-real-0123456789"
            ),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string())),
        "each SDK's call went to its API with the contender's model and the real key"
    );
    // A stream is recorded as its events, each one readable in the file; the SDK's request
    // as it sent it (`raw`, format 4).
    let cassette: Value =
        serde_json::from_str(&p.read("evals/cassettes/anthropic/claude-x/default/d/stream-1.json"))
            .unwrap();
    assert_eq!(cassette["format"], 4);
    assert!(cassette["interactions"][0]["request"]["raw"].is_object());
    let events = cassette["interactions"][0]["response"]["events"]
        .as_array()
        .unwrap();
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "ping",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(events[3]["data"]["delta"]["text"], "{\"answer\": ");
    let plain: Value =
        serde_json::from_str(&p.read("evals/cassettes/anthropic/claude-x/default/d/plain.json"))
            .unwrap();
    assert_eq!(
        plain["format"], 4,
        "the SDK's request is kept as it sent it"
    );
    let rec: Value = serde_json::from_str(&p.read("rec.json")).unwrap();
    for e in rec["experiments"].as_array().unwrap() {
        // 7 in and 3 out per call, streams included, as the gateway read them.
        assert_eq!(
            (&e["tokens_in"], &e["tokens_out"]),
            (&json!(14), &json!(6)),
            "{e}"
        );
    }
}

#[test]
fn a_replay_miss_is_one_request_an_unknown_endpoint_or_another_api_errors_the_case() {
    let mut s = upstream();
    let (command, file, text) = python_adapter();
    let p = sdk_suite(
        (&command, file, text),
        &["anthropic", "openai"],
        &s.uri(),
        &["plain"],
    );
    with_keys(p.evals(&["record", "--no-autosave"])).ok();
    s.stop();
    // New cases: one never recorded (a miss, in both SDKs), one calling a path the gateway
    // does not serve; and the adapter asking the Anthropic contender in chat completions.
    let cases = ["plain", "missed", "unknown"]
        .map(|q| {
            format!(
                "{{\"id\": \"{q}\", \"input\": \"{q}\", \"expected\": {{\"answer\": \"{q}\"}}}}\n"
            )
        })
        .concat();
    p.write("evals/datasets/d/cases.jsonl", &cases);
    let _ = std::fs::remove_file(p.path().join("attempts.log"));
    let d = p
        .evals(&[
            "compare",
            "--cassettes",
            "replay",
            "--no-autosave",
            "--format",
            "json",
            "-o",
            "rep.json",
        ])
        .code(1);
    d.stderr_has("cases errored");
    let rep: Value = serde_json::from_str(&p.read("rep.json")).unwrap();
    let case = |contender: &str, id: &str| -> Value {
        rep["experiments"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["contender"]["id"] == contender)
            .and_then(|e| {
                e["cases"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|c| c["case"] == id)
            })
            .cloned()
            .unwrap()
    };
    for contender in ["anthropic/claude-x", "openai/gpt-x"] {
        assert_eq!(
            case(contender, "plain")["score"],
            1.0,
            "a recording replays"
        );
        let missed = case(contender, "missed");
        assert_eq!(
            missed["score"],
            Value::Null,
            "a miss is an error, never a 0"
        );
        assert_eq!(missed["error_kind"], "miss", "{missed}");
    }
    let unknown = case("openai/gpt-x", "unknown");
    assert_eq!(unknown["score"], Value::Null, "{unknown}");
    assert!(
        unknown["error"].as_str().unwrap().contains(
            "the evals gateway does not serve POST /v1/no/such/endpoint; it serves POST /v1/chat/completions, POST /v1/responses"
        ),
        "{unknown}"
    );
    let mismatch = case("anthropic/claude-x", "unknown");
    assert_eq!(mismatch["score"], Value::Null, "{mismatch}");
    assert!(
        mismatch["error"].as_str().unwrap().starts_with(
            "anthropic/claude-x speaks the Anthropic Messages API (POST /v1/messages), but this worker called the OpenAI chat completions API (POST /v1/chat/completions)"
        ),
        "{mismatch}"
    );
    // What each SDK sent: one request per call, misses included (both SDKs would retry a
    // 502 twice without `x-should-retry: false`).
    let mut attempts: Vec<String> = p.read("attempts.log").lines().map(str::to_string).collect();
    attempts.sort();
    assert_eq!(
        attempts,
        [
            "/v1/chat/completions", // openai: plain
            "/v1/chat/completions", // openai: missed
            "/v1/chat/completions", // anthropic: unknown, the other API
            "/v1/messages",         // anthropic: plain
            "/v1/messages",         // anthropic: missed
            "/v1/no/such/endpoint", // openai: unknown
        ]
    );
}

/// The npm `openai` package's adapter: chat completions for `openai`, the Responses API for
/// `resp`; an input starting with `stream` streams.
const NODE_ADAPTER: &str = r#"
const OpenAI = require('openai');
const readline = require('readline');
const client = new OpenAI();

async function ask(provider, q, stream) {
  if (provider === 'resp') {
    if (!stream) return (await client.responses.create({ model: 'any', input: q })).output_text;
    let text = '';
    for await (const e of await client.responses.create({ model: 'any', input: q, stream: true })) {
      if (e.type === 'response.output_text.delta') text += e.delta;
    }
    return text;
  }
  const messages = [{ role: 'user', content: q }];
  if (!stream) return (await client.chat.completions.create({ model: 'any', messages })).choices[0].message.content;
  let text = '';
  const chunks = await client.chat.completions.create({ model: 'any', messages, stream: true, stream_options: { include_usage: true } });
  for await (const ch of chunks) {
    if (ch.choices.length) text += ch.choices[0].delta.content || '';
  }
  return text;
}

(async () => {
  for await (const line of readline.createInterface({ input: process.stdin })) {
    const msg = JSON.parse(line);
    const q = msg.case.input;
    const out = { id: msg.id, usage: null };
    try {
      out.raw = await ask(msg.model.provider, q, q.startsWith('stream'));
      out.output = JSON.parse(out.raw);
    } catch (e) {
      out.error = `${e.name}: ${e.message}`;
    }
    process.stdout.write(JSON.stringify(out) + '\n');
  }
})();
"#;

#[test]
fn the_npm_openai_sdk_records_chat_and_responses_through_the_gateway_and_checks_offline() {
    let s = upstream();
    let p = sdk_suite(
        ("[node, evals/adapter.js]", "evals/adapter.js", NODE_ADAPTER),
        &["openai", "resp"],
        &s.uri(),
        &["plain", "stream-1"],
    );
    // The worker's environment is an allow-list: NODE_PATH goes in through `adapter.env`.
    let config = p.read("evals/.llm-evals.config.yml").replace(
        "  command: [node, evals/adapter.js]\n",
        &format!(
            "  command: [node, evals/adapter.js]\n  env: {{ NODE_PATH: \"{}\" }}\n",
            crate::sdk::node_modules().display()
        ),
    );
    p.write("evals/.llm-evals.config.yml", &config);
    let requests = record_then_check_offline(&p, s, &["openai/gpt-x", "resp/gpt-r"]);
    let mut paths: Vec<String> = requests
        .iter()
        .map(|r| {
            let body: Value = serde_json::from_slice(&r.body).unwrap();
            format!(
                "{} {} stream={}",
                r.url.path(),
                body["model"],
                body["stream"] == true
            )
        })
        .collect();
    paths.sort();
    assert_eq!(
        paths,
        [
            "/v1/chat/completions \"gpt-x\" stream=false",
            "/v1/chat/completions \"gpt-x\" stream=true",
            "/v1/responses \"gpt-r\" stream=false",
            "/v1/responses \"gpt-r\" stream=true",
        ]
    );
}

#[test]
fn api_on_a_section_that_is_not_openai_shaped_is_a_config_error() {
    let p = prompt_suite("anthropic:\n  api: responses\n  models: [claude-x]\n");
    p.evals(&["compare", "-n"]).code(2).stderr_has(
        "anthropic: `api:` chooses between OpenAI's chat and Responses APIs; it is for an `openai:` or a `base_url` section: remove it here",
    );
    let p = prompt_suite("openai:\n  api: respones\n  models: [gpt-x]\n");
    p.evals(&["compare", "-n"]).code(2).stderr_has("respones");
}

#[test]
fn embeddings_keep_their_model_and_models_lists_the_contenders_recorded_and_checked_offline() {
    let s = upstream();
    let (command, file, text) = python_adapter();
    let p = sdk_suite(
        (&command, file, text),
        &["openai"],
        &s.uri(),
        &["embed", "models"],
    );
    let requests = record_then_check_offline(&p, s, &["openai/gpt-x"]);
    // `GET /v1/models` is answered by the gateway; the embeddings call went upstream with
    // its own model and the real key.
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].url.path(), "/v1/embeddings");
    let body: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(body["model"], "text-embedding-3-small");
    assert_eq!(
        requests[0]
            .headers
            .get("authorization")
            .unwrap()
            .to_str()
            .unwrap(),
        "Bearer sk-openai-real-0123456789"
    );
}
