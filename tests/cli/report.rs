//! `evals history` and `evals report` over stored runs, as the seeds' users gate two runs:
//! LLMEvalForge's `compare --baseline 1 --candidate 2 --max-regression 0.02
//! --fail-on-case-regression` and RubyLLM's `report RUN_ID --baseline BASELINE_ID`.
//! The runs come from the gate's suite (`gate.rs`): `main` records and checks, `feature`
//! records answers that got one field of `slips` wrong (its mean falls 9 points).

use serde_json::Value;

use crate::gate::{CONTENDER, Gate};

/// `main`: run 1 records, run 2 checks; `feature`: run 3 records worse answers.
fn three_runs() -> (Gate, Vec<String>) {
    let g = Gate::new();
    g.on_main();
    g.feature(1);
    let mut ids: Vec<String> = g
        .history(&[])
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    ids.reverse();
    assert_eq!(ids.len(), 3);
    (g, ids)
}

#[test]
fn history_numbers_runs_in_the_order_they_were_stored() {
    let (g, ids) = three_runs();
    let d = g.evals(&["history"]).ok();
    for (n, id) in ids.iter().enumerate() {
        assert_eq!(d.cell(id, "#"), (n + 1).to_string(), "{id}");
    }
    let runs = g.history(&[]);
    let numbers: Vec<&Value> = runs.iter().map(|r| &r["number"]).collect();
    assert_eq!(numbers, [3, 2, 1]);
    // A filter leaves each run its number.
    assert_eq!(g.history(&["--branch", "feature"])[0]["number"], 3);
}

#[test]
fn report_and_export_take_a_run_number_an_id_or_a_unique_prefix() {
    let (g, ids) = three_runs();
    for reference in ["2", "#2", ids[1].as_str(), &ids[1][..ids[1].len() - 4]] {
        g.evals(&["export", reference, "-o", "run.json"]).ok();
        let v: Value = serde_json::from_str(&g.read("run.json")).unwrap();
        assert_eq!(v["run"]["id"], ids[1].as_str(), "{reference}");
        g.evals(&["report", reference, "--format", "json", "-o", "r.json"])
            .ok();
        let v: Value = serde_json::from_str(&g.read("r.json")).unwrap();
        assert_eq!(v["run"]["id"], ids[1].as_str(), "{reference}");
    }
    // Runs stored within seconds share their id's time-ordered start.
    let shared: String = ids[0]
        .chars()
        .zip(ids[2].chars())
        .take_while(|(a, b)| a == b)
        .map(|(a, _)| a)
        .collect();
    assert!(shared.len() >= 4, "{ids:?}");
    g.evals(&["export", &shared])
        .code(2)
        .stderr_has(&format!("run id prefix {shared} matches 3 runs"))
        .stderr_has("give more of the id, or the run's number from `evals history`");
    g.evals(&["report", "9"])
        .code(2)
        .stderr_has("no run 9 in ")
        .stderr_has("list runs with `evals history`");
}

#[test]
fn report_gates_two_stored_runs_exactly_as_check_does() {
    let (g, ids) = three_runs();
    let reason = format!(
        "{CONTENDER} · d: mean score fell 9.0 points (100.0% → 91.0%), more than the 2.0-point tolerance"
    );
    // LLMEvalForge's `compare --baseline 2 --candidate 3 --max-regression 0.02`.
    let d = g
        .evals(&[
            "report",
            "3",
            "--baseline",
            "2",
            "--max-regression",
            "0.02",
            "--fail-on-regression",
            "-o",
            "pr.md",
        ])
        .code(1);
    d.stderr_has("error: evals check: 1 regression in gate (main → feature)")
        .stderr_has(&reason);
    assert!(
        g.read("pr.md")
            .starts_with("**evals check: 1 regression** in gate (main → feature)")
    );
    // `check` on the same answers says the same and exits the same.
    let check = g
        .evals(&["check", "--baseline", "main", "--tolerance", "0.02"])
        .code(1);
    check
        .stderr_has("error: evals check: 1 regression in gate (main → feature)")
        .stderr_has(&reason);

    // RubyLLM's `report RUN_ID --baseline BASELINE_ID`, ids in full, a looser tolerance.
    g.evals(&[
        "report",
        &ids[2],
        "--baseline",
        &ids[1],
        "--tolerance",
        "0.2",
        "--fail-on-regression",
    ])
    .ok()
    .stderr_has("evals check passed in gate (main → feature)");
    // Two runs of the same answers.
    g.evals(&["report", "2", "--baseline", "1", "--fail-on-regression"])
        .ok();
    // A baseline that does not exist: 2, as check.
    g.evals(&["report", "3", "--baseline", "nope", "--fail-on-regression"])
        .code(2)
        .stderr_has("no completed run of suite gate on branch nope");
}

#[test]
fn fail_on_case_regression_fails_on_any_case_whose_score_dropped() {
    let (g, _) = three_runs();
    // Inside a 20-point tolerance and above its 80% threshold, `slips` still dropped.
    let d = g
        .evals(&[
            "report",
            "3",
            "--baseline",
            "2",
            "--max-regression",
            "0.2",
            "--fail-on-case-regression",
            "--format",
            "junit",
            "-o",
            "junit.xml",
        ])
        .code(1);
    d.stderr_has("error: evals check: 1 regression in gate (main → feature)")
        .stderr_has(&format!(
            "{CONTENDER} · d · slips: score fell 18.0 points (100.0% → 82.0%); --fail-on-case-regression fails any drop"
        ));
    let junit = g.read("junit.xml");
    assert!(
        junit.contains("message=\"declined: score 100.0% → 82.0% (-18.0 points); --fail-on-case-regression fails any drop\""),
        "{junit}"
    );
    // Without the flag the same comparison passes.
    g.evals(&[
        "report",
        "3",
        "--baseline",
        "2",
        "--max-regression",
        "0.2",
        "--fail-on-regression",
    ])
    .ok();
    // A drop needs a baseline to drop from.
    g.evals(&["report", "3", "--fail-on-case-regression"])
        .code(2)
        .stderr_has("--fail-on-case-regression needs --baseline REF");
}

#[test]
fn without_fail_on_regression_report_exits_0_and_says_how_to_gate() {
    let (g, _) = three_runs();
    let d = g
        .evals(&["report", "3", "--baseline", "2", "-o", "pr.md"])
        .ok();
    d.stderr_has(
        "evals check: 1 regression in gate (main → feature); add --fail-on-regression to exit 1 on it",
    );
    assert!(g.read("pr.md").starts_with("**evals check: 1 regression**"));
}
