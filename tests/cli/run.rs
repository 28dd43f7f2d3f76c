//! `run`, `compare` and `render` on the toy suite with the fake provider (no network).

use crate::harness::{Bounded, Project, STORED, TOY_FOUND, TOY_REFUSED};

#[test]
fn toy_compare_scores_both_fakes_100_percent_and_exits_0() {
    let d = Project::toy()
        .evals(&["compare", "--no-autosave"])
        .exact()
        .ok()
        .redact_run_ids();
    for model in ["fake/echo", "fake/parrot"] {
        assert_eq!(d.cell(model, "field_accuracy"), "100.0%", "{model}");
        assert_eq!(d.cell(model, "errors"), "0", "{model}");
    }
    d.stdout_has("dataset animals\n");
    d.stdout_has("dataset colors\n");
    d.stdout_has("\noverall\n");
    d.stdout_lacks("jev-latest");
    d.stderr_is(&format!("{TOY_FOUND}{TOY_REFUSED}{STORED}"));
}

#[test]
fn compare_autosaves_a_snapshot_under_evals_results() {
    let p = Project::toy();
    let d = p
        .evals(&["compare", "-m", "fake/echo"])
        .ok()
        .redact_run_ids();
    let saved: Vec<_> = std::fs::read_dir(p.path().join("evals/results"))
        .expect("evals/results exists")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(saved.len(), 1, "{saved:?}");
    assert!(saved[0].ends_with(".json") && saved[0].contains("-compare-"));
    d.stderr_is(&format!(
        "{TOY_FOUND}{STORED}saved evals/results/{}\n",
        saved[0]
    ));
}

#[test]
fn run_prints_the_per_case_breakdown() {
    let d = Project::toy()
        .evals(&["run", "-m", "fake/echo", "-d", "animals", "--no-autosave"])
        .exact()
        .ok()
        .redact_run_ids();
    d.stderr_is(&format!("{TOY_FOUND}{STORED}"));
    d.stdout_has("fake/echo [temp 0.1, max 1024] · animals\n");
    for case in ["clear/001", "clear/002", "vague/001", "vague/002"] {
        let row = d.row(case);
        assert_eq!(row[1], "100.0%", "{case}: {row:?}");
        assert_eq!(row.last().unwrap(), "pass", "{case}: {row:?}");
    }
    d.stdout_lacks("colors");
    d.stdout_lacks("fake/parrot");
}

#[test]
fn compare_prints_no_breakdown() {
    let p = Project::toy();
    let run = p.evals(&["run", "-m", "fake/echo", "--no-autosave"]).ok();
    // `run` prints each experiment's breakdown, then the leaderboard (from its first table).
    let at = run
        .stdout
        .find("dataset animals\n")
        .expect("run prints a leaderboard");
    let (breakdown, leaderboard) = run.stdout.split_at(at);
    assert!(breakdown.contains("│ clear/001 "), "{breakdown}");
    // `compare` prints that leaderboard, every line of it, and nothing else.
    p.evals(&["compare", "-m", "fake/echo", "--no-autosave"])
        .exact()
        .ok()
        .redact_run_ids()
        .stdout_is(leaderboard)
        .stdout_lacks("clear/001")
        .stderr_is(&format!("{TOY_FOUND}{STORED}"));
}

#[test]
fn json_snapshot_is_format_1_and_render_reprints_it_without_the_suite() {
    let p = Project::toy();
    let d = p
        .evals(&[
            "compare",
            "-m",
            "fake/echo",
            "--format",
            "json",
            "-o",
            "out.json",
            "--no-autosave",
        ])
        .exact()
        .ok()
        .redact_run_ids();
    d.stderr_is(&format!("{TOY_FOUND}{STORED}wrote out.json\n"));
    let snap: serde_json::Value = serde_json::from_str(&p.read("out.json")).unwrap();
    assert_eq!(snap["format"], 1);
    assert_eq!(snap["run"]["suite"], "toy");
    assert_eq!(snap["experiments"].as_array().unwrap().len(), 2);

    // Render from a folder with no suite at all: nothing is loaded or called.
    let elsewhere = Project::new();
    std::fs::copy(p.path().join("out.json"), elsewhere.path().join("out.json")).unwrap();
    let r = elsewhere.evals(&["render", "out.json"]).exact().ok();
    assert_eq!(r.cell("fake/echo", "field_accuracy"), "100.0%");
    r.stdout_has("dataset animals\n");
    // stderr left unchecked, so empty: no suite found, nothing stored.

    let live = p
        .evals(&["compare", "-m", "fake/echo", "--no-autosave"])
        .ok();
    assert_eq!(
        r.stdout, live.stdout,
        "render re-prints the same leaderboard"
    );
}

#[test]
fn render_of_a_missing_file_names_it() {
    Project::new()
        .evals(&["render", "nope.json"])
        .exact()
        .code(2)
        .stderr_is("error: nope.json: no such file (named by evals render FILE): create it, or point evals render FILE at the file\n");
}

#[test]
fn llm_evals_binary_is_the_same_command() {
    let p = Project::toy();
    let evals = p.evals(&["cases"]).ok();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_llm-evals"))
        .arg("cases")
        .current_dir(p.path())
        .env("NO_COLOR", "1")
        .output_bounded()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap(), evals.stdout);
}

#[test]
fn display_none_prints_no_leaderboard_but_writes_what_was_asked() {
    let p = Project::toy();
    let config = p.read("evals/.llm-evals.config.yml");
    p.write(
        "evals/.llm-evals.config.yml",
        &format!("{config}\nresults: {{ display: none }}\n"),
    );
    p.evals(&["compare", "--no-autosave"])
        .exact()
        .ok()
        .redact_run_ids()
        .stderr_is(&format!("{TOY_FOUND}{TOY_REFUSED}{STORED}"));
    p.evals(&[
        "compare",
        "--no-autosave",
        "--format",
        "json",
        "-o",
        "out.json",
    ])
    .ok();
    assert!(p.read("out.json").contains("\"format\": 1"));
}

#[test]
fn init_writes_a_suite_that_runs_offline_at_once_and_never_overwrites() {
    let p = Project::new();
    p.evals(&["init", "demo"])
        .exact()
        .ok()
        .stdout_is(concat!(
            "a suite with 3 cases and an offline model (fake/oracle, which knows the answers) is ready; try:\n",
            "  cd demo\n",
            "  evals cases\n",
            "  evals compare\n",
            "then add your cases under evals/datasets/ and real models in evals/.llm-evals.config.yml\n",
        ))
        .stderr_is(concat!(
            "wrote demo/evals/.llm-evals.config.yml\n",
            "wrote demo/evals/prompts/system.md\n",
            "wrote demo/evals/datasets/tickets/cases.jsonl\n",
            "wrote demo/.gitignore\n",
        ));
    let demo = p.path().join("demo");
    p.evals(&["verify"])
        .cwd(&demo)
        .exact()
        .ok()
        .stderr_is("suite: demo (evals/.llm-evals.config.yml)\nverified 3 cases: no problems\n");
    let d = p.evals(&["compare", "--no-autosave"]).cwd(&demo).ok();
    assert_eq!(d.cell("fake/oracle", "field_accuracy"), "100.0%");
    // The inputs hold only the tickets: the answers are the cases' `expected`, which only
    // the oracle knows. Echoing the input scores nothing.
    let cases = std::fs::read_to_string(demo.join("evals/datasets/tickets/cases.jsonl")).unwrap();
    for line in cases.lines() {
        let case: serde_json::Value = serde_json::from_str(line).unwrap();
        let input = case["input"].as_str().unwrap();
        assert!(!input.contains('{'), "an input holds its answer: {input}");
    }
    let echo = p
        .evals(&["compare", "--no-autosave", "-m", "fake/echo"])
        .cwd(&demo)
        .output();
    assert_eq!(echo.cell("fake/echo", "field_accuracy"), "0.0%");
    p.evals(&["init", "demo"]).exact().code(2).stderr_is(
        "error: demo/evals/.llm-evals.config.yml: already exists; `evals init` writes a new suite and never overwrites one (pick another folder: `evals init DIR`)\n",
    );
}

#[test]
fn compare_and_render_write_a_standalone_html_report() {
    let p = Project::toy();
    p.evals(&[
        "compare",
        "--no-autosave",
        "--format",
        "json",
        "-o",
        "run.json",
    ])
    .ok();
    p.evals(&[
        "compare",
        "--no-autosave",
        "--format",
        "html",
        "-o",
        "live.html",
    ])
    .ok();
    let d = p
        .evals(&["render", "run.json", "--format", "html", "-o", "again.html"])
        .ok();
    d.stderr_has("wrote again.html");
    for file in ["live.html", "again.html"] {
        let html = p.read(file);
        assert!(html.starts_with("<!doctype html>"), "{file}");
        assert!(html.contains("<h2>dataset animals</h2>") && html.contains("<h2>overall</h2>"));
        // Values are HTML-escaped in the markup (`/` too); the cases are JSON data the
        // page renders.
        assert!(html.contains("fake&#x2f;parrot") && html.contains(r#""c":"clear/001""#));
        assert!(!html.contains("<link") && !html.contains("src=\"http"));
    }
}

#[test]
fn a_case_failing_an_assertion_fails_even_without_thresholds() {
    let p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            "request_types: [prompt]\nscorer: { kind: assertions }\nfake: { models: [echo] }\n",
        )
        .file(
            "evals/datasets/d/cases.jsonl",
            concat!(
                r#"{"id": "js", "input": "reply {\"a\": 1}", "expect": {"json_valid": true, "required_json_keys": ["a", "b"]}}"#,
                "\n",
                r#"{"id": "ok", "input": "reply {\"a\": 1}", "expect": {"json_valid": true}}"#,
                "\n"
            ),
        );
    // `run` gates like `check`: a failed case is a failed threshold, exit 1.
    p.evals(&["run", "--no-autosave", "--format", "json", "-o", "out.json"])
        .exact()
        .code(1)
        .redact_run_ids()
        .stderr_is(&format!(
            "{}{STORED}wrote out.json\nerror: thresholds failed:\n  fake/echo · d · js: fails its thresholds (1 assertion(s) failed)\n",
            p.found()
        ));
    let run: serde_json::Value = serde_json::from_str(&p.read("out.json")).unwrap();
    let cases = &run["experiments"][0]["cases"];
    assert_eq!(cases[0]["case"], "js");
    assert_eq!(cases[0]["passed"], false);
    assert_eq!(cases[0]["failed_thresholds"][0], "1 assertion(s) failed");
    assert_eq!(cases[1]["passed"], true);
    let check = p.evals(&["check", "--no-autosave"]).code(1);
    check.stderr_has("js: fails its thresholds (1 assertion(s) failed)");
    check.stderr_has(&format!(
        "error: evals check: 1 failed threshold in {} (this run, no baseline)\n",
        p.path().file_name().unwrap().to_string_lossy()
    ));
}

#[test]
fn a_case_the_scorer_cannot_judge_refuses_the_run() {
    // fields: a case with no expected.json is not scored as "everything null".
    let p = Project::toy();
    std::fs::remove_file(
        p.path()
            .join("evals/datasets/colors/cases/clear/001/expected.json"),
    )
    .unwrap();
    p.evals(&["compare", "--no-autosave"])
        .exact()
        .code(2)
        .stderr_is(&format!(
            "{TOY_FOUND}{TOY_REFUSED}error: evals/datasets/colors/cases/clear/001/expected.json: expected.json is missing\nfix these first (`evals verify` lists every problem)\n"
        ));
    // The rest of the suite still runs when the broken case is left out.
    p.evals(&["compare", "--no-autosave", "-d", "animals"]).ok();

    // assertions: a bad regex or an unknown assertion is refused, not scored.
    let q = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            "request_types: [prompt]\nscorer: { kind: assertions }\nfake: { models: [echo] }\n",
        )
        .file(
            "evals/datasets/d/cases.jsonl",
            "{\"id\": \"re\", \"input\": \"x\", \"expect\": {\"regex\": \"(abc\"}}\n{\"id\": \"typo\", \"input\": \"x\", \"expect\": {\"containz\": [\"x\"]}}\n",
        );
    // Every problem at once; the regex's own complaint is the regex crate's wording.
    let d = q.evals(&["run", "--no-autosave"]).exact().code(2);
    d.stderr_has(&format!(
        "{}error: evals/datasets/d/cases.jsonl:1: regex \"(abc\": invalid regex: ",
        q.found()
    ));
    d.stderr_has("\nevals/datasets/d/cases.jsonl:2: unknown assertion 'containz' (did you mean 'contains'?)\nfix these first (`evals verify` lists every problem)\n");
}

#[test]
fn a_new_suite_scans_clean_before_it_has_cassettes() {
    let p = Project::new();
    p.evals(&["init"]).ok();
    let suite = format!(
        "suite: {} (evals/.llm-evals.config.yml)\n",
        p.path().file_name().unwrap().to_string_lossy()
    );
    p.evals(&["cassettes", "scan"])
        .exact()
        .ok()
        .stderr_is(&format!(
            "{suite}no cassettes yet in evals/cassettes: nothing to scan\n"
        ));
}

#[test]
fn totals_variant_compares_each_case_folder_across_datasets() {
    let p = Project::toy();
    let d = p
        .evals(&["compare", "--no-autosave", "--local", "--totals", "variant"])
        .ok();
    d.stdout_has("\nvariant clear\n")
        .stdout_has("\nvariant vague\n");
    d.stdout_lacks("\noverall\n");
    let both = p
        .evals(&["compare", "--no-autosave", "--totals", "both"])
        .ok();
    both.stdout_has("\nvariant vague\n")
        .stdout_has("\noverall\n");
    let default = p.evals(&["compare", "--no-autosave"]).ok();
    default
        .stdout_lacks("variant clear")
        .stdout_has("\noverall\n");
}

#[test]
fn both_binaries_say_their_version_and_complete_their_own_name() {
    let version = env!("CARGO_PKG_VERSION");
    let p = Project::new();
    for argv in [&["-V"][..], &["version"]] {
        p.evals(argv)
            .exact()
            .ok()
            .stdout_is(&format!("evals {version}\n"));
    }
    let llm = std::process::Command::new(env!("CARGO_BIN_EXE_llm-evals"))
        .arg("-V")
        .output_bounded()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&llm.stdout),
        format!("llm-evals {version}\n")
    );
    for shell in ["bash", "zsh", "fish"] {
        let d = p.evals(&["completion", shell]).ok();
        assert!(
            d.stdout.contains("evals") && d.stdout.contains("compare"),
            "{shell}"
        );
    }
}

#[test]
fn weights_prints_each_columns_direction_and_real_share() {
    let d = Project::toy().evals(&["weights"]).exact().ok();
    d.stderr_is(TOY_FOUND).stdout_has("│ column ");
    // The toy suite weighs score 5, exact 3, errors -4, cost -1: 13 in all.
    assert!(d.row("score").contains(&"↑ higher is better".to_string()));
    assert_eq!(d.cell("score", "share"), "38.5%");
    assert_eq!(d.cell("errors", "share"), "30.8%");
    assert!(d.row("cost").contains(&"↓ lower is better".to_string()));
    assert_eq!(d.cell("restraint", "weight"), "-");
    let none = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            "request_types: [prompt]\nscorer: { kind: assertions }\nfake: { models: [echo] }\n",
        )
        .evals(&["weights"])
        .exact()
        .code(2);
    none.stderr_has("has no weighted_score: add `weighted_score:");
}

#[test]
fn run_n_shows_the_matrix_and_calls_nothing() {
    let p = Project::toy();
    p.evals(&["run", "-n", "-m", "fake/echo", "-j", "2"])
        .exact()
        .ok()
        .stdout_is(concat!(
            "┌───────────┬──────────┬─────────┬──────┬────────────┬────────────┬─────────┬────────┬───────┐\n",
            "│ model     ┆ provider ┆ effort  ┆ temp ┆ max_tokens ┆ $/M in/out ┆ animals ┆ colors ┆ calls │\n",
            "╞═══════════╪══════════╪═════════╪══════╪════════════╪════════════╪═════════╪════════╪═══════╡\n",
            "│ fake/echo ┆ fake     ┆ default ┆ 0.1  ┆       1024 ┆       free ┆       4 ┆      4 ┆     8 │\n",
            "└───────────┴──────────┴─────────┴──────┴────────────┴────────────┴─────────┴────────┴───────┘\n",
            "1 contender × 2 datasets = 2 experiments, 8 calls (2 at a time, 4 cases in flight each); nothing was called\n",
        ))
        .stderr_is(TOY_FOUND);
    assert!(
        !p.path().join("evals/results").exists(),
        "nothing ran, nothing saved"
    );
}

#[test]
fn the_branch_comes_from_ci_variables_first_and_a_history_failure_only_warns() {
    let p = Project::toy();
    let d = p
        .evals(&[
            "compare",
            "--no-autosave",
            "--format",
            "json",
            "-o",
            "r.json",
        ])
        .env("GITHUB_HEAD_REF", "feature-x")
        .env("GITHUB_SHA", "0123456789abcdef")
        .ok();
    d.stderr_has("stored run");
    let run: serde_json::Value = serde_json::from_str(&p.read("r.json")).unwrap();
    assert_eq!(run["run"]["branch"], "feature-x");
    assert_eq!(run["run"]["commit"], "0123456789abcdef");
    // A history that cannot be written loses nothing else.
    p.write("blocker", "a file where the history folder would be");
    let d = p
        .evals(&[
            "compare",
            "--history",
            "blocker/h.sqlite3",
            "--format",
            "json",
            "-o",
            "r2.json",
        ])
        .ok();
    d.stderr_has("warning: could not store the run in the history");
    assert!(p.read("r2.json").contains("\"format\": 1"));
}
