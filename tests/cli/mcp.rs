//! MCP tools as a named upstream (`kind: mcp`), over streamable HTTP (`base_url`) and over
//! stdio (`command`): an agent on the official MCP Python SDK (client) calls a tool of a
//! server on the same SDK through evals; recorded once, replayed offline with the server
//! gone to the same output and trajectory; a changed `tools/call` argument is a miss with
//! its diff.

use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::Project;

/// An MCP server (the official SDK's `MCPServer`) with one tool, `lookup(order)`.
const SERVER: &str = r#"
import sys
from mcp.server.mcpserver import MCPServer
app = MCPServer("orders")

@app.tool()
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: shipped"

app.run(transport="streamable-http", port=int(sys.argv[1]))
"#;

/// The agent: per case, an MCP session through `EVALS_UPSTREAM_ORDERS_URL` (initialize,
/// tools/list, tools/call with the case's input and `SUFFIX`), its answer posted.
const AGENT: &str = r#"
import asyncio, json, os, sys, urllib.request
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

async def ask(order):
    async with streamable_http_client(os.environ["EVALS_UPSTREAM_ORDERS_URL"] + "mcp") as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            tools = await s.list_tools()
            assert [t.name for t in tools.tools] == ["lookup"], tools
            res = await s.call_tool("lookup", {"order": order + os.environ.get("SUFFIX", "")})
            return res.content[0].text

for line in sys.stdin:
    m = json.loads(line)
    out = {"id": m["id"], "output": asyncio.run(ask(m["case"]["input"]))}
    urllib.request.urlopen(os.environ["EVALS_ANSWER_URL"], json.dumps(out).encode())
"#;

/// The server, stopped (by its own handle) when dropped.
struct McpServer(Child);

impl Drop for McpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the server on a free loopback port and waits (30 s at most) until it listens.
fn start(python: &std::path::Path, dir: &std::path::Path) -> (McpServer, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::fs::write(dir.join("server.py"), SERVER).unwrap();
    let child = Command::new(python)
        .arg(dir.join("server.py"))
        .arg(port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let server = McpServer(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the MCP server never listened");
        std::thread::sleep(Duration::from_millis(100));
    }
    (server, port)
}

fn case(p: &Project) -> Value {
    let out: Value = serde_json::from_str(&p.read("out.json")).unwrap();
    out["experiments"][0]["cases"][0].clone()
}

#[test]
fn an_mcp_agent_records_once_replays_offline_and_a_changed_tool_argument_is_a_miss() {
    let python = crate::sdk::python();
    let tmp = tempfile::tempdir().unwrap();
    let (server, port) = start(&python, tmp.path());
    let config = |suffix: &str| {
        format!(
            "request_types: [prompt]\nadapter:\n  kind: exec\n  command: [{}, evals/agent.py]\n  env: {{ SUFFIX: \"{suffix}\" }}\n  upstreams:\n    orders: {{ base_url: \"http://127.0.0.1:{port}\", kind: mcp }}\nscorer: {{ kind: assertions }}\nfake: {{ models: [echo] }}\n",
            python.display()
        )
    };
    let p = Project::new()
        .file("evals/.llm-evals.config.yml", &config(""))
        .file("evals/agent.py", AGENT)
        .file(
            "evals/datasets/d/cases.jsonl",
            "{\"id\": \"42\", \"input\": \"42\", \"expect\": {\"min_chars\": 1, \"requests\": [{\"upstream\": \"orders\", \"body\": {\"method\": \"tools/call\", \"params\": {\"name\": \"lookup\", \"arguments\": {\"order\": \"42\"}}}}]}}\n",
        );
    run(&p, &["record"]).ok();
    let recorded = case(&p);
    assert_eq!(recorded["output"], "order 42: shipped", "{recorded}");
    assert_eq!(
        recorded["score"], 1.0,
        "the tools/call request assertion holds: {recorded}"
    );
    let steps: Vec<(String, Value)> = recorded["trajectory"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["method"].as_str().unwrap().to_string(),
                s["body"]["method"].clone(),
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            ("POST".into(), "initialize".into()),
            ("POST".into(), "notifications/initialized".into()),
            ("POST".into(), "tools/list".into()),
            ("POST".into(), "tools/call".into()),
            ("DELETE".into(), Value::Null),
        ]
    );

    // The server is gone: the same answer and trajectory from the cassette.
    drop(server);
    replays_then_misses(&p, &recorded, &config("-b"), "POST /mcp");
}

/// The same server over stdio (the SDK's default transport).
const STDIO_SERVER: &str = r#"
from mcp.server.mcpserver import MCPServer
app = MCPServer("orders")

@app.tool()
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: shipped"

app.run()
"#;

/// The agent: per case, a stdio MCP session with the command evals gives it in
/// `EVALS_MCP_ORDERS_COMMAND` (a JSON array), its answer posted.
const STDIO_AGENT: &str = r#"
import asyncio, json, os, sys, urllib.request
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def ask(order):
    command = json.loads(os.environ["EVALS_MCP_ORDERS_COMMAND"])
    server = StdioServerParameters(command=command[0], args=command[1:])
    async with stdio_client(server) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            tools = await s.list_tools()
            assert [t.name for t in tools.tools] == ["lookup"], tools
            res = await s.call_tool("lookup", {"order": order + os.environ.get("SUFFIX", "")})
            return res.content[0].text

for line in sys.stdin:
    m = json.loads(line)
    out = {"id": m["id"], "output": asyncio.run(ask(m["case"]["input"]))}
    urllib.request.urlopen(os.environ["EVALS_ANSWER_URL"], json.dumps(out).encode())
"#;

#[test]
fn a_stdio_mcp_agent_records_once_replays_without_its_server_and_a_changed_tool_argument_is_a_miss()
{
    let python = crate::sdk::python();
    let config = |suffix: &str| {
        format!(
            "request_types: [prompt]\nadapter:\n  kind: exec\n  command: [{py}, evals/agent.py]\n  env: {{ SUFFIX: \"{suffix}\" }}\n  upstreams:\n    orders: {{ kind: mcp, command: [{py}, evals/server.py] }}\nscorer: {{ kind: assertions }}\nfake: {{ models: [echo] }}\n",
            py = python.display()
        )
    };
    // The tool the server ran is a tool call for the checks (no model asked for it).
    let p = Project::new()
        .file("evals/.llm-evals.config.yml", &config(""))
        .file("evals/agent.py", STDIO_AGENT)
        .file("evals/server.py", STDIO_SERVER)
        .file(
            "evals/datasets/d/cases.jsonl",
            "{\"id\": \"42\", \"input\": \"42\", \"expect\": {\"min_chars\": 1, \"tool_calls\": [{\"name\": \"lookup\", \"arguments\": {\"order\": \"42\"}}], \"tool_call_count\": {\"max\": 1}, \"requests\": [{\"upstream\": \"orders\", \"body\": {\"method\": \"tools/call\", \"params\": {\"name\": \"lookup\", \"arguments\": {\"order\": \"42\"}}}}]}}\n",
        );
    run(&p, &["record"]).ok();
    let recorded = case(&p);
    assert_eq!(recorded["output"], "order 42: shipped", "{recorded}");
    assert_eq!(
        recorded["score"], 1.0,
        "the tools/call request and tool-call assertions hold: {recorded}"
    );
    assert_eq!(
        recorded["tool_calls"],
        serde_json::json!([{"name": "lookup", "arguments": {"order": "42"}}])
    );
    let methods: Vec<Value> = recorded["trajectory"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            assert_eq!(s["name"], "orders", "{s}");
            s["body"]["method"].clone()
        })
        .collect();
    assert_eq!(
        methods,
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call"
        ]
    );
    let cassettes = all_text(&p.path().join("evals/cassettes"));
    assert!(
        cassettes.contains("\"upstream\": \"orders\"") && cassettes.contains("order 42: shipped"),
        "{cassettes}"
    );

    // The server cannot start any more: the same answer, score and trajectory.
    std::fs::remove_file(p.path().join("evals/server.py")).unwrap();
    replays_then_misses(&p, &recorded, &config("-b"), "POST /");
}

/// `evals` in `p` with `args`, the results written to out.json.
fn run(p: &Project, args: &[&str]) -> crate::harness::Run {
    let mut all = args.to_vec();
    all.extend(["--no-autosave", "--format", "json", "-o", "out.json"]);
    p.evals(&all)
}

/// A recorded MCP agent, its server gone: replayed to the `recorded` case's answer,
/// trajectory, tool calls and score; then, with `changed` (the config calling the tool
/// with `42-b`), a miss on `request` naming what changed.
fn replays_then_misses(p: &Project, recorded: &Value, changed: &str, request: &str) {
    run(p, &["run", "--cassettes", "replay"]).ok();
    let replayed = case(p);
    for field in ["output", "trajectory", "tool_calls"] {
        assert_eq!(replayed[field], recorded[field], "{field}");
    }
    assert_eq!(replayed["score"], 1.0);

    // Another argument to the tool: a miss naming what changed.
    p.write("evals/.llm-evals.config.yml", changed);
    run(p, &["run", "--cassettes", "replay"]).code(1);
    let missed = case(p);
    assert_eq!(missed["error_kind"], "miss", "{missed}");
    let error = missed["error"].as_str().unwrap();
    assert!(
        error.starts_with(&format!(
            "upstream orders: {request}: no recording matches this request"
        )) && error.contains("\"42\" → \"42-b\""),
        "{error}"
    );
}

/// The text of every file below `dir`.
fn all_text(dir: &std::path::Path) -> String {
    let mut out = String::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.push_str(&all_text(&path));
        } else {
            out.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
        }
    }
    out
}

/// An agent that asks the model which tool to call, then runs it on the stdio MCP server
/// with the model's arguments, and answers with the tool's text.
const ASKING_AGENT: &str = r#"
import asyncio, json, os, sys, urllib.request
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

def model(question):
    req = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        json.dumps({"model": "m1", "messages": [{"role": "user", "content": question}]}).encode(),
        {"content-type": "application/json", "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
    f = json.load(urllib.request.urlopen(req))["choices"][0]["message"]["tool_calls"][0]["function"]
    return f["name"], json.loads(f["arguments"])

async def ask(question):
    name, args = model(question)
    command = json.loads(os.environ["EVALS_MCP_ORDERS_COMMAND"])
    async with stdio_client(StdioServerParameters(command=command[0], args=command[1:])) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            return (await s.call_tool(name, args)).content[0].text

for line in sys.stdin:
    m = json.loads(line)
    out = {"id": m["id"], "output": asyncio.run(ask(m["case"]["input"]))}
    urllib.request.urlopen(os.environ["EVALS_ANSWER_URL"], json.dumps(out).encode())
"#;

#[test]
fn a_tool_the_model_asked_for_and_an_mcp_server_ran_is_one_tool_call() {
    let python = crate::sdk::python();
    let mut model = crate::mock::Server::start();
    model.answer(
        "/v1/chat/completions",
        wiremock::ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "id": "gen-1",
            "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [{"id": "call_1", "type": "function", "function": {
                    "name": "lookup", "arguments": "{\"order\": \"42\"}"}}]}}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 7},
        })),
    );
    let p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "request_types: [prompt]\nadapter:\n  kind: exec\n  command: [{py}, evals/agent.py]\n  upstreams:\n    orders: {{ kind: mcp, command: [{py}, evals/server.py] }}\nscorer: {{ kind: assertions }}\nlocal:\n  base_url: {}/v1\n  api_key_env: LOCAL_KEY\n  models: [m1]\n",
                model.uri(),
                py = python.display()
            ),
        )
        .file("evals/agent.py", ASKING_AGENT)
        .file("evals/server.py", STDIO_SERVER)
        .file(
            "evals/datasets/d/cases.jsonl",
            "{\"id\": \"42\", \"input\": \"where is order 42?\", \"expect\": {\"tool_calls\": [{\"name\": \"lookup\", \"arguments\": {\"order\": \"42\"}}], \"tool_call_count\": {\"min\": 1, \"max\": 1}}}\n",
        );
    p.evals(&[
        "record",
        "--no-autosave",
        "--format",
        "json",
        "-o",
        "out.json",
    ])
    .env("LOCAL_KEY", "local-secret-key-123456")
    .ok();
    let recorded = case(&p);
    assert_eq!(recorded["output"], "order 42: shipped", "{recorded}");
    assert_eq!(
        recorded["tool_calls"],
        serde_json::json!([{"name": "lookup", "arguments": {"order": "42"}}]),
        "the model's call and the server's run of it are one call: {recorded}"
    );
    assert_eq!(recorded["score"], 1.0, "{recorded}");
    model.stop();
}
