//! No control character from the data reaches a terminal or a report raw: a case id's ESC,
//! a reply's ESC/BEL/CR, a scorer's NUL are each shown escaped (`\u001b`, `\r`), in every
//! text output (terminal, progress and error lines, Markdown, the diff, JUnit, HTML);
//! newlines and tabs stay where the format needs them.

use crate::harness::Project;

/// A case id that would set the terminal's title and ring its bell.
const EVIL_ID: &str = "evil\u{1b}]0;pwned\u{7}";
/// The reply the branch's model gives: color, a bell and a carriage return that would
/// overwrite the line it is on.
const EVIL_REPLY: &str = "red \u{1b}[31mtext\u{1b}[0m bell \u{7} cr \rover";

/// A scorer that passes `fine` and `before` with 1, else fails them with 0, an outcome and
/// a diagnostic holding a NUL.
const SCORER: &str = r#"
import json, sys
for line in sys.stdin:
    req = json.loads(line)
    if "verify" in req:
        print(json.dumps({"id": req["id"], "problems": []}), flush=True)
        continue
    text = str(req["reply"]["output"] or "")
    good = text in ("fine", "before")
    print(json.dumps({"id": req["id"], "metrics": {"quality": 1.0 if good else 0.0},
                      "passed": good,
                      "outcomes": {} if good else {"quality": "bad\u0000outcome"},
                      "diagnostics": {} if good else {"quality": "nul\u0000byte"}}), flush=True)
"#;

fn project(reply: &str) -> Project {
    let line = |id: &str, response: &str| {
        format!(
            "{}\n",
            serde_json::json!({"id": id, "input": "q", "expected": "x", "mock_response": response})
        )
    };
    Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            "suite: ctl\nrequest_types: [prompt]\nadapter: { kind: prompt, user: \"{{ input }}\" }\nscorer:\n  kind: exec\n  command: [python3, evals/score.py]\n  metrics:\n    - { name: quality, primary: true }\nmock:\n  models: [mock]\n",
        )
        .file("evals/score.py", SCORER)
        .file(
            "evals/datasets/d/cases.jsonl",
            &format!("{}{}", line(EVIL_ID, "fine"), line("reply", reply)),
        )
}

/// The first control character of `text` a text format never needs (all but `\n`, `\t`).
fn raw_control(text: &str) -> Option<char> {
    text.chars()
        .find(|c| c.is_control() && *c != '\n' && *c != '\t')
}

#[test]
fn control_characters_in_ids_replies_and_diagnostics_are_escaped_in_every_text_output() {
    let p = project("before");
    let mut outputs: Vec<(String, String)> = Vec::new();
    let d = p.evals(&["cases"]).ok();
    d.stdout_has("evil\\u001b]0;pwned\\u0007");
    outputs.push(("cases: stdout".into(), d.stdout));
    outputs.push(("cases: stderr".into(), d.stderr));
    let d = p.evals(&["check", "--branch", "main"]).ok();
    outputs.push(("check main: stderr".into(), d.stderr));

    // The branch: the reply turns hostile, and the scorer's diagnostic holds a NUL.
    let branch = project(EVIL_REPLY);
    p.write(
        "evals/datasets/d/cases.jsonl",
        &branch.read("evals/datasets/d/cases.jsonl"),
    );
    let d = p
        .evals(&[
            "check",
            "--branch",
            "feature",
            "--baseline",
            "main",
            "--markdown",
            "comment.md",
            "--diff",
            "changes.diff",
            "--junit",
            "junit.xml",
            "--html",
            "report.html",
        ])
        .code(1);
    outputs.push(("check feature: stdout".into(), d.stdout));
    outputs.push(("check feature: stderr".into(), d.stderr));
    let d = p.evals(&["run", "--no-autosave"]).output();
    d.stdout_has("evil\\u001b]0;pwned\\u0007");
    d.stdout_has("bad\\u0000outcome");
    outputs.push(("run: stdout".into(), d.stdout));
    outputs.push(("run: stderr".into(), d.stderr));
    let d = p
        .evals(&["run", "--no-autosave", "--color", "always"])
        .output();
    // Color stays (ours), the reply's own escape sequences do not.
    assert!(d.stdout.contains("\u{1b}["), "no color: {}", d.stdout);
    assert!(!d.stdout.contains(EVIL_ID), "{}", d.stdout);
    assert!(
        d.stdout.contains("evil\\u001b]0;pwned\\u0007"),
        "{}",
        d.stdout
    );
    for format in ["md", "diff", "junit", "html"] {
        let d = p
            .evals(&["report", "--baseline", "main", "--format", format])
            .output();
        outputs.push((format!("report --format {format}"), d.stdout));
    }
    for file in ["comment.md", "changes.diff", "junit.xml", "report.html"] {
        outputs.push((file.to_string(), p.read(file)));
    }

    let diff = p.read("changes.diff");
    assert!(
        diff.contains("+red \\u001b[31mtext\\u001b[0m bell \\u0007 cr \\r"),
        "{diff}"
    );
    let md = p.read("comment.md");
    assert!(md.contains("bad\\u0000outcome"), "{md}");
    assert!(md.contains("\\u001b[31mtext"), "the output diff: {md}");
    let mut raw = Vec::new();
    for (what, text) in &outputs {
        if let Some(c) = raw_control(text) {
            raw.push(format!("{what}: {c:?}"));
        }
    }
    assert!(
        raw.is_empty(),
        "raw control characters:\n{}",
        raw.join("\n")
    );
}
