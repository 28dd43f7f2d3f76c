//! TypeSafe as the llm-evals seed describes it: a direct provider (`typesafe:`, request type
//! `typesafe`) shipped with its model list and pricing, needing `TYPESAFE_API_KEY`, whose
//! calls say there is no typesafe consumer yet.

use crate::harness::Project;

/// A suite that declares `request_types: [typesafe]`, so its typesafe contender is admitted.
fn typesafe_suite(models: &str) -> Project {
    Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "suite: ts\nrequest_types: [typesafe]\nscorer: {{ kind: assertions }}\ntypesafe:\n  models: {models}\n"
            ),
        )
        .file(
            "evals/datasets/d/cases.jsonl",
            "{\"id\": \"q\", \"input\": \"Is this message safe?\", \"expect\": {\"min_chars\": 1}}\n",
        )
}

#[test]
fn an_unknown_typesafe_model_is_a_config_error_naming_the_known_ones() {
    let p = Project::toy();
    let config = p.read("evals/.llm-evals.config.yml");
    let with = |models: &str| config.replace("models: [jev-latest]", models);
    p.write(
        "evals/.llm-evals.config.yml",
        &with("models: [jev-lastest]"),
    );
    p.evals(&["cases"]).code(2).stderr_has(
        "error: evals/.llm-evals.config.yml: typesafe/jev-lastest: the typesafe provider has the models jev-latest and jev-preview; there is no 'jev-lastest' (did you mean 'jev-latest'?)",
    );
    // The catalog's models load (and are refused by this prompt suite, never scored).
    p.write(
        "evals/.llm-evals.config.yml",
        &with("models: [jev-latest, jev-preview]"),
    );
    p.evals(&["cases"])
        .ok()
        .stdout_has("typesafe/jev-preview refused: needs typesafe; this suite produces prompt");
    // Jev on OpenRouter is an OpenRouter model: the TypeSafe catalog does not apply to it.
    p.write(
        "evals/.llm-evals.config.yml",
        &format!("{config}\nopenrouter:\n  vendors:\n    typesafe:\n      models: [jev-router]\n"),
    );
    p.evals(&["cases"]).ok();
    // Named with -m, an unknown model is refused the same way (bad usage).
    typesafe_suite("[jev-latest]")
        .evals(&["run", "-m", "typesafe/jev-9", "--no-autosave"])
        .code(2)
        .stderr_has("typesafe/jev-9: the typesafe provider has the models jev-latest and jev-preview; there is no 'jev-9'");
}

#[test]
fn a_typesafe_contender_needs_its_key_and_each_call_says_there_is_no_consumer_yet() {
    let p = typesafe_suite("[jev-latest]");
    for command in ["run", "check"] {
        p.evals(&[command, "--no-autosave"]).code(2).stderr_has(
            "error: TYPESAFE_API_KEY is not set: typesafe/jev-latest needs it (export TYPESAFE_API_KEY=...)",
        );
    }
    let d = p
        .evals(&["run", "--no-autosave"])
        .env("TYPESAFE_API_KEY", "ts-test-key")
        .code(1);
    assert_eq!(d.row("q").last().unwrap(), "error");
    d.stdout_has("q error: typesafe/jev-latest: no typesafe consumer yet");
    d.stderr_has("1 case errored");
}

#[test]
fn the_matrix_shows_typesafe_pricing_shipped_in_the_binary() {
    let p = typesafe_suite("[jev-latest, jev-preview]");
    let d = p.evals(&["compare", "-n"]).ok();
    // Dollars per million tokens: TypeSafe bills input only.
    assert_eq!(d.cell("typesafe/jev-latest", "$/M in/out"), "0.042/0");
    assert_eq!(d.cell("typesafe/jev-preview", "$/M in/out"), "0.042/0");
    // The suite's own `pricing:` beats it.
    let config = p.read("evals/.llm-evals.config.yml");
    p.write(
        "evals/.llm-evals.config.yml",
        &format!("{config}pricing:\n  typesafe/jev-preview: {{ input: 0.05, output: 0.01 }}\n"),
    );
    let d = p.evals(&["compare", "-n"]).ok();
    assert_eq!(d.cell("typesafe/jev-preview", "$/M in/out"), "0.05/0.01");
    assert_eq!(d.cell("typesafe/jev-latest", "$/M in/out"), "0.042/0");
}
