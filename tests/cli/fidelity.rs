//! The exec gateway relays what it is given (issue 30): a worker's request reaches the
//! provider byte for byte but for the contender's fields, the provider's answer reaches the
//! worker byte for byte, live and replayed, and the cassette keeps both; the trajectory
//! names where a call went; tool calls are in the snapshot.

use serde_json::Value;
use wiremock::ResponseTemplate;
use wiremock::matchers::{method, path};

use crate::harness::{Project, files_under};
use crate::mock::Server;

/// A worker that sends `evals/body.json`'s bytes, as they are, to the gateway with a raw
/// HTTP client (no SDK to rewrite them), writes the bytes it got back to `got.bin`, and
/// answers the model's content as its output.
const RAW_WORKER: &str = r#"
import http.client, json, os, sys, urllib.parse

u = urllib.parse.urlsplit(os.environ["OPENAI_BASE_URL"])
body = open("evals/body.json", "rb").read()
for line in sys.stdin:
    msg = json.loads(line)
    c = http.client.HTTPConnection(u.hostname, u.port)
    c.request("POST", u.path + "/chat/completions", body,
              {"content-type": "application/json",
               "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
    r = c.getresponse()
    got = r.read()
    open("got.bin", "wb").write(got)
    content = json.loads(got)["choices"][0]["message"]["content"]
    print(json.dumps({"id": msg["id"], "output": json.loads(content)}), flush=True)
"#;

/// What the worker sends: keys out of order, odd spacing, `1e2`, a 23-digit integer, a
/// key given twice, an escape, and the model the worker thinks it asks.
const SENT: &str = "{ \"model\" :\"any\",\"messages\":[{\"role\":\"user\",\"content\":\"h\\u00e9\"}],  \"n\":12345678901234567890123,\n\"t\":1e2 ,\"a\":{\"z\":1,\"b\":2.50},\"a\":{\"z\":1,\"b\":2.50}}";

/// What the provider answers: its own key order, spacing and numbers, and a newline.
const ANSWERED: &str = "{\"id\":\"c1\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"{\\\"answer\\\": \\\"ok\\\"}\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3},\"big\":12345678901234567890123,\"e\":1e2}\n";

#[test]
fn a_body_goes_to_the_provider_and_back_byte_for_byte_recorded_and_replayed() {
    let mut server = Server::start();
    server.mount(
        wiremock::Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(
                ResponseTemplate::new(200).set_body_raw(ANSWERED.as_bytes(), "application/json"),
            ),
    );
    let p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "suite: bytes\nrequest_types: [prompt]\nadapter:\n  kind: exec\n  command: [python3, evals/worker.py]\nscorer:\n  kind: fields\n  schema: {{ answer: string }}\nlocal:\n  base_url: {}/v1\n  models: [m1]\n",
                server.uri()
            ),
        )
        .file("evals/worker.py", RAW_WORKER)
        .file("evals/body.json", SENT)
        .file(
            "evals/datasets/d/cases.jsonl",
            "{\"id\": \"c\", \"input\": \"x\", \"expected\": {\"answer\": \"ok\"}}\n",
        );
    p.evals(&["record", "--no-autosave"]).ok();

    // The provider got the worker's bytes, the contender's model in place of its own.
    let forwarded = SENT.replacen("\"any\"", "\"m1\"", 1);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(String::from_utf8_lossy(&requests[0].body), forwarded);
    // The worker got the provider's bytes.
    assert_eq!(p.read("got.bin"), ANSWERED);

    // The cassette keeps both as they were: the request's JSON as it was sent, the
    // answer (a newline after it) as a string holding its text.
    let files = files_under(&p.path().join("evals/cassettes"));
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(text.contains(&format!("\"raw\": {forwarded}")), "{text}");
    let cassette: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(cassette["format"], 4);
    let interaction = &cassette["interactions"][0];
    assert_eq!(interaction["response"]["raw"], ANSWERED);
    assert_eq!(interaction["request"].get("body"), None);

    // Offline, the worker gets the same bytes back from the cassette.
    server.stop();
    std::fs::remove_file(p.path().join("got.bin")).unwrap();
    p.evals(&["run", "--cassettes", "replay", "--no-autosave"])
        .ok();
    assert_eq!(p.read("got.bin"), ANSWERED);
}
