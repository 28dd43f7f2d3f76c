//! The JSON snapshot: the result model as it is, versioned by `format`.

use super::Report;
use crate::error::{Error, Result};
use crate::results::{RunResult, SNAPSHOT_FORMAT};

pub struct Json;

impl Report for Json {
    fn render(&self, run: &RunResult) -> String {
        let mut s =
            serde_json::to_string_pretty(run).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
        s.push('\n');
        s
    }
}

/// Reads a snapshot, naming the file in every error.
pub fn load(path: &std::path::Path) -> Result<RunResult> {
    let text = crate::error::read_text(path, &path.display().to_string())?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
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
    serde_json::from_value(v)
        .map_err(|e| Error::Usage(format!("{}: not a JSON snapshot: {e}", path.display())))
}
