//! `evals init`: writes a small working suite that runs offline at once with the fake
//! models, to copy from.

use std::path::{Path, PathBuf};

use super::exit;
use super::output::Out;
use llm_evals::error::{Error, Result};

const CONFIG: &str = r#"# The suite: what the model sees (adapter), what good means (scorer), who competes (the
# lineup). Run `evals cases`, `evals verify`, `evals compare`; every key: docs/src/config.md.
suite: {name}
description: Which model reads a support ticket into the fields the helpdesk needs.
version: 1
request_types: [prompt]

adapter:
  kind: prompt
  system: prompts/system.md
  user: "{{ input }}"
  json: true

scorer:
  kind: fields
  schema:
    category: { type: enum, values: [billing, bug, account, other] }
    urgent: boolean
    order_id: string

minimum_scores: { field_accuracy: 0.8 }

defaults: { temperature: 0.1, max_tokens: 1024, parallelism: 4, timeout: 120 }

# An offline model: fake/oracle knows each case's expected answer and replies with it, so
# the suite runs (and passes) at once. Replace it with real ones, e.g.:
# openrouter:                      # needs OPENROUTER_API_KEY
#   vendors:
#     openai:
#       models:
#         - model: gpt-4o-mini
#           effort: [low, high]
fake:
  models: [oracle]
"#;

const SYSTEM: &str = "Read the support ticket and answer with one JSON object with the keys category, urgent\nand order_id. Leave a key null when the ticket does not say.\n\nSchema:\n{{ schema }}\n";

const CASES: &str = r#"{"id": "refund", "input": "I was charged twice for order A-1042, please refund one of them today.", "expected": {"category": "billing", "urgent": true, "order_id": "A-1042"}, "tags": ["smoke"]}
{"id": "login", "input": "I can't log in since yesterday's update. No rush.", "expected": {"category": "account", "urgent": false, "order_id": null}}
{"id": "vague", "input": "Something is off with my thing.", "expected": {"category": "other", "urgent": null, "order_id": null}}
"#;

/// What evals writes but never means to commit, as `.gitignore` lines at the project root
/// (the parent of `evals/`), each with why.
const GITIGNORE: &[(&str, &str)] = &[
    ("/.evals/", "the run history (SQLite)"),
    ("/log/", "warnings and adapter logs"),
    (
        "/evals/results/",
        "reports written by -o and results.destination",
    ),
    (
        ".evals-tmp-*.partial",
        "temp files a killed write left behind (`evals cassettes prune` removes them)",
    ),
];

/// The project's `.gitignore` with every line of [`GITIGNORE`] in it: a new file, or the
/// lines an existing one lacks appended (nothing else in it is touched); `None` when it
/// has them all.
fn gitignore(existing: Option<&str>) -> Option<String> {
    let have: Vec<&str> = existing
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .collect();
    let missing: Vec<&(&str, &str)> = GITIGNORE
        .iter()
        .filter(|(line, _)| !have.contains(line))
        .collect();
    if missing.is_empty() {
        return None;
    }
    let mut text = existing.unwrap_or_default().to_string();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str("# Written by `evals init`: what evals writes but never means to commit.\n");
    for (line, why) in missing {
        text.push_str(&format!("# {why}\n{line}\n"));
    }
    Some(text)
}

/// Writes the suite under `dir/evals/`; refuses to overwrite anything.
pub(crate) fn run(dir: Option<&Path>, out: &Out) -> Result<i32> {
    let cwd = std::env::current_dir().map_err(|e| Error::io(PathBuf::from("."), e))?;
    let root = dir.map(|d| cwd.join(d)).unwrap_or_else(|| cwd.clone());
    let name = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "my-evals".into());
    let files: [(&str, String); 3] = [
        (
            "evals/.llm-evals.config.yml",
            CONFIG.replace("{name}", &name),
        ),
        ("evals/prompts/system.md", SYSTEM.to_string()),
        ("evals/datasets/tickets/cases.jsonl", CASES.to_string()),
    ];
    for (rel, _) in &files {
        let p = root.join(rel);
        if p.exists() {
            return Err(Error::Usage(format!(
                "{}: already exists; `evals init` writes a new suite and never overwrites one (pick another folder: `evals init DIR`)",
                llm_evals::suite::discovery::display_path(&p, &cwd)
            )));
        }
    }
    for (rel, text) in &files {
        llm_evals::fs::write_atomic(&root.join(rel), text.as_bytes())?;
        out.note(&format!(
            "wrote {}",
            llm_evals::suite::discovery::display_path(&root.join(rel), &cwd)
        ));
    }
    // The one `.gitignore`, at the project root: created, or completed (it is often there).
    let ignore_path = root.join(".gitignore");
    let existing = match std::fs::read_to_string(&ignore_path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io(ignore_path, e)),
    };
    if let Some(text) = gitignore(existing.as_deref()) {
        llm_evals::fs::write_atomic(&ignore_path, text.as_bytes())?;
        let shown = llm_evals::suite::discovery::display_path(&ignore_path, &cwd);
        out.note(&match existing {
            Some(_) => format!("added evals' lines to {shown}"),
            None => format!("wrote {shown}"),
        });
    }
    let cd = match dir {
        Some(d) => format!("  cd {}\n", d.display()),
        None => String::new(),
    };
    out.line(&format!(
        "a suite with 3 cases and an offline model (fake/oracle, which knows the answers) is ready; try:\n{cd}  evals cases\n  evals compare\nthen add your cases under evals/datasets/ and real models in evals/.llm-evals.config.yml"
    ));
    Ok(exit::OK)
}
