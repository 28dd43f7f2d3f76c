//! `--tag T` selects JSONL cases by their `tags` (LLMEvalForge's tag filtering: repeatable,
//! OR-matched), on every command that takes `-d`/`-c`; `evals cases` shows the tags.

use crate::harness::Project;

/// The case ids of `run`'s breakdown rows.
fn ran(d: &crate::harness::Done) -> Vec<String> {
    ["greeting", "json-output", "refund"]
        .into_iter()
        .filter(|c| {
            d.stdout
                .lines()
                .any(|l| crate::harness::cells(l).first().map(String::as_str) == Some(c))
        })
        .map(str::to_string)
        .collect()
}

fn forge_with_support() -> Project {
    let p = Project::forge();
    let path = "evals/datasets/examples/dataset.jsonl";
    let mut text = p.read(path);
    text.push_str(concat!(
        r#"{"id":"refund","input":{"question":"Refund?"},"mock_response":"Yes, a refund within 30 days.","expect":{"contains":["30 days"]},"tags":["support","critical"]}"#,
        "\n"
    ));
    p.write(path, &text);
    p
}

#[test]
fn tag_selects_cases_or_matched_on_every_command() {
    let p = forge_with_support();
    // llm-eval-forge run --dataset dataset.jsonl --template prompt.txt --provider mock --tag smoke
    let d = p.evals(&["run", "--tag", "smoke", "--no-autosave"]).ok();
    assert_eq!(ran(&d), ["greeting"]);
    // Multiple tags are OR-matched: --tag smoke --tag critical.
    let d = p
        .evals(&[
            "run",
            "--tag",
            "smoke",
            "--tag",
            "critical",
            "--no-autosave",
        ])
        .ok();
    assert_eq!(ran(&d), ["greeting", "refund"]);
    // And with -c: both must hold.
    let d = p
        .evals(&[
            "run",
            "--tag",
            "smoke",
            "--tag",
            "json",
            "-c",
            "json-output",
            "--no-autosave",
        ])
        .ok();
    assert_eq!(ran(&d), ["json-output"]);

    let cases = p.evals(&["cases"]).ok();
    assert_eq!(cases.cell("greeting", "tags"), "smoke");
    assert_eq!(cases.cell("refund", "tags"), "support, critical");
    let json = p.evals(&["cases", "--tag", "json"]).ok();
    json.stdout_has("1 case in 1 dataset");
    json.stdout_lacks("greeting");
    p.evals(&["verify", "--tag", "support"])
        .ok()
        .stderr_has("verified 1 case: no problems");
    p.evals(&["compare", "--tag", "json", "-n"])
        .ok()
        .stdout_has("1 contender × 1 dataset = 1 experiment, 1 call");
    p.evals(&["check", "--tag", "critical", "--no-autosave"])
        .ok();

    // A tag no case carries selects nothing: said, with the tags there are.
    p.evals(&["run", "--tag", "smok", "--no-autosave"])
        .code(2)
        .stderr_has("no case carries tag 'smok' (did you mean 'smoke'? tags: critical, json, smoke, support)");
}

#[test]
fn a_check_narrowed_by_tag_has_a_baseline_only_in_a_run_narrowed_alike() {
    let p = forge_with_support();
    p.evals(&["check", "--branch", "main", "--no-autosave"])
        .ok();
    p.evals(&[
        "check",
        "--tag",
        "smoke",
        "--baseline",
        "main",
        "--branch",
        "pr",
        "--no-autosave",
    ])
    .code(2)
    .stderr_has("no run on main selected what this run selects (--tag smoke)");
    p.evals(&[
        "check",
        "--tag",
        "smoke",
        "--branch",
        "main",
        "--no-autosave",
    ])
    .ok();
    p.evals(&[
        "check",
        "--tag",
        "smoke",
        "--baseline",
        "main",
        "--branch",
        "pr",
        "--no-autosave",
    ])
    .ok()
    .stderr_has("evals check passed");
}
