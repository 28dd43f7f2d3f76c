//! Renderers over the one result model: terminal leaderboard, JSON snapshot, Markdown (the
//! pull-request comment and the job summary), JUnit XML, the output diff and HTML.
//!
//! Every format implements [`Report`]; [`Format`] names them and [`renderer`] is the one
//! place a format becomes its renderer (hyperfine's `export/mod.rs`). A run checked
//! against a baseline is rendered with its [`Comparison`] beside it, never inside it.

pub(crate) mod diff;
pub(crate) mod format;
pub(crate) mod html;
pub(crate) mod json;
pub(crate) mod junit;
pub(crate) mod leaderboard;
pub(crate) mod markdown;
pub(crate) mod misses;
pub(crate) mod terminal;
pub(crate) mod verdict;

pub use diff::Diff;
pub use html::Html;
pub use json::Json;
pub use junit::Junit;
pub use markdown::Markdown;
pub use terminal::{Terminal, Totals};

use crate::results::{Comparison, RunResult};

/// One report format over the result model.
pub trait Report {
    /// The report of `run`; `comparison` is the gate's (`check`, `report --baseline`), or
    /// `None` for a run that was not compared.
    fn render(&self, run: &RunResult, comparison: Option<&Comparison>) -> String;
}

/// Every report format evals writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
}
