//! The JSON snapshot as a report: the run as `results::snapshot` writes it (`-f json`),
//! with the comparison beside it worded as every report words it.

use super::Report;
use crate::results::{Comparison, RunResult};

/// The JSON snapshot renderer.
#[derive(Debug)]
pub struct Json;

impl Report for Json {
    fn render(&self, run: &RunResult, comparison: Option<&Comparison>) -> String {
        crate::results::snapshot::to_json_with(run, comparison.map(super::verdict::Written::new))
    }
}
