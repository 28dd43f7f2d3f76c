//! `evals history`, `evals report` and `evals render` over stored runs and snapshots, as
//! the seeds' users write their reports and gate two runs:
//! LLMEvalForge's `compare --baseline 1 --candidate 2 --max-regression 0.02
//! --fail-on-case-regression` and RubyLLM's `report RUN_ID --baseline BASELINE_ID`.
//! The runs come from the gate's suite (`gate.rs`): `main` records and checks, `feature`
//! records answers that got one field of `slips` wrong (its mean falls 9 points).

use serde_json::Value;

use crate::gate::{CONTENDER, Gate};
use crate::harness::Project;

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

#[test]
fn report_without_a_run_reports_the_latest_run_of_this_suite() {
    let (g, ids) = three_runs();
    // A newer run of another suite in the same history is not this suite's latest.
    let history = g.path().join(".evals/history.sqlite3");
    Project::toy()
        .evals(&[
            "check",
            "--no-autosave",
            "--history",
            history.to_str().unwrap(),
        ])
        .ok();
    // RubyLLM's `report --format html --output report.html`.
    g.evals(&["report", "--format", "html", "--output", "report.html"])
        .ok()
        .stderr_has("wrote report.html");
    let html = g.read("report.html");
    assert!(html.starts_with("<!doctype html>"), "{html}");
    assert!(
        html.contains(&format!("run <code>{}</code>", ids[2])),
        "{html}"
    );
    // And gated: the latest run against main.
    g.evals(&["report", "--baseline", "main", "--fail-on-regression"])
        .code(1)
        .stderr_has("error: evals check: 1 regression in gate (main → feature)");
    // Outside any suite there is no "this suite" to take the latest run of.
    Project::new()
        .evals(&["report", "--history", history.to_str().unwrap()])
        .code(2)
        .stderr_has("report without RUN reports the latest run of this suite");
}

#[test]
fn render_and_report_take_the_format_from_the_output_file() {
    let p = Project::toy();
    p.evals(&[
        "compare",
        "--no-autosave",
        "--format",
        "json",
        "-o",
        "results.json",
    ])
    .ok();
    // The seed's `render results.json -o report.html`.
    p.evals(&["render", "results.json", "-o", "report.html"])
        .ok()
        .stderr_has("wrote report.html");
    assert!(p.read("report.html").starts_with("<!doctype html>"));
    p.evals(&["render", "results.json", "-o", "again.json"])
        .ok();
    let again: Value = serde_json::from_str(&p.read("again.json")).unwrap();
    let first: Value = serde_json::from_str(&p.read("results.json")).unwrap();
    assert_eq!(again, first);
    p.evals(&["render", "results.json", "-o", "board.txt"]).ok();
    assert!(p.read("board.txt").starts_with("dataset animals\n"));
    // --format says what to write, whatever the file is called.
    p.evals(&[
        "render",
        "results.json",
        "--format",
        "tui",
        "-o",
        "text.html",
    ])
    .ok();
    assert!(p.read("text.html").starts_with("dataset animals\n"));
    // render has no Markdown; report has.
    p.evals(&["render", "results.json", "-o", "report.md"])
        .code(2)
        .stderr_has("render writes the leaderboard (tui), json or html; for Markdown run `evals report results.json -o report.md`");
    p.evals(&["report", "results.json", "-o", "report.md"]).ok();
    assert!(p.read("report.md").starts_with("**evals check"));
    for (file, starts) in [
        ("r.html", "<!doctype html>"),
        ("r.json", "{"),
        ("junit.xml", "<?xml"),
        ("r.md", "**evals check"),
    ] {
        p.evals(&["report", "results.json", "-o", file]).ok();
        let text = p.read(file);
        assert!(text.starts_with(starts), "{file}: {text}");
    }
}

#[test]
fn output_without_a_file_writes_a_stamped_file_under_results_destination() {
    let p = Project::toy();
    let config = p.read("evals/.llm-evals.config.yml");
    p.write(
        "evals/.llm-evals.config.yml",
        &format!("{config}\nresults: {{ destination: out/reports }}\n"),
    );
    p.evals(&[
        "compare",
        "--no-autosave",
        "--format",
        "json",
        "-o",
        "results.json",
    ])
    .ok();
    let id = serde_json::from_str::<Value>(&p.read("results.json")).unwrap()["run"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let short = &id[id.len() - 8..];
    let written = |d: &crate::harness::Done, ext: &str| -> String {
        let line = d
            .stderr
            .lines()
            .find(|l| l.starts_with("wrote out/reports/"))
            .unwrap_or_else(|| panic!("no `wrote out/reports/...`\n{}", d.stderr));
        let rel = line.trim_start_matches("wrote ").to_string();
        assert!(rel.ends_with(&format!("-{short}.{ext}")), "{rel}");
        rel
    };
    let d = p.evals(&["render", "results.json", "-o"]).ok();
    let html = written(&d, "html");
    assert!(html.contains("-render-"), "{html}");
    assert!(p.read(&html).starts_with("<!doctype html>"));
    // report: the latest run, Markdown unless --format says otherwise.
    let d = p.evals(&["report", "-o"]).ok();
    assert!(p.read(&written(&d, "md")).starts_with("**evals check"));
    let d = p.evals(&["report", "--format", "junit", "-o"]).ok();
    assert!(p.read(&written(&d, "xml")).starts_with("<?xml"));
}
