//! `evals init`: writes a small working suite that runs offline at once with the fake
//! models, to copy from.

use std::path::{Path, PathBuf};

use super::output::Out;
use crate::error::{Error, Result, exit};

const CONFIG: &str = r#"# The suite: what the model sees (adapter), what good means (scorer), who competes (the
# lineup). Run `evals cases`, `evals verify`, `evals compare`; see README for every key.
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

# Offline models: fake/echo answers with the last JSON object in the message, fake/parrot
# says it back in its own words. Replace them with real ones, e.g.:
# openrouter:                      # needs OPENROUTER_API_KEY
#   vendors:
#     openai:
#       models:
#         - model: gpt-4o-mini
#           effort: [low, high]
fake:
  models: [echo, parrot]
"#;

const SYSTEM: &str = "Read the support ticket and answer with one JSON object with the keys category, urgent\nand order_id. Leave a key null when the ticket does not say.\n\nSchema:\n{{ schema }}\n";

const CASES: &str = r#"{"id": "refund", "input": "I was charged twice for order A-1042, please refund one of them today.\n\nAnswer: {\"category\": \"billing\", \"urgent\": true, \"order_id\": \"A-1042\"}", "expected": {"category": "billing", "urgent": true, "order_id": "A-1042"}, "tags": ["smoke"]}
{"id": "login", "input": "I can't log in since yesterday's update. No rush.\n\nAnswer: {\"category\": \"account\", \"urgent\": false, \"order_id\": null}", "expected": {"category": "account", "urgent": false, "order_id": null}}
{"id": "vague", "input": "Something is off with my thing.\n\nAnswer: {\"category\": \"other\", \"urgent\": null, \"order_id\": null}", "expected": {"category": "other", "urgent": null, "order_id": null}}
"#;

/// Keeps what evals writes but never means to commit out of git.
const GITIGNORE: &str = "# Temp files a killed write left behind (`evals cassettes prune` removes them).\n.evals-tmp-*.partial\n";

/// Writes the suite under `dir/evals/`; refuses to overwrite anything.
pub fn run(dir: Option<&Path>, out: &Out) -> Result<i32> {
    let cwd = std::env::current_dir().map_err(|e| Error::io(PathBuf::from("."), e))?;
    let root = dir.map(|d| cwd.join(d)).unwrap_or_else(|| cwd.clone());
    let name = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "my-evals".into());
    let files: [(&str, String); 4] = [
        (
            "evals/.llm-evals.config.yml",
            CONFIG.replace("{name}", &name),
        ),
        ("evals/prompts/system.md", SYSTEM.to_string()),
        ("evals/datasets/tickets/cases.jsonl", CASES.to_string()),
        ("evals/.gitignore", GITIGNORE.to_string()),
    ];
    for (rel, _) in &files {
        let p = root.join(rel);
        if p.exists() {
            return Err(Error::Usage(format!(
                "{}: already exists; `evals init` writes a new suite and never overwrites one (pick another folder: `evals init DIR`)",
                crate::suite::discovery::display_path(&p, &cwd)
            )));
        }
    }
    for (rel, text) in &files {
        crate::error::write_atomic(&root.join(rel), text.as_bytes())?;
        out.note(&format!(
            "wrote {}",
            crate::suite::discovery::display_path(&root.join(rel), &cwd)
        ));
    }
    let cd = match dir {
        Some(d) => format!("  cd {}\n", d.display()),
        None => String::new(),
    };
    out.line(&format!(
        "a suite with 3 cases and two offline models is ready; try:\n{cd}  evals cases\n  evals compare\nthen add your cases under evals/datasets/ and real models in evals/.llm-evals.config.yml"
    ));
    Ok(exit::OK)
}
