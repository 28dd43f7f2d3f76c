//! Loading and matching cassettes, at the shapes the record-and-replay tools measure
//! themselves on (bench/RESULTS.md, "Cassettes: loading and matching"): 1,000 recorded
//! chat-completion exchanges, a request body of about 1.6 KB and a response of about 0.9 KB,
//! written as the cassette files a recorded suite holds.
//!
//! `cargo bench --bench cassettes` measures (release); `cargo test --bench cassettes` runs each
//! bench once, in the test profile, which is how .ci/run keeps them working. Only the
//! crate's public API is used: [`Session::open_replay`] opens a cassette as a replayed run does
//! (read, parse, index the recordings) and [`Session::send`] answers a request from it
//! (scrub and fingerprint the request, find the recording, build the response).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::sync::OnceLock;
use std::task::{Context, Poll, Waker};

use divan::Bencher;
use divan::counter::ItemsCount;
use llm_evals::cassette::{
    CassetteKey, CassetteOptions, HttpRequest, HttpResponse, Interaction, RecordedRequest,
    RecordedResponse, Session, any_2xx,
};
use serde_json::{Value, json};

/// Recorded interactions: in one cassette, or one per cassette file.
const N: usize = 1000;
/// The provider's `base_url`, which recorded fingerprints count from.
const BASE: &str = "https://api.openai.com/v1";
const MODEL: &str = "gpt-4o-mini";

/// The cassette folder, written once before the benches run.
static DIR: OnceLock<PathBuf> = OnceLock::new();

fn main() {
    let dir = tempfile::tempdir().expect("a temp dir for the cassettes");
    let (one, many) = write_cassettes(dir.path());
    eprintln!(
        "cassettes: one file of {N} interactions ({one} bytes), {N} files of one ({many} bytes in all)"
    );
    DIR.set(dir.path().to_path_buf()).expect("set once");
    check_replay();
    divan::main();
}

/// A system prompt of the size an extraction suite sends (about 1 KB).
const SYSTEM: &str = "You are a careful intake assistant for a tax preparation office. Read \
    the client's message and return a JSON object with exactly these keys: \"filing_status\" \
    (one of \"single\", \"married_joint\", \"married_separate\", \"head_of_household\"), \
    \"dependents\" (an integer), \"moved_states\" (a boolean), \"self_employed\" (a boolean), \
    \"foreign_income\" (a boolean), \"notes\" (a short string). Use null for anything the \
    message does not say; never guess a value the client did not give. Dates are ISO 8601. \
    Amounts are plain numbers in US dollars without separators. If the message asks a \
    question instead of giving facts, set every key to null and put the question in \
    \"notes\". Do not add keys, do not wrap the object in Markdown, and do not explain your \
    answer: the reply is parsed by a program that rejects anything but the object. Examples \
    of good notes: \"moved from Ohio in March\", \"two W-2 jobs\", \"asks about estimated \
    payments\". Keep notes under 80 characters.";

/// The recorded request of case `i`: a chat completion, about 1.6 KB of JSON.
fn request(i: usize) -> RecordedRequest {
    let user = format!(
        "Case {i:04}. Hi, I'm filing for {year} and my situation changed a bit this year. \
         I got married in June, we have {kids} kids, and I moved from Ohio to Pennsylvania \
         in March for a new job. I also did some freelance design work on the side, about \
         ${amount} in total, and I have a small savings account in Canada from when I \
         studied there. What do you need from me?",
        year = 2020 + i % 6,
        kids = i % 4,
        amount = 1000 + 37 * i,
    );
    RecordedRequest {
        method: "POST".into(),
        url: format!("{BASE}/chat/completions"),
        headers: [("content-type".to_string(), "application/json".to_string())].into(),
        body: Some(json!({
            "model": MODEL,
            "temperature": 0.0,
            "max_tokens": 512,
            "response_format": { "type": "json_object" },
            "messages": [
                { "role": "system", "content": SYSTEM },
                { "role": "user", "content": user },
            ],
        })),
        raw: None,
    }
}

/// The recorded response of case `i`: an OpenAI chat completion, about 0.9 KB of JSON.
fn response(i: usize) -> RecordedResponse {
    let answer = json!({
        "filing_status": "married_joint",
        "dependents": i % 4,
        "moved_states": true,
        "self_employed": true,
        "foreign_income": true,
        "notes": format!("moved from Ohio in March; freelance ${}", 1000 + 37 * i),
    });
    RecordedResponse {
        status: 200,
        headers: [("content-type".to_string(), "application/json".to_string())].into(),
        body: json!({
            "id": format!("chatcmpl-{i:04}"),
            "object": "chat.completion",
            "created": 1_764_700_000 + i,
            "model": "gpt-4o-mini-2024-07-18",
            "system_fingerprint": "fp_0ba0d124f1",
            "choices": [{
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": answer.to_string(),
                    "refusal": null,
                    "annotations": [],
                },
                "logprobs": null,
                "finish_reason": "stop",
            }],
            "usage": {
                "prompt_tokens": 412,
                "completion_tokens": 58,
                "total_tokens": 470,
                "prompt_tokens_details": { "cached_tokens": 0, "audio_tokens": 0 },
                "completion_tokens_details": {
                    "reasoning_tokens": 0,
                    "audio_tokens": 0,
                    "accepted_prediction_tokens": 0,
                    "rejected_prediction_tokens": 0,
                },
            },
        }),
        raw: None,
    }
}

/// Interaction `i`, filed under the fingerprint replay computes for its request.
fn interaction(i: usize) -> Interaction {
    let request = request(i);
    Interaction {
        fingerprint: request.fingerprint(&[], BASE),
        request,
        response: response(i),
        latency_ms: 800 + i as u64 % 400,
        usage: None,
        upstream: None,
    }
}

/// The key of the cassette holding all `N` interactions.
fn one_key() -> CassetteKey {
    key("all")
}

/// The key of case `case_id` of the suite whose cases hold one interaction each.
fn key(case_id: &str) -> CassetteKey {
    CassetteKey {
        provider: "openai".into(),
        model: MODEL.into(),
        settings: "default".into(),
        dataset: "intake".into(),
        case_id: case_id.into(),
    }
}

fn case_id(i: usize) -> String {
    format!("case-{i:04}")
}

/// A cassette file as the recorder writes it (format 1: no stream, no raw body), pretty.
fn cassette_json(key: &CassetteKey, interactions: Vec<Interaction>) -> String {
    let mut text = serde_json::to_string_pretty(&json!({
        "format": 1,
        "case": format!("{}/{}", key.dataset, key.case_id),
        "contender": {
            "id": format!("{}/{}", key.provider, key.model),
            "provider": key.provider,
            "model": key.model,
            "effort": null,
            "temperature": null,
            "max_tokens": null,
        },
        "recorded_at": "2026-12-01T09:00:00Z",
        "evals_version": "0.1.0",
        "interactions": interactions,
    }))
    .expect("a cassette serializes");
    text.push('\n');
    text
}

/// Writes the one cassette of `N` interactions and the `N` cassettes of one; returns the
/// bytes written to each.
fn write_cassettes(dir: &Path) -> (usize, usize) {
    let write = |key: &CassetteKey, text: String| {
        let path = key.path_in(dir);
        std::fs::create_dir_all(path.parent().expect("a case file has a folder"))
            .expect("create the cassette folder");
        std::fs::write(&path, &text).expect("write a cassette");
        text.len()
    };
    let one = write(
        &one_key(),
        cassette_json(&one_key(), (0..N).map(interaction).collect()),
    );
    let many = (0..N)
        .map(|i| {
            let key = key(&case_id(i));
            write(&key, cassette_json(&key, vec![interaction(i)]))
        })
        .sum();
    (one, many)
}

fn options() -> CassetteOptions {
    let mut options = CassetteOptions::default();
    options.dir = DIR.get().expect("the cassettes are written first").clone();
    options
}

/// Opens a replay session on the cassette of `key`.
fn open(key: &CassetteKey) -> Session {
    Session::open_replay(options(), key, BASE).expect("the cassette loads")
}

/// Replays `req`: a replayed request never waits, so one poll answers it.
fn send(session: &Session, req: HttpRequest) -> HttpResponse {
    let mut answer = pin!(session.send(req, any_2xx));
    match answer
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(response) => response.expect("the request was recorded"),
        Poll::Pending => panic!("a replayed request waited"),
    }
}

/// The response's `id`: which recording answered.
fn id(response: &HttpResponse) -> &str {
    response.body["id"].as_str().unwrap_or_default()
}

/// The benches measure what they claim: each request is answered by its own recording, and
/// a request that was not recorded is a miss, not some other recording.
fn check_replay() {
    let session = open(&one_key());
    for i in [500, 0, N - 1] {
        assert_eq!(
            id(&send(&session, request(i).to_http())),
            format!("chatcmpl-{i:04}")
        );
    }
    let mut other = request(7).to_http();
    other.body.as_mut().expect("a body")["temperature"] = Value::from(1.0);
    let missed = pin!(session.send(other, any_2xx)).poll(&mut Context::from_waker(Waker::noop()));
    assert!(
        matches!(missed, Poll::Ready(Err(_))),
        "an unrecorded request must miss"
    );
    let single = open(&key(&case_id(42)));
    assert_eq!(id(&send(&single, request(42).to_http())), "chatcmpl-0042");
}

/// Opening a replay session: reading the file(s), parsing them, indexing the recordings.
mod load_1000 {
    use super::*;

    /// One cassette file holding all 1,000 interactions.
    #[divan::bench(sample_count = 50)]
    fn one_file(bencher: Bencher) {
        let key = one_key();
        bencher.bench(|| open(&key));
    }

    /// 1,000 cassette files of one interaction each, one session per file: how a suite of
    /// 1,000 one-call cases is laid out (one file per case and contender).
    #[divan::bench(sample_count = 50)]
    fn thousand_files(bencher: Bencher) {
        let keys: Vec<CassetteKey> = (0..N).map(|i| key(&case_id(i))).collect();
        bencher.bench(|| keys.iter().map(open).collect::<Vec<_>>());
    }
}

/// Replaying one request against a session of 1,000 interactions just opened (each
/// recording replays once, so every measured request gets a fresh session; opening it and
/// dropping it are not timed).
mod match_one {
    use super::*;

    fn replay_one(bencher: Bencher, i: usize) {
        let want = format!("chatcmpl-{i:04}");
        bencher
            .with_inputs(|| (open(&one_key()), request(i).to_http()))
            .bench_local_values(|(session, req)| {
                let response = send(&session, req);
                assert_eq!(id(&response), want);
                (session, response)
            });
    }

    /// The request recorded first.
    #[divan::bench(sample_count = 200, sample_size = 1)]
    fn first(bencher: Bencher) {
        replay_one(bencher, 0);
    }

    /// The request recorded in the middle.
    #[divan::bench(sample_count = 200, sample_size = 1)]
    fn middle(bencher: Bencher) {
        replay_one(bencher, N / 2);
    }

    /// The request recorded last.
    #[divan::bench(sample_count = 200, sample_size = 1)]
    fn last(bencher: Bencher) {
        replay_one(bencher, N - 1);
    }

    /// Every request once, in the order recorded (as a case's calls come): the time per
    /// request is this figure divided by 1,000 (divan prints it as items per second).
    #[divan::bench(sample_count = 30, sample_size = 1)]
    fn each_in_order(bencher: Bencher) {
        bencher
            .counter(ItemsCount::new(N))
            .with_inputs(|| {
                let requests: Vec<HttpRequest> = (0..N).map(|i| request(i).to_http()).collect();
                (open(&one_key()), requests)
            })
            .bench_local_values(|(session, requests)| {
                let responses: Vec<HttpResponse> = requests
                    .into_iter()
                    .map(|req| send(&session, req))
                    .collect();
                (session, responses)
            });
    }
}

/// The part of a match that hashes: a request's fingerprint alone (its canonical form's
/// SHA-256), as replay computes it for every request it is sent.
#[divan::bench]
fn fingerprint(bencher: Bencher) {
    let request = request(N / 2);
    bencher.bench(|| request.fingerprint(&[], BASE));
}
