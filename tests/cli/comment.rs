//! `evals comment`: one pull-request comment, created once and updated in place, against a
//! wiremock GitHub API on loopback.

use serde_json::{Value, json};
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, ResponseTemplate};

use crate::harness::Project;
use crate::mock::Server;

const TOKEN: &str = "ghs_0123456789abcdefghijABCDEFGHIJ012345";

fn project() -> Project {
    Project::new().file(
        "comment.md",
        "**evals check: 1 regression** in tax-intake (main → feature)\n<!-- evals-check-comment -->\n\nbody\n",
    )
}

#[test]
fn a_first_comment_is_created_with_the_marker() {
    let api = Server::start();
    api.mount(
        Mock::given(method("GET"))
            .and(path("/repos/acme/app/issues/7/comments"))
            .and(query_param("page", "1"))
            .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
            .respond_with(
                ResponseTemplate::new(200).set_body_json(json!([{"id": 1, "body": "LGTM"}])),
            ),
    );
    api.mount(
        Mock::given(method("POST"))
            .and(path("/repos/acme/app/issues/7/comments"))
            .respond_with(ResponseTemplate::new(201).set_body_json(
                json!({"id": 99, "html_url": "https://github.test/acme/app/pull/7#issuecomment-99"}),
            )),
    );
    let p = project();
    let d = p
        .evals(&["comment", "comment.md", "--pr", "7"])
        .env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_REPOSITORY", "acme/app")
        .env("GITHUB_API_URL", &api.uri())
        .ok();
    d.stderr_has("commented on #7: https://github.test/acme/app/pull/7#issuecomment-99");
    assert!(!d.stderr.contains(TOKEN) && !d.stdout.contains(TOKEN));
    let seen = api.seen();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[1].0, "POST");
    assert!(
        seen[1].2["body"]
            .as_str()
            .unwrap()
            .contains("<!-- evals-check-comment -->")
    );
}

#[test]
fn the_marked_comment_is_updated_in_place_and_the_pr_comes_from_the_event() {
    let api = Server::start();
    let others: Vec<Value> = (0..100)
        .map(|i| json!({"id": i, "body": "unrelated"}))
        .collect();
    api.mount(
        Mock::given(method("GET"))
            .and(path("/repos/acme/app/issues/12/comments"))
            .and(query_param("page", "1"))
            .respond_with(ResponseTemplate::new(200).set_body_json(Value::Array(others))),
    );
    api.mount(
        Mock::given(method("GET"))
            .and(path("/repos/acme/app/issues/12/comments"))
            .and(query_param("page", "2"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([
                {"id": 555, "body": "old verdict\n<!-- evals-check-comment -->\n"}
            ]))),
    );
    api.mount(
        Mock::given(method("PATCH"))
            .and(path("/repos/acme/app/issues/comments/555"))
            .respond_with(
                ResponseTemplate::new(200).set_body_json(json!({"id": 555, "html_url": "u"})),
            ),
    );
    let p = project().file(
        "event.json",
        r#"{"action": "synchronize", "pull_request": {"number": 12}}"#,
    );
    let event = p.path().join("event.json");
    p.evals(&["comment", "comment.md", "--repo", "acme/app"])
        .env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_EVENT_PATH", event.to_str().unwrap())
        .env("GITHUB_API_URL", &api.uri())
        .ok()
        .stderr_has("updated the comment on #12");
    let seen = api.seen();
    let methods: Vec<&str> = seen.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(methods, ["GET", "GET", "PATCH"]);
    assert!(
        seen[2].2["body"]
            .as_str()
            .unwrap()
            .starts_with("**evals check: 1 regression**")
    );
}

#[test]
fn every_missing_input_is_named_at_once() {
    let api = Server::start();
    let d = project()
        .evals(&["comment", "comment.md"])
        .env("GITHUB_API_URL", &api.uri())
        .exact()
        .code(2);
    d.stderr_is(
        "error: evals comment is missing 3 inputs:\n  \
         GITHUB_TOKEN is not set: the comment needs a token that may write pull-request comments (in Actions: `env: GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}`)\n  \
         no repository: pass --repo OWNER/NAME or set GITHUB_REPOSITORY\n  \
         no pull request: pass --pr N, or run in a pull_request workflow (GITHUB_EVENT_PATH)\n",
    );
    // Two missing: both named.
    let d = project()
        .evals(&["comment", "comment.md", "--pr", "7"])
        .env("GITHUB_API_URL", &api.uri())
        .code(2);
    d.stderr_has("error: evals comment is missing 2 inputs:\n  GITHUB_TOKEN is not set")
        .stderr_has("\n  no repository: pass --repo OWNER/NAME or set GITHUB_REPOSITORY\n");
    assert!(api.seen().is_empty());
}

#[test]
fn a_comment_the_api_gives_no_url_for_is_said_without_a_dangling_colon() {
    let api = Server::start();
    api.mount(
        Mock::given(method("GET"))
            .and(path("/repos/acme/app/issues/7/comments"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([]))),
    );
    api.mount(
        Mock::given(method("POST"))
            .and(path("/repos/acme/app/issues/7/comments"))
            .respond_with(ResponseTemplate::new(201).set_body_json(json!({"id": 99}))),
    );
    let d = comment_env(
        project().evals(&["comment", "comment.md", "--pr", "7"]),
        &api,
    )
    .exact()
    .ok();
    d.stderr_is("commented on #7\n");
}

#[test]
fn without_a_token_nothing_is_sent_and_the_variable_is_named() {
    let api = Server::start();
    project()
        .evals(&["comment", "comment.md", "--pr", "7", "--repo", "acme/app"])
        .env("GITHUB_API_URL", &api.uri())
        .code(2)
        .stderr_has("GITHUB_TOKEN is not set");
    assert!(api.seen().is_empty());
}

#[test]
fn a_refusal_says_why_without_the_token() {
    let api = Server::start();
    api.mount(
        Mock::given(method("GET")).respond_with(
            ResponseTemplate::new(403)
                .set_body_json(json!({"message": "Resource not accessible by integration"})),
        ),
    );
    let d = project()
        .evals(&["comment", "comment.md", "--pr", "7", "--repo", "acme/app"])
        .env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_API_URL", &api.uri())
        .code(1);
    d.stderr_has("could not list the comments: HTTP 403 Forbidden: Resource not accessible by integration (does the token have `pull-requests: write`");
    assert!(!d.stderr.contains(TOKEN));
}

/// A loopback port nothing listens on: bound, read, and let go.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn an_unreachable_api_says_connection_refused_and_names_the_url_and_variable() {
    let api = format!("http://127.0.0.1:{}", closed_port());
    let d = project()
        .evals(&["comment", "comment.md", "--pr", "7", "--repo", "acme/app"])
        .env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_API_URL", &api)
        .code(1);
    d.stderr_has(&format!(
        "error: could not list the comments: connection refused by {api} (GITHUB_API_URL): check that GITHUB_API_URL is the GitHub API (GitHub Enterprise: https://HOST/api/v3), or unset it for https://api.github.com\n"
    ));
    d.stderr_lacks("error sending request");
    assert!(!d.stderr.contains(TOKEN));
}

#[test]
fn an_api_that_does_not_speak_tls_says_tls_failure() {
    // wiremock answers plain HTTP; asked for https, the handshake fails.
    let server = Server::start();
    let api = server.uri().replace("http://", "https://");
    let d = project()
        .evals(&["comment", "comment.md", "--pr", "7", "--repo", "acme/app"])
        .env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_API_URL", &api)
        .code(1);
    d.stderr_has("error: could not list the comments: TLS failure (");
    d.stderr_has(&format!(
        ") with {api} (GITHUB_API_URL): check that GITHUB_API_URL is the GitHub API"
    ));
    d.stderr_lacks("error sending request");
}

/// A comment body for `suite`, as `evals check --markdown` writes it.
fn suite_comment(suite: &str) -> String {
    format!("**evals check passed** in {suite} (main → feature)\n<!-- evals:{suite} -->\n\nbody\n")
}

fn comment_env(run: crate::harness::Run, api: &Server) -> crate::harness::Run {
    run.env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_REPOSITORY", "acme/app")
        .env("GITHUB_API_URL", &api.uri())
}

#[test]
fn two_suites_keep_two_comments_and_an_old_marker_is_still_updated() {
    let api = Server::start();
    // The PR holds suite `a`'s comment and one with the old marker.
    api.mount(
        Mock::given(method("GET"))
            .and(path("/repos/acme/app/issues/7/comments"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([
                {"id": 1, "body": "old\n<!-- evals-check-comment -->\n"},
                {"id": 2, "body": suite_comment("a")},
            ]))),
    );
    api.mount(
        Mock::given(method("PATCH")).respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"id": 2, "html_url": "u"})),
        ),
    );
    let p = Project::new()
        .file("a.md", &suite_comment("a"))
        .file("b.md", &suite_comment("b"));
    comment_env(p.evals(&["comment", "a.md", "--pr", "7"]), &api).ok();
    // Suite `b` has no comment of its own: it takes over the old-marker one.
    comment_env(p.evals(&["comment", "b.md", "--pr", "7"]), &api).ok();
    let seen = api.seen();
    let patched: Vec<&str> = seen
        .iter()
        .filter(|s| s.0 == "PATCH")
        .map(|s| s.1.as_str())
        .collect();
    assert_eq!(
        patched,
        [
            "/repos/acme/app/issues/comments/2",
            "/repos/acme/app/issues/comments/1"
        ]
    );
}

#[test]
fn comments_are_found_through_link_pagination_at_30_a_page() {
    let api = Server::start();
    // 65 comments, 30 a page as GitHub may answer whatever per_page asked; ours is the last.
    let base = api.uri();
    for page in 1..=3u32 {
        let ids = (page - 1) * 30..(page * 30).min(65);
        let comments: Vec<Value> = ids
            .map(|i| {
                if i == 64 {
                    json!({"id": 1000 + i, "body": suite_comment("big")})
                } else {
                    json!({"id": 1000 + i, "body": "unrelated"})
                }
            })
            .collect();
        let mut r = ResponseTemplate::new(200).set_body_json(Value::Array(comments));
        if page < 3 {
            r = r.insert_header(
                "link",
                format!(
                    "<{base}/repositories/1/issues/7/comments?page={}>; rel=\"next\", <{base}/repositories/1/issues/7/comments?page=3>; rel=\"last\"",
                    page + 1
                )
                .as_str(),
            );
        }
        let route = if page == 1 {
            "/repos/acme/app/issues/7/comments"
        } else {
            "/repositories/1/issues/7/comments"
        };
        api.mount(
            Mock::given(method("GET"))
                .and(path(route))
                .and(query_param("page", page.to_string().as_str()))
                .respond_with(r),
        );
    }
    api.mount(
        Mock::given(method("PATCH"))
            .and(path("/repos/acme/app/issues/comments/1064"))
            .respond_with(
                ResponseTemplate::new(200).set_body_json(json!({"id": 1064, "html_url": "u"})),
            ),
    );
    let p = Project::new().file("c.md", &suite_comment("big"));
    comment_env(p.evals(&["comment", "c.md", "--pr", "7"]), &api)
        .ok()
        .stderr_has("updated the comment on #7");
    let methods: Vec<String> = api.seen().into_iter().map(|s| s.0).collect();
    assert_eq!(methods, ["GET", "GET", "GET", "PATCH"]);
}

#[test]
fn a_rate_limit_is_waited_out_and_retried() {
    for limited in [
        ResponseTemplate::new(429).insert_header("retry-after", "1"),
        ResponseTemplate::new(403)
            .insert_header("x-ratelimit-remaining", "0")
            .insert_header(
                "x-ratelimit-reset",
                (std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_secs())
                .to_string()
                .as_str(),
            )
            .set_body_json(json!({"message": "API rate limit exceeded"})),
    ] {
        let api = Server::start();
        api.mount(
            Mock::given(method("GET"))
                .respond_with(limited)
                .up_to_n_times(1)
                .with_priority(1),
        );
        api.mount(
            Mock::given(method("GET"))
                .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
                .with_priority(2),
        );
        api.mount(Mock::given(method("POST")).respond_with(
            ResponseTemplate::new(201).set_body_json(json!({"id": 5, "html_url": "u"})),
        ));
        let p = Project::new().file("c.md", &suite_comment("s"));
        let started = std::time::Instant::now();
        comment_env(p.evals(&["comment", "c.md", "--pr", "7"]), &api)
            .ok()
            .stderr_has("GitHub's rate limit: waiting");
        assert!(started.elapsed() >= std::time::Duration::from_millis(900));
        let methods: Vec<String> = api.seen().into_iter().map(|s| s.0).collect();
        assert_eq!(methods, ["GET", "GET", "POST"]);
    }
}

#[test]
fn a_forks_read_only_token_is_a_note_and_exit_0_not_a_failure() {
    let api = Server::start();
    // A fork's token may read the comments but not write one.
    api.mount(
        Mock::given(method("GET"))
            .and(path("/repos/acme/app/issues/8/comments"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([]))),
    );
    api.mount(
        Mock::given(method("POST")).respond_with(
            ResponseTemplate::new(403)
                .set_body_json(json!({"message": "Resource not accessible by integration"})),
        ),
    );
    let p = project().file(
        "event.json",
        r#"{"pull_request": {"number": 8, "head": {"repo": {"full_name": "someone/app", "fork": true}}, "base": {"repo": {"full_name": "acme/app"}}}}"#,
    );
    let event = p.path().join("event.json");
    let d = p
        .evals(&["comment", "comment.md", "--repo", "acme/app"])
        .env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_EVENT_PATH", event.to_str().unwrap())
        .env("GITHUB_API_URL", &api.uri())
        .ok();
    d.stderr_has("no comment on #8: the pull request comes from someone/app, and GitHub gives a fork's workflows a read-only GITHUB_TOKEN; the verdict is in the job summary");
    assert!(!d.stderr.contains(TOKEN));
    let methods: Vec<String> = api.seen().into_iter().map(|s| s.0).collect();
    assert_eq!(methods, ["GET", "POST"]);
}

#[test]
fn the_same_refusal_outside_a_fork_still_fails_and_names_the_permission() {
    let api = Server::start();
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
    let p = project().file(
        "event.json",
        r#"{"pull_request": {"number": 8, "head": {"repo": {"full_name": "acme/app", "fork": false}}, "base": {"repo": {"full_name": "acme/app"}}}}"#,
    );
    let event = p.path().join("event.json");
    p.evals(&["comment", "comment.md", "--repo", "acme/app"])
        .env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_EVENT_PATH", event.to_str().unwrap())
        .env("GITHUB_API_URL", &api.uri())
        .code(1)
        .stderr_has("could not create the comment: HTTP 403 Forbidden: Resource not accessible by integration (does the token have `pull-requests: write`");
}

#[test]
fn comment_issue_opens_one_issue_then_updates_it_in_place_and_close_closes_it() {
    let report = |verdict: &str| {
        format!("**evals check: {verdict}** in nightly (main)\n<!-- evals:nightly -->\n\nbody\n")
    };
    let p = Project::new()
        .file("failed.md", &report("1 regression"))
        .file("worse.md", &report("2 regressions"))
        .file("passed.md", &report("passed"));
    let issue = |file: &str, extra: &[&str], api: &Server| {
        let args = [&["comment", file, "--issue", "evals nightly"][..], extra].concat();
        comment_env(p.evals(&args), api)
    };

    // No issue open yet (a pull request in the list, an issue of another title, and one of
    // the title without our marker are not ours): one is opened.
    let api = Server::start();
    api.mount(
        Mock::given(method("GET"))
            .and(path("/repos/acme/app/issues"))
            .and(query_param("state", "open"))
            .and(query_param("page", "1"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([
                {"number": 3, "title": "evals nightly", "body": "<!-- evals:nightly -->", "pull_request": {}},
                {"number": 4, "title": "flaky login", "body": "<!-- evals:nightly -->"},
                {"number": 5, "title": "evals nightly", "body": "written by hand"}
            ]))),
    );
    api.mount(
        Mock::given(method("POST"))
            .and(path("/repos/acme/app/issues"))
            .respond_with(ResponseTemplate::new(201).set_body_json(
                json!({"number": 12, "html_url": "https://github.test/acme/app/issues/12"}),
            )),
    );
    issue("failed.md", &[], &api)
        .ok()
        .stderr_has("opened issue #12 \"evals nightly\": https://github.test/acme/app/issues/12");
    let seen = api.seen();
    let methods: Vec<&str> = seen.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(methods, ["GET", "POST"]);
    assert_eq!(seen[1].2["title"], "evals nightly");
    assert!(seen[1].2["body"].as_str().unwrap().contains("1 regression"));

    // The next night: the open issue (found on the second page) gets the new report.
    let api = Server::start();
    let others: Vec<Value> = (0..100)
        .map(|i| json!({"number": 100 + i, "title": "other", "body": "x"}))
        .collect();
    api.mount(
        Mock::given(method("GET"))
            .and(path("/repos/acme/app/issues"))
            .and(query_param("page", "1"))
            .respond_with(ResponseTemplate::new(200).set_body_json(Value::Array(others))),
    );
    api.mount(
        Mock::given(method("GET"))
            .and(path("/repos/acme/app/issues"))
            .and(query_param("page", "2"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([
                {"number": 12, "title": "evals nightly", "body": report("1 regression")}
            ]))),
    );
    api.mount(
        Mock::given(method("PATCH"))
            .and(path("/repos/acme/app/issues/12"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"number": 12}))),
    );
    issue("worse.md", &[], &api)
        .ok()
        .stderr_has("updated issue #12 \"evals nightly\"\n");
    let seen = api.seen();
    let methods: Vec<&str> = seen.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(methods, ["GET", "GET", "PATCH"]);
    assert!(
        seen[2].2["body"]
            .as_str()
            .unwrap()
            .contains("2 regressions")
    );
    assert!(seen[2].2.get("state").is_none(), "{:?}", seen[2].2);

    // Passing again: --close puts the passing report in it and closes it.
    issue("passed.md", &["--close"], &api)
        .ok()
        .stderr_has("closed issue #12 \"evals nightly\"");
    let seen = api.seen();
    let last = &seen.last().unwrap().2;
    assert_eq!(last["state"], "closed");
    assert!(last["body"].as_str().unwrap().contains("passed"));

    // With none open, --close does nothing.
    let api = Server::start();
    api.mount(
        Mock::given(method("GET"))
            .and(path("/repos/acme/app/issues"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([]))),
    );
    issue("passed.md", &["--close"], &api)
        .ok()
        .stderr_has("no open issue \"evals nightly\": nothing to close");
    assert_eq!(api.seen().len(), 1);

    // --issue needs no pull request, --close needs --issue, and --pr with --issue is refused.
    let api = Server::start();
    p.evals(&["comment", "passed.md", "--close"]).code(2);
    comment_env(
        p.evals(&["comment", "passed.md", "--pr", "7", "--issue", "x"]),
        &api,
    )
    .code(2);
    assert!(api.seen().is_empty());
}
