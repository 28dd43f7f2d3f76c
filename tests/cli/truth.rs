//! Issue 11, "the comment tells the truth, at any size": a 300-case suite × 3 contenders
//! whose prompt template changed, replayed: every case runs and errors (a replay never
//! pauses on misses), the one request change is shown once, and the comment stays under
//! GitHub's limit naming every contender.

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
    p.git(args);
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

/// A two-case suite on `main` (cases `steady` and `prose`, the model answering JSON), its
/// cassettes recorded and checked there; then `feature`, where the model answers `prose`
/// with `said` (no JSON), re-recorded.
fn prose_on_feature(said: &str) -> (Server, Project) {
    let server = Server::start();
    let answer = |server: &Server, prose: &str| {
        server.reset();
        for (needle, content) in [
            ("Case steady.", r#"{"a": "alpha"}"#),
            ("Case prose.", prose),
        ] {
            server.mount(
                post("/v1/chat/completions")
                    .and(wiremock::matchers::body_string_contains(needle))
                    .respond_with(chat(
                        content,
                        json!({"prompt_tokens": 10, "completion_tokens": 5}),
                    )),
            );
        }
    };
    let cases: String = ["steady", "prose"]
        .iter()
        .map(|id| {
            format!(
                "{}\n",
                json!({"id": id, "input": format!("Case {id}."), "expected": {"a": "alpha"}})
            )
        })
        .collect();
    let p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &config(&server.uri(), "Answer in JSON.").replace("suite: big", "suite: prose"),
        )
        .file("evals/datasets/d/cases.jsonl", &cases)
        .file(".gitignore", ".evals/\nevals/results/\n");
    git(&p, &["init", "-q"]);
    git(&p, &["checkout", "-q", "-b", "main"]);
    answer(&server, r#"{"a": "alpha"}"#);
    p.evals(&["record", "-m", "local/m1"]).ok();
    commit(&p, "cassettes");
    p.evals(&["check", "-m", "local/m1"]).ok();
    git(&p, &["checkout", "-q", "-b", "feature"]);
    answer(&server, said);
    p.evals(&["record", "-m", "local/m1"]).output();
    commit(&p, "prose");
    (server, p)
}

#[test]
fn a_reply_that_is_not_json_shows_what_the_model_said_in_every_report() {
    let (_server, p) = prose_on_feature("Sure! It is blue.");
    let said = "Sure! It is blue.";
    let d = p
        .evals(&[
            "check",
            "-m",
            "local/m1",
            "--baseline",
            "main",
            "--markdown",
            "pr.md",
            "--diff",
            "pr.diff",
        ])
        .code(1);
    // The terminal: the verdict's reason for the case says what the model said.
    let reason = d
        .stderr
        .lines()
        .find(|l| l.contains("· prose:"))
        .unwrap_or_else(|| panic!("no reason for prose\n{}", d.stderr));
    assert!(
        reason.contains(&format!("the model said: \"{said}\"")),
        "{reason}"
    );
    assert!(reason.contains("reply unusable (not JSON"), "{reason}");
    // The Markdown: the case's row in the regressions says it.
    let md = p.read("pr.md");
    let row = md
        .lines()
        .find(|l| l.starts_with("| local/m1 | d | `prose` | regressed |"))
        .unwrap_or_else(|| panic!("no row for prose\n{md}"));
    assert!(row.contains(said), "{row}");
    // The diff: what the model said replaces the baseline's output.
    let diff = p.read("pr.diff");
    assert!(diff.contains(&format!("+{said}")), "{diff}");
    assert!(diff.contains("# reply unusable (not JSON"), "{diff}");
    // `run`'s breakdown says it under the case's table.
    let r = p.evals(&["run", "-m", "local/m1", "--no-autosave"]).code(1);
    assert!(
        r.stdout.contains("prose reply unusable (not JSON") && r.stdout.contains(said),
        "{}",
        r.stdout
    );
}

#[test]
fn a_long_prose_reply_is_shown_on_one_line_cut_and_escaped_for_markdown() {
    let long = format!("Sure! <b>@octocat</b> *it* is\n\nblue. {}", "x".repeat(300));
    let (_server, p) = prose_on_feature(&long);
    let d = p
        .evals(&[
            "check",
            "-m",
            "local/m1",
            "--baseline",
            "main",
            "--markdown",
            "pr.md",
        ])
        .code(1);
    let reason = d
        .stderr
        .lines()
        .find(|l| l.contains("· prose:"))
        .unwrap_or_else(|| panic!("{}", d.stderr));
    let shown = reason.split("the model said: \"").nth(1).unwrap();
    assert!(
        shown.starts_with("Sure! <b>@octocat</b> *it* is blue. xxx"),
        "{reason}"
    );
    assert!(shown.ends_with("…\""), "{reason}");
    assert_eq!(shown.chars().count(), 200 + 2, "{shown}");
    let md = p.read("pr.md");
    let row = md
        .lines()
        .find(|l| l.starts_with("| local/m1 | d | `prose` | regressed |"))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(
        row.contains("Sure! &lt;b&gt;@&#8203;octocat&lt;/b&gt; \\*it\\* is blue. xxx"),
        "{row}"
    );
    assert!(!row.contains("<b>"), "{row}");
    // The diff, inside its fence (where nothing is HTML), has the whole answer.
    assert!(md.contains(&format!("+blue. {}", "x".repeat(300))), "{md}");
}

/// Ten cases on `main`, recorded (the model answering JSON) and checked there; then
/// `feature`, where `errors.abort_after: { total: 2 }` is set and the model refuses every
/// call with a 400.
fn stops_on_feature() -> (Server, Project) {
    let server = Server::start();
    server.mount(post("/v1/chat/completions").respond_with(chat(
        r#"{"a": "alpha"}"#,
        json!({"prompt_tokens": 10, "completion_tokens": 5}),
    )));
    let cases: String = (0..10)
        .map(|i| format!("{}\n", json!({"id": format!("c{i:02}"), "input": format!("Case {i}."), "expected": {"a": "alpha"}})))
        .collect();
    let base = config(&server.uri(), "Answer in JSON.").replace("suite: big", "suite: stops");
    let p = Project::new()
        .file("evals/.llm-evals.config.yml", &base)
        .file("evals/datasets/d/cases.jsonl", &cases)
        .file(".gitignore", ".evals/\nevals/results/\n");
    git(&p, &["init", "-q"]);
    git(&p, &["checkout", "-q", "-b", "main"]);
    p.evals(&["record", "-m", "local/m1"]).ok();
    commit(&p, "cassettes");
    p.evals(&["check", "-m", "local/m1"]).ok();
    git(&p, &["checkout", "-q", "-b", "feature"]);
    p.write(
        "evals/.llm-evals.config.yml",
        &format!("{base}errors: {{ abort_after: {{ total: 2 }} }}\n"),
    );
    commit(&p, "abort after two");
    server.reset();
    server.mount(
        post("/v1/chat/completions").respond_with(
            wiremock::ResponseTemplate::new(400)
                .set_body_json(json!({"error": {"message": "bad model"}})),
        ),
    );
    (server, p)
}

const STOPPED: &str = "stopped early (aborted): 8 of 10 cases did not run";

#[test]
fn a_check_that_stops_early_says_so_and_how_many_cases_did_not_run() {
    let (server, p) = stops_on_feature();
    let d = p
        .evals(&[
            "check",
            "-m",
            "local/m1",
            "--cassettes",
            "live",
            "-p",
            "1",
            "--baseline",
            "main",
            "--markdown",
            "pr.md",
        ])
        .code(1);
    assert_eq!(server.hits(), 2, "nothing started after the second failure");
    d.stderr_has("errors.abort_after: 2 of 2 finished calls failed (100%)");
    // The two cases that ran were compared (they errored): the baseline shares them.
    d.stderr_lacks("shares no case");
    d.stderr_has(&format!(
        "evals check: {STOPPED}, 2 errors in stops (main → feature)"
    ));
    let md = p.read("pr.md");
    assert_eq!(
        md.lines().next().unwrap(),
        format!("**evals check: {STOPPED}, 2 errors** in stops (main → feature)"),
        "{md}"
    );
    assert!(
        md.contains(&format!("- the run {STOPPED}; a partial run cannot pass")),
        "{md}"
    );
    // The cases that never ran are not "removed".
    assert!(!md.contains("removed |"), "{md}");
    assert!(!md.contains("| removed"), "{md}");
}

#[test]
fn the_first_check_on_main_that_stops_early_is_no_baseline_and_says_so() {
    let (_server, p) = stops_on_feature();
    git(&p, &["checkout", "-q", "main"]);
    git(&p, &["merge", "-q", "feature"]);
    std::fs::remove_dir_all(p.path().join(".evals")).unwrap();
    let d = p
        .evals(&[
            "check",
            "-m",
            "local/m1",
            "--cassettes",
            "live",
            "-p",
            "1",
            "--baseline",
            "main",
            "--markdown",
            "pr.md",
        ])
        .code(1);
    d.stderr_has("no earlier run of main: this run stopped early, so it is no baseline; the next complete check on main will be the first")
        .stderr_lacks("this run is the first baseline")
        .stderr_has(&format!("evals check: {STOPPED}, 2 errors in stops (main, no baseline)"));
    let md = p.read("pr.md");
    assert!(
        md.starts_with(&format!(
            "**evals check: {STOPPED}, 2 errors** in stops (main, no baseline)"
        )),
        "{md}"
    );
}

#[test]
fn a_run_that_stops_early_ends_saying_how_many_cases_did_not_run() {
    let (_server, p) = stops_on_feature();
    let d = p
        .evals(&[
            "run",
            "-m",
            "local/m1",
            "--cassettes",
            "live",
            "-p",
            "1",
            "--no-autosave",
        ])
        .code(1);
    d.stderr_has("errors.abort_after: 2 of 2 finished calls failed (100%)");
    let last = d.stderr.lines().last().unwrap_or_default();
    assert_eq!(last, format!("error: evals run: {STOPPED}"), "{}", d.stderr);
}
