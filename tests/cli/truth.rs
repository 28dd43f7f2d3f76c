//! Issue 11, "the comment tells the truth, at any size": a 300-case suite × 3 contenders
//! whose prompt template changed, replayed: every case runs and errors (a replay never
//! pauses on misses), the one request change is shown once, and the comment stays under
//! GitHub's limit naming every contender.

use std::process::Command;

use serde_json::json;

use crate::harness::Project;
use crate::mock::{Server, chat, post};

const CASES: usize = 300;
const MODELS: [&str; 3] = ["m1", "m2", "m3"];

fn config(uri: &str, system: &str) -> String {
    format!(
        "suite: big\nrequest_types: [prompt]\nadapter:\n  kind: prompt\n  system: \"{system}\"\n  user: \"{{{{ input }}}}\"\n  json: true\nscorer:\n  kind: fields\n  schema:\n    a: string\nminimum_scores: {{ field_accuracy: 0.8 }}\nlocal:\n  base_url: {uri}/v1\n  models: [{}]\n",
        MODELS.join(", ")
    )
}

fn git(p: &Project, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(p.path())
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}");
}

fn commit(p: &Project, msg: &str) {
    git(p, &["add", "-A"]);
    git(p, &["commit", "-q", "--allow-empty", "-m", msg]);
}

/// Records the 300 cases of each contender on `main`, checks them there (the baseline),
/// then edits the system prompt on `feature`: every request now misses.
fn prompt_changed() -> (Server, Project) {
    let server = Server::start();
    server.mount(post("/v1/chat/completions").respond_with(chat(
        r#"{"a": "alpha"}"#,
        json!({"prompt_tokens": 10, "completion_tokens": 5}),
    )));
    let cases: String = (0..CASES)
        .map(|i| format!("{}\n", json!({"id": format!("c{i:03}"), "input": format!("Case {i}."), "expected": {"a": "alpha"}})))
        .collect();
    let p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &config(&server.uri(), "Answer in JSON."),
        )
        .file("evals/datasets/d/cases.jsonl", &cases)
        .file(".gitignore", ".evals/\nevals/results/\n");
    git(&p, &["init", "-q"]);
    git(&p, &["checkout", "-q", "-b", "main"]);
    p.evals(&["record", "-p", "8"]).ok();
    commit(&p, "cassettes");
    p.evals(&["check"]).ok();
    git(&p, &["checkout", "-q", "-b", "feature"]);
    p.write(
        "evals/.llm-evals.config.yml",
        &config(&server.uri(), "Answer in JSON, briefly."),
    );
    commit(&p, "new prompt");
    (server, p)
}

#[test]
fn a_prompt_change_that_misses_every_cassette_runs_every_case_and_says_it_once() {
    let (server, p) = prompt_changed();
    let before = server.hits();
    let d = p
        .evals(&[
            "check",
            "--baseline",
            "main",
            "-p",
            "8",
            "--markdown",
            "pr.md",
            "--diff",
            "pr.diff",
            "--junit",
            "junit.xml",
            "--json",
            "run.json",
        ])
        .code(1);
    assert_eq!(server.hits(), before, "a replay makes no call");
    // Never paused, never stopped: every case ran and errored.
    d.stderr_lacks("in a row failed");
    let run: serde_json::Value = serde_json::from_str(&p.read("run.json")).unwrap();
    assert_eq!(run["run"]["status"], "completed");
    let total = CASES * MODELS.len();
    let ran: usize = run["experiments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["cases"].as_array().unwrap().len())
        .sum();
    assert_eq!(ran, total);
    let md = p.read("pr.md");
    assert_eq!(
        md.lines().next().unwrap(),
        "**evals check: 900 errors** in big (main → feature)"
    );
    assert!(md.len() < 65_536, "{} chars", md.len());
    for m in MODELS {
        assert!(md.contains(&format!("local/{m}")), "{m} unnamed\n{md}");
    }
    assert!(
        !md.contains("### Declined, new"),
        "nothing is new or removed\n{md}"
    );
    // The request change is shown once, with the cases it hit and a hint per contender.
    assert_eq!(md.matches("briefly").count(), 1, "{md}");
    for m in MODELS {
        assert!(md.contains(&format!("`evals record -m local/{m}`")), "{md}");
    }
    let diff = p.read("pr.diff");
    assert_eq!(diff.matches("briefly").count(), 1, "{diff}");
    assert_eq!(
        d.stderr.matches("briefly").count(),
        1,
        "the terminal repeats the miss diff ({} lines)",
        d.stderr.lines().count()
    );
    assert!(d.stderr.lines().count() < 60, "{}", d.stderr);
}
