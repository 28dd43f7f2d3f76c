//! A suite built in Rust, with no YAML file: [`SuiteBuilder`]. The config is given as the
//! values a config file would hold (a provider section, a scorer, the defaults), the cases
//! as JSONL lines would give them, and the suite is then loaded exactly as a file's is:
//! every key checked, every case validated, the same fingerprints. Nothing of it is
//! different from a suite on disk once built, so it records, replays, stores and gates the
//! same way.
//!
//! The cases are written where a suite on disk keeps them
//! (`<project>/evals/datasets/<dataset>/cases.jsonl`), because a suite reads its cases
//! from their files as it runs (memory stays flat however many there are); the cassettes
//! go beside them (`<project>/evals/cassettes/`), as for a suite on disk.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::Suite;
use crate::error::{Error, Result};

/// Builds a [`Suite`] in Rust.
///
/// ```
/// use llm_evals::runner::{RunOptions, evaluate};
/// use llm_evals::suite::SuiteBuilder;
/// use serde_json::json;
///
/// let project = tempfile::tempdir()?;
/// let suite = SuiteBuilder::new("refunds", project.path())
///     // The offline provider: `fake/echo` answers with the JSON found in the input.
///     .provider("fake", json!({ "models": ["echo"] }))
///     .scorer(json!({ "kind": "assertions" }))
///     .case("policy", json!({
///         "id": "window",
///         "input": "{\"answer\": \"You have 30 days.\"}",
///         "expect": { "contains": ["30 days"] }
///     }))
///     .build()?;
/// let run = evaluate(&suite, RunOptions::default())?;
/// assert_eq!(run.experiments[0].cases_total, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct SuiteBuilder {
    name: String,
    project_dir: PathBuf,
    config: Map<String, Value>,
    scorers: Vec<Value>,
    cases: BTreeMap<String, Vec<Value>>,
}

impl SuiteBuilder {
    /// A suite named `name` (what its runs are stored under), kept in `project_dir`: its
    /// cases are written under `evals/datasets/`, its cassettes go to `evals/cassettes/`,
    /// as for a suite on disk. It sends prompts (`request_types: [prompt]`) unless
    /// [`SuiteBuilder::set`] says otherwise.
    pub fn new(name: impl Into<String>, project_dir: impl AsRef<Path>) -> SuiteBuilder {
        let name = name.into();
        let mut config = Map::new();
        config.insert("suite".into(), Value::String(name.clone()));
        config.insert("request_types".into(), json!(["prompt"]));
        SuiteBuilder {
            name,
            project_dir: project_dir.as_ref().to_path_buf(),
            config,
            scorers: Vec::new(),
            cases: BTreeMap::new(),
        }
    }

    /// A provider section, as the config file's (`openrouter`, `openai`, `anthropic`,
    /// `fake`, a custom one with `base_url`): `json!({ "base_url": "http://127.0.0.1:11434/v1",
    /// "models": ["llama3.2"] })`. Its models join the lineup.
    pub fn provider(mut self, section: &str, value: Value) -> SuiteBuilder {
        self.config.insert(section.to_string(), value);
        self
    }

    /// A scorer, as the config's `scorer:` gives one (`{"kind": "assertions"}`, `{"kind":
    /// "fields", "schema": {...}}`, an exec scorer, a judge); each call adds one.
    pub fn scorer(mut self, value: Value) -> SuiteBuilder {
        self.scorers.push(value);
        self
    }

    /// The adapter, as the config's `adapter:` gives it (`{"kind": "prompt", "system":
    /// "...", "user": "{{ input }}", "json": true}` or an exec adapter). Default: the prompt
    /// adapter sending the case's input as the user message.
    pub fn adapter(self, value: Value) -> SuiteBuilder {
        self.set("adapter", value)
    }

    /// Any other top-level key of the config, as a file would give it: `defaults`,
    /// `minimum_scores`, `weighted_score`, `cassettes`, `errors`, `pricing`, `version`,
    /// `description`, `request_types`.
    pub fn set(mut self, key: &str, value: Value) -> SuiteBuilder {
        self.config.insert(key.to_string(), value);
        self
    }

    /// A case of dataset `dataset`, as a JSONL line gives one: `id`, `input` (a string,
    /// or an object of template variables), and any of `expected`, `expect`, `tags`,
    /// `weight`, `metadata`, `minimum_scores`.
    pub fn case(mut self, dataset: &str, case: Value) -> SuiteBuilder {
        self.cases
            .entry(dataset.to_string())
            .or_default()
            .push(case);
        self
    }

    /// Writes the cases and loads the suite, checked as a config file and its cases would
    /// be: an unknown key, a bad scorer or a case without an id is an error naming it.
    pub fn build(self) -> Result<Suite> {
        let SuiteBuilder {
            name,
            project_dir,
            mut config,
            scorers,
            cases,
        } = self;
        if !scorers.is_empty() {
            config.insert("scorer".into(), Value::Array(scorers));
        }
        let root = project_dir.join("evals");
        let datasets = root.join("datasets");
        for (dataset, lines) in &cases {
            if dataset.is_empty() || dataset.contains(['/', '\\']) || dataset.starts_with('.') {
                return Err(Error::Usage(format!(
                    "dataset '{dataset}': a dataset's name is a folder name: give one without `/`, `\\` or a leading `.`"
                )));
            }
            let mut text = String::new();
            for line in lines {
                text.push_str(&line.to_string());
                text.push('\n');
            }
            crate::fs::write_atomic_verbatim(
                &datasets.join(dataset).join("cases.jsonl"),
                text.as_bytes(),
            )?;
        }
        // JSON is YAML: the config is parsed and checked by the one parser every suite
        // goes through, its messages naming the suite as built.
        let text = Value::Object(config).to_string();
        let config_path = root.join(super::discovery::CONFIG_NAME);
        let shown = format!("the suite {name} (built in Rust)");
        Suite::from_text(&text, config_path, shown, &project_dir, |_, _| {})
    }
}
