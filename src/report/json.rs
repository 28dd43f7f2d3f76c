//! The JSON snapshot as a report: the run as `results::snapshot` writes it (`-f json`),
//! with the comparison beside it worded as every report words it.

use std::io::Write;

use super::Report;
use crate::error::{Error, Result};
use crate::results::{CaseSource, Comparison, RunResult};

/// The JSON snapshot renderer.
#[derive(Debug)]
pub struct Json;

impl Report for Json {
    fn write(
        &self,
        run: &RunResult,
        cases: CaseSource<'_>,
        comparison: Option<&Comparison>,
        out: &mut dyn Write,
    ) -> Result<()> {
        let written = comparison.map(super::verdict::Written::new);
        let log = match cases {
            CaseSource::Log(log) => log,
            CaseSource::Run(_) => {
                let text = crate::results::snapshot::to_json_with(run, written);
                return out.write_all(text.as_bytes()).map_err(super::io);
            }
        };
        // The run streamed as the snapshot file is (`"comparison": null` last), its last
        // piece held back to put the comparison in place of the `null`.
        let mut held = HoldLast {
            out,
            last: Vec::new(),
        };
        crate::results::write_json(run, log, true, &mut held)?;
        let HoldLast { out, last } = held;
        let tail: &[u8] = b"\"comparison\": null\n}";
        let Some(head) = last.strip_suffix(tail) else {
            return Err(Error::Failed(
                "the run's JSON does not end with its comparison".into(),
            ));
        };
        out.write_all(head).map_err(super::io)?;
        let mut piece = String::from("\"comparison\": ");
        match written {
            Some(w) => {
                let text = serde_json::to_string_pretty(&w).map_err(|e| {
                    Error::Failed(format!("could not serialize run {}: {e}", run.run.id))
                })?;
                piece.push_str(&text.replace('\n', "\n  "));
            }
            None => piece.push_str("null"),
        }
        piece.push_str("\n}\n");
        out.write_all(piece.as_bytes()).map_err(super::io)
    }
}

/// A writer passing each write on but the last, which it keeps.
struct HoldLast<'a> {
    out: &'a mut dyn Write,
    last: Vec<u8>,
}

impl Write for HoldLast<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.out.write_all(&self.last)?;
        self.last.clear();
        self.last.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
