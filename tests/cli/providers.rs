//! OpenAI-compatible providers against a wiremock server on loopback: the exact request
//! body, cost, keys, server errors, unusable replies, record/replay, field scoring and
//! template variables.

use serde_json::{Value, json};
use wiremock::ResponseTemplate;

use crate::harness::{MINI_SCHEMA, Project};
use crate::mock::{Server, chat};

/// A suite over `answer` with one JSONL case, and the provider sections in `providers`.
fn suite(providers: &str) -> Project {
    Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "suite: wire\nrequest_types: [prompt]\nadapter:\n  kind: prompt\n  system: \"Answer in JSON.\"\n  user: \"{{{{ input }}}}\"\n  json: true\n{MINI_SCHEMA}defaults: {{ max_tokens: 64 }}\n{providers}"
            ),
        )
        .file(
            "evals/datasets/d/cases.jsonl",
            "{\"id\": \"one\", \"input\": \"What is it?\", \"expected\": {\"answer\": \"x\"}}\n",
        )
}

const LIVE: &[&str] = &["compare", "--cassettes", "live", "--no-autosave"];

#[test]
fn custom_base_url_request_body_is_exact() {
    let s = Server::start();
    s.answer(
        "/v1/chat/completions",
        chat(
            r#"{"answer": "x"}"#,
            json!({"prompt_tokens": 10, "completion_tokens": 3}),
        ),
    );
    let p = suite(&format!(
        "local:\n  base_url: {}/v1\n  models:\n    - model: m1\n      effort: high\n      temperature: 0.2\n    - m2\n",
        s.uri()
    ));
    let d = p.evals(LIVE).ok();
    assert_eq!(d.cell("local/m1", "field_accuracy"), "100.0%");
    let mut bodies = s.bodies();
    bodies.sort_by_key(|b| b["model"].as_str().unwrap().to_string());
    assert_eq!(
        bodies,
        [
            json!({
                "model": "m1",
                "messages": [
                    {"role": "system", "content": "Answer in JSON."},
                    {"role": "user", "content": "What is it?"},
                ],
                "temperature": 0.2,
                "max_tokens": 64,
                "reasoning_effort": "high",
                "response_format": {"type": "json_object"},
            }),
            // No temperature or effort set: none sent.
            json!({
                "model": "m2",
                "messages": [
                    {"role": "system", "content": "Answer in JSON."},
                    {"role": "user", "content": "What is it?"},
                ],
                "max_tokens": 64,
                "response_format": {"type": "json_object"},
            }),
        ]
    );
}

#[test]
fn openrouter_sends_reasoning_effort_and_the_key_and_shows_its_cost() {
    let s = Server::start();
    s.answer(
        "/api/v1/chat/completions",
        chat(
            r#"{"answer": "x"}"#,
            json!({"prompt_tokens": 10, "completion_tokens": 3, "cost": 0.0123}),
        ),
    );
    let p = suite(&format!(
        "openrouter:\n  base_url: {}/api/v1\n  vendors:\n    openai:\n      models:\n        - model: gpt-x\n          effort: low\n",
        s.uri()
    ));
    let d = p
        .evals(LIVE)
        .env("OPENROUTER_API_KEY", "sk-or-test-123")
        .ok();
    assert_eq!(
        s.bodies(),
        [json!({
            "model": "openai/gpt-x",
            "messages": [
                {"role": "system", "content": "Answer in JSON."},
                {"role": "user", "content": "What is it?"},
            ],
            "max_tokens": 64,
            "reasoning": {"effort": "low"},
            "response_format": {"type": "json_object"},
        })]
    );
    assert_eq!(s.headers("authorization"), ["Bearer sk-or-test-123"]);
    assert_eq!(d.cell("openai/gpt-x", "cost"), "$0.0123");
    d.stdout_lacks("sk-or-test-123");
}

#[test]
fn pricing_computes_the_cost_when_the_provider_reports_none() {
    let s = Server::start();
    s.answer(
        "/v1/chat/completions",
        chat(
            r#"{"answer": "x"}"#,
            json!({"prompt_tokens": 1000, "completion_tokens": 500}),
        ),
    );
    let p = suite(&format!(
        "local:\n  base_url: {}/v1\n  models: [m1]\npricing:\n  local/m1: {{ input: 2.0, output: 10.0 }}\n",
        s.uri()
    ));
    let d = p.evals(LIVE).ok();
    // 1000 × $2/M + 500 × $10/M = $0.007
    assert_eq!(d.cell("local/m1", "cost"), "$0.0070");
}

#[test]
fn unknown_cost_is_a_dash_never_zero() {
    let s = Server::start();
    s.answer(
        "/v1/chat/completions",
        chat(
            r#"{"answer": "x"}"#,
            json!({"prompt_tokens": 1000, "completion_tokens": 500}),
        ),
    );
    let p = suite(&format!(
        "local:\n  base_url: {}/v1\n  models: [m1]\n",
        s.uri()
    ));
    let d = p.evals(LIVE).ok();
    assert_eq!(d.cell("local/m1", "cost"), "-");
}

#[test]
fn missing_openrouter_key_fails_before_any_call() {
    let s = Server::start();
    s.answer(
        "/api/v1/chat/completions",
        chat(r#"{"answer": "x"}"#, json!({})),
    );
    let p = suite(&format!(
        "openrouter:\n  base_url: {}/api/v1\n  vendors:\n    openai:\n      models: [gpt-x]\n",
        s.uri()
    ));
    let d = p.evals(LIVE).code(2);
    d.stderr_has("OPENROUTER_API_KEY is not set");
    assert_eq!(d.stdout, "");
    // The same through the environment instead of the flag.
    p.evals(&["compare", "--no-autosave"])
        .env("EVALS_CASSETTES", "live")
        .code(2)
        .stderr_has("OPENROUTER_API_KEY is not set");
    assert_eq!(s.bodies().len(), 0, "no request was sent");
}

#[test]
fn server_errors_are_counted_as_errors_not_zero_scores() {
    let s = Server::start();
    s.answer(
        "/v1/chat/completions",
        ResponseTemplate::new(500).set_body_json(json!({"error": {"message": "boom"}})),
    );
    let p = suite(&format!(
        "local:\n  base_url: {}/v1\n  models: [m1]\n",
        s.uri()
    ));
    let d = p.evals(LIVE).code(1);
    assert_eq!(d.cell("local/m1", "errors"), "1");
    assert_eq!(d.cell("local/m1", "field_accuracy"), "-");
    d.stderr_has("1 case errored");
}

#[test]
fn a_reply_that_is_not_json_scores_zero_and_is_not_an_error() {
    let s = Server::start();
    s.answer(
        "/v1/chat/completions",
        chat(
            "Sure! The answer is x.",
            json!({"prompt_tokens": 5, "completion_tokens": 5}),
        ),
    );
    let p = suite(&format!(
        "local:\n  base_url: {}/v1\n  models: [m1]\n",
        s.uri()
    ));
    let d = p.evals(LIVE).ok();
    assert_eq!(d.cell("local/m1", "errors"), "0");
    assert_eq!(d.cell("local/m1", "field_accuracy"), "0.0%");
    assert_eq!(d.cell("local/m1", "invalid_rate"), "100.0%");
}

#[test]
fn recorded_cassettes_replay_the_same_leaderboard_without_the_server() {
    let mut s = Server::start();
    s.answer(
        "/v1/chat/completions",
        chat(
            r#"{"answer": "x"}"#,
            json!({"prompt_tokens": 7, "completion_tokens": 2}),
        ),
    );
    let p = suite(&format!(
        "local:\n  base_url: {}/v1\n  models: [m1]\n",
        s.uri()
    ));
    let recorded = p
        .evals(&["compare", "--cassettes", "record", "--no-autosave"])
        .ok();
    assert_eq!(s.bodies().len(), 1);
    s.stop();
    let replayed = p
        .evals(&["compare", "--cassettes", "replay", "--no-autosave"])
        .ok();
    assert_eq!(replayed.stdout, recorded.stdout);
    assert_eq!(replayed.cell("local/m1", "field_accuracy"), "100.0%");
    assert_eq!(replayed.cell("local/m1", "tok_in"), "7");
}

#[test]
fn replay_without_a_recording_is_an_error_not_a_call() {
    let s = Server::start();
    s.answer(
        "/v1/chat/completions",
        chat(r#"{"answer": "x"}"#, json!({})),
    );
    let p = suite(&format!(
        "local:\n  base_url: {}/v1\n  models: [m1]\n",
        s.uri()
    ));
    let d = p
        .evals(&["compare", "--cassettes", "replay", "--no-autosave"])
        .code(1);
    assert_eq!(d.cell("local/m1", "errors"), "1");
    assert_eq!(s.bodies().len(), 0);
}

const TAX_SCHEMA: &str = "scorer:
  kind: fields
  schema:
    filing_status: { type: enum, values: [single, married_jointly, married_separately, head_of_household] }
    dependents: { type: integer }
    self_employed: { type: boolean }
    rental_properties: { type: integer }
    sold_investments: { type: boolean }
    owns_business_entity: { type: boolean }
    multi_state: { type: boolean }
    irs_letter: { type: boolean }
";

#[test]
fn vague_tax_case_with_two_invented_fields_scores_78_75_percent() {
    let s = Server::start();
    s.answer(
        "/v1/chat/completions",
        chat(
            &json!({
                "filing_status": "married_jointly",
                "dependents": 2,
                "self_employed": true,
                "rental_properties": null,
                "sold_investments": null,
                "owns_business_entity": null,
                "multi_state": null,
                "irs_letter": true,
            })
            .to_string(),
            json!({"prompt_tokens": 50, "completion_tokens": 40}),
        ),
    );
    let p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "suite: tax\nrequest_types: [prompt]\nadapter: {{ kind: prompt, user: \"{{{{ input }}}}\", json: true }}\n{TAX_SCHEMA}local:\n  base_url: {}/v1\n  models: [m1]\n",
                s.uri()
            ),
        )
        .file(
            "evals/datasets/tax/cases/vague/001/input.txt",
            "I freelance and got a letter from the IRS. Can you help?",
        )
        .file(
            "evals/datasets/tax/cases/vague/001/expected.json",
            r#"{"filing_status": null, "dependents": null, "self_employed": true, "rental_properties": null,
                "sold_investments": null, "owns_business_entity": null, "multi_state": null, "irs_letter": true}"#,
        );
    let d = p.evals(LIVE).ok();
    // 6 correct + 2 hallucinated (0.15 each) over 8 fields = 0.7875.
    assert_eq!(d.cell("local/m1", "field_accuracy"), "78.8%");
    assert_eq!(d.cell("local/m1", "hallucinated_rate"), "25.0%");
    assert_eq!(d.cell("local/m1", "exact"), "0.0%");

    let j = p
        .evals(&[
            "compare",
            "--cassettes",
            "live",
            "--no-autosave",
            "--format",
            "json",
        ])
        .ok();
    let v: Value = serde_json::from_str(&j.stdout).unwrap();
    let score = v["experiments"][0]["cases"][0]["score"].as_f64().unwrap();
    assert!((score - 0.7875).abs() < 1e-9, "{score}");
}

#[test]
fn missing_template_variable_errors_that_case_before_any_call() {
    let s = Server::start();
    s.answer(
        "/v1/chat/completions",
        chat(r#"{"answer": "x"}"#, json!({})),
    );
    let p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "suite: vars\nrequest_types: [prompt]\nadapter: {{ kind: prompt, user: \"Q: {{{{ vars.question }}}}\", json: true }}\n{MINI_SCHEMA}local:\n  base_url: {}/v1\n  models: [m1]\n",
                s.uri()
            ),
        )
        .file(
            "evals/datasets/d/cases.jsonl",
            concat!(
                r#"{"id": "has", "input": {"question": "what?"}, "expected": {"answer": "x"}}"#,
                "\n",
                r#"{"id": "lacks", "input": {"topic": "what?"}, "expected": {"answer": "x"}}"#,
                "\n"
            ),
        );
    let d = p
        .evals(&["run", "--cassettes", "live", "--no-autosave"])
        .code(1);
    let bodies = s.bodies();
    assert_eq!(bodies.len(), 1, "only the case with the variable calls");
    assert_eq!(bodies[0]["messages"][0]["content"], "Q: what?");
    assert_eq!(d.cell("local/m1", "errors"), "1");
    d.stdout_has(
        "lacks error: template 'user' uses `{{ vars.question }}` but this case has no such value; add it to the case's input or fix the template",
    );
}

#[test]
fn env_files_supply_a_key_the_environment_lacks_and_never_override_it() {
    let s = Server::start();
    s.answer(
        "/api/v1/chat/completions",
        chat(
            r#"{"answer": "x"}"#,
            json!({"prompt_tokens": 1, "completion_tokens": 1}),
        ),
    );
    let p = suite(&format!(
        "env_files: [../.env, ../missing.env]\nopenrouter:\n  base_url: {}/api/v1\n  vendors:\n    openai:\n      models: [gpt-x]\n",
        s.uri()
    ))
    .file(".env", "# keys for local runs\nexport OPENROUTER_API_KEY=\"sk-or-from-env-file\"\n");
    p.evals(LIVE).ok();
    p.evals(LIVE)
        .env("OPENROUTER_API_KEY", "sk-or-from-shell")
        .ok();
    assert_eq!(
        s.headers("authorization"),
        ["Bearer sk-or-from-env-file", "Bearer sk-or-from-shell"]
    );
}

#[test]
fn the_openai_section_sends_max_completion_tokens_and_its_key() {
    let s = Server::start();
    s.answer(
        "/v1/chat/completions",
        chat(
            r#"{"answer": "x"}"#,
            json!({"prompt_tokens": 1, "completion_tokens": 1}),
        ),
    );
    let p = suite(&format!(
        "openai:\n  base_url: {}/v1\n  models:\n    - model: gpt-x\n      effort: low\n",
        s.uri()
    ));
    let d = p
        .evals(LIVE)
        .env("OPENAI_API_KEY", "sk-test-openai-0001")
        .ok();
    assert_eq!(d.cell("openai/gpt-x", "field_accuracy"), "100.0%");
    assert_eq!(s.headers("authorization"), ["Bearer sk-test-openai-0001"]);
    let body = &s.bodies()[0];
    assert_eq!(body["model"], "gpt-x");
    assert_eq!(body["max_completion_tokens"], 64);
    assert_eq!(body["reasoning_effort"], "low");
    assert!(
        body.get("max_tokens").is_none() && body.get("reasoning").is_none(),
        "{body}"
    );
    p.evals(LIVE)
        .code(2)
        .stderr_has("OPENAI_API_KEY is not set: openai/gpt-x needs it for live calls");
}

#[test]
fn a_dead_local_server_waited_out_the_back_off_on_every_case() {
    // A real port, bound then closed: nothing listens there.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let p = suite(&format!(
        "local:\n  base_url: http://127.0.0.1:{port}/v1\n  models: [m1]\n"
    ));
    let started = std::time::Instant::now();
    // The real back-off (the harness shrinks it): retried, this would take 15 seconds.
    let d = p.evals(LIVE).env("EVALS_BACKOFF_SCALE", "1").code(1);
    let took = started.elapsed();
    // A deadline, not a benchmark: the start of the process and one refused connection.
    assert!(took < std::time::Duration::from_secs(3), "took {took:?}");
    d.stderr_has(&format!(
        "nothing listens on 127.0.0.1:{port}: is the server running?"
    ));
    // An error, never a 0.
    assert_eq!(d.cell("local/m1", "errors"), "1");
    assert_eq!(d.cell("local/m1", "field_accuracy"), "-");
    d.stderr_has("1 case errored");
}
