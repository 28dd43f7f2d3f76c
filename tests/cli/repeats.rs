//! `--repeat K` end to end (issue 16): each try is its own recorded interaction, replayed
//! offline in order; a case passing 2 of 3 tries is flaky; asking more tries than were
//! recorded is a miss naming the repeat.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::{Value, json};
use wiremock::{Request, Respond, ResponseTemplate};

use crate::harness::{MINI_SCHEMA, Project, files_under};
use crate::mock::{Server, chat};

/// Answers `case N` right, except the third call for case 0, which it gets wrong: case 0
/// passes 2 of 3 tries.
#[derive(Default)]
struct ThirdTryWrong {
    calls: Mutex<HashMap<String, usize>>,
}

impl Respond for ThirdTryWrong {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&req.body).expect("json body");
        let user = body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_string();
        let n = {
            let mut calls = self.calls.lock().unwrap();
            let c = calls.entry(user.clone()).or_default();
            *c += 1;
            *c
        };
        let id = user.trim_start_matches("case ");
        let answer = if id == "0" && n == 3 {
            "wrong".to_string()
        } else {
            format!("a{id}")
        };
        chat(
            &json!({"answer": answer}).to_string(),
            json!({"prompt_tokens": 10, "completion_tokens": 3}),
        )
    }
}

fn project(uri: &str) -> Project {
    let cases: String = (0..2)
        .map(|i| format!("{{\"id\": \"c{i}\", \"input\": \"case {i}\", \"expected\": {{\"answer\": \"a{i}\"}}}}\n"))
        .collect();
    Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "suite: tries\nrequest_types: [prompt]\nadapter:\n  kind: prompt\n  user: \"{{{{ input }}}}\"\n  json: true\n{MINI_SCHEMA}minimum_scores: {{ field_accuracy: 1.0 }}\ndefaults: {{ max_tokens: 64 }}\nlocal:\n  base_url: {uri}/v1\n  models: [m1]\n"
            ),
        )
        .file("evals/datasets/d/cases.jsonl", &cases)
}

fn json_file(p: &Project, rel: &str) -> Value {
    serde_json::from_str(&p.read(rel)).expect("json")
}

/// The snapshot with the run's id, times and mode blanked.
fn normalized(mut v: Value) -> Value {
    for k in ["id", "started_at", "finished_at", "mode", "argv", "command"] {
        v["run"][k] = Value::Null;
    }
    v["run"]["settings"]["cassettes"] = Value::Null;
    v["comparison"] = Value::Null;
    v
}

#[test]
fn record_repeat_3_writes_three_interactions_per_case_and_check_repeat_3_replays_them() {
    let mut s = Server::start();
    s.answer("/v1/chat/completions", ThirdTryWrong::default());
    let p = project(&s.uri());
    p.evals(&[
        "record",
        "--repeat",
        "3",
        "-p",
        "1",
        "--no-autosave",
        "--format",
        "json",
        "-o",
        "rec.json",
    ])
    .code(0);
    assert_eq!(s.requests().len(), 6, "two cases, three tries each");
    s.stop();
    let cassettes = files_under(&p.path().join("evals/cassettes"));
    assert_eq!(cassettes.len(), 2, "{cassettes:?}");
    for c in &cassettes {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(c).unwrap()).unwrap();
        assert_eq!(
            v["interactions"].as_array().unwrap().len(),
            3,
            "{}",
            c.display()
        );
    }
    let rec = json_file(&p, "rec.json");
    let exp = &rec["experiments"][0];
    assert_eq!(exp["repeat"]["k"], 3);
    assert_eq!(exp["repeat"]["flaky"], 1);
    // pass^3: c1 passed every try (1), c0 did not (0).
    assert_eq!(exp["repeat"]["pass_hat_k"], 0.5);
    assert_eq!(exp["repeat"]["pass_at_k"], 1.0);
    let c0 = &exp["cases"][0];
    assert_eq!(c0["case"], "c0");
    let passed: Vec<Value> = c0["repeats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["passed"].clone())
        .collect();
    assert_eq!(passed, [json!(true), json!(true), json!(false)]);

    // Offline, the three tries replay in order, bit for bit.
    p.evals(&[
        "check",
        "--repeat",
        "3",
        "-p",
        "1",
        "--missing-baseline",
        "pass",
        "--no-autosave",
        "--json",
        "check.json",
    ])
    .code(0);
    assert_eq!(
        normalized(json_file(&p, "check.json")),
        normalized(rec.clone())
    );

    // A fourth try was never recorded: the case errors, naming the repeat.
    p.evals(&[
        "run",
        "--repeat",
        "4",
        "--cassettes",
        "replay",
        "--no-autosave",
    ])
    .code(1)
    .stdout_has("repeat 4 of 4: no recording matches this request");
}

#[test]
fn repeat_0_is_a_usage_error_and_defaults_repeat_0_a_config_error() {
    let p = project("http://127.0.0.1:9");
    p.evals(&["run", "--repeat", "0", "--cassettes", "replay"])
        .code(2)
        .stderr_has("--repeat 0");
    let config = p.read("evals/.llm-evals.config.yml");
    p.write(
        "evals/.llm-evals.config.yml",
        &config.replace("max_tokens: 64 }", "max_tokens: 64, repeat: 0 }"),
    );
    p.evals(&["run", "--cassettes", "replay"])
        .code(2)
        .stderr_has("defaults.repeat is 0");
}

#[test]
fn evals_flaky_lists_the_cases_whose_verdict_varied_across_mains_last_runs() {
    let s = Server::start();
    s.answer("/v1/chat/completions", ThirdTryWrong::default());
    let p = project(&s.uri());
    // c0 is answered right twice, then wrong: P, P, F on main; c1 passes every time.
    for code in [0, 0, 1] {
        p.evals(&[
            "run",
            "--cassettes",
            "live",
            "--branch",
            "main",
            "--no-autosave",
        ])
        .code(code);
    }
    let listed = p.evals(&["flaky"]).code(0);
    listed
        .stdout_has("c0")
        .stdout_has("2 of 3")
        .stdout_has("PPF");
    listed.stdout_lacks("c1");
    listed.stderr_has("1 case varied over the last 10 runs of main");
    let json: Value =
        serde_json::from_str(&p.evals(&["flaky", "--json", "--last", "2"]).code(0).stdout)
            .expect("json");
    assert_eq!(json[0]["case"], "c0");
    assert_eq!(json[0]["verdicts"], json!(["pass", "fail"]));
    p.evals(&["flaky", "--branch", "feature"])
        .code(0)
        .stderr_has("no case's verdict varied over the last 10 runs of feature");
}
