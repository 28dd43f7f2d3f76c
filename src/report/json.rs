//! The JSON snapshot: the result model as it is, versioned by `format`.

use serde::Serialize;

use super::Report;
use crate::error::{Error, Result};
use crate::results::{Comparison, ExperimentResult, RunInfo, RunResult, SNAPSHOT_FORMAT};

pub struct Json;

/// The snapshot as written: the run, then the comparison that travels beside it (`null`
/// when the run was not compared), in the field order snapshots have always had.
#[derive(Serialize)]
struct Snapshot<'a> {
    format: u32,
    run: &'a RunInfo,
    experiments: &'a [ExperimentResult],
    comparison: Option<super::verdict::Written<'a>>,
}

impl Report for Json {
    fn render(&self, run: &RunResult, comparison: Option<&Comparison>) -> String {
        let snapshot = Snapshot {
            format: run.format,
            run: &run.run,
            experiments: &run.experiments,
            comparison: comparison.map(super::verdict::Written::new),
        };
        let mut s = serde_json::to_string_pretty(&snapshot)
            .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
        s.push('\n');
        s
    }
}

/// Reads a snapshot's run, naming the file in every error (its comparison, if any, left out).
pub fn load(path: &std::path::Path) -> Result<RunResult> {
    load_checked(path).map(|(run, _)| run)
}

/// Reads a snapshot: the run and the comparison written beside it (`check --json`).
pub fn load_checked(path: &std::path::Path) -> Result<(RunResult, Option<Comparison>)> {
    let text = crate::error::read_text(path, &path.display().to_string())?;
    let mut v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        Error::Usage(format!(
            "{}:{}:{}: not a JSON snapshot: {e}",
            path.display(),
            e.line(),
            e.column()
        ))
    })?;
    match v.get("format").and_then(|f| f.as_u64()) {
        Some(f) if f as u32 == SNAPSHOT_FORMAT => {}
        Some(f) => {
            return Err(Error::Usage(format!(
                "{}: snapshot format {f} is not one this evals reads ({SNAPSHOT_FORMAT}); render it with the evals that wrote it",
                path.display()
            )));
        }
        None => {
            return Err(Error::Usage(format!(
                "{}: not a JSON snapshot (no `format`)",
                path.display()
            )));
        }
    }
    let bad = |e: serde_json::Error| {
        Error::Usage(format!("{}: not a JSON snapshot: {e}", path.display()))
    };
    let comparison = match v.as_object_mut().and_then(|m| m.remove("comparison")) {
        None | Some(serde_json::Value::Null) => None,
        Some(c) => Some(serde_json::from_value(c).map_err(bad)?),
    };
    Ok((serde_json::from_value(v).map_err(bad)?, comparison))
}
