//! The JSON snapshot as a report: the run as `results::snapshot` writes it (`-f json`).

use super::Report;
use crate::results::RunResult;

pub struct Json;

impl Report for Json {
    fn render(&self, run: &RunResult) -> String {
        crate::results::snapshot::to_json(run)
    }
}
