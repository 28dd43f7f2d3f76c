//! The README's "Gate your PRs in five minutes", walked in a temp git repo with the built
//! `evals` (what `cargo install --path .` installs) and what the action runs: the first
//! check on main with no history, a pull request that made an answer worse (exit 1, one
//! comment posted to a wiremock GitHub), a second push (the same comment updated in place),
//! and a fork's pull request (a read-only token: a note, exit 0).

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, ResponseTemplate};

use crate::gate::Gate;
use crate::mock::Server;

const TOKEN: &str = "ghs_fiveminutes0123456789abcdefghijABCD";

/// The flags action.yml passes to `evals check`.
fn action_check(g: &Gate, branch_env: (&str, &str)) -> crate::harness::Run {
    let summary = g.path().join("summary.md");
    g.evals(&[
        "check",
        "--baseline",
        "main",
        "--tolerance",
        "0.02",
        "--markdown",
        "comment.md",
        "--junit",
        "junit.xml",
        "--html",
        "report.html",
        "--json",
        "run.json",
    ])
    .env("CI", "true")
    .env(branch_env.0, branch_env.1)
    .env("GITHUB_STEP_SUMMARY", summary.to_str().unwrap())
}

fn comment(g: &Gate, api: &Server, event: &str) -> crate::harness::Run {
    g.p.write("event.json", event);
    let event = g.path().join("event.json");
    g.evals(&["comment", "comment.md"])
        .env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_REPOSITORY", "acme/app")
        .env("GITHUB_EVENT_PATH", event.to_str().unwrap())
        .env("GITHUB_API_URL", &api.uri())
}

const SAME_REPO_PR: &str = r#"{"pull_request": {"number": 4, "head": {"repo": {"full_name": "acme/app", "fork": false}}, "base": {"repo": {"full_name": "acme/app"}}}}"#;

#[test]
fn the_readmes_five_minute_path_from_a_first_baseline_to_one_updated_comment() {
    // A suite with committed cassettes, recorded on a laptop; `.evals/` is not committed,
    // so CI starts with no history.
    let g = Gate::new();
    g.evals(&["record"]).ok();
    g.commit("cassettes");
    std::fs::remove_dir_all(g.path().join(".evals")).unwrap();

    // The first run on main: the first baseline, passed, in the job summary.
    action_check(&g, ("GITHUB_REF_NAME", "main"))
        .ok()
        .stderr_has("no earlier run of main: this run is the first baseline")
        .stderr_has("evals check passed in gate (main, first baseline)");
    assert!(
        g.read("summary.md")
            .starts_with("**evals check passed** in gate (main, first baseline)"),
        "{}",
        g.read("summary.md")
    );
    for report in ["comment.md", "junit.xml", "report.html", "run.json"] {
        assert!(g.path().join(report).is_file(), "{report} not written");
    }
    assert!(g.read("summary.md").contains("evals check"));

    // A pull request whose change made an answer worse.
    g.git(&["checkout", "-q", "-b", "worse-prompt"]);
    g.answers(1);
    g.evals(&["record"]).ok();
    g.commit("worse answers");
    action_check(&g, ("GITHUB_HEAD_REF", "worse-prompt"))
        .code(1)
        .stderr_has("error: evals check: 1 regression in gate (main → worse-prompt)");

    let api = Server::start();
    api.mount(
        Mock::given(method("GET"))
            .and(path("/repos/acme/app/issues/4/comments"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([]))),
    );
    api.mount(
        Mock::given(method("POST"))
            .and(path("/repos/acme/app/issues/4/comments"))
            .respond_with(
                ResponseTemplate::new(201).set_body_json(json!({"id": 41, "html_url": "u41"})),
            ),
    );
    comment(&g, &api, SAME_REPO_PR)
        .ok()
        .stderr_has("commented on #4: u41");
    let seen = api.seen();
    assert_eq!(seen.len(), 2, "{seen:?}");
    let first = seen[1].2["body"].as_str().unwrap().to_string();
    assert!(
        first.starts_with("**evals check: 1 regression** in gate (main → worse-prompt)"),
        "{first}"
    );

    // A second push, worse still: the same comment, updated in place.
    g.answers(2);
    g.evals(&["record"]).output();
    g.commit("worse still");
    action_check(&g, ("GITHUB_HEAD_REF", "worse-prompt")).code(1);
    api.reset();
    api.mount(
        Mock::given(method("GET"))
            .and(path("/repos/acme/app/issues/4/comments"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([
                {"id": 3, "body": "LGTM"},
                {"id": 41, "body": first},
            ]))),
    );
    api.mount(
        Mock::given(method("PATCH"))
            .and(path("/repos/acme/app/issues/comments/41"))
            .respond_with(
                ResponseTemplate::new(200).set_body_json(json!({"id": 41, "html_url": "u41"})),
            ),
    );
    comment(&g, &api, SAME_REPO_PR)
        .ok()
        .stderr_has("updated the comment on #4: u41");
    let methods: Vec<String> = api.seen().into_iter().map(|s| s.0).collect();
    assert_eq!(methods, ["GET", "PATCH"]);
    let second = api.seen()[1].2["body"].as_str().unwrap().to_string();
    assert_ne!(second, first, "the update carries the new verdict");

    // The same pull request from a fork: its token may not write.
    api.reset();
    api.mount(
        Mock::given(method("GET"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([]))),
    );
    api.mount(
        Mock::given(method("POST")).respond_with(
            ResponseTemplate::new(403)
                .set_body_json(json!({"message": "Resource not accessible by integration"})),
        ),
    );
    let fork = r#"{"pull_request": {"number": 5, "head": {"repo": {"full_name": "someone/app", "fork": true}}, "base": {"repo": {"full_name": "acme/app"}}}}"#;
    let d = comment(&g, &api, fork).ok();
    d.stderr_has("no comment on #5: the pull request comes from someone/app");
    assert!(!d.stderr.contains(TOKEN));
    let _: Value = serde_json::from_str(&g.read("run.json")).expect("run.json is JSON");
}
