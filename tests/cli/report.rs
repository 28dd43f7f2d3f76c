//! `evals history` and `evals report` over stored runs, as the seeds' users gate two runs:
//! LLMEvalForge's `compare --baseline 1 --candidate 2 --max-regression 0.02
//! --fail-on-case-regression` and RubyLLM's `report RUN_ID --baseline BASELINE_ID`.
//! The runs come from the gate's suite (`gate.rs`): `main` records and checks, `feature`
//! records answers that got one field of `slips` wrong (its mean falls 9 points).

use serde_json::Value;

use crate::gate::Gate;

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
