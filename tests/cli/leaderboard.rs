//! The leaderboard's verdicts: the best value and the best weighted score against the
//! table's real top (an experiment with errors included), and the overall standings of a
//! suite with one dataset. Two models behind a wiremock server, `m1` answering right but
//! failing one call (an error: no score, out of the mean), `m2` answering every case.

use serde_json::json;
use wiremock::ResponseTemplate;
use wiremock::matchers::{body_partial_json, body_string_contains};

use crate::harness::{Project, STORED, TOY_FOUND, TOY_REFUSED};
use crate::mock::{Server, chat, post};

const FIELDS: [(&str, &str); 5] = [
    ("a", "alpha"),
    ("b", "bravo"),
    ("c", "charlie"),
    ("d", "delta"),
    ("e", "echo"),
];

/// The reply with the first `wrong` fields answered wrong.
fn reply(wrong: usize) -> String {
    let fields: serde_json::Map<String, serde_json::Value> = FIELDS
        .iter()
        .enumerate()
        .map(|(i, (k, v))| (k.to_string(), json!(if i < wrong { "zulu" } else { v })))
        .collect();
    serde_json::Value::Object(fields).to_string()
}

/// The model's chat completions: `model` answers `reply` to the case whose input holds
/// `case` (every case when `None`; a named case wins).
fn answer(s: &Server, model: &str, case: Option<&str>, response: ResponseTemplate) {
    let mock = post("/v1/chat/completions").and(body_partial_json(json!({ "model": model })));
    match case {
        Some(c) => s.mount(
            mock.and(body_string_contains(format!("Case {c}.")))
                .respond_with(response)
                .with_priority(1),
        ),
        None => s.mount(mock.respond_with(response)),
    }
}

fn right(wrong: usize) -> ResponseTemplate {
    chat(
        &reply(wrong),
        json!({"prompt_tokens": 10, "completion_tokens": 10}),
    )
}

/// A 400: a call the provider rejects is an error of the case, never a score.
fn rejected() -> ResponseTemplate {
    ResponseTemplate::new(400).set_body_json(json!({"error": {"message": "context too long"}}))
}

/// A suite `best` of the JSONL cases `ids` in one dataset `d`, models `local/m1` and
/// `local/m2` at `uri`, `extra` appended to the config.
fn project(uri: &str, ids: &[&str], extra: &str) -> Project {
    let schema: String = FIELDS
        .iter()
        .map(|(k, _)| format!("    {k}: string\n"))
        .collect();
    let expected: serde_json::Map<String, serde_json::Value> = FIELDS
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    let cases: String = ids
        .iter()
        .map(|id| {
            format!(
                "{}\n",
                json!({"id": id, "input": format!("Case {id}."), "expected": expected})
            )
        })
        .collect();
    Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "suite: best\nrequest_types: [prompt]\nadapter: {{ kind: prompt, user: \"{{{{ input }}}}\", json: true }}\nscorer:\n  kind: fields\n  schema:\n{schema}local:\n  base_url: {uri}/v1\n  models: [m1, m2]\n{extra}"
            ),
        )
        .file("evals/datasets/d/cases.jsonl", &cases)
}

const M1: &str = "local/m1";
const M2: &str = "local/m2";

#[test]
fn best_value_says_when_the_top_had_errors_instead_of_naming_a_far_worse_model() {
    // m1 answers right but fails one call; m2 answers both, four fields of five wrong.
    let s = Server::start();
    answer(&s, "m1", None, right(0));
    answer(&s, "m1", Some("two"), rejected());
    answer(&s, "m2", None, right(4));
    let p = project(
        &s.uri(),
        &["one", "two"],
        "weighted_score: { weights: { score: 1 } }\n",
    );
    let d = p
        .evals(&["compare", "--cassettes", "live", "--no-autosave"])
        .exact()
        .code(1)
        .redact_run_ids();
    d.stderr_is(&format!(
        "suite: best (evals/.llm-evals.config.yml)\n4 live calls; nothing recorded (--cassettes live)\n{STORED}warning: 1 case errored (no score; see the errors column)\n  local/m1 · d · two: local/m1: HTTP 400: context too long\n"
    ));
    assert_eq!(d.cell("local/m1", "field_accuracy"), "100.0%");
    assert_eq!(d.cell("local/m1", "errors"), "1");
    assert_eq!(d.cell("local/m2", "field_accuracy"), "28.0%");
    d.stdout_has(&format!(
        "best value: none within two points of the top: the top, {M1} at 100.0%, had 1 error; best error-free: {M2} — 28.0% at -\n"
    ));
    d.stdout_has(&format!(
        "best weighted: {M2} — wscore 28.0%; the top, {M1} at wscore 100.0%, had 1 error\n"
    ));

    // The HTML report says the same, from the same run.
    p.evals(&[
        "compare",
        "--cassettes",
        "live",
        "--no-autosave",
        "--format",
        "html",
        "-o",
        "r.html",
    ])
    .code(1);
    let html = p.read("r.html");
    for needle in [
        "best value: none within two points of the top: the top, local&#x2f;m1 at 100.0%, had 1 error; best error-free: local&#x2f;m2 — 28.0% at -",
        "best weighted: local&#x2f;m2 — wscore 28.0%; the top, local&#x2f;m1 at wscore 100.0%, had 1 error",
    ] {
        assert!(html.contains(needle), "r.html lacks {needle:?}\n{html}");
    }
}

#[test]
fn best_value_within_two_points_of_a_top_with_errors_names_the_top_too() {
    // m1 answers right but fails one call of ten; m2 answers all ten, one field wrong once:
    // 98.2%, within two points of m1's 100%.
    let ids = [
        "c01", "c02", "c03", "c04", "c05", "c06", "c07", "c08", "c09", "c10",
    ];
    let s = Server::start();
    answer(&s, "m1", None, right(0));
    answer(&s, "m1", Some("c02"), rejected());
    answer(&s, "m2", None, right(0));
    answer(&s, "m2", Some("c02"), right(1));
    let p = project(&s.uri(), &ids, "");
    let d = p
        .evals(&["compare", "--cassettes", "live", "--no-autosave"])
        .exact()
        .code(1)
        .redact_run_ids();
    d.stderr_is(&format!(
        "suite: best (evals/.llm-evals.config.yml)\n20 live calls; nothing recorded (--cassettes live)\n{STORED}warning: 1 case errored (no score; see the errors column)\n  local/m1 · d · c02: local/m1: HTTP 400: context too long\n"
    ));
    d.stdout_has(&format!(
        "best value: {M2} — 98.2% at -; the top, {M1} at 100.0%, had 1 error\n"
    ));
}

#[test]
fn one_dataset_says_the_overall_standings_are_its_table() {
    let p = Project::toy();
    let d = p
        .evals(&["compare", "--no-autosave", "-d", "animals"])
        .exact()
        .ok()
        .redact_run_ids();
    d.stderr_is(&format!("{TOY_FOUND}{TOY_REFUSED}{STORED}"));
    d.stdout_has("dataset animals\n")
        .stdout_has("\noverall: the same as the table of dataset animals (the only dataset)\n");
    // The HTML report says so where its overall table would be.
    p.evals(&[
        "compare",
        "--no-autosave",
        "-d",
        "animals",
        "--format",
        "html",
        "-o",
        "one.html",
    ])
    .ok();
    let html = p.read("one.html");
    assert!(
        html.contains("<h2>overall</h2>\n<div class=\"note\">overall: the same as the table of dataset animals (the only dataset)</div>"),
        "{html}"
    );
    // `--totals variant` asks for no overall standings: no note either.
    p.evals(&[
        "compare",
        "--no-autosave",
        "-d",
        "animals",
        "--totals",
        "variant",
    ])
    .ok()
    .stdout_lacks("overall");
    // Two datasets: the overall table itself, and no note.
    Project::toy()
        .evals(&["compare", "--no-autosave"])
        .ok()
        .stdout_has("\noverall\n")
        .stdout_lacks("the only dataset");
}

/// `s` without its ANSI escape sequences (`ESC [ ... letter`).
fn strip_ansi(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The display width of every line of every table in `stdout`.
fn table_widths(stdout: &str) -> Vec<usize> {
    stdout
        .lines()
        .map(strip_ansi)
        .filter(|l| l.starts_with(['┌', '│', '╞', '├', '└']))
        .map(|l| l.chars().count())
        .collect()
}

#[test]
fn colored_leaderboards_line_up_and_fit_120_columns_unless_wide() {
    let p = Project::toy();
    let d = p
        .evals(&["compare", "--no-autosave", "--color", "always"])
        .env("COLUMNS", "120")
        .ok();
    assert!(d.stdout.contains('\u{1b}'), "no color:\n{}", d.stdout);
    // Every line of a table as wide as its header, escape codes or not.
    for table in d.stdout.split("\n\n") {
        let widths = table_widths(table);
        if let Some(first) = widths.first() {
            assert!(widths.iter().all(|w| w == first), "{widths:?}\n{table}");
            assert!(*first <= 120, "{first} columns:\n{table}");
        }
    }
    let plain = strip_ansi(&d.stdout);
    assert!(plain.contains("│ # ┆ model "), "{plain}");
    assert!(plain.contains("--wide shows every column"), "{plain}");
    assert!(!plain.contains("┆ tok_out"), "{plain}");
    // --wide: every column, however wide.
    let wide = p
        .evals(&["compare", "--no-autosave", "--color", "always", "--wide"])
        .env("COLUMNS", "120")
        .ok();
    let plain = strip_ansi(&wide.stdout);
    assert!(plain.contains("┆ tok_out"), "{plain}");
    assert!(!plain.contains("--wide shows"), "{plain}");
    let widths = table_widths(&wide.stdout);
    assert!(widths.iter().any(|w| *w > 120), "{widths:?}");
    // A pipe with no COLUMNS gets every column too (reports, scripts).
    p.evals(&["compare", "--no-autosave"])
        .ok()
        .stdout_has("┆ tok_out");
}
