//! `evals check`, the CI gate, end to end: real `evals` processes, a real SQLite history
//! and a real git repo in a temp dir, the model a wiremock server behind a custom
//! `base_url:` provider. A run on `main` is the baseline; a `feature` branch re-records
//! worse answers (or breaks its cassettes, or its suite) and `check` must say so, in its
//! exit code and in the Markdown and JUnit reports.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use wiremock::matchers::body_string_contains;

use crate::harness::{Bounded, Project, Run};
use crate::mock::{Server, chat, post};

/// The one contender, as every report labels it.
pub(crate) const CONTENDER: &str = "local/m1";

/// The fields every case expects: five, so one wrong field costs 18 points.
const FIELDS: [(&str, &str); 5] = [
    ("a", "alpha"),
    ("b", "bravo"),
    ("c", "charlie"),
    ("d", "delta"),
    ("e", "echo"),
];

/// The model's reply with the first `wrong` fields answered wrong (each worth 0.1).
fn reply(wrong: usize) -> String {
    let fields: serde_json::Map<String, Value> = FIELDS
        .iter()
        .enumerate()
        .map(|(i, (k, v))| {
            let v = if i < wrong { "zulu" } else { v };
            (k.to_string(), json!(v))
        })
        .collect();
    Value::Object(fields).to_string()
}

pub(crate) fn config(uri: &str, version: u32, user: &str) -> String {
    let schema: String = FIELDS
        .iter()
        .map(|(k, _)| format!("    {k}: string\n"))
        .collect();
    format!(
        "suite: gate\nversion: {version}\nrequest_types: [prompt]\nadapter:\n  kind: prompt\n  system: \"Answer in JSON.\"\n  user: \"{user}\"\n  json: true\nscorer:\n  kind: fields\n  schema:\n{schema}minimum_scores: {{ field_accuracy: 0.8 }}\nlocal:\n  base_url: {uri}/v1\n  models: [m1]\n"
    )
}

pub(crate) fn case_line(id: &str) -> String {
    let expected: serde_json::Map<String, Value> = FIELDS
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    format!(
        "{}\n",
        json!({"id": id, "input": format!("Case {id}."), "expected": expected})
    )
}

/// A suite in a git repo on `main`: cases `steady` (always answered right) and `slips`
/// (answered with `slips` fields wrong), the model behind a wiremock server.
pub(crate) struct Gate {
    pub(crate) server: Server,
    pub(crate) p: Project,
}

impl Gate {
    pub(crate) fn new() -> Gate {
        let server = Server::start();
        let p = Project::new()
            .file(
                "evals/.llm-evals.config.yml",
                &config(&server.uri(), 1, "{{ input }}"),
            )
            .file(
                "evals/datasets/d/cases.jsonl",
                &format!("{}{}", case_line("steady"), case_line("slips")),
            )
            .file(".gitignore", ".evals/\nevals/results/\n");
        let g = Gate { server, p };
        g.git(&["init", "-q"]);
        g.git(&["checkout", "-q", "-b", "main"]);
        g.commit("suite");
        g.answers(0);
        g
    }

    pub(crate) fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args([
                "-c",
                "commit.gpgsign=false",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(self.p.path())
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .output_bounded()
            .expect("run git (is it installed?)");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    pub(crate) fn commit(&self, msg: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", msg]);
    }

    pub(crate) fn head(&self) -> String {
        self.git(&["rev-parse", "HEAD"])
    }

    /// From now on the model answers `steady` right and `slips` with `wrong` fields wrong.
    pub(crate) fn answers(&self, wrong: usize) {
        self.server.reset();
        for (needle, content) in [("Case steady.", reply(0)), ("Case slips.", reply(wrong))] {
            self.server.mount(
                post("/v1/chat/completions")
                    .and(body_string_contains(needle))
                    .respond_with(chat(
                        &content,
                        json!({"prompt_tokens": 12, "completion_tokens": 20}),
                    )),
            );
        }
    }

    pub(crate) fn evals(&self, args: &[&str]) -> Run {
        self.p.evals(args)
    }

    pub(crate) fn path(&self) -> &Path {
        self.p.path()
    }

    pub(crate) fn read(&self, rel: &str) -> String {
        self.p.read(rel)
    }

    /// `main`'s history: `record` (live, cassettes written), then `check` (replayed).
    pub(crate) fn on_main(&self) {
        self.evals(&["record"]).ok();
        self.commit("cassettes");
        self.evals(&["check"])
            .ok()
            .stderr_has("evals check passed in gate (main, no baseline)");
    }

    /// Branches `feature` off `main`, the model now getting `wrong` fields of `slips`
    /// wrong, and re-records its cassettes.
    pub(crate) fn feature(&self, wrong: usize) {
        self.git(&["checkout", "-q", "-b", "feature"]);
        self.answers(wrong);
        self.evals(&["record"]).ok();
        self.commit("worse answers");
    }

    /// `evals history --json`, filtered by `args`.
    pub(crate) fn history(&self, args: &[&str]) -> Vec<Value> {
        let mut argv = vec!["history", "--json"];
        argv.extend(args);
        let d = self.evals(&argv).ok();
        serde_json::from_str::<Value>(&d.stdout)
            .unwrap_or_else(|e| panic!("history --json: {e}\n{}", d.stdout))
            .as_array()
            .expect("an array of runs")
            .clone()
    }

    /// The id of the latest run on `main` (`check`'s baseline).
    pub(crate) fn latest_main_id(&self) -> String {
        self.history(&["--branch", "main"])[0]["id"]
            .as_str()
            .unwrap()
            .to_string()
    }
}

/// `check --baseline main`, writing the Markdown and JUnit reports.
pub(crate) const CHECK: &[&str] = &[
    "check",
    "--baseline",
    "main",
    "--markdown",
    "pr.md",
    "--junit",
    "junit.xml",
];

fn check(g: &Gate, tolerance: &str) -> Run {
    let mut argv = CHECK.to_vec();
    argv.extend(["--tolerance", tolerance]);
    g.evals(&argv)
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

fn has(text: &str, what: &str, needle: &str) {
    assert!(
        text.contains(needle),
        "{what} lacks {needle:?}\n--- {what}\n{text}"
    );
}

#[test]
fn worse_answers_on_a_branch_fail_the_check_and_the_reports_name_case_and_contender() {
    let g = Gate::new();
    g.on_main();
    g.feature(1); // slips: 100% → 82%, still above its 80% threshold; the mean falls 9 points
    let d = check(&g, "0.02").code(1);
    d.stderr_has("error: evals check: 1 regression in gate (main → feature)")
        .stderr_has(&format!(
            "{CONTENDER} · d: mean score fell 9.0 points (100.0% → 91.0%), more than the 2.0-point tolerance"
        ));

    let md = g.read("pr.md");
    assert_eq!(
        first_line(&md),
        "**evals check: 1 regression** in gate (main → feature)"
    );
    has(
        &md,
        "pr.md",
        &format!("| {CONTENDER} | d | 100.0% | 91.0% | -9.0 | 0 | 0 | **regressed** |"),
    );
    has(
        &md,
        "pr.md",
        &format!(
            "| {CONTENDER} | d | `slips` | declined | 100.0% → 82.0% | -18.0 | `a`: want \"alpha\" got \"zulu\""
        ),
    );

    let junit = g.read("junit.xml");
    has(
        &junit,
        "junit.xml",
        &format!("<testsuite name=\"{CONTENDER} · d\""),
    );
    has(
        &junit,
        "junit.xml",
        &format!("<testcase name=\"slips\" classname=\"{CONTENDER} · d\""),
    );
    has(
        &junit,
        "junit.xml",
        "message=\"mean score 100.0% → 91.0% (-9.0 points) (tolerance 2.0 points)\"",
    );
}

#[test]
fn a_drop_inside_the_tolerance_passes_when_no_case_crosses_its_threshold() {
    let g = Gate::new();
    g.on_main();
    g.feature(1);
    let d = check(&g, "0.9").ok();
    d.stderr_has("evals check passed in gate (main → feature)");
    let md = g.read("pr.md");
    assert_eq!(
        first_line(&md),
        "**evals check passed** in gate (main → feature)"
    );
    // The decline is still reported, just not gated.
    has(
        &md,
        "pr.md",
        &format!("| {CONTENDER} | d | 100.0% | 91.0% | -9.0 | 0 | 0 |  |"),
    );
    has(&md, "pr.md", "| `slips` | declined | 100.0% → 82.0% |");
    let junit = g.read("junit.xml");
    has(&junit, "junit.xml", "failures=\"0\" errors=\"0\"");
}

#[test]
fn a_case_below_its_minimum_scores_fails_even_inside_the_tolerance() {
    let g = Gate::new();
    g.on_main();
    g.feature(2); // slips: 100% → 64%, under its 80% threshold
    let d = check(&g, "0.9").code(1);
    d.stderr_has(&format!(
        "{CONTENDER} · d · slips: met its thresholds on main, now fails (field_accuracy"
    ));
    let md = g.read("pr.md");
    assert_eq!(
        first_line(&md),
        "**evals check: 1 regression** in gate (main → feature)"
    );
    has(
        &md,
        "pr.md",
        &format!("| {CONTENDER} | d | `slips` | regressed | 100.0% → 64.0% | -36.0 |"),
    );
    has(
        &md,
        "pr.md",
        "<details><summary>local/m1 · d · <code>slips</code>: output diff</summary>",
    );
    let junit = g.read("junit.xml");
    has(
        &junit,
        "junit.xml",
        "regressed: met its thresholds in the baseline, now fails (field_accuracy",
    );
}

#[test]
fn an_unknown_baseline_branch_exits_2_unless_missing_baseline_pass() {
    let g = Gate::new();
    g.on_main();
    g.feature(1);
    let d = g
        .evals(&["check", "--baseline", "nope", "--markdown", "pr.md"])
        .code(2);
    d.stderr_has("no completed run of suite gate on branch nope in ")
        .stderr_has("run `evals check` on nope first (or pass --missing-baseline pass)");
    // The reports are still written, without a comparison.
    has(
        &g.read("pr.md"),
        "pr.md",
        "no baseline: gated on thresholds and errors alone.",
    );

    let d = g
        .evals(&["check", "--baseline", "nope", "--missing-baseline", "pass"])
        .ok();
    d.stderr_has("no completed run of suite gate on branch nope")
        .stderr_has("(--missing-baseline pass: gating on thresholds and errors alone)")
        .stderr_has("evals check passed in gate (feature, no baseline)");
}

#[test]
fn a_baseline_with_another_suite_fingerprint_is_refused_with_the_reason() {
    let g = Gate::new();
    g.on_main();
    let main_run = g.latest_main_id();
    g.git(&["checkout", "-q", "-b", "feature"]);
    g.p.write(
        "evals/.llm-evals.config.yml",
        &config(&g.server.uri(), 2, "{{ input }}"),
    );
    g.commit("scoring v2");
    let d = g.evals(&["check", "--baseline", "main"]).code(2);
    d.stderr_has(&format!(
        "baseline run {main_run} on main has suite fingerprint "
    ))
    .stderr_has("(the scorer, schema, thresholds or version changed), and no earlier run on main matches: re-run on main, or pass --missing-baseline pass");
    // The same refusal when the run is named by id.
    g.evals(&["check", "--baseline", &main_run])
        .code(2)
        .stderr_has(&format!(
            "baseline run {main_run} ({main_run}) has suite fingerprint"
        ));
}

#[test]
fn a_run_id_and_an_exported_snapshot_both_serve_as_baselines() {
    let g = Gate::new();
    g.on_main();
    let main_run = g.latest_main_id();
    let main_commit = g.head();
    g.evals(&["export", &main_run, "-o", "run.json"]).ok();
    let exported: Value = serde_json::from_str(&g.read("run.json")).unwrap();
    assert_eq!(exported["run"]["id"], json!(main_run));
    g.feature(1);

    for reference in [main_run.as_str(), "run.json"] {
        let d = g
            .evals(&["check", "--baseline", reference, "--markdown", "pr.md"])
            .code(1);
        d.stderr_has("error: evals check: 1 regression in gate (main → feature)")
            .stderr_has("mean score fell 9.0 points");
        has(
            &g.read("pr.md"),
            "pr.md",
            &format!(
                "against baseline `{main_run}` on `main` @ `{}`",
                &main_commit[..7]
            ),
        );
        g.evals(&["check", "--baseline", reference, "--tolerance", "0.9"])
            .ok();
    }
    // The exported file needs no database: it works with the history moved away.
    std::fs::rename(g.path().join(".evals"), g.path().join("moved")).unwrap();
    g.evals(&["check", "--baseline", "run.json", "--tolerance", "0.9"])
        .ok();
}

#[test]
fn two_concurrent_checks_on_one_history_both_land_their_runs() {
    let g = Gate::new();
    g.evals(&["record"]).ok();
    // A history neither process has created yet: both race to create, migrate and insert.
    let both = ["one", "two"].map(|b| {
        g.evals(&["check", "--history", "shared.sqlite3", "--branch", b])
            .spawn()
    });
    for done in both.map(|r| r.wait()) {
        assert_eq!(done.code, 0, "{}", done.stderr);
        done.stderr_lacks("could not store the run");
    }
    // And the usual case: an existing history, both checks against main.
    g.commit("cassettes");
    g.evals(&["check"]).ok();
    let both = ["one", "two"].map(|b| {
        g.evals(&["check", "--baseline", "main", "--branch", b])
            .spawn()
    });
    for done in both.map(|r| r.wait()) {
        assert_eq!(done.code, 0, "{}", done.stderr);
        done.stderr_lacks("could not store the run");
    }
    let mut branches: Vec<String> = g
        .history(&["--limit", "2"])
        .iter()
        .map(|r| r["branch"].as_str().unwrap().to_string())
        .collect();
    branches.sort();
    assert_eq!(branches, ["one", "two"]);

    let runs = g.history(&["--history", "shared.sqlite3"]);
    let mut branches: Vec<&str> = runs.iter().map(|r| r["branch"].as_str().unwrap()).collect();
    branches.sort();
    assert_eq!(branches, ["one", "two"], "{runs:#?}");
    assert!(
        runs.iter()
            .all(|r| r["command"] == "check" && r["status"] == "completed")
    );
}

/// Checks `file` against the element rules of the JUnit XML schema with Python's
/// `xml.etree`, and returns `suite|case|outcome` for every test case.
fn junit_consumer(file: &Path) -> Vec<String> {
    const SCRIPT: &str = r#"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "testsuites", f"root is <{root.tag}>, not <testsuites>"
totals = {"tests": 0, "failures": 0, "errors": 0}
for child in root:
    assert child.tag == "testsuite", f"<testsuites> holds <{child.tag}>"
    for attr in ("name", "tests", "failures", "errors"):
        assert attr in child.attrib, f"<testsuite> lacks {attr}: {child.attrib}"
    cases = list(child)
    assert all(c.tag in ("testcase", "properties", "system-out", "system-err") for c in cases), [c.tag for c in cases]
    cases = [c for c in cases if c.tag == "testcase"]
    counts = {"tests": len(cases), "failures": 0, "errors": 0}
    for c in cases:
        assert c.get("name") and c.get("classname"), f"<testcase> lacks name or classname: {c.attrib}"
        outcome = "passed"
        for r in c:
            assert r.tag in ("failure", "error", "skipped", "system-out", "system-err"), r.tag
            if r.tag in ("failure", "error"):
                assert r.get("message"), f"<{r.tag}> of {c.get('name')} lacks a message"
                counts[r.tag + "s"] += 1
                outcome = r.tag
        print(f"{child.get('name')}|{c.get('name')}|{outcome}")
    for k, v in counts.items():
        assert int(child.get(k)) == v, f"{child.get('name')}: {k}={child.get(k)}, but {v} test cases"
        totals[k] += v
for k, v in totals.items():
    if k in root.attrib:
        assert int(root.get(k)) == v, f"<testsuites> {k}={root.get(k)}, but {v}"
"#;
    let out = match Command::new("python3")
        .args(["-c", SCRIPT])
        .arg(file)
        .output_bounded()
    {
        Ok(o) => o,
        Err(e) => panic!(
            "python3 is needed to read the JUnit report as a JUnit consumer would ({e}); install python3 (it is on the CI machine)"
        ),
    };
    assert!(
        out.status.success(),
        "the JUnit report breaks the schema's rules:\n{}\n--- junit\n{}",
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(file).unwrap_or_default()
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn junit_parses_under_the_schema_rules_with_failures_and_errors() {
    let g = Gate::new();
    g.on_main();
    g.feature(2); // slips falls under its threshold: a failure
    // A new case with no recording: a cassette miss in replay, an error.
    g.p.write(
        "evals/datasets/d/cases.jsonl",
        &format!(
            "{}{}{}",
            case_line("steady"),
            case_line("slips"),
            case_line("fresh")
        ),
    );
    g.commit("a case without a cassette");
    check(&g, "0.02").code(1);
    let suite = format!("{CONTENDER} · d");
    assert_eq!(
        junit_consumer(&g.path().join("junit.xml")),
        [
            format!("{suite}|fresh|error"),
            format!("{suite}|slips|failure"),
            format!("{suite}|steady|passed"),
            format!("{suite}|mean score|failure"),
        ]
    );
    // And a passing report parses too.
    g.git(&["checkout", "-q", "main"]);
    g.evals(&["check", "--junit", "ok.xml"]).ok();
    assert_eq!(
        junit_consumer(&g.path().join("ok.xml")),
        [
            format!("{suite}|slips|passed"),
            format!("{suite}|steady|passed")
        ]
    );
}

#[test]
fn a_case_that_now_errors_on_a_cassette_miss_regresses() {
    let g = Gate::new();
    g.on_main();
    g.git(&["checkout", "-q", "-b", "feature"]);
    // A new prompt template, not re-recorded: every request misses in replay.
    g.p.write(
        "evals/.llm-evals.config.yml",
        &config(&g.server.uri(), 1, "Question: {{ input }}"),
    );
    g.commit("new prompt");
    let d = check(&g, "0.9").code(1);
    // One cause (the template gained `Question: `), said once, whatever each case's input.
    d.stderr_has(&format!(
        "  2 missed request(s), the same change: {CONTENDER} (2 cases)\n  cases: d/slips, d/steady\n"
    ));
    d.stderr_has("record again: `evals record -m local/m1`");
    let md = g.read("pr.md");
    assert_eq!(
        first_line(&md),
        "**evals check: 2 errors** in gate (main → feature)"
    );
    has(&md, "pr.md", "### Cassette misses (2 requests, 1 cause)");
    has(&md, "pr.md", "+Question: Case slips.");
    has(&md, "pr.md", "Record again: `evals record -m local/m1`");
    has(
        &md,
        "pr.md",
        &format!("| {CONTENDER} | d | – | – | – | 2 | 0 |  |"),
    );
}

#[test]
fn the_markdown_is_appended_to_github_step_summary() {
    let g = Gate::new();
    g.on_main();
    g.feature(1);
    g.p.write("summary.md", "# An earlier step\n");
    let summary = g.path().join("summary.md");
    check(&g, "0.02")
        .env("GITHUB_STEP_SUMMARY", summary.to_str().unwrap())
        .code(1);
    let md = g.read("pr.md");
    assert_eq!(g.read("summary.md"), format!("# An earlier step\n{md}\n"));
}

#[test]
fn history_lists_runs_with_branch_and_commit() {
    let g = Gate::new();
    g.evals(&["record"]).ok();
    let main_commit = g.head();
    g.evals(&["check"]).ok();
    g.feature(1);
    let feature_commit = g.head();
    g.evals(&["check", "--baseline", "main", "--tolerance", "0.9"])
        .ok();

    let runs = g.history(&[]);
    let rows: Vec<(&str, &str, &str, &str)> = runs
        .iter()
        .map(|r| {
            (
                r["command"].as_str().unwrap(),
                r["mode"].as_str().unwrap(),
                r["branch"].as_str().unwrap(),
                r["commit"].as_str().unwrap(),
            )
        })
        .collect();
    // Newest first. `feature`'s record ran before its commit, on main's commit.
    assert_eq!(
        rows,
        [
            ("check", "replay", "feature", feature_commit.as_str()),
            ("record", "record", "feature", main_commit.as_str()),
            ("check", "replay", "main", main_commit.as_str()),
            ("record", "record", "main", main_commit.as_str()),
        ]
    );
    assert!(runs.iter().all(|r| r["suite"] == "gate" && r["cases"] == 2));
    let score = runs[0]["score"].as_f64().unwrap();
    assert!((score - 0.91).abs() < 1e-9, "{score}");

    let main_only = g.history(&["--branch", "main"]);
    assert_eq!(main_only.len(), 2);
    assert!(main_only.iter().all(|r| r["branch"] == "main"));

    let d = g.evals(&["history"]).ok();
    let id = runs[0]["id"].as_str().unwrap();
    assert_eq!(d.cell(id, "branch"), "feature");
    assert_eq!(d.cell(id, "commit"), &feature_commit[..7]);
    assert_eq!(d.cell(id, "score"), "91.0%");
    assert_eq!(d.cell(runs[3]["id"].as_str().unwrap(), "branch"), "main");
}

#[test]
fn a_baseline_never_comes_from_a_later_run_of_the_same_second() {
    let g = Gate::new();
    g.evals(&["record"]).ok();
    g.evals(&["check"]).ok();
    g.evals(&["check"]).ok();
    let runs = g.history(&["--branch", "main"]);
    let [later, checked, earlier] = [0, 1, 2].map(|i| runs[i]["id"].as_str().unwrap().to_string());
    g.evals(&[
        "report",
        &checked,
        "--baseline",
        "main",
        "--format",
        "json",
        "-o",
        "r.json",
    ])
    .ok();
    let r: Value = serde_json::from_str(&g.read("r.json")).unwrap();
    assert_eq!(
        r["comparison"]["baseline"]["id"],
        json!(earlier),
        "not the later run {later}: {runs:#?}"
    );
}

/// A real check on a regressed branch, whole: its stdout and stderr and the Markdown, JUnit
/// and diff files it writes, with run ids, commits and times redacted (the feature's
/// recorded latencies pinned, so the leaderboard's times are the same on every run).
#[test]
fn check_markdown_and_junit_snapshots() {
    let g = Gate::new();
    g.on_main();
    g.feature(2);
    crate::snapshots::pin_latencies(&g);
    g.p.write(
        "evals/datasets/d/cases.jsonl",
        &format!(
            "{}{}{}",
            case_line("steady"),
            case_line("slips"),
            case_line("fresh")
        ),
    );
    g.commit("a case without a cassette");
    let d = check(&g, "0.02").arg("--diff").arg("pr.diff").code(1);
    insta::with_settings!({filters => vec![
        (r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "[run id]"),
        (r"@ `[0-9a-f]{7}`", "@ `[commit]`"),
        (r#"time="[0-9.]+""#, r#"time="[time]""#),
    ]}, {
        insta::assert_snapshot!("check_markdown", g.read("pr.md"));
        insta::assert_snapshot!("check_junit", g.read("junit.xml"));
    });
    insta::with_settings!({filters => crate::snapshots::git_filters()}, {
        insta::assert_snapshot!("check_stdout", d.stdout);
        insta::assert_snapshot!("check_stderr", d.stderr);
        insta::assert_snapshot!("check_diff", g.read("pr.diff"));
    });
}

#[test]
fn a_narrowed_run_on_main_is_no_baseline_for_a_full_check() {
    // Runs on main: a full check, then someone's quick `run -m fake/echo -c clear`.
    let p = Project::toy();
    p.evals(&["check", "--branch", "main", "--no-autosave"])
        .ok();
    p.evals(&[
        "run",
        "--branch",
        "main",
        "--no-autosave",
        "-m",
        "fake/echo",
        "-c",
        "clear",
    ])
    .ok();
    let runs: serde_json::Value =
        serde_json::from_str(&p.evals(&["history", "--json"]).ok().stdout).unwrap();
    let full_check = runs[1]["id"].as_str().unwrap().to_string();
    // The full check on a branch compares with the full check, not the newer narrowed run.
    p.evals(&[
        "check",
        "--branch",
        "feature",
        "--baseline",
        "main",
        "--no-autosave",
        "--json",
        "c.json",
    ])
    .ok();
    let c: serde_json::Value = serde_json::from_str(&p.read("c.json")).unwrap();
    assert_eq!(c["comparison"]["baseline"]["id"], full_check.as_str());
    assert_eq!(c["comparison"]["unchanged"], 16);
    // A narrowed check finds no baseline that selected the same, and says so.
    p.evals(&[
        "check",
        "--branch",
        "feature",
        "--baseline",
        "main",
        "--no-autosave",
        "-d",
        "colors",
    ])
    .code(2)
    .stderr_has("no run on main selected what this run selects (-d colors); the newest,");
}

/// No history: what a fresh CI runner sees (`record` stored its own run on main).
fn forget_history(g: &Gate) {
    std::fs::remove_dir_all(g.path().join(".evals")).expect("remove .evals");
}

#[test]
fn the_first_check_on_main_with_no_history_passes_as_the_first_baseline() {
    let g = Gate::new();
    g.evals(&["record"]).ok();
    g.commit("cassettes");
    forget_history(&g);
    let d = check(&g, "0.02").ok();
    d.stderr_has("no earlier run of main: this run is the first baseline")
        .stderr_has("evals check passed in gate (main, first baseline)")
        .stderr_lacks("no baseline")
        .stderr_lacks("--missing-baseline");
    // The Markdown says so on its first line and where it names the baseline.
    let md = g.read("pr.md");
    assert_eq!(
        md.lines().next(),
        Some("**evals check passed** in gate (main, first baseline)"),
        "{md}"
    );
    has(
        &md,
        "pr.md",
        ", the first baseline: nothing earlier to compare with, so gated on thresholds and errors alone; later checks against this branch compare with it.",
    );
    assert!(!md.contains("no baseline"), "{md}");
    // The next check on main compares with it.
    check(&g, "0.02")
        .ok()
        .stderr_lacks("first baseline")
        .stderr_has("evals check passed in gate (main → main)");
}

#[test]
fn the_first_check_on_main_still_gates_on_thresholds() {
    let g = Gate::new();
    g.answers(2); // slips: 64%, under its 80% threshold
    g.evals(&["record"]).output(); // thresholds fail here too; the cassettes are written
    g.commit("cassettes");
    forget_history(&g);
    check(&g, "0.02")
        .code(1)
        .stderr_has("no earlier run of main: this run is the first baseline")
        .stderr_has("field_accuracy");
}

#[test]
fn the_branch_comes_from_github_ref_name_and_branch_for_the_first_baseline() {
    let g = Gate::new();
    g.evals(&["record"]).ok();
    g.commit("cassettes");
    forget_history(&g);
    g.git(&["checkout", "-q", "-b", "feature"]);
    // Off main with no history: still exit 2.
    check(&g, "0.02")
        .code(2)
        .stderr_has("no completed run of suite gate on branch main");
    // A push to main in Actions (checked out detached or not): GITHUB_REF_NAME says main.
    check(&g, "0.02")
        .env("GITHUB_REF_NAME", "main")
        .ok()
        .stderr_has("no earlier run of main: this run is the first baseline");
    // A pull request's branch (GITHUB_HEAD_REF) beats GITHUB_REF_NAME (`7/merge`).
    check(&g, "0.02")
        .env("GITHUB_HEAD_REF", "feature")
        .env("GITHUB_REF_NAME", "7/merge")
        .ok()
        .stderr_has("evals check passed in gate (main → feature)");
}

#[test]
fn a_fingerprint_change_reaching_main_makes_its_first_run_the_new_baseline() {
    let g = Gate::new();
    g.on_main();
    g.p.write(
        "evals/.llm-evals.config.yml",
        &config(&g.server.uri(), 2, "{{ input }}"),
    );
    g.commit("scoring v2");
    check(&g, "0.02")
        .ok()
        .stderr_has("no earlier run of main has this suite fingerprint (the scorer, schema, thresholds or version changed): this run is the first baseline");
}

#[test]
fn main_runs_dated_after_this_one_were_taken_for_no_runs_at_all() {
    let p = Project::toy();
    for _ in 0..2 {
        p.evals(&["check", "--branch", "main", "--baseline", "main"])
            .ok();
    }
    // The machine that ran them had its clock 3 h 12 min ahead.
    let ahead = chrono::Utc::now() + chrono::Duration::seconds(3 * 3600 + 12 * 60 + 30);
    let history = rusqlite::Connection::open(p.path().join(".evals/history.sqlite3")).unwrap();
    history
        .execute(
            "UPDATE runs SET started_at = ?1",
            [ahead.format("%Y-%m-%dT%H:%M:%SZ").to_string()],
        )
        .unwrap();
    drop(history);
    let said = "but 2 completed runs there are dated after it and after this machine's clock, the newest by 3 h 12 min: a clock is wrong (the machine that ran them, or this one); fix it and run again, or compare with one of them by number (`evals history`, then --baseline N), or pass --missing-baseline pass\n";
    let pr = p
        .evals(&["check", "--branch", "feature", "--baseline", "main"])
        .code(2);
    pr.stderr_has("error: no run of suite toy on branch main in ")
        .stderr_has("/.evals/history.sqlite3 started before this run (")
        .stderr_has(said)
        .stderr_lacks("first");
    // Warned about, and gated without a baseline, when the user says so.
    p.evals(&[
        "check",
        "--branch",
        "feature",
        "--baseline",
        "main",
        "--missing-baseline",
        "pass",
    ])
    .ok()
    .stderr_has(said);
    // On main itself this run is not main's first baseline: main has runs.
    p.evals(&["check", "--branch", "main", "--baseline", "main"])
        .code(2)
        .stderr_has(said)
        .stderr_lacks("first baseline");
}
