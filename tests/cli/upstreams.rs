//! An agent's other HTTP APIs (`adapter.upstreams`): a Python agent whose tool calls a
//! shipping API with `urllib` and whose model is asked through the official `openai` SDK,
//! both served by wiremock; recorded once, then checked offline with both servers gone.
//! Strict replay (unexpected, unmade and exhausted requests), request assertions and
//! hand-written fixtures.

use serde_json::{Value, json};
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, Request, Respond, ResponseTemplate};

use crate::harness::Project;
use crate::mock::Server;

const SHIP_KEY: &str = "ship-real-secret-0123456789abcdef";
const MODEL_KEY: &str = "sk-openai-real-0123456789abcdef";

/// The agent: one tool (`lookup`: GET /orders?id=…, then POST /events), then the model.
/// `AGENT_ORDER` overrides the order it looks up, `AGENT_SKIP_EVENT` leaves the POST out,
/// `AGENT_WEATHER` also asks the weather API, `AGENT_TWICE` looks the order up twice. A failed tool call is rescued (the agent goes
/// on with what it has), as agents do.
const AGENT: &str = r#"
import json, os, sys, urllib.request, urllib.parse, urllib.error
from openai import OpenAI

client = OpenAI()
SHIP = os.environ.get("EVALS_UPSTREAM_SHIPPING_URL", "")

with open("worker-env-%d.txt" % os.getpid(), "w") as f:
    f.write(json.dumps(dict(os.environ)))

def call(url, data=None):
    body = None if data is None else json.dumps(data).encode()
    req = urllib.request.Request(url, data=body, headers={"content-type": "application/json", "accept": "application/json"})
    try:
        with urllib.request.urlopen(req) as r:
            return json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return {"status": "unknown (%d)" % e.code}

def lookup(order_id):
    order = call(SHIP + "orders?" + urllib.parse.urlencode({"id": order_id, "fields": "status"}))
    if os.environ.get("AGENT_TWICE"):
        order = call(SHIP + "orders?" + urllib.parse.urlencode({"id": order_id, "fields": "status"}))
    if not os.environ.get("AGENT_SKIP_EVENT"):
        call(SHIP + "events", {"order": order_id, "seen": True, "count": 1})
    if os.environ.get("AGENT_WEATHER"):
        call(os.environ["EVALS_UPSTREAM_WEATHER_URL"] + "today")
    return order

for line in sys.stdin:
    msg = json.loads(line)
    out = {"id": msg["id"]}
    try:
        order_id = os.environ.get("AGENT_ORDER") or msg["case"]["input"]
        order = lookup(order_id)
        r = client.chat.completions.create(model="any", messages=[
            {"role": "user", "content": "order %s: %s" % (order_id, order.get("status"))}])
        out["raw"] = r.choices[0].message.content
        out["output"] = json.loads(out["raw"])
    except Exception as e:
        out["error"] = "%s: %s" % (type(e).__name__, e)
    print(json.dumps(out), flush=True)
"#;

/// The model: answers `{"answer": <the user message>}`.
struct Echo;

impl Respond for Echo {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        let said = body["messages"][0]["content"].clone();
        crate::mock::chat(
            &json!({ "answer": said }).to_string(),
            json!({"prompt_tokens": 5, "completion_tokens": 4}),
        )
    }
}

/// The model server and the shipping API (which wants its key in `authorization`).
fn servers() -> (Server, Server) {
    let model = Server::start();
    model.answer("/v1/chat/completions", Echo);
    let ship = Server::start();
    for (id, status) in [("42", "shipped"), ("7", "pending")] {
        ship.mount(
            Mock::given(method("GET"))
                .and(path("/api/orders"))
                .and(query_param("id", id))
                .and(header("authorization", format!("Bearer {SHIP_KEY}")))
                .respond_with(
                    ResponseTemplate::new(200).set_body_json(json!({"id": id, "status": status})),
                ),
        );
    }
    ship.mount(
        Mock::given(method("POST"))
            .and(path("/api/events"))
            .and(header("authorization", format!("Bearer {SHIP_KEY}")))
            .respond_with(ResponseTemplate::new(201).set_body_json(json!({"ok": true}))),
    );
    ship.mount(Mock::given(wiremock::matchers::any()).respond_with(ResponseTemplate::new(401)));
    (model, ship)
}

/// The agent's suite: cases `42` and `7`, `upstreams` (YAML under `upstreams:`), `env`
/// (the adapter's), and `expect` added to case 42.
fn suite(model: &str, upstreams: &str, env: &str, expect: &str) -> Project {
    let py = crate::sdk::python();
    let expect42 = if expect.is_empty() {
        String::new()
    } else {
        format!(", \"expect\": {expect}")
    };
    Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "suite: agent\nrequest_types: [prompt]\nadapter:\n  kind: exec\n  command: [{}, evals/agent.py]\n  env: {{ {env} }}\n  upstreams:\n{upstreams}scorer:\n  - kind: fields\n    schema:\n      answer: string\n  - kind: assertions\n    expect: {{ required_json_keys: [answer] }}\nopenai:\n  base_url: {model}/v1\n  models: [gpt-x]\n",
                py.display()
            ),
        )
        .file("evals/agent.py", AGENT)
        .file(
            "evals/datasets/orders/cases.jsonl",
            &format!(
                "{{\"id\": \"42\", \"input\": \"42\", \"expected\": {{\"answer\": \"order 42: shipped\"}}{expect42}}}\n{{\"id\": \"7\", \"input\": \"7\", \"expected\": {{\"answer\": \"order 7: pending\"}}}}\n"
            ),
        )
}

fn shipping(base: &str) -> String {
    format!(
        "    shipping: {{ base_url: {base}/api, key_env: SHIPPING_KEY, header: authorization }}\n"
    )
}

/// `evals record` with both keys, as JSON.
fn record(p: &Project) -> Value {
    p.evals(&["record", "--format", "json", "-o", "rec.json"])
        .env("OPENAI_API_KEY", MODEL_KEY)
        .env("SHIPPING_KEY", SHIP_KEY)
        .ok();
    serde_json::from_str(&p.read("rec.json")).unwrap()
}

/// `evals check` with no key and no server, as JSON (whatever its exit code).
fn check(p: &Project) -> Value {
    p.evals(&["check", "--format", "json", "-o", "chk.json"])
        .output();
    serde_json::from_str(&p.read("chk.json")).unwrap()
}

/// Each case of the run's one experiment by id.
fn cases(run: &Value) -> std::collections::BTreeMap<String, Value> {
    run["experiments"][0]["cases"]
        .as_array()
        .unwrap_or_else(|| panic!("no cases: {run}"))
        .iter()
        .map(|c| (c["case"].as_str().unwrap().to_string(), c.clone()))
        .collect()
}

/// Every file under `dir` holding `needle`.
fn files_holding(dir: &std::path::Path, needle: &str) -> Vec<String> {
    walk(dir)
        .into_iter()
        .filter(|f| {
            std::fs::read(f).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes()))
        })
        .map(|f| f.display().to_string())
        .collect()
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![];
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn an_agent_and_its_tool_api_record_once_and_check_offline_to_the_same_scores_and_trajectory() {
    let (mut model, mut ship) = servers();
    let p = suite(&model.uri(), &shipping(&ship.uri()), "", "");
    let rec = record(&p);
    assert_eq!(rec["experiments"][0]["errors"], 0, "{rec}");
    assert_eq!(
        rec["experiments"][0]["means"]["field_accuracy"], 1.0,
        "{rec}"
    );
    // The real API got the real key; the model its own.
    let got = ship.headers("authorization");
    assert_eq!(got.len(), 4, "{got:?}");
    assert!(
        got.iter().all(|h| *h == format!("Bearer {SHIP_KEY}")),
        "{got:?}"
    );
    let bodies: Vec<Value> = ship
        .requests()
        .iter()
        .filter(|r| r.method.as_str() == "POST")
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect();
    assert_eq!(bodies[0]["seen"], true, "the JSON body passed on as sent");
    model.stop();
    ship.stop();

    // The cassette holds the tool's requests beside the model's, in call order; the
    // requests as the agent sent them (format 4).
    let cassette: Value =
        serde_json::from_str(&p.read("evals/cassettes/openai/gpt-x/default/orders/42.json"))
            .unwrap();
    assert_eq!(cassette["format"], 4);
    let calls: Vec<(Value, Value)> = cassette["interactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["upstream"].clone(), i["request"]["method"].clone()))
        .collect();
    assert_eq!(
        calls,
        [
            (json!("shipping"), json!("GET")),
            (json!("shipping"), json!("POST")),
            (Value::Null, json!("POST")),
        ]
    );

    let chk = check(&p);
    let e = &chk["experiments"][0];
    assert_eq!(e["errors"], 0, "{chk}");
    assert_eq!(
        rec["experiments"][0]["means"], e["means"],
        "identical scores"
    );
    let (r, c) = (cases(&rec), cases(&chk));
    for id in ["42", "7"] {
        assert_eq!(r[id]["score"], c[id]["score"]);
        assert_eq!(
            r[id]["trajectory"], c[id]["trajectory"],
            "the same trajectory"
        );
    }
    let steps: Vec<String> = c["42"]["trajectory"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            format!(
                "{} {} {} {} {}",
                s["kind"].as_str().unwrap(),
                s["name"].as_str().unwrap(),
                s["method"].as_str().unwrap(),
                s["path"].as_str().unwrap(),
                s["status"]
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            "upstream shipping GET /orders 200",
            "upstream shipping POST /events 201",
            "model openai/gpt-x POST /v1/chat/completions 200",
        ]
    );
    assert_eq!(
        c["42"]["trajectory"][0]["query"],
        json!({"id": "42", "fields": "status"})
    );
    // The HTML report's case view carries the trajectory (the fragment in the case data).
    p.evals(&["render", "chk.json", "-o", "report.html"]).ok();
    let html = p.read("report.html");
    assert!(
        html.contains("\\u003col class=\\\"trajectory\\\"") && html.contains("/orders"),
        "no trajectory in the report"
    );

    // The tool's key reached neither a worker nor any file (cassettes, history, reports,
    // logs, the workers' own dumps of their environment).
    let envs: Vec<_> = walk(p.path())
        .into_iter()
        .filter(|f| {
            f.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("worker-env-")
        })
        .collect();
    assert!(envs.len() >= 2, "{envs:?}");
    let env: Value = serde_json::from_str(&std::fs::read_to_string(&envs[0]).unwrap()).unwrap();
    let url = env["EVALS_UPSTREAM_SHIPPING_URL"].as_str().unwrap();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.contains("/upstream/shipping/"),
        "{url}"
    );
    assert_eq!(env.get("SHIPPING_KEY"), None);
    assert_eq!(files_holding(p.path(), SHIP_KEY), Vec::<String>::new());
    assert_eq!(files_holding(p.path(), MODEL_KEY), Vec::<String>::new());
}

/// The error of `evals cases` on a suite whose `upstreams:` is `yaml`.
fn config_error(yaml: &str) -> String {
    let p = suite("http://127.0.0.1:9", yaml, "", "");
    let d = p.evals(&["cases"]).code(2);
    d.stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_bad_upstreams_section_names_file_line_column_and_the_fix() {
    // The config's line 6 is `  upstreams:`, its first API line 7.
    assert_eq!(
        config_error("    shipping: { base_url: https://s.example, kye_env: K }\n"),
        "error: evals/.llm-evals.config.yml:8:46: unknown key 'kye_env' in shipping (did you mean 'key_env'?)"
    );
    assert_eq!(
        config_error("    shipping: { base_url: ftp://s.example }\n"),
        "error: evals/.llm-evals.config.yml:8:17: adapter.upstreams.shipping.base_url: 'ftp://s.example' is not an http:// or https:// URL (with no query): write the API's base URL, e.g. https://shipping.example/api"
    );
    assert_eq!(
        config_error("    shipping: { base_url: https://s.example, header: x-api-key }\n"),
        "error: evals/.llm-evals.config.yml:8:46: adapter.upstreams.shipping.header: says where the key goes, but no key_env says which variable holds it: add key_env, or remove header"
    );
    assert_eq!(
        config_error("    ship.ping: { base_url: https://s.example }\n"),
        "error: evals/.llm-evals.config.yml:8:5: adapter.upstreams.ship.ping: an upstream's name is letters, digits, _ and - (it names the variable EVALS_UPSTREAM_<NAME>_URL): rename it"
    );
    assert_eq!(
        config_error("    shipping: { key_env: K }\n"),
        "error: evals/.llm-evals.config.yml:8:5: adapter.upstreams.shipping: has no base_url: write the API's base URL (e.g. https://shipping.example/api), or for an MCP server over stdio `kind: mcp` and its `command: [...]`"
    );
    assert_eq!(
        config_error("    orders: { command: [python, server.py] }\n"),
        "error: evals/.llm-evals.config.yml:8:15: adapter.upstreams.orders.command: starts a stdio MCP server, and this upstream is not `kind: mcp`: add `kind: mcp`, or give a base_url instead"
    );
    assert_eq!(
        config_error(
            "    orders: { kind: mcp, command: [python, s.py], base_url: https://s.example }\n"
        ),
        "error: evals/.llm-evals.config.yml:8:26: adapter.upstreams.orders: has both command and base_url: keep command for a stdio MCP server, or base_url for one over HTTP"
    );
    assert_eq!(
        config_error("    orders: { kind: mcp, command: [] }\n"),
        "error: evals/.llm-evals.config.yml:8:26: adapter.upstreams.orders.command: is empty: write the server's command line, e.g. [python, server.py]"
    );
    assert_eq!(
        config_error("    strict: maybe\n"),
        "error: evals/.llm-evals.config.yml:8:5: adapter.upstreams.strict: 'maybe' is not true or false: write `strict: true` (the default) or `strict: false`"
    );
}

#[test]
fn an_upstream_key_is_never_passed_to_a_worker() {
    let p = suite(
        "http://127.0.0.1:9",
        &shipping("http://127.0.0.1:9"),
        "",
        "",
    );
    let text = p.read("evals/.llm-evals.config.yml").replace(
        "  upstreams:\n",
        "  pass_env: [SHIPPING_KEY]\n  upstreams:\n",
    );
    p.write("evals/.llm-evals.config.yml", &text);
    p.evals(&["cases"]).code(2).stderr_has(
        "adapter.pass_env: 'SHIPPING_KEY' holds the suite's API key, which workers never get",
    );
}

/// A recorded agent suite, both servers gone; `upstreams` and `env` as the check sees them.
fn recorded(upstreams: impl Fn(&str) -> String, env: &str, expect: &str) -> Project {
    let (mut model, mut ship) = servers();
    let p = suite(&model.uri(), &upstreams(&ship.uri()), "", expect);
    let rec = record(&p);
    assert_eq!(rec["experiments"][0]["errors"], 0, "{rec}");
    model.stop();
    ship.stop();
    let text = p
        .read("evals/.llm-evals.config.yml")
        .replace("  env: {  }\n", &format!("  env: {{ {env} }}\n"));
    p.write("evals/.llm-evals.config.yml", &text);
    p
}

/// The error of each case of a check, by id (`None`: scored).
fn errors(chk: &Value) -> std::collections::BTreeMap<String, Option<String>> {
    cases(chk)
        .into_iter()
        .map(|(id, c)| (id, c["error"].as_str().map(str::to_string)))
        .collect()
}

#[test]
fn an_unexpected_tool_request_errors_the_case_with_the_diff_even_when_the_agent_rescues_it() {
    let p = recorded(shipping, "AGENT_ORDER: \"43\"", "");
    let chk = check(&p);
    let e = errors(&chk);
    let e42 = e["42"].as_deref().unwrap_or_else(|| panic!("{chk}"));
    assert!(
        e42.starts_with("upstream shipping: GET /orders: no recording matches this request ("),
        "{e42}"
    );
    assert!(
        e42.contains("/api/orders?fields=status&id=42 → ")
            && e42.contains("/api/orders?fields=status&id=43"),
        "the nearest recording's diff: {e42}"
    );
    assert_eq!(cases(&chk)["42"]["error_kind"], "miss");
    assert!(e["7"].is_some(), "{chk}");
}

#[test]
fn a_tool_request_made_more_often_than_recorded_is_exhausted_and_errors_the_case() {
    let p = recorded(shipping, "AGENT_TWICE: \"1\"", "");
    let e = errors(&check(&p));
    let e42 = e["42"].as_deref().unwrap();
    assert!(
        e42.contains("this request was recorded 1 time(s) and every recording is used"),
        "{e42}"
    );
}

#[test]
fn a_recorded_tool_request_the_agent_no_longer_makes_errors_the_case_only_when_strict() {
    let p = recorded(shipping, "AGENT_SKIP_EVENT: \"1\"", "");
    let e = errors(&check(&p));
    let e42 = e["42"].as_deref().unwrap();
    assert!(
        e42.starts_with("upstream shipping: the recorded request POST ")
            && e42.contains("/api/events was never made ("),
        "{e42}"
    );
    assert!(
        e42.ends_with("set `strict: false` under adapter.upstreams"),
        "{e42}"
    );
    assert!(e["7"].is_some());

    // The same, lenient: both cases score as recorded.
    let p = recorded(
        |base| format!("    strict: false\n{}", shipping(base)),
        "AGENT_SKIP_EVENT: \"1\"",
        "",
    );
    let chk = check(&p);
    assert_eq!(errors(&chk).values().flatten().count(), 0, "{chk}");
    assert_eq!(chk["experiments"][0]["means"]["field_accuracy"], 1.0);
    // And an API's own `strict: true` overrides the upstreams' `false`.
    let p = recorded(
        |base| {
            format!(
                "    strict: false\n    shipping: {{ base_url: {base}/api, key_env: SHIPPING_KEY, strict: true }}\n"
            )
        },
        "AGENT_SKIP_EVENT: \"1\"",
        "",
    );
    assert!(errors(&check(&p))["42"].is_some());
}

#[test]
fn request_assertions_on_what_the_agent_sent_pass_and_fail_as_written() {
    let pass = r#"{"requests": [{"upstream": "shipping", "method": "GET", "path": "/orders", "query": {"id": "42"}}, {"upstream": "shipping", "method": "POST", "path": "/events", "body": {"seen": true, "count": 1}}], "ordered": true, "no_requests": ["weather"]}"#;
    let p = recorded(shipping, "", pass);
    let chk = check(&p);
    let c = cases(&chk);
    assert_eq!(c["42"]["passed"], true, "{chk}");
    assert_eq!(c["42"]["metrics"]["pass_rate"], 1.0);

    // "1" is not 1, the POST came after the GET, and the shipping API was called.
    let fail = r#"{"requests": [{"upstream": "shipping", "method": "POST", "path": "/events", "body": {"count": "1"}}, {"upstream": "shipping", "path": "/orders"}], "ordered": true, "no_requests": ["shipping"]}"#;
    let text = p
        .read("evals/datasets/orders/cases.jsonl")
        .replace(pass, fail);
    p.write("evals/datasets/orders/cases.jsonl", &text);
    let chk = check(&p);
    let c = cases(&chk);
    assert_eq!(c["42"]["error"], Value::Null, "{chk}");
    assert_eq!(c["42"]["passed"], false, "{chk}");
    let failed: Vec<&str> = c["42"]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["outcome"] == "failed")
        .map(|d| d["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        failed,
        [
            "requests (ordered) POST shipping /events body {\"count\":\"1\"} → shipping /orders",
            "no_requests [shipping]",
        ]
    );
    assert_eq!(c["7"]["passed"], true);
}

#[test]
fn a_fixture_file_answers_a_tool_api_with_no_recording_and_cassettes_status_lists_it() {
    let mut model = Server::start();
    model.answer("/v1/chat/completions", Echo);
    // The shipping API does not exist yet: its answers are written by hand.
    let p = suite(&model.uri(), &shipping("http://127.0.0.1:9"), "", "")
        .file(
            "evals/datasets/orders/fixtures/shipping/GET_orders.json",
            r#"{"id": "42", "status": "shipped"}"#,
        )
        .file(
            "evals/datasets/orders/fixtures/shipping/GET_orders.meta.json",
            r#"{"query": {"id": "42"}, "headers": {"x-source": "hand"}}"#,
        )
        .file(
            "evals/datasets/orders/fixtures/shipping/POST_events.json",
            r#"{"ok": true}"#,
        )
        .file(
            "evals/datasets/orders/fixtures/shipping/POST_events.meta.json",
            r#"{"status": 201}"#,
        );
    p.evals(&["record", "--format", "json", "-o", "rec.json"])
        .env("OPENAI_API_KEY", MODEL_KEY)
        .output();
    let rec: Value = serde_json::from_str(&p.read("rec.json")).unwrap();
    let r = cases(&rec);
    assert_eq!(r["42"]["error"], Value::Null, "{rec}");
    assert_eq!(r["42"]["score"], 1.0);
    // Case 7's order has no fixture (the meta file's query is 42's): it would go live,
    // without the key.
    let e7 = r["7"]["error"].as_str().unwrap();
    assert!(
        e7.starts_with("upstream shipping: GET /orders: SHIPPING_KEY is not set: the upstream shipping needs it for live calls"),
        "{e7}"
    );
    model.stop();
    // The cassette holds the model's call alone: the fixtures answer the API.
    let cassette = p.read("evals/cassettes/openai/gpt-x/default/orders/42.json");
    assert!(!cassette.contains("\"upstream\""), "{cassette}");

    let chk = check(&p);
    let c = cases(&chk);
    assert_eq!(c["42"]["error"], Value::Null, "{chk}");
    assert_eq!(c["42"]["score"], 1.0);
    let statuses: Vec<&Value> = c["42"]["trajectory"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["status"])
        .collect();
    assert_eq!(statuses, [&json!(200), &json!(201), &json!(200)]);
    let e7 = c["7"]["error"].as_str().unwrap();
    assert!(
        e7.starts_with("upstream shipping: GET /orders: no cassette for this case ("),
        "{e7}"
    );

    // `run` shows each case's trajectory in its breakdown.
    p.evals(&["run", "--cassettes", "replay", "--no-autosave", "-c", "42"])
        .output()
        .stdout_has("  42 trajectory: GET shipping /orders?fields=status&id=42 → 200, POST shipping /events → 201, POST openai/gpt-x /v1/chat/completions → 200\n");

    let d = p.evals(&["cassettes", "status"]).output();
    for f in ["GET_orders.json", "POST_events.json"] {
        let row = d
            .stdout
            .lines()
            .find(|l| l.contains(f))
            .unwrap_or_else(|| panic!("{}", d.stdout));
        assert!(
            row.contains("fixture")
                && row.contains("upstream shipping")
                && row.contains("orders/*"),
            "{row}"
        );
    }
    assert!(!d.stdout.contains(".meta.json"), "{}", d.stdout);
    d.stdout_has("2 fixtures");
}

/// The book's agent (docs/src/agents.md), as written there.
fn readme_agent() -> String {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/src/agents.md"))
            .unwrap();
    let start = readme
        .find("```python\n# evals/agent.py\n")
        .expect("docs/src/agents.md shows evals/agent.py")
        + "```python\n".len();
    let len = readme[start..].find("```").unwrap();
    readme[start..start + len].to_string()
}

#[test]
fn the_readme_agent_records_once_and_checks_offline_to_the_same_scores() {
    let (mut model, mut ship) = servers();
    let py = crate::sdk::python();
    let said = "Order 42 is shipped. Tell the customer, as JSON {\\\"answer\\\"}.";
    let p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "suite: readme-agent\nrequest_types: [prompt]\nadapter:\n  kind: exec\n  command: [{}, evals/agent.py]\n  upstreams:\n{}scorer:\n  kind: fields\n  schema:\n    answer: string\nopenai:\n  base_url: {}/v1\n  models: [gpt-x]\n",
                py.display(),
                shipping(&ship.uri()),
                model.uri()
            ),
        )
        .file("evals/agent.py", &readme_agent())
        .file(
            "evals/datasets/orders/cases.jsonl",
            &format!("{{\"id\": \"42\", \"input\": \"42\", \"expected\": {{\"answer\": \"{said}\"}}}}\n"),
        );
    let rec = record(&p);
    assert_eq!(rec["experiments"][0]["errors"], 0, "{rec}");
    assert_eq!(
        rec["experiments"][0]["means"]["field_accuracy"], 1.0,
        "{rec}"
    );
    model.stop();
    ship.stop();
    let chk = check(&p);
    assert_eq!(chk["experiments"][0]["errors"], 0, "{chk}");
    assert_eq!(
        rec["experiments"][0]["means"],
        chk["experiments"][0]["means"]
    );
    assert_eq!(
        cases(&rec)["42"]["trajectory"],
        cases(&chk)["42"]["trajectory"]
    );
}
