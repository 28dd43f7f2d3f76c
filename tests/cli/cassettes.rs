//! The cassette layer end to end (issue 4): record against a wiremock server on loopback,
//! shut it down, replay offline; misses with their diff and hint; secrets kept out of every
//! file; 64 interleaved cases; `auto` on CI; broken cassettes; `cassettes scan|status|prune`;
//! the bundled example suite replaying with no key.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use wiremock::{Request, Respond, ResponseTemplate};

use crate::harness::{Bounded, MINI_SCHEMA, Project, copy_tree, files_under};
use crate::mock::{Server, chat, post};

/// The last message's content of an OpenAI-shaped request body.
fn last_user_content(req: &Request) -> String {
    let body: Value = serde_json::from_slice(&req.body).expect("json body");
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// Answers `case N` with `{"answer": "aN"}` after a delay derived from N, so 64 calls in
/// flight finish in an order unlike the one they were sent in.
struct PerCase;

impl Respond for PerCase {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let user = last_user_content(req);
        let n: u64 = user
            .trim_start_matches("case ")
            .parse()
            .unwrap_or_else(|_| panic!("unexpected prompt {user:?}"));
        let delay = Duration::from_millis((n * 37) % 53);
        chat(
            &json!({"answer": format!("a{n}")}).to_string(),
            json!({"prompt_tokens": 10 + n, "completion_tokens": 3, "cost": 0.0001 * (n + 1) as f64}),
        )
        .set_delay(delay)
    }
}

/// Answers `{"answer": "x"}` and echoes the request's `Authorization` header back in the
/// body (as some gateways' debug fields do), both in a top-level field and in the reply.
struct EchoAuth;

impl Respond for EchoAuth {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let auth = req
            .headers
            .get("authorization")
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        let content = json!({"answer": "x", "note": format!("you sent {auth}")}).to_string();
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "gen-1",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2},
            "debug": {"seen_authorization": auth},
        }))
    }
}

const CONFIG: &str = "evals/.llm-evals.config.yml";
const CASES: &str = "evals/datasets/d/cases.jsonl";
const CASSETTES: &str = "evals/cassettes";

/// A suite over `answer` with a system prompt, the JSONL `cases`, and `providers`.
fn suite(system: &str, providers: &str, cases: &str) -> Project {
    Project::new()
        .file(CONFIG, &config(system, providers))
        .file(CASES, cases)
}

fn config(system: &str, providers: &str) -> String {
    format!(
        "suite: tape\nrequest_types: [prompt]\nadapter:\n  kind: prompt\n  system: \"{system}\"\n  user: \"{{{{ input }}}}\"\n  json: true\n{MINI_SCHEMA}defaults: {{ max_tokens: 64 }}\n{providers}"
    )
}

/// `n` JSONL cases `c0..c{n-1}`; case N asks `case N` and expects `aN`.
fn numbered_cases(n: u64) -> String {
    (0..n)
        .map(|i| {
            format!("{{\"id\": \"c{i}\", \"input\": \"case {i}\", \"expected\": {{\"answer\": \"a{i}\"}}}}\n")
        })
        .collect()
}

fn local(uri: &str) -> String {
    format!("local:\n  base_url: {uri}/v1\n  models: [m1]\n")
}

/// The one file in `dir` that `before` did not list.
fn new_file(dir: &Path, before: &[PathBuf]) -> PathBuf {
    let fresh: Vec<PathBuf> = files_under(dir)
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    assert_eq!(fresh.len(), 1, "new files in {}: {fresh:?}", dir.display());
    fresh.into_iter().next().unwrap()
}

/// A JSON snapshot with what may differ between a recorded run and its replay blanked: the
/// run id, the timestamps, and the cassette mode. Everything else stays byte for byte.
fn normalized(snapshot: &str) -> String {
    let v: Value = serde_json::from_str(snapshot).expect("json snapshot");
    let id = v["run"]["id"].as_str().expect("run id");
    let text = snapshot.replace(id, "<run id>");
    let stamps = regex::Regex::new(r#""(started_at|finished_at)": "[^"]*""#).unwrap();
    let text = stamps.replace_all(&text, r#""$1": "<time>""#);
    let mode = regex::Regex::new(r#""(mode|cassettes)": "(record|replay)""#).unwrap();
    mode.replace_all(&text, r#""$1": "<mode>""#).into_owned()
}

#[test]
fn recorded_run_replays_offline_to_the_same_snapshot_and_leaderboard() {
    let mut s = Server::start();
    s.answer("/v1/chat/completions", PerCase);
    let p = suite("Answer in JSON.", &local(&s.uri()), &numbered_cases(3));
    // The same argv both times (the mode comes from the environment), so only the run id,
    // the timestamps and the mode may differ between the two snapshots.
    let argv = ["compare", "--destination", "snaps"];
    let snaps = p.path().join("snaps");

    let recorded = p.evals(&argv).env("EVALS_CASSETTES", "record").ok();
    assert_eq!(s.hits(), 3);
    let recorded_json = std::fs::read_to_string(new_file(&snaps, &[])).unwrap();
    let recorded_uri = s.uri();
    s.stop();

    // Were a request to leave in replay, it would go to this server, which expects none.
    let mut guard = Server::start();
    guard.mount(post("/v1/chat/completions").respond_with(PerCase).expect(0));
    let before = files_under(&snaps);
    let replayed = p
        .evals(&argv)
        .env("EVALS_CASSETTES", "replay")
        .env("EVALS_REDIRECT", &format!("{recorded_uri}={}", guard.uri()))
        .ok();
    let replayed_json = std::fs::read_to_string(new_file(&snaps, &before)).unwrap();
    assert_eq!(guard.hits(), 0, "replay sent a request");
    guard.stop();

    assert_eq!(
        replayed.stdout, recorded.stdout,
        "terminal leaderboards differ"
    );
    assert_eq!(replayed.cell("local/m1", "field_accuracy"), "100.0%");
    assert_eq!(replayed.cell("local/m1", "errors"), "0");
    assert_ne!(recorded_json, replayed_json, "the run ids differ at least");
    assert_eq!(normalized(&replayed_json), normalized(&recorded_json));
    let v: Value = serde_json::from_str(&replayed_json).unwrap();
    assert_eq!(v["run"]["mode"], "replay");
    let outputs: Vec<&Value> = v["experiments"][0]["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["output"]["answer"])
        .collect();
    assert_eq!(outputs, [&json!("a0"), &json!("a1"), &json!("a2")]);

    // `--format json -o` reports the same experiments.
    p.evals(&[
        "compare",
        "--cassettes",
        "replay",
        "--format",
        "json",
        "-o",
        "rep.json",
        "--no-autosave",
    ])
    .ok();
    let rep: Value = serde_json::from_str(&p.read("rep.json")).unwrap();
    assert_eq!(rep["experiments"], v["experiments"]);
}

#[test]
fn a_changed_prompt_misses_in_replay_with_the_diff_and_the_record_hint() {
    let mut s = Server::start();
    s.answer("/v1/chat/completions", PerCase);
    let recorded_uri = s.uri();
    let providers = local(&recorded_uri);
    let p = suite(
        "You extract facts.\\nAnswer in JSON.",
        &providers,
        &numbered_cases(2),
    );
    p.evals(&["record", "--no-autosave"]).ok();
    s.stop();
    p.evals(&["cassettes", "status"])
        .ok()
        .stdout_has("2 recorded, 0 missing, 0 stale, 0 unused");

    p.write(
        CONFIG,
        &config("You extract facts. Be brief.\\nAnswer in JSON.", &providers),
    );
    let d = p
        .evals(&["run", "--cassettes", "replay", "--no-autosave", "-c", "c1"])
        .code(1);
    let path = Path::new(CASSETTES).join("local/m1/max-64/d/c1.json");
    // The case, the file, the changed line as -/+ (the unchanged one kept), the hint.
    d.stdout_has(&format!(
        "  c1 error: no recording matches this request ({})\n      \
         messages[0].content:\n        \
         -You extract facts.\n        \
         +You extract facts. Be brief.\n         \
         Answer in JSON.\n    \
         run `evals record -d d -c c1 -m local/m1` to record it\n",
        path.display()
    ));
    assert_eq!(d.cell("local/m1", "errors"), "1");
    d.stderr_has("1 case errored");

    let status = p.evals(&["cassettes", "status", "--check"]).code(1);
    let stale: Vec<&str> = status
        .stdout
        .lines()
        .filter(|l| l.contains("stale"))
        .collect();
    assert!(
        stale.iter().any(|l| l.contains("d/c0")) && stale.iter().any(|l| l.contains("d/c1")),
        "{}",
        status.stdout
    );
    status.stdout_has("0 recorded, 0 missing, 2 stale, 0 unused");

    // The hint does what it says: with a server again (behind the recorded URL), it
    // re-records that case alone, which then replays.
    let mut again = Server::start();
    again.answer("/v1/chat/completions", PerCase);
    p.evals(&[
        "record",
        "-d",
        "d",
        "-c",
        "c1",
        "-m",
        "local/m1",
        "--no-autosave",
    ])
    .env("EVALS_REDIRECT", &format!("{recorded_uri}={}", again.uri()))
    .ok();
    assert_eq!(again.hits(), 1);
    again.stop();
    p.evals(&["run", "--cassettes", "replay", "--no-autosave", "-c", "c1"])
        .ok();
    p.evals(&["cassettes", "status", "--check"])
        .code(1)
        .stdout_has("1 recorded, 0 missing, 1 stale, 0 unused");
}

/// A plausible OpenRouter key: `sk-or-v1-` and 48 hex digits.
const FAKE_KEY: &str = "sk-or-v1-5f0c1e2d3b4a59687766554433221100ffeeddccbbaa9988";

#[test]
fn a_key_the_server_echoes_reaches_no_file_and_a_planted_one_fails_the_scan_unechoed() {
    assert_eq!(FAKE_KEY.len(), "sk-or-v1-".len() + 48);
    let hex = FAKE_KEY.trim_start_matches("sk-or-v1-");
    let mut s = Server::start();
    s.answer("/api/v1/chat/completions", EchoAuth);
    let p = suite(
        "Answer in JSON.",
        &format!(
            "openrouter:\n  base_url: {}/api/v1\n  vendors:\n    openai:\n      models: [gpt-x]\n",
            s.uri()
        ),
        &numbered_cases(2),
    );
    let d = p
        .evals(&["record", "--format", "json", "-o", "rec.json"])
        .env("OPENROUTER_API_KEY", FAKE_KEY)
        .ok();
    assert_eq!(s.hits(), 2);
    s.stop();
    for out in [&d.stdout, &d.stderr] {
        assert!(!out.contains(hex), "the key was printed:\n{out}");
    }
    let cassette = p.read(&format!(
        "{CASSETTES}/openrouter/openai__gpt-x/max-64/d/c0.json"
    ));
    assert!(
        cassette.contains("\"seen_authorization\": \"Bearer [REDACTED]\""),
        "{cassette}"
    );
    // The recording run reports the reply as its replay will: scrubbed.
    let rec: Value = serde_json::from_str(&p.read("rec.json")).unwrap();
    assert_eq!(
        rec["experiments"][0]["cases"][0]["output"]["note"],
        "you sent Bearer [REDACTED]"
    );
    // A replay with the same key set stores another run: still no trace of it.
    p.evals(&[
        "compare",
        "--cassettes",
        "replay",
        "--format",
        "json",
        "-o",
        "rep.json",
    ])
    .env("OPENROUTER_API_KEY", FAKE_KEY)
    .ok();
    let rep: Value = serde_json::from_str(&p.read("rep.json")).unwrap();
    assert_eq!(rep["experiments"], rec["experiments"]);

    let files = files_under(p.path());
    let names: Vec<String> = files
        .iter()
        .map(|f| f.strip_prefix(p.path()).unwrap().display().to_string())
        .collect();
    assert!(
        names.iter().any(|n| n.starts_with("evals/results/")),
        "{names:?}"
    );
    assert!(names.iter().any(|n| n.starts_with(".evals/")), "{names:?}");
    assert!(names.iter().any(|n| n == "rec.json"), "{names:?}");
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        assert!(
            !bytes.windows(hex.len()).any(|w| w == hex.as_bytes()),
            "{} holds the key",
            f.display()
        );
    }

    // Clean cassettes scan clean, with the key in the environment or not.
    p.evals(&["cassettes", "scan"])
        .env("OPENROUTER_API_KEY", FAKE_KEY)
        .ok();
    p.evals(&["cassettes", "scan", CASSETTES])
        .ok()
        .stderr_has("no secrets found in");

    // A key pasted into a cassette by hand.
    let planted = format!("{CASSETTES}/openrouter/openai__gpt-x/max-64/d/c1.json");
    let text = p.read(&planted).replace("Bearer [REDACTED]", FAKE_KEY);
    p.write(&planted, &text);
    let d = p.evals(&["cassettes", "scan"]).code(1);
    d.stdout_has(&format!(
        "{planted}:{}: OpenRouter key (sk-or-v1-…)",
        text.lines().position(|l| l.contains(FAKE_KEY)).unwrap() + 1
    ))
    .stdout_lacks("c0.json")
    .stderr_has("1 file holds a secret");
    for out in [&d.stdout, &d.stderr] {
        assert!(!out.contains(hex), "the scan echoed the key:\n{out}");
    }
}

/// Every file under `p` that holds `needle`.
fn files_holding(p: &Project, needle: &str) -> Vec<PathBuf> {
    files_under(p.path())
        .into_iter()
        .filter(|f| {
            let bytes = std::fs::read(f).unwrap();
            bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
        })
        .collect()
}

#[test]
fn a_custom_sections_key_of_no_known_shape_is_scrubbed_by_value() {
    // No known prefix: only the value read from `api_key_env` can find it.
    let key = "tape-5f0c1e2d3b4a59687766554433221100ffeeddccbbaa9988";
    let mut s = Server::start();
    s.answer("/v1/chat/completions", EchoAuth);
    let p = suite(
        "Answer in JSON.",
        &format!(
            "local:\n  base_url: {}/v1\n  api_key_env: TAPE_KEY\n  models: [m1]\n",
            s.uri()
        ),
        &numbered_cases(1),
    );
    p.evals(&["record", "--format", "json", "-o", "rec.json"])
        .env("TAPE_KEY", key)
        .ok();
    assert_eq!(s.hits(), 1);
    s.stop();
    assert_eq!(files_under(&p.path().join(CASSETTES)).len(), 1);
    assert_eq!(files_holding(&p, key), Vec::<PathBuf>::new());
    assert_eq!(
        files_holding(&p, "[REDACTED]").len(),
        4,
        "cassette, -o, snapshot, history"
    );

    let planted = format!("{CASSETTES}/local/m1/max-64/d/c0.json");
    p.write(
        &planted,
        &p.read(&planted).replace("Bearer [REDACTED]", key),
    );
    // Without the variable the value is just text; with it, the scan names the file.
    p.evals(&["cassettes", "scan"]).ok();
    let d = p.evals(&["cassettes", "scan"]).env("TAPE_KEY", key).code(1);
    d.stdout_has(&format!("{planted}:"))
        .stdout_has("secret value from the environment")
        .stdout_lacks(key)
        .stderr_lacks(key);
}

#[test]
fn cassettes_scan_of_a_clean_folder_passes() {
    let p = Project::new().file(
        "clean/a/b.json",
        "{\"note\": \"we used sk-learn\", \"auth\": \"Bearer [REDACTED]\"}\n",
    );
    p.evals(&["cassettes", "scan", "clean"])
        .ok()
        .stderr_has("no secrets found in clean");
}

#[test]
fn sixty_four_interleaved_cases_record_and_replay_each_its_own_answer() {
    let mut s = Server::start();
    s.answer("/v1/chat/completions", PerCase);
    let p = suite("Answer in JSON.", &local(&s.uri()), &numbered_cases(64));
    let recorded = p
        .evals(&[
            "compare",
            "--cassettes",
            "record",
            "-p",
            "64",
            "--format",
            "json",
            "-o",
            "rec.json",
            "--no-autosave",
        ])
        .ok();
    assert_eq!(s.hits(), 64);
    s.stop();
    assert_eq!(recorded.stdout, "");
    let replayed = p
        .evals(&[
            "compare",
            "--cassettes",
            "replay",
            "-p",
            "64",
            "--format",
            "json",
            "-o",
            "rep.json",
            "--no-autosave",
        ])
        .ok();
    assert_eq!(replayed.stdout, "");
    for file in ["rec.json", "rep.json"] {
        let v: Value = serde_json::from_str(&p.read(file)).unwrap();
        let cases = v["experiments"][0]["cases"].as_array().unwrap();
        assert_eq!(cases.len(), 64, "{file}");
        for c in cases {
            let n = c["case"].as_str().unwrap().trim_start_matches('c');
            assert_eq!(c["output"]["answer"], format!("a{n}"), "{file}: {c}");
            assert_eq!(c["score"], 1.0, "{file}: {c}");
            assert_eq!(c["usage"]["input_tokens"], 10 + n.parse::<u64>().unwrap());
        }
    }
    let rec: Value = serde_json::from_str(&p.read("rec.json")).unwrap();
    let rep: Value = serde_json::from_str(&p.read("rep.json")).unwrap();
    assert_eq!(rep["experiments"], rec["experiments"]);
}

#[test]
fn auto_on_ci_replays_and_a_missing_cassette_is_an_error_not_a_call() {
    let mut s = Server::start();
    s.mount(post("/v1/chat/completions").respond_with(PerCase).expect(0));
    let p = suite("Answer in JSON.", &local(&s.uri()), &numbered_cases(1));
    for ci in ["1", "true"] {
        let d = p
            .evals(&["run", "--cassettes", "auto", "--no-autosave"])
            .env("CI", ci)
            .code(1);
        d.stdout_has("no cassette for this case")
            .stdout_has("run `evals record -d d -c c0 -m local/m1` to record it");
        assert_eq!(d.cell("local/m1", "errors"), "1");
        // auto is also the default of `compare`.
        p.evals(&["compare", "--no-autosave"]).env("CI", ci).code(1);
    }
    assert_eq!(s.hits(), 0);
    assert!(!p.path().join(CASSETTES).exists());
    s.stop();
}

#[test]
fn a_corrupt_or_future_format_cassette_is_an_error_naming_the_file() {
    let mut s = Server::start();
    s.answer("/v1/chat/completions", PerCase);
    let p = suite("Answer in JSON.", &local(&s.uri()), &numbered_cases(2));
    p.evals(&["record", "--no-autosave"]).ok();
    s.stop();
    let file = format!("{CASSETTES}/local/m1/max-64/d/c0.json");
    let good = p.read(&file);

    p.write(&file, "{\n  \"format\": 1,\n  \"interactions\": [\n");
    let d = p
        .evals(&["run", "--cassettes", "replay", "--no-autosave"])
        .code(1);
    d.stdout_has(&format!("{file}: not a cassette ("));
    assert_eq!(d.cell("local/m1", "errors"), "1");
    assert_eq!(d.cell("c1", "score"), "100.0%");

    p.write(&file, &good.replacen("\"format\": 1", "\"format\": 99", 1));
    let d = p
        .evals(&["run", "--cassettes", "replay", "--no-autosave"])
        .code(1);
    d.stdout_has(&format!(
        "{file}: format 99 is newer than this evals understands (4); upgrade evals"
    ));
    assert_eq!(d.cell("local/m1", "errors"), "1");
    // `cassettes status` does not pass over it either: it lists it as corrupt.
    p.evals(&["cassettes", "status", "--check"])
        .code(1)
        .stderr_has(&format!("warning: {file}: format 99 is newer"));
}

#[test]
fn cassettes_status_stopped_listing_at_the_first_corrupt_cassette() {
    let mut s = Server::start();
    s.answer("/v1/chat/completions", PerCase);
    let p = suite("Answer in JSON.", &local(&s.uri()), &numbered_cases(3));
    p.evals(&["record", "--no-autosave"]).ok();
    s.stop();
    let file = |c: &str| format!("{CASSETTES}/local/m1/max-64/d/{c}.json");
    p.write(&file("c0"), "{\n  \"format\": 1,\n  \"interactions\": [\n");
    p.write(&file("c1"), "not json at all");
    let d = p.evals(&["cassettes", "status", "--check"]).code(1);
    for (status, case) in [("corrupt", "c0"), ("corrupt", "c1"), ("recorded", "c2")] {
        let row = d
            .stdout
            .lines()
            .map(crate::harness::cells)
            .find(|c| c.get(2).map(String::as_str) == Some(&format!("d/{case}")))
            .unwrap_or_else(|| panic!("no row of d/{case}:\n{}", d.stdout));
        assert_eq!(row[0], status, "{row:?}");
    }
    d.stdout_has("1 recorded, 0 missing, 0 stale, 2 corrupt, 0 unused\n")
        .stderr_has(&format!("warning: {}: not a cassette (", file("c0")))
        .stderr_has(&format!("warning: {}: not a cassette (", file("c1")))
        .stderr_has("to record what is missing, stale or corrupt\n");
}

#[test]
fn a_record_run_leaves_only_whole_cassettes_and_no_temp_files() {
    let mut s = Server::start();
    s.answer("/v1/chat/completions", PerCase);
    let p = suite("Answer in JSON.", &local(&s.uri()), &numbered_cases(8));
    // Twice: the second run replaces every file in place.
    for _ in 0..2 {
        p.evals(&["record", "-p", "8", "--no-autosave"]).ok();
    }
    s.stop();
    let files = files_under(&p.path().join(CASSETTES));
    assert_eq!(files.len(), 8, "{files:?}");
    for f in &files {
        assert_eq!(
            f.extension().and_then(|e| e.to_str()),
            Some("json"),
            "left behind: {}",
            f.display()
        );
        let v: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert_eq!(v["format"], 1);
        assert_eq!(v["interactions"].as_array().unwrap().len(), 1);
    }
    p.evals(&["cassettes", "status"])
        .ok()
        .stdout_has("8 recorded, 0 missing, 0 stale, 0 unused");
}

#[test]
fn prune_dry_run_lists_a_deleted_cases_cassette_and_prune_removes_it() {
    let mut s = Server::start();
    s.answer("/v1/chat/completions", PerCase);
    let p = suite("Answer in JSON.", &local(&s.uri()), &numbered_cases(3));
    p.evals(&["record", "--no-autosave"]).ok();
    s.stop();
    p.write(CASES, &numbered_cases(2));
    let gone = format!("{CASSETTES}/local/m1/max-64/d/c2.json");

    let d = p.evals(&["cassettes", "status"]).ok();
    d.stdout_has("2 recorded, 0 missing, 0 stale, 1 unused");
    assert!(
        d.stdout
            .lines()
            .any(|l| l.contains("unused") && l.contains(&gone)),
        "{}",
        d.stdout
    );

    let d = p.evals(&["cassettes", "prune", "-n"]).ok();
    assert_eq!(d.stdout, format!("would remove {gone}\n"));
    assert!(p.path().join(&gone).is_file());

    let d = p.evals(&["cassettes", "prune"]).ok();
    assert_eq!(d.stdout, format!("removed {gone}\n"));
    assert!(!p.path().join(&gone).exists());
    assert_eq!(files_under(&p.path().join(CASSETTES)).len(), 2);
    p.evals(&["cassettes", "prune"])
        .ok()
        .stderr_has("no unused cassettes");
    p.evals(&["compare", "--cassettes", "replay", "--no-autosave"])
        .ok();
}

#[test]
fn the_bundled_tax_intake_suite_replays_offline_with_no_key() {
    // The repository's layout: the suite under fixtures/, its cassettes in cassettes/.
    let p = Project::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for part in ["fixtures/tax-intake", "cassettes/tax-intake"] {
        copy_tree(
            &root.join(part),
            &p.path().join(part),
            &["evals/results", ".evals"],
        );
    }
    let dir = p.path().join("fixtures/tax-intake");
    let d = p
        .evals(&["compare", "--no-autosave"])
        .cwd(&dir)
        .env("CI", "1")
        .ok();
    d.stderr_lacks("errored").stderr_lacks("thresholds failed");
    // The recorded llama, outside the lineup, misses a threshold on purpose: named with -m,
    // its cassettes replay, and the failed threshold gates compare too (no case errored).
    let llama = p
        .evals(&[
            "compare",
            "--no-autosave",
            "-m",
            "meta-llama/llama-3.1-8b-instruct",
        ])
        .cwd(&dir)
        .env("CI", "1")
        .code(1);
    llama.stderr_lacks("errored");
    llama.stderr_has("error: thresholds failed:
  meta-llama/llama-3.1-8b-instruct [temp 0.1, max 8192] · tax-preparation · partial: fails its thresholds (field_accuracy 0 < 0.5); reply unusable (not JSON: expected value at line 1 column 1); the model said: \"Sure! Based on what you wrote, you are single with no dependents and moved states, so you will file two returns.\"
");
    let rows: Vec<Vec<String>> = d
        .stdout
        .lines()
        .map(crate::harness::cells)
        .filter(|c| c.first().is_some_and(|n| n.parse::<u32>().is_ok()))
        .collect();
    let contenders: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r[1].as_str(), r[2].as_str()))
        .collect();
    for effort in ["low", "high"] {
        assert!(
            contenders.contains(&("deepseek/deepseek-v4.1-flash", effort)),
            "{}",
            d.stdout
        );
    }
    assert_eq!(rows.len(), 4, "{}", d.stdout);
    for row in &rows {
        assert_eq!(row[10], "0", "errors of {}\n{}", row[1], d.stdout);
    }
    assert_eq!(d.cell("deepseek/deepseek-v4.1-flash", "errors"), "0");
}

/// Refuses every call with a 401 whose message quotes the key it was sent.
struct RejectQuotingKey;

impl Respond for RejectQuotingKey {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let auth = req.headers.get("authorization").unwrap().to_str().unwrap();
        let key = auth.trim_start_matches("Bearer ");
        ResponseTemplate::new(401)
            .set_body_json(json!({"error": {"message": format!("invalid key: {key}")}}))
    }
}

#[test]
fn a_rejection_quoting_the_key_errors_the_case_without_keeping_the_key() {
    let mut s = Server::start();
    s.answer("/api/v1/chat/completions", RejectQuotingKey);
    let p = suite(
        "Answer in JSON.",
        &format!(
            "openrouter:\n  base_url: {}/api/v1\n  vendors:\n    openai:\n      models: [gpt-x]\n",
            s.uri()
        ),
        &numbered_cases(1),
    );
    let d = p
        .evals(&["run", "--cassettes", "record"])
        .env("OPENROUTER_API_KEY", FAKE_KEY)
        .code(1);
    assert_eq!(s.hits(), 1);
    s.stop();
    d.stdout_has("invalid key: [REDACTED]")
        .stdout_lacks(FAKE_KEY)
        .stderr_lacks(FAKE_KEY);
    assert_eq!(files_holding(&p, FAKE_KEY), Vec::<PathBuf>::new());
    // A rejection is not what the model answers: it was not recorded.
    p.evals(&["run", "--cassettes", "replay", "--no-autosave"])
        .code(1)
        .stdout_has("c0 error: no cassette for this case");
}

#[test]
fn an_outage_while_recording_keeps_the_good_cassette() {
    let mut s = Server::start();
    s.answer("/v1/chat/completions", PerCase);
    let p = suite("Answer in JSON.", &local(&s.uri()), &numbered_cases(1));
    p.evals(&["record", "--no-autosave"]).ok();
    let good = p.read(&format!("{CASSETTES}/local/m1/max-64/d/c0.json"));
    let recorded_uri = s.uri();
    s.stop();
    // The provider is down now: record again. The case errors, the cassette stays as it was.
    let mut down = Server::start();
    down.answer("/v1/chat/completions", ResponseTemplate::new(503));
    p.evals(&["record", "--no-autosave"])
        .env("EVALS_REDIRECT", &format!("{recorded_uri}={}", down.uri()))
        .code(1)
        .stderr_has("local/m1 [max 64] · d · c0: HTTP 503 (after 5 attempts)");
    down.stop();
    assert_eq!(
        p.read(&format!("{CASSETTES}/local/m1/max-64/d/c0.json")),
        good
    );
    p.evals(&["run", "--cassettes", "replay", "--no-autosave"])
        .ok();
}

#[test]
fn a_live_run_keeps_an_echoed_key_out_of_results_and_history() {
    let hex = FAKE_KEY.trim_start_matches("sk-or-v1-");
    let mut s = Server::start();
    s.answer("/api/v1/chat/completions", EchoAuth);
    let p = suite(
        "Answer in JSON.",
        &format!(
            "openrouter:\n  base_url: {}/api/v1\n  vendors:\n    openai:\n      models: [gpt-x]\n",
            s.uri()
        ),
        &numbered_cases(2),
    );
    let d = p
        .evals(&[
            "run",
            "--cassettes",
            "live",
            "--format",
            "json",
            "-o",
            "live.json",
        ])
        .env("OPENROUTER_API_KEY", FAKE_KEY)
        .ok();
    assert_eq!(s.hits(), 2);
    s.stop();
    for out in [&d.stdout, &d.stderr] {
        assert!(!out.contains(hex), "the key was printed:\n{out}");
    }
    let run: Value = serde_json::from_str(&p.read("live.json")).unwrap();
    assert_eq!(
        run["experiments"][0]["cases"][0]["output"]["note"],
        "you sent Bearer [REDACTED]"
    );
    assert!(
        !p.path().join(CASSETTES).exists(),
        "live mode writes no cassette"
    );
    for f in files_under(p.path()) {
        let bytes = std::fs::read(&f).unwrap();
        assert!(
            !bytes.windows(hex.len()).any(|w| w == hex.as_bytes()),
            "{} holds the key",
            f.display()
        );
    }
}

#[test]
fn auto_without_the_key_replays_and_never_calls_keyless() {
    let mut s = Server::start();
    s.answer("/v1/chat/completions", PerCase);
    let providers = format!(
        "local:\n  base_url: {}/v1\n  api_key_env: TAPE_KEY\n  models: [m1]\n",
        s.uri()
    );
    let p = suite("Answer in JSON.", &providers, &numbered_cases(1));
    p.evals(&["record", "--no-autosave"])
        .env("TAPE_KEY", "tape-key-0123456789")
        .ok();
    assert_eq!(s.hits(), 1);
    let recorded = p.read(&format!("{CASSETTES}/local/m1/max-64/d/c0.json"));
    // The prompt changes; the key is not set: auto must not call the server without it.
    p.write(CONFIG, &config("Answer in JSON, briefly.", &providers));
    let d = p.evals(&["compare", "--no-autosave"]).code(1);
    d.stderr_has("TAPE_KEY is not set: replaying the recorded cassettes only");
    d.stderr_has("local/m1 [max 64] · d · c0: no recording matches this request");
    assert_eq!(s.hits(), 1, "no keyless call went out");
    s.stop();
    assert_eq!(
        p.read(&format!("{CASSETTES}/local/m1/max-64/d/c0.json")),
        recorded
    );
}

#[test]
fn the_diff_report_shows_each_missed_request_against_its_recording() {
    let mut s = Server::start();
    s.answer("/v1/chat/completions", PerCase);
    let p = suite("Answer in JSON.", &local(&s.uri()), &numbered_cases(1));
    p.evals(&["record", "--no-autosave"]).ok();
    let uri = s.uri();
    s.stop();
    p.write(CONFIG, &config("Answer in JSON, please.", &local(&uri)));
    p.evals(&["check", "--no-autosave", "--diff", "changes.diff"])
        .code(1);
    let diff = p.read("changes.diff");
    assert!(
        diff.contains("# 1 missed request(s): local/m1 [max 64] (1 case)\n# cases: d/c0\n"),
        "{diff}"
    );
    assert!(diff.contains("no recording matches this request"), "{diff}");
    assert!(
        diff.contains("-Answer in JSON.") && diff.contains("+Answer in JSON, please."),
        "{diff}"
    );
    assert!(
        diff.contains("# record again: evals record -m local/m1"),
        "{diff}"
    );
}

#[test]
fn prune_removes_the_folders_it_empties_and_scan_refuses_a_missing_path() {
    let mut s = Server::start();
    s.answer("/v1/chat/completions", PerCase);
    let p = suite("Answer in JSON.", &local(&s.uri()), &numbered_cases(2));
    p.evals(&["record", "--no-autosave"]).ok();
    let uri = s.uri();
    s.stop();
    // The model is renamed: every cassette of m1 is unused now.
    p.write(
        CONFIG,
        &config(
            "Answer in JSON.",
            &format!("local:\n  base_url: {uri}/v1\n  models: [m2]\n"),
        ),
    );
    p.evals(&["cassettes", "prune"]).ok();
    assert!(!p.path().join(CASSETTES).join("local").exists());
    assert!(
        p.path().join(CASSETTES).is_dir(),
        "the cassette folder itself stays"
    );

    let d = p.evals(&["cassettes", "scan", "no/such/folder"]).code(2);
    d.stderr_has("no/such/folder: no such file or folder");
    d.stderr_lacks("hold a secret");
}

#[test]
fn a_case_error_comes_after_the_suite_is_named() {
    let p = suite(
        "x",
        "",
        "{\"id\": \"a\", \"input\": \"x\"}\n{\"id\": \"a\", \"input\": \"y\"}\n",
    );
    let d = p.evals(&["cases"]).code(2);
    assert!(
        d.stderr
            .starts_with("suite: tape (evals/.llm-evals.config.yml)\nerror: duplicate case id 'a'"),
        "{}",
        d.stderr
    );
}

#[test]
fn a_changed_setting_misses_with_the_setting_diffed_against_the_recording() {
    let mut s = Server::start();
    s.answer("/v1/chat/completions", PerCase);
    let uri = s.uri();
    let p = suite(
        "Answer in JSON.",
        &format!(
            "local:\n  base_url: {uri}/v1\n  models:\n    - model: m1\n      temperature: 0.1\n"
        ),
        &numbered_cases(1),
    );
    p.evals(&["record", "--no-autosave"]).ok();
    s.stop();
    let d = p
        .evals(&["run", "--cassettes", "replay", "--no-autosave", "-t", "0.7"])
        .code(1);
    d.stdout_has("c0 error: no cassette for this case with these settings");
    d.stdout_has("nearest recording: evals/cassettes/local/m1/temp-0.1.max-64/d/c0.json");
    d.stdout_has("temperature: 0.1 → 0.7");
    d.stdout_has("run `evals record -d d -c c0 -m local/m1 -t 0.7` to record it");
}

#[test]
fn status_reports_the_partial_files_of_a_killed_write_and_prune_removes_them() {
    let mut s = Server::start();
    s.answer("/v1/chat/completions", PerCase);
    let p = suite("Answer in JSON.", &local(&s.uri()), &numbered_cases(1));
    p.evals(&["record", "--no-autosave"]).ok();
    s.stop();
    // What `kill -9` in the middle of a write leaves: the temp file, half written.
    let partial = format!("{CASSETTES}/local/m1/max-64/d/.evals-tmp-Ab12Cd.partial");
    p.write(&partial, "{\n  \"format\": 1,\n  \"inter");

    let d = p.evals(&["cassettes", "status"]).ok();
    d.stdout_has("1 recorded, 0 missing, 0 stale, 0 unused")
        .stderr_has("1 partial file left by an interrupted write: run `evals cassettes prune`");
    assert!(
        d.stdout
            .lines()
            .any(|l| l.contains("partial") && l.contains(&partial)),
        "{}",
        d.stdout
    );

    let d = p.evals(&["cassettes", "prune", "-n"]).ok();
    assert_eq!(d.stdout, format!("would remove {partial}\n"));
    assert!(p.path().join(&partial).is_file());
    let d = p.evals(&["cassettes", "prune"]).ok();
    assert_eq!(d.stdout, format!("removed {partial}\n"));
    assert!(!p.path().join(&partial).exists());
    // The cassette beside it is untouched and still replays.
    assert!(
        p.path()
            .join(CASSETTES)
            .join("local/m1/max-64/d/c0.json")
            .is_file()
    );
    p.evals(&["cassettes", "status"])
        .ok()
        .stderr_lacks("partial");
    p.evals(&["compare", "--cassettes", "replay", "--no-autosave"])
        .ok();
}

#[test]
fn the_gitignore_of_init_keeps_partial_files_out_of_git() {
    let p = Project::new();
    p.evals(&["init"]).ok().stderr_has("wrote .gitignore");
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(p.path())
            .output_bounded()
            .expect("git")
    };
    assert!(git(&["init", "-q"]).status.success());
    p.write(
        "evals/cassettes/local/m1/default/d/.evals-tmp-Ab12Cd.partial",
        "{",
    );
    p.write("evals/cassettes/local/m1/default/d/c0.json", "{}");
    let ignored = git(&[
        "check-ignore",
        "-q",
        "evals/cassettes/local/m1/default/d/.evals-tmp-Ab12Cd.partial",
    ]);
    assert_eq!(
        ignored.status.code(),
        Some(0),
        "the partial file is not ignored"
    );
    let kept = git(&[
        "check-ignore",
        "-q",
        "evals/cassettes/local/m1/default/d/c0.json",
    ]);
    assert_eq!(kept.status.code(), Some(1), "a cassette is ignored");
    // What runs leave behind is ignored too; the suite itself is not.
    p.write(".evals/history.sqlite3", "");
    p.write("log/warnings.log", "");
    p.write("evals/results/r.json", "{}");
    for ignored in [
        ".evals/history.sqlite3",
        "log/warnings.log",
        "evals/results/r.json",
    ] {
        let out = git(&["check-ignore", "-q", ignored]);
        assert_eq!(out.status.code(), Some(0), "{ignored} is not ignored");
    }
    for kept in [
        "evals/.llm-evals.config.yml",
        "evals/datasets/tickets/cases.jsonl",
    ] {
        let out = git(&["check-ignore", "-q", kept]);
        assert_eq!(out.status.code(), Some(1), "{kept} is ignored");
    }
}

#[test]
fn init_completes_an_existing_gitignore_and_leaves_its_lines_alone() {
    let p = Project::new().file(".gitignore", "/target\n/.evals/");
    p.evals(&["init"])
        .ok()
        .stderr_has("added evals' lines to .gitignore");
    let text = p.read(".gitignore");
    assert!(text.starts_with("/target\n/.evals/\n"), "{text}");
    assert_eq!(text.matches("/.evals/").count(), 1, "{text}");
    for line in ["/log/", "/evals/results/", ".evals-tmp-*.partial"] {
        assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
    }
    assert!(!p.path().join("evals/.gitignore").exists());
}

const C0: &str = "evals/cassettes/local/m1/max-64/d/c0.json";

/// A suite of one case recorded well; returns it, its cassette's bytes and the URL it was
/// recorded against (the server is stopped).
fn recorded_once() -> (Project, String, String) {
    let mut s = Server::start();
    s.answer("/v1/chat/completions", PerCase);
    let p = suite("Answer in JSON.", &local(&s.uri()), &numbered_cases(1));
    p.evals(&["record", "--no-autosave"]).ok();
    let uri = s.uri();
    s.stop();
    let good = p.read(C0);
    (p, good, uri)
}

/// The one case of a JSON report: (errors of the experiment, the case's score and error).
fn only_case(p: &Project, report: &str) -> (u64, Value, String) {
    let v: Value = serde_json::from_str(&p.read(report)).unwrap();
    let e = &v["experiments"][0];
    let c = &e["cases"][0];
    (
        e["errors"].as_u64().unwrap(),
        c["score"].clone(),
        c["error"].as_str().unwrap_or_default().to_string(),
    )
}

#[test]
fn a_200_that_is_no_completion_errors_the_case_and_leaves_the_good_cassette_byte_for_byte() {
    let (p, good, recorded_uri) = recorded_once();
    let bad_bodies = [
        (
            ResponseTemplate::new(200).set_body_string("<html>502 Bad Gateway</html>"),
            "local/m1: response is not JSON: <html>502 Bad Gateway</html>",
        ),
        (
            ResponseTemplate::new(200).set_body_json(json!({"error": {
                "message": "You exceeded your current quota",
                "type": "insufficient_quota", "code": "insufficient_quota"}})),
            "local/m1: provider error (insufficient_quota): You exceeded your current quota",
        ),
        (
            ResponseTemplate::new(200)
                .set_body_json(json!({"id": "gen-2", "object": "chat.completion"})),
            "local/m1: response has no choices: {",
        ),
    ];
    for (body, message) in bad_bodies {
        let mut down = Server::start();
        down.answer("/v1/chat/completions", body);
        let redirect = format!("{recorded_uri}={}", down.uri());
        let d = p
            .evals(&[
                "record",
                "--format",
                "json",
                "-o",
                "rec.json",
                "--no-autosave",
            ])
            .env("EVALS_REDIRECT", &redirect)
            .output();
        assert_eq!(p.read(C0), good, "{message}");
        assert_eq!(d.code, 1, "{}", d.stderr);
        d.stderr_has("1 case errored")
            .stderr_has(&format!("local/m1 [max 64] · d · c0: {message}"));
        assert_eq!(
            down.hits(),
            1,
            "{message}: a permanent failure is not retried"
        );
        let (errors, score, error) = only_case(&p, "rec.json");
        assert_eq!((errors, score), (1, Value::Null), "an error, never a 0");
        assert!(error.starts_with(message), "{error}");

        // Auto mode: a changed prompt misses, goes upstream, gets the same: no write.
        p.write(
            CONFIG,
            &config("Answer in JSON, please.", &local(&recorded_uri)),
        );
        p.evals(&["run", "--cassettes", "auto", "--no-autosave"])
            .env("EVALS_REDIRECT", &redirect)
            .code(1)
            .stdout_has(message);
        assert_eq!(down.hits(), 2);
        assert_eq!(p.read(C0), good, "{message}");
        p.write(CONFIG, &config("Answer in JSON.", &local(&recorded_uri)));
        down.stop();
    }
    p.evals(&["run", "--cassettes", "replay", "--no-autosave"])
        .ok();
}

#[test]
fn a_200_carrying_a_transient_error_object_is_retried_and_only_the_answer_recorded() {
    let (p, good, recorded_uri) = recorded_once();
    let overloaded = || {
        ResponseTemplate::new(200).set_body_json(json!({"error": {
            "code": 502, "message": "upstream overloaded"}}))
    };
    // Overloaded for good: five attempts, then an error; the old cassette stays.
    let mut down = Server::start();
    down.answer("/v1/chat/completions", overloaded());
    let d = p
        .evals(&["record", "--no-autosave"])
        .env("EVALS_REDIRECT", &format!("{recorded_uri}={}", down.uri()))
        .output();
    assert_eq!(p.read(C0), good);
    assert_eq!(down.hits(), 5, "retried like a 5xx");
    assert_eq!(d.code, 1);
    d.stderr_has(
        "local/m1 [max 64] · d · c0: provider error (502): upstream overloaded (after 5 attempts)",
    );
    down.stop();

    // Overloaded twice, then an answer: recorded, with the answer alone.
    let mut flaky = Server::start();
    flaky.mount(
        post("/v1/chat/completions")
            .respond_with(overloaded())
            .up_to_n_times(2)
            .with_priority(1),
    );
    flaky.mount(
        post("/v1/chat/completions")
            .respond_with(chat(r#"{"answer": "fresh"}"#, json!({"prompt_tokens": 1})))
            .with_priority(2),
    );
    p.evals(&["record", "--no-autosave"])
        .env("EVALS_REDIRECT", &format!("{recorded_uri}={}", flaky.uri()))
        .code(0);
    assert_eq!(flaky.hits(), 3);
    flaky.stop();
    let cassette: Value = serde_json::from_str(&p.read(C0)).unwrap();
    let interactions = cassette["interactions"].as_array().unwrap();
    assert_eq!(interactions.len(), 1);
    assert!(
        interactions[0]["response"]["body"]["error"].is_null(),
        "{cassette}"
    );
    assert_eq!(
        interactions[0]["response"]["body"]["choices"][0]["message"]["content"],
        r#"{"answer": "fresh"}"#
    );
}

#[test]
fn a_completion_with_error_null_is_an_answer() {
    let mut s = Server::start();
    s.answer(
        "/v1/chat/completions",
        ResponseTemplate::new(200).set_body_json(json!({
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "{\"answer\": \"a0\"}"}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2},
            "error": null,
        })),
    );
    let p = suite("Answer in JSON.", &local(&s.uri()), &numbered_cases(1));
    let d = p.evals(&["record", "--no-autosave"]).ok();
    assert_eq!(d.cell("local/m1", "errors"), "0");
    s.stop();
    assert!(p.path().join(C0).is_file());
    p.evals(&["run", "--cassettes", "replay", "--no-autosave"])
        .ok();
}

/// A cassette folder no write can reach, not even root's (tests run as root, which chmod
/// does not stop): procfs takes no new folders.
#[cfg(target_os = "linux")]
const UNWRITABLE: &str = "/proc/evals-test-no-such-folder/cassettes";

#[cfg(target_os = "linux")]
#[test]
fn auto_warns_once_per_cassette_it_cannot_write_and_scores_the_answers_record_errors() {
    let s = Server::start();
    s.answer("/v1/chat/completions", PerCase);
    let providers = format!("{}cassettes:\n  dir: {UNWRITABLE}\n", local(&s.uri()));
    let p = suite("Answer in JSON.", &providers, &numbered_cases(2));
    let d = p
        .evals(&["run", "--cassettes", "auto", "--no-autosave"])
        .ok();
    assert_eq!(s.hits(), 2);
    assert_eq!(d.cell("local/m1", "errors"), "0");
    assert_eq!(d.cell("local/m1", "field_accuracy"), "100.0%");
    for case in ["c0", "c1"] {
        let warning =
            format!("warning: cannot write cassette {UNWRITABLE}/local/m1/max-64/d/{case}.json: ");
        assert_eq!(
            d.stderr.matches(&warning).count(),
            1,
            "{warning}\n--- stderr\n{}",
            d.stderr
        );
    }
    d.stderr_has("the answer was scored but not recorded").stderr_has(
        "warning: 2 cassettes could not be written (named above): their cases are not recorded, but their answers were scored",
    );

    // `record` is there to write: the same failure errors each case.
    let d = p.evals(&["record", "--no-autosave"]).code(1);
    d.stderr_has("2 cases errored").stderr_has(&format!(
        "local/m1 [max 64] · d · c0: cannot write cassette {UNWRITABLE}/local/m1/max-64/d/c0.json: "
    ));
    d.stderr_lacks("could not be written (named above)");
}

/// Answers `case N` with `{"answer": "aN", "pad": ...}` padded with `pad` bytes.
struct Padded(usize);

impl Respond for Padded {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let n = last_user_content(req)
            .trim_start_matches("case ")
            .to_string();
        let content = json!({"answer": format!("a{n}"), "pad": "x".repeat(self.0)}).to_string();
        ResponseTemplate::new(200).set_body_json(padded_body(&content))
    }
}

fn padded_body(content: &str) -> Value {
    json!({
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2},
    })
}

#[test]
fn a_reply_over_max_response_bytes_errors_its_case_with_the_figure_live_and_on_replay() {
    let mut s = Server::start();
    s.answer("/v1/chat/completions", Padded(5000));
    let content = json!({"answer": "a0", "pad": "x".repeat(5000)}).to_string();
    let size = serde_json::to_vec(&padded_body(&content)).unwrap().len();
    let figure = format!("{:.1} KiB", size as f64 / 1024.0);
    let limited = format!(
        "{}cassettes:\n  max_response_bytes: 4096\n",
        local(&s.uri())
    );
    let p = suite("Answer in JSON.", &limited, &numbered_cases(1));

    let d = p
        .evals(&[
            "record",
            "--format",
            "json",
            "-o",
            "rec.json",
            "--no-autosave",
        ])
        .code(1);
    d.stderr_has(&format!(
        "the response is {figure}, over cassettes.max_response_bytes (4.0 KiB): raise it in the config if this is expected"
    ));
    assert_eq!(s.hits(), 1, "not retried");
    let (errors, score, _) = only_case(&p, "rec.json");
    assert_eq!((errors, score), (1, Value::Null), "an error, never a 0");
    assert!(!p.path().join(C0).exists(), "nothing recorded");

    // Under the default (8 MiB) it records; a lower limit then refuses the recording too.
    p.write(CONFIG, &config("Answer in JSON.", &local(&s.uri())));
    p.evals(&["record", "--no-autosave"]).ok();
    s.stop();
    p.write(CONFIG, &config("Answer in JSON.", &limited));
    p.evals(&["run", "--cassettes", "replay", "--no-autosave"])
        .code(1)
        .stdout_has(&format!(
            "{C0}: the recorded response is {figure}, over cassettes.max_response_bytes (4.0 KiB)"
        ));
    p.write(CONFIG, &config("Answer in JSON.", &local(&s.uri())));
    p.evals(&["run", "--cassettes", "replay", "--no-autosave"])
        .ok();
}

#[test]
fn max_response_bytes_of_zero_is_a_config_error() {
    let p = suite(
        "Answer in JSON.",
        &format!(
            "{}cassettes:\n  max_response_bytes: 0\n",
            local("http://127.0.0.1:9")
        ),
        &numbered_cases(1),
    );
    p.evals(&["run", "--cassettes", "replay", "--no-autosave"])
        .code(2)
        .stderr_has("evals/.llm-evals.config.yml: cassettes.max_response_bytes is 0: give the largest response body a call may return, in bytes");
}

/// Answers `case 0` with bare JSON and `case 1` with the same in a Markdown fence.
struct FencedOnOne;

impl Respond for FencedOnOne {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let content = match last_user_content(req).as_str() {
            "case 0" => r#"{"answer": "a0"}"#.to_string(),
            _ => "```json\n{\"answer\": \"a1\"}\n```".to_string(),
        };
        ResponseTemplate::new(200).set_body_json(padded_body(&content))
    }
}

#[test]
fn results_keep_raw_only_where_it_differs_from_output() {
    let mut s = Server::start();
    s.answer("/v1/chat/completions", FencedOnOne);
    let p = suite("Answer in JSON.", &local(&s.uri()), &numbered_cases(2));
    p.evals(&["record", "--destination", "snaps"]).ok();
    s.stop();
    let snap = files_under(&p.path().join("snaps"));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&snap[0]).unwrap()).unwrap();
    let cases = v["experiments"][0]["cases"].as_array().unwrap();
    assert_eq!(cases[0]["output"], json!({"answer": "a0"}));
    assert!(
        cases[0].get("raw").is_none(),
        "raw kept twice: {}",
        cases[0]
    );
    assert_eq!(cases[1]["output"], json!({"answer": "a1"}));
    assert_eq!(cases[1]["raw"], "```json\n{\"answer\": \"a1\"}\n```");
    // The history holds the same.
    let d = p.evals(&["export", v["run"]["id"].as_str().unwrap()]).ok();
    let stored: Value = serde_json::from_str(&d.stdout).unwrap();
    assert_eq!(stored["experiments"], v["experiments"]);
}

/// The bundled fixtures and the tax-intake cassettes laid out as at the repository's root,
/// where the README's first command runs.
pub(crate) fn repository_root() -> Project {
    let p = Project::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    copy_tree(
        &root.join("fixtures"),
        &p.path().join("fixtures"),
        &[
            "tax-intake/evals/results",
            "tax-intake/.evals",
            "toy/evals/results",
            "toy/.evals",
        ],
    );
    copy_tree(
        &root.join("cassettes/tax-intake"),
        &p.path().join("cassettes/tax-intake"),
        &[],
    );
    p
}

#[test]
fn from_the_repository_root_the_readme_command_finds_the_tax_intake_example() {
    // The README's first command runs at the repository root: the search must find the
    // tax-intake suite (the shallowest, first by name), never another bundled fixture.
    let p = repository_root();
    let d = p
        .evals(&["compare", "--no-autosave", "-m", "openai/gpt-4o-mini"])
        .env("CI", "1")
        .ok();
    assert_eq!(
        d.first_stderr_line(),
        "suite: tax-intake (fixtures/tax-intake/evals/.llm-evals.config.yml)"
    );
    d.stderr_lacks("cases errored");
}

#[test]
fn record_says_what_it_wrote_and_auto_says_what_it_called_live() {
    let s = Server::start();
    s.answer("/v1/chat/completions", PerCase);
    let p = suite("Answer in JSON.", &local(&s.uri()), &numbered_cases(3));
    p.evals(&["record", "--no-autosave"]).ok().stderr_has(
        "wrote 3 cassettes (3 new, 0 changed), 0 unchanged, in evals/cassettes: 3 live calls",
    );
    let first = p.read(C0);
    // The same answers again: nothing to rewrite, the files keep their bytes (and dates).
    std::thread::sleep(Duration::from_millis(1100));
    p.evals(&["record", "--no-autosave"]).ok().stderr_has(
        "wrote 0 cassettes (0 new, 0 changed), 3 unchanged, in evals/cassettes: 3 live calls",
    );
    assert_eq!(p.read(C0), first);
    // Recorded: auto replays and says nothing about live calls; nor does replay.
    let hits = s.hits();
    p.evals(&["compare", "--no-autosave"])
        .ok()
        .stderr_lacks("live call");
    assert_eq!(s.hits(), hits);
    // A prompt edit and a new case: auto calls live for each, and says so.
    p.write(CONFIG, &config("Answer in JSON, please.", &local(&s.uri())));
    p.write(CASES, &numbered_cases(4));
    p.evals(&["compare", "--no-autosave"])
        .ok()
        .stderr_has("recorded 4 cassettes (1 new, 3 changed) in evals/cassettes: 4 live calls");
    assert_eq!(s.hits(), hits + 4);
    assert_ne!(p.read(C0), first);
    p.evals(&["compare", "--no-autosave", "-c", "c0"])
        .ok()
        .stderr_lacks("live call");
    p.evals(&[
        "compare",
        "--no-autosave",
        "--cassettes",
        "live",
        "-c",
        "c0",
    ])
    .ok()
    .stderr_has("1 live call; nothing recorded (--cassettes live)");
}

#[test]
fn a_new_case_alone_is_recorded_new_in_auto() {
    let s = Server::start();
    s.answer("/v1/chat/completions", PerCase);
    let p = suite("Answer in JSON.", &local(&s.uri()), &numbered_cases(1));
    p.evals(&["compare", "--no-autosave"])
        .ok()
        .stderr_has("recorded 1 new cassette in evals/cassettes: 1 live call");
}

#[test]
fn recordings_replay_against_the_same_provider_at_another_base_url() {
    let a = Server::start();
    a.answer("/v1/chat/completions", PerCase);
    let p = suite("Answer in JSON.", &local(&a.uri()), &numbered_cases(2));
    p.evals(&["record", "--no-autosave"]).ok();
    let recorded = p.read(C0);
    // The full URL stays in the file, for information.
    assert!(
        recorded.contains(&format!("{}/v1/chat/completions", a.uri())),
        "{recorded}"
    );
    // Another server on another port (a proxy, a local server moved): nothing reaches it.
    let b = Server::start();
    b.answer("/v1/chat/completions", PerCase);
    assert_ne!(a.uri(), b.uri());
    p.write(CONFIG, &config("Answer in JSON.", &local(&b.uri())));
    for mode in ["replay", "auto"] {
        let d = p
            .evals(&[
                "compare",
                "--no-autosave",
                "--cassettes",
                mode,
                "--format",
                "json",
            ])
            .ok();
        d.stderr_lacks("no recording").stderr_lacks("live call");
        let run: Value = serde_json::from_str(&d.stdout).unwrap();
        assert_eq!(run["experiments"][0]["errors"], 0, "{mode}: {}", d.stdout);
    }
    assert_eq!(b.hits(), 0);
    assert_eq!(p.read(C0), recorded);
    // What counts is the path below the base: a base under another prefix is the same.
    p.write(
        CONFIG,
        &config(
            "Answer in JSON.",
            &format!("local:\n  base_url: {}/v2\n  models: [m1]\n", b.uri()),
        ),
    );
    p.evals(&["compare", "--no-autosave", "--cassettes", "replay"])
        .ok()
        .stderr_lacks("no recording");
    p.evals(&["cassettes", "status"])
        .ok()
        .stdout_has("2 recorded, 0 missing, 0 stale, 0 unused");
}

#[test]
fn case_ids_sharing_a_cassette_file_passed_verify_and_overwrote_each_other() {
    let p = suite(
        "Answer in JSON.",
        "fake: { models: [echo] }\n",
        "{\"id\": \"x/y\", \"input\": \"case 0\", \"expected\": {\"answer\": \"a0\"}}\n{\"id\": \"a\", \"input\": \"case 1\", \"expected\": {\"answer\": \"a1\"}}\n{\"id\": \"x\\\\y\", \"input\": \"case 2\", \"expected\": {\"answer\": \"a2\"}}\n",
    );
    let said = "error: case ids 'x/y' (evals/datasets/d/cases.jsonl:1) and 'x\\y' (evals/datasets/d/cases.jsonl:3) in dataset 'd' share one cassette file, <contender>/d/x/y.json: a `\\` in an id is a `/` there, and an empty level (`//`, a leading or trailing `/`) is left out; give one of them another id\n";
    for cmd in [&["verify"][..], &["record", "--no-autosave"], &["cases"]] {
        p.evals(cmd).code(2).stderr_has(said);
    }
    // A leading `\` is an empty level, left out: `\a` and `a` name a.json.
    p.write(
        CASES,
        "{\"id\": \"a\", \"input\": \"case 0\", \"expected\": {\"answer\": \"a0\"}}\n{\"id\": \"\\\\a\", \"input\": \"case 1\", \"expected\": {\"answer\": \"a1\"}}\n",
    );
    p.evals(&["verify"])
        .code(2)
        .stderr_has("error: case ids 'a' (evals/datasets/d/cases.jsonl:1) and '\\a' (evals/datasets/d/cases.jsonl:2) in dataset 'd' share one cassette file, <contender>/d/a.json");
}

#[test]
fn a_300_character_case_id_passed_verify_then_could_not_be_recorded() {
    let mut s = Server::start();
    s.answer("/v1/chat/completions", PerCase);
    let long = format!("v/{}", "q".repeat(300));
    let p = suite(
        "Answer in JSON.",
        &local(&s.uri()),
        &format!(
            "{{\"id\": \"{long}\", \"input\": \"case 0\", \"expected\": {{\"answer\": \"a0\"}}}}\n{{\"id\": \"short\", \"input\": \"case 1\", \"expected\": {{\"answer\": \"a1\"}}}}\n"
        ),
    );
    p.evals(&["verify"]).ok();
    p.evals(&["record", "--no-autosave"]).ok();
    s.stop();
    // A short name, the id's start and a hash; a short id's file is where it always was.
    let files: Vec<String> = files_under(&p.path().join(CASSETTES))
        .iter()
        .map(|f| {
            f.strip_prefix(p.path().join(CASSETTES))
                .unwrap()
                .display()
                .to_string()
        })
        .collect();
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(
        files.contains(&"local/m1/max-64/d/short.json".to_string()),
        "{files:?}"
    );
    let cut = files
        .iter()
        .find(|f| f.starts_with(&format!("local/m1/max-64/d/v/{}-", "q".repeat(64))))
        .unwrap_or_else(|| panic!("{files:?}"));
    assert_eq!(
        cut.len(),
        "local/m1/max-64/d/v/".len() + 64 + 1 + 16 + ".json".len()
    );
    p.evals(&["run", "--cassettes", "replay", "--no-autosave"])
        .ok();
    p.evals(&["cassettes", "status"]).ok();
}

#[test]
fn two_models_sharing_a_cassette_folder_replayed_each_others_recordings() {
    let p = suite(
        "Answer in JSON.",
        "local:\n  base_url: http://127.0.0.1:9/v1\n  models: [a/b, a__b]\n",
        &numbered_cases(1),
    );
    p.evals(&["run", "--no-autosave"]).code(2).stderr_has(
        "error: evals/.llm-evals.config.yml: contenders local/a/b and local/a__b share one cassette folder, local/a__b/max-64: each would replay the other's recordings; rename one of the models (a `/` in a model is `__` in the folder)\n",
    );
}

/// Answers `case N` with `aN` (`bN` once N is in `changed`), with a fresh `id`, `created`
/// and `system_fingerprint` on every call, as a real server gives them, and a fresh
/// `meta.trace_id` that only the suite's `cassettes.volatile_fields` names.
struct Fresh {
    calls: std::sync::atomic::AtomicU64,
    changed: std::sync::Arc<std::sync::Mutex<Vec<u64>>>,
}

impl Respond for Fresh {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let call = self
            .calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let user = last_user_content(req);
        let n: u64 = user.trim_start_matches("case ").parse().expect("case N");
        let letter = if self.changed.lock().unwrap().contains(&n) {
            "b"
        } else {
            "a"
        };
        ResponseTemplate::new(200).set_body_json(json!({
            "id": format!("chatcmpl-{call}"),
            "object": "chat.completion",
            "created": 1_700_000_000 + call,
            "system_fingerprint": format!("fp_{call}"),
            "choices": [{"index": 0, "message": {"role": "assistant",
                "content": json!({"answer": format!("{letter}{n}")}).to_string()},
                "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3},
            "meta": {"trace_id": format!("trace-{call}")},
        }))
    }
}

/// `git status --porcelain` of the cassette folder: the cassettes a re-record changed.
fn git_changes(p: &Project) -> String {
    p.git(&["status", "--porcelain", "--", CASSETTES])
}

#[test]
fn re_recording_the_same_answers_with_fresh_ids_rewrote_every_cassette() {
    let s = Server::start();
    let changed = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    s.answer(
        "/v1/chat/completions",
        Fresh {
            calls: 0.into(),
            changed: changed.clone(),
        },
    );
    let quiet_trace = format!(
        "{}cassettes:\n  volatile_fields: [meta.trace_id]\n",
        local(&s.uri())
    );
    let p = suite("Answer in JSON.", &quiet_trace, &numbered_cases(3));
    p.evals(&["record", "--no-autosave"]).ok().stderr_has(
        "wrote 3 cassettes (3 new, 0 changed), 0 unchanged, in evals/cassettes: 3 live calls",
    );
    p.git(&["init", "-q"]);
    p.git(&["add", "-A"]);
    p.git(&["commit", "-qm", "recorded"]);
    let files = files_under(&p.path().join(CASSETTES));
    assert_eq!(files.len(), 3, "{files:?}");
    let bytes = |f: &PathBuf| std::fs::read(f).unwrap();
    let before: Vec<Vec<u8>> = files.iter().map(bytes).collect();
    assert!(String::from_utf8_lossy(&before[0]).contains("chatcmpl-"));

    // Same answers, new ids, a later second: no file is touched.
    std::thread::sleep(Duration::from_millis(1100));
    p.evals(&["record", "--no-autosave"]).ok().stderr_has(
        "wrote 0 cassettes (0 new, 0 changed), 3 unchanged, in evals/cassettes: 3 live calls",
    );
    assert_eq!(files.iter().map(bytes).collect::<Vec<_>>(), before);
    assert_eq!(git_changes(&p), "");

    // One answer changes: only its cassette is rewritten.
    changed.lock().unwrap().push(1);
    p.evals(&["record", "--no-autosave"]).ok().stderr_has(
        "wrote 1 cassette (0 new, 1 changed), 2 unchanged, in evals/cassettes: 3 live calls",
    );
    assert_eq!(
        git_changes(&p),
        " M evals/cassettes/local/m1/max-64/d/c1.json\n"
    );
    assert!(
        p.read("evals/cassettes/local/m1/max-64/d/c1.json")
            .contains("b1")
    );

    // Without the suite's own volatile field, its fresh trace id is a change.
    p.write(CONFIG, &config("Answer in JSON.", &local(&s.uri())));
    p.evals(&["record", "--no-autosave"]).ok().stderr_has(
        "wrote 3 cassettes (0 new, 3 changed), 0 unchanged, in evals/cassettes: 3 live calls",
    );
}

#[test]
fn a_volatile_field_that_names_no_path_is_a_config_error() {
    let p = suite(
        "Answer in JSON.",
        &format!(
            "{}cassettes:\n  volatile_fields: [\"meta..trace\"]\n",
            local("http://127.0.0.1:9")
        ),
        &numbered_cases(1),
    );
    p.evals(&["run", "--cassettes", "replay", "--no-autosave"])
        .code(2)
        .stderr_has("evals/.llm-evals.config.yml: cassettes.volatile_fields: 'meta..trace' is not a field's path; write a response field as a dotted path from the body's root, e.g. meta.trace_id");
}

#[test]
fn cassettes_status_check_exits_1_on_missing_or_stale_and_plain_status_lists_with_0() {
    let mut s = Server::start();
    s.answer("/v1/chat/completions", PerCase);
    let providers = local(&s.uri());
    let p = suite("Answer in JSON.", &providers, &numbered_cases(2));
    p.evals(&["record", "--no-autosave"]).ok();
    s.stop();
    p.evals(&["cassettes", "status", "--help"])
        .ok()
        .stdout_has("--check")
        .stdout_has("evals cassettes status --check");
    // All fresh: 0, with or without --check.
    p.evals(&["cassettes", "status", "--check"])
        .ok()
        .stdout_has("2 recorded, 0 missing, 0 stale, 0 unused");
    // A new case: missing. The listing is the same; only --check fails on it.
    p.write(CASES, &numbered_cases(3));
    let listed = p.evals(&["cassettes", "status"]).ok();
    listed.stdout_has("2 recorded, 1 missing, 0 stale, 0 unused");
    let checked = p.evals(&["cassettes", "status", "--check"]).code(1);
    assert_eq!(checked.stdout, listed.stdout);
    checked.stderr_has("run `evals record`");
    // A prompt edit: every cassette stale.
    p.write(CASES, &numbered_cases(2));
    p.write(CONFIG, &config("Answer in JSON, briefly.", &providers));
    p.evals(&["cassettes", "status"])
        .ok()
        .stdout_has("0 recorded, 0 missing, 2 stale, 0 unused");
    p.evals(&["cassettes", "status", "--check"])
        .code(1)
        .stdout_has("0 recorded, 0 missing, 2 stale, 0 unused");
}
