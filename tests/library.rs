//! The library inside an ordinary Rust program (issue 28): called from async code, with an
//! async provider, leaving the host's signals alone, printing nothing unless asked, its
//! errors matched by kind, a suite built in Rust. A test binary of its own, built with no
//! feature beyond the library's (`cargo test --no-default-features --test library` runs).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use llm_evals::cassette::CallError;
use llm_evals::error::{BaselineError, Error, ErrorKind};
use llm_evals::gate::{Baseline, CheckPlan, MissingBaseline, Rules};
use llm_evals::history::{RunStore, SqliteStore};
use llm_evals::provider::{AnswerFuture, ChatRequest, Completion, Provider, Registry};
use llm_evals::results::Usage;
use llm_evals::runner::{CollectedNotices, Notice, RunOptions, evaluate, evaluate_async};
use llm_evals::suite::{Case, Contender, Locate, Suite, SuiteBuilder};
use serde_json::json;

fn toy() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/toy")
}

fn toy_suite() -> Suite {
    Suite::locate(&toy(), &Locate::default()).expect("the toy suite loads")
}

#[tokio::test(flavor = "multi_thread")]
async fn evaluate_is_awaited_inside_a_multi_threaded_runtime() {
    let run = evaluate_async(&toy_suite(), RunOptions::default())
        .await
        .expect("run");
    assert_eq!(run.experiments.len(), 4, "2 fake models x 2 datasets");
    assert_eq!(run.total_errors(), 0);
}

#[tokio::test(flavor = "current_thread")]
async fn evaluate_is_awaited_on_a_current_thread_runtime_and_the_blocking_one_is_safe_there_too() {
    let run = evaluate_async(&toy_suite(), RunOptions::default())
        .await
        .expect("run");
    assert_eq!(run.total_errors(), 0);
    // The blocking entry point, called from a runtime's own thread: it used to panic
    // ("Cannot start a runtime from within a runtime").
    let run = evaluate(&toy_suite(), RunOptions::default()).expect("run");
    assert_eq!(run.experiments.len(), 4);
}

#[test]
fn the_async_run_can_be_spawned_on_a_runtime() {
    fn is_send<T: Send>(_: &T) {}
    let suite = toy_suite();
    let fut = evaluate_async(&suite, RunOptions::default());
    is_send(&fut);
    drop(fut);
}

/// A provider whose answer is async code: it awaits a timer and a task it spawns on the
/// runner's runtime, and counts its calls.
struct Slow {
    calls: Arc<AtomicUsize>,
}

impl Provider for Slow {
    fn models(&self) -> Option<Vec<String>> {
        Some(vec!["m".into()])
    }

    fn answer_async<'a>(
        &'a self,
        _contender: &'a Contender,
        case: &'a Case,
        _req: &'a ChatRequest,
    ) -> AnswerFuture<'a> {
        Box::pin(async move {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            let id = case.id.clone();
            let text = tokio::spawn(async move { format!("{{\"answer\": \"{id}\"}}") })
                .await
                .map_err(|e| CallError::Transport(e.to_string()))?;
            self.calls.fetch_add(1, Ordering::SeqCst);
            Ok(Completion {
                text,
                usage: Usage {
                    input_tokens: Some(3),
                    output_tokens: Some(2),
                    ..Usage::default()
                },
                latency_s: 0.005,
                ..Completion::default()
            })
        })
    }
}

/// A suite of `n` cases answered by the `slow` provider, built in Rust.
fn slow_suite(dir: &Path, n: usize) -> Suite {
    let mut b = SuiteBuilder::new("slow", dir)
        .provider("mine", json!({ "kind": "slow", "models": ["m"] }))
        .scorer(json!({ "kind": "assertions" }));
    for i in 0..n {
        b = b.case(
            "d",
            json!({ "id": format!("c{i}"), "input": "q", "expect": { "contains": [format!("c{i}")] } }),
        );
    }
    b.build().expect("built")
}

#[tokio::test(flavor = "multi_thread")]
async fn an_async_provider_answers_every_case_on_the_callers_runtime() {
    let dir = tempfile::tempdir().expect("temp dir");
    let calls = Arc::new(AtomicUsize::new(0));
    let mut providers = Registry::default();
    providers.register(
        "slow",
        Slow {
            calls: calls.clone(),
        },
    );
    let suite = slow_suite(dir.path(), 6);
    let run = evaluate_async(&suite, RunOptions::default().providers(providers))
        .await
        .expect("run");
    assert_eq!(calls.load(Ordering::SeqCst), 6);
    let e = &run.experiments[0];
    assert_eq!((e.cases_total, e.errors), (6, 0));
    assert_eq!(e.means.get("pass_rate").copied().flatten(), Some(1.0));
}

#[test]
fn a_suite_built_in_rust_runs_stores_and_gates_like_one_on_disk() {
    let dir = tempfile::tempdir().expect("temp dir");
    let build = |answer: &str| {
        SuiteBuilder::new("built", dir.path())
            .provider("fake", json!({ "models": ["echo"] }))
            .scorer(json!({ "kind": "fields", "schema": { "city": "string" } }))
            .set("minimum_scores", json!({ "field_accuracy": 1.0 }))
            .case(
                "cities",
                json!({ "id": "paris", "input": format!("{{\"city\": \"{answer}\"}}"),
                        "expected": { "city": "Paris" } }),
            )
            .build()
            .expect("built")
    };
    let mut store = SqliteStore::open(&dir.path().join(".evals/history.sqlite3")).expect("history");
    let main = evaluate(&build("Paris"), RunOptions::default().branch("main")).expect("run");
    assert_eq!(
        main.experiments[0]
            .means
            .get("field_accuracy")
            .copied()
            .flatten(),
        Some(1.0)
    );
    let plan = CheckPlan::check(None, Rules::tolerance(0.02), MissingBaseline::Fail);
    let checked = llm_evals::gate::check(&main, &plan, &store);
    assert!(checked.passed(), "{:?}", checked.comparison.verdict);
    store.insert(&main).expect("stored");

    // The same suite, a worse answer on a branch: the gate against main fails the case.
    let branch = evaluate(&build("Lyon"), RunOptions::default().branch("pr")).expect("run");
    let plan = CheckPlan::check(
        Some(Baseline::Branch("main".into())),
        Rules::tolerance(0.02),
        MissingBaseline::Fail,
    );
    let checked = llm_evals::gate::check(&branch, &plan, &store);
    assert!(!checked.passed());
    assert!(
        checked.refused.is_none(),
        "main's run is the baseline: {:?}",
        checked.refused
    );
}

#[test]
fn a_suite_built_in_rust_is_checked_as_a_file_is() {
    let dir = tempfile::tempdir().expect("temp dir");
    let err = SuiteBuilder::new("typo", dir.path())
        .provider("fake", json!({ "models": ["echo"] }))
        .scorer(json!({ "kind": "assertions" }))
        .set("defaults", json!({ "temprature": 0.1 }))
        .case("d", json!({ "id": "a", "input": "x" }))
        .build()
        .expect_err("an unknown key");
    assert_eq!(err.kind(), ErrorKind::Config);
    assert!(err.is_bad_input());
    let text = err.to_string();
    assert!(
        text.contains("temprature") && text.contains("temperature"),
        "{text}"
    );
}

#[test]
fn errors_are_matched_by_kind_and_variant() {
    // A setting out of range.
    let e = Rules::new(1.5, false).expect_err("refused");
    assert_eq!(e.kind(), ErrorKind::Usage);
    assert!(e.is_bad_input());
    // No baseline: its own variant, with the branch in it.
    let dir = tempfile::tempdir().expect("temp dir");
    let run = evaluate(&toy_suite(), RunOptions::default()).expect("run");
    let store = SqliteStore::open(&dir.path().join("h.sqlite3")).expect("history");
    // Nothing on main in the history: the check's baseline branch has no run.
    let plan = CheckPlan::check(
        Some(Baseline::Branch("main".into())),
        Rules::tolerance(0.02),
        MissingBaseline::Fail,
    );
    let checked = llm_evals::gate::check(&run, &plan, &store);
    match checked.refused {
        Some(BaselineError::NoRunOnBranch { ref branch, .. }) => assert_eq!(branch, "main"),
        ref other => panic!("expected no run on main, got {other:?}"),
    }
    let e: Error = checked.refused.expect("refused").into();
    assert_eq!(e.kind(), ErrorKind::Baseline);
    // A missing config file: bad input, kind Input.
    let e = Suite::load(&dir.path().join("nope.yml"), dir.path()).expect_err("missing");
    assert_eq!(e.kind(), ErrorKind::Input);
    assert!(matches!(e, Error::Input { .. }));
}

/// What a child process of this test binary does, when `LIBRARY_CHILD` names it.
fn child_role() -> Option<String> {
    std::env::var("LIBRARY_CHILD").ok()
}

/// Runs this test binary again as a child, for test `name`, with `LIBRARY_CHILD=role`.
fn run_child(name: &str, role: &str) -> std::process::Output {
    let exe = std::env::current_exe().expect("the test binary");
    let mut child = std::process::Command::new(exe)
        .args(["--exact", name, "--nocapture", "--test-threads", "1"])
        .env("LIBRARY_CHILD", role)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("child");
    // A deadline: the child ends within it, or the test fails naming it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("{name}: the child ({role}) did not end within 60 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

#[cfg(unix)]
#[test]
fn after_a_run_the_host_still_receives_sigint() {
    use std::os::unix::process::ExitStatusExt;
    if child_role().as_deref() == Some("sigint") {
        // The child: a run, then Ctrl-C to itself. The library installed no handler, so
        // the default action ends the process; were SIGINT ignored, it would exit 0. The
        // child starts from the default action whatever it inherited (a job started in the
        // background by a shell has SIGINT ignored), so only the run could change it.
        // SAFETY: signal(2) with SIG_DFL before any thread of the run exists.
        unsafe {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
        }
        evaluate(&toy_suite(), RunOptions::default()).expect("run");
        // SAFETY: raise(3) sends a signal to this process; it touches no memory.
        unsafe {
            libc::raise(libc::SIGINT);
        }
        std::thread::sleep(std::time::Duration::from_secs(5));
        std::process::exit(0);
    }
    let out = run_child("after_a_run_the_host_still_receives_sigint", "sigint");
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGINT),
        "the host's SIGINT was taken over: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_run_prints_nothing_and_its_warnings_go_to_the_sink_the_caller_chose() {
    if child_role().as_deref() == Some("quiet") {
        // The child: a default run of the toy suite, whose lineup refuses a contender
        // (a warning that went to stderr before).
        evaluate(&toy_suite(), RunOptions::default()).expect("run");
        return;
    }
    let out = run_child(
        "a_run_prints_nothing_and_its_warnings_go_to_the_sink_the_caller_chose",
        "quiet",
    );
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("refused"),
        "a library run printed its warning itself:\n{stderr}"
    );

    let notices = Arc::new(CollectedNotices::new());
    evaluate(&toy_suite(), RunOptions::default().notices(notices.clone())).expect("run");
    let got = notices.notices();
    assert!(
        got.iter().any(|n| matches!(n, Notice::Warning(w)
            if w.starts_with("typesafe/jev-latest refused"))),
        "{got:?}"
    );
}

/// An in-process agent answering with UI components beside (or instead of) its text, by
/// case: `card` one A2UI component, `bare` only the component (no text), `none` `[]`,
/// `silent` reports none.
struct Ui;

impl Provider for Ui {
    fn models(&self) -> Option<Vec<String>> {
        Some(vec!["m".into()])
    }

    fn answer_async<'a>(
        &'a self,
        _contender: &'a Contender,
        case: &'a Case,
        _req: &'a ChatRequest,
    ) -> AnswerFuture<'a> {
        let card = llm_evals::results::Component {
            protocol: "a2ui".into(),
            version: "0.8".into(),
            payload: json!({"card": "returns"}),
            tool: None,
        };
        let (text, components) = match case.id.as_str() {
            "card" => ("30 days", Some(vec![card])),
            "bare" => ("", Some(vec![card])),
            "none" => ("30 days", Some(vec![])),
            _ => ("30 days", None),
        };
        Box::pin(async move {
            Ok(Completion {
                text: text.to_string(),
                components,
                ..Completion::default()
            })
        })
    }
}

#[test]
fn a_providers_components_reach_the_case_result_and_none_is_not_an_empty_list() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut b = SuiteBuilder::new("ui", dir.path())
        .provider("mine", json!({ "kind": "ui", "models": ["m"] }))
        .scorer(json!({ "kind": "assertions" }))
        .scorer(
            json!({ "kind": "components", "name": "ui", "protocol": "a2ui", "version": "0.8" }),
        );
    for id in ["card", "bare", "none", "silent"] {
        b = b.case(
            "d",
            json!({ "id": id, "input": "q", "expected_components": [
                { "protocol": "a2ui", "version": "0.8", "payload": { "card": "returns" } }] }),
        );
    }
    let suite = b.build().expect("built");
    let mut providers = Registry::default();
    providers.register("ui", Ui);
    let run = evaluate(&suite, RunOptions::default().providers(providers)).expect("run");
    let cases = &run.experiments[0].cases;
    let case = |id: &str| cases.iter().find(|c| c.case == id).expect("case");
    let ui = |id: &str| case(id).metrics.get("ui").copied().flatten();
    assert_eq!(ui("card"), Some(1.0));
    // A reply of components alone is usable: no "empty reply".
    assert_eq!(case("bare").reply_error, None);
    assert_eq!(ui("bare"), Some(1.0));
    assert_eq!(case("none").components, Some(vec![]));
    assert_eq!(case("silent").components, None);
    assert_eq!((ui("none"), ui("silent")), (Some(0.0), Some(0.0)));
    assert_ne!(case("none").diagnostics, case("silent").diagnostics);
}

/// A cassette written by a program, its recordings filed under
/// `RecordedRequest::fingerprint`, replays through `Session::open_replay`: each request gets
/// its own recorded response (with its recorded latency), in any order, from the file alone;
/// a request that was not recorded is a miss.
#[tokio::test(flavor = "current_thread")]
async fn a_cassette_written_by_a_program_replays_through_a_replay_session() {
    use llm_evals::cassette::{
        CassetteKey, CassetteOptions, Interaction, RecordedRequest, RecordedResponse, Session,
        any_2xx,
    };

    const BASE: &str = "http://127.0.0.1:9/v1";
    let request = |city: &str| RecordedRequest {
        method: "POST".into(),
        url: format!("{BASE}/chat/completions"),
        headers: Default::default(),
        body: Some(json!({ "model": "m", "messages": [{ "role": "user", "content": city }] })),
        raw: None,
    };
    let interactions: Vec<Interaction> = ["Paris", "Rome"]
        .iter()
        .enumerate()
        .map(|(i, city)| Interaction {
            fingerprint: request(city).fingerprint(&[], BASE),
            request: request(city),
            response: RecordedResponse {
                status: 200,
                headers: Default::default(),
                body: json!({ "answer": city.to_uppercase() }),
                raw: None,
            },
            latency_ms: 100 + i as u64,
            usage: None,
            upstream: None,
        })
        .collect();
    // Fingerprints count from the provider's base_url: the whole URL hashes otherwise.
    assert_ne!(
        request("Paris").fingerprint(&[], BASE),
        request("Paris").fingerprint(&[], "")
    );
    let dir = tempfile::tempdir().unwrap();
    let key = CassetteKey {
        provider: "local".into(),
        model: "m".into(),
        settings: "default".into(),
        dataset: "capitals".into(),
        case_id: "two".into(),
    };
    let file = json!({
        "format": 1,
        "case": "capitals/two",
        "contender": { "id": "local/m", "provider": "local", "model": "m",
                       "effort": null, "temperature": null, "max_tokens": null },
        "recorded_at": "2026-12-01T09:00:00Z",
        "evals_version": "0.1.0",
        "interactions": interactions,
    });
    let path = key.path_in(dir.path());
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, serde_json::to_string_pretty(&file).unwrap()).unwrap();

    let mut options = CassetteOptions::default();
    options.dir = dir.path().to_path_buf();
    let session = Session::open_replay(options, &key, BASE).unwrap();
    assert_eq!(session.path(), path);
    let rome = session
        .send(request("Rome").to_http(), any_2xx)
        .await
        .unwrap();
    assert_eq!(rome.body, json!({ "answer": "ROME" }));
    assert_eq!(rome.latency, std::time::Duration::from_millis(101));
    let paris = session
        .send(request("Paris").to_http(), any_2xx)
        .await
        .unwrap();
    assert_eq!(paris.body, json!({ "answer": "PARIS" }));
    // Each recording replays once; and Berlin was never recorded.
    for city in ["Rome", "Berlin"] {
        let missed = session.send(request(city).to_http(), any_2xx).await;
        assert!(
            matches!(missed, Err(CallError::Miss(_))),
            "{city}: {missed:?}"
        );
    }
}
