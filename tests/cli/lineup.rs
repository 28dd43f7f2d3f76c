//! The lineup in `compare -n`: lists multiply, flags beat entries, `-m` picks, refused
//! contenders are warned about and never in the matrix.

use crate::harness::{Done, Project, TOY_FOUND, TOY_REFUSED, cells};

const LOCAL: &str = "
local:
  base_url: http://127.0.0.1:9/v1
  models:
    - model: m1
      effort: [low, high]
      temperature: [0.0, 0.7]
    - plain
";

fn toy_with_local() -> Project {
    let p = Project::toy();
    let cfg = p.read("evals/.llm-evals.config.yml");
    p.file("evals/.llm-evals.config.yml", &format!("{cfg}{LOCAL}"))
}

/// (model, effort, temp) of each matrix row.
fn matrix(d: &Done) -> Vec<(String, String, String)> {
    d.stdout
        .lines()
        .map(cells)
        // model, provider, effort, temp, max_tokens, $/M in/out, two datasets, calls.
        .filter(|c| c.len() == 9 && c[0] != "model")
        .map(|c| (c[0].clone(), c[2].clone(), c[3].clone()))
        .collect()
}

fn rows(v: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    v.iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect()
}

#[test]
fn effort_and_temperature_lists_multiply_into_four_contenders() {
    // `-j 2`: the default concurrency is the CPU count, which the last line says.
    let d = toy_with_local()
        .evals(&["compare", "-n", "-j", "2"])
        .exact()
        .ok();
    d.stdout_is(concat!(
        "┌─────────────┬──────────┬─────────┬──────┬────────────┬────────────┬─────────┬────────┬───────┐\n",
        "│ model       ┆ provider ┆ effort  ┆ temp ┆ max_tokens ┆ $/M in/out ┆ animals ┆ colors ┆ calls │\n",
        "╞═════════════╪══════════╪═════════╪══════╪════════════╪════════════╪═════════╪════════╪═══════╡\n",
        "│ fake/echo   ┆ fake     ┆ default ┆ 0.1  ┆       1024 ┆       free ┆       4 ┆      4 ┆     8 │\n",
        "│ fake/parrot ┆ fake     ┆ default ┆ 0.1  ┆       1024 ┆       free ┆       4 ┆      4 ┆     8 │\n",
        "│ local/m1    ┆ local    ┆ low     ┆ 0    ┆       1024 ┆          - ┆       4 ┆      4 ┆     8 │\n",
        "│ local/m1    ┆ local    ┆ low     ┆ 0.7  ┆       1024 ┆          - ┆       4 ┆      4 ┆     8 │\n",
        "│ local/m1    ┆ local    ┆ high    ┆ 0    ┆       1024 ┆          - ┆       4 ┆      4 ┆     8 │\n",
        "│ local/m1    ┆ local    ┆ high    ┆ 0.7  ┆       1024 ┆          - ┆       4 ┆      4 ┆     8 │\n",
        "│ local/plain ┆ local    ┆ default ┆ 0.1  ┆       1024 ┆          - ┆       4 ┆      4 ┆     8 │\n",
        "└─────────────┴──────────┴─────────┴──────┴────────────┴────────────┴─────────┴────────┴───────┘\n",
        "7 contenders × 2 datasets = 14 experiments, 56 calls (2 at a time, 4 cases in flight each); nothing was called\n",
    ))
    .stderr_is(&format!("{TOY_FOUND}{TOY_REFUSED}"));
    assert_eq!(
        matrix(&d),
        rows(&[
            ("fake/echo", "default", "0.1"),
            ("fake/parrot", "default", "0.1"),
            ("local/m1", "low", "0"),
            ("local/m1", "low", "0.7"),
            ("local/m1", "high", "0"),
            ("local/m1", "high", "0.7"),
            ("local/plain", "default", "0.1"),
        ])
    );
    d.stdout_has("7 contenders × 2 datasets = 14 experiments, 56 calls");
    d.stdout_has("nothing was called");
}

#[test]
fn flags_beat_entries_and_defaults() {
    let d = toy_with_local()
        .evals(&["compare", "-n", "-e", "medium", "-t", "0.3"])
        .exact()
        .ok();
    d.stderr_is(&format!("{TOY_FOUND}{TOY_REFUSED}"))
        .stdout_has("4 contenders × 2 datasets = 8 experiments, 32 calls");
    assert_eq!(
        matrix(&d),
        rows(&[
            ("fake/echo", "medium", "0.3"),
            ("fake/parrot", "medium", "0.3"),
            ("local/m1", "medium", "0.3"),
            ("local/plain", "medium", "0.3"),
        ])
    );
}

#[test]
fn flag_lists_multiply_too() {
    let d = toy_with_local()
        .evals(&["compare", "-n", "-m", "local/plain", "-e", "low,high"])
        .exact()
        .ok();
    // The refused contender is not asked for: no warning.
    d.stderr_is(TOY_FOUND)
        .stdout_has("2 contenders × 2 datasets = 4 experiments, 16 calls");
    assert_eq!(
        matrix(&d),
        rows(&[
            ("local/plain", "low", "0.1"),
            ("local/plain", "high", "0.1"),
        ])
    );
}

#[test]
fn models_flag_picks_one_contender() {
    let d = toy_with_local()
        .evals(&["compare", "-n", "-m", "local/plain"])
        .exact()
        .ok();
    d.stderr_is(TOY_FOUND);
    assert_eq!(matrix(&d), rows(&[("local/plain", "default", "0.1")]));
    d.stdout_has("1 contender × 2 datasets = 2 experiments, 8 calls");
}

#[test]
fn refused_contender_is_warned_about_and_never_in_the_matrix() {
    let d = Project::toy().evals(&["compare", "-n"]).exact().ok();
    d.stderr_is(&format!("{TOY_FOUND}{TOY_REFUSED}"));
    d.stdout_has("2 contenders × 2 datasets = 4 experiments, 16 calls")
        .stdout_lacks("jev-latest");
    assert_eq!(
        matrix(&d),
        rows(&[
            ("fake/echo", "default", "0.1"),
            ("fake/parrot", "default", "0.1"),
        ])
    );
}
