//! The prompt adapter's `tools:` and `tool_choice:` (OpenAI function definitions) through
//! the native providers: Anthropic's Messages API, Gemini's generateContent and the OpenAI
//! Responses API each send them in their own shape, and the tool calls of each API's reply
//! reach the `tool_calls` assertions, live, recorded and replayed offline.

use serde_json::{Value, json};
use wiremock::ResponseTemplate;

use crate::harness::Project;
use crate::mock::Server;

/// Two tools, one written out as an OpenAI function, one in the short form; two cases
/// asking for the weather, in Paris (the reply's call: passes) and Berlin (fails).
fn suite(section: &str, tool_choice: &str) -> Project {
    Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                r#"suite: native-tools
request_types: [prompt]
adapter:
  kind: prompt
  system: "Use a tool."
  user: "{{{{ input }}}}"
  tools:
    - type: function
      function:
        name: get_weather
        description: The weather in a city.
        parameters: {{ type: object, properties: {{ city: {{ type: string }} }}, required: [city] }}
    - {{ name: get_time, parameters: {{ type: object, properties: {{ zone: {{ type: string }} }} }} }}
  tool_choice: {tool_choice}
scorer: {{ kind: assertions }}
defaults: {{ max_tokens: 64 }}
{section}
"#
            ),
        )
        .file(
            "evals/datasets/d/cases.jsonl",
            concat!(
                r#"{"id": "paris", "input": "Weather in Paris?", "expect": {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}], "tool_call_count": {"max": 1}}}"#,
                "\n",
                r#"{"id": "berlin", "input": "Weather in Berlin?", "expect": {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Berlin"}}]}}"#,
                "\n",
            ),
        )
}

/// Records the suite against `reply` (every request answered with it), then replays it
/// offline; returns the first request's body. Both runs score the calls the same way:
/// Paris passes, Berlin fails (the model always asks for Paris's weather).
fn recorded_and_replayed(
    section: &str,
    tool_choice: &str,
    route: &str,
    key: (&str, &str),
    reply: Value,
    contender: &str,
) -> Value {
    let mut s = Server::start();
    s.answer(route, ResponseTemplate::new(200).set_body_json(reply));
    let p = suite(&section.replace("URI", &s.uri()), tool_choice);
    let recorded = p
        .evals(&["record", "--no-autosave", "-p", "1"])
        .env(key.0, key.1)
        .code(0);
    let bodies = s.bodies();
    assert_eq!(bodies.len(), 2, "one call per case");
    s.stop();
    let replayed = p
        .evals(&["run", "--cassettes", "replay", "--no-autosave"])
        .code(1);
    for d in [&recorded, &replayed] {
        assert_eq!(d.cell(contender, "errors"), "0");
        // paris passes both its assertions (1), berlin fails its one (0): a mean of 50%.
        assert_eq!(d.cell(contender, "pass_rate"), "50.0%");
    }
    replayed.stderr_has(&format!(
        "{contender} [max 64] · d · berlin: fails its thresholds (1 assertion(s) failed)"
    ));
    replayed.stderr_lacks("· paris:");
    bodies[0].clone()
}

#[test]
fn anthropic_sends_tools_as_input_schemas_and_tool_choice_any_and_its_tool_use_is_checked() {
    let body = recorded_and_replayed(
        "anthropic:\n  base_url: URI/v1\n  models: [claude-t]\n",
        "required",
        "/v1/messages",
        ("ANTHROPIC_API_KEY", "sk-ant-tools-0123456789"),
        json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-t",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 7, "output_tokens": 3},
        }),
        "anthropic/claude-t",
    );
    assert_eq!(
        body["tools"],
        json!([
            {"name": "get_weather", "description": "The weather in a city.",
             "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
            {"name": "get_time",
             "input_schema": {"type": "object", "properties": {"zone": {"type": "string"}}}},
        ])
    );
    assert_eq!(body["tool_choice"], json!({"type": "any"}));
}

#[test]
fn gemini_sends_function_declarations_and_a_function_calling_config_and_its_function_call_is_checked()
 {
    let body = recorded_and_replayed(
        "gemini:\n  base_url: URI/v1beta\n  models: [gem-t]\n",
        "{ type: function, function: { name: get_weather } }",
        "/v1beta/models/gem-t:generateContent",
        ("GEMINI_API_KEY", "AIzaToolsKey0123456789"),
        json!({
            "candidates": [{"content": {"role": "model", "parts": [
                {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]},
                "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 3},
        }),
        "gemini/gem-t",
    );
    assert_eq!(
        body["tools"],
        json!([{"functionDeclarations": [
            {"name": "get_weather", "description": "The weather in a city.",
             "parametersJsonSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
            {"name": "get_time",
             "parametersJsonSchema": {"type": "object", "properties": {"zone": {"type": "string"}}}},
        ]}])
    );
    assert_eq!(
        body["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}})
    );
}

#[test]
fn responses_sends_flat_function_tools_and_a_named_tool_choice_and_its_function_call_is_checked() {
    let body = recorded_and_replayed(
        "openai:\n  base_url: URI/v1\n  api: responses\n  models: [gpt-t]\n",
        "{ type: function, function: { name: get_weather } }",
        "/v1/responses",
        ("OPENAI_API_KEY", "sk-resp-tools-0123456789"),
        json!({
            "id": "resp_1", "object": "response", "status": "completed", "model": "gpt-t",
            "output": [{"type": "function_call", "id": "fc_1", "call_id": "call_1",
                        "name": "get_weather", "arguments": "{\"city\":\"Paris\"}", "status": "completed"}],
            "usage": {"input_tokens": 7, "output_tokens": 3, "total_tokens": 10},
        }),
        "openai/gpt-t",
    );
    assert_eq!(
        body["tools"],
        json!([
            {"type": "function", "name": "get_weather", "description": "The weather in a city.",
             "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
             "strict": false},
            {"type": "function", "name": "get_time",
             "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}},
             "strict": false},
        ])
    );
    assert_eq!(
        body["tool_choice"],
        json!({"type": "function", "name": "get_weather"})
    );
}
