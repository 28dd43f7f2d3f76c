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
    listed.stderr_has("1 case varied over the last 3 runs of main");
    let json: Value =
        serde_json::from_str(&p.evals(&["flaky", "--json", "--last", "2"]).code(0).stdout)
            .expect("json");
    assert_eq!(json[0]["case"], "c0");
    assert_eq!(json[0]["verdicts"], json!(["pass", "fail"]));
    p.evals(&["flaky", "--branch", "feature"])
        .code(0)
        .stderr_has("no run of feature in ")
        .stderr_has("`evals check --branch feature` stores one");
    // c1 passed in each of the 3 runs: read, and nothing varied.
    p.evals(&["flaky", "--last", "1"])
        .code(0)
        .stderr_has("no case's verdict varied over the last 1 run of main");
}

/// Answers `case N` right, except the cases `wrong` says (by N and the try, counted per
/// case from 1), which it answers wrong.
struct Wrong(
    Box<dyn Fn(u64, usize) -> bool + Send + Sync>,
    Mutex<HashMap<String, usize>>,
);

impl Respond for Wrong {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&req.body).expect("json body");
        let user = body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_string();
        let n = {
            let mut calls = self.1.lock().unwrap();
            let c = calls.entry(user.clone()).or_default();
            *c += 1;
            *c
        };
        let id: u64 = user.trim_start_matches("case ").parse().unwrap();
        let answer = if (self.0)(id, n) {
            "wrong".into()
        } else {
            format!("a{id}")
        };
        chat(
            &json!({"answer": answer}).to_string(),
            json!({"prompt_tokens": 10, "completion_tokens": 3}),
        )
    }
}

fn forty(uri: &str) -> Project {
    let cases: String = (0..40)
        .map(|i| format!("{{\"id\": \"c{i}\", \"input\": \"case {i}\", \"expected\": {{\"answer\": \"a{i}\"}}}}\n"))
        .collect();
    Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "suite: tries\nrequest_types: [prompt]\nadapter:\n  kind: prompt\n  user: \"{{{{ input }}}}\"\n  json: true\n{MINI_SCHEMA}defaults: {{ max_tokens: 64, repeat: 3 }}\nlocal:\n  base_url: {uri}/v1\n  models: [m1]\n"
            ),
        )
        .file("evals/datasets/d/cases.jsonl", &cases)
}

/// Records the suite with the server answering as `wrong` says, then checks it offline
/// on `branch` against main.
fn recorded_check(
    p: &Project,
    code: i32,
    wrong: impl Fn(u64, usize) -> bool + Send + Sync + 'static,
    extra: &[&str],
) -> crate::harness::Done {
    let mut s = Server::start();
    s.answer(
        "/v1/chat/completions",
        Wrong(Box::new(wrong), Mutex::default()),
    );
    let config = p.read("evals/.llm-evals.config.yml");
    let at = config.find("base_url: ").unwrap();
    let end = config[at..].find('\n').unwrap() + at;
    p.write(
        "evals/.llm-evals.config.yml",
        &format!(
            "{}base_url: {}/v1{}",
            &config[..at],
            s.uri(),
            &config[end..]
        ),
    );
    p.evals(&["record", "--no-autosave", "-p", "8"]).code(0);
    s.stop();
    let mut argv = vec!["check", "--baseline", "main", "--no-autosave"];
    argv.extend(extra);
    p.evals(&argv).code(code)
}

#[test]
fn check_with_repeats_gates_a_consistent_drop_and_calls_one_noisy_case_inconclusive() {
    let p = forty("http://127.0.0.1:9");
    // main: every try of every case right (`defaults.repeat: 3`).
    recorded_check(&p, 0, |_, _| false, &["--branch", "main"]).stderr_has("first baseline");
    // One case of 40 wrong on every try: its mean falls 0.9, the experiment's 2.25 points,
    // past the 2-point tolerance, but one case is no evidence: inconclusive, not gated.
    let noisy = recorded_check(&p, 0, |id, _| id == 7, &["--branch", "noisy"]);
    noisy
        .stderr_has("evals check passed, 1 inconclusive in tries (main → noisy)")
        .stderr_has("local/m1 [max 64] · d: inconclusive: mean score fell 2.2 points (100.0% → 97.8%), past the tolerance but not significant (p = 0.500, alpha 0.05); more tries would not decide it (the cases differ, not their tries)");
    // --inconclusive fail gates it.
    let strict = p
        .evals(&[
            "check",
            "--baseline",
            "main",
            "--branch",
            "noisy",
            "--no-autosave",
            "--inconclusive",
            "fail",
        ])
        .code(1);
    strict.stderr_has("evals check: 1 inconclusive in tries (main → noisy)");
    // Every case wrong on its third try: a consistent fall of 30 points, significant.
    let consistent = recorded_check(
        &p,
        1,
        |_, n| n == 3,
        &["--branch", "consistent", "--markdown", "pr.md"],
    );
    consistent.stderr_has("evals check: 1 regression in tries (main → consistent)");
    let md = p.read("pr.md");
    assert!(md.contains("| ± | Δ points | p | pass^k | flaky |"), "{md}");
    // No thresholds: every try passes them, pass^k stays 100%.
    assert!(
        md.contains("| ±0.0 | -30.0 | < 0.001 | 100.0% | 0 |"),
        "{md}"
    );
}

#[test]
fn a_dry_run_counts_every_try() {
    let p = project("http://127.0.0.1:9");
    p.evals(&["run", "-n", "--repeat", "3"])
        .code(0)
        .stdout_has("1 contender × 1 dataset = 1 experiment, 6 calls, 3 tries per case (");
}
