//! One case: what it feeds the adapter and what a scorer grades the reply against.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What a case feeds the adapter: plain text (`{{ input }}`) or template variables
/// (`{{ vars.question }}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CaseInput {
    /// `input.txt`, or a JSONL `input` that is a string.
    Text(String),
    /// A JSONL `input` that is an object: its keys are the template's variables.
    Vars(Map<String, Value>),
}

impl CaseInput {
    /// The text form: the string itself, or the variables as pretty JSON.
    pub fn as_text(&self) -> String {
        match self {
            CaseInput::Text(t) => t.clone(),
            CaseInput::Vars(v) => {
                serde_json::to_string_pretty(&Value::Object(v.clone())).unwrap_or_default()
            }
        }
    }

    /// The JSON form: a string, or the variables' object (what an exec worker is sent, and
    /// what the case fingerprint hashes).
    pub fn to_value(&self) -> Value {
        match self {
            CaseInput::Text(t) => Value::String(t.clone()),
            CaseInput::Vars(v) => Value::Object(v.clone()),
        }
    }

    /// Words in the input (in each variable's value), for `evals cases`.
    pub fn word_count(&self) -> usize {
        match self {
            CaseInput::Text(t) => t.split_whitespace().count(),
            CaseInput::Vars(v) => v
                .values()
                .map(|v| match v {
                    Value::String(s) => s.split_whitespace().count(),
                    other => other.to_string().split_whitespace().count(),
                })
                .sum(),
        }
    }
}

/// One case of a dataset, from disk (`input.txt` + `expected.json`) or a JSONL line. A
/// [`crate::score::Scorer`] reads `expected` (or `expect`) and grades a reply against it.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// `vague`, `vague/003` or the JSONL `id`.
    pub id: String,
    /// The folder under `datasets/`: one leaderboard per dataset.
    pub dataset: String,
    /// The case folder (`complete`, `vague`) or, for JSONL, the part of the id before `/`.
    pub variant: String,
    /// What the adapter feeds the model.
    pub input: CaseInput,
    /// The expected answer for a `fields` scorer (or `equals` for assertions).
    pub expected: Option<Value>,
    /// Per-case assertions (`expect:` in JSONL).
    pub expect: Option<Value>,
    /// The UI payloads the reply should carry, in the reply's own shape (`[{protocol,
    /// version, payload}]`): `expected_components` in JSONL or in a case folder's
    /// `metadata.json`, what `kind: components` compares with.
    pub expected_components: Option<Value>,
    /// The case's tags (`--tag` selects by them).
    pub tags: Vec<String>,
    /// The case's weight in its experiment's means (1 unless the case sets one).
    pub weight: f64,
    /// `metadata.json` (or the JSONL `metadata`), as written.
    pub metadata: Map<String, Value>,
    /// Per-case thresholds, overriding the suite's.
    pub minimum_scores: BTreeMap<String, f64>,
    /// What the `mock` provider answers (LLMEvalForge's `mock_response`; a JSON value other
    /// than a string is its JSON text). Not part of the case fingerprint: like a recording,
    /// it is the answer, not the question.
    pub mock_response: Option<String>,
    /// Where it came from: the input file or the JSONL file, with the line for JSONL.
    pub source: PathBuf,
    /// The 1-based line in a JSONL file; `None` for a case folder.
    pub line: Option<usize>,
}

impl Case {
    /// `dataset/id`, unique in a suite.
    pub fn key(&self) -> String {
        format!("{}/{}", self.dataset, self.id)
    }

    /// Where to point a user: `path` or `path:line`.
    pub fn location(&self) -> String {
        match self.line {
            Some(l) => format!("{}:{l}", self.source.display()),
            None => self.source.display().to_string(),
        }
    }
}

impl Case {
    /// Like [`Case::location`], relative to `base` when inside it.
    pub fn location_in(&self, base: &std::path::Path) -> String {
        let p = super::discovery::display_path(&self.source, base);
        match self.line {
            Some(l) => format!("{p}:{l}"),
            None => p,
        }
    }
}
