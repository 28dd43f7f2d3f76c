//! What providers and proxies really send (`tests/support/payloads/`, each naming its
//! source), served by wiremock and read through both doors: the prompt adapter and an exec
//! adapter's calls through the gateway. Errors are errors of the case, never a model's 0;
//! cut replies say so and count as truncated; costs are the real ones.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use wiremock::ResponseTemplate;

use crate::harness::{Done, Project};
use crate::mock::Server;

/// One recorded response: status, headers and body.
fn payload(name: &str) -> ResponseTemplate {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/support/payloads")
        .join(format!("{name}.json"));
    let p: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert!(
        p["source"].as_str().is_some_and(|s| !s.is_empty()),
        "{name}: no source"
    );
    let mut t = ResponseTemplate::new(p["status"].as_u64().unwrap() as u16);
    for (k, v) in p["headers"].as_object().unwrap() {
        t = t.insert_header(k.as_str(), v.as_str().unwrap());
    }
    t.set_body_raw(p["body"].to_string().into_bytes(), "application/json")
}

/// Reads a case, asks the gateway once (as an app would, with urllib), and answers with the
/// reply's JSON, or "not JSON" when it does not parse, or the status when it is no 200.
const WORKER: &str = r#"
import json, os, sys, urllib.request, urllib.error
for line in sys.stdin:
    msg = json.loads(line)
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": msg["case"]["input"]}]}).encode()
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", body,
        {"content-type": "application/json", "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
    out = {"id": msg["id"]}
    try:
        with urllib.request.urlopen(req) as r:
            content = json.loads(r.read())["choices"][0]["message"]["content"] or ""
        try:
            out["output"] = json.loads(content)
        except ValueError:
            out["raw"], out["error"] = content, "not JSON"
    except urllib.error.HTTPError as e:
        out["output"] = {"answer": "status %d" % e.code}
    print(json.dumps(out), flush=True)
"#;

#[derive(Clone, Copy, Debug)]
enum Door {
    Prompt,
    Exec,
}

const DOORS: [Door; 2] = [Door::Prompt, Door::Exec];

/// One case ("q", expecting Paris) asking `local/m1` (max_tokens 16) at `uri`, through
/// `door`; `extra` is added to the config.
fn suite(uri: &str, door: Door, extra: &str) -> Project {
    let adapter = match door {
        Door::Prompt => "adapter: { kind: prompt, json: true }\n",
        Door::Exec => "adapter: { kind: exec, command: [python3, evals/w.py] }\n",
    };
    Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "suite: p\nrequest_types: [prompt]\n{adapter}scorer: {{ kind: fields, schema: {{ answer: string }} }}\n{extra}local:\n  base_url: {uri}/v1\n  api_key_env: LOCAL_API_KEY\n  models:\n    - model: m1\n      max_tokens: 16\n"
            ),
        )
        .file("evals/w.py", WORKER)
        .file(
            "evals/datasets/d/cases.jsonl",
            "{\"id\": \"q\", \"input\": \"The capital of France?\", \"expected\": {\"answer\": \"Paris\"}}\n",
        )
}

/// `evals run` recording, its JSON report written to `out.json`.
fn record(p: &Project) -> Done {
    p.evals(&[
        "run",
        "--cassettes",
        "record",
        "--no-autosave",
        "--wide",
        "--format",
        "json",
        "-o",
        "out.json",
    ])
    .env("LOCAL_API_KEY", "local-key-0123456789abcdef")
    .output()
}

fn report(p: &Project) -> Value {
    serde_json::from_str(&p.read("out.json")).unwrap()
}

fn the_case(report: &Value) -> &Value {
    &report["experiments"][0]["cases"][0]
}

/// Serves `name` for every chat call, runs the suite through `door`; returns the server
/// (for its hits), the project and the run.
fn through(name: &str, door: Door, extra: &str) -> (Server, Project, Done) {
    let s = Server::start();
    s.answer("/v1/chat/completions", payload(name));
    let p = suite(&s.uri(), door, extra);
    let d = record(&p);
    (s, p, d)
}

fn cassettes(p: &Project) -> Vec<std::path::PathBuf> {
    crate::harness::files_under(&p.path().join("evals/cassettes"))
}

#[test]
fn error_null_in_a_successful_body_is_no_error() {
    for door in DOORS {
        let (_s, p, d) = through("error-null", door, "");
        assert_eq!(d.code, 0, "{door:?}: {}", d.stderr);
        let r = report(&p);
        assert_eq!(the_case(&r)["score"], 1.0, "{door:?}");
        assert_eq!(cassettes(&p).len(), 1, "{door:?}");
    }
}

#[test]
fn openrouters_per_choice_error_is_an_error_of_the_case_retried_and_never_recorded() {
    for door in DOORS {
        let (s, p, d) = through("openrouter-choice-error", door, "");
        assert_eq!(d.code, 1, "{door:?}: {}", d.stderr);
        let r = report(&p);
        let case = the_case(&r);
        assert_eq!(case["score"], Value::Null, "{door:?}: scored {case}");
        let error = case["error"].as_str().unwrap();
        assert!(
            error.contains("provider error (502): Upstream provider error"),
            "{door:?}: {error}"
        );
        assert_eq!(r["experiments"][0]["errors"], 1, "{door:?}");
        // The upstream said 502: worth the retries, and nothing recorded.
        assert_eq!(s.hits(), 5, "{door:?}");
        assert!(cassettes(&p).is_empty(), "{door:?}");
    }
}

#[test]
fn a_429_out_of_quota_is_one_call_not_five_and_an_error_of_the_case() {
    for door in DOORS {
        let (s, p, d) = through("openai-429-quota", door, "");
        assert_eq!(d.code, 1, "{door:?}: {}", d.stderr);
        assert_eq!(s.hits(), 1, "{door:?}: an out-of-credit 429 was retried");
        let r = report(&p);
        let error = the_case(&r)["error"].as_str().unwrap().to_string();
        assert!(
            error.starts_with("local/m1: HTTP 429: You exceeded your current quota"),
            "{door:?}: {error}"
        );
    }
}

#[test]
fn a_401_names_the_key_variable_of_the_section() {
    for door in DOORS {
        let (_s, p, d) = through("openai-401", door, "");
        assert_eq!(d.code, 1, "{door:?}");
        let r = report(&p);
        let error = the_case(&r)["error"].as_str().unwrap().to_string();
        assert!(
            error.starts_with("local/m1: HTTP 401: Incorrect API key provided"),
            "{door:?}: {error}"
        );
        assert!(
            error.ends_with(
                "(the key is LOCAL_API_KEY: check that it is set to a valid key for this provider)"
            ),
            "{door:?}: {error}"
        );
    }
}

#[test]
fn openrouters_provider_returned_error_shows_the_provider_its_words_and_the_json_hint() {
    for door in DOORS {
        let (_s, p, d) = through("openrouter-provider-error", door, "");
        assert_eq!(d.code, 1, "{door:?}");
        let r = report(&p);
        let error = the_case(&r)["error"].as_str().unwrap().to_string();
        assert!(
            error.contains("Provider returned error (OpenAI: 'messages' must contain the word 'json' in some form"),
            "{door:?}: {error}"
        );
        assert!(
            error.contains("mention JSON in the adapter's system or user prompt"),
            "{door:?}: {error}"
        );
        assert!(!error.contains('\n'), "{door:?}: {error}");
    }
}

#[test]
fn a_multi_line_provider_message_stays_on_one_line_and_is_cut_at_a_word() {
    for door in DOORS {
        let (_s, p, d) = through("multi-line-error", door, "");
        assert_eq!(d.code, 1, "{door:?}");
        let r = report(&p);
        let error = the_case(&r)["error"].as_str().unwrap().to_string();
        assert_eq!(
            error,
            "local/m1: HTTP 400: 1 validation error for ChatCompletionRequest max_tokens Input should be greater than 0 [type=greater_than, input_value=-1, input_type=int]",
            "{door:?}"
        );
    }
    let long = "word ".repeat(60) + "https://example.com/a/very/long/path/that/must/not/be/cut";
    let s = Server::start();
    s.answer(
        "/v1/chat/completions",
        ResponseTemplate::new(400).set_body_json(serde_json::json!({"error": {"message": long}})),
    );
    let p = suite(&s.uri(), Door::Prompt, "");
    record(&p);
    let r = report(&p);
    let error = the_case(&r)["error"].as_str().unwrap().to_string();
    assert!(error.ends_with("word word…"), "{error}");
    assert!(!error.contains("https://"), "{error}");
}

#[test]
fn a_reply_cut_at_max_tokens_says_so_and_counts_as_truncated() {
    for door in DOORS {
        let (_s, p, d) = through("openai-length", door, "");
        assert_eq!(d.code, 0, "{door:?}: {}", d.stderr);
        let r = report(&p);
        let case = the_case(&r);
        assert_eq!(case["truncated"], true, "{door:?}");
        assert_eq!(case["score"], 0.0, "{door:?}: a cut reply is the model's 0");
        let said = case["reply_error"].as_str().unwrap();
        assert!(
            said.starts_with("cut at max_tokens (16): "),
            "{door:?}: {said}"
        );
        assert_eq!(r["experiments"][0]["truncated"], 1, "{door:?}");
        assert_eq!(r["experiments"][0]["errors"], 0, "{door:?}");
    }
    // The leaderboard has the column, beside errors.
    let (_s, p, _) = through("openai-length", Door::Prompt, "");
    let d = p
        .evals(&[
            "run",
            "--cassettes",
            "replay",
            "--no-autosave",
            "--wide",
            "--explain",
        ])
        .output();
    assert_eq!(d.cell("local/m1", "truncated"), "1");
    assert_eq!(d.cell("local/m1", "errors"), "0");
    d.stdout_has("truncated          scored cases whose reply was cut at the token limit");
}

#[test]
fn a_reasoning_model_that_spent_every_token_thinking_is_told_apart() {
    let (_s, p, _) = through("openai-reasoning-length", Door::Prompt, "");
    let r = report(&p);
    let said = the_case(&r)["reply_error"].as_str().unwrap().to_string();
    assert_eq!(
        said,
        "cut at max_tokens (16): the model spent every token reasoning (16 reasoning tokens) and returned no answer; raise max_tokens or lower the effort"
    );
    assert_eq!(the_case(&r)["usage"]["reasoning_tokens"], 16);
    // Through the gateway the worker read "" and said "not JSON": the cut is said first.
    let (_s, p, _) = through("openai-reasoning-length", Door::Exec, "");
    let r = report(&p);
    let said = the_case(&r)["reply_error"].as_str().unwrap().to_string();
    assert!(
        said.starts_with("cut at max_tokens (16): the model spent every token reasoning"),
        "{said}"
    );
    assert_eq!(the_case(&r)["truncated"], true);
}

#[test]
fn a_refusal_keeps_its_words_as_the_reply_and_its_diagnostic() {
    for door in DOORS {
        let (_s, p, d) = through("openai-refusal", door, "");
        assert_eq!(d.code, 0, "{door:?}: {}", d.stderr);
        let r = report(&p);
        let case = the_case(&r);
        let words = "I'm very sorry, but I can't assist with that request.";
        assert_eq!(case["reply_error"], format!("refused: {words}"), "{door:?}");
        assert_eq!(case["raw"], words, "{door:?}");
        assert_eq!(case["score"], 0.0, "{door:?}");
        assert_eq!(
            case["error"],
            Value::Null,
            "{door:?}: a refusal is the model's answer, not an error"
        );
    }
}

#[test]
fn cached_prompt_tokens_are_priced_at_cached_input_and_reported() {
    let pricing = "pricing:\n  local/m1: { input: 2.5, output: 10, cached_input: 1.25 }\n";
    let want = (68.0 * 2.5 + 1152.0 * 1.25 + 8.0 * 10.0) / 1e6;
    for door in DOORS {
        let (_s, p, d) = through("openai-cached-tokens", door, pricing);
        assert_eq!(d.code, 0, "{door:?}: {}", d.stderr);
        let r = report(&p);
        let usage = &the_case(&r)["usage"];
        assert_eq!(usage["cached_tokens"], 1152, "{door:?}: {usage}");
        let cost = usage["cost_usd"].as_f64().unwrap();
        assert!((cost - want).abs() < 1e-12, "{door:?}: {cost} != {want}");
    }
}

#[test]
fn openrouter_byok_reports_the_upstream_cost_not_zero() {
    for door in DOORS {
        let (_s, p, d) = through("openrouter-byok", door, "");
        assert_eq!(d.code, 0, "{door:?}: {}", d.stderr);
        let r = report(&p);
        let usage = &the_case(&r)["usage"];
        assert_eq!(usage["cost_usd"], 0.0000339, "{door:?}: {usage}");
        assert_eq!(usage["billed_usd"], 0.0, "{door:?}: {usage}");
        assert_eq!(r["experiments"][0]["cost_usd"], 0.0000339, "{door:?}");
        assert_eq!(r["experiments"][0]["billed_usd"], 0.0, "{door:?}");
    }
    // Both figures where they differ: the table's cost is the inference's, the line under it
    // says what was billed.
    let (_s, p, _) = through("openrouter-byok", Door::Prompt, "");
    let d = p
        .evals(&["run", "--cassettes", "replay", "--no-autosave", "--wide"])
        .output();
    assert_eq!(d.cell("local/m1", "cost"), "$0.000034");
    d.stdout_has(
        "cost of local/m1 [max 16]: $0.000034 is the inference's (the upstream's, with your own key); the provider billed $0",
    );
}

#[test]
fn a_litellm_cost_header_is_the_cost_recorded_and_replayed() {
    for door in DOORS {
        let (s, p, d) = through("litellm-cost-header", door, "");
        assert_eq!(d.code, 0, "{door:?}: {}", d.stderr);
        assert_eq!(
            report(&p)["experiments"][0]["cost_usd"],
            0.000123,
            "{door:?}"
        );
        let files = cassettes(&p);
        let cassette = std::fs::read_to_string(&files[0]).unwrap();
        assert!(
            cassette.contains("\"x-litellm-response-cost\": \"0.000123\""),
            "{door:?}: {cassette}"
        );
        let mut s = s;
        s.stop();
        let d = p
            .evals(&[
                "run",
                "--cassettes",
                "replay",
                "--no-autosave",
                "--format",
                "json",
                "-o",
                "out.json",
            ])
            .output();
        assert_eq!(d.code, 0, "{door:?}: {}", d.stderr);
        assert_eq!(
            report(&p)["experiments"][0]["cost_usd"],
            0.000123,
            "{door:?}: replayed"
        );
    }
}

#[test]
fn when_no_contender_has_a_cost_the_weighted_score_leaves_cost_out_and_says_so() {
    let s = Server::start();
    s.answer("/v1/chat/completions", payload("error-null"));
    let p = suite(
        &s.uri(),
        Door::Prompt,
        "weighted_score:\n  weights: { score: 3, errors: -2, cost: -1 }\n",
    );
    let d = p
        .evals(&["run", "--cassettes", "record", "--no-autosave", "--wide"])
        .env("LOCAL_API_KEY", "local-key-0123456789abcdef")
        .ok();
    assert_eq!(d.cell("local/m1", "wscore"), "100.0%");
    d.stdout_has(
        "best weighted: local/m1 [max 16] — wscore 100.0% (cost unknown for every contender: left out of wscore)",
    );
}

/// A proxy serving two models (LiteLLM, vLLM): m1 is rate-limited once (429, Retry-After 2),
/// m2 never. A retry pauses m1 alone: every m2 call is made before m1's retry, where a
/// section-wide pause would hold them all back behind it. `pause: section` keeps that: there
/// m2 answers in 200 ms and runs one case at a time, so its ten calls span two seconds and
/// some are left for the pause to hold, however late m1's first call is scheduled.
#[test]
fn one_rate_limited_model_behind_a_proxy_does_not_delay_the_others() {
    use wiremock::matchers::body_string_contains;
    let chat = || payload("error-null");
    let cases: String = (0..10)
        .map(|i| format!("{{\"id\": \"c{i}\", \"input\": \"q{i}\", \"expected\": {{\"answer\": \"Paris\"}}}}\n"))
        .collect();
    let project = |uri: &str, pause: &str| {
        Project::new()
            .file(
                "evals/.llm-evals.config.yml",
                &format!(
                    "request_types: [prompt]\nadapter: {{ kind: prompt, json: true }}\nscorer: {{ kind: fields, schema: {{ answer: string }} }}\nlocal:\n  base_url: {uri}/v1\n{pause}  models: [m1, m2]\n"
                ),
            )
            .file("evals/datasets/d/cases.jsonl", &cases)
    };
    // (calls to m2 after m1's retry, m1's calls)
    let run = |pause: &str, delay: Duration, flags: &[&str]| {
        let s = Server::start();
        s.mount(
            crate::mock::post("/v1/chat/completions")
                .and(body_string_contains("\"model\":\"m1\""))
                .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "2"))
                .up_to_n_times(1)
                .with_priority(1),
        );
        s.mount(
            crate::mock::post("/v1/chat/completions")
                .respond_with(chat().set_delay(delay))
                .with_priority(2),
        );
        let p = project(&s.uri(), pause);
        let mut args = vec!["run", "--cassettes", "live", "--no-autosave", "-j", "2"];
        args.extend_from_slice(flags);
        p.evals(&args).ok();
        let sent: Vec<Value> = s
            .requests()
            .iter()
            .map(|r| serde_json::from_slice(&r.body).unwrap())
            .collect();
        let model = |i: usize| sent[i]["model"].as_str().unwrap().to_string();
        let m1: Vec<usize> = (0..sent.len()).filter(|&i| model(i) == "m1").collect();
        // m1's retry: the m1 request that repeats an earlier one.
        let retry = (0..sent.len())
            .find(|&i| (0..i).any(|j| sent[j] == sent[i]))
            .expect("m1 was retried");
        let late = (retry..sent.len()).filter(|&i| model(i) == "m2").count();
        (late, m1.len())
    };
    let (late, m1_calls) = run("", Duration::ZERO, &[]);
    assert_eq!(m1_calls, 11, "m1: ten cases and one retry");
    assert_eq!(late, 0, "m2 calls waited out m1's rate limit");
    // The shared pause: m2's calls in flight when m1 was limited go on, the rest wait.
    let (late, _) = run(
        "  pause: section\n",
        Duration::from_millis(200),
        &["-p", "1"],
    );
    assert!(late > 0, "pause: section let m2 run through m1's pause");
}
