//! Keys the seeds' configs carry either work or fail with the fix: `project:` is kept with
//! the run, `results.temp_dir` is an error, `results.display: browser|both` says what happens
//! instead, and `compare -n` checks the weights as a real run does.

use crate::harness::Project;

/// The mini suite followed by `extra`.
fn mini_with(extra: &str) -> Project {
    crate::harness::mini_with("seedkeys", extra)
}

#[test]
fn project_is_kept_in_the_runs_snapshot() {
    let p = mini_with("project: my-evals            # Braintrust project name\n");
    p.evals(&["compare", "--format", "json", "-o", "run.json"])
        .ok();
    let run: serde_json::Value = serde_json::from_str(&p.read("run.json")).unwrap();
    assert_eq!(run["run"]["project"], "my-evals");
}

#[test]
fn results_temp_dir_is_an_error_naming_the_line_and_the_fix() {
    // The seed's own results section (llm-evals-readme "The lineup"); mini_config is 9 lines.
    let p = mini_with(
        "results:\n  autosave: true             # save every completed run as JSON (default)\n  destination: ./evals/results/\n  temp_dir: ./tmp            # temporary JSON when autosave is false\n",
    );
    let d = p.evals(&["compare", "-n"]).code(2);
    d.stderr_has("error: evals/.llm-evals.config.yml:13:3: results.temp_dir does nothing in evals: no temporary JSON is written")
        .stderr_has("remove the key");
}

#[test]
fn results_display_browser_or_both_says_what_happens_and_what_to_use_now() {
    for display in ["browser", "both"] {
        let p = mini_with(&format!("results: {{ display: {display} }}\n"));
        let d = p.evals(&["compare", "--no-autosave"]).ok();
        d.stderr_has(&format!("note: results.display: {display} in evals/.llm-evals.config.yml: evals opens no browser yet, so this run prints the terminal leaderboard"))
            .stderr_has("`--format html -o report.html`");
        assert!(d.stdout.contains("fake/echo"), "{}", d.stdout);
    }
}

#[test]
fn compare_dry_run_refuses_a_bad_weight_as_a_real_run_does() {
    let p = mini_with("weighted_score:\n  weights: { scroe: 1, cost: -1 }\n");
    let dry = p.evals(&["compare", "-n"]).code(2);
    let real = p.evals(&["compare", "--no-autosave"]).code(2);
    let want = "evals/.llm-evals.config.yml: weighted_score: `scroe` cannot be weighted (did you mean `score`?)";
    dry.stderr_has(want);
    real.stderr_has(want);
}
