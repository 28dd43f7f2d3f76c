//! LLMEvalForge's datasets run as written: `fixtures/seeds/llmevalforge` is its README's example (the
//! `dataset.jsonl` lines and the `prompt.txt` template, unchanged), answered by the `mock`
//! provider from each case's `mock_response`; `{{question}}` fills from the case's input; a
//! case with no `expect` passes when a reply arrives.

use crate::harness::{Project, files_under};

/// The template example of LLMEvalForge's README, "Prompt templates", as it is written there.
const HELLO: &str = r#"{"id":"hello","input":{"question":"Say hello"}}"#;

/// The prompt that example renders to (the README's "Rendered prompt").
const RENDERED: &str = "You are a concise assistant.\n\nUser question:\nSay hello\n\nAnswer:";

fn add_line(p: &Project, line: &str) {
    let path = "evals/datasets/examples/dataset.jsonl";
    let mut text = p.read(path);
    text.push_str(line);
    text.push('\n');
    p.write(path, &text);
}

fn cases_of(p: &Project, file: &str) -> Vec<serde_json::Value> {
    let run: serde_json::Value = serde_json::from_str(&p.read(file)).unwrap();
    run["experiments"][0]["cases"].as_array().unwrap().clone()
}

#[test]
fn the_forge_readme_example_runs_offline_with_the_mock_provider() {
    let p = Project::forge();
    // llm-eval-forge run --dataset dataset.jsonl --template prompt.txt --provider mock
    let d = p.evals(&["run", "--no-autosave"]).ok();
    d.stdout_has("mock/mock · examples");
    for case in ["greeting", "json-output"] {
        let row = d.row(case);
        assert_eq!(row[1], "100.0%", "{case}: {row:?}");
        assert_eq!(row.last().unwrap(), "pass", "{case}: {row:?}");
    }
    d.stderr_lacks("API_KEY");
    // No key, nothing recorded: like fake, the mock answers in the process.
    p.evals(&["record", "-m", "mock/mock", "--no-autosave"])
        .ok();
    assert_eq!(
        files_under(&p.path().join("evals/cassettes")),
        Vec::<std::path::PathBuf>::new()
    );
    // And CI's strict replay answers it the same, with no cassette.
    p.evals(&["check", "--no-autosave"])
        .ok()
        .stderr_has("evals check passed");
}

#[test]
fn mock_mock_answers_a_suite_whose_lineup_has_no_mock_section() {
    let p = Project::forge();
    let config = p.read("evals/.llm-evals.config.yml");
    p.write(
        "evals/.llm-evals.config.yml",
        &config.replace("mock:\n  models: [mock]", "fake:\n  models: [echo]"),
    );
    let d = p.evals(&["run", "-m", "mock/mock", "--no-autosave"]).ok();
    assert_eq!(d.row("greeting")[1], "100.0%");
    d.stdout_lacks("fake/echo");
    // The mock has one model.
    p.evals(&["run", "-m", "mock/gpt", "--no-autosave"])
        .code(2)
        .stderr_has("mock/gpt: the mock provider has the model mock; there is no 'gpt'");
}

#[test]
fn a_json_mock_response_is_answered_as_its_json_text() {
    let p = Project::forge();
    add_line(
        &p,
        r#"{"id":"object","input":{"question":"Status?"},"mock_response":{"status":"ok","count":2},"expect":{"json_valid":true,"required_json_keys":["status","count"]}}"#,
    );
    p.evals(&[
        "run",
        "-c",
        "object",
        "--no-autosave",
        "--format",
        "json",
        "-o",
        "out.json",
    ])
    .ok();
    let cases = cases_of(&p, "out.json");
    assert_eq!(cases[0]["case"], "object");
    assert_eq!(cases[0]["score"], 1.0);
    let text = cases[0]["output"].as_str().expect("the reply is text");
    let parsed: serde_json::Value = serde_json::from_str(text).unwrap();
    assert_eq!(parsed, serde_json::json!({"status": "ok", "count": 2}));
}

#[test]
fn a_case_without_mock_response_is_an_error_naming_the_fix() {
    let p = Project::forge();
    add_line(&p, HELLO);
    let d = p.evals(&["run", "--no-autosave"]).code(1);
    assert_eq!(d.row("hello").last().unwrap(), "error");
    d.stdout_has(
        "hello error: mock/mock: case 'hello' has no mock_response to answer with; add \"mock_response\": \"...\" to it (evals/datasets/examples/dataset.jsonl:3), or run it with another model (-m)",
    );
    // The other cases are answered and scored as ever.
    assert_eq!(d.row("greeting").last().unwrap(), "pass");
    d.stderr_has("1 case errored");
}

#[test]
fn the_readme_template_fills_question_from_the_input() {
    // The README's "Prompt templates" example, answered by fake/echo, which says the
    // prompt back: the reply is the rendered prompt.
    let p = Project::forge();
    add_line(&p, HELLO);
    p.evals(&[
        "run",
        "-m",
        "fake/echo",
        "-c",
        "hello",
        "--no-autosave",
        "--format",
        "json",
        "-o",
        "out.json",
    ])
    .ok();
    let cases = cases_of(&p, "out.json");
    assert_eq!(cases[0]["error"], serde_json::Value::Null, "{:?}", cases[0]);
    assert_eq!(cases[0]["output"], RENDERED);
    // No `expect`: a reply that arrives scores 1.0, as in LLMEvalForge.
    assert_eq!(cases[0]["score"], 1.0);
    assert_eq!(cases[0]["passed"], true);
}

#[test]
fn question_and_vars_question_fill_alike_and_a_missing_variable_is_named() {
    let p = Project::forge();
    add_line(&p, HELLO);
    p.write("evals/prompt.txt", "{{question}} | {{ vars.question }}\n");
    p.evals(&[
        "run",
        "-m",
        "fake/echo",
        "-c",
        "hello",
        "--no-autosave",
        "--format",
        "json",
        "-o",
        "out.json",
    ])
    .ok();
    assert_eq!(
        cases_of(&p, "out.json")[0]["output"],
        "Say hello | Say hello"
    );

    // A variable the case does not have fails the case before any call, naming it.
    p.write("evals/prompt.txt", "Topic: {{topic}}\n");
    let d = p
        .evals(&["run", "-m", "fake/echo", "-c", "hello", "--no-autosave"])
        .code(1);
    d.stdout_has(
        "hello error: template 'user' uses `{{ topic }}` but this case has no such value; add it to the case's input or fix the template",
    );
}

#[test]
fn a_case_with_no_expect_passes_on_a_reply_and_an_unusable_reply_scores_0() {
    let p = Project::forge();
    add_line(
        &p,
        r#"{"id":"hello","input":{"question":"Say hello"},"mock_response":"Hi there"}"#,
    );
    add_line(
        &p,
        r#"{"id":"blank","input":{"question":"Say nothing"},"mock_response":""}"#,
    );
    p.evals(&["verify"])
        .ok()
        .stderr_has("verified 4 cases: no problems");
    assert_eq!(
        p.evals(&["cases"]).ok().cell("hello", "expects"),
        "none: a reply passes"
    );
    // `blank` fails: the run exits 1.
    let d = p.evals(&["run", "--no-autosave"]).code(1);
    let hello = d.row("hello");
    assert_eq!(
        (hello[1].as_str(), hello.last().unwrap().as_str()),
        ("100.0%", "pass")
    );
    // An empty reply is unusable: the model's failure, scored 0 (not an error).
    let blank = d.row("blank");
    assert_eq!(
        (blank[1].as_str(), blank.last().unwrap().as_str()),
        ("0.0%", "fail")
    );
    d.stderr_lacks("errored");
}
