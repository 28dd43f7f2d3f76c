//! `evals drift` end to end (issue 33): ten cases recorded from a scripted server, whose
//! answers then change for four of them. Drift lists exactly those, exits 1, stores its
//! run on branch `drift` and writes nothing under cassettes/ (`--update` rewrites only the
//! changed cases' files); unchanged answers exit 0; no key, a server answering 500 and a
//! refused connection exit 2 ("could not measure", never a drop).
//!
//! Opening, updating and closing the GitHub issue with drift's Markdown is `evals comment
//! --issue`, tested in `comment::comment_issue_opens_one_issue_then_updates_it_in_place_and_close_closes_it`.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use wiremock::{Request, Respond, ResponseTemplate};

use crate::harness::{MINI_SCHEMA, Project, files_under};
use crate::mock::{Server, chat};

const KEY: &str = "DRIFT_TEST_KEY";
const KEY_VALUE: &str = "sk-drift-0123456789abcdef";

/// Answers `case N` with `aN`, or with `changedN` once N is among `changed`.
#[derive(Clone, Default)]
struct Scripted {
    changed: Arc<Mutex<HashSet<String>>>,
}

impl Respond for Scripted {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&req.body).expect("json body");
        let user = body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_string();
        let id = user.trim_start_matches("case ").to_string();
        let answer = if self.changed.lock().unwrap().contains(&id) {
            format!("changed{id}")
        } else {
            format!("a{id}")
        };
        chat(
            &json!({ "answer": answer }).to_string(),
            json!({"prompt_tokens": 10, "completion_tokens": 3}),
        )
    }
}

/// Ten cases c0..c9 on one contender of `uri`, whose key is read from [`KEY`].
fn project(uri: &str) -> Project {
    let cases: String = (0..10)
        .map(|i| format!("{{\"id\": \"c{i}\", \"input\": \"case {i}\", \"expected\": {{\"answer\": \"a{i}\"}}}}\n"))
        .collect();
    Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "suite: drifty\nrequest_types: [prompt]\nadapter:\n  kind: prompt\n  user: \"{{{{ input }}}}\"\n  json: true\n{MINI_SCHEMA}defaults: {{ max_tokens: 64 }}\nlocal:\n  base_url: {uri}/v1\n  api_key_env: {KEY}\n  models: [m1]\n"
            ),
        )
        .file("evals/datasets/d/cases.jsonl", &cases)
}

/// Every file under the project's cassettes/, by path, with its bytes.
fn cassettes(p: &Project) -> BTreeMap<PathBuf, Vec<u8>> {
    files_under(&p.path().join("evals/cassettes"))
        .into_iter()
        .map(|f| {
            let bytes = std::fs::read(&f).unwrap();
            (f, bytes)
        })
        .collect()
}

/// The cassette file of case `id`.
fn cassette_of(all: &BTreeMap<PathBuf, Vec<u8>>, id: &str) -> PathBuf {
    let name = format!("{id}.json");
    let found: Vec<&PathBuf> = all
        .keys()
        .filter(|p| p.file_name().is_some_and(|n| n == name.as_str()))
        .collect();
    assert_eq!(found.len(), 1, "{id}: {found:?}");
    found[0].clone()
}

/// A project recorded from the scripted server with the "old" answers.
fn recorded() -> (Server, Scripted, Project) {
    let s = Server::start();
    let script = Scripted::default();
    s.answer("/v1/chat/completions", script.clone());
    let p = project(&s.uri());
    p.evals(&["record", "--no-autosave"])
        .env(KEY, KEY_VALUE)
        .code(0);
    assert_eq!(s.hits(), 10);
    assert_eq!(cassettes(&p).len(), 10);
    (s, script, p)
}

fn change(script: &Scripted, ids: &[&str]) {
    let mut changed = script.changed.lock().unwrap();
    changed.extend(ids.iter().map(|s| s.to_string()));
}

fn listed(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("changed  "))
        .map(|l| {
            l.split("  ")
                .next()
                .unwrap()
                .rsplit(" · ")
                .next()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn drift_with_40_percent_changed_answers_exits_1_lists_them_and_writes_nothing_under_cassettes() {
    let (s, script, p) = recorded();
    let before = cassettes(&p);
    change(&script, &["1", "4", "6", "8"]);
    let d = p
        .evals(&[
            "drift",
            "--markdown",
            "drift.md",
            "--json",
            "drift.json",
            "--junit",
            "junit.xml",
            "--diff",
            "drift.diff",
        ])
        .env(KEY, KEY_VALUE)
        .code(1);
    assert_eq!(listed(&d.stdout), ["c1", "c4", "c6", "c8"], "{}", d.stdout);
    d.stdout_has("changed  local/m1 [max 64] · d · c4  (score 1.00 → 0.10)\n");
    d.stderr_has("evals drift: drift in drifty: 4 of 10 answers changed (40%, --max-changed 20%)");
    // Ten live calls, after the ten recorded.
    assert_eq!(s.hits(), 20);
    // Nothing under cassettes/ changed, and the scratch folder is gone.
    assert_eq!(cassettes(&p), before);
    let scratch: Vec<_> = std::fs::read_dir(p.path().join(".evals"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("drift-"))
        .collect();
    assert!(scratch.is_empty(), "{scratch:?}");

    // The Markdown names the changed answers, with the recorded and live output diffed.
    let md = p.read("drift.md");
    assert!(md.starts_with("## evals drift: drift in drifty"), "{md}");
    assert!(md.contains("\n<!-- evals:drifty/drift -->\n"), "{md}");
    for c in ["c1", "c4", "c6", "c8"] {
        assert!(
            md.contains(&format!("<summary>local/m1 [max 64] · d · {c}</summary>")),
            "{md}"
        );
    }
    assert!(!md.contains("· d · c2"), "{md}");
    assert!(
        md.contains("-  \"answer\": \"a4\"\n+  \"answer\": \"changed4\""),
        "{md}"
    );
    let diff = p.read("drift.diff");
    assert!(
        diff.contains("# local/m1 [max 64] · d · c6\n--- recorded\n+++ live"),
        "{diff}"
    );
    let json: Value = serde_json::from_str(&p.read("drift.json")).unwrap();
    assert_eq!(json["drift"]["drifted"], true);
    assert_eq!(json["drift"]["compared"], 10);
    assert_eq!(json["drift"]["changed"].as_array().unwrap().len(), 4);
    assert_eq!(json["run"]["branch"], "drift");
    assert_eq!(json["run"]["command"], "drift");
    assert!(p.read("junit.xml").contains("<testsuite"));

    // The run is in the history, on branch drift.
    let h = p.evals(&["history", "--branch", "drift", "--json"]).code(0);
    let runs: Value = serde_json::from_str(&h.stdout).unwrap();
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["branch"], "drift");
    assert_eq!(runs[0]["command"], "drift");
    p.evals(&["history"]).code(0).stdout_has("drift");
    // The key never reaches a report.
    for f in ["drift.md", "drift.json", "junit.xml", "drift.diff"] {
        assert!(!p.read(f).contains(KEY_VALUE), "{f}");
    }
}

#[test]
fn drift_with_unchanged_answers_exits_0() {
    let (s, _script, p) = recorded();
    let before = cassettes(&p);
    let d = p.evals(&["drift"]).env(KEY, KEY_VALUE).code(0);
    assert_eq!(d.stdout, "");
    d.stderr_has("evals drift: no drift in drifty: 0 of 10 answers changed (0%, --max-changed 20%); no significant drop");
    assert_eq!(s.hits(), 20);
    assert_eq!(cassettes(&p), before);
}

#[test]
fn drift_update_rewrites_only_the_changed_cases_cassettes() {
    let (_s, script, p) = recorded();
    let before = cassettes(&p);
    change(&script, &["1", "4", "6", "8"]);
    let d = p.evals(&["drift", "--update"]).env(KEY, KEY_VALUE).code(1);
    d.stderr_has("--update: re-recorded 4 cassettes of the changed cases");
    let after = cassettes(&p);
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>()
    );
    for i in 0..10 {
        let id = format!("c{i}");
        let f = cassette_of(&before, &id);
        if ["c1", "c4", "c6", "c8"].contains(&id.as_str()) {
            assert_ne!(before[&f], after[&f], "{id} was re-recorded");
            assert!(String::from_utf8_lossy(&after[&f]).contains(&format!("changed{i}")));
        } else {
            assert_eq!(before[&f], after[&f], "{id} is byte for byte as it was");
        }
    }
    // The cassettes now hold the live answers: drift finds none changed.
    p.evals(&["drift"])
        .env(KEY, KEY_VALUE)
        .code(0)
        .stderr_has("0 of 10 answers changed");
}

#[test]
fn drift_samples_a_seeded_count_or_percentage_of_the_cases() {
    let (s, _script, p) = recorded();
    let one = p
        .evals(&["drift", "--sample", "3", "--json", "a.json"])
        .env(KEY, KEY_VALUE)
        .code(0);
    one.stderr_has("drift: 3 of 10 cases (seed 1): replayed from the cassettes, then called live");
    assert_eq!(s.hits(), 13);
    p.evals(&["drift", "--sample", "30%", "--json", "b.json"])
        .env(KEY, KEY_VALUE)
        .code(0);
    let cases = |f: &str| -> Vec<String> {
        let v: Value = serde_json::from_str(&p.read(f)).unwrap();
        v["experiments"][0]["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["case"].as_str().unwrap().to_string())
            .collect()
    };
    // The same seed draws the same cases; another seed, others.
    assert_eq!(cases("a.json"), cases("b.json"));
    assert_eq!(cases("a.json").len(), 3);
    p.evals(&["drift", "--sample", "3", "--seed", "7", "--json", "c.json"])
        .env(KEY, KEY_VALUE)
        .code(0);
    assert_ne!(cases("a.json"), cases("c.json"));
    p.evals(&["drift", "--sample", "0"])
        .code(2)
        .stderr_has("--sample 10%");
    p.evals(&["drift", "--max-changed", "120"])
        .code(2)
        .stderr_has("--max-changed 120: expected a percentage from 0 to 100");
    assert_eq!(
        s.hits(),
        19,
        "three samples of 3 after the 10 recorded; a bad flag calls nothing"
    );
}

#[test]
fn drift_without_the_key_exits_2_naming_the_variable() {
    let (s, _script, p) = recorded();
    let d = p.evals(&["drift"]).code(2);
    d.stderr_has(&format!(
        "{KEY} is not set: local/m1 needs it for the live calls drift makes"
    ));
    d.stderr_has(&format!("export {KEY}=..."));
    assert_eq!(s.hits(), 10, "no live call was made");
    assert_eq!(
        p.evals(&["history", "--branch", "drift", "--json"])
            .code(0)
            .stdout
            .trim(),
        "[]"
    );
}

/// Always HTTP 500.
struct Down;

impl Respond for Down {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        ResponseTemplate::new(500).set_body_string("upstream unavailable")
    }
}

#[test]
fn a_provider_answering_500_is_could_not_measure_exit_2_never_a_drop() {
    let (s, _script, p) = recorded();
    let before = cassettes(&p);
    s.reset();
    s.answer("/v1/chat/completions", Down);
    let d = p
        .evals(&["drift", "--markdown", "drift.md"])
        .env(KEY, KEY_VALUE)
        .code(2);
    d.stderr_has("evals drift: could not measure drift in drifty: 10 cases errored");
    d.stderr_has("live · local/m1 [max 64] · d · c0: HTTP 500");
    d.stderr_lacks("answers changed");
    assert_eq!(d.stdout, "");
    assert!(s.hits() >= 10);
    assert!(!p.path().join("drift.md").exists());
    assert_eq!(cassettes(&p), before);
}

#[test]
fn a_provider_refusing_connections_is_could_not_measure_exit_2() {
    let (s, _script, p) = recorded();
    // The provider moved to a port nothing listens on (its cassettes replay all the same:
    // a fingerprint holds the URL relative to base_url).
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port())
    };
    let config = p.read("evals/.llm-evals.config.yml");
    p.write(
        "evals/.llm-evals.config.yml",
        &config.replace(&s.uri(), &closed),
    );
    let d = p.evals(&["drift"]).env(KEY, KEY_VALUE).code(2);
    d.stderr_has("evals drift: could not measure drift in drifty: 10 cases errored");
    d.stderr_has("the provider is down");
}

fn repo_file(rel: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
}

#[test]
fn the_books_drift_workflow_is_the_linted_file_and_keeps_one_issue() {
    let example = repo_file("docs/example-drift-workflow.yml");
    assert!(
        repo_file("docs/src/drift.md").contains(&format!("```yaml\n{example}```")),
        "docs/src/drift.md must quote docs/example-drift-workflow.yml as it is (it is what .ci/run lints)"
    );
    assert!(repo_file(".ci/run").contains("docs/example-drift-workflow.yml"));
    let w: Value = serde_saphyr::from_str(&example).unwrap();
    assert!(w["on"]["schedule"][0]["cron"].is_string());
    assert_eq!(w["permissions"]["issues"], "write");
    let run = w["jobs"]["drift"]["steps"][2]["run"].as_str().unwrap();
    assert!(run.contains("evals drift --sample 10%"), "{run}");
    assert!(
        run.contains("1) evals comment drift.md --issue \"evals drift\" ;;"),
        "{run}"
    );
    assert!(
        run.contains("0) evals comment drift.md --issue \"evals drift\" --close ;;"),
        "{run}"
    );
    assert!(run.contains("*) exit $code ;;"), "{run}");
}

#[test]
fn a_case_without_a_recording_is_could_not_measure_before_any_live_call() {
    let (s, _script, p) = recorded();
    let all = cassettes(&p);
    std::fs::remove_file(cassette_of(&all, "c3")).unwrap();
    let d = p.evals(&["drift"]).env(KEY, KEY_VALUE).code(2);
    d.stderr_has("evals drift: could not measure drift in drifty: 1 case errored");
    d.stderr_has("recorded · local/m1 [max 64] · d · c3:");
    d.stderr_has("record those cases first (`evals record -c CASE`)");
    assert_eq!(s.hits(), 10, "no live call was made");
}

#[test]
fn a_significant_drop_of_the_score_is_drift_whatever_max_changed_allows() {
    let (_s, script, p) = recorded();
    // Six of ten cases now answer wrong: the sign-flip test gives p = 1/64 < 0.05.
    change(&script, &["0", "2", "3", "5", "7", "9"]);
    let d = p
        .evals(&["drift", "--max-changed", "100"])
        .env(KEY, KEY_VALUE)
        .code(1);
    d.stderr_has("local/m1 [max 64] · d: 100.0% → 46.0% over 10 cases, sign-flip p = 0.016: fell significantly");
    d.stderr_has("evals drift: drift in drifty: 6 of 10 answers changed (60%, --max-changed 100%); 1 experiment's score fell significantly");
    // At alpha 0.01 the same drop is not significant, and 60% changed is within 100%.
    p.evals(&["drift", "--max-changed", "100", "--alpha", "0.01"])
        .env(KEY, KEY_VALUE)
        .code(0)
        .stderr_has("no significant drop");
}
