//! One test per row of the book's "Exit codes" (`docs/src/exit-codes.md`, the table of
//! `src/cli/exit.rs`), each bringing its condition about through the binary: 0 passed; 1 a
//! regression, a failed threshold, an errored case, an aborted run, a `verify` problem; 2 an
//! unknown key, a missing `scorer.schema` file, a missing prompt template, no usable
//! baseline, a bad flag; 130 interrupted.

use std::time::{Duration, Instant};

use serde_json::json;
use wiremock::ResponseTemplate;

use crate::gate::Gate;
use crate::harness::{MINI_CASES, MINI_SCHEMA, Project, STORED, TOY_FOUND, mini_config};
use crate::mock::{Server, post};

const CONFIG: &str = "evals/.llm-evals.config.yml";

/// The small echo suite of the harness, with `extra` added to its config.
fn mini(extra: &str) -> Project {
    crate::harness::mini_with("codes", extra)
}

#[test]
fn exit_0_when_the_run_passes() {
    mini("")
        .evals(&["run", "--no-autosave"])
        .exact()
        .code(0)
        .redact_run_ids()
        .stdout_has("\ndataset d\n")
        .stderr_is(&format!(
            "suite: codes (evals/.llm-evals.config.yml)\n{STORED}"
        ));
}

#[test]
fn exit_1_on_a_regression() {
    let g = Gate::new();
    g.on_main();
    g.feature(1); // `slips` falls 18 points and stays above its threshold
    g.evals(&["check", "--baseline", "main"])
        .code(1)
        .stderr_has("1 regression in gate (main → feature)");
}

#[test]
fn exit_1_on_a_failed_threshold() {
    mini("minimum_scores: { field_accuracy: 0.8 }\n")
        .file(
            "evals/datasets/d/cases.jsonl",
            r#"{"id": "wrong", "input": "say {\"answer\": \"y\"}", "expected": {"answer": "x"}}"#,
        )
        .evals(&["run", "--no-autosave"])
        .exact()
        .code(1)
        .redact_run_ids()
        .stdout_has("  wrong below threshold: field_accuracy 0.1 < 0.8\n")
        .stderr_is(&format!(
            "suite: codes (evals/.llm-evals.config.yml)\n{STORED}error: thresholds failed:\n  fake/echo · d · wrong: fails its thresholds (field_accuracy 0.1 < 0.8)\n"
        ));
}

#[test]
fn exit_1_when_a_case_errors() {
    let p = Project::forge();
    // mock/mock has nothing to answer a case without mock_response with.
    let path = "evals/datasets/examples/dataset.jsonl";
    p.write(
        path,
        &format!(
            "{}{}\n",
            p.read(path),
            r#"{"id":"hello","input":{"question":"Say hello"}}"#
        ),
    );
    p.evals(&["run", "--no-autosave"])
        .exact()
        .code(1)
        .redact_run_ids()
        .stdout_has("  hello error: mock/mock: case 'hello' has no mock_response to answer with; add \"mock_response\": \"...\" to it (evals/datasets/examples/dataset.jsonl:3), or run it with another model (-m)\n")
        .stderr_is(&format!(
            "suite: forge (evals/.llm-evals.config.yml)\n{STORED}warning: 1 case errored (no score; see the errors column)\n"
        ));
}

#[test]
fn exit_1_when_errors_abort_after_aborts_the_run() {
    let s = Server::start();
    s.mount(post("/v1/chat/completions").respond_with(
        ResponseTemplate::new(400).set_body_json(json!({"error": {"message": "bad model"}})),
    ));
    let cases: String = (0..10)
        .map(|i| format!("{{\"id\": \"c{i}\", \"input\": \"case {i}\"}}\n"))
        .collect();
    let p = Project::new()
        .file(
            CONFIG,
            &format!(
                "request_types: [prompt]\nscorer: {{ kind: assertions }}\nerrors: {{ abort_after: {{ total: 3, percent: 50 }} }}\nlocal:\n  base_url: {}/v1\n  models: [m1]\n",
                s.uri()
            ),
        )
        .file("evals/datasets/d/cases.jsonl", &cases);
    p.evals(&["run", "--cassettes", "live", "--no-autosave", "-p", "1"])
        .exact()
        .code(1)
        .redact_run_ids()
        .stdout_has("  c2 error: local/m1: HTTP 400: bad model\n")
        .stderr_is(&format!(
            "{}error: errors.abort_after: 3 of 3 finished calls failed (100%); stopped starting calls\n3 live calls; nothing recorded (--cassettes live)\n{STORED}warning: 3 cases errored (no score; see the errors column)\nerror: evals run: stopped early (aborted): 7 of 10 cases did not run\n",
            p.found()
        ));
    assert_eq!(s.hits(), 3, "the run stopped at the third failure");
}

#[test]
fn exit_1_when_verify_finds_a_problem() {
    Project::toy()
        .file("evals/datasets/animals/cases/dog/input.txt", "A dog.")
        .file(
            "evals/datasets/animals/cases/dog/expected.json",
            r#"{"kind": "plant", "name": "dog", "legs": 4, "warm": true}"#,
        )
        .evals(&["verify"])
        .exact()
        .code(1)
        .stdout_is("evals/datasets/animals/cases/dog/expected.json: kind: \"plant\" is not one of animal, color\n")
        .stderr_is(&format!("{TOY_FOUND}1 problem in 9 cases\n"));
}

#[test]
fn exit_2_on_an_unknown_key() {
    mini("defaults: { temprature: 0.1 }\n")
        .evals(&["run", "--no-autosave"])
        .exact()
        .code(2)
        .stderr_is("error: evals/.llm-evals.config.yml:10:13: unknown key 'temprature' in defaults (did you mean 'temperature'?)\n");
}

#[test]
fn exit_2_when_the_scorer_schema_file_is_missing() {
    let config = mini_config("codes").replace(
        MINI_SCHEMA,
        "scorer: { kind: fields, schema: schema.json }\n",
    );
    let d = Project::new()
        .file(CONFIG, &config)
        .file("evals/datasets/d/cases.jsonl", MINI_CASES)
        .evals(&["run", "--no-autosave"])
        .code(2);
    assert_eq!(
        d.stderr,
        "error: evals/schema.json: no such file (scorer.schema in evals/.llm-evals.config.yml names it): create it, or point scorer.schema at the file\n"
    );
}

#[test]
fn exit_2_when_a_prompt_template_is_missing() {
    let p = Project::forge();
    std::fs::remove_file(p.path().join("evals/prompt.txt")).unwrap();
    p.evals(&["run", "--no-autosave"]).exact().code(2).stderr_is(
        "suite: forge (evals/.llm-evals.config.yml)\nerror: evals/.llm-evals.config.yml: adapter.user: template file evals/prompt.txt does not exist: create it, or write the template inline\n",
    );
}

#[test]
fn exit_2_when_there_is_no_usable_baseline() {
    mini("")
        .evals(&["check", "--baseline", "7", "--no-autosave"])
        .code(2)
        .stderr_has("no run 7 in");
}

#[test]
fn exit_2_on_a_bad_flag() {
    mini("")
        .evals(&["run", "--no-such-flag"])
        .exact()
        .code(2)
        .stderr_is(concat!(
            "error: unexpected argument '--no-such-flag' found\n",
            "\n",
            "  tip: a similar argument exists: '--no-search'\n",
            "\n",
            "Usage: evals run --no-search\n",
            "\n",
            "For more information, try '--help'.\n",
        ));
}

#[test]
fn exit_130_when_interrupted() {
    // An exec worker that says it started, then sleeps on its case.
    let p = Project::new()
        .file(
            CONFIG,
            "request_types: [prompt]\nadapter: { kind: exec, command: [python3, evals/slow.py] }\nscorer: { kind: assertions }\nfake: { models: [echo] }\n",
        )
        .file(
            "evals/slow.py",
            "import sys, time\nfor line in sys.stdin:\n    open('evals/started', 'w').close()\n    time.sleep(60)\n",
        )
        .file("evals/datasets/d/cases.jsonl", "{\"id\": \"a\", \"input\": \"x\"}\n");
    let running = p.evals(&["run", "--no-autosave"]).spawn();
    let started = p.path().join("evals/started");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !started.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(started.exists(), "the worker never got its case");
    running.interrupt();
    let d = running.wait();
    assert_eq!(d.code, 130, "--- stderr\n{}", d.stderr);
    d.stderr_has("interrupted");
}
