//! The exec gateway relays what it is given (issue 30): a worker's request reaches the
//! provider byte for byte but for the contender's fields, the provider's answer reaches the
//! worker byte for byte, live and replayed, and the cassette keeps both; the trajectory
//! names where a call went; tool calls are in the snapshot.

use serde_json::Value;
use wiremock::ResponseTemplate;
use wiremock::matchers::{method, path};

use crate::harness::{Project, files_under};
use crate::mock::Server;

/// A worker that sends `evals/body.json`'s bytes, as they are, to the gateway with a raw
/// HTTP client (no SDK to rewrite them), writes the bytes it got back to `got.bin`, and
/// answers the model's content as its output.
const RAW_WORKER: &str = r#"
import http.client, json, os, sys, urllib.parse

u = urllib.parse.urlsplit(os.environ["OPENAI_BASE_URL"])
body = open("evals/body.json", "rb").read()
for line in sys.stdin:
    msg = json.loads(line)
    c = http.client.HTTPConnection(u.hostname, u.port)
    c.request("POST", u.path + "/chat/completions", body,
              {"content-type": "application/json",
               "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
    r = c.getresponse()
    got = r.read()
    open("got.bin", "wb").write(got)
    content = json.loads(got)["choices"][0]["message"]["content"]
    print(json.dumps({"id": msg["id"], "output": json.loads(content)}), flush=True)
"#;

/// What the worker sends: keys out of order, odd spacing, `1e2`, a 23-digit integer, a
/// key given twice, an escape, and the model the worker thinks it asks.
const SENT: &str = "{ \"model\" :\"any\",\"messages\":[{\"role\":\"user\",\"content\":\"h\\u00e9\"}],  \"n\":12345678901234567890123,\n\"t\":1e2 ,\"a\":{\"z\":1,\"b\":2.50},\"a\":{\"z\":1,\"b\":2.50}}";

/// What the provider answers: its own key order, spacing and numbers, and a newline.
const ANSWERED: &str = "{\"id\":\"c1\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"{\\\"answer\\\": \\\"ok\\\"}\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3},\"big\":12345678901234567890123,\"e\":1e2}\n";

#[test]
fn a_body_goes_to_the_provider_and_back_byte_for_byte_recorded_and_replayed() {
    let mut server = Server::start();
    server.mount(
        wiremock::Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(
                ResponseTemplate::new(200).set_body_raw(ANSWERED.as_bytes(), "application/json"),
            ),
    );
    let p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "suite: bytes\nrequest_types: [prompt]\nadapter:\n  kind: exec\n  command: [python3, evals/worker.py]\nscorer:\n  kind: fields\n  schema: {{ answer: string }}\nlocal:\n  base_url: {}/v1\n  models: [m1]\n",
                server.uri()
            ),
        )
        .file("evals/worker.py", RAW_WORKER)
        .file("evals/body.json", SENT)
        .file(
            "evals/datasets/d/cases.jsonl",
            "{\"id\": \"c\", \"input\": \"x\", \"expected\": {\"answer\": \"ok\"}}\n",
        );
    p.evals(&["record", "--no-autosave"]).ok();

    // The provider got the worker's bytes, the contender's model in place of its own.
    let forwarded = SENT.replacen("\"any\"", "\"m1\"", 1);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(String::from_utf8_lossy(&requests[0].body), forwarded);
    // The worker got the provider's bytes.
    assert_eq!(p.read("got.bin"), ANSWERED);

    // The cassette keeps both as they were: the request's JSON as it was sent, the
    // answer (a newline after it) as a string holding its text.
    let files = files_under(&p.path().join("evals/cassettes"));
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(text.contains(&format!("\"raw\": {forwarded}")), "{text}");
    let cassette: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(cassette["format"], 4);
    let interaction = &cassette["interactions"][0];
    assert_eq!(interaction["response"]["raw"], ANSWERED);
    assert_eq!(interaction["request"].get("body"), None);

    // Offline, the worker gets the same bytes back from the cassette.
    server.stop();
    std::fs::remove_file(p.path().join("got.bin")).unwrap();
    p.evals(&["run", "--cassettes", "replay", "--no-autosave"])
        .ok();
    assert_eq!(p.read("got.bin"), ANSWERED);
}

/// Every file under `log/`, read whole: the workers' stderr and the run's warnings.
pub(crate) fn logs(p: &Project) -> String {
    files_under(&p.path().join("log"))
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap_or_default())
        .collect()
}

/// An openai-agents worker: one agent on the chat completions API through the gateway,
/// its traces flushed after every case (as a worker that wants them sent would).
const AGENTS_WORKER: &str = r#"
import json, sys
from agents import Agent, Runner, OpenAIChatCompletionsModel
from agents.tracing import get_trace_provider
from openai import AsyncOpenAI

agent = Agent(name="extractor", instructions="Answer in JSON.",
              model=OpenAIChatCompletionsModel(model="any", openai_client=AsyncOpenAI()))
for line in sys.stdin:
    msg = json.loads(line)
    result = Runner.run_sync(agent, msg["case"]["input"])
    get_trace_provider().force_flush()
    print(json.dumps({"id": msg["id"], "output": json.loads(result.final_output)}), flush=True)
"#;

#[test]
fn an_openai_agents_worker_records_and_replays_with_no_tracing_attempt() {
    let mut server = Server::start();
    server.mount(
        wiremock::Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
                "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "m1",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": "{\"answer\": \"ok\"}"}}],
                "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
            }))),
    );
    let uri = server.uri();
    let config = |env: &str| {
        format!(
            "suite: agents\nrequest_types: [prompt]\nadapter:\n  kind: exec\n  command: [{}, evals/worker.py]\n{env}scorer:\n  kind: fields\n  schema: {{ answer: string }}\nlocal:\n  base_url: {}/v1\n  models: [m1]\n",
            crate::sdk::python().display(),
            uri
        )
    };
    let p = Project::new()
        .file("evals/.llm-evals.config.yml", &config(""))
        .file("evals/worker.py", AGENTS_WORKER)
        .file(
            "evals/datasets/d/cases.jsonl",
            "{\"id\": \"a\", \"input\": \"x\", \"expected\": {\"answer\": \"ok\"}}\n{\"id\": \"b\", \"input\": \"y\", \"expected\": {\"answer\": \"ok\"}}\n",
        );
    p.evals(&["record", "--no-autosave"]).ok();
    assert_eq!(
        server.hits(),
        2,
        "each case's model call, through the gateway"
    );
    server.stop();
    // Offline, by default: no trace leaves, no attempt is refused, nothing is logged.
    let d = p
        .evals(&["check", "--json", "chk.json", "--markdown", "chk.md"])
        .ok();
    d.stderr_lacks("tried to reach");
    let log = logs(&p);
    assert!(!log.contains("Tracing"), "{log}");
    let chk: Value = serde_json::from_str(&p.read("chk.json")).unwrap();
    for c in chk["experiments"][0]["cases"].as_array().unwrap() {
        assert_eq!(c["score"], 1.0, "{c}");
        assert_eq!(c.get("warnings"), None, "{c}");
    }

    // Tracing turned back on in adapter.env: the trace export is refused at the gateway's
    // proxy and named on each case, in the JSON, the Markdown and on stderr.
    p.write(
        "evals/.llm-evals.config.yml",
        &config("  env: { OPENAI_AGENTS_DISABLE_TRACING: \"0\" }\n"),
    );
    let d = p
        .evals(&["check", "--json", "chk.json", "--markdown", "chk.md"])
        .ok();
    d.stderr_has(
        "warning: workers tried to reach api.openai.com:443 during 2 cases (local/m1 d/a, \
         local/m1 d/b) (refused: replay is offline): a library calling out on its own; turn \
         it off in adapter.env (README: \"Byte for byte, and off the network\"), or make the \
         call an adapter.upstreams API so it is recorded\n",
    );
    let chk: Value = serde_json::from_str(&p.read("chk.json")).unwrap();
    for c in chk["experiments"][0]["cases"].as_array().unwrap() {
        assert_eq!(c["score"], 1.0, "a warning, not an error: {c}");
        assert_eq!(
            c["warnings"],
            serde_json::json!(["tried to reach api.openai.com:443 (refused: replay is offline)"]),
            "{c}"
        );
    }
    let md = p.read("chk.md");
    assert!(
        md.contains("tried to reach api.openai.com:443 (refused: replay is offline)"),
        "{md}"
    );
}

/// A worker that answers through the gateway (the fake model) and, when it has a proxy
/// (replay), also calls another host the way a library would; it writes its proxy down.
const CALLS_OUT: &str = r#"
import json, os, sys, urllib.request

for line in sys.stdin:
    msg = json.loads(line)
    proxy = os.environ.get("HTTPS_PROXY")
    open("proxy.txt", "w").write(proxy or "none")
    if proxy:
        try:
            urllib.request.urlopen("https://telemetry.example.com/v1/ping", timeout=10)
        except Exception as e:
            print("telemetry: %s" % e, file=sys.stderr)
    body = json.dumps({"model": "any", "messages": [{"role": "user", "content": msg["case"]["input"]}]}).encode()
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", body,
                                 {"content-type": "application/json",
                                  "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
    with urllib.request.urlopen(req) as r:
        answer = json.loads(r.read())["choices"][0]["message"]["content"]
    print(json.dumps({"id": msg["id"], "output": answer}), flush=True)
"#;

#[test]
fn a_worker_that_reaches_another_host_in_replay_has_it_named_on_its_case() {
    let p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            "suite: out\nrequest_types: [prompt]\nadapter:\n  kind: exec\n  command: [python3, evals/worker.py]\nscorer:\n  kind: assertions\nfake:\n  models: [echo]\n",
        )
        .file("evals/worker.py", CALLS_OUT)
        .file(
            "evals/datasets/d/cases.jsonl",
            "{\"id\": \"a\", \"input\": \"hi\", \"expect\": {\"contains\": [\"hi\"]}}\n",
        );
    // Record: no proxy, a worker reaches the network as in production.
    p.evals(&["run", "--cassettes", "record", "--no-autosave"])
        .ok()
        .stderr_lacks("tried to reach");
    assert_eq!(p.read("proxy.txt"), "none");
    // Replay: the gateway's proxy refuses the call, the case names it everywhere.
    let d = p
        .evals(&[
            "check",
            "--json",
            "chk.json",
            "--markdown",
            "chk.md",
            "--html",
            "chk.html",
        ])
        .ok();
    assert!(p.read("proxy.txt").starts_with("http://evals:evals-"));
    d.stderr_has("warning: workers tried to reach telemetry.example.com:443 during 1 case (fake/echo d/a) (refused: replay is offline)");
    let said = "tried to reach telemetry.example.com:443 (refused: replay is offline)";
    let chk: Value = serde_json::from_str(&p.read("chk.json")).unwrap();
    let case = &chk["experiments"][0]["cases"][0];
    assert_eq!(case["warnings"], serde_json::json!([said]), "{case}");
    assert_eq!(case["passed"], true, "a warning does not fail the case");
    assert!(p.read("chk.md").contains(said));
    assert!(p.read("chk.html").contains(said));
    // The worker was told why, in its own words.
    assert!(logs(&p).contains("403"), "{}", logs(&p));
}

/// A worker that asks Gemini as google-genai's `v1` client does (the model it names is its
/// own, in the path), and answers the text part of the reply.
const GEMINI_WORKER: &str = r#"
import http.client, json, os, sys, urllib.parse

u = urllib.parse.urlsplit(os.environ["GOOGLE_GEMINI_BASE_URL"])
for line in sys.stdin:
    msg = json.loads(line)
    body = json.dumps({"contents": [{"role": "user", "parts": [{"text": msg["case"]["input"]}]}]})
    c = http.client.HTTPConnection(u.hostname, u.port)
    c.request("POST", "/v1/models/any:generateContent", body,
              {"content-type": "application/json", "x-goog-api-key": os.environ["GEMINI_API_KEY"]})
    reply = json.loads(c.getresponse().read())
    text = "".join(p.get("text", "") for p in reply["candidates"][0]["content"]["parts"])
    print(json.dumps({"id": msg["id"], "output": json.loads(text)}), flush=True)
"#;

#[test]
fn the_trajectory_names_the_forwarded_path_and_model_and_the_snapshot_the_tool_calls() {
    let mut server = Server::start();
    server.mount(
        wiremock::Mock::given(method("POST"))
            .and(path("/v1beta/models/gem-x:generateContent"))
            .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
                "candidates": [{"index": 0, "finishReason": "STOP", "content": {"role": "model", "parts": [
                    {"functionCall": {"name": "weather", "args": {"city": "Paris"}}},
                    {"text": "{\"answer\": \"ok\"}"},
                ]}}],
                "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 3},
            }))),
    );
    let p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "suite: traj\nrequest_types: [prompt]\nadapter:\n  kind: exec\n  command: [python3, evals/worker.py]\nscorer:\n  kind: fields\n  schema: {{ answer: string }}\ngemini:\n  base_url: {}/v1beta\n  models: [gem-x]\n",
                server.uri()
            ),
        )
        .file("evals/worker.py", GEMINI_WORKER)
        .file(
            "evals/datasets/d/cases.jsonl",
            "{\"id\": \"c\", \"input\": \"x\", \"expected\": {\"answer\": \"ok\"}}\n",
        );
    p.evals(&[
        "run",
        "--cassettes",
        "record",
        "--no-autosave",
        "--format",
        "json",
        "-o",
        "rec.json",
    ])
    .env("GEMINI_API_KEY", "AIza-real-0123456789")
    .ok();
    server.stop();
    p.evals(&["check", "--json", "chk.json", "--html", "chk.html"])
        .ok();
    for file in ["rec.json", "chk.json"] {
        let run: Value = serde_json::from_str(&p.read(file)).unwrap();
        let case = &run["experiments"][0]["cases"][0];
        // Where the call went, not where the worker sent it (`/v1/models/any:...`).
        assert_eq!(
            case["trajectory"],
            serde_json::json!([{
                "kind": "model", "name": "gemini/gem-x", "model": "gem-x", "method": "POST",
                "path": "/v1beta/models/gem-x:generateContent", "status": 200,
            }]),
            "{file}: {case}"
        );
        // The tool calls the model asked for, beside the trajectory.
        assert_eq!(
            case["tool_calls"],
            serde_json::json!([{"name": "weather", "arguments": {"city": "Paris"}}]),
            "{file}: {case}"
        );
    }
    let html = p.read("chk.html");
    assert!(
        html.contains(r#"weather({\"city\":\"Paris\"})"#),
        "tool calls in the case data"
    );
    assert!(html.contains("tool calls"), "and the view that shows them");
}
