//! Response components (UI payloads) scored apart from the text: the bundled `ui-desk`
//! suite (an offline A2UI 0.8 agent) as run and in its two broken revisions, `null` vs `[]`
//! components kept apart from the worker's line to the snapshot and the reports, the
//! components diff against a baseline, and a checking program of your own.

use serde_json::{Value, json};

use crate::harness::Project;

/// A temp copy of `fixtures/ui-desk`, as git has it.
fn ui_desk() -> Project {
    let p = Project::new();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    crate::harness::copy_tree(
        &root.join("fixtures/ui-desk"),
        p.path(),
        &["evals/results", ".evals", "log"],
    );
    p
}

#[test]
fn the_bundled_ui_desk_suite_passes_as_run_and_its_broken_ui_fails_the_ui_metric_only() {
    let p = ui_desk();
    let d = p
        .evals(&["check", "--no-autosave"])
        .env("AGENT_REVISION", "")
        .ok();
    assert_eq!(d.cell("fake/echo", "pass_rate"), "100.0%");
    assert_eq!(d.cell("fake/echo", "ui"), "100.0%");
    d.stderr_has("evals check passed in ui-desk");

    // The renderer regressed: the words are still right, the card shows 7 days.
    let d = p
        .evals(&["check", "--no-autosave", "--markdown", "regressed.md"])
        .env("AGENT_REVISION", "regressed")
        .code(1);
    assert_eq!(
        d.cell("fake/echo", "pass_rate"),
        "100.0%",
        "the text still passes"
    );
    assert_eq!(d.cell("fake/echo", "ui"), "0.0%");
    assert_eq!(d.cell("fake/echo", "errors"), "0");
    d.stderr_has("fake/echo · returns · return-window: fails its thresholds (ui check failed)");
    let md = p.read("regressed.md");
    assert!(
        md.contains(
            r#"| fake/echo | returns | `return-window` | unchanged | – → 100.0% | – | `ui`: want "a2ui 0.8 components: JSON lines equal to expected\_components" got "message 1 of 2: /surfaceUpdate/components/3/component/Text/text/literalString is \\"7 days from delivery\\", expected \\"30 days from delivery\\"" (failed) |"#
        ),
        "{md}"
    );

    // No UI at all: the same text passes; the reason says none was reported.
    let d = p
        .evals(&["check", "--no-autosave", "--markdown", "missing.md"])
        .env("AGENT_REVISION", "missing_ui")
        .code(1);
    assert_eq!(d.cell("fake/echo", "pass_rate"), "100.0%");
    assert_eq!(d.cell("fake/echo", "ui"), "0.0%");
    let md = p.read("missing.md");
    assert!(
        md.contains(
            "`ui`: want \"a2ui 0.8 components: JSON lines equal to expected\\_components\" got \"no components reported (`components` null or absent)"
        ),
        "{md}"
    );
}

/// A worker answering each case's input as its components: `absent` leaves the key out,
/// `null` writes null, `empty` writes `[]`, `card` one A2UI component.
const WORKER: &str = r#"import json, sys
for line in sys.stdin:
    req = json.loads(line)
    kind = req["case"]["input"]
    answer = {"id": req["id"], "output": "ok"}
    if kind == "null":
        answer["components"] = None
    elif kind == "empty":
        answer["components"] = []
    elif kind.startswith("card"):
        answer["components"] = [{"protocol": "a2ui", "version": "0.8",
                                 "payload": {"card": kind.split(" ", 1)[1]}, "tool": "render_card"}]
    print(json.dumps(answer), flush=True)
"#;

fn told_apart(scorer: &str, cases: &[(&str, &str)]) -> Project {
    let lines: String = cases
        .iter()
        .map(|(id, input)| {
            format!(
                "{}\n",
                json!({"id": id, "input": input, "expected_components": [
                    {"protocol": "a2ui", "version": "0.8", "payload": {"card": "returns"}}]})
            )
        })
        .collect();
    Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "request_types: [prompt]\nadapter: {{ kind: exec, command: [python3, evals/w.py] }}\nscorer:\n  - kind: assertions\n{scorer}fake: {{ models: [echo] }}\n"
            ),
        )
        .file("evals/w.py", WORKER)
        .file("evals/datasets/d/cases.jsonl", &lines)
}

const EXACT: &str = "  - { kind: components, name: ui, protocol: a2ui, version: \"0.8\" }\n";

#[test]
fn null_and_an_empty_list_of_components_are_told_apart_in_the_snapshot_and_the_reasons() {
    let p = told_apart(
        EXACT,
        &[
            ("absent", "absent"),
            ("null", "null"),
            ("empty", "empty"),
            ("card", "card returns"),
        ],
    );
    let d = p
        .evals(&[
            "check",
            "--no-autosave",
            "--json",
            "run.json",
            "--markdown",
            "run.md",
        ])
        .code(1);
    assert_eq!(d.cell("fake/echo", "pass_rate"), "100.0%");
    assert_eq!(d.cell("fake/echo", "ui"), "25.0%");
    let run: Value = serde_json::from_str(&p.read("run.json")).unwrap();
    let cases = run["experiments"][0]["cases"].as_array().unwrap();
    let case = |id: &str| cases.iter().find(|c| c["case"] == id).unwrap();
    // Not reported: no key at all; explicitly none: `[]`; one: kept as sent, provenance too.
    assert!(case("absent").get("components").is_none());
    assert!(case("null").get("components").is_none());
    assert_eq!(case("empty")["components"], json!([]));
    assert_eq!(
        case("card")["components"],
        json!([{"protocol": "a2ui", "version": "0.8", "payload": {"card": "returns"}, "tool": "render_card"}])
    );
    assert_eq!(case("card")["metrics"]["ui"], 1.0);
    // The history keeps them in the case's JSON, no table of their own: read back the same.
    let stored = p.evals(&["report", "--format", "json"]).ok();
    let stored: Value = serde_json::from_str(&stored.stdout).unwrap();
    assert_eq!(
        stored["experiments"][0]["cases"],
        run["experiments"][0]["cases"]
    );
    let md = p.read("run.md");
    for (id, why) in [
        (
            "absent",
            "got \"no components reported (`components` null or absent)",
        ),
        (
            "null",
            "got \"no components reported (`components` null or absent)",
        ),
        (
            "empty",
            "got \"the reply reported explicitly no components (`components: []`)\"",
        ),
    ] {
        let row = md
            .lines()
            .find(|l| l.contains(&format!("`{id}`")))
            .unwrap_or_else(|| panic!("no row of {id}\n{md}"));
        assert!(row.contains(why), "{id}: {row}");
    }
}

#[test]
fn changed_components_are_diffed_against_the_baseline_in_the_diff_markdown_and_html_reports() {
    let p = told_apart(EXACT, &[("card", "card returns")]);
    p.evals(&["check", "--no-autosave", "--json", "base.json"])
        .ok();
    p.write(
        "evals/datasets/d/cases.jsonl",
        &format!(
            "{}\n",
            json!({"id": "card", "input": "card refunds", "expected_components": [
                {"protocol": "a2ui", "version": "0.8", "payload": {"card": "returns"}}]})
        ),
    );
    let d = p
        .evals(&[
            "check",
            "--no-autosave",
            "--baseline",
            "base.json",
            "--markdown",
            "c.md",
            "--html",
            "c.html",
            "--format",
            "diff",
        ])
        .code(1);
    d.stdout_has("--- baseline components\n+++ candidate components\n");
    d.stdout_has("-      \"card\": \"returns\"\n+      \"card\": \"refunds\"\n");
    let md = p.read("c.md");
    assert!(
        md.contains("<code>card</code>: components diff</summary>"),
        "{md}"
    );
    assert!(
        md.contains(r#"/card is \\"refunds\\", expected \\"returns\\""#),
        "{md}"
    );
    // The HTML case data carries the components (pretty JSON) and their diff.
    let html = p.read("c.html");
    assert!(
        html.contains(r#""cp":"[\n  {\n    \"protocol\": \"a2ui\",\n    \"version\": \"0.8\""#),
        "no components in the HTML report's case data"
    );
    assert!(
        html.contains(r#""cpd":"--- baseline components\n+++ candidate components\n"#),
        "no components diff in the HTML report's case data"
    );
}

#[test]
fn a_checking_program_gets_only_the_selected_components_and_the_cases_metadata() {
    // The program compares the card with the case's metadata; it is never asked about a
    // reply with no components (it would crash on one).
    let program = r#"import json, sys
for line in sys.stdin:
    req = json.loads(line)
    if "verify" in req:
        problems = [] if "card" in req["verify"]["metadata"] else ["metadata.card is missing"]
        print(json.dumps({"id": req["id"], "problems": problems}), flush=True)
        continue
    comps = req["reply"]["components"]
    assert comps and all(c["protocol"] == "a2ui" for c in comps), comps
    ok = comps[0]["payload"]["card"] == req["case"]["metadata"]["card"]
    print(json.dumps({"id": req["id"], "metrics": {"ui": 1.0 if ok else 0.0}, "passed": ok,
                      "diagnostics": {} if ok else {"ui": "another card"}}), flush=True)
"#;
    let lines = [
        json!({"id": "right", "input": "card returns", "metadata": {"card": "returns"}}),
        json!({"id": "wrong", "input": "card refunds", "metadata": {"card": "returns"}}),
        json!({"id": "none", "input": "empty", "metadata": {"card": "returns"}}),
    ]
    .iter()
    .map(|l| format!("{l}\n"))
    .collect::<String>();
    let p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            "request_types: [prompt]\nadapter: { kind: exec, command: [python3, evals/w.py] }\nscorer:\n  - kind: assertions\n  - { kind: components, name: ui, protocol: a2ui, version: \"0.8\", command: [python3, evals/ui.py] }\nfake: { models: [echo] }\n",
        )
        .file("evals/w.py", WORKER)
        .file("evals/ui.py", program)
        .file("evals/datasets/d/cases.jsonl", &lines);
    let d = p
        .evals(&["check", "--no-autosave", "--json", "run.json"])
        .code(1);
    assert_eq!(
        d.cell("fake/echo", "errors"),
        "0",
        "the program never saw the empty reply"
    );
    let run: Value = serde_json::from_str(&p.read("run.json")).unwrap();
    let cases = run["experiments"][0]["cases"].as_array().unwrap();
    let ui = |id: &str| cases.iter().find(|c| c["case"] == id).unwrap()["metrics"]["ui"].clone();
    assert_eq!(
        (ui("right"), ui("wrong"), ui("none")),
        (json!(1.0), json!(0.0), json!(0.0))
    );
    d.stderr_has("fake/echo · d · none: fails its thresholds (ui check failed)");
}

#[test]
fn a_components_scorer_with_both_match_and_command_or_a_case_without_expected_components_is_refused()
 {
    let p = told_apart(
        "  - { kind: components, protocol: a2ui, version: \"0.8\", match: jsonl, command: [python3, x.py] }\n",
        &[("card", "card returns")],
    );
    p.evals(&["check", "--no-autosave"])
        .code(2)
        .stderr_has("scorer (kind: components): `match: jsonl` and `command` both judge the components; keep one");
    // A YAML number is not a version: quoted, it is compared as written.
    told_apart(
        "  - { kind: components, protocol: a2ui, version: 0.8 }\n",
        &[("card", "card returns")],
    )
    .evals(&["check", "--no-autosave"])
    .code(2)
    .stderr_has("scorer.version is 0.8, not text: quote it, version: \"0.8\"");
    let p = told_apart(EXACT, &[("card", "card returns")]).file(
        "evals/datasets/d/cases.jsonl",
        "{\"id\": \"bare\", \"input\": \"card returns\"}\n",
    );
    p.evals(&["verify"]).code(1).stdout_has(
        "evals/datasets/d/cases.jsonl:1: no expected_components: `kind: components` compares the reply's a2ui 0.8 components with them",
    );
    // A run refuses to start on it.
    p.evals(&["check", "--no-autosave"])
        .code(2)
        .stderr_has("no expected_components");
}
