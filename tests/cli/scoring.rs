//! Scoring your way: an exec scorer in Python whose declared metrics are columns,
//! weights and thresholds like the built-in scorers' own; a scorer that crashes or breaks
//! the protocol makes an error of its case, never a 0.

use crate::harness::Project;

/// A 20-line scorer: `helpfulness` (the expected text appears), `tone` (no shouting);
/// it crashes on `crash`, reports an undeclared metric on `bogus`, and `verify` names a
/// case without an expected answer.
const SCORER: &str = r#"import json, os, sys
for line in sys.stdin:
    req = json.loads(line)
    if "verify" in req:
        problems = [] if req["verify"]["expected"] else ["no expected answer"]
        print(json.dumps({"id": req["id"], "problems": problems}), flush=True)
        continue
    out = str(req["reply"]["output"])
    if "crash" in out:
        print("about to fail, key " + os.environ.get("SCORER_API_KEY", "?"), file=sys.stderr, flush=True)
        sys.exit(3)
    if "env" in out:
        names = ",".join(sorted(os.environ))
        print(json.dumps({"id": req["id"], "metrics": {"helpfulness": 1, "tone": 1},
                          "diagnostics": {"env": names}}), flush=True)
        continue
    if "bogus" in out:
        print(json.dumps({"id": req["id"], "metrics": {"bogus": 1}}), flush=True)
        continue
    if "huge" in out:
        print(json.dumps({"id": req["id"], "metrics": {"helpfulness": 7}}), flush=True)
        continue
    tone = 0.0 if "!" in out else 1.0
    helpful = 1.0 if req["case"]["expected"] in out else 0.0
    notes = {"tone": "shouting"} if tone == 0 else {}
    print(json.dumps({"id": req["id"], "metrics": {"helpfulness": helpful, "tone": tone},
                      "diagnostics": notes}), flush=True)
"#;

fn scored(cases: &str) -> Project {
    Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            "suite: scored\nrequest_types: [prompt]\nadapter: { kind: prompt, user: \"{{ input }}\" }\nscorer:\n  kind: exec\n  command: [python3, evals/score.py]\n  metrics:\n    - { name: helpfulness, description: \"How well the reply answers\", primary: true }\n    - { name: tone, description: \"No shouting\" }\nminimum_scores: { tone: 0.5 }\nweighted_score: { weights: { helpfulness: 2, tone: 1 } }\nfake:\n  models: [echo]\n",
        )
        .file("evals/score.py", SCORER)
        .file("evals/datasets/d/cases.jsonl", cases)
}

#[test]
fn an_exec_scorers_environment_is_the_allow_list_and_its_own() {
    let p = scored(concat!(
        r#"{"id": "env", "input": "env", "expected": "x"}"#,
        "\n"
    ));
    let config = p.read("evals/.llm-evals.config.yml");
    p.write(
        "evals/.llm-evals.config.yml",
        &config.replace(
            "  command: [python3, evals/score.py]\n",
            "  command: [python3, evals/score.py]\n  env: { SCORER_MODE: strict }\n  pass_env: [MY_SETTING]\n",
        ),
    );
    let d = p
        .evals(&["run", "--no-autosave"])
        .env("GITHUB_TOKEN", "ghp_notreallyatoken1234567890abcdefABCD")
        .env("OPENAI_API_KEY", "sk-not-for-scorers-1234567890")
        .env("MY_SETTING", "on")
        .env("UNLISTED", "u")
        .ok();
    d.stdout_has("EVALS_SCORER_TOKEN");
    d.stdout_has("MY_SETTING");
    d.stdout_has("SCORER_MODE");
    d.stdout_has("PATH");
    d.stdout_lacks("GITHUB_TOKEN");
    d.stdout_lacks("OPENAI_API_KEY");
    d.stdout_lacks("UNLISTED");
}

const CASES: &str = concat!(
    r#"{"id": "good", "input": "hello x", "expected": "x"}"#,
    "\n",
    r#"{"id": "loud", "input": "hello x!", "expected": "x"}"#,
    "\n",
    r#"{"id": "off", "input": "hello", "expected": "x"}"#,
    "\n",
);

#[test]
fn an_exec_scorers_metrics_are_columns_weights_and_thresholds() {
    let p = scored(CASES);
    let d = p.evals(&["run", "--no-autosave", "--explain"]).code(1);
    // Its declared metrics are the leaderboard's columns, the primary one ranking.
    assert_eq!(d.cell("fake/echo", "helpfulness"), "66.7%");
    assert_eq!(d.cell("fake/echo", "tone"), "66.7%");
    assert_eq!(d.cell("fake/echo", "errors"), "0");
    // Weighted 2:1 over two metrics at 2/3 each.
    assert_eq!(d.cell("fake/echo", "wscore"), "66.7%");
    d.stdout_has("How well the reply answers");
    d.stdout_has("loud tone: ");
    d.stdout_has("\"shouting\"");
    // A case below `minimum_scores` on an exec metric fails the run and `check`.
    d.stderr_has("fake/echo · d · loud: fails its thresholds (tone 0 < 0.5)");
    d.stderr_lacks("· good:");
    p.evals(&["check", "--no-autosave"])
        .code(1)
        .stderr_has("fake/echo · d · loud: fails its thresholds (tone 0 < 0.5)");
    p.evals(&["check", "-c", "good", "-c", "off", "--no-autosave"])
        .ok();
    // `evals weights` knows the declared metrics before anything runs.
    let w = p.evals(&["weights"]).ok();
    w.stdout_has("helpfulness");
    w.stdout_has("66.7%");
}

#[test]
fn weights_and_thresholds_naming_an_undeclared_metric_are_refused() {
    let p = scored(CASES);
    let config = p.read("evals/.llm-evals.config.yml");
    p.write(
        "evals/.llm-evals.config.yml",
        &config.replace(
            "minimum_scores: { tone: 0.5 }",
            "minimum_scores: { tonne: 0.5 }",
        ),
    );
    p.evals(&["run", "--no-autosave"])
        .code(2)
        .stderr_has("minimum_scores: unknown metric 'tonne' (did you mean 'tone'?)");
}

#[test]
fn a_crashing_or_off_protocol_scorer_is_an_error_of_its_case() {
    let p = scored(concat!(
        r#"{"id": "good", "input": "hello x", "expected": "x"}"#,
        "\n",
        r#"{"id": "boom", "input": "crash", "expected": "x"}"#,
        "\n",
        r#"{"id": "odd", "input": "bogus", "expected": "x"}"#,
        "\n",
        r#"{"id": "big", "input": "huge", "expected": "x"}"#,
        "\n",
        r#"{"id": "after", "input": "x again", "expected": "x"}"#,
        "\n",
    ));
    // The scorer gets a key of its own, which it prints to stderr as it crashes.
    let config = p.read("evals/.llm-evals.config.yml");
    p.write(
        "evals/.llm-evals.config.yml",
        &config.replace(
            "  command: [python3, evals/score.py]\n",
            "  command: [python3, evals/score.py]\n  pass_env: [SCORER_API_KEY]\n",
        ),
    );
    let d = p
        .evals(&["check", "-p", "1", "--no-autosave"])
        .env("SCORER_API_KEY", "scorer-secret-value-123456")
        .code(1);
    assert_eq!(d.cell("fake/echo", "errors"), "3");
    // Scored cases only: the errors are no zeros.
    assert_eq!(d.cell("fake/echo", "helpfulness"), "100.0%");
    d.stderr_has(
        "fake/echo · d · boom: errored: scorer crashed: the scorer closed its output (exit status: 3); its stderr (1 line) went to log/scorer.",
    );
    // Its stderr went to the scorer's log, scrubbed of the secret it printed.
    let logs: Vec<_> = crate::harness::files_under(&p.path().join("evals/log"))
        .into_iter()
        .chain(crate::harness::files_under(&p.path().join("log")))
        .collect();
    let text: String = logs
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    assert!(text.contains("about to fail, key "), "{logs:?}: {text}");
    assert!(!text.contains("about to fail, key ?"), "{text}");
    assert!(!text.contains("scorer-secret-value-123456"), "{text}");
    d.stderr_has("fake/echo · d · odd: errored: scorer: reported the metric 'bogus', which scorer.metrics does not declare (declared: helpfulness, tone)");
    d.stderr_has("fake/echo · d · big: errored: scorer: helpfulness is 7, outside 0..1");
    d.stderr_lacks("· good: errored");
    // A new worker took over after the crash.
    d.stderr_lacks("· after: errored");
}

#[test]
fn verify_prints_the_problems_an_exec_scorer_answers() {
    let p = scored(concat!(
        r#"{"id": "good", "input": "hello x", "expected": "x"}"#,
        "\n",
        r#"{"id": "bare", "input": "hello"}"#,
        "\n",
    ));
    let d = p.evals(&["verify"]).code(1);
    d.stdout_has("evals/datasets/d/cases.jsonl:2: no expected answer");
    d.stderr_has("1 problem in 2 cases");
    // A run refuses to start on it, before any call.
    p.evals(&["run", "--no-autosave"])
        .code(2)
        .stderr_has("no expected answer");
}

#[test]
fn an_exec_scorer_declares_its_metrics() {
    let p = scored(CASES);
    let config = p.read("evals/.llm-evals.config.yml");
    p.write(
        "evals/.llm-evals.config.yml",
        &config.replace(
            "    - { name: tone, description: \"No shouting\" }\n",
            "    - { name: tone, primary: true }\n",
        ),
    );
    p.evals(&["run", "--no-autosave"])
        .code(2)
        .stderr_has("scorer.metrics: 2 metrics are primary; mark exactly one `primary: true`");
}

/// A chat completion that asks for one call, `get_weather({"city": "Paris", "unit": "c"})`.
fn asks_for_weather() -> wiremock::ResponseTemplate {
    wiremock::ResponseTemplate::new(200).set_body_json(serde_json::json!({
        "id": "gen-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null,
            "tool_calls": [{"id": "call_1", "type": "function", "function": {
                "name": "get_weather", "arguments": "{\"city\": \"Paris\", \"unit\": \"c\"}"}}]}}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 7},
    }))
}

/// The tool a suite offers, as an OpenAI function definition.
const WEATHER_TOOL: &str = "{ type: function, function: { name: get_weather, description: \"Weather in a city\", parameters: { type: object, properties: { city: { type: string }, unit: { type: string } }, required: [city] } } }";

/// Tool-call cases: what passes and what fails against a reply asking for get_weather(Paris).
const TOOL_CASES: &str = concat!(
    r#"{"id": "asks", "input": "Weather in Paris?", "expect": {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}}"#,
    "\n",
    r#"{"id": "counted", "input": "Weather in Paris?", "expect": {"tool_call_count": {"min": 1, "max": 1}, "no_tool_calls": false}}"#,
    "\n",
    r#"{"id": "rome", "input": "Weather in Rome?", "expect": {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Rome"}}]}}"#,
    "\n",
    r#"{"id": "quiet", "input": "Just say hi", "expect": {"no_tool_calls": true}}"#,
    "\n",
    r#"{"id": "sequence", "input": "Weather twice", "expect": {"ordered": true, "tool_calls": [{"name": "get_weather"}, {"name": "get_weather"}]}}"#,
    "\n",
);

#[test]
fn a_prompt_adapter_offers_tools_and_the_recorded_calls_are_checked() {
    let mut server = crate::mock::Server::start();
    server.answer("/v1/chat/completions", asks_for_weather());
    let p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "suite: tools\nrequest_types: [prompt]\nadapter:\n  kind: prompt\n  user: \"{{{{ input }}}}\"\n  tools: [{WEATHER_TOOL}]\n  tool_choice: auto\nscorer: {{ kind: assertions }}\nlocal:\n  base_url: {}/v1\n  api_key_env: LOCAL_KEY\n  models: [m1]\n",
                server.uri()
            ),
        )
        .file("evals/datasets/d/cases.jsonl", TOOL_CASES);
    let d = p
        .evals(&["record", "--no-autosave"])
        .env("LOCAL_KEY", "local-secret-key-123456")
        .ok();
    assert_eq!(d.cell("local/m1", "errors"), "0");
    // The tools went out as OpenAI function definitions, with the tool choice.
    let body = &server.bodies()[0];
    assert_eq!(body["tools"][0]["function"]["name"], "get_weather");
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tool_choice"], "auto");
    server.stop();
    // Replayed with no key and no server: the recorded calls are what the checks see.
    let d = p.evals(&["check", "--no-autosave"]).code(1);
    assert_eq!(d.cell("local/m1", "errors"), "0");
    d.stderr_has("local/m1 · d · rome: fails its thresholds (1 assertion(s) failed)");
    d.stderr_has("local/m1 · d · quiet: fails its thresholds (1 assertion(s) failed)");
    d.stderr_has("local/m1 · d · sequence: fails its thresholds (1 assertion(s) failed)");
    d.stderr_lacks("· asks:");
    d.stderr_lacks("· counted:");
    // What was wanted, beside the calls the model asked for.
    let d = p
        .evals(&[
            "run",
            "--cassettes",
            "replay",
            "-c",
            "rome",
            "--no-autosave",
        ])
        .code(1);
    d.stdout_has(r#"rome tool_calls get_weather({"city":"Rome"}): want {"arguments":{"city":"Rome"},"name":"get_weather"}, got [{"arguments":{"city":"Paris","unit":"c"},"name":"get_weather"}]"#);
}

#[test]
fn a_tool_call_check_without_tool_call_information_is_an_error_not_a_pass() {
    // The fake provider answers in the process: nobody sees tool calls, so `no_tool_calls`
    // cannot pass (`null` is not `[]`).
    let p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            "request_types: [prompt]\nscorer: { kind: assertions }\nfake: { models: [echo] }\n",
        )
        .file(
            "evals/datasets/d/cases.jsonl",
            concat!(
                r#"{"id": "quiet", "input": "hi", "expect": {"no_tool_calls": true}}"#,
                "\n",
                r#"{"id": "text", "input": "hi", "expect": {"contains": "hi"}}"#,
                "\n",
            ),
        );
    let d = p.evals(&["check", "--no-autosave"]).code(1);
    assert_eq!(d.cell("fake/echo", "errors"), "1");
    d.stderr_has("fake/echo · d · quiet: errored: no_tool_calls: no tool-call information");
    d.stderr_lacks("· text:");
}

/// An agent on the official Python `openai` SDK, offering a tool; it answers with the
/// reply's text and reports nothing of the calls itself.
const SDK_AGENT: &str = r#"import json, sys
from openai import OpenAI
client = OpenAI()
tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]
for line in sys.stdin:
    req = json.loads(line)
    r = client.chat.completions.create(model="m1", tools=tools,
        messages=[{"role": "user", "content": req["case"]["input"]}])
    print(json.dumps({"id": req["id"], "output": r.choices[0].message.content or ""}), flush=True)
"#;

#[test]
fn an_exec_adapter_on_the_openai_sdk_has_the_calls_the_gateway_observed_checked() {
    let python = crate::sdk::python();
    let mut server = crate::mock::Server::start();
    server.answer("/v1/chat/completions", asks_for_weather());
    let p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "suite: agent\nrequest_types: [prompt]\nadapter:\n  kind: exec\n  command: [{}, evals/agent.py]\nscorer: {{ kind: assertions }}\nlocal:\n  base_url: {}/v1\n  api_key_env: LOCAL_KEY\n  models: [m1]\n",
                python.display(),
                server.uri()
            ),
        )
        .file("evals/agent.py", SDK_AGENT)
        .file("evals/datasets/d/cases.jsonl", TOOL_CASES);
    let d = p
        .evals(&["record", "--no-autosave"])
        .env("LOCAL_KEY", "local-secret-key-123456")
        .ok();
    assert_eq!(d.cell("local/m1", "errors"), "0");
    // The SDK sent its tools through the gateway to the provider.
    assert_eq!(
        server.bodies()[0]["tools"][0]["function"]["name"],
        "get_weather"
    );
    server.stop();
    let d = p.evals(&["check", "--no-autosave"]).code(1);
    assert_eq!(d.cell("local/m1", "errors"), "0");
    d.stderr_has("local/m1 · d · rome: fails its thresholds (1 assertion(s) failed)");
    d.stderr_has("local/m1 · d · quiet: fails its thresholds (1 assertion(s) failed)");
    d.stderr_lacks("· asks:");
    d.stderr_lacks("· counted:");
    let d = p
        .evals(&[
            "run",
            "--cassettes",
            "replay",
            "-c",
            "rome",
            "--no-autosave",
        ])
        .code(1);
    d.stdout_has(r#"got [{"arguments":{"city":"Paris","unit":"c"},"name":"get_weather"}]"#);
}

#[test]
fn a_conversation_input_is_sent_after_the_system_message() {
    let server = crate::mock::Server::start();
    server.answer(
        "/v1/chat/completions",
        crate::mock::chat(
            "Paris, still.",
            serde_json::json!({"prompt_tokens": 9, "completion_tokens": 3}),
        ),
    );
    let p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "request_types: [prompt]\nadapter:\n  kind: prompt\n  system: \"You answer in {{{{ messages | length }}}} turns or fewer.\"\nscorer: {{ kind: assertions }}\nlocal:\n  base_url: {}/v1\n  api_key_env: LOCAL_KEY\n  models: [m1]\n",
                server.uri()
            ),
        )
        .file(
            "evals/datasets/d/cases.jsonl",
            concat!(
                r#"{"id": "chat", "input": {"messages": [{"role": "user", "content": "Capital of France?"}, {"role": "assistant", "content": "Paris."}, {"role": "user", "content": "Sure?"}]}, "expect": {"contains": "Paris"}}"#,
                "\n",
                r#"{"id": "bad", "input": {"messages": [{"content": "no role"}]}, "expect": {"contains": "Paris"}}"#,
                "\n",
            ),
        );
    let d = p
        .evals(&["record", "--no-autosave"])
        .env("LOCAL_KEY", "local-secret-key-123456")
        .code(1);
    // The conversation, as written, after the rendered system message ({{ messages }}).
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 1);
    assert_eq!(
        bodies[0]["messages"],
        serde_json::json!([
            {"role": "system", "content": "You answer in 3 turns or fewer."},
            {"role": "user", "content": "Capital of France?"},
            {"role": "assistant", "content": "Paris."},
            {"role": "user", "content": "Sure?"},
        ])
    );
    // A message without a role fails its case before any call, saying which.
    d.stderr_has("input.messages[0] is not a message");
}

#[test]
fn the_bundled_tool_desk_suite_replays_offline_with_no_key() {
    // The repository's layout: the suite under fixtures/, its cassettes in cassettes/.
    let p = Project::new();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for part in ["fixtures/tool-desk", "cassettes/tool-desk"] {
        crate::harness::copy_tree(
            &root.join(part),
            &p.path().join(part),
            &["evals/results", ".evals", "log"],
        );
    }
    let d = p
        .evals(&["check", "--no-autosave"])
        .cwd(p.path().join("fixtures/tool-desk"))
        .env("CI", "1")
        .code(1);
    d.stderr_lacks("errored");
    // The exit 1: desk-small refunds the whole order, desk-large calls a tool for the hours.
    d.stderr_has("local/desk-small · support · refund-half-1042: fails its thresholds (1 assertion(s) failed)");
    d.stderr_has("local/desk-large · support · opening-hours: fails its thresholds (2 assertion(s) failed, grounded 0 < 1)");
    assert_eq!(d.cell("local/desk-small", "pass_rate"), "66.7%");
    assert_eq!(d.cell("local/desk-small", "grounded"), "100.0%");
    assert_eq!(d.cell("local/desk-large", "grounded"), "66.7%");
    assert_eq!(d.cell("local/desk-large", "errors"), "0");
}

#[test]
fn an_exec_worker_may_report_its_own_tool_calls_and_one_that_reports_none_has_no_information() {
    // No call through the gateway: only what the worker says it called is known.
    let p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            "request_types: [prompt]\nadapter: { kind: exec, command: [python3, evals/w.py] }\nscorer: { kind: assertions }\nfake: { models: [echo] }\n",
        )
        .file(
            "evals/w.py",
            r#"import json, sys
for line in sys.stdin:
    req = json.loads(line)
    answer = {"id": req["id"], "output": "done"}
    if req["case"]["input"] == "report":
        answer["tool_calls"] = [{"name": "lookup", "arguments": {"q": "x"}}]
    print(json.dumps(answer), flush=True)
"#,
        )
        .file(
            "evals/datasets/d/cases.jsonl",
            concat!(
                r#"{"id": "reported", "input": "report", "expect": {"tool_calls": [{"name": "lookup", "arguments": {"q": "x"}}]}}"#,
                "\n",
                r#"{"id": "silent", "input": "quiet", "expect": {"tool_call_count": {"max": 0}}}"#,
                "\n",
            ),
        );
    let d = p.evals(&["check", "--no-autosave"]).code(1);
    assert_eq!(d.cell("fake/echo", "errors"), "1");
    d.stderr_lacks("· reported:");
    d.stderr_has("fake/echo · d · silent: errored: tool_call_count ..0: no tool-call information");
}

/// The same conversation through the native APIs: Anthropic's `messages` as written,
/// Gemini's `contents` with `model` for the assistant's turn, the Responses API's `input`
/// items. Each also sends the system message its own way.
#[test]
fn a_conversation_goes_to_every_native_api_in_its_shape() {
    use wiremock::ResponseTemplate;
    let server = crate::mock::Server::start();
    server.answer(
        "/v1/messages",
        ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "type": "message", "content": [{"type": "text", "text": "Paris."}],
            "usage": {"input_tokens": 9, "output_tokens": 2}})),
    );
    server.answer(
        "/v1beta/models/g1:generateContent",
        ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "candidates": [{"content": {"role": "model", "parts": [{"text": "Paris."}]}}],
            "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 2}})),
    );
    server.answer(
        "/v1/responses",
        ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "output": [{"type": "message", "content": [{"type": "output_text", "text": "Paris."}]}],
            "usage": {"input_tokens": 9, "output_tokens": 2}})),
    );
    let uri = server.uri();
    let p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "request_types: [prompt]\nadapter:\n  kind: prompt\n  system: Be brief.\nscorer: {{ kind: assertions }}\nanthropic:\n  base_url: {uri}/v1\n  models: [a1]\ngemini:\n  base_url: {uri}/v1beta\n  models: [g1]\nopenai:\n  base_url: {uri}/v1\n  api: responses\n  models: [r1]\n"
            ),
        )
        .file(
            "evals/datasets/d/cases.jsonl",
            concat!(
                r#"{"id": "chat", "input": {"messages": [{"role": "user", "content": "Capital of France?"}, {"role": "assistant", "content": "Paris."}, {"role": "user", "content": "Sure?"}]}, "expect": {"contains": "Paris"}}"#,
                "\n"
            ),
        );
    p.evals(&["record", "--no-autosave"])
        .env("ANTHROPIC_API_KEY", "anthropic-secret-key-123456")
        .env("GEMINI_API_KEY", "gemini-secret-key-123456")
        .env("OPENAI_API_KEY", "openai-secret-key-123456")
        .ok();
    let turns = serde_json::json!([
        {"role": "user", "content": "Capital of France?"},
        {"role": "assistant", "content": "Paris."},
        {"role": "user", "content": "Sure?"},
    ]);
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 3, "{bodies:?}");
    let sent = |key: &str| {
        bodies
            .iter()
            .find(|b| b.get(key).is_some())
            .unwrap()
            .clone()
    };
    let anthropic = sent("messages");
    assert_eq!(anthropic["messages"], turns);
    assert_eq!(anthropic["system"], "Be brief.");
    let gemini = sent("contents");
    assert_eq!(
        gemini["contents"],
        serde_json::json!([
            {"role": "user", "parts": [{"text": "Capital of France?"}]},
            {"role": "model", "parts": [{"text": "Paris."}]},
            {"role": "user", "parts": [{"text": "Sure?"}]},
        ])
    );
    let responses = sent("input");
    assert_eq!(responses["input"], turns);
    assert_eq!(responses["instructions"], "Be brief.");
}
