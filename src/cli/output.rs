//! Where output goes: data to stdout, progress/warnings/errors to stderr, color only when
//! asked or on a terminal (`NO_COLOR`, `TERM=dumb` honoured). Everything printed passes
//! through the egress scrubber first, and its control characters are shown, never sent
//! to the terminal ([`llm_evals::text::visible`]; our own colors stay).

use std::io::{IsTerminal, Write};

use anstyle::{AnsiColor, Style};

use super::args::ColorChoice;
use llm_evals::env::{EnvVars, Environment};

pub(crate) struct Out {
    color_stdout: bool,
    color_stderr: bool,
    verbose: bool,
    /// The columns tables on stdout should fit in; `None`: as wide as they are.
    width: Option<usize>,
    /// `--explain`: the leaderboard's glossary is printed.
    explain: bool,
    /// `COLUMNS`, when it holds a width.
    columns: Option<usize>,
}

impl Out {
    pub(crate) fn new(choice: ColorChoice, env: &Environment) -> Out {
        let env_ok = env.var_os(EnvVars::NO_COLOR).is_none_or(|v| v.is_empty())
            && env.var(EnvVars::TERM).is_none_or(|t| t != "dumb");
        let (o, e) = match choice {
            ColorChoice::Always => (true, true),
            ColorChoice::Never => (false, false),
            ColorChoice::Auto => (
                env_ok && std::io::stdout().is_terminal(),
                env_ok && std::io::stderr().is_terminal(),
            ),
        };
        Out {
            color_stdout: o,
            color_stderr: e,
            verbose: false,
            width: None,
            explain: false,
            columns: None,
        }
    }

    /// With `-v`: [`Out::verbose`] lines are printed.
    pub(crate) fn with_verbose(mut self, on: bool) -> Out {
        self.verbose = on;
        self
    }

    /// `verbose: MSG` on stderr with `-v`: what was found where, and why. Names, never values.
    pub(crate) fn verbose(&self, msg: &str) {
        self.verbose_to(&mut std::io::stderr().lock(), msg);
    }

    /// [`Out::verbose`] to `w` (the terminal while progress bars draw).
    pub(crate) fn verbose_to(&self, w: &mut dyn Write, msg: &str) {
        if self.verbose {
            self.styled_to(
                w,
                Style::new().fg_color(Some(AnsiColor::Cyan.into())),
                "verbose:",
                msg,
            );
        }
    }

    pub(crate) fn color(&self) -> bool {
        self.color_stdout
    }

    /// Sets the width stdout's tables fit in: none with `--wide`; else `COLUMNS` when set,
    /// else the terminal's when stdout is one (a pipe gets every column).
    pub(crate) fn with_width(mut self, wide: bool, env: &Environment) -> Out {
        self.columns = env
            .var(EnvVars::COLUMNS)
            .and_then(|c| c.trim().parse::<usize>().ok())
            .filter(|&c| c > 0);
        self.width = if wide {
            None
        } else {
            self.columns.or_else(|| {
                std::io::stdout()
                    .is_terminal()
                    .then(|| console::Term::stdout().size_checked())
                    .flatten()
                    .map(|(_, cols)| usize::from(cols))
            })
        };
        self
    }

    /// With `--explain`: the leaderboard ends with its glossary.
    pub(crate) fn with_explain(mut self, on: bool) -> Out {
        self.explain = on;
        self
    }

    /// Whether the leaderboard ends with its glossary (`--explain`).
    pub(crate) fn explain(&self) -> bool {
        self.explain
    }

    /// `COLUMNS`, when it holds a width: it beats the terminal's own (progress bars, on
    /// stderr, fit it too).
    pub(crate) fn columns(&self) -> Option<usize> {
        self.columns
    }

    /// The width stdout's tables should fit in, if any.
    pub(crate) fn width(&self) -> Option<usize> {
        self.width
    }

    /// Writes to stdout; a closed pipe is not an error.
    pub(crate) fn text(&self, s: &str) {
        let s = llm_evals::secrets::scrub(s);
        let s = if self.color_stdout {
            llm_evals::text::visible_keeping_color(&s)
        } else {
            llm_evals::text::visible(&s)
        };
        let mut so = std::io::stdout().lock();
        let _ = so.write_all(s.as_bytes());
        let _ = so.flush();
    }

    pub(crate) fn line(&self, s: &str) {
        self.text(&format!("{s}\n"));
    }

    fn err_styled(&self, style: Style, label: &str, msg: &str) {
        self.styled_to(&mut std::io::stderr().lock(), style, label, msg);
    }

    fn styled_to(&self, w: &mut dyn Write, style: Style, label: &str, msg: &str) {
        let msg = llm_evals::secrets::scrub(msg);
        let msg = llm_evals::text::visible(&msg);
        if self.color_stderr {
            let _ = writeln!(w, "{style}{label}{style:#} {msg}");
        } else {
            let _ = writeln!(w, "{label} {msg}");
        }
    }

    /// [`Out::warn`] to `w` (the terminal while progress bars draw).
    pub(crate) fn warn_to(&self, w: &mut dyn Write, msg: &str) {
        self.styled_to(
            w,
            Style::new().bold().fg_color(Some(AnsiColor::Yellow.into())),
            "warning:",
            msg,
        );
    }

    /// [`Out::note`] to `w` (the terminal while progress bars draw).
    pub(crate) fn note_to(&self, w: &mut dyn Write, msg: &str) {
        let msg = llm_evals::secrets::scrub(msg);
        let msg = llm_evals::text::visible(&msg);
        let _ = writeln!(w, "{msg}");
    }

    /// A library error, in the command line's words (its flags and commands).
    pub(crate) fn fail(&self, e: &llm_evals::error::Error) {
        self.error(&e.message(llm_evals::error::Audience::CommandLine));
    }

    pub(crate) fn error(&self, msg: &str) {
        self.err_styled(
            Style::new().bold().fg_color(Some(AnsiColor::Red.into())),
            "error:",
            msg,
        );
    }

    pub(crate) fn warn(&self, msg: &str) {
        self.warn_to(&mut std::io::stderr().lock(), msg);
    }

    pub(crate) fn note(&self, msg: &str) {
        self.note_to(&mut std::io::stderr().lock(), msg);
    }

    /// The first line of a run: which suite, from which file.
    pub(crate) fn banner(&self, suite: &str, path: &str) {
        self.err_styled(
            Style::new().bold().fg_color(Some(AnsiColor::Green.into())),
            "suite:",
            &format!("{suite} ({path})"),
        );
    }

    pub(crate) fn paint(&self, s: &str, style: Style) -> String {
        if self.color_stdout {
            let s = llm_evals::text::visible(s);
            format!("{style}{s}{style:#}")
        } else {
            s.to_string()
        }
    }
}

/// A table in the house style: box-drawing, no wrapping, stable across terminal widths.
pub(crate) fn table(header: Vec<String>) -> comfy_table::Table {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(comfy_table::ContentArrangement::Disabled)
        .set_header(header);
    t
}

/// Right-aligns the given columns.
pub(crate) fn align_right(t: &mut comfy_table::Table, cols: impl IntoIterator<Item = usize>) {
    for i in cols {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(comfy_table::CellAlignment::Right);
        }
    }
}

/// A run's warnings, notes and `-v` lines, through [`Out`].
impl llm_evals::runner::Notices for Out {
    fn warn(&self, msg: &str) {
        Out::warn(self, msg);
    }

    fn note(&self, msg: &str) {
        Out::note(self, msg);
    }

    fn verbose(&self, msg: &str) {
        Out::verbose(self, msg);
    }
}
