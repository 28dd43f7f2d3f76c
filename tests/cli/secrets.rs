//! No secret leaves the process. Keys are planted where users keep them (the suite's key in
//! `env_files`, `GITHUB_TOKEN` and another provider's key in the environment, a secret with
//! a trailing space in `.env`), echoed back by the upstream (trimmed, URL-encoded, base64)
//! and printed by an exec worker that dumps its environment and `.env` into its output, its
//! errors and its stderr. Then every command that writes or prints runs (record, compare,
//! check with every report flag, history --json, export, report in every format, render,
//! comment against a wiremock GitHub, cassettes scan), and every file under the project
//! (the SQLite history included), every captured stream and every request GitHub received
//! is searched for each secret in every form: none may hold one.

use base64::Engine as _;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, Request, Respond, ResponseTemplate};

use crate::harness::{Done, Project, files_under};
use crate::mock::Server;

/// The suite's own key, from `evals/.env` (env_files).
const SUITE_KEY: &str = "suite/key+from=env-files_0123456789";
/// In the environment: the token CI gives every job.
const GITHUB_TOKEN: &str = "gh-actions-token-value-abcdef012345";
/// In the environment: another provider's key the suite never uses.
const FOREIGN_KEY: &str = "anthropic/foreign+key-9876543210";
/// In `.env` with a trailing space; the upstream echoes it trimmed.
const SPACED: &str = "partner-secret-with-space-24680";
/// In the exec adapter's own `env:` map, under a secret-looking name.
const ADAPTER_ENV: &str = "adapter_env/token-1357924680";

/// Each planted secret in each form it may take on the way out.
fn forms() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for secret in [SUITE_KEY, GITHUB_TOKEN, FOREIGN_KEY, SPACED, ADAPTER_ENV] {
        // As the renderers escape it too: HTML (minijinja writes `/` as `&#x2f;`) and
        // Markdown (a backslash before `_`): a scrubber that ran after them would miss these.
        let html = secret.replace('/', "&#x2f;");
        let markdown = secret.replace('_', "\\_");
        for (name, form) in [
            ("raw", secret.to_string()),
            ("base64", b64(secret)),
            ("percent", pct(secret)),
            ("HTML-escaped", html),
            ("Markdown-escaped", markdown),
        ] {
            out.push((format!("{secret} ({name})"), form));
        }
    }
    out
}

fn pct(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// An upstream that echoes what it was sent: the bearer key it got (as HTTP servers do,
/// trimmed), URL-encoded and base64-encoded, and the question it was asked, trimmed.
struct Echo;

impl Respond for Echo {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let key = req
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .trim_start_matches("Bearer ")
            .trim()
            .to_string();
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        let asked = body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_str())
            .unwrap_or("")
            .trim()
            .to_string();
        let content = json!({
            "answer": "ok",
            "your_key": key,
            "url": format!("https://upstream.test/v1?key={}", pct(&key)),
            "basic": b64(&key),
            "you_said": asked,
        })
        .to_string();
        ResponseTemplate::new(200).set_body_json(json!({
            "id": format!("chatcmpl-{key}"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3},
        }))
    }
}

/// A worker as careless as real code: it loads `.env` itself (python-dotenv style), asks
/// the model with the partner secret in the prompt, and puts its whole environment, the
/// `.env` text and their encodings into its output, its raw reply, its errors and stderr.
const WORKER: &str = r#"
import base64, json, os, sys, urllib.parse, urllib.request

dotenv = open(os.path.join(os.path.dirname(__file__), ".env")).read()
values = {}
for line in dotenv.splitlines():
    if "=" in line:
        k, v = line.split("=", 1)
        values[k.strip()] = v.strip().strip('"')
leaks = dict(os.environ)
leaks.update(values)
encoded = {k: [base64.b64encode(v.encode()).decode(), urllib.parse.quote(v, safe="")]
           for k, v in leaks.items()}
print("worker env: " + json.dumps(leaks), file=sys.stderr, flush=True)
print("worker dotenv: " + dotenv, file=sys.stderr, flush=True)

for line in sys.stdin:
    msg = json.loads(line)
    q = msg["case"]["input"]
    body = json.dumps({"model": "x", "messages": [
        {"role": "user", "content": q + " " + values["PARTNER_SECRET"]}]}).encode()
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", body,
        {"content-type": "application/json",
         "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
    with urllib.request.urlopen(req) as r:
        reply = json.loads(r.read())["choices"][0]["message"]["content"]
    echoed = json.loads(reply)
    out = {"id": msg["id"], "raw": reply + "\n" + dotenv,
           "output": {"answer": "ok", "env": leaks, "dotenv": dotenv, "encoded": encoded,
                      "echoed": echoed}}
    if q == "fails":
        out = {"id": msg["id"], "error": "could not use key " + values["LOCAL_KEY"] +
               " or " + leaks.get("GITHUB_TOKEN", "") + " " + encoded["LOCAL_KEY"][0]}
    print("case %s with env %s" % (q, json.dumps(leaks)), file=sys.stderr, flush=True)
    print(json.dumps(out), flush=True)
"#;

fn dotenv() -> String {
    format!("LOCAL_KEY={SUITE_KEY}\nPARTNER_SECRET=\"{SPACED} \"\nMODEL_NAME=m1\n")
}

fn project(base_url: &str, exec: bool) -> Project {
    let adapter = if exec {
        // The worker is handed the foreign secrets on purpose (pass_env), so that what it
        // prints of them has to be scrubbed.
        "adapter:\n  kind: exec\n  command: [python3, evals/worker.py]\n  pass_env: [GITHUB_TOKEN, MISTRAL_API_KEY]\n  env: { PARTNER_TOKEN: \"adapter_env/token-1357924680\" }\n"
    } else {
        "adapter:\n  kind: prompt\n  user: \"{{ input }}\"\n  json: true\n"
    };
    let cases = if exec {
        "{\"id\": \"first\", \"input\": \"first\", \"expected\": {\"answer\": \"ok\"}}\n\
         {\"id\": \"fails\", \"input\": \"fails\", \"expected\": {\"answer\": \"ok\"}}\n"
    } else {
        "{\"id\": \"first\", \"input\": \"first\", \"expected\": {\"answer\": \"ok\"}}\n\
         {\"id\": \"second\", \"input\": \"second\", \"expected\": {\"answer\": \"ok\"}}\n"
    };
    Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "suite: leaky\nrequest_types: [prompt]\nenv_files: [.env]\n{adapter}scorer:\n  kind: fields\n  schema: {{ answer: string }}\nlocal:\n  base_url: {base_url}/v1\n  api_key_env: LOCAL_KEY\n  models: [m1]\n"
            ),
        )
        .file("evals/.env", &dotenv())
        .file("evals/worker.py", WORKER)
        .file("evals/datasets/d/cases.jsonl", cases)
}

/// Every output of every command, and every file the project holds at the end.
struct Outputs {
    streams: Vec<(String, String)>,
}

impl Outputs {
    fn add(&mut self, what: &str, d: &Done) {
        self.streams
            .push((format!("{what}: stdout"), d.stdout.clone()));
        self.streams
            .push((format!("{what}: stderr"), d.stderr.clone()));
    }
}

fn run_everything(p: &Project, github: &Server) -> Outputs {
    let mut o = Outputs {
        streams: Vec::new(),
    };
    let env = |r: crate::harness::Run| {
        r.env("GITHUB_TOKEN", GITHUB_TOKEN)
            .env("MISTRAL_API_KEY", FOREIGN_KEY)
            .env("GITHUB_STEP_SUMMARY", "summary.md")
    };
    // The exec suite's `fails` case answers with an error: the model's failure, scored 0,
    // so every run passes.

    let d = env(p.evals(&["record", "-p", "1"])).ok();
    o.add("record", &d);
    let d = env(p.evals(&["compare", "--format", "json", "-o", "compare.json"])).ok();
    o.add("compare --format json", &d);
    let d = env(p.evals(&["compare", "--format", "html", "-o", "compare.html"])).ok();
    o.add("compare --format html", &d);
    let d = env(p.evals(&["compare"])).ok();
    o.add("compare", &d);
    let d = env(p.evals(&["check", "--branch", "main"])).ok();
    o.add("check on main", &d);
    let d = env(p.evals(&[
        "check",
        "--branch",
        "feature",
        "--baseline",
        "main",
        "--junit",
        "junit.xml",
        "--markdown",
        "comment.md",
        "--diff",
        "diff.txt",
        "--html",
        "report.html",
        "--json",
        "check.json",
    ]))
    .ok();
    o.add("check --baseline main", &d);

    let d = env(p.evals(&["history", "--json"])).ok();
    o.add("history --json", &d);
    let runs: Value = serde_json::from_str(&d.stdout).expect("history --json is JSON");
    let id = runs[0]["id"].as_str().expect("a run id").to_string();
    let d = env(p.evals(&["history"])).ok();
    o.add("history", &d);
    let d = env(p.evals(&["export", &id, "-o", "export.json"])).ok();
    o.add("export", &d);
    let d = env(p.evals(&["export", &id])).ok();
    o.add("export to stdout", &d);
    for format in ["md", "junit", "json", "diff", "html"] {
        let file = format!("report.{format}.out");
        let d = env(p.evals(&[
            "report",
            &id,
            "--baseline",
            "main",
            "--format",
            format,
            "-o",
            &file,
        ]))
        .output();
        assert!(d.code == 0 || d.code == 1, "report {format}: {d:?}");
        o.add(&format!("report --format {format}"), &d);
        let d = env(p.evals(&["report", &id, "--format", format])).output();
        o.add(&format!("report --format {format} to stdout"), &d);
    }
    for (format, file) in [("html", "rendered.html"), ("json", "rendered.json")] {
        let d = env(p.evals(&["render", "check.json", "--format", format, "-o", file])).ok();
        o.add(&format!("render {format}"), &d);
    }
    let d = env(p.evals(&["render", "check.json"])).ok();
    o.add("render", &d);
    let d = env(p.evals(&["cassettes", "scan"])).ok();
    o.add("cassettes scan", &d);
    let d = env(p.evals(&["cassettes", "status"])).output();
    o.add("cassettes status", &d);

    // A hand-edited comment: secrets pasted into it never reach GitHub.
    let mut comment = p.read("comment.md");
    comment.push_str(&format!(
        "\npasted: {SUITE_KEY} {GITHUB_TOKEN} {FOREIGN_KEY} {}\n",
        b64(SUITE_KEY)
    ));
    p.write("pasted.md", &comment);
    let d = env(p.evals(&["comment", "pasted.md", "--pr", "7"]))
        .env("GITHUB_REPOSITORY", "acme/app")
        .env("GITHUB_API_URL", &github.uri())
        .ok();
    o.add("comment", &d);
    for r in github.requests() {
        o.streams.push((
            format!("GitHub request {} {}", r.method, r.url.path()),
            String::from_utf8_lossy(&r.body).into_owned(),
        ));
        o.streams
            .push((format!("GitHub request URL {}", r.url), r.url.to_string()));
    }
    o
}

fn github() -> Server {
    let api = Server::start();
    api.mount(
        Mock::given(method("GET"))
            .and(path("/repos/acme/app/issues/7/comments"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([]))),
    );
    api.mount(
        Mock::given(method("POST"))
            .and(path("/repos/acme/app/issues/7/comments"))
            .respond_with(ResponseTemplate::new(201).set_body_json(
                json!({"id": 99, "html_url": "https://github.test/acme/app/pull/7#issuecomment-99"}),
            )),
    );
    api
}

/// Asserts that no stream and no file under the project (but the planted `.env`) holds
/// any planted secret in any form; returns how many `[REDACTED]` the files hold.
fn assert_nothing_leaked(p: &Project, o: &Outputs) -> usize {
    let mut leaks = Vec::new();
    let mut redacted = 0;
    let mut files = 0;
    for file in files_under(p.path()) {
        let rel = file.strip_prefix(p.path()).unwrap().to_path_buf();
        // What the test planted: the `.env`, the config (its adapter `env:`) and the
        // hand-edited comment.
        if ["evals/.env", "evals/.llm-evals.config.yml", "pasted.md"]
            .iter()
            .any(|planted| rel == std::path::Path::new(planted))
        {
            continue;
        }
        files += 1;
        let bytes = std::fs::read(&file).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        redacted += text.matches("[REDACTED]").count();
        for (name, form) in forms() {
            if text.contains(&form) {
                leaks.push(format!("{}: {name}", rel.display()));
            }
        }
    }
    for (what, text) in &o.streams {
        for (name, form) in forms() {
            if text.contains(&form) {
                leaks.push(format!("{what}: {name}"));
            }
        }
    }
    assert!(
        leaks.is_empty(),
        "secrets left the process:\n{}",
        leaks.join("\n")
    );
    // The run wrote what this test means to search.
    for must in [
        ".evals/history.sqlite3",
        "junit.xml",
        "comment.md",
        "diff.txt",
        "report.html",
        "check.json",
        "export.json",
        "compare.json",
        "compare.html",
        "rendered.html",
        "summary.md",
    ] {
        assert!(p.path().join(must).is_file(), "{must} was not written");
    }
    assert!(files > 15, "only {files} files written");
    redacted
}

#[test]
fn no_secret_leaves_through_the_prompt_adapter() {
    let mut upstream = Server::start();
    upstream.answer("/v1/chat/completions", Echo);
    let gh = github();
    let p = project(&upstream.uri(), false);
    let o = run_everything(&p, &gh);
    let redacted = assert_nothing_leaked(&p, &o);
    // The upstream did echo the key: the recording and the results say [REDACTED].
    let cassettes = files_under(&p.path().join("evals/cassettes"));
    assert_eq!(cassettes.len(), 2, "{cassettes:?}");
    let cassette = std::fs::read_to_string(&cassettes[0]).unwrap();
    assert!(cassette.contains("[REDACTED]"), "{cassette}");
    assert!(redacted > 10, "{redacted}");
    upstream.stop();
}

#[test]
fn no_secret_leaves_through_an_exec_worker_that_prints_its_env_and_dotenv() {
    let mut upstream = Server::start();
    upstream.answer("/v1/chat/completions", Echo);
    let gh = github();
    let p = project(&upstream.uri(), true);
    let o = run_everything(&p, &gh);
    let redacted = assert_nothing_leaked(&p, &o);
    // The worker did print its secrets, and the upstream echoed the trimmed one.
    let check: Value = serde_json::from_str(&p.read("check.json")).unwrap();
    let text = check.to_string();
    assert!(
        text.contains("MODEL_NAME=m1"),
        "the worker's dotenv reached the results"
    );
    assert!(text.contains("[REDACTED]"));
    // It printed the secrets it was passed: each reached the results as [REDACTED].
    let first = check["experiments"][0]["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["case"] == "first")
        .expect("case first");
    for name in [
        "GITHUB_TOKEN",
        "MISTRAL_API_KEY",
        "LOCAL_KEY",
        "PARTNER_SECRET",
        "PARTNER_TOKEN",
    ] {
        assert_eq!(
            first["output"]["env"][name], "[REDACTED]",
            "{name} in {}",
            first["output"]["env"]
        );
    }
    // The upstream echoed the partner secret trimmed; that is scrubbed too.
    assert_eq!(
        first["output"]["echoed"]["you_said"], "first [REDACTED]",
        "{}",
        first["output"]["echoed"]
    );
    assert!(redacted > 10, "{redacted}");
    // The worker's stderr was logged, scrubbed.
    let logs: Vec<_> = files_under(p.path())
        .into_iter()
        .filter(|f| f.to_string_lossy().contains("warnings"))
        .collect();
    assert!(!logs.is_empty(), "no worker log written");
    let log = std::fs::read_to_string(&logs[0]).unwrap();
    assert!(log.contains("worker dotenv"), "{log}");
    upstream.stop();
}

#[test]
fn a_key_with_whitespace_is_a_config_error_naming_the_variable() {
    let upstream = Server::start();
    let p = project(&upstream.uri(), false)
        .file("evals/.env", &format!("LOCAL_KEY=\"{SUITE_KEY} \"\n"));
    let d = p.evals(&["record"]).code(2);
    d.stderr_has(
        "LOCAL_KEY (from the env_files of evals/.llm-evals.config.yml) has a space at its end",
    );
    assert!(!d.stderr.contains(SUITE_KEY));
    assert_eq!(upstream.hits(), 0, "no call was made with the broken key");
    let d = project(&upstream.uri(), false)
        .evals(&["record"])
        .env("LOCAL_KEY", &format!("{SUITE_KEY}\n"))
        .code(2);
    d.stderr_has("LOCAL_KEY (from the environment) has a newline at its end");
}

#[test]
fn a_key_pasted_as_an_argument_is_not_echoed_by_the_usage_error() {
    let p = Project::new();
    let d = p
        .evals(&["check", "--tolerance", GITHUB_TOKEN])
        .env("GITHUB_TOKEN", GITHUB_TOKEN)
        .code(2);
    d.stderr_has("invalid value '[REDACTED]' for '--tolerance");
    assert!(!d.stderr.contains(GITHUB_TOKEN), "{}", d.stderr);
}

/// What a worker's own credential for a tool API is, at record time and at check time.
const QUERY_CRED: &str = "worker-query-cred-0123456789";
const QUERY_CRED_ON_CI: &str = "another-cred-on-ci-9876543210";

/// An agent that calls its search API with its own credentials in the query string (as
/// many APIs want them: `api_key=`, `token=`, and `session=`, which the suite names in
/// `cassettes.redact_query`), then asks the model.
const QUERY_AGENT: &str = r#"
import json, os, sys, urllib.request, urllib.parse

cred = os.environ["SEARCH_CRED"]
for line in sys.stdin:
    msg = json.loads(line)
    q = urllib.parse.urlencode({"q": msg["case"]["input"], "api_key": cred, "Token": cred,
                                "session": cred})
    with urllib.request.urlopen(os.environ["EVALS_UPSTREAM_SEARCH_URL"] + "find?" + q) as r:
        hits = json.loads(r.read())["hits"]
    body = json.dumps({"model": "x", "messages": [{"role": "user", "content": "hits %d" % hits}]}).encode()
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", body,
        {"content-type": "application/json", "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
    with urllib.request.urlopen(req) as r:
        reply = json.loads(r.read())["choices"][0]["message"]["content"]
    print(json.dumps({"id": msg["id"], "output": json.loads(reply)}), flush=True)
"#;

#[test]
fn a_credential_in_a_tool_api_query_string_is_stored_redacted_and_replays_by_name() {
    let mut model = Server::start();
    model.mount(
        crate::mock::post("/v1/chat/completions")
            .respond_with(crate::mock::chat(r#"{"answer": "ok"}"#, json!({}))),
    );
    let mut search = Server::start();
    search.mount(
        Mock::given(method("GET"))
            .and(path("/api/find"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"hits": 3}))),
    );
    let p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "suite: agent\nrequest_types: [prompt]\nadapter:\n  kind: exec\n  command: [python3, evals/agent.py]\n  pass_env: [SEARCH_CRED]\n  upstreams:\n    search: {{ base_url: {}/api }}\ncassettes:\n  redact_query: [session]\nscorer:\n  kind: fields\n  schema: {{ answer: string }}\nlocal:\n  base_url: {}/v1\n  api_key_env: LOCAL_KEY\n  models: [m1]\n",
                search.uri(),
                model.uri()
            ),
        )
        .file("evals/agent.py", QUERY_AGENT)
        .file(
            "evals/datasets/d/cases.jsonl",
            "{\"id\": \"shoes\", \"input\": \"shoes\", \"expected\": {\"answer\": \"ok\"}}\n",
        );
    let d = p
        .evals(&["record", "--format", "json", "-o", "rec.json"])
        .env("LOCAL_KEY", "model-key-0123456789abcdef")
        .env("SEARCH_CRED", QUERY_CRED)
        .ok();
    let mut streams = vec![d.stdout, d.stderr];
    // The API got the real credential.
    let url = search.requests()[0].url.to_string();
    assert!(url.contains(&format!("api_key={QUERY_CRED}")), "{url}");
    model.stop();
    search.stop();

    // The cassette keeps the request's other parameters and says [REDACTED] for each
    // credential; `cassettes scan` passes it.
    let cassette = p.read("evals/cassettes/local/m1/default/d/shoes.json");
    assert!(
        cassette
            .contains("/api/find?q=shoes&api_key=[REDACTED]&Token=[REDACTED]&session=[REDACTED]"),
        "{cassette}"
    );
    p.evals(&["cassettes", "scan"])
        .ok()
        .stderr_has("no secrets found");

    // CI has another credential (or none of the real one): the request matches by the
    // parameters' names, and the check replays as recorded.
    let d = p
        .evals(&[
            "check",
            "--json",
            "check.json",
            "--markdown",
            "comment.md",
            "--html",
            "report.html",
            "--junit",
            "junit.xml",
        ])
        .env("SEARCH_CRED", QUERY_CRED_ON_CI)
        .ok();
    streams.extend([d.stdout, d.stderr]);
    let check: Value = serde_json::from_str(&p.read("check.json")).unwrap();
    let case = &check["experiments"][0]["cases"][0];
    assert_eq!(case["error"], Value::Null, "{check}");
    assert_eq!(case["score"], 1.0, "{check}");
    assert_eq!(
        case["trajectory"][0]["query"],
        json!({"q": "shoes", "api_key": "[REDACTED]", "Token": "[REDACTED]", "session": "[REDACTED]"})
    );
    let d = p.evals(&["history", "--json"]).ok();
    streams.push(d.stdout);
    let d = p
        .evals(&["run", "--cassettes", "replay", "--no-autosave"])
        .env("SEARCH_CRED", QUERY_CRED_ON_CI)
        .ok();
    d.stdout_has(
        "GET search /find?Token=[REDACTED]&api_key=[REDACTED]&q=shoes&session=[REDACTED] → 200",
    );
    streams.extend([d.stdout, d.stderr]);

    // Neither credential is in any file (cassettes, history, reports) or any output.
    for cred in [QUERY_CRED, QUERY_CRED_ON_CI] {
        let held: Vec<_> = files_under(p.path())
            .into_iter()
            .filter(|f| String::from_utf8_lossy(&std::fs::read(f).unwrap()).contains(cred))
            .collect();
        assert!(held.is_empty(), "{cred} in {held:?}");
        assert!(!streams.iter().any(|s| s.contains(cred)), "{cred} printed");
    }

    // A cassette written by hand (or by an older evals) with a credential in a URL's
    // query is flagged, by file, line and kind, never with the value.
    p.write(
        "evals/cassettes/local/m1/default/d/old.json",
        "{\n  \"url\": \"https://search.example/api/find?q=1&api_key=abc123plain\"\n}\n{\n  \"url\": \"https://search.example/api/find?session=s3ss10nvalue&q=2\"\n}\n{\"url\": \"https://x.example/find?key=[REDACTED]&q=3\"}\n",
    );
    let d = p.evals(&["cassettes", "scan"]).code(1);
    d.stdout_has(
        "evals/cassettes/local/m1/default/d/old.json:2: credential in a URL query (api_key=…)\n",
    );
    d.stdout_has(
        "evals/cassettes/local/m1/default/d/old.json:5: credential in a URL query (api_key=…)\n",
    );
    d.stdout_lacks(":7:");
    assert!(!d.stdout.contains("abc123plain") && !d.stderr.contains("abc123plain"));
    assert!(!d.stdout.contains("s3ss10nvalue") && !d.stderr.contains("s3ss10nvalue"));
}

/// The reply's answer, for each question: a secret as one of its escaped forms.
struct EscapedEcho(Vec<(&'static str, String)>);

impl Respond for EscapedEcho {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        let asked = body["messages"][0]["content"].as_str().unwrap_or("").trim();
        let answer = self
            .0
            .iter()
            .find(|(q, _)| *q == asked)
            .map_or_else(|| "ok".to_string(), |(_, a)| a.clone());
        crate::mock::chat(
            &json!({ "answer": answer }).to_string(),
            json!({"prompt_tokens": 1, "completion_tokens": 1}),
        )
    }
}

/// `s` as a JSON string's inside (`"` and `\` escaped).
fn json_inner(s: &str) -> String {
    let j = serde_json::to_string(s).unwrap();
    j[1..j.len() - 1].to_string()
}

/// `s` with every UTF-16 unit as `\uXXXX` (`upper`: uppercase hex).
fn u_escaped(s: &str, upper: bool) -> String {
    s.encode_utf16()
        .map(|u| {
            if upper {
                format!("\\u{u:04X}")
            } else {
                format!("\\u{u:04x}")
            }
        })
        .collect()
}

/// `s` as Python's `json.dumps` writes it: JSON-escaped, every non-ASCII unit as `\uXXXX`.
fn ascii_escaped(s: &str, upper: bool) -> String {
    json_inner(s)
        .chars()
        .map(|c| {
            if c.is_ascii() {
                c.to_string()
            } else {
                u_escaped(&c.to_string(), upper)
            }
        })
        .collect()
}

const ESCAPED_KEY: &str = "suite-key-for-escapes-0123456789";
const QUOTED_PASSWORD: &str = "pa\"ss\\word-0123456789";
const CYRILLIC_SECRET: &str = "ключ-секрет-0123456789";

#[test]
fn a_secret_escaped_in_a_reply_leaks_through_no_diagnostic_report_or_row() {
    let mut model = Server::start();
    model.answer("/v1/chat/completions", EscapedEcho(vec![]));
    let p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "suite: escapes\nrequest_types: [prompt]\nadapter:\n  kind: prompt\n  user: \"{{{{ input }}}}\"\n  json: true\nscorer:\n  kind: fields\n  schema: {{ answer: string }}\nlocal:\n  base_url: {}/v1\n  api_key_env: LOCAL_KEY\n  models: [m1]\n",
                model.uri()
            ),
        )
        .file(
            "evals/datasets/d/cases.jsonl",
            "{\"id\": \"a\", \"input\": \"a\", \"expected\": {\"answer\": \"ok\"}}\n{\"id\": \"b\", \"input\": \"b\", \"expected\": {\"answer\": \"ok\"}}\n{\"id\": \"c\", \"input\": \"c\", \"expected\": {\"answer\": \"ok\"}}\n",
        );
    let env = |r: crate::harness::Run| {
        r.env("LOCAL_KEY", ESCAPED_KEY)
            .env("DB_PASSWORD", QUOTED_PASSWORD)
            .env("SERVICE_SECRET", CYRILLIC_SECRET)
    };
    let mut streams = Vec::new();
    // main: the model answers right.
    env(p.evals(&["record"])).ok();
    env(p.evals(&["check", "--branch", "main"])).ok();
    // The branch: the model answers each case with a secret, escaped as real code writes
    // it: fully `\u`-escaped, JSON-escaped, and as Python's json.dumps writes non-ASCII.
    model.reset();
    model.answer(
        "/v1/chat/completions",
        EscapedEcho(vec![
            ("a", u_escaped(ESCAPED_KEY, false)),
            ("b", json_inner(QUOTED_PASSWORD)),
            ("c", ascii_escaped(CYRILLIC_SECRET, false)),
        ]),
    );
    let d = env(p.evals(&["record"])).ok();
    streams.extend([d.stdout, d.stderr]);
    model.stop();
    let d = env(p.evals(&[
        "check",
        "--branch",
        "feature",
        "--baseline",
        "main",
        "--markdown",
        "comment.md",
        "--json",
        "check.json",
        "--html",
        "report.html",
        "--junit",
        "junit.xml",
        "--diff",
        "diff.txt",
    ]))
    .code(1);
    streams.extend([d.stdout, d.stderr]);
    let d = env(p.evals(&["run", "--cassettes", "replay", "--no-autosave"])).output();
    streams.extend([d.stdout, d.stderr]);
    let d = env(p.evals(&["history", "--json"])).ok();
    streams.extend([d.stdout, d.stderr]);
    for format in ["md", "json", "junit", "html", "diff"] {
        let d = env(p.evals(&["report", "--baseline", "main", "--format", format])).output();
        streams.extend([d.stdout, d.stderr]);
    }
    // The run did fail on the three answers (so their diagnostics were written).
    let check: Value = serde_json::from_str(&p.read("check.json")).unwrap();
    let mean = check["experiments"][0]["means"]["field_accuracy"]
        .as_f64()
        .unwrap();
    assert!((mean - 0.1).abs() < 1e-9, "{check}");
    assert!(
        p.read("comment.md").contains("got "),
        "no diagnostics in the comment"
    );

    let mut forms = Vec::new();
    for secret in [ESCAPED_KEY, QUOTED_PASSWORD, CYRILLIC_SECRET] {
        for upper in [false, true] {
            for form in [
                secret.to_string(),
                json_inner(secret),
                u_escaped(secret, upper),
                ascii_escaped(secret, upper),
            ] {
                forms.push(json_inner(&form));
                forms.push(form);
            }
        }
    }
    forms.retain(|f| f != "ok");
    let mut leaks = Vec::new();
    for file in files_under(p.path()) {
        if file.ends_with("evals/.llm-evals.config.yml") {
            continue;
        }
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        for f in &forms {
            if text.contains(f.as_str()) {
                leaks.push(format!("{}: {f}", file.display()));
            }
        }
    }
    for (i, s) in streams.iter().enumerate() {
        for f in &forms {
            if s.contains(f.as_str()) {
                leaks.push(format!("stream {i}: {f}"));
            }
        }
    }
    assert!(
        leaks.is_empty(),
        "secrets left the process:\n{}",
        leaks.join("\n")
    );
}

#[test]
fn a_key_with_an_invisible_or_non_ascii_character_is_a_config_error_naming_the_variable() {
    let upstream = Server::start();
    for (key, what) in [
        (
            "sk-key\u{200b}0123456789abcdef",
            "a zero-width space (U+200B) inside it",
        ),
        (
            "\u{feff}sk-key0123456789abcdef",
            "a byte order mark (U+FEFF) at its start",
        ),
        (
            "sk-keyк0123456789abcdef",
            "a non-ASCII character (U+043A) inside it",
        ),
    ] {
        let d = project(&upstream.uri(), false)
            .evals(&["record"])
            .env("LOCAL_KEY", key)
            .code(2);
        d.stderr_has(&format!("LOCAL_KEY (from the environment) has {what}"));
        assert!(!d.stderr.contains(key), "{}", d.stderr);
        // The same from env_files.
        let d = project(&upstream.uri(), false)
            .file("evals/.env", &format!("LOCAL_KEY={key}\n"))
            .evals(&["record"])
            .code(2);
        d.stderr_has("LOCAL_KEY (from the env_files of evals/.llm-evals.config.yml) has ");
    }
    assert_eq!(upstream.hits(), 0, "no call was made with a broken key");
}

#[test]
fn a_byte_order_mark_at_the_start_of_an_env_file_does_not_hide_its_first_key() {
    let mut upstream = Server::start();
    upstream.answer("/v1/chat/completions", Echo);
    let p = project(&upstream.uri(), false).file(
        "evals/.env",
        &format!("\u{feff}LOCAL_KEY={SUITE_KEY}\nMODEL_NAME=m1\n"),
    );
    p.evals(&["record"]).ok();
    let keys = upstream.headers("authorization");
    assert!(!keys.is_empty());
    assert!(
        keys.iter().all(|k| *k == format!("Bearer {SUITE_KEY}")),
        "{keys:?}"
    );
    upstream.stop();
}

#[test]
fn cassettes_scan_finds_encoded_keys_and_credential_json_fields_without_printing_them() {
    let b64 = base64::engine::general_purpose::STANDARD;
    let ant = "sk-ant-api03-AbCdEf0123456789AbCdEf0123";
    let oai = "sk-proj-AbCdEf0123456789AbCdEf0123456789";
    let full_pct: String = ant.bytes().map(|b| format!("%{b:02X}")).collect();
    let lines = [
        // 1..=5: encoded keys.
        format!(
            "{{\"auth\": \"Basic {}\"}}",
            b64.encode(format!("user:{ant}"))
        ),
        format!("{{\"body\": \"{}\"}}", b64.encode(oai)),
        format!("{{\"url\": \"https://x.example/cb?k={full_pct}\"}}"),
        format!(
            "{{\"url\": \"https://x.example/cb?k={}\"}}",
            oai.replace('-', "%2d")
        ),
        format!(
            "{{\"content\": \"{}\"}}",
            u_escaped(ant, false).replace('\\', "\\\\")
        ),
        // 6..=9: credential fields, any case, nested, in a JSON text inside a string too.
        "{\"config\": {\"db\": {\"Password\": \"hunter2hunter2\"}}}".to_string(),
        "{\"API_KEY\": \"plainvalue-1\"}".to_string(),
        "{\"content\": \"{\\\"access_token\\\": \\\"tok-plain-2\\\"}\"}".to_string(),
        "{\"secret\": \"s3cr3t-plain-3\"}".to_string(),
        // 10..: nothing to find.
        "{\"password\": \"\", \"secret\": \"[REDACTED]\", \"api_key\": null}".to_string(),
        "{\"access_token\": {\"type\": \"string\"}, \"text\": \"sk-learn is a library\"}"
            .to_string(),
        format!(
            "{{\"image\": \"{}\"}}",
            b64.encode("just an ordinary picture of a cat, no key")
        ),
    ];
    let p = Project::new().file("held.json", &(lines.join("\n") + "\n"));
    let d = p.evals(&["cassettes", "scan", "held.json"]).code(1);
    for line in 1..=9 {
        d.stdout_has(&format!("held.json:{line}: "));
    }
    for line in 10..=12 {
        d.stdout_lacks(&format!("held.json:{line}: "));
    }
    d.stdout_has("held.json:1: Anthropic key (sk-ant-…), base64-encoded\n");
    d.stdout_has("held.json:3: Anthropic key (sk-ant-…), percent-encoded\n");
    d.stdout_has("held.json:5: Anthropic key (sk-ant-…), \\u-escaped\n");
    d.stdout_has("held.json:6: credential in a JSON field (\"password\": …)\n");
    for secret in [
        ant,
        oai,
        "hunter2hunter2",
        "plainvalue-1",
        "tok-plain-2",
        "s3cr3t-plain-3",
        "AbCdEf0123456789",
    ] {
        assert!(
            !d.stdout.contains(secret) && !d.stderr.contains(secret),
            "{secret} printed:\n{}{}",
            d.stdout,
            d.stderr
        );
    }
}
