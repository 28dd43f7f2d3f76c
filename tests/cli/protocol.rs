//! The exec worker protocol against chatty libraries: banners a library prints on stdout
//! (litellm's "Give Feedback / Get Help", "Provider List") are stray output, logged with
//! the case, never the answer; a worker can post its answer to `EVALS_ANSWER_URL` instead
//! of stdout; and a cassette miss behind a worker that then crashes is reported as the
//! miss, with its diff, not as the crash.

use serde_json::{Value, json};

use crate::harness::Project;
use crate::mock::{Server, chat, post};

/// A suite of `cases` (ids; each input is its id) whose exec adapter is `command` (a YAML
/// list) running `file` (`evals/w.py`, `evals/w.js`) = `script`, with `extra` added to the
/// config (after the adapter's mapping: `  env: {...}` lines, then top-level keys).
pub(crate) fn suite(
    command: &str,
    file: &str,
    script: &str,
    extra: &str,
    cases: &[&str],
) -> Project {
    let lines: String = cases
        .iter()
        .map(|c| {
            format!("{{\"id\": \"{c}\", \"input\": \"{c}\", \"expect\": {{\"min_chars\": 1}}}}\n")
        })
        .collect();
    Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "request_types: [prompt]\nadapter:\n  kind: exec\n  command: {command}\n{extra}scorer: {{ kind: assertions }}\n"
            ),
        )
        .file(file, script)
        .file("evals/datasets/d/cases.jsonl", &lines)
}

/// The run's cases from its JSON snapshot `out.json`, by id.
fn cases(p: &Project) -> Vec<Value> {
    let out: Value = serde_json::from_str(&p.read("out.json")).unwrap();
    out["experiments"][0]["cases"].as_array().unwrap().clone()
}

fn case(cases: &[Value], id: &str) -> Value {
    cases.iter().find(|c| c["case"] == id).unwrap().clone()
}

/// `evals run -p 1` with the JSON snapshot in `out.json`, passing.
fn run_json(p: &Project) {
    p.evals(&[
        "run",
        "--no-autosave",
        "-p",
        "1",
        "--format",
        "json",
        "-o",
        "out.json",
    ])
    .ok();
}

const BANNER: &str = "Give Feedback / Get Help: https://github.com/BerriAI/litellm/issues/new";
const PROVIDERS: &str = "Provider List: https://docs.litellm.ai/docs/providers";

#[test]
fn a_banner_on_stdout_before_the_answer_line_is_stray_output_logged_with_the_case() {
    // The old protocol: the answer is the stdout line that is a JSON object with the case's
    // id; a banner at import, a blank line, another per call and a JSON log line are not.
    let p = suite(
        "[python3, evals/w.py]",
        "evals/w.py",
        &format!(
            "import json, sys\nprint({BANNER:?}, flush=True)\nprint(flush=True)\nfor line in sys.stdin:\n    m = json.loads(line)\n    print({PROVIDERS:?}, flush=True)\n    print(json.dumps({{'level': 'info', 'id': 'not-a-case'}}), flush=True)\n    print(json.dumps({{'id': m['id'], 'output': 'said ' + m['case']['input']}}), flush=True)\n"
        ),
        "fake: { models: [echo] }\n",
        &["a", "b"],
    );
    run_json(&p);
    let cases = cases(&p);
    let (name, log) = crate::exec::warnings_log(&p);
    let (a, b) = (case(&cases, "a"), case(&cases, "b"));
    assert_eq!(
        (&a["error"], &a["output"]),
        (&Value::Null, &json!("said a"))
    );
    assert_eq!(
        (&b["error"], &b["output"]),
        (&Value::Null, &json!("said b"))
    );
    assert_eq!(
        a["warnings"],
        json!([format!(
            "printed 4 lines on its stdout that are not its answer (the first: {BANNER:?}): written to {name}"
        )])
    );
    assert_eq!(
        b["warnings"],
        json!([format!(
            "printed 2 lines on its stdout that are not its answer (the first: {PROVIDERS:?}): written to {name}"
        )])
    );
    for line in [
        format!("stdout, not the answer (fake/echo d/a): {BANNER}\n"),
        "stdout, not the answer (fake/echo d/a): \n".to_string(),
        format!("stdout, not the answer (fake/echo d/b): {PROVIDERS}\n"),
        "stdout, not the answer (fake/echo d/b): {\"level\": \"info\", \"id\": \"not-a-case\"}\n"
            .to_string(),
    ] {
        assert!(log.contains(&line), "{name} lacks {line:?}:\n{log}");
    }
}

#[test]
fn an_answer_posted_to_evals_answer_url_wins_and_stdout_is_never_taken_for_it() {
    // Case `a` prints a decoy answer (its own id) after posting; every later case before
    // posting: once a worker has posted, no stdout line is its answer.
    let p = suite(
        "[python3, evals/w.py]",
        "evals/w.py",
        &format!(
            "import json, os, sys, urllib.request\nprint({BANNER:?}, flush=True)\nfirst = True\nfor line in sys.stdin:\n    m = json.loads(line)\n    decoy = json.dumps({{'id': m['id'], 'output': 'stdout is not the answer'}})\n    if not first:\n        print(decoy, flush=True)\n    urllib.request.urlopen(os.environ['EVALS_ANSWER_URL'], json.dumps({{'id': m['id'], 'output': 'said ' + m['case']['input']}}).encode())\n    if first:\n        print(decoy, flush=True)\n    first = False\n"
        ),
        "fake: { models: [echo] }\n",
        &["a", "b", "c"],
    );
    run_json(&p);
    let cases = cases(&p);
    for id in ["a", "b", "c"] {
        let c = case(&cases, id);
        assert_eq!(c["error"], Value::Null, "{c}");
        assert_eq!(c["output"], format!("said {id}"), "{c}");
    }
    let (name, log) = crate::exec::warnings_log(&p);
    assert_eq!(
        log.matches("stdout, not the answer (fake/echo d/").count(),
        4,
        "the banner and three decoys:\n{log}"
    );
    assert!(
        log.contains(&format!("(fake/echo d/a): {BANNER}\n")),
        "{name}:\n{log}"
    );
}

#[test]
fn a_node_worker_posts_its_answer_with_fetch_past_a_chatty_stdout() {
    let p = suite(
        "[node, evals/w.js]",
        "evals/w.js",
        &format!(
            "const readline = require('readline');\nconsole.log({BANNER:?});\n(async () => {{\n  for await (const line of readline.createInterface({{ input: process.stdin }})) {{\n    const m = JSON.parse(line);\n    console.log({PROVIDERS:?});\n    await fetch(process.env.EVALS_ANSWER_URL, {{ method: 'POST', body: JSON.stringify({{ id: m.id, output: 'said ' + m.case.input }}) }});\n    console.log(JSON.stringify({{ id: m.id, output: 'stdout is not the answer' }}));\n  }}\n}})();\n"
        ),
        "fake: { models: [echo] }\n",
        &["a", "b"],
    );
    run_json(&p);
    let cases = cases(&p);
    for id in ["a", "b"] {
        let c = case(&cases, id);
        assert_eq!(
            (&c["error"], &c["output"]),
            (&Value::Null, &json!(format!("said {id}"))),
            "{c}"
        );
    }
    let (_, log) = crate::exec::warnings_log(&p);
    assert!(
        log.contains(&format!("(fake/echo d/a): {BANNER}\n")),
        "{log}"
    );
}

/// A worker on the real openai SDK, chatty as litellm: a banner at import, another after
/// each call. `PROMPT` (adapter.env) starts what it asks; `ANSWER=post` posts its answer
/// to `EVALS_ANSWER_URL`, else it prints it. A failed call raises (a traceback on stderr,
/// exit 1), as most agent code does.
const SDK_WORKER: &str = r#"
import json, os, sys, urllib.request
print("Give Feedback / Get Help: https://github.com/BerriAI/litellm/issues/new", flush=True)
from openai import OpenAI
client = OpenAI()
for line in sys.stdin:
    m = json.loads(line)
    r = client.chat.completions.create(model="any", messages=[{"role": "user", "content": os.environ["PROMPT"] + " " + m["case"]["input"]}])
    print("Provider List: https://docs.litellm.ai/docs/providers", flush=True)
    out = json.dumps({"id": m["id"], "output": r.choices[0].message.content})
    if os.environ.get("ANSWER") == "post":
        urllib.request.urlopen(os.environ["EVALS_ANSWER_URL"], out.encode())
    else:
        print(out, flush=True)
"#;

#[test]
fn a_banner_plus_a_cassette_miss_reports_the_miss_with_its_diff_not_the_workers_crash() {
    let server = Server::start();
    server.mount(post("/v1/chat/completions").respond_with(chat(
        "fine",
        json!({"prompt_tokens": 5, "completion_tokens": 1}),
    )));
    let python = crate::sdk::python();
    let command = format!("[{}, evals/w.py]", python.display());
    let config = |prompt: &str, answer: &str| {
        format!(
            "  env: {{ PROMPT: {prompt}, ANSWER: {answer} }}\nlocal:\n  base_url: {}/v1\n  api_key_env: LOCAL_KEY\n  models: [m1]\n",
            server.uri()
        )
    };
    let p = suite(
        &command,
        "evals/w.py",
        SDK_WORKER,
        &config("one", "stdout"),
        &["a"],
    );
    let run = |mode: &str| {
        p.evals(&[mode, "--no-autosave", "--format", "json", "-o", "out.json"])
            .env("LOCAL_KEY", "local-secret-key-123456")
    };
    // Recorded past the banners, on stdout; then replayed with the answer posted.
    run("record").ok();
    assert_eq!(case(&cases(&p), "a")["output"], "fine");
    let write = |prompt: &str, answer: &str| {
        let file = "evals/.llm-evals.config.yml";
        let text = p.read(file);
        let (head, _) = text.split_once("  env:").unwrap();
        p.write(
            file,
            &format!(
                "{head}{}scorer: {{ kind: assertions }}\n",
                config(prompt, answer)
            ),
        );
    };
    write("one", "post");
    let replayed = |p: &Project| {
        p.evals(&[
            "run",
            "--cassettes",
            "replay",
            "--no-autosave",
            "--format",
            "json",
            "-o",
            "out.json",
        ])
    };
    replayed(&p).ok();
    assert_eq!(case(&cases(&p), "a")["output"], "fine");
    // A changed prompt misses; the SDK raises and the worker exits: the case's error is
    // the miss with its diff, either way the worker answers.
    for answer in ["stdout", "post"] {
        write("two", answer);
        replayed(&p).code(1);
        let a = case(&cases(&p), "a");
        assert_eq!(a["error_kind"], "miss", "{answer}: {a}");
        let error = a["error"].as_str().unwrap();
        assert!(
            error.starts_with("no recording matches this request (")
                && error.contains("messages[0].content: \"one a\" → \"two a\"")
                && !error.contains("adapter"),
            "{answer}: {error}"
        );
    }
}
