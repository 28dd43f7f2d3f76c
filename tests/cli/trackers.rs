//! Trackers (issue 19): the real `evals` binary replaying a fixture suite, its tracker's
//! server a wiremock on loopback. The OTLP payload is decoded with opentelemetry-proto's own
//! types; Braintrust's requests are read as the JSON they are; the selection rules and
//! their errors are the seed's.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use serde_json::{Value, json};
use wiremock::matchers::{method, path_regex};
use wiremock::{Mock, ResponseTemplate};

use crate::harness::{Project, files_under, mini_with};
use crate::mock::{Server, chat};

/// Replays, keeps nothing on disk but the history, and is told nothing by the machine.
const REPLAY: &[&str] = &["compare", "--cassettes", "replay", "--no-autosave"];

/// Variables that would choose a tracker on the machine running the tests.
const TRACKER_VARS: &[&str] = &[
    "BRAINTRUST_API_KEY",
    "BRAINTRUST_API_URL",
    "BRAINTRUST_PROJECT_ID",
    "LOGFIRE_TOKEN",
    "LOGFIRE_BASE_URL",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
];

fn evals(p: &Project, args: &[&str]) -> crate::harness::Run {
    let mut r = p.evals(args);
    for v in TRACKER_VARS {
        r = r.env(v, "");
    }
    r
}

/// Every span of every OTLP request the server received, each body decoded; asserts each
/// request was protobuf to `/v1/traces`.
fn spans(s: &Server) -> (Vec<Span>, Vec<Vec<u8>>) {
    let mut out = Vec::new();
    let mut bodies = Vec::new();
    for r in s.requests() {
        assert_eq!(r.method.as_str(), "POST");
        assert_eq!(r.url.path(), "/v1/traces");
        assert_eq!(
            r.headers.get("content-type").unwrap().to_str().unwrap(),
            "application/x-protobuf"
        );
        let req = ExportTraceServiceRequest::decode(r.body.as_slice()).expect("an OTLP request");
        for rs in req.resource_spans {
            let resource = rs.resource.expect("a resource");
            assert_eq!(
                attr(&resource.attributes, "service.name"),
                Some(Attr::S("evals".into()))
            );
            for ss in rs.scope_spans {
                out.extend(ss.spans);
            }
        }
        bodies.push(r.body.clone());
    }
    (out, bodies)
}

#[derive(Debug, Clone, PartialEq)]
enum Attr {
    S(String),
    F(f64),
    I(i64),
    B(bool),
}

fn attr(attrs: &[KeyValue], key: &str) -> Option<Attr> {
    let v = attrs
        .iter()
        .find(|a| a.key == key)?
        .value
        .as_ref()?
        .value
        .as_ref()?;
    Some(match v {
        any_value::Value::StringValue(s) => Attr::S(s.clone()),
        any_value::Value::DoubleValue(f) => Attr::F(*f),
        any_value::Value::IntValue(i) => Attr::I(*i),
        any_value::Value::BoolValue(b) => Attr::B(*b),
        other => panic!("{key}: unexpected {other:?}"),
    })
}

fn text(v: &str) -> Option<Attr> {
    Some(Attr::S(v.into()))
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// The OTLP server: 200 to every POST of traces.
fn collector() -> Server {
    let s = Server::start();
    s.answer("/v1/traces", ResponseTemplate::new(200));
    s
}

#[test]
fn otlp_sends_a_trace_per_experiment_with_a_child_span_per_case_and_no_reply() {
    let s = collector();
    let header = "otlp-header-secret-4711";
    let d = evals(&Project::toy(), REPLAY)
        .arg("--tracker")
        .arg("otlp")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &s.uri())
        .env(
            "OTEL_EXPORTER_OTLP_HEADERS",
            &format!("x-team=evals,x-auth=Bearer%20{header}"),
        )
        .ok();
    d.stderr_lacks("warning: tracker");
    let (spans, bodies) = spans(&s);
    for r in s.requests() {
        assert_eq!(r.headers.get("x-team").unwrap(), "evals");
        assert_eq!(
            r.headers.get("x-auth").unwrap().to_str().unwrap(),
            format!("Bearer {header}")
        );
    }
    let (roots, cases): (Vec<&Span>, Vec<&Span>) =
        spans.iter().partition(|s| s.parent_span_id.is_empty());
    // 2 fakes × 2 datasets, 4 cases each.
    assert_eq!(roots.len(), 4, "{roots:?}");
    assert_eq!(cases.len(), 16);
    let mut seen = Vec::new();
    for root in &roots {
        let a = &root.attributes;
        assert_eq!(attr(a, "evals.suite"), text("toy"));
        assert_eq!(attr(a, "evals.provider"), text("fake"));
        assert_eq!(attr(a, "evals.cases"), Some(Attr::I(4)));
        assert_eq!(attr(a, "evals.errors"), Some(Attr::I(0)));
        let Some(Attr::S(model)) = attr(a, "gen_ai.request.model") else {
            panic!("no model: {a:?}")
        };
        let Some(Attr::S(dataset)) = attr(a, "evals.dataset") else {
            panic!("no dataset")
        };
        assert!(
            matches!(attr(a, "evals.mean.field_accuracy"), Some(Attr::F(_))),
            "{a:?}"
        );
        let Some(Attr::S(settings)) = attr(a, "evals.settings") else {
            panic!("no settings")
        };
        let settings: Value = serde_json::from_str(&settings).unwrap();
        assert_eq!(settings["temperature"], "0.1");
        assert_eq!(settings["max_tokens"], 1024);
        assert_eq!(root.trace_id.len(), 16);
        assert_eq!(root.span_id.len(), 8);
        assert!(root.end_time_unix_nano >= root.start_time_unix_nano);
        seen.push(format!("{model}·{dataset}"));
        // Its cases: children of it, in its trace.
        let children: Vec<&&Span> = cases
            .iter()
            .filter(|c| c.parent_span_id == root.span_id)
            .collect();
        assert_eq!(children.len(), 4, "{model} {dataset}");
        for c in children {
            assert_eq!(c.trace_id, root.trace_id);
            let a = &c.attributes;
            assert_eq!(attr(a, "evals.case.dataset"), text(&dataset));
            assert!(matches!(attr(a, "evals.case.id"), Some(Attr::S(_))));
            assert!(
                matches!(attr(a, "evals.case.variant"), Some(Attr::S(v)) if v == "clear" || v == "vague")
            );
            assert!(matches!(attr(a, "evals.case.score"), Some(Attr::F(_))));
            assert!(matches!(
                attr(a, "evals.metric.field_accuracy"),
                Some(Attr::F(_))
            ));
            assert!(matches!(attr(a, "evals.case.duration_s"), Some(Attr::F(_))));
            assert_eq!(attr(a, "evals.case.reply"), None, "no reply unless asked");
            assert!(c.start_time_unix_nano <= c.end_time_unix_nano);
            assert!(c.status.is_none());
        }
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            "echo·animals",
            "echo·colors",
            "parrot·animals",
            "parrot·colors"
        ]
    );
    for b in &bodies {
        // echo's reply to the cat, as the model wrote it and as parsed.
        assert!(!contains(
            b,
            r#"{"kind": "animal", "name": "cat", "legs": 4, "warm": null}"#
        ));
        assert!(!contains(
            b,
            r#"{"kind":"animal","name":"cat","legs":4,"warm":null}"#
        ));
        assert!(!contains(b, header), "the header's value is in a payload");
    }
}

/// One case whose answer echoes `note` back; its reply text is `{"answer": "x", ...}`.
#[test]
fn case_spans_follow_the_genai_conventions_with_an_evaluation_event_per_metric_and_score() {
    // The README's first run (the bundled tax-intake suite, its OpenRouter cassettes): some
    // replies miss fields, so some evaluations explain themselves.
    let s = collector();
    evals(&crate::cassettes::repository_root(), REPLAY)
        .arg("--tracker")
        .arg("otlp")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &s.uri())
        .ok();
    let (spans, _) = spans(&s);
    let cases: Vec<&Span> = spans
        .iter()
        .filter(|s| !s.parent_span_id.is_empty())
        .collect();
    assert!(cases.len() > 10, "{}", cases.len());
    let (mut explained, mut models) = (0, std::collections::BTreeSet::new());
    for c in cases {
        let a = &c.attributes;
        assert_eq!(attr(a, "gen_ai.operation.name"), text("chat"));
        assert_eq!(attr(a, "gen_ai.provider.name"), text("openrouter"));
        let Some(Attr::S(model)) = attr(a, "gen_ai.request.model") else {
            panic!("no model: {a:?}")
        };
        models.insert(model);
        let evaluations: Vec<_> = c
            .events
            .iter()
            .filter(|e| e.name == "gen_ai.evaluation.result")
            .collect();
        // One for the case's score, one for each metric (field_accuracy, exact, …).
        let metrics: Vec<&str> = a
            .iter()
            .filter_map(|kv| kv.key.strip_prefix("evals.metric."))
            .collect();
        assert!(metrics.contains(&"field_accuracy"), "{metrics:?}");
        assert_eq!(evaluations.len(), 1 + metrics.len(), "{:?}", c.events);
        let by_name = |n: &str| {
            evaluations
                .iter()
                .find(|e| attr(&e.attributes, "gen_ai.evaluation.name") == text(n))
                .unwrap_or_else(|| panic!("no evaluation {n}: {evaluations:?}"))
        };
        let score = by_name("score");
        let Some(Attr::F(value)) = attr(&score.attributes, "gen_ai.evaluation.score.value") else {
            panic!("no score value: {score:?}")
        };
        assert_eq!(attr(a, "evals.case.score"), Some(Attr::F(value)));
        let label = attr(&score.attributes, "gen_ai.evaluation.score.label");
        assert_eq!(
            label,
            match attr(a, "evals.case.passed") {
                Some(Attr::B(true)) => text("pass"),
                Some(Attr::B(false)) => text("fail"),
                _ => None,
            }
        );
        match attr(&score.attributes, "gen_ai.evaluation.explanation") {
            Some(Attr::S(why)) => {
                assert!(value < 1.0, "a perfect case explained: {why}");
                assert!(why.contains(" judged wrong: "), "{why}");
                explained += 1;
            }
            None => assert_eq!(value, 1.0),
            other => panic!("{other:?}"),
        }
        for m in metrics {
            let metric = by_name(m);
            assert_eq!(
                attr(&metric.attributes, "gen_ai.evaluation.score.value"),
                attr(a, &format!("evals.metric.{m}"))
            );
            assert_eq!(metric.time_unix_nano, c.end_time_unix_nano);
        }
    }
    assert!(models.len() > 1, "{models:?}");
    assert!(explained > 0, "no case of the suite missed anything");
}

fn replying(note: &str, extra: &str) -> Project {
    mini_with("tape", extra).file(
        "evals/datasets/d/cases.jsonl",
        &format!(
            "{{\"id\": \"one\", \"input\": \"say {{\\\"answer\\\": \\\"x\\\", \\\"note\\\": \\\"{note}\\\"}}\", \"expected\": {{\"answer\": \"x\"}}}}\n"
        ),
    )
}

#[test]
fn include_replies_sends_the_reply_text_its_secrets_scrubbed() {
    let secret = "svc-token-0123456789abcdef";
    for (extra, want_reply) in [("", false), ("otlp: { include_replies: true }\n", true)] {
        let s = collector();
        let p = replying(&format!("zebra {secret}"), extra);
        evals(&p, REPLAY)
            .args_tracker("otlp")
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &s.uri())
            .env("MY_SERVICE_TOKEN", secret)
            .ok();
        let (spans, bodies) = spans(&s);
        let case = spans.iter().find(|s| !s.parent_span_id.is_empty()).unwrap();
        let reply = attr(&case.attributes, "evals.case.reply");
        if want_reply {
            let Some(Attr::S(text)) = reply else {
                panic!("no reply: {:?}", case.attributes)
            };
            assert!(text.contains("\"answer\":\"x\""), "{text}");
            assert!(text.contains("zebra [REDACTED]"), "{text}");
        } else {
            assert_eq!(reply, None);
        }
        for b in &bodies {
            assert_eq!(contains(b, "zebra"), want_reply);
            assert!(!contains(b, secret));
        }
    }
}

trait TrackerArg {
    fn args_tracker(self, name: &str) -> Self;
}

impl TrackerArg for crate::harness::Run {
    fn args_tracker(self, name: &str) -> Self {
        self.arg("--tracker").arg(name)
    }
}

#[test]
fn logfire_sends_to_its_base_url_with_the_token_and_otel_variables_win_over_it() {
    let token = "lf-write-token-98765";
    let logfire = collector();
    evals(&Project::toy(), REPLAY)
        .args_tracker("logfire")
        .env("LOGFIRE_TOKEN", token)
        .env("LOGFIRE_BASE_URL", &logfire.uri())
        .ok();
    let (spans_sent, bodies) = spans(&logfire);
    assert_eq!(spans_sent.len(), 20);
    assert_eq!(
        logfire.headers("authorization"),
        vec![token.to_string(); logfire.hits()]
    );
    assert!(bodies.iter().all(|b| !contains(b, token)));

    // OTEL_EXPORTER_OTLP_ENDPOINT/HEADERS set: they win, and -v says so.
    let logfire = collector();
    let otel = collector();
    let d = evals(
        &Project::toy(),
        &["compare", "--cassettes", "replay", "--no-autosave", "-v"],
    )
    .args_tracker("logfire")
    .env("LOGFIRE_TOKEN", token)
    .env("LOGFIRE_BASE_URL", &logfire.uri())
    .env("OTEL_EXPORTER_OTLP_ENDPOINT", &otel.uri())
    .env("OTEL_EXPORTER_OTLP_HEADERS", "x-collector=yes")
    .ok();
    assert_eq!(logfire.hits(), 0);
    assert_eq!(spans(&otel).0.len(), 20);
    assert!(
        otel.headers("authorization").is_empty(),
        "the token went to another server"
    );
    assert_eq!(
        otel.headers("x-collector"),
        vec!["yes".to_string(); otel.hits()]
    );
    d.stderr_has(&format!(
        "verbose: tracker logfire: OTEL_EXPORTER_OTLP_ENDPOINT/HEADERS are set and win over LOGFIRE_BASE_URL and LOGFIRE_TOKEN: traces to {}/v1/traces (headers from OTEL_EXPORTER_OTLP_HEADERS: x-collector)\n",
        otel.uri()
    ));
}

/// A Braintrust API: the project `p-1`, experiments `e-1`, `e-2`, ..., inserts, summaries.
fn braintrust() -> Server {
    let s = Server::start();
    s.answer(
        "/v1/project",
        ResponseTemplate::new(200).set_body_json(json!({"id": "p-1", "name": "ignored"})),
    );
    let n = std::sync::atomic::AtomicUsize::new(0);
    s.answer("/v1/experiment", move |_: &wiremock::Request| {
        let i = n.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        ResponseTemplate::new(200)
            .set_body_json(json!({"id": format!("e-{i}"), "name": format!("exp {i}")}))
    });
    s.mount(
        Mock::given(method("POST"))
            .and(path_regex(r"^/v1/experiment/e-\d+/insert$"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"row_ids": []}))),
    );
    s.mount(
        Mock::given(method("GET"))
            .and(path_regex(r"^/v1/experiment/e-\d+/summarize$"))
            .respond_with(|r: &wiremock::Request| {
                let id = r.url.path().split('/').nth(3).unwrap().to_string();
                ResponseTemplate::new(200).set_body_json(json!({
                    "experiment_name": id,
                    "project_name": "p",
                    "experiment_url": format!("https://bt.test/app/p/experiments/{id}"),
                    "project_url": "https://bt.test/app/p",
                    "scores": {},
                }))
            }),
    );
    s
}

#[test]
fn braintrust_registers_the_project_creates_an_experiment_per_contender_and_dataset_and_inserts_rows()
 {
    let s = braintrust();
    let key = "bt-api-key-1234567890";
    let d = evals(&Project::toy(), REPLAY)
        .env("BRAINTRUST_API_KEY", key)
        .env("BRAINTRUST_API_URL", &s.uri())
        .arg("--project")
        .arg("toy-evals")
        .ok();
    let seen = s.seen();
    let paths: Vec<String> = seen.iter().map(|(m, p, _)| format!("{m} {p}")).collect();
    // The project, then per experiment: create, insert its rows (one batch), summarize.
    let mut want = vec!["POST /v1/project".to_string()];
    for i in 1..=4 {
        want.push("POST /v1/experiment".into());
        want.push(format!("POST /v1/experiment/e-{i}/insert"));
        want.push(format!("GET /v1/experiment/e-{i}/summarize"));
    }
    assert_eq!(paths, want);
    assert_eq!(seen[0].2, json!({"name": "toy-evals"}));
    assert_eq!(
        s.headers("authorization"),
        vec![format!("Bearer {key}"); s.hits()]
    );
    let created = &seen[1].2;
    assert_eq!(created["project_id"], "p-1");
    assert_eq!(created["metadata"]["suite"], "toy");
    assert_eq!(created["metadata"]["provider"], "fake");
    assert_eq!(created["metadata"]["cases"], 4);
    let rows = seen[2].2["events"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    let cat = rows
        .iter()
        .find(|r| r["metadata"]["case"] == "clear/001")
        .unwrap_or_else(|| panic!("{rows:#?}"));
    assert_eq!(
        cat["input"],
        "A cat is a small animal with four legs.\n\nAnswer: {\"kind\": \"animal\", \"name\": \"cat\", \"legs\": 4, \"warm\": null}\n"
    );
    assert_eq!(
        cat["expected"],
        json!({"kind": "animal", "name": "cat", "legs": 4, "warm": null})
    );
    assert!(cat["output"].is_object(), "{cat:#}");
    assert!(cat["scores"]["field_accuracy"].is_number(), "{cat:#}");
    assert_eq!(cat["metadata"]["dataset"], "animals");
    assert_eq!(cat["metadata"]["variant"], "clear");
    assert!(cat["metadata"]["usage"].is_object());
    assert!(cat["metadata"]["outcomes"].is_object());
    assert!(cat.get("error").is_none());
    for (_, _, body) in &seen {
        assert!(!body.to_string().contains(key));
    }
    for i in 1..=4 {
        d.stderr_has(&format!("https://bt.test/app/p/experiments/e-{i}\n"));
    }
    d.stderr_has(
        "braintrust: fake/echo [temp 0.1, max 1024] on animals: https://bt.test/app/p/experiments/",
    );
}

#[test]
fn braintrust_project_id_beats_the_project_names() {
    let s = braintrust();
    let p = mini_with("tape", "project: named\n").file(
        "evals/datasets/d/cases.jsonl",
        "{\"id\": \"one\", \"input\": \"say {\\\"answer\\\": \\\"x\\\"}\", \"expected\": {\"answer\": \"x\"}}\n",
    );
    evals(&p, REPLAY)
        .env("BRAINTRUST_API_KEY", "bt-api-key-1234567890")
        .env("BRAINTRUST_API_URL", &s.uri())
        .env("BRAINTRUST_PROJECT_ID", "proj-uuid-1")
        .ok();
    let seen = s.seen();
    assert_eq!(
        seen[0].1, "/v1/experiment",
        "no project registered: {seen:?}"
    );
    assert_eq!(seen[0].2["project_id"], "proj-uuid-1");
    let rows = seen[1].2["events"].as_array().unwrap();
    assert_eq!(rows[0]["output"], json!({"answer": "x"}));
    assert_eq!(rows[0]["scores"]["field_accuracy"], 1.0);
    assert_eq!(
        rows[0]["scores"]["restraint"],
        Value::Null,
        "does not apply"
    );
}

#[test]
fn the_flag_beats_the_config_which_beats_the_environment_and_v_says_why() {
    let otlp = collector();
    let bt = braintrust();
    let p = mini_with("tape", "tracker: otlp\n");
    let vargs = ["compare", "--cassettes", "replay", "--no-autosave", "-v"];
    let with_env = |r: crate::harness::Run| {
        r.env("OTEL_EXPORTER_OTLP_ENDPOINT", &otlp.uri())
            .env("BRAINTRUST_API_KEY", "bt-api-key-1234567890")
            .env("BRAINTRUST_API_URL", &bt.uri())
    };
    // The config's tracker: over the key in the environment.
    let d = with_env(evals(&p, &vargs)).ok();
    d.stderr_has("verbose: tracker: otlp (tracker: otlp in evals/.llm-evals.config.yml)\n");
    assert_eq!((otlp.hits(), bt.hits()), (1, 0));
    // The flag over the config.
    let d = with_env(evals(&p, &vargs)).args_tracker("braintrust").ok();
    d.stderr_has("verbose: tracker: braintrust (--tracker braintrust)\n");
    assert_eq!(otlp.hits(), 1);
    assert!(bt.hits() > 0);
    // The environment alone: the one key set selects its tracker.
    let bt2 = braintrust();
    let q = mini_with("tape", "");
    let d = evals(&q, &vargs)
        .env("BRAINTRUST_API_KEY", "bt-api-key-1234567890")
        .env("BRAINTRUST_API_URL", &bt2.uri())
        .ok();
    d.stderr_has(
        "verbose: tracker: braintrust (BRAINTRUST_API_KEY is set, and no other tracker's key)\n",
    );
    assert!(bt2.hits() > 0);
    // Nothing set: local only.
    let d = evals(&q, &vargs).ok();
    d.stderr_has(
        "verbose: tracker: local only (no tracker's key is set: BRAINTRUST_API_KEY, LOGFIRE_TOKEN)\n",
    );
}

#[test]
fn two_keys_and_no_choice_is_an_error_asking_for_tracker() {
    let p = mini_with("tape", "");
    evals(&p, REPLAY)
        .env("BRAINTRUST_API_KEY", "bt-api-key-1234567890")
        .env("LOGFIRE_TOKEN", "lf-write-token-98765")
        .code(2)
        .stderr_has(
            "error: LOGFIRE_TOKEN and BRAINTRUST_API_KEY are both set: choose the tracker with --tracker logfire|braintrust (or tracker: in evals/.llm-evals.config.yml), or keep results local with --local\n",
        );
}

#[test]
fn local_and_tracker_none_send_nothing_whatever_is_set() {
    let bt = braintrust();
    let p = mini_with("tape", "tracker: braintrust\n");
    for extra in [&["--local"][..], &["--tracker", "none"][..]] {
        let mut r = evals(
            &p,
            &["compare", "--cassettes", "replay", "--no-autosave", "-v"],
        )
        .env("BRAINTRUST_API_KEY", "bt-api-key-1234567890")
        .env("LOGFIRE_TOKEN", "lf-write-token-98765")
        .env("BRAINTRUST_API_URL", &bt.uri());
        for a in extra {
            r = r.arg(a);
        }
        let d = r.ok();
        d.stderr_has(&format!(
            "verbose: tracker: local only ({})\n",
            extra.join(" ")
        ));
    }
    assert_eq!(bt.hits(), 0);
    evals(&p, REPLAY)
        .arg("--local")
        .args_tracker("otlp")
        .code(2)
        .stderr_has("error: --local and --tracker otlp: the one keeps results local, the other sends them; drop one\n");
}

#[test]
fn a_chosen_tracker_whose_key_is_missing_fails_before_any_model_call() {
    let provider = Server::start();
    provider.answer(
        "/v1/chat/completions",
        chat(
            "{\"answer\": \"x\"}",
            json!({"prompt_tokens": 3, "completion_tokens": 2}),
        ),
    );
    let p = mini_with(
        "tape",
        &format!(
            "local:\n  base_url: {}/v1\n  models: [m1]\n",
            provider.uri()
        ),
    );
    let live = [
        "compare",
        "--cassettes",
        "live",
        "--no-autosave",
        "-m",
        "local/m1",
    ];
    for (tracker, var) in [
        ("braintrust", "BRAINTRUST_API_KEY"),
        ("logfire", "LOGFIRE_TOKEN"),
        ("otlp", "OTEL_EXPORTER_OTLP_ENDPOINT"),
    ] {
        evals(&p, &live)
            .args_tracker(tracker)
            .code(2)
            .stderr_has(&format!(
                "error: tracker {tracker} (from --tracker {tracker}): {var} is not set: export {var}="
            ));
    }
    let q = mini_with(
        "tape",
        &format!(
            "tracker: braintrust\nlocal:\n  base_url: {}/v1\n  models: [m1]\n",
            provider.uri()
        ),
    );
    evals(&q, &live).code(2).stderr_has(
        "error: tracker braintrust (from tracker: braintrust in evals/.llm-evals.config.yml): BRAINTRUST_API_KEY is not set",
    );
    assert_eq!(provider.hits(), 0, "a model was called");
    // The same run with --local calls the model: the count above could have moved.
    evals(&q, &live).arg("--local").ok();
    assert_eq!(provider.hits(), 1);
}

#[test]
fn a_tracker_server_failing_warns_once_and_the_exit_code_stands() {
    for code in [0, 1] {
        let s = Server::start();
        s.answer(
            "/v1/traces",
            ResponseTemplate::new(500).set_body_string("collector down"),
        );
        // A threshold no fake meets fails the run (exit 1) with the tracker as without it.
        let extra = if code == 1 {
            "minimum_scores: { field_accuracy: 1.1 }\n"
        } else {
            ""
        };
        let p = replying("x", extra);
        let d = evals(&p, REPLAY)
            .args_tracker("otlp")
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &s.uri())
            .code(code);
        assert_eq!(s.hits(), 1, "one failed request, then nothing more");
        let warning = format!(
            "warning: tracker otlp failed, and sent nothing more: POST {}/v1/traces: HTTP 500 Internal Server Error: collector down (sent before it: 0 experiment spans, 0 case spans); the run's results are kept locally (its JSON snapshot and the history)\n",
            s.uri()
        );
        d.stderr_has(&warning);
        assert_eq!(d.stderr.matches("warning: tracker").count(), 1);
        evals(&p, REPLAY).arg("--local").code(code);
    }
    // A server that is not there at all (the discard port, closed): the same.
    let uri = "http://127.0.0.1:9";
    let d = evals(&replying("x", ""), REPLAY)
        .env("BRAINTRUST_API_KEY", "bt-api-key-1234567890")
        .env("BRAINTRUST_API_URL", uri)
        .ok();
    d.stderr_has(&format!(
        "warning: tracker braintrust failed, and sent nothing more: POST {uri}/v1/project: "
    ));
    d.stderr_lacks("bt-api-key-1234567890");
}

#[test]
fn tracker_calls_are_never_recorded_in_cassettes() {
    let provider = Server::start();
    provider.answer(
        "/v1/chat/completions",
        chat(
            "{\"answer\": \"x\"}",
            json!({"prompt_tokens": 3, "completion_tokens": 2}),
        ),
    );
    let otlp = collector();
    let p = mini_with(
        "tape",
        &format!(
            "local:\n  base_url: {}/v1\n  models: [m1]\n",
            provider.uri()
        ),
    );
    evals(&p, &["record", "--no-autosave", "-m", "local/m1"])
        .args_tracker("otlp")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &otlp.uri())
        .ok();
    assert_eq!(provider.hits(), 1);
    assert!(otlp.hits() > 0);
    let files = files_under(&p.path().join("evals/cassettes"));
    assert_eq!(files.len(), 1, "{files:?}");
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(!text.contains("/v1/traces"), "{}", f.display());
    }
}

#[test]
fn tracker_sections_are_strict_config_keys() {
    let p = mini_with("tape", "logfire:\n  include_replys: true\n");
    evals(&p, REPLAY).code(2).stderr_has(
        "evals/.llm-evals.config.yml:11:3: unknown key 'include_replys' in logfire (did you mean 'include_replies'?)",
    );
    let p = mini_with("tape", "tracker: braintrst\n");
    evals(&p, REPLAY)
        .code(2)
        .stderr_has("unknown value 'braintrst' (did you mean 'braintrust'?)");
    evals(&mini_with("tape", ""), REPLAY)
        .args_tracker("logfir")
        .code(2)
        .stderr_has("error: --tracker logfir: no such tracker (did you mean 'logfire'?); the trackers are local (or none), otlp, logfire and braintrust\n");
}

#[test]
fn an_error_of_a_case_is_its_spans_status_and_exception_and_its_rows_error() {
    // Replayed with no recording: every case of the local model is a miss (no score).
    let p = mini_with(
        "tape",
        "local:\n  base_url: http://127.0.0.1:9/v1\n  models: [m1]\n",
    );
    let otlp = collector();
    evals(
        &p,
        &[
            "compare",
            "--cassettes",
            "replay",
            "--no-autosave",
            "-m",
            "local/m1",
        ],
    )
    .args_tracker("otlp")
    .env("OTEL_EXPORTER_OTLP_ENDPOINT", &otlp.uri())
    .code(1);
    let (spans, _) = spans(&otlp);
    let root = spans.iter().find(|s| s.parent_span_id.is_empty()).unwrap();
    assert_eq!(attr(&root.attributes, "evals.errors"), Some(Attr::I(1)));
    let case = spans.iter().find(|s| !s.parent_span_id.is_empty()).unwrap();
    let status = case.status.as_ref().expect("an error status");
    assert_eq!(status.code, 2);
    assert!(
        status.message.starts_with("no cassette for this case"),
        "{}",
        status.message
    );
    assert_eq!(case.events.len(), 2, "{:?}", case.events);
    assert_eq!(case.events[0].name, "exception");
    assert_eq!(
        attr(&case.events[0].attributes, "exception.type"),
        text("miss")
    );
    // The GenAI conventions' evaluation: it could not be judged, and says why, no value.
    let eval = &case.events[1];
    assert_eq!(eval.name, "gen_ai.evaluation.result");
    assert_eq!(
        attr(&eval.attributes, "gen_ai.evaluation.name"),
        text("score")
    );
    assert_eq!(attr(&eval.attributes, "error.type"), text("miss"));
    assert_eq!(
        attr(&eval.attributes, "gen_ai.evaluation.score.value"),
        None
    );
    assert!(matches!(
        attr(&eval.attributes, "gen_ai.evaluation.explanation"),
        Some(Attr::S(why)) if why.starts_with("no cassette for this case")
    ));
    assert_eq!(attr(&case.attributes, "evals.case.score"), None);

    let bt = braintrust();
    evals(
        &p,
        &[
            "compare",
            "--cassettes",
            "replay",
            "--no-autosave",
            "-m",
            "local/m1",
        ],
    )
    .env("BRAINTRUST_API_KEY", "bt-api-key-1234567890")
    .env("BRAINTRUST_API_URL", &bt.uri())
    .code(1);
    let seen = bt.seen();
    let row = &seen[2].2["events"][0];
    assert!(
        row["error"]
            .as_str()
            .unwrap()
            .starts_with("no cassette for this case"),
        "{row:#}"
    );
    assert!(row.get("output").is_none());
    assert_eq!(row["scores"], json!({}));
    assert_eq!(row["metadata"]["error_kind"], "miss");
}

#[test]
fn diagnostics_are_sent_as_json_cut_at_4_kb() {
    let long = "q".repeat(5000);
    let p = mini_with("tape", "").file(
        "evals/datasets/d/cases.jsonl",
        &format!(
            "{{\"id\": \"one\", \"input\": \"say {{\\\"answer\\\": \\\"{long}\\\"}}\", \"expected\": {{\"answer\": \"short\"}}}}\n"
        ),
    );
    let s = collector();
    evals(&p, REPLAY)
        .args_tracker("otlp")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &s.uri())
        .output();
    let (spans, _) = spans(&s);
    let case = spans.iter().find(|s| !s.parent_span_id.is_empty()).unwrap();
    let Some(Attr::S(diagnostics)) = attr(&case.attributes, "evals.case.diagnostics") else {
        panic!("no diagnostics: {:?}", case.attributes)
    };
    assert!(
        diagnostics.len() <= 4096 && diagnostics.len() > 4000,
        "{}",
        diagnostics.len()
    );
    assert!(
        diagnostics.starts_with("[{\"field\":\"answer\""),
        "{diagnostics}"
    );
    assert_eq!(
        attr(&case.attributes, "evals.case.diagnostics_truncated"),
        Some(Attr::B(true))
    );
    assert_eq!(
        attr(&case.attributes, "evals.outcome.incorrect"),
        Some(Attr::I(1))
    );
}

#[test]
fn braintrust_rows_leave_the_output_out_with_include_replies_false() {
    let s = braintrust();
    let p = mini_with("tape", "braintrust: { include_replies: false }\n");
    evals(&p, REPLAY)
        .env("BRAINTRUST_API_KEY", "bt-api-key-1234567890")
        .env("BRAINTRUST_API_URL", &s.uri())
        .ok();
    let seen = s.seen();
    let row = &seen[2].2["events"][0];
    assert!(row.get("output").is_none(), "{row:#}");
    assert_eq!(row["expected"], json!({"answer": "x"}));
    assert_eq!(row["scores"]["field_accuracy"], 1.0);
}
