//! `-v/--verbose`: one `verbose:` line each on stderr for the suite file and why, the project,
//! the cassette mode and why, each key's source (its name, never its value), the history.

use crate::harness::{MINI_CASES, Project, mini_at, mini_config};

fn verbose_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("verbose: "))
        .collect()
}

#[test]
fn verbose_says_which_suite_file_and_why_the_mode_and_the_history() {
    let p = mini_at(Project::new(), "", "v");
    let sub = p.path().join("evals/datasets");
    let d = p.evals(&["compare", "-v", "--no-autosave"]).cwd(&sub).ok();
    let root = p.path().display().to_string();
    assert_eq!(
        verbose_lines(&d.stderr),
        [
            format!(
                "verbose: suite file: {root}/evals/.llm-evals.config.yml (found searching upward from the working directory, 1 folder(s) up)"
            ),
            "verbose: project: none (no project: in the config)".to_string(),
            "verbose: cassettes: auto (the default of `compare`)".to_string(),
            "verbose: tracker: local only (no tracker's key is set: BRAINTRUST_API_KEY, LOGFIRE_TOKEN)".to_string(),
            format!(
                "verbose: history: {root}/.evals/history.sqlite3 (the default, <project>/.evals/history.sqlite3)"
            ),
        ]
    );
    // Without -v, none of it.
    let quiet = p.evals(&["compare", "--no-autosave"]).ok();
    assert!(verbose_lines(&quiet.stderr).is_empty(), "{}", quiet.stderr);
}

#[test]
fn verbose_names_the_mode_source_and_the_ci_rule() {
    let p = mini_at(Project::new(), "", "v");
    let d = p
        .evals(&["-v", "compare", "--no-autosave"])
        .env("CI", "true")
        .ok();
    d.stderr_has("verbose: cassettes: replay (the default of `compare` is auto, which acts as replay because CI is set)\n");
    let d = p
        .evals(&["-v", "compare", "--no-autosave"])
        .env("EVALS_CASSETTES", "replay")
        .ok();
    d.stderr_has("verbose: cassettes: replay (EVALS_CASSETTES=replay)\n");
    let d = p
        .evals(&[
            "-v",
            "compare",
            "--no-autosave",
            "--cassettes",
            "replay",
            "--history",
            "h.sqlite3",
        ])
        .ok();
    d.stderr_has("verbose: cassettes: replay (--cassettes replay)\n")
        .stderr_has("verbose: history: h.sqlite3 (--history)\n");
}

#[test]
fn verbose_says_where_each_key_was_found_never_its_value() {
    let p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "{}project: my-evals\nenv_files: [../.env]\nlocal:\n  base_url: http://127.0.0.1:9/v1\n  api_key_env: LOCAL_KEY\n  models: [m]\nopenrouter:\n  vendors:\n    openai:\n      models: [gpt-4o-mini]\n",
                mini_config("v")
            ),
        )
        .file("evals/datasets/d/cases.jsonl", MINI_CASES)
        .file(".env", "LOCAL_KEY=sk-local-secret-value-123456\n");
    let d = p
        .evals(&["-v", "-C", "evals/.llm-evals.config.yml", "compare", "-n"])
        .env("OPENROUTER_API_KEY", "sk-or-v1-abcdefabcdefabcdef")
        .ok();
    // -n calls nothing and reads no key; a real run does.
    d.stderr_has(
        "verbose: suite file: evals/.llm-evals.config.yml (named by -C/--config, no search)\n",
    )
    .stderr_has("verbose: project: my-evals (project: in the config; kept with each run)\n");
    let d = p
        .evals(&["-v", "compare", "--no-autosave", "--cassettes", "replay"])
        .env("OPENROUTER_API_KEY", "sk-or-v1-abcdefabcdefabcdef")
        .output();
    d.stderr_has("verbose: key LOCAL_KEY: found in env_files (../.env) (for local/m)\n")
        .stderr_has(
            "verbose: key OPENROUTER_API_KEY: found in the environment (for openai/gpt-4o-mini)\n",
        )
        .stderr_lacks("sk-local-secret")
        .stderr_lacks("sk-or-v1-abc");
}
