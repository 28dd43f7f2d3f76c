//! Scoring your way: an exec scorer in Python whose declared metrics are columns,
//! weights and thresholds like the built-in scorers' own; a scorer that crashes or breaks
//! the protocol makes an error of its case, never a 0.

use crate::harness::Project;

/// A 20-line scorer: `helpfulness` (the expected text appears), `tone` (no shouting);
/// it crashes on `crash`, reports an undeclared metric on `bogus`, and `verify` names a
/// case without an expected answer.
const SCORER: &str = r#"import json, sys
for line in sys.stdin:
    req = json.loads(line)
    if "verify" in req:
        problems = [] if req["verify"]["expected"] else ["no expected answer"]
        print(json.dumps({"id": req["id"], "problems": problems}), flush=True)
        continue
    out = str(req["reply"]["output"])
    if "crash" in out:
        sys.exit(3)
    if "bogus" in out:
        print(json.dumps({"id": req["id"], "metrics": {"bogus": 1}}), flush=True)
        continue
    if "huge" in out:
        print(json.dumps({"id": req["id"], "metrics": {"helpfulness": 7}}), flush=True)
        continue
    tone = 0.0 if "!" in out else 1.0
    helpful = 1.0 if req["case"]["expected"] in out else 0.0
    notes = {"tone": "shouting"} if tone == 0 else {}
    print(json.dumps({"id": req["id"], "metrics": {"helpfulness": helpful, "tone": tone},
                      "diagnostics": notes}), flush=True)
"#;

fn scored(cases: &str) -> Project {
    Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            "suite: scored\nrequest_types: [prompt]\nadapter: { kind: prompt, user: \"{{ input }}\" }\nscorer:\n  kind: exec\n  command: [python3, evals/score.py]\n  metrics:\n    - { name: helpfulness, description: \"How well the reply answers\", primary: true }\n    - { name: tone, description: \"No shouting\" }\nminimum_scores: { tone: 0.5 }\nweighted_score: { weights: { helpfulness: 2, tone: 1 } }\nfake:\n  models: [echo]\n",
        )
        .file("evals/score.py", SCORER)
        .file("evals/datasets/d/cases.jsonl", cases)
}

const CASES: &str = concat!(
    r#"{"id": "good", "input": "hello x", "expected": "x"}"#,
    "\n",
    r#"{"id": "loud", "input": "hello x!", "expected": "x"}"#,
    "\n",
    r#"{"id": "off", "input": "hello", "expected": "x"}"#,
    "\n",
);

#[test]
fn an_exec_scorers_metrics_are_columns_weights_and_thresholds() {
    let p = scored(CASES);
    let d = p.evals(&["run", "--no-autosave"]).code(1);
    // Its declared metrics are the leaderboard's columns, the primary one ranking.
    assert_eq!(d.cell("fake/echo", "helpfulness"), "66.7%");
    assert_eq!(d.cell("fake/echo", "tone"), "66.7%");
    assert_eq!(d.cell("fake/echo", "errors"), "0");
    // Weighted 2:1 over two metrics at 2/3 each.
    assert_eq!(d.cell("fake/echo", "wscore"), "66.7%");
    d.stdout_has("How well the reply answers");
    d.stdout_has("loud tone: ");
    d.stdout_has("\"shouting\"");
    // A case below `minimum_scores` on an exec metric fails the run and `check`.
    d.stderr_has("fake/echo · d · loud: fails its thresholds (tone 0 < 0.5)");
    d.stderr_lacks("· good:");
    p.evals(&["check", "--no-autosave"])
        .code(1)
        .stderr_has("fake/echo · d · loud: fails its thresholds (tone 0 < 0.5)");
    p.evals(&["check", "-c", "good", "-c", "off", "--no-autosave"])
        .ok();
    // `evals weights` knows the declared metrics before anything runs.
    let w = p.evals(&["weights"]).ok();
    w.stdout_has("helpfulness");
    w.stdout_has("66.7%");
}

#[test]
fn weights_and_thresholds_naming_an_undeclared_metric_are_refused() {
    let p = scored(CASES);
    let config = p.read("evals/.llm-evals.config.yml");
    p.write(
        "evals/.llm-evals.config.yml",
        &config.replace(
            "minimum_scores: { tone: 0.5 }",
            "minimum_scores: { tonne: 0.5 }",
        ),
    );
    p.evals(&["run", "--no-autosave"])
        .code(2)
        .stderr_has("minimum_scores: unknown metric 'tonne' (did you mean 'tone'?)");
}

#[test]
fn a_crashing_or_off_protocol_scorer_is_an_error_of_its_case() {
    let p = scored(concat!(
        r#"{"id": "good", "input": "hello x", "expected": "x"}"#,
        "\n",
        r#"{"id": "boom", "input": "crash", "expected": "x"}"#,
        "\n",
        r#"{"id": "odd", "input": "bogus", "expected": "x"}"#,
        "\n",
        r#"{"id": "big", "input": "huge", "expected": "x"}"#,
        "\n",
        r#"{"id": "after", "input": "x again", "expected": "x"}"#,
        "\n",
    ));
    let d = p.evals(&["check", "-p", "1", "--no-autosave"]).code(1);
    assert_eq!(d.cell("fake/echo", "errors"), "3");
    // Scored cases only: the errors are no zeros.
    assert_eq!(d.cell("fake/echo", "helpfulness"), "100.0%");
    d.stderr_has(
        "fake/echo · d · boom: errored: scorer crashed: the scorer closed its output (exit status: 3)",
    );
    d.stderr_has("fake/echo · d · odd: errored: scorer: reported the metric 'bogus', which scorer.metrics does not declare (declared: helpfulness, tone)");
    d.stderr_has("fake/echo · d · big: errored: scorer: helpfulness is 7, outside 0..1");
    d.stderr_lacks("· good: errored");
    // A new worker took over after the crash.
    d.stderr_lacks("· after: errored");
}

#[test]
fn verify_prints_the_problems_an_exec_scorer_answers() {
    let p = scored(concat!(
        r#"{"id": "good", "input": "hello x", "expected": "x"}"#,
        "\n",
        r#"{"id": "bare", "input": "hello"}"#,
        "\n",
    ));
    let d = p.evals(&["verify"]).code(1);
    d.stdout_has("evals/datasets/d/cases.jsonl:2: no expected answer");
    d.stderr_has("1 problems in 2 cases");
    // A run refuses to start on it, before any call.
    p.evals(&["run", "--no-autosave"])
        .code(2)
        .stderr_has("no expected answer");
}

#[test]
fn an_exec_scorer_declares_its_metrics() {
    let p = scored(CASES);
    let config = p.read("evals/.llm-evals.config.yml");
    p.write(
        "evals/.llm-evals.config.yml",
        &config.replace(
            "    - { name: tone, description: \"No shouting\" }\n",
            "    - { name: tone, primary: true }\n",
        ),
    );
    p.evals(&["run", "--no-autosave"])
        .code(2)
        .stderr_has("scorer.metrics: 2 metrics are primary; mark exactly one `primary: true`");
}
