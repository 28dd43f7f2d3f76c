//! Finding the suite: upward, then down up to 4 levels; `-C` and `--no-search`.

use crate::harness::{Project, mini_at};

#[test]
fn found_upward_from_a_nested_folder() {
    let p = mini_at(Project::new(), "", "up").dir("src/deep");
    let d = p.evals(&["cases"]).cwd(p.path().join("src/deep")).ok();
    assert!(
        d.first_stderr_line().starts_with("suite: up ("),
        "{}",
        d.stderr
    );
    assert!(
        d.first_stderr_line()
            .ends_with("evals/.llm-evals.config.yml)"),
        "{}",
        d.stderr
    );
    d.stdout_has("1 case in 1 dataset");
}

#[test]
fn first_stderr_line_names_the_suite_and_file() {
    let p = mini_at(Project::new(), "", "named");
    let d = p.evals(&["cases"]).ok();
    assert_eq!(
        d.first_stderr_line(),
        "suite: named (evals/.llm-evals.config.yml)"
    );
}

#[test]
fn found_downward_four_levels_below() {
    let p = mini_at(Project::new(), "a/b/c/", "deep4");
    let d = p.evals(&["cases"]).ok();
    assert_eq!(
        d.first_stderr_line(),
        "suite: deep4 (a/b/c/evals/.llm-evals.config.yml)"
    );
}

#[test]
fn not_found_five_levels_below() {
    let p = mini_at(Project::new(), "a/b/c/d/", "deep5");
    let d = p.evals(&["cases"]).code(2);
    d.stderr_has("no suite found");
    d.stderr_lacks("deep5");
}

#[test]
fn shallowest_suite_wins_downward() {
    let p = mini_at(Project::new(), "z/", "shallow");
    let p = mini_at(p, "a/b/", "deeper");
    let d = p.evals(&["cases"]).ok();
    assert_eq!(
        d.first_stderr_line(),
        "suite: shallow (z/evals/.llm-evals.config.yml)"
    );
}

#[test]
fn downward_search_skips_node_modules_target_and_hidden_folders() {
    for skipped in ["node_modules/pkg/", "target/", ".hidden/"] {
        let p = mini_at(Project::new(), skipped, "skipped");
        let d = p.evals(&["cases"]).code(2);
        d.stderr_has("no suite found");
        // A visible one beside it, deeper, is found instead.
        let p = mini_at(p, "x/y/", "visible");
        let d = p.evals(&["cases"]).ok();
        assert_eq!(
            d.first_stderr_line(),
            "suite: visible (x/y/evals/.llm-evals.config.yml)",
            "with {skipped}"
        );
    }
}

#[test]
fn config_flag_skips_the_search() {
    let p = mini_at(Project::new(), "", "near");
    let p = mini_at(p, "other/", "far");
    let d = p
        .evals(&["-C", "other/evals/.llm-evals.config.yml", "cases"])
        .ok();
    assert!(
        d.first_stderr_line().starts_with("suite: far ("),
        "{}",
        d.stderr
    );
}

#[test]
fn config_flag_with_a_missing_file_is_a_usage_error() {
    let p = mini_at(Project::new(), "", "near");
    p.evals(&["-C", "nope.yml", "cases"])
        .code(2)
        .stderr_has("nope.yml: no such config file");
}

#[test]
fn no_search_fails_when_the_config_is_not_in_dot_evals() {
    let p = mini_at(Project::new(), "sub/", "sub");
    let d = p.evals(&["--no-search", "cases"]).code(2);
    d.stderr_has("--no-search is set");
    assert_eq!(d.stdout, "");
    // The same project is found without the flag.
    p.evals(&["cases"]).ok();
    // And with it, from the folder holding evals/.
    p.evals(&["--no-search", "cases"])
        .cwd(p.path().join("sub"))
        .ok();
}
