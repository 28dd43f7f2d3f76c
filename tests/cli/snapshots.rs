//! Whole-output snapshots (insta) of every format `evals` prints or writes, taken through the
//! binary: the terminal tables, Markdown, JUnit, diff, HTML and JSON, each command's stdout
//! and stderr apart. A refactor that keeps behaviour keeps these byte for byte.
//!
//! Only what is inherently variable is filtered, each filter as narrow as it can be: run ids
//! (UUIDv7), timestamps, commit hashes (the gate's git repo is made afresh each run),
//! durations of real work, and the CPU count where it shows. Where a filtered value has a
//! fixed width (ids, timestamps, hashes) the placeholder is padded to it, so the tables
//! keep their shape.

use crate::gate::{Gate, case_line};
use crate::harness::Project;

/// A run id (UUIDv7, 36 characters), padded to its width.
const RUN_ID: (&str, &str) = (
    r"\b[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}\b",
    "[run id                            ]",
);

/// An RFC 3339 UTC timestamp to the second, as the history table and the reports print it.
const TIMESTAMP: (&str, &str) = (
    r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z",
    "[timestamp         ]",
);

/// The JSON snapshot `check` and `run` save: a stamp of the second and the run id's tail.
const SAVED: (&str, &str) = (
    r"(evals/results/)\d{8}T\d{6}Z-(\w+)-[0-9a-f]{8}\.json",
    "${1}[stamp]-${2}-[id].json",
);

/// The filters every snapshot here uses.
pub(crate) fn filters() -> Vec<(&'static str, &'static str)> {
    vec![RUN_ID, TIMESTAMP, SAVED]
}

/// The filters for the gate's git repository: a commit hash, full (JSON) or short (tables,
/// Markdown: 7 hex digits after `@ ` or alone in a table cell).
pub(crate) fn git_filters() -> Vec<(&'static str, &'static str)> {
    let mut f = filters();
    f.extend([
        (r#""commit": "[0-9a-f]{40}""#, r#""commit": "[commit]""#),
        (r"@ `[0-9a-f]{7}`", "@ `[commit]`"),
        (r"@ [0-9a-f]{7}\b", "@ [commit]"),
        (r"┆ [0-9a-f]{7} ┆", "┆ [commit ┆"),
        (r"<code>[0-9a-f]{7}</code>", "<code>[commit]</code>"),
        // A case's wall time in JUnit (its experiment's time is the pinned latencies').
        (
            r#"(<testcase name="[^"]*" classname="[^"]*") time="\d+\.\d{3}""#,
            r#"$1 time="[time]""#,
        ),
    ]);
    f
}

/// Sets every recorded call's latency to 100 ms: the replayed latencies, times and p95s
/// are then the same on every machine (a live call's latency never is).
pub(crate) fn pin_latencies(g: &Gate) {
    for file in crate::harness::files_under(&g.path().join("evals/cassettes")) {
        let text = std::fs::read_to_string(&file).unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        for i in v["interactions"].as_array_mut().unwrap() {
            i["latency_ms"] = serde_json::json!(100);
        }
        std::fs::write(&file, serde_json::to_string_pretty(&v).unwrap() + "\n").unwrap();
    }
}

#[test]
fn toy_compare_leaderboard() {
    let d = Project::toy().evals(&["compare", "--no-autosave"]).ok();
    insta::assert_snapshot!(d.stdout);
    insta::with_settings!({filters => filters()}, {
        insta::assert_snapshot!("toy_compare_stderr", d.stderr);
    });
}

#[test]
fn toy_compare_json_snapshot() {
    let d = Project::toy()
        .evals(&["compare", "--format", "json", "--no-autosave"])
        .ok();
    let v: serde_json::Value = serde_json::from_str(&d.stdout).unwrap();
    insta::assert_json_snapshot!(v, {
        ".run.id" => "[run id]",
        ".run.started_at" => "[timestamp]",
        ".run.finished_at" => "[timestamp]",
        ".run.argv" => "[argv]",
        ".run.branch" => "[branch]",
        ".run.commit" => "[commit]",
        ".run.settings.concurrency" => "[cpus]",
        ".experiments[].cases[].duration_s" => "[duration]",
    });
}

/// `run`: every experiment's per-case breakdown, then the leaderboard; and its stderr.
#[test]
fn toy_run_breakdown_and_leaderboard() {
    let d = Project::toy().evals(&["run", "--no-autosave"]).ok();
    insta::assert_snapshot!("toy_run_stdout", d.stdout);
    insta::with_settings!({filters => filters()}, {
        insta::assert_snapshot!("toy_run_stderr", d.stderr);
    });
}

/// The standalone HTML report of a run with no baseline.
#[test]
fn toy_compare_html() {
    let d = Project::toy()
        .evals(&["compare", "--format", "html", "--no-autosave"])
        .ok();
    insta::with_settings!({filters => filters()}, {
        insta::assert_snapshot!("toy_compare_html", d.stdout);
    });
}

#[test]
fn toy_weights() {
    let d = Project::toy().evals(&["weights"]).ok();
    insta::assert_snapshot!("toy_weights_stdout", d.stdout);
    insta::assert_snapshot!("toy_weights_stderr", d.stderr);
}

#[test]
fn toy_cases() {
    let d = Project::toy().evals(&["cases"]).ok();
    insta::assert_snapshot!("toy_cases_stdout", d.stdout);
    insta::assert_snapshot!("toy_cases_stderr", d.stderr);
}

/// The dry run's matrix. `-j 2` because the default concurrency is the CPU count.
#[test]
fn toy_compare_dry_run() {
    let d = Project::toy().evals(&["compare", "-n", "-j", "2"]).ok();
    insta::assert_snapshot!("toy_compare_dry_run_stdout", d.stdout);
    insta::assert_snapshot!("toy_compare_dry_run_stderr", d.stderr);
}

/// The bundled tax-intake suite laid out as in the repository (the suite under
/// `fixtures/`, its cassettes in `cassettes/`); returns the project and the suite's folder.
/// A copy of the bundled tax-intake suite and its cassettes; the suite's folder.
pub(crate) fn tax_intake() -> (Project, std::path::PathBuf) {
    let p = Project::new();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for part in ["fixtures/tax-intake", "cassettes/tax-intake"] {
        crate::harness::copy_tree(
            &root.join(part),
            &p.path().join(part),
            &["evals/results", ".evals"],
        );
    }
    let suite = p.path().join("fixtures/tax-intake");
    (p, suite)
}

/// The bundled tax-intake suite's dry run: four contenders, two efforts of one model, prices
/// unknown.
#[test]
fn tax_intake_compare_dry_run() {
    let (p, suite) = tax_intake();
    let d = p.evals(&["compare", "-n", "-j", "2"]).cwd(suite).ok();
    insta::assert_snapshot!("tax_intake_compare_dry_run_stdout", d.stdout);
    insta::assert_snapshot!("tax_intake_compare_dry_run_stderr", d.stderr);
}

/// The bundled tax-intake suite replayed from its committed cassettes (their latencies are
/// recorded, so the times are too): the weighted leaderboard of four contenders and, on
/// stderr, the demo's next step.
#[test]
fn tax_intake_compare_replayed() {
    let (p, suite) = tax_intake();
    let d = p
        .evals(&["compare", "--no-autosave"])
        .cwd(suite)
        .env("CI", "1")
        .ok();
    insta::assert_snapshot!("tax_intake_compare_stdout", d.stdout);
    insta::with_settings!({filters => filters()}, {
        insta::assert_snapshot!("tax_intake_compare_stderr", d.stderr);
    });
}

/// LLMEvalForge's example: an assertions scorer, the mock provider, a per-case breakdown.
#[test]
fn forge_run() {
    let d = Project::forge().evals(&["run", "--no-autosave"]).output();
    insta::assert_snapshot!("forge_run_stdout", d.stdout);
    insta::with_settings!({filters => filters()}, {
        insta::assert_snapshot!("forge_run_stderr", d.stderr);
    });
}

/// `cassettes status` with one of each: recorded, stale (its input changed), missing (a new
/// case) and unused (a file no case uses).
#[test]
fn cassettes_status_recorded_stale_missing_unused() {
    let g = Gate::new();
    g.evals(&["record"]).ok();
    g.p.write(
        "evals/datasets/d/cases.jsonl",
        &format!(
            "{}{}{}",
            case_line("steady"),
            case_line("slips").replace("Case slips.", "Case slips, reworded."),
            case_line("fresh")
        ),
    );
    std::fs::copy(
        g.path()
            .join("evals/cassettes/local/m1/default/d/steady.json"),
        g.path()
            .join("evals/cassettes/local/m1/default/d/gone.json"),
    )
    .unwrap();
    let d = g.evals(&["cassettes", "status", "--check"]).code(1);
    insta::assert_snapshot!("cassettes_status_stdout", d.stdout);
    insta::assert_snapshot!("cassettes_status_stderr", d.stderr);
}

/// Main's record and check, then a feature branch's record and check: the history of a
/// real gate.
/// Every recorded latency is pinned (`pin_latencies`), so the replays time the same.
fn gate_with_a_regression() -> Gate {
    let g = Gate::new();
    g.evals(&["record"]).ok();
    pin_latencies(&g);
    g.commit("cassettes");
    g.evals(&["check"]).ok();
    g.feature(2);
    pin_latencies(&g);
    g.commit("pinned latencies");
    g
}

/// `history` (table and JSON) after main's record and check and a feature branch's.
#[test]
fn history_table_and_json() {
    let g = gate_with_a_regression();
    g.evals(&["check", "--baseline", "main"]).code(1);
    let table = g.evals(&["history"]).ok();
    let json = g.evals(&["history", "--json"]).ok();
    insta::with_settings!({filters => git_filters()}, {
        insta::assert_snapshot!("history_stdout", table.stdout);
        insta::assert_snapshot!("history_stderr", table.stderr);
        insta::assert_snapshot!("history_json_stdout", json.stdout);
        insta::assert_snapshot!("history_json_stderr", json.stderr);
    });
}

/// `evals report` of the feature branch's check against main's, in each format.
#[test]
fn report_between_two_stored_runs() {
    let g = gate_with_a_regression();
    g.evals(&["check", "--baseline", "main"]).code(1);
    let report = |format: &str| {
        g.evals(&["report", "--baseline", "main", "--format", format])
            .ok()
    };
    let md = report("md");
    let diff = report("diff");
    let html = report("html");
    let junit = report("junit");
    let json = report("json");
    insta::with_settings!({filters => git_filters()}, {
        insta::assert_snapshot!("report_md_stdout", md.stdout);
        insta::assert_snapshot!("report_md_stderr", md.stderr);
        insta::assert_snapshot!("report_diff_stdout", diff.stdout);
        insta::assert_snapshot!("report_diff_stderr", diff.stderr);
        insta::assert_snapshot!("report_html_stdout", html.stdout);
        insta::assert_snapshot!("report_junit_stdout", junit.stdout);
    });
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    insta::assert_json_snapshot!("report_json_stdout", v, {
        ".run.id" => "[run id]",
        ".run.started_at" => "[timestamp]",
        ".run.finished_at" => "[timestamp]",
        ".run.argv" => "[argv]",
        ".run.commit" => "[commit]",
        ".run.settings.concurrency" => "[cpus]",
        ".experiments[].cases[].duration_s" => "[duration]",
        ".comparison.baseline.id" => "[run id]",
        ".comparison.baseline.commit" => "[commit]",
        ".comparison.baseline.started_at" => "[timestamp]",
    });
}

/// `evals report` of a branch that improved on main: a case answered better, a new case,
/// and one unchanged, in Markdown and JUnit (the sections a regression never shows).
#[test]
fn report_of_an_improved_branch_with_a_new_case() {
    use crate::mock::{chat, post};
    use wiremock::matchers::body_string_contains;

    let g = Gate::new();
    g.answers(1); // main gets one field of `slips` wrong, still above its threshold
    g.evals(&["record"]).ok();
    pin_latencies(&g);
    g.commit("cassettes");
    g.evals(&["check"]).ok();

    g.git(&["checkout", "-q", "-b", "feature"]);
    g.answers(0);
    g.server.mount(
        post("/v1/chat/completions")
            .and(body_string_contains("Case fresh."))
            .respond_with(chat(
                &serde_json::json!({"a": "alpha", "b": "bravo", "c": "charlie", "d": "delta", "e": "zulu"})
                    .to_string(),
                serde_json::json!({"prompt_tokens": 12, "completion_tokens": 20}),
            )),
    );
    g.p.write(
        "evals/datasets/d/cases.jsonl",
        &format!(
            "{}{}{}",
            case_line("steady"),
            case_line("slips"),
            case_line("fresh")
        ),
    );
    g.evals(&["record"]).ok();
    pin_latencies(&g);
    g.commit("better answers, a new case");
    g.evals(&["check", "--baseline", "main"]).ok();

    let md = g
        .evals(&["report", "--baseline", "main", "--format", "md"])
        .ok();
    let junit = g
        .evals(&["report", "--baseline", "main", "--format", "junit"])
        .ok();
    insta::with_settings!({filters => git_filters()}, {
        insta::assert_snapshot!("report_improved_md_stdout", md.stdout);
        insta::assert_snapshot!("report_improved_md_stderr", md.stderr);
        insta::assert_snapshot!("report_improved_junit_stdout", junit.stdout);
    });
}
