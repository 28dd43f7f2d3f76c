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
