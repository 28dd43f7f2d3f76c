//! Scorers: what good means. A scorer turns a case and a reply into a [`Score`]; it is pure
//! and never calls anything.

pub mod assertions;
mod build;
pub mod fields;
pub mod weighted;

pub use build::{ScorerChoice, build, build_with};

use crate::results::{MetricDef, Reply, Score};
use crate::suite::Case;

/// Grades replies. Implementations are deterministic and side-effect free.
pub trait Scorer: Send + Sync {
    /// The metrics this scorer reports, exactly one of them primary.
    fn metrics(&self) -> Vec<MetricDef>;
    /// Scores one reply. A reply with an error scores 0 (it is the model's failure).
    fn score(&self, case: &Case, reply: &Reply) -> Score;
    /// Offline problems with a case (expected values the schema does not allow, ...).
    fn verify(&self, case: &Case) -> Vec<String>;
    /// A short summary for `evals cases`: `2/8 answered`, `3 assertions`.
    fn summary(&self, case: &Case) -> String;
}

/// How a JSON value is named in messages: `a string`, `an object`.
pub(crate) fn kind_of(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}
