//! `evals cases`: both case layouts, selection, the toy suite's listing.

use crate::harness::{Done, Project, TOY_FOUND, cells, mini_config};

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
    let d = Project::toy().evals(&["cases"]).exact().ok();
    d.stdout_is(concat!(
        "┌─────────┬───────────┬────────────┬──────────────┬───────┐\n",
        "│ dataset ┆ case      ┆ difficulty ┆ expects      ┆ words │\n",
        "╞═════════╪═══════════╪════════════╪══════════════╪═══════╡\n",
        "│ animals ┆ clear/001 ┆ easy       ┆ 3/4 answered ┆    18 │\n",
        "│ animals ┆ clear/002 ┆ easy       ┆ 3/4 answered ┆    19 │\n",
        "│ animals ┆ vague/001 ┆ hard       ┆ 2/4 answered ┆    22 │\n",
        "│ animals ┆ vague/002 ┆ hard       ┆ 1/4 answered ┆    16 │\n",
        "│ colors  ┆ clear/001 ┆ easy       ┆ 3/4 answered ┆    18 │\n",
        "│ colors  ┆ clear/002 ┆ easy       ┆ 3/4 answered ┆    19 │\n",
        "│ colors  ┆ vague/001 ┆ hard       ┆ 1/4 answered ┆    19 │\n",
        "│ colors  ┆ vague/002 ┆ hard       ┆ 2/4 answered ┆    24 │\n",
        "└─────────┴───────────┴────────────┴──────────────┴───────┘\n",
        "8 cases in 2 datasets\n",
        "\n",
        "refused (never scored):\n",
        "  typesafe/jev-latest refused: needs typesafe; this suite produces prompt\n",
    ))
    // The refusal is listed on stdout, so not warned about again.
    .stderr_is(TOY_FOUND);
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
    let d = p.evals(&["cases"]).exact().ok();
    d.stderr_is("suite: layouts (evals/.llm-evals.config.yml)\n");
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
    let d = p.evals(&["cases", "-d", "colors"]).exact().ok();
    d.stderr_is(TOY_FOUND)
        .stdout_has("\n4 cases in 1 dataset\n");
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
    Project::toy()
        .evals(&["cases", "-d", "animls"])
        .exact()
        .code(2)
        .stderr_is(&format!(
            "{TOY_FOUND}error: no dataset 'animls' (did you mean 'animals'?)\n"
        ));
}

#[test]
fn unknown_case_is_a_usage_error() {
    Project::toy()
        .evals(&["cases", "-c", "nope"])
        .exact()
        .code(2)
        .stderr_is(&format!(
            "{TOY_FOUND}error: no case matches '-c nope'; run `evals cases` to list them\n"
        ));
}

/// The suite's case index is kept in temporary files: a temporary folder that cannot hold
/// them is said, with where it is set, and nothing is listed.
#[test]
fn a_temporary_folder_that_cannot_hold_the_case_index_is_named_with_the_fix() {
    let p = Project::toy();
    let missing = p.path().join("no-such-tmp");
    let d = p
        .evals(&["cases"])
        .env("TMPDIR", missing.to_str().unwrap())
        .code(1);
    assert_eq!(d.stdout, "");
    d.stderr_has(&format!(
        "cannot keep the suite's case index in a temporary file: {}: ",
        missing.display()
    ))
    .stderr_has("; set TMPDIR to a folder it can write to, with room");
}
