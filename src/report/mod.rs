//! Renderers over the one result model: terminal leaderboard, JSON snapshot, Markdown (the
//! pull-request comment and the job summary), JUnit XML, the output diff and HTML.
//!
//! Every format implements [`Report`]; [`Format`] names them and [`renderer`] is the one
//! place a format becomes its renderer (hyperfine's `export/mod.rs`). A run checked
//! against a baseline is rendered with its [`Comparison`] beside it, never inside it.
//!
//! A report is written ([`write()`]) to an `io::Write` from a [`CaseSource`]: the run's own
//! cases, or the case log of a run streamed to disk, read one at a time. What a report
//! holds at once grows with what it prints (its rows, its diffs, the changed cases the
//! comparison holds), not with the run's cases; where it needs a count over every case it
//! counts as it reads. Each piece it writes holds whole strings (a case's test case, a row
//! of the HTML matrix), so a writer that scrubs each write sees every value whole.
//! [`render`] is [`write()`] into memory from the run held whole, the same bytes.

pub(crate) mod diff;
pub mod format;
pub(crate) mod html;
pub(crate) mod json;
pub(crate) mod junit;
pub(crate) mod leaderboard;
pub mod markdown;
pub(crate) mod misses;
pub(crate) mod terminal;
pub mod trajectory;
pub mod verdict;

#[cfg(test)]
mod streamed;

pub use diff::Diff;
pub use html::Html;
pub use json::Json;
pub use junit::Junit;
pub use markdown::Markdown;
pub use terminal::{Terminal, Totals};

use crate::error::{Error, Result};
use crate::results::{CaseSource, Comparison, RunResult};

/// One report format over the result model.
pub trait Report {
    /// Writes the report of `run` to `out`, its cases read from `cases` one at a time (the
    /// run's own, or the case log beside a run streamed to disk), in pieces: what is held
    /// at once grows with what the report prints, not with the run's cases. `comparison`
    /// is the gate's (`check`, `report --baseline`), or `None` for a run that was not
    /// compared.
    fn write(
        &self,
        run: &RunResult,
        cases: CaseSource<'_>,
        comparison: Option<&Comparison>,
        out: &mut dyn std::io::Write,
    ) -> Result<()>;

    /// The report of `run`, its cases in it, as one text: [`Report::write`] into memory.
    fn render(&self, run: &RunResult, comparison: Option<&Comparison>) -> String {
        let mut out = Vec::new();
        if let Err(e) = self.write(run, CaseSource::Run(run), comparison, &mut out) {
            out.extend_from_slice(format!("\nerror: {e}\n").as_bytes());
        }
        String::from_utf8(out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }
}

/// The error of a report that could not be written to its destination.
pub(crate) fn io(e: std::io::Error) -> Error {
    Error::Failed(format!("could not write the report: {e}"))
}

/// Writes `text` to `out` with its control characters shown ([`crate::text::visible`],
/// which goes character by character, so text written in pieces reads as it would whole).
pub(crate) fn put(out: &mut dyn std::io::Write, text: &str) -> Result<()> {
    out.write_all(crate::text::visible(text).as_bytes())
        .map_err(io)
}

/// Each case of `run`, experiment by experiment in case order, read from `cases` one at a
/// time: `f(experiment index, case)`.
pub(crate) fn each_case(
    run: &RunResult,
    cases: CaseSource<'_>,
    mut f: impl FnMut(usize, &crate::results::CaseResult) -> Result<()>,
) -> Result<()> {
    for i in 0..run.experiments.len() {
        for c in cases.cases(i)? {
            let (_, c) = c?;
            f(i, &c)?;
        }
    }
    Ok(())
}

/// Every report format evals writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// The leaderboard tables (`--format tui`).
    Terminal,
    /// The JSON snapshot (the comparison included, when there is one).
    Json,
    /// The pull-request comment and job summary.
    Markdown,
    /// JUnit XML, for CI test views.
    Junit,
    /// Unified diffs of changed outputs and cassette misses.
    Diff,
    /// A standalone HTML page.
    Html,
}

impl Format {
    /// The format a file name asks for: `.md`, `.xml`, `.json`, `.diff`/`.patch`, `.html`;
    /// `None` for any other extension.
    pub fn from_extension(ext: &str) -> Option<Format> {
        Some(match ext {
            "md" | "markdown" => Format::Markdown,
            "xml" => Format::Junit,
            "json" => Format::Json,
            "diff" | "patch" => Format::Diff,
            "html" | "htm" => Format::Html,
            _ => return None,
        })
    }

    /// The extension of a file written in this format.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Terminal => "txt",
            Format::Json => "json",
            Format::Markdown => "md",
            Format::Junit => "xml",
            Format::Diff => "diff",
            Format::Html => "html",
        }
    }

    /// What a message calls a file of this format (`JUnit report`).
    pub fn kind(self) -> &'static str {
        match self {
            Format::Terminal => "report",
            Format::Json => "JSON report",
            Format::Markdown => "Markdown report",
            Format::Junit => "JUnit report",
            Format::Diff => "diff report",
            Format::Html => "HTML report",
        }
    }

    /// A file name a message suggests for this format (`junit.xml`).
    pub fn example(self) -> &'static str {
        match self {
            Format::Terminal => "report.txt",
            Format::Json => "run.json",
            Format::Markdown => "pr.md",
            Format::Junit => "junit.xml",
            Format::Diff => "pr.diff",
            Format::Html => "report.html",
        }
    }
}

/// The renderer of `format`: the one place a format is mapped to its [`Report`]. The
/// leaderboard's look (color, width, breakdown, totals) is `terminal`'s; the other formats
/// have no options.
pub fn renderer(format: Format, terminal: terminal::Terminal) -> Box<dyn Report> {
    match format {
        Format::Terminal => Box::new(terminal),
        Format::Json => Box::new(json::Json),
        Format::Markdown => Box::new(markdown::Markdown::default()),
        Format::Junit => Box::new(junit::Junit),
        Format::Diff => Box::new(diff::Diff),
        Format::Html => Box::new(html::Html),
    }
}

/// `run` (and its comparison) in `format`, the leaderboard looking as `terminal` says.
pub fn render(
    format: Format,
    terminal: terminal::Terminal,
    run: &RunResult,
    comparison: Option<&Comparison>,
) -> String {
    renderer(format, terminal).render(run, comparison)
}

/// Writes `run` (and its comparison) in `format` to `out`, the leaderboard looking as
/// `terminal` says, its cases read from `cases` one at a time: for a run streamed to disk,
/// `CaseSource::Log(&log)` beside the run whose experiments hold no cases. The same bytes
/// [`render`] gives for the run held whole; what is held at once grows with what the
/// report prints (its rows, its diffs), not with the run's cases.
pub fn write(
    format: Format,
    terminal: terminal::Terminal,
    run: &RunResult,
    cases: CaseSource<'_>,
    comparison: Option<&Comparison>,
    out: &mut dyn std::io::Write,
) -> Result<()> {
    renderer(format, terminal).write(run, cases, comparison, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_extension_names_its_format_and_each_format_its_extension() {
        for f in [
            Format::Json,
            Format::Markdown,
            Format::Junit,
            Format::Diff,
            Format::Html,
        ] {
            assert_eq!(Format::from_extension(f.extension()), Some(f));
        }
        assert_eq!(Format::from_extension("patch"), Some(Format::Diff));
        assert_eq!(Format::from_extension("htm"), Some(Format::Html));
        assert_eq!(Format::from_extension("txt"), None);
        assert_eq!(Format::Junit.kind(), "JUnit report");
        assert_eq!(Format::Terminal.example(), "report.txt");
    }

    /// A run of `--repeat 3` against a main of the same: every report shows the interval,
    /// `pass^k` and the flaky cases; the check reports add the p-value; JUnit marks the
    /// flaky case as surefire does.
    #[test]
    fn a_repeated_run_shows_its_interval_pass_k_flaky_and_p_value_in_every_report() {
        use crate::results::testing::{case, run};
        use crate::results::{Repeat, aggregate};
        let tried = |id: &str, tries: &[f64]| {
            let mut c = case(id, Some(tries.iter().sum::<f64>() / 3.0), Some(true));
            c.repeats = tries
                .iter()
                .map(|&s| Repeat {
                    score: Some(s),
                    passed: Some(s >= 0.5),
                    error: None,
                })
                .collect();
            c.passed = Some(2 * c.passes() >= 3);
            c
        };
        let with = |cases: Vec<crate::results::CaseResult>, id: &str| {
            let mut r = run(id, "f", "2026-01-02T00:00:00Z", vec![]);
            let e = &r.experiments[0];
            r.experiments[0] =
                aggregate::aggregate(e.contender.clone(), e.dataset.clone(), "accuracy", cases, 1);
            r
        };
        let b = with(vec![tried("a", &[1.0; 3]), tried("b", &[1.0; 3])], "b");
        let n = with(
            vec![tried("a", &[1.0, 0.0, 1.0]), tried("b", &[1.0; 3])],
            "n",
        );
        let r = n.experiments[0].repeat.clone().expect("repeat figures");
        assert_eq!((r.k, r.flaky, r.pass_hat_k), (3, 1, 0.5));
        let info = crate::results::BaselineInfo {
            id: "b".into(),
            branch: Some("main".into()),
            commit: None,
            started_at: "2026-01-01T00:00:00Z".parse().expect("a time"),
            reference: "main".into(),
        };
        let c = crate::gate::compare(Some((&b, info)), &n, 0.5);
        assert!(c.experiments[0].test.is_some());
        let term = terminal::Terminal {
            color: false,
            breakdown: false,
            totals: Totals::Overall,
            width: None,
            explain: false,
        };
        let board = render(Format::Terminal, term, &n, None);
        assert!(
            board.contains("pass^k") && board.contains("flaky"),
            "{board}"
        );
        assert!(board.contains("50.0%"), "pass^3 of 1 in 2 cases: {board}");
        let md = render(Format::Markdown, term, &n, Some(&c));
        assert!(md.contains("| ± | Δ points | p | pass^k | flaky |"), "{md}");
        assert!(md.contains("### Flaky cases (1)"), "{md}");
        assert!(md.contains("· `a`: passed 2 of 3 tries"), "{md}");
        let said = verdict::Terminal::of(&n, &c);
        assert!(
            said.reasons
                .contains(&"  1 flaky case (some tries passed, some failed): tax/a".to_string()),
            "{:?}",
            said.reasons
        );
        let html = render(Format::Html, term, &n, Some(&c));
        assert!(html.contains("<th class=\"\">pass^k</th>"), "{html}");
        assert!(html.contains("<h2>Statistical gate</h2>"), "{html}");
        assert!(
            html.contains("by sign-flip over 2 cases, 3 tries"),
            "{html}"
        );
        let xml = render(Format::Junit, term, &n, Some(&c));
        assert!(xml.contains("<flakyFailure"), "{xml}");
        assert!(xml.contains("try 2 of 3 failed"), "{xml}");
        assert!(
            xml.contains("name=\"flaky\" value=\"passed 2 of 3 tries\""),
            "{xml}"
        );
        let json = render(Format::Json, term, &n, Some(&c));
        let v: serde_json::Value = serde_json::from_str(&json).expect("json");
        assert_eq!(v["experiments"][0]["repeat"]["flaky"], 1);
        assert_eq!(
            v["comparison"]["experiments"][0]["test"]["method"],
            "sign-flip"
        );
    }
}
