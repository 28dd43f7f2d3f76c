//! The exec gateway at its edges (issue 27): a worker's path to an upstream never leaves
//! the API's base path, however its `..` are spelled, and a large request body is taken up
//! to `adapter.max_request_bytes` (32 MiB by default), past it an error of the case.

use serde_json::{Value, json};
use wiremock::matchers::{any, method, path};
use wiremock::{Mock, Request, Respond, ResponseTemplate};

use crate::harness::Project;
use crate::mock::Server;

const FILES_KEY: &str = "files-real-secret-0123456789abcdef";

/// A worker that sends, for each case, one raw GET (no client-side normalising) to the
/// `files` upstream at the case's input, appended to its URL, and answers the status (also
/// written to `status-<case>.txt`: an errored case keeps no output).
const TRAVERSER: &str = r#"
import http.client, json, os, sys, urllib.parse

u = urllib.parse.urlsplit(os.environ["EVALS_UPSTREAM_FILES_URL"])
for line in sys.stdin:
    msg = json.loads(line)
    c = http.client.HTTPConnection(u.hostname, u.port)
    c.putrequest("GET", u.path + msg["case"]["input"], skip_accept_encoding=True)
    c.endheaders()
    r = c.getresponse()
    r.read()
    with open("status-%s.txt" % msg["case"]["id"], "w") as f:
        f.write("%d %s" % (r.status, r.getheader("content-type")))
    print(json.dumps({"id": msg["id"], "output": {"status": r.status}}), flush=True)
"#;

/// Each case of the run's one experiment by id.
pub(crate) fn cases(run: &Value) -> std::collections::BTreeMap<String, Value> {
    run["experiments"][0]["cases"]
        .as_array()
        .unwrap_or_else(|| panic!("no cases: {run}"))
        .iter()
        .map(|c| (c["case"].as_str().unwrap().to_string(), c.clone()))
        .collect()
}

#[test]
fn dot_dot_in_an_upstream_path_never_takes_the_credential_outside_the_base_path() {
    let api = Server::start();
    api.mount(
        Mock::given(method("GET"))
            .and(path("/api/orders"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"ok": true}))),
    );
    // Anything else the host serves answers too, as a real host's other APIs would.
    api.mount(Mock::given(any()).respond_with(ResponseTemplate::new(200).set_body_string("{}")));
    let escapes = [
        "../v1/models",
        "%2e%2e/v1/models",
        "%2E%2E/v1/models",
        "%2E./v1/models",
        ".%2e/v1/models",
        "..%5Cv1%5Cmodels",
        "orders/../../v1/models",
    ];
    let lines: String = std::iter::once("orders/../orders")
        .chain(escapes)
        .enumerate()
        .map(|(i, input)| {
            format!(
                "{{\"id\": \"c{i}\", \"input\": \"{input}\", \"expected\": {{\"status\": 200}}}}\n"
            )
        })
        .collect();
    let p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "suite: edges\nrequest_types: [prompt]\nadapter:\n  kind: exec\n  command: [python3, evals/traverser.py]\n  upstreams:\n    files: {{ base_url: {}/api/, key_env: FILES_KEY, header: x-api-key }}\nscorer:\n  kind: fields\n  schema: {{ status: integer }}\nfake:\n  models: [echo]\n",
                api.uri()
            ),
        )
        .file("evals/traverser.py", TRAVERSER)
        .file("evals/datasets/d/cases.jsonl", &lines);
    let d = p
        .evals(&["record", "--format", "json", "-o", "rec.json"])
        .env("FILES_KEY", FILES_KEY)
        .code(1);
    d.stderr_has("7 cases errored");

    // The host got the one request below its base path, and nothing else.
    let seen: Vec<String> = api
        .requests()
        .iter()
        .map(|r| r.url.path().to_string())
        .collect();
    assert_eq!(seen, ["/api/orders"], "requests outside /api/");

    let run: Value = serde_json::from_str(&p.read("rec.json")).unwrap();
    let by_id = cases(&run);
    assert_eq!(by_id["c0"]["error"], Value::Null, "{}", by_id["c0"]);
    assert_eq!(by_id["c0"]["output"], json!({"status": 200}));
    for (i, input) in escapes.iter().enumerate() {
        let c = &by_id[&format!("c{}", i + 1)];
        assert_eq!(c["error_kind"], "adapter", "{input}: {c}");
        let error = c["error"].as_str().unwrap();
        assert!(
            error.starts_with("upstream files: GET /")
                && error.contains("leaves the API's base URL")
                && error.contains("adapter.upstreams.files.base_url"),
            "{input}: {error}"
        );
        // The worker was told: a JSON 400, never an answer from outside.
        assert_eq!(
            p.read(&format!("status-c{}.txt", i + 1)),
            "400 application/json",
            "{input}"
        );
    }
}

/// A worker that asks the model once per case with a user message of the case's input
/// (a number) of bytes, through the gateway, and answers what the model said.
const SENDER: &str = r#"
import json, os, sys, urllib.request, urllib.error

for line in sys.stdin:
    msg = json.loads(line)
    text = "A" * int(msg["case"]["input"])
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": text}]}).encode()
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", body,
                                 {"content-type": "application/json",
                                  "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
    out = {"id": msg["id"]}
    try:
        with urllib.request.urlopen(req) as r:
            out["output"] = json.loads(json.loads(r.read())["choices"][0]["message"]["content"])
    except urllib.error.HTTPError as e:
        out["output"] = {"answer": "status %d" % e.code}
    except OSError as e:
        out["output"] = {"answer": "failed: %s" % type(e).__name__}
    print(json.dumps(out), flush=True)
"#;

/// The model: answers how many characters its user message had.
struct Count;

impl Respond for Count {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        let n = body["messages"][0]["content"].as_str().map_or(0, str::len);
        crate::mock::chat(
            &json!({ "answer": format!("got {n}") }).to_string(),
            json!({"prompt_tokens": 5, "completion_tokens": 3}),
        )
    }
}

/// A suite whose one case sends `bytes` bytes, with `adapter_extra` under `adapter:`.
fn sender(model: &str, bytes: usize, adapter_extra: &str) -> Project {
    Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "suite: big\nrequest_types: [prompt]\nadapter:\n  kind: exec\n  command: [python3, evals/sender.py]\n{adapter_extra}scorer:\n  kind: fields\n  schema: {{ answer: string }}\nlocal:\n  base_url: {model}/v1\n  api_key_env: LOCAL_KEY\n  models: [m1]\n"
            ),
        )
        .file("evals/sender.py", SENDER)
        .file(
            "evals/datasets/d/cases.jsonl",
            &format!("{{\"id\": \"big\", \"input\": \"{bytes}\", \"expected\": {{\"answer\": \"got {bytes}\"}}}}\n"),
        )
}

#[test]
fn a_five_mib_request_body_records_and_replays_through_the_gateway() {
    let mut model = Server::start();
    model.answer("/v1/chat/completions", Count);
    let five_mib = 5 * 1024 * 1024;
    let p = sender(&model.uri(), five_mib, "");
    p.evals(&["record", "--format", "json", "-o", "rec.json"])
        .env("LOCAL_KEY", "local-secret-key-123456")
        .ok();
    let rec: Value = serde_json::from_str(&p.read("rec.json")).unwrap();
    let case = &cases(&rec)["big"];
    assert_eq!(case["error"], Value::Null, "{case}");
    assert_eq!(case["output"], json!({"answer": format!("got {five_mib}")}));
    assert_eq!(model.hits(), 1);
    model.stop();

    // Offline, the same body replays from the cassette.
    p.evals(&["check", "--format", "json", "-o", "chk.json"])
        .ok();
    let chk: Value = serde_json::from_str(&p.read("chk.json")).unwrap();
    assert_eq!(cases(&chk)["big"]["output"], case["output"]);
    assert_eq!(chk["experiments"][0]["errors"], 0, "{chk}");
}

#[test]
fn a_request_body_over_max_request_bytes_errors_the_case_naming_the_limit_and_the_key() {
    let model = Server::start();
    model.answer("/v1/chat/completions", Count);
    let p = sender(
        &model.uri(),
        2 * 1024 * 1024,
        "  max_request_bytes: 1048576\n",
    );
    let d = p
        .evals(&["record", "--format", "json", "-o", "rec.json"])
        .env("LOCAL_KEY", "local-secret-key-123456")
        .code(1);
    d.stderr_has("1 case errored");
    assert!(
        !d.stderr.contains("no contender calls a model"),
        "{}",
        d.stderr
    );
    assert_eq!(model.hits(), 0, "the body never reached the model");
    let rec: Value = serde_json::from_str(&p.read("rec.json")).unwrap();
    let case = &cases(&rec)["big"];
    assert_eq!(case["error_kind"], "too-large", "{case}");
    assert_eq!(case["score"], Value::Null, "never a 0 for the model");
    assert_ne!(case["passed"], true);
    let error = case["error"].as_str().unwrap();
    assert!(
        error.contains("POST /v1/chat/completions a request body of 2.0 MiB")
            && error.contains("over adapter.max_request_bytes (1.0 MiB)"),
        "{error}"
    );
}
