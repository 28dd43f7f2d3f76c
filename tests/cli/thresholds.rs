//! Thresholds gate every run, as they gate `check` (RubyLLM: `run` exits 1 on failed
//! checks, thresholds applied even on the first run), and LLMEvalForge's `--min-score` and
//! `--min-pass-rate` set an experiment's floor for one run of `run`, `compare` or `check`.

use crate::harness::{MINI_SCHEMA, Project};

/// A fields suite answered by fake/echo with `minimum_scores: { field_accuracy: 0.8 }`:
/// `right` carries its answer, `wrong` carries another one.
fn echo_suite() -> Project {
    Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "suite: gate\nrequest_types: [prompt]\nadapter: {{ kind: prompt, user: \"{{{{ input }}}}\", json: true }}\n{MINI_SCHEMA}minimum_scores: {{ field_accuracy: 0.8 }}\nfake:\n  models: [echo]\n"
            ),
        )
        .file(
            "evals/datasets/d/cases.jsonl",
            concat!(
                r#"{"id": "right", "input": "say {\"answer\": \"x\"}", "expected": {"answer": "x"}}"#,
                "\n",
                r#"{"id": "wrong", "input": "say {\"answer\": \"y\"}", "expected": {"answer": "x"}}"#,
                "\n"
            ),
        )
}

#[test]
fn run_and_compare_exit_1_when_a_case_fails_its_minimum_scores() {
    let p = echo_suite();
    for command in ["run", "compare"] {
        let d = p.evals(&[command, "--no-autosave"]).code(1);
        d.stderr_has("error: thresholds failed:\n");
        d.stderr_has("  fake/echo · d · wrong: fails its thresholds (field_accuracy ");
        d.stderr_has(" < 0.8)");
        d.stderr_lacks("· right:");
    }
    // What passes exits 0, as before.
    p.evals(&["run", "-c", "right", "--no-autosave"])
        .ok()
        .stderr_lacks("thresholds failed");
    // `check` decides the same way (one rule for all three).
    p.evals(&["check", "--no-autosave"])
        .code(1)
        .stderr_has("fake/echo · d · wrong: fails its thresholds (field_accuracy ");
    // `record` refreshes recordings: it says so, and leaves the gate to `check`.
    p.evals(&["record", "--no-autosave"]).ok().stderr_has(
        "warning: thresholds failed (record does not gate; `evals check` will):
  fake/echo · d · wrong: fails its thresholds",
    );
    p.evals(&["record", "--min-score", "0.5", "--no-autosave"])
        .code(2)
        .stderr_has(
            "--min-score and --min-pass-rate gate run, compare and check; record does not gate",
        );
}

/// The forge fixture plus a case that half fails: 2 of 3 cases pass, mean score 5/6.
fn forge_with_a_failure() -> Project {
    let p = Project::forge();
    let path = "evals/datasets/examples/dataset.jsonl";
    let mut text = p.read(path);
    text.push_str(concat!(
        r#"{"id":"refund","input":{"question":"Can I get a refund?"},"mock_response":"ERROR: see our refund policy","expect":{"contains":["refund"],"not_contains":["ERROR"]},"tags":["support"]}"#,
        "\n"
    ));
    p.write(path, &text);
    p
}

#[test]
fn min_pass_rate_and_min_score_gate_run_compare_and_check() {
    // LLMEvalForge's CI step: `run ... --provider mock --min-pass-rate 1.0`.
    Project::forge()
        .evals(&["run", "--min-pass-rate", "1.0", "--no-autosave"])
        .ok();

    let p = forge_with_a_failure();
    // With no flag, every case must pass: the failing one fails the run.
    p.evals(&["run", "--no-autosave"])
        .code(1)
        .stderr_has("mock/mock · examples · refund: fails its thresholds (1 assertion(s) failed)");

    // `--min-pass-rate 0.95`: fail when the pass rate is lower than 95%.
    for command in ["run", "compare", "check"] {
        let d = p
            .evals(&[command, "--min-pass-rate", "0.95", "--no-autosave"])
            .code(1);
        d.stderr_has(
            "mock/mock · examples: 66.7% of cases passed (2 of 3), below --min-pass-rate 95.0%",
        );
        // The share is the rule now, not each case.
        d.stderr_lacks("refund: fails its thresholds");
    }
    // 2 of 3 is enough for 0.6.
    p.evals(&["run", "--min-pass-rate", "0.6", "--no-autosave"])
        .ok();

    // `--min-score 0.90`: fail when the average score is lower than 0.90 (here 83.3%).
    let d = p
        .evals(&[
            "compare",
            "--min-pass-rate",
            "0.6",
            "--min-score",
            "0.90",
            "--no-autosave",
        ])
        .code(1);
    d.stderr_has("mock/mock · examples: mean score 83.3% is below --min-score 90.0%");
    p.evals(&[
        "run",
        "--min-pass-rate",
        "0.6",
        "--min-score",
        "0.8",
        "--no-autosave",
    ])
    .ok();
    // --min-score alone leaves every case to pass its own assertions.
    p.evals(&["run", "--min-score", "0.8", "--no-autosave"])
        .code(1)
        .stderr_has("refund: fails its thresholds");

    // A fraction, as LLMEvalForge takes it; 95 is a usage error, not a gate nothing passes.
    p.evals(&["run", "--min-pass-rate", "95", "--no-autosave"])
        .code(2)
        .stderr_has("--min-pass-rate 95: expected a fraction between 0 and 1 (0.95 is 95%)");
}

#[test]
fn a_checks_reports_and_a_later_report_keep_the_runs_limits() {
    let p = forge_with_a_failure();
    let d = p
        .evals(&[
            "check",
            "--min-pass-rate",
            "0.95",
            "--markdown",
            "check.md",
            "--json",
            "check.json",
            "--no-autosave",
        ])
        .code(1);
    d.stderr_has("evals check: 1 failed threshold");
    let md = p.read("check.md");
    assert!(md.contains("**evals check: 1 failed threshold**"), "{md}");
    assert!(
        md.contains(
            "- mock/mock · examples: 66.7% of cases passed (2 of 3), below --min-pass-rate 95.0%"
        ),
        "{md}"
    );
    // The stored run remembers the limit it ran under: its report gives the same verdict.
    let run: serde_json::Value = serde_json::from_str(&p.read("check.json")).unwrap();
    let id = run["run"]["id"].as_str().unwrap();
    let report = p.evals(&["report", id]).ok();
    report.stdout_has("**evals check: 1 failed threshold**");
}
