//! The recorded LLM judge: a judged suite recorded against a wiremock judge, then checked
//! offline with the judge's server stopped and no key, to the same judge scores; a changed
//! rubric is a named miss showing the changed prompt; the judge's key is checked before any
//! call; an unparsable verdict is an error of its case, never a 0.

use serde_json::json;
use wiremock::matchers::body_string_contains;

use crate::harness::{Bounded, Project};
use crate::mock::{Server, chat, post};

const KEY: &str = "sk-judge-test-1234567890abcdef";

/// A suite whose fake contender echoes its input, judged by `judge-1` at `uri` on
/// `accuracy` with the rubric in `evals/prompts/judge.md`.
fn judged(uri: &str) -> Project {
    Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "suite: judged\nrequest_types: [prompt]\nadapter: {{ kind: prompt, user: \"{{{{ input }}}}\" }}\nscorer:\n  - kind: judge\n    judge: {{ provider: local, model: judge-1, temperature: 0 }}\n    rubric: prompts/judge.md\n    scale: [1, 5]\n    metrics:\n      - {{ name: accuracy, description: \"Semantically matches the expected answer\" }}\nfake:\n  models: [echo]\nlocal:\n  base_url: {uri}/v1\n  api_key_env: JUDGE_API_KEY\n"
            ),
        )
        .file(
            "evals/prompts/judge.md",
            "Question: {{ input }}\nExpected: {{ expected }}\nAnswer: {{ output }}\nTopic: {{ metadata.topic }}\n",
        )
        .file(
            "evals/datasets/d/cases.jsonl",
            concat!(
                r#"{"id": "good", "input": "Paris is the capital", "expected": "Paris", "metadata": {"topic": "geo"}}"#,
                "\n",
                r#"{"id": "meh", "input": "Lyon maybe", "expected": "Paris", "metadata": {"topic": "geo"}}"#,
                "\n",
            ),
        )
}

/// The judge answers 5 to the good answer and 2 to the other, each with its usage.
fn verdicts(s: &Server) {
    s.mount(
        post("/v1/chat/completions")
            .and(body_string_contains("Answer: Paris is the capital"))
            .respond_with(chat(
                r#"{"score": 5, "reason": "names Paris"}"#,
                json!({"prompt_tokens": 100, "completion_tokens": 10, "cost": 0.25}),
            )),
    );
    s.mount(
        post("/v1/chat/completions")
            .and(body_string_contains("Answer: Lyon maybe"))
            .respond_with(chat(
                r#"{"score": 2, "reason": "names Lyon, not Paris"}"#,
                json!({"prompt_tokens": 100, "completion_tokens": 10, "cost": 0.25}),
            )),
    );
}

#[test]
fn a_judged_suite_replays_offline_to_the_same_scores_and_a_changed_rubric_is_a_miss() {
    let mut s = Server::start();
    verdicts(&s);
    let p = judged(&s.uri());
    let recorded = p
        .evals(&["run", "--cassettes", "record", "--no-autosave"])
        .env("JUDGE_API_KEY", KEY)
        .ok();
    // 5 on [1, 5] is 1, 2 is 0.25: a mean of 62.5%.
    assert_eq!(recorded.cell("fake/echo", "accuracy"), "62.5%");
    recorded.stdout_has("names Lyon, not Paris");
    assert_eq!(s.hits(), 2, "one judge call per case and metric");
    let bodies = s.bodies();
    let prompt = bodies[0]["messages"][1]["content"].as_str().unwrap();
    assert!(prompt.contains("Expected: Paris"), "{prompt}");
    assert!(prompt.contains("Topic: geo"), "{prompt}");
    assert_eq!(bodies[0]["temperature"], json!(0.0));
    assert_eq!(
        s.headers("authorization"),
        [format!("Bearer {KEY}"), format!("Bearer {KEY}")]
    );
    // Recorded beside the case under the judge's own key.
    let cassette = p
        .path()
        .join("evals/cassettes/judge/judge-1/fake__echo/d/good.json");
    assert!(cassette.is_file(), "{}", cassette.display());
    assert!(
        !p.read("evals/cassettes/judge/judge-1/fake__echo/d/good.json")
            .contains(KEY)
    );

    // Offline: no server, no key, the same judge scores.
    s.stop();
    let replayed = p.evals(&["check", "--no-autosave"]).ok();
    assert_eq!(replayed.cell("fake/echo", "accuracy"), "62.5%");
    // The judge's cost is its own figure, never in the contender's.
    assert_eq!(replayed.cell("fake/echo", "cost"), "$0");
    assert_eq!(replayed.cell("fake/echo", "judge_cost"), "$0.5000");
    p.evals(&["check", "--format", "json", "-o", "chk.json"])
        .ok();
    let chk: serde_json::Value = serde_json::from_str(&p.read("chk.json")).unwrap();
    let e = &chk["experiments"][0];
    assert_eq!(e["means"]["accuracy"], json!(0.625), "{e}");
    assert_eq!(e["judge_cost"], json!(0.5), "{e}");
    assert_ne!(e["cost_usd"], json!(0.5), "{e}");

    // A changed rubric sends another prompt: a named miss of the case, showing the change.
    p.write(
        "evals/prompts/judge.md",
        "Question: {{ input }}\nReference: {{ expected }}\nAnswer: {{ output }}\nTopic: {{ metadata.topic }}\n",
    );
    let missed = p.evals(&["check", "--no-autosave"]).output();
    assert_ne!(missed.code, 0);
    missed.stderr_has("judge local/judge-1");
    missed.stderr_has("Reference: Paris");
    assert_eq!(missed.cell("fake/echo", "errors"), "2");
    assert_eq!(missed.cell("fake/echo", "accuracy"), "-");
}

#[test]
fn the_judges_key_is_checked_before_any_call() {
    let s = Server::start();
    verdicts(&s);
    let p = judged(&s.uri());
    p.evals(&["run", "--cassettes", "record", "--no-autosave"])
        .code(2)
        .stderr_has("JUDGE_API_KEY is not set: the judge local/judge-1 needs it for live calls");
    assert_eq!(s.hits(), 0, "no request was sent");
}

#[test]
fn an_unparsable_verdict_is_an_error_of_its_case_never_a_zero() {
    let s = Server::start();
    s.answer(
        "/v1/chat/completions",
        chat(
            "I think it is fine.",
            json!({"prompt_tokens": 5, "completion_tokens": 5}),
        ),
    );
    let p = judged(&s.uri());
    let d = p
        .evals(&["run", "--cassettes", "record", "--no-autosave"])
        .env("JUDGE_API_KEY", KEY)
        .code(1);
    assert_eq!(d.cell("fake/echo", "errors"), "2");
    assert_eq!(d.cell("fake/echo", "accuracy"), "-");
    let said = format!("{}{}", d.stdout, d.stderr);
    assert!(
        said.contains(
            "judge local/judge-1: its verdict is not the JSON {\"score\", \"reason\"} asked for"
        ),
        "{said}"
    );
}

/// Judges each prompt on a scale that falls try after try: the n-th time a prompt is
/// asked (counted per prompt from 1) it scores `6 - 2n` clamped to 1.., so the tries of
/// one case are judged 4, 2, 1 and a replay that hands every try the same verdict shows.
#[derive(Default)]
struct Falling(std::sync::Mutex<std::collections::HashMap<String, usize>>);

impl wiremock::Respond for Falling {
    fn respond(&self, req: &wiremock::Request) -> wiremock::ResponseTemplate {
        let body: serde_json::Value = serde_json::from_slice(&req.body).expect("json body");
        let prompt = body["messages"][1]["content"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let n = {
            let mut seen = self.0.lock().unwrap();
            let c = seen.entry(prompt).or_default();
            *c += 1;
            *c
        };
        let score = (6 - 2 * n as i64).max(1);
        chat(
            &json!({"score": score, "reason": format!("try {n}")}).to_string(),
            json!({"prompt_tokens": 10, "completion_tokens": 2, "cost": 0.01}),
        )
    }
}

#[test]
fn a_judged_suite_recorded_with_repeat_3_replays_every_tries_verdicts_in_order() {
    let mut s = Server::start();
    s.answer("/v1/chat/completions", Falling::default());
    // Two metrics of one judge: both are kept in the case's judge cassette, every try's.
    let p = judged(&s.uri());
    let config = p.read("evals/.llm-evals.config.yml").replace(
        "      - { name: accuracy, description: \"Semantically matches the expected answer\" }\n",
        "      - { name: accuracy, description: \"Semantically matches the expected answer\" }\n      - { name: tone, description: \"Polite\" }\n",
    );
    p.write("evals/.llm-evals.config.yml", &config);
    p.write(
        "evals/prompts/judge.md",
        "Metric: {{ metric.name }}\nQuestion: {{ input }}\nExpected: {{ expected }}\nAnswer: {{ output }}\n",
    );
    let args = [
        "--repeat",
        "3",
        "-p",
        "1",
        "--no-autosave",
        "--format",
        "json",
    ];
    let mut record = vec!["record"];
    record.extend(args);
    record.extend(["-o", "rec.json"]);
    p.evals(&record).env("JUDGE_API_KEY", KEY).code(0);
    assert_eq!(s.hits(), 12, "2 cases × 2 metrics × 3 tries");
    s.stop();

    let tries = |v: &serde_json::Value| -> Vec<Vec<serde_json::Value>> {
        v["experiments"][0]["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                c["repeats"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r["score"].clone())
                    .collect()
            })
            .collect()
    };
    let rec: serde_json::Value = serde_json::from_str(&p.read("rec.json")).unwrap();
    // 4, 2, 1 on [1, 5]: 0.75, 0.25, 0 (the primary metric, accuracy).
    assert_eq!(
        tries(&rec),
        vec![vec![json!(0.75), json!(0.25), json!(0.0)]; 2],
        "{rec}"
    );
    // Every try's exchange with the judge, both metrics, in the order they were asked.
    let cassette: serde_json::Value =
        serde_json::from_str(&p.read("evals/cassettes/judge/judge-1/fake__echo/d/good.json"))
            .unwrap();
    let asked: Vec<String> = cassette["interactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let prompt = i["request"]["body"]["messages"][1]["content"]
                .as_str()
                .unwrap();
            let verdict: serde_json::Value = serde_json::from_str(
                i["response"]["body"]["choices"][0]["message"]["content"]
                    .as_str()
                    .unwrap(),
            )
            .unwrap();
            format!(
                "{} {}",
                &prompt[..prompt.find('\n').unwrap()],
                verdict["score"]
            )
        })
        .collect();
    assert_eq!(
        asked,
        [
            "Metric: accuracy 4",
            "Metric: tone 4",
            "Metric: accuracy 2",
            "Metric: tone 2",
            "Metric: accuracy 1",
            "Metric: tone 1",
        ]
    );

    // Offline, no key: every try replays its own verdicts, the snapshot as recorded.
    let mut check = vec!["check", "--missing-baseline", "pass"];
    check.extend(args);
    check.extend(["-o", "chk.json"]);
    p.evals(&check).code(0);
    let chk: serde_json::Value = serde_json::from_str(&p.read("chk.json")).unwrap();
    assert_eq!(tries(&chk), tries(&rec), "{chk}");
    let means = |v: &serde_json::Value| v["experiments"][0]["means"].clone();
    assert_eq!(means(&chk), means(&rec));
    assert_eq!(means(&chk)["tone"], json!(1.0 / 3.0));
    assert_eq!(chk["experiments"][0]["judge_cost"], json!(0.12));

    // A fourth try was never judged: a miss of the case, naming the repeat.
    p.evals(&[
        "run",
        "--repeat",
        "4",
        "--cassettes",
        "replay",
        "--no-autosave",
    ])
    .code(1)
    .stdout_has("repeat 4 of 4");
}

#[test]
fn the_judges_cost_and_tokens_are_reported_apart_in_markdown_and_json() {
    let mut s = Server::start();
    verdicts(&s);
    let p = judged(&s.uri());
    p.evals(&["record", "--no-autosave"])
        .env("JUDGE_API_KEY", KEY)
        .ok();
    s.stop();
    p.evals(&[
        "check",
        "--missing-baseline",
        "pass",
        "--no-autosave",
        "--markdown",
        "pr.md",
        "--json",
        "chk.json",
    ])
    .ok();
    // The pull-request comment: a judge_cost column, the contender's own cost not in it.
    let md = p.read("pr.md");
    assert!(
        md.contains("| contender | dataset | baseline | now | Δ points | errors | failed thresholds | judge_cost | |"),
        "{md}"
    );
    assert!(md.contains("| 0 | 0 | $0.5000 |"), "{md}");
    // The snapshot: the judge's tokens and cost per case, its cost per experiment, and none
    // of them in the contender's figures.
    let chk: serde_json::Value = serde_json::from_str(&p.read("chk.json")).unwrap();
    let e = &chk["experiments"][0];
    assert_eq!(e["judge_cost"], json!(0.5), "{e}");
    // The fake contender is free; its tokens are its own (its words), not the judge's 100s.
    assert_eq!(e["cost_usd"], json!(0.0), "{e}");
    assert_eq!(
        (&e["tokens_in"], &e["tokens_out"]),
        (&json!(6), &json!(6)),
        "{e}"
    );
    for c in e["cases"].as_array().unwrap() {
        assert_eq!(
            c["judge_usage"],
            json!({"input_tokens": 100, "output_tokens": 10, "cost_usd": 0.25}),
            "{c}"
        );
        assert_eq!(c["usage"]["cost_usd"], json!(0.0), "{c}");
    }

    // A suite without a judge says nothing of one.
    p.write(
        "evals/.llm-evals.config.yml",
        "suite: judged\nrequest_types: [prompt]\nadapter: { kind: prompt, user: \"{{ input }}\" }\nscorer: { kind: assertions, expect: { min_chars: 1 } }\nfake:\n  models: [echo]\n",
    );
    p.evals(&[
        "check",
        "--missing-baseline",
        "pass",
        "--no-autosave",
        "--markdown",
        "plain.md",
        "--json",
        "plain.json",
    ])
    .ok();
    assert!(!p.read("plain.md").contains("judge_cost"));
    let plain = p.read("plain.json");
    assert!(
        !plain.contains("judge_cost") && !plain.contains("judge_usage"),
        "{plain}"
    );
}

/// A copy of the bundled travel-desk suite in the repository's layout: the suite under
/// fixtures/, its cassettes (the contenders' and the judge's) in cassettes/.
fn travel_desk() -> Project {
    let p = Project::new();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for part in ["fixtures/travel-desk", "cassettes/travel-desk"] {
        crate::harness::copy_tree(
            &root.join(part),
            &p.path().join(part),
            &["evals/results", ".evals", "log"],
        );
    }
    p
}

#[test]
fn the_bundled_travel_desk_suite_replays_its_judge_and_tool_calls_offline_with_no_key() {
    let p = travel_desk();
    let d = p
        .evals(&["check", "--no-autosave", "--json", "chk.json"])
        .cwd(p.path().join("fixtures/travel-desk"))
        .env("CI", "1")
        .code(1);
    d.stderr_lacks("errored");
    // The exit 1, on purpose: trip-small books 2 nights of the 3 asked (the tool-call check
    // fails, the judge gives 2/5), trip-large searches flights for a visa question.
    d.stderr_has("local/trip-small · trips · hotel-porto-3: fails its thresholds (1 assertion(s) failed, helpfulness 0.25 < 0.5)");
    d.stderr_has("local/trip-large · trips · visa-japan: fails its thresholds (2 assertion(s) failed, helpfulness 0 < 0.5)");
    assert_eq!(d.cell("local/trip-small", "pass_rate"), "66.7%");
    assert_eq!(d.cell("local/trip-small", "helpfulness"), "75.0%");
    assert_eq!(d.cell("local/trip-large", "helpfulness"), "66.7%");
    assert_eq!(d.cell("local/trip-large", "judge_cost"), "$0.0003");
    assert_eq!(d.cell("local/trip-large", "errors"), "0");
    // `cassettes status` cannot know a judge's requests without scoring: unchecked, said so.
    p.evals(&["cassettes", "status"])
        .cwd(p.path().join("fixtures/travel-desk"))
        .code(0)
        .stdout_has("6 recorded, 0 missing, 0 stale, 0 unused, 6 unchecked (an exec adapter's or a judge's requests");

    // Each case's judge verdict (the reason its diagnostic) and tool-call verdicts.
    let chk: serde_json::Value =
        serde_json::from_str(&p.read("fixtures/travel-desk/chk.json")).unwrap();
    let mut seen = Vec::new();
    for e in chk["experiments"].as_array().unwrap() {
        for c in e["cases"].as_array().unwrap() {
            let judged = c["diagnostics"]
                .as_array()
                .unwrap()
                .iter()
                .find(|d| d["field"] == "helpfulness")
                .unwrap_or_else(|| panic!("no verdict: {c}"));
            let failed: Vec<String> = c["diagnostics"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["outcome"] == "failed")
                .map(|d| d["field"].as_str().unwrap().to_string())
                .collect();
            seen.push(format!(
                "{} {}: {} {} ({}) failed [{}]",
                e["contender"]["id"].as_str().unwrap(),
                c["case"].as_str().unwrap(),
                c["metrics"]["helpfulness"],
                judged["outcome"].as_str().unwrap(),
                judged["got"].as_str().unwrap(),
                failed.join("; "),
            ));
        }
    }
    assert_eq!(
        seen,
        [
            r#"local/trip-small flight-lisbon-berlin: 1.0 judged 5/5 (Searches Lisbon to Berlin on the asked date.) failed []"#,
            r#"local/trip-small hotel-porto-3: 0.25 judged 2/5 (Books Porto for 2 nights; the traveller asked for 3.) failed [tool_calls book_hotel({"city":"Porto","nights":3})]"#,
            r#"local/trip-small visa-japan: 1.0 judged 5/5 (Answers the visa question correctly, in plain words.) failed []"#,
            r#"local/trip-large flight-lisbon-berlin: 1.0 judged 5/5 (Searches Lisbon to Berlin on the asked date.) failed []"#,
            r#"local/trip-large hotel-porto-3: 1.0 judged 5/5 (Books Porto for the 3 nights asked.) failed []"#,
            r#"local/trip-large visa-japan: 0.0 judged 1/5 (Searches flights instead of answering the visa question.) failed [contains "visa"; no_tool_calls]"#,
        ],
        "{chk}"
    );
}

/// A free port on loopback (bound, then released for the server to take).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The interactions of a cassette as a re-record must reproduce them (latency aside; a body
/// kept as it came, `raw`, compared as the JSON it is: the committed files are format 1).
fn exchanges(path: &std::path::Path) -> serde_json::Value {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for i in v["interactions"].as_array_mut().unwrap() {
        let i = i.as_object_mut().unwrap();
        i.remove("latency_ms");
        for side in ["request", "response"] {
            let part = i[side].as_object_mut().unwrap();
            if let Some(raw) = part.remove("raw") {
                let body = match raw {
                    serde_json::Value::String(text) => serde_json::from_str(&text).unwrap(),
                    json => json,
                };
                part.insert("body".into(), body);
            }
        }
    }
    v["interactions"].take()
}

#[test]
fn the_travel_desk_cassettes_are_what_evals_records_from_its_scripted_server() {
    let p = travel_desk();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let port = free_port();
    // Killed (with its process group) when the test ends, passed or failed.
    let _server = std::process::Command::new("python3")
        .arg(root.join("tests/support/travel_desk_server.py"))
        .arg(port.to_string())
        .spawn_bounded()
        .expect("python3");
    let up = (0..200).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(25));
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert!(up, "the scripted server did not start");
    let fresh = p.path().join("cassettes/travel-desk");
    std::fs::remove_dir_all(&fresh).unwrap();
    p.evals(&["record", "--no-autosave"])
        .cwd(p.path().join("fixtures/travel-desk"))
        .env("LOCAL_KEY", "local-scripted-server-needs-no-real-key-0000")
        .env(
            "EVALS_REDIRECT",
            &format!("http://127.0.0.1:8788/v1=http://127.0.0.1:{port}/v1"),
        )
        .ok();
    let committed = root.join("cassettes/travel-desk");
    let mut files: Vec<_> = crate::harness::files_under(&committed)
        .into_iter()
        .map(|f| f.strip_prefix(&committed).unwrap().to_path_buf())
        .collect();
    files.sort();
    let mut recorded: Vec<_> = crate::harness::files_under(&fresh)
        .into_iter()
        .map(|f| f.strip_prefix(&fresh).unwrap().to_path_buf())
        .collect();
    recorded.sort();
    assert_eq!(files, recorded);
    assert_eq!(files.len(), 12, "6 contender cassettes, 6 of the judge");
    for f in &files {
        assert_eq!(
            exchanges(&fresh.join(f)),
            exchanges(&committed.join(f)),
            "{} differs from a fresh recording: re-record with tests/support/record-travel-desk.sh",
            f.display()
        );
    }
}
