//! The runner under real-world faults, against wiremock servers and raw sockets on loopback:
//! 429 with Retry-After, 500s, garbage bodies, calls that hang past the timeout, dropped
//! connections, `errors.abort_after`, 100 failures in a row, and Ctrl-C mid-run.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wiremock::matchers::body_string_contains;
use wiremock::{MockBuilder, ResponseTemplate};

use crate::harness::{Bounded, Project, files_under};
use crate::mock::{self, Server};

fn chat(content: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2},
    }))
}

fn post() -> MockBuilder {
    mock::post("/v1/chat/completions")
}

/// A suite of `n` JSONL cases (`c00`, `c01`, ...) asking one model at `base_url`, each
/// passing when the reply contains "ok".
fn suite(base_url: &str, n: usize, extra: &str) -> Project {
    let cases: String = (0..n)
        .map(|i| format!("{{\"id\": \"c{i:02}\", \"input\": \"case c{i:02}\", \"expect\": {{\"contains\": \"ok\"}}}}\n"))
        .collect();
    Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "request_types: [prompt]\nscorer: {{ kind: assertions }}\n{extra}\nlocal:\n  base_url: {base_url}/v1\n  models: [m1]\n"
            ),
        )
        .file("evals/datasets/d/cases.jsonl", &cases)
}

fn snapshot(p: &Project, rel: &str) -> Value {
    serde_json::from_str(&p.read(rel)).unwrap()
}

#[test]
fn a_429_with_retry_after_is_retried_and_succeeds() {
    let s = Server::start();
    s.mount(
        post()
            .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "1"))
            .up_to_n_times(1)
            .with_priority(1),
    );
    s.mount(post().respond_with(chat("ok")).with_priority(2));
    let p = suite(&s.uri(), 1, "");
    let started = Instant::now();
    let d = p
        .evals(&["run", "--cassettes", "live", "--no-autosave"])
        .ok();
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After: 1 was not honoured"
    );
    assert_eq!(s.hits(), 2);
    assert_eq!(d.cell("local/m1", "errors"), "0");
    assert_eq!(d.cell("local/m1", "pass_rate"), "100.0%");
}

#[test]
fn server_errors_are_retried_until_one_succeeds() {
    let s = Server::start();
    s.mount(
        post()
            .respond_with(ResponseTemplate::new(500))
            .up_to_n_times(2)
            .with_priority(1),
    );
    s.mount(
        post()
            .respond_with(ResponseTemplate::new(503))
            .up_to_n_times(1)
            .with_priority(2),
    );
    s.mount(post().respond_with(chat("ok")).with_priority(3));
    let p = suite(&s.uri(), 1, "");
    let d = p
        .evals(&["run", "--cassettes", "live", "--no-autosave"])
        .ok();
    assert_eq!(s.hits(), 4);
    assert_eq!(d.cell("local/m1", "pass_rate"), "100.0%");
}

#[test]
fn exhausted_retries_are_errors_never_zero() {
    let s = Server::start();
    s.mount(post().respond_with(ResponseTemplate::new(502)));
    let p = suite(&s.uri(), 1, "");
    let d = p
        .evals(&["run", "--cassettes", "live", "--no-autosave"])
        .code(1);
    assert_eq!(s.hits(), 5, "five attempts in all");
    assert_eq!(d.cell("local/m1", "errors"), "1");
    assert_eq!(d.cell("local/m1", "pass_rate"), "-");
    d.stdout_has("HTTP 502");
}

#[test]
fn a_garbage_body_is_an_error_and_not_retried() {
    let s = Server::start();
    s.mount(
        post().respond_with(ResponseTemplate::new(200).set_body_string("<html>bad gateway</html>")),
    );
    let p = suite(&s.uri(), 1, "");
    let d = p
        .evals(&["run", "--cassettes", "live", "--no-autosave"])
        .code(1);
    assert_eq!(s.hits(), 1);
    assert_eq!(d.cell("local/m1", "errors"), "1");
    d.stdout_has("local/m1: response is not JSON: <html>bad gateway</html>");
}

#[test]
fn a_call_hanging_past_the_timeout_errors_after_its_retries() {
    let s = Server::start();
    s.mount(post().respond_with(chat("ok").set_delay(Duration::from_secs(2))));
    let p = suite(&s.uri(), 1, "defaults: { timeout: 0.2 }");
    let d = p
        .evals(&["run", "--cassettes", "live", "--no-autosave"])
        .code(1);
    d.stdout_has("timed out after 200ms (after 5 attempts)");
    assert_eq!(d.cell("local/m1", "errors"), "1");
}

#[test]
fn a_dropped_connection_is_retried_then_an_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            // Read nothing, answer nothing: close the connection at once.
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(conn);
        }
    });
    let p = suite(&format!("http://{addr}"), 1, "");
    let d = p
        .evals(&["run", "--cassettes", "live", "--no-autosave"])
        .code(1);
    assert_eq!(d.cell("local/m1", "errors"), "1");
    d.stdout_has("(after 5 attempts)");
    assert!(accepted.load(std::sync::atomic::Ordering::SeqCst) >= 5);
}

#[test]
fn abort_after_stops_starting_calls_and_reports_what_finished() {
    let s = Server::start();
    s.mount(post().respond_with(
        ResponseTemplate::new(400).set_body_json(json!({"error": {"message": "bad model"}})),
    ));
    let p = suite(
        &s.uri(),
        10,
        "errors: { abort_after: { total: 3, percent: 50 } }",
    );
    let d = p
        .evals(&[
            "run",
            "--cassettes",
            "live",
            "--no-autosave",
            "-p",
            "1",
            "--format",
            "json",
            "-o",
            "out.json",
        ])
        .code(1);
    d.stderr_has("errors.abort_after: 3 of 3 finished calls failed (100%)");
    assert_eq!(s.hits(), 3, "nothing new started after the third failure");
    let run = snapshot(&p, "out.json");
    assert_eq!(run["run"]["status"], "aborted");
    assert_eq!(run["experiments"][0]["cases"].as_array().unwrap().len(), 3);
}

#[test]
fn a_hundred_failures_in_a_row_stop_when_nobody_can_be_asked() {
    let s = Server::start();
    s.mount(post().respond_with(
        ResponseTemplate::new(401).set_body_json(json!({"error": {"message": "no auth"}})),
    ));
    let p = suite(&s.uri(), 130, "");
    let d = p
        .evals(&[
            "run",
            "--cassettes",
            "live",
            "--no-autosave",
            "-p",
            "2",
            "--format",
            "json",
            "-o",
            "out.json",
        ])
        .code(1);
    d.stderr_has("100 calls in a row failed; the run is paused");
    d.stderr_has("local/m1: HTTP 401: no auth");
    d.stderr_has("stopping: stdin is not a terminal");
    let run = snapshot(&p, "out.json");
    assert_eq!(run["run"]["status"], "aborted");
    let n = run["experiments"][0]["cases"].as_array().unwrap().len();
    assert!((100..=102).contains(&n), "{n} cases finished");
}

#[test]
fn yes_keeps_going_past_a_hundred_failures_in_a_row() {
    let s = Server::start();
    s.mount(post().respond_with(
        ResponseTemplate::new(401).set_body_json(json!({"error": {"message": "no auth"}})),
    ));
    let p = suite(&s.uri(), 130, "");
    let d = p
        .evals(&[
            "run",
            "--cassettes",
            "live",
            "--no-autosave",
            "-p",
            "4",
            "--yes",
            "--format",
            "json",
            "-o",
            "out.json",
        ])
        .code(1);
    d.stderr_has("100 calls in a row failed; the run is paused");
    d.stderr_has("going on (--yes)");
    let run = snapshot(&p, "out.json");
    assert_eq!(run["run"]["status"], "completed");
    assert_eq!(
        run["experiments"][0]["cases"].as_array().unwrap().len(),
        130
    );
}

fn cassettes_in(dir: &Path) -> Vec<std::path::PathBuf> {
    files_under(dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect()
}

#[test]
fn sigint_mid_run_reports_what_finished_and_stores_an_interrupted_run() {
    let s = Server::start();
    s.mount(
        post()
            .and(body_string_contains("slow"))
            .respond_with(chat("ok").set_delay(Duration::from_secs(30)))
            .with_priority(1),
    );
    s.mount(post().respond_with(chat("ok")).with_priority(2));
    let p = suite(&s.uri(), 0, "").file(
        "evals/datasets/d/cases.jsonl",
        &(0..6)
            .map(|i| {
                let kind = if i < 2 { "fast" } else { "slow" };
                format!("{{\"id\": \"{kind}{i}\", \"input\": \"{kind} case {i}\", \"expect\": {{\"contains\": \"ok\"}}}}\n")
            })
            .collect::<String>(),
    );
    let child = Command::new(env!("CARGO_BIN_EXE_evals"))
        .args([
            "record",
            "-p",
            "6",
            "--format",
            "json",
            "-o",
            "out.json",
            "--no-autosave",
        ])
        .current_dir(p.path())
        .env("NO_COLOR", "1")
        .env_remove("CI")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn_bounded()
        .unwrap();
    let cassettes = p.path().join("evals/cassettes");
    let deadline = Instant::now() + Duration::from_secs(20);
    while (cassettes_in(&cassettes).len() < 2 || s.hits() < 6) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        cassettes_in(&cassettes).len(),
        2,
        "the fast cases recorded before the interrupt"
    );
    let started = Instant::now();
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "stderr:\n{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "in-flight calls were cancelled, not awaited"
    );
    assert!(stderr.contains("interrupted"), "{stderr}");

    let run = snapshot(&p, "out.json");
    assert_eq!(run["run"]["status"], "interrupted");
    let cases: Vec<&str> = run["experiments"][0]["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["case"].as_str().unwrap())
        .collect();
    assert_eq!(cases, vec!["fast0", "fast1"]);
    // Cassettes stay whole: only the finished cases, each a complete file, no temp files.
    let files = files_under(&cassettes);
    assert_eq!(files.len(), 2, "{files:?}");
    for f in files {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        assert_eq!(v["format"], 1);
    }
    let h = p.evals(&["history", "--json"]).ok();
    let runs: Value = serde_json::from_str(&h.stdout).unwrap();
    assert_eq!(runs[0]["status"], "interrupted", "{runs}");
}

#[test]
fn a_streak_that_hit_every_case_says_all() {
    let s = Server::start();
    s.mount(post().respond_with(
        ResponseTemplate::new(401).set_body_json(json!({"error": {"message": "no auth"}})),
    ));
    let p = suite(&s.uri(), 100, "");
    let d = p
        .evals(&["run", "--cassettes", "live", "--no-autosave", "-p", "1"])
        .code(1);
    d.stderr_has("100 calls in a row failed; the run is paused");
    d.stderr_has("  models: local/m1\n  datasets: d\n  cases: all\n");
}

#[test]
fn rate_limited_calls_wait_but_the_wait_is_not_latency() {
    let s = Server::start();
    s.mount(post().respond_with(chat("ok")));
    // One call at once, then 600 a minute: 4 cases wait 0, 0.1, 0.2 and 0.3 s.
    let p = suite(&s.uri(), 4, "");
    let config = p.read("evals/.llm-evals.config.yml");
    p.write(
        "evals/.llm-evals.config.yml",
        &config.replace(
            "  models: [m1]\n",
            "  rate_limit: { burst: 1, per_minute: 600 }\n  models: [m1]\n",
        ),
    );
    let started = Instant::now();
    let d = p
        .evals(&[
            "run",
            "--cassettes",
            "live",
            "--no-autosave",
            "-p",
            "4",
            "-m",
            "local/m1",
            "--format",
            "json",
            "-o",
            "r.json",
        ])
        .ok();
    d.stderr_has("wrote r.json");
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "the limit made calls wait"
    );
    let run: Value = serde_json::from_str(&p.read("r.json")).unwrap();
    let e = &run["experiments"][0];
    let latency = e["latency"]["mean_s"].as_f64().unwrap();
    let time = e["time_s"].as_f64().unwrap();
    assert!(latency < 0.1, "waiting counted as latency: {latency}");
    assert!(time < 0.25, "waiting counted in time: {time}");
}

#[test]
fn abort_after_lets_in_flight_calls_finish_and_reports_them() {
    let s = Server::start();
    s.mount(
        post().respond_with(
            ResponseTemplate::new(400)
                .set_body_json(json!({"error": {"message": "bad model"}}))
                .set_delay(Duration::from_millis(50)),
        ),
    );
    let p = suite(&s.uri(), 30, "errors: { abort_after: { total: 3 } }");
    let d = p
        .evals(&[
            "run",
            "--cassettes",
            "live",
            "--no-autosave",
            "-p",
            "3",
            "--format",
            "json",
            "-o",
            "out.json",
        ])
        .code(1);
    d.stderr_has("errors.abort_after: ");
    let run = snapshot(&p, "out.json");
    assert_eq!(run["run"]["status"], "aborted");
    let finished = run["experiments"][0]["cases"].as_array().unwrap().len();
    // Every call that started finished and is reported; nothing new started after the abort.
    assert_eq!(finished, s.hits());
    assert!((3..30).contains(&finished), "{finished}");
}
