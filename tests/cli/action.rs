//! The repository's GitHub Action (`action.yml`): actionlint lints workflows, not actions,
//! so its shape is checked here: the inputs a workflow may pass, a composite run whose every
//! `run` step names its shell, and every `inputs.X` and `steps.Y` it refers to declared.
//! And the README's example workflow is the file `.ci/run` lints.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

fn repo_file(rel: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
}

fn action() -> Value {
    serde_saphyr::from_str::<Value>(&repo_file("action.yml")).expect("action.yml is YAML")
}

/// `${{ ... }}` references `prefix.NAME` in `text`.
fn refs(text: &str, prefix: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find(prefix) {
        rest = &rest[i + prefix.len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect();
        names.insert(name);
    }
    names
}

#[test]
fn the_action_is_composite_with_the_documented_inputs_and_defaults() {
    let a = action();
    assert_eq!(a["runs"]["using"], "composite");
    let inputs = a["inputs"].as_object().expect("inputs");
    for (name, default) in [
        ("baseline", Some("main")),
        ("tolerance", Some("0.02")),
        ("args", None),
        ("working-directory", Some(".")),
        ("comment", Some("true")),
        ("version", None),
    ] {
        let input = inputs
            .get(name)
            .unwrap_or_else(|| panic!("no input {name}"));
        assert!(
            input["description"].is_string(),
            "input {name}: no description"
        );
        if let Some(d) = default {
            assert_eq!(input["default"].as_str(), Some(d), "input {name}'s default");
        }
    }
}

#[test]
fn every_action_step_runs_a_shell_or_uses_an_action_and_refers_to_what_exists() {
    let a = action();
    let steps = a["runs"]["steps"].as_array().expect("runs.steps");
    let mut ids = BTreeSet::new();
    for (i, s) in steps.iter().enumerate() {
        let run = s.get("run").is_some();
        let uses = s.get("uses").is_some();
        assert!(run != uses, "step {i}: exactly one of run and uses\n{s:#}");
        if run {
            assert!(
                s["shell"].is_string(),
                "step {i} runs without a shell\n{s:#}"
            );
        }
        if let Some(id) = s["id"].as_str() {
            // A step refers only to the steps before it.
            let text = s.to_string();
            for r in refs(&text, "steps.") {
                assert!(
                    ids.contains(&r),
                    "step {i} refers to steps.{r} before it exists"
                );
            }
            ids.insert(id.to_string());
        } else {
            for r in refs(&s.to_string(), "steps.") {
                assert!(ids.contains(&r), "step {i} refers to unknown steps.{r}");
            }
        }
    }
    let text = repo_file("action.yml");
    let inputs = a["inputs"].as_object().unwrap();
    for r in refs(&text, "inputs.") {
        assert!(
            inputs.contains_key(&r),
            "action.yml uses undeclared inputs.{r}"
        );
    }
    for (name, o) in a["outputs"].as_object().expect("outputs") {
        for r in refs(&o.to_string(), "steps.") {
            assert!(
                ids.contains(&r),
                "output {name} refers to unknown steps.{r}"
            );
        }
    }
}

/// The step that `uses` an action whose name starts with `action`.
fn uses<'a>(steps: &'a [Value], action: &str) -> &'a Value {
    steps
        .iter()
        .find(|s| s["uses"].as_str().is_some_and(|u| u.starts_with(action)))
        .unwrap_or_else(|| panic!("no step uses {action}"))
}

#[test]
fn the_history_comes_from_the_baselines_cache_and_is_saved_there_even_on_failure() {
    let a = action();
    let steps = a["runs"]["steps"].as_array().unwrap();
    let restore = uses(steps, "actions/cache/restore@");
    let save = uses(steps, "actions/cache/save@");
    let prefix = "evals-history-${{ steps.plan.outputs.slug }}-${{ inputs.baseline }}-";
    assert_eq!(restore["with"]["restore-keys"], prefix);
    assert!(save["with"]["key"].as_str().unwrap().starts_with(prefix));
    assert_eq!(restore["with"]["path"], save["with"]["path"]);
    let when = save["if"].as_str().unwrap();
    assert!(when.starts_with("always()"), "{when}");
    assert!(
        when.contains("github.event_name != 'pull_request'"),
        "{when}"
    );
    assert!(
        when.contains("format('refs/heads/{0}', inputs.baseline)"),
        "{when}"
    );
    let check = steps
        .iter()
        .find(|s| s["id"] == "check")
        .expect("check step");
    let script = check["run"].as_str().unwrap();
    for flag in [
        "--junit",
        "--markdown",
        "--html",
        "--json",
        "--baseline",
        "--tolerance",
    ] {
        assert!(script.contains(flag), "check lacks {flag}");
    }
    let artifacts = uses(steps, "actions/upload-artifact@");
    assert!(artifacts["if"].as_str().unwrap().contains("always()"));
    let comment = steps
        .iter()
        .find(|s| {
            s["run"]
                .as_str()
                .is_some_and(|r| r.contains("evals comment"))
        })
        .expect("a comment step");
    assert!(
        comment["if"]
            .as_str()
            .unwrap()
            .contains("github.event_name == 'pull_request'")
    );
    assert!(comment["run"].as_str().unwrap().contains("fork"));
    // The verdict comes last, after the comment and the save.
    let last = steps.last().unwrap();
    assert_eq!(last["if"], "always()");
    assert!(last["run"].as_str().unwrap().starts_with("exit "));
    assert!(
        last["env"]["CODE"]
            .as_str()
            .unwrap()
            .contains("steps.check.outputs.exit-code")
    );
}

#[test]
fn the_readmes_example_workflow_is_the_linted_file_and_ci_uses_the_action() {
    let example = repo_file("docs/example-workflow.yml");
    let readme = repo_file("README.md");
    assert!(
        readme.contains(&format!("```yaml\n{example}```")),
        "README.md must quote docs/example-workflow.yml as it is (it is what .ci/run lints)"
    );
    let ci: Value = serde_saphyr::from_str(&repo_file(".github/workflows/ci.yml")).unwrap();
    let steps = ci["jobs"]["evals"]["steps"].as_array().unwrap();
    let gate = uses(steps, "./");
    assert_eq!(gate["with"]["working-directory"], "fixtures/tax-intake");
}

#[test]
fn shards_run_their_slice_upload_it_and_the_merging_job_gates_the_whole_run() {
    let a = action();
    let inputs = a["inputs"].as_object().unwrap();
    assert_eq!(inputs["shards"]["default"], "");
    assert_eq!(inputs["merge"]["default"], "false");
    let steps = a["runs"]["steps"].as_array().unwrap();
    let plan = steps.iter().find(|s| s["id"] == "plan").unwrap();
    let script = plan["run"].as_str().unwrap();
    // K is the job's place in the matrix, and the matrix must have N jobs.
    assert!(script.contains("mode=shard shard=\"$((${JOB_INDEX:-0} + 1))/$SHARDS\""));
    assert!(script.contains("\"${JOB_TOTAL:-1}\" != \"$SHARDS\""));
    assert_eq!(plan["env"]["JOB_TOTAL"], "${{ strategy.job-total }}");
    let check = steps.iter().find(|s| s["id"] == "check").unwrap();
    let script = check["run"].as_str().unwrap();
    assert!(script.contains("evals check --shard \"$SHARD\" --json \"$OUT/$SHARD_FILE\""));
    assert!(script.contains("evals merge \"$OUT\"/shards/*.json --baseline \"$BASELINE\""));
    // Each shard's JSON goes up under one pattern, and the merging job takes them all.
    let up = steps
        .iter()
        .find(|s| s["name"] == "Upload the shard for the merge")
        .expect("shard upload");
    assert!(up["if"].as_str().unwrap().contains("mode == 'shard'"));
    let name = up["with"]["name"].as_str().unwrap();
    let down = uses(steps, "actions/download-artifact@");
    assert!(down["if"].as_str().unwrap().contains("mode == 'merge'"));
    let pattern = down["with"]["pattern"].as_str().unwrap();
    assert!(
        name.starts_with(pattern.trim_end_matches('*')),
        "{name} vs {pattern}"
    );
    assert_eq!(down["with"]["merge-multiple"], true);
    // Only the merged run comments and becomes the baseline branch's history.
    for step in [
        uses(steps, "actions/cache/save@"),
        steps
            .iter()
            .find(|s| {
                s["run"]
                    .as_str()
                    .is_some_and(|r| r.contains("evals comment"))
            })
            .unwrap(),
    ] {
        assert!(
            step["if"].as_str().unwrap().contains("mode != 'shard'"),
            "{step:#}"
        );
    }
}

#[test]
fn the_readmes_sharded_workflow_is_the_linted_file_and_matches_the_action() {
    let example = repo_file("docs/example-sharded-workflow.yml");
    assert!(
        repo_file("docs/src/sharding.md").contains(&format!("```yaml\n{example}```")),
        "docs/src/sharding.md must quote docs/example-sharded-workflow.yml as it is (it is what .ci/run lints)"
    );
    assert!(repo_file(".ci/run").contains("docs/example-sharded-workflow.yml"));
    let w: Value = serde_saphyr::from_str(&example).unwrap();
    let n = w["jobs"]["shard"]["strategy"]["matrix"]["shard"]
        .as_array()
        .unwrap()
        .len();
    let with = |job: &str| {
        let steps = w["jobs"][job]["steps"].as_array().unwrap();
        uses(steps, "OWNER/llm-evals@")["with"].clone()
    };
    assert_eq!(with("shard")["shards"].as_u64(), Some(n as u64));
    assert_eq!(with("evals")["shards"].as_u64(), Some(n as u64));
    assert_eq!(with("evals")["merge"], true);
    assert_eq!(w["jobs"]["evals"]["needs"], "shard");
}

#[test]
fn the_books_nightly_workflow_is_the_linted_file_and_keeps_one_issue() {
    let example = repo_file("docs/example-nightly-workflow.yml");
    assert!(
        repo_file("docs/src/gate.md").contains(&format!("```yaml\n{example}```")),
        "docs/src/gate.md must quote docs/example-nightly-workflow.yml as it is (it is what .ci/run lints)"
    );
    assert!(repo_file(".ci/run").contains("docs/example-nightly-workflow.yml"));
    let w: Value = serde_saphyr::from_str(&example).unwrap();
    assert_eq!(w["permissions"]["issues"], "write");
    let run = w["jobs"]["nightly"]["steps"][2]["run"].as_str().unwrap();
    assert!(
        run.contains("evals comment nightly.md --issue \"evals nightly\" --close"),
        "{run}"
    );
    assert!(
        run.contains("1) evals comment nightly.md --issue \"evals nightly\" ;;"),
        "{run}"
    );
}
