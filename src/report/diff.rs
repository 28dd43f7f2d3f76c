//! The diff report: a unified diff of each changed output against the baseline's, then
//! each request that missed its cassette with its field-by-field diff against the nearest
//! recording (the cassette layer writes that diff into the case's error). A case that
//! errored otherwise (a crash, a transport error) is named with its error.
//!
//! Outputs are compared as pretty-printed JSON (a string output as its text), so a diff
//! shows the fields that moved, line by line, the way a reviewer reads a code change. A
//! case's components (its UI payloads) that changed follow as a diff of their own.

use std::fmt::Write;

use serde_json::Value;
use similar::TextDiff;

use super::Report;
use super::format::{contender_label, unusable_text};
use crate::error::Result;
use crate::results::{CaseDelta, CaseErrorKind, CaseSource, Comparison, Reason, RunResult};

/// Unified diffs of the outputs that changed against the baseline, and of each cassette
/// miss against its nearest recording (`--format diff`, a `.diff` file).
#[derive(Debug)]
pub struct Diff;

/// The text a diff compares for an output: JSON pretty-printed, a string as it is.
fn text(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => format!("{s}\n"),
        Some(v) => format!(
            "{}\n",
            serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
        ),
    }
}

/// The unified diff of a case's output, baseline to candidate; `None` when they are equal.
pub fn output_diff(d: &CaseDelta) -> Option<String> {
    // An unusable reply has no output: the diff shows what the model said instead.
    let b = match (&d.candidate_output, &d.said) {
        (None | Some(Value::Null), Some(said)) => format!("{said}\n"),
        (out, _) => text(out.as_ref()),
    };
    let a = text(d.baseline_output.as_ref());
    if a == b {
        return None;
    }
    Some(
        TextDiff::from_lines(&a, &b)
            .unified_diff()
            .context_radius(3)
            .header("baseline", "candidate")
            .to_string(),
    )
}

impl Report for Diff {
    fn write(
        &self,
        run: &RunResult,
        source: CaseSource<'_>,
        comparison: Option<&Comparison>,
        out: &mut dyn std::io::Write,
    ) -> Result<()> {
        // What it holds is what it prints: the changed cases' diffs (the comparison holds
        // them) and the misses, grouped.
        let mut s = String::new();
        let cases = comparison.map(|c| c.cases.as_slice()).unwrap_or(&[]);
        for d in cases {
            let diff = output_diff(d);
            // A case that errored is said even when its output did not change (a crash
            // leaves none, as the baseline's unusable reply did); a miss is said below with
            // its request's diff.
            let error = d
                .error
                .as_deref()
                .filter(|_| d.error_kind != Some(CaseErrorKind::Miss));
            let components = d.components_diff.as_deref();
            if diff.is_none() && error.is_none() && components.is_none() {
                continue;
            }
            let _ = writeln!(
                s,
                "# {} · {} · {} ({})",
                contender_label(&d.contender),
                d.dataset,
                d.case,
                d.status.as_str()
            );
            if let Some(e) = error {
                for line in e.lines() {
                    let _ = writeln!(s, "# {line}");
                }
            }
            if let Some(u) = unusable_text(d.reply_error.as_deref(), d.said.as_deref()) {
                let _ = writeln!(s, "# {u}");
            }
            if let Some(diff) = diff {
                s.push_str(&diff);
            }
            // The UI payloads beside the text, when they changed: a diff of their own.
            if let Some(diff) = components {
                s.push_str(diff);
            }
            s.push('\n');
        }
        if s.is_empty() {
            s.push_str(match comparison {
                Some(_) => "no output changed\n",
                None => "no comparison: run `evals check --baseline REF` to diff outputs\n",
            });
        }
        let mut missed = String::new();
        for g in super::misses::groups(run, source)? {
            let _ = writeln!(
                missed,
                "# {} missed request(s): {}\n# cases: {}\n{}# record again: {}\n",
                g.cases.len(),
                super::misses::who(&g),
                super::misses::case_list(&g, 50),
                g.diff,
                g.hints().join("; ")
            );
        }
        if !missed.is_empty() {
            s.push_str(
                "\n## requests with no recording, against the nearest one, grouped by cause\n\n",
            );
            s.push_str(&missed);
        }
        // A cost, tokens or latency past its allowed rise changes no output, yet fails the
        // check: said first, so the diff never looks like a clean bill.
        let rose: String = comparison
            .iter()
            .flat_map(|c| &c.verdict.reasons)
            .filter(|r| matches!(r, Reason::Rose { .. }))
            .map(|r| format!("# {}\n", super::verdict::reason_text(r)))
            .collect();
        if !rose.is_empty() {
            s = format!("{rose}\n{s}");
        }
        // A reply's ESC, BEL or CR is shown in the diff, never sent to the terminal that
        // reads it (`\r` stands out at the end of a line written with CRLF).
        super::put(out, &s)
    }
}
