//! `evals cases`: both case layouts, selection, the toy suite's listing.

use crate::harness::{Done, Project, cells, mini_config};

/// The `dataset/case` keys of the table rows, in order.
fn listed(d: &Done) -> Vec<String> {
    d.stdout
        .lines()
        .map(cells)
        // Five columns, six when the suite's cases carry tags.
        .filter(|c| c.len() >= 5 && c[0] != "dataset")
        .map(|c| format!("{}/{}", c[0], c[1]))
        .collect()
}

#[test]
fn toy_suite_lists_eight_cases_and_the_refused_contender() {
    let d = Project::toy().evals(&["cases"]).ok();
    assert_eq!(
        listed(&d),
        [
            "animals/clear/001",
            "animals/clear/002",
            "animals/vague/001",
            "animals/vague/002",
            "colors/clear/001",
            "colors/clear/002",
            "colors/vague/001",
            "colors/vague/002",
        ]
    );
    d.stdout_has("8 cases in 2 datasets\n");
    d.stdout_has("typesafe/jev-latest refused");
    assert_eq!(d.row("vague/002")[2], "hard", "metadata.json difficulty");
    assert_eq!(d.row("clear/001")[3], "3/4 answered");
}

#[test]
fn disk_variants_with_and_without_numbers_and_jsonl_cases() {
    let p = Project::new()
        .file("evals/.llm-evals.config.yml", &mini_config("layouts"))
        .file("evals/datasets/disk/cases/plain/input.txt", "one variant, no number")
        .file("evals/datasets/disk/cases/plain/expected.json", r#"{"answer": "a"}"#)
        .file("evals/datasets/disk/cases/vague/001/input.txt", "first")
        .file("evals/datasets/disk/cases/vague/001/expected.json", r#"{"answer": null}"#)
        .file("evals/datasets/disk/cases/vague/002/input.txt", "second")
        .file("evals/datasets/disk/cases/vague/002/expected.json", r#"{"answer": "b"}"#)
        .file(
            "evals/datasets/lines/cases.jsonl",
            concat!(
                r#"{"id": "text", "input": "a string input", "expected": {"answer": "x"}}"#,
                "\n",
                r#"{"id": "vars", "input": {"question": "why"}, "expected": {"answer": null}, "tags": ["smoke"]}"#,
                "\n"
            ),
        );
    let d = p.evals(&["cases"]).ok();
    assert_eq!(
        listed(&d),
        [
            "disk/plain",
            "disk/vague/001",
            "disk/vague/002",
            "lines/text",
            "lines/vars"
        ]
    );
    d.stdout_has("5 cases in 2 datasets\n");
}

#[test]
fn select_by_dataset_variant_and_case() {
    let p = Project::toy();
    let d = p.evals(&["cases", "-d", "colors"]).ok();
    assert_eq!(
        listed(&d),
        [
            "colors/clear/001",
            "colors/clear/002",
            "colors/vague/001",
            "colors/vague/002"
        ]
    );
    let d = p.evals(&["cases", "-c", "vague"]).ok();
    assert_eq!(
        listed(&d),
        [
            "animals/vague/001",
            "animals/vague/002",
            "colors/vague/001",
            "colors/vague/002"
        ]
    );
    let d = p.evals(&["cases", "-c", "vague/002"]).ok();
    assert_eq!(listed(&d), ["animals/vague/002", "colors/vague/002"]);
    let d = p.evals(&["cases", "-d", "animals", "-c", "vague/002"]).ok();
    assert_eq!(listed(&d), ["animals/vague/002"]);
}

#[test]
fn unknown_dataset_is_a_usage_error_with_a_suggestion() {
    let d = Project::toy().evals(&["cases", "-d", "animls"]).code(2);
    d.stderr_has("error: no dataset 'animls' (did you mean 'animals'?)");
    assert_eq!(d.stdout, "");
}

#[test]
fn unknown_case_is_a_usage_error() {
    Project::toy()
        .evals(&["cases", "-c", "nope"])
        .code(2)
        .stderr_has("error: no case matches '-c nope'");
}
