//! Scorers: what good means. A scorer turns a case and a reply into a [`Score`]; it is pure
//! and never calls anything.
//!
//! The config's scorers (`scorer:` → [`build`]) implement [`Scorer`]; so can yours: pass it
//! to [`crate::runner::evaluate`] in [`crate::runner::RunOptions::scorer`] to replace them
//! or to add its metrics beside theirs ([`ScorerChoice`]). `examples/own_scorer.rs` does.

pub(crate) mod assertions;
mod build;
pub(crate) mod fields;
pub(crate) mod weighted;

pub use build::{ScorerChoice, build, build_with};

use crate::results::{MetricDef, Reply, Score};
use crate::suite::Case;

/// Grades replies. Implementations are deterministic and side-effect free: a replayed run
/// must score as the recorded one did. The runner calls them from several threads.
pub trait Scorer: Send + Sync {
    /// The metrics this scorer reports, exactly one of them primary. Every report shows
    /// them in this order, primary first.
    fn metrics(&self) -> Vec<MetricDef>;
    /// Scores one reply: [`Score::value`] is the primary metric's value, and
    /// [`Score::metrics`] holds every declared metric (`None`: does not apply to this case).
    /// A reply with an error ([`Reply::error`]) scores 0 (it is the model's failure). A case
    /// that never got a reply (a transport failure, a cassette miss) is never scored.
    fn score(&self, case: &Case, reply: &Reply) -> Score;
    /// Offline problems with a case (expected values the schema does not allow, ...): a
    /// run refuses to start while a selected case has one, and `evals verify` lists them.
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
