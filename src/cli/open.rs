//! The HTML report after a run, for the browser (`results.display: browser|both`, `--open`):
//! written under `results.destination` (or the `-o`/`--html` file already asked for) and
//! opened with the desktop's opener, `xdg-open` or `open`; never on CI, nor with
//! `--no-open` (written, not opened), nor without a desktop. `EVALS_OPENER` names another
//! opener command (a test points it at a script recording its argv).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::output::Out;
use llm_evals::results::{CaseSource, Comparison, RunResult};
use llm_evals::suite::config::Display;

/// What opening is decided from: the flags, the display setting and the environment.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Desktop {
    /// `CI` is set (as [`llm_evals::env::Env::ci`] reads it).
    pub(crate) ci: bool,
    /// `EVALS_OPENER`: the command (and its first arguments, split at spaces) to open with.
    pub(crate) opener: Option<String>,
    /// `DISPLAY` or `WAYLAND_DISPLAY` is set, not empty.
    pub(crate) display: bool,
    /// macOS, where `open` needs no display variable.
    pub(crate) macos: bool,
}

impl Desktop {
    /// `env`'s (the process's, as the CLI read it).
    pub(crate) fn read(env: &llm_evals::env::Environment) -> Desktop {
        use llm_evals::env::EnvVars;
        let set = |k: &str| env.var_os(k).is_some_and(|v| !v.is_empty());
        Desktop {
            ci: env.ci,
            opener: env
                .var(EnvVars::EVALS_OPENER)
                .filter(|v| !v.trim().is_empty()),
            display: set(EnvVars::DISPLAY) || set(EnvVars::WAYLAND_DISPLAY),
            macos: cfg!(target_os = "macos"),
        }
    }
}

/// Whether the run ends with the HTML report for the browser: `--open`, or
/// `results.display: browser` or `both`.
pub(crate) fn wanted(display: Option<Display>, open: bool) -> bool {
    open || matches!(display, Some(Display::Browser | Display::Both))
}

/// The command that opens `file`, or why it is not opened.
pub(crate) fn decide(d: &Desktop, no_open: bool, file: &Path) -> Result<Vec<OsString>, String> {
    if no_open {
        return Err("--no-open".into());
    }
    if d.ci {
        return Err("CI is set".into());
    }
    let mut argv: Vec<OsString> = match &d.opener {
        Some(cmd) => cmd.split_whitespace().map(OsString::from).collect(),
        None if d.macos => vec!["open".into()],
        None if d.display => vec!["xdg-open".into()],
        None => return Err("no desktop (DISPLAY and WAYLAND_DISPLAY are unset)".into()),
    };
    argv.push(file.as_os_str().to_owned());
    Ok(argv)
}

/// How a run shows its report in the browser.
pub(crate) struct Browser {
    /// Where the report goes unless a file was asked for: a stamped name under the
    /// results folder.
    pub(crate) stamped: PathBuf,
    pub(crate) no_open: bool,
    pub(crate) desktop: Desktop,
}

impl Browser {
    /// Writes the report to `asked` (an HTML file `-o`/`--html` already wrote: not written
    /// again) or the stamped path, and opens it unless [`decide`] says why not. A report
    /// that cannot be written or opened is a warning: the run's verdict stands.
    pub(crate) fn show(
        &self,
        run: &RunResult,
        comparison: Option<&Comparison>,
        asked: Option<&Path>,
        out: &Out,
    ) {
        self.show_cases(run, CaseSource::Run(run), comparison, asked, out);
    }

    /// [`Browser::show`] with the run's cases read from `cases` one at a time, the page
    /// written in pieces.
    pub(crate) fn show_cases(
        &self,
        run: &RunResult,
        cases: CaseSource<'_>,
        comparison: Option<&Comparison>,
        asked: Option<&Path>,
        out: &Out,
    ) {
        let file = match asked {
            Some(p) => p.to_path_buf(),
            None => {
                if let Some(dir) = self.stamped.parent()
                    && let Err(e) = std::fs::create_dir_all(dir)
                {
                    out.warn(&format!(
                        "could not write the HTML report in {}: {e}",
                        dir.display()
                    ));
                    return;
                }
                let written = llm_evals::fs::write_atomic_streamed(&self.stamped, |w| {
                    llm_evals::report::write(
                        llm_evals::report::Format::Html,
                        Default::default(),
                        run,
                        cases,
                        comparison,
                        w,
                    )
                });
                match written {
                    Ok(()) => out.note(&format!("wrote {}", self.stamped.display())),
                    Err(e) => {
                        out.warn(&format!("could not write the HTML report: {e}"));
                        return;
                    }
                }
                self.stamped.clone()
            }
        };
        let argv = match decide(&self.desktop, self.no_open, &file) {
            Ok(argv) => argv,
            Err(why) if why.starts_with("no desktop") => {
                out.note(&format!("not opening {}: {why}", file.display()));
                return;
            }
            Err(why) => {
                out.verbose(&format!("not opening {} ({why})", file.display()));
                return;
            }
        };
        // The opener gets an absolute path: it may resolve it from elsewhere.
        let mut argv = argv;
        if let Some(last) = argv.last_mut()
            && let Ok(abs) = std::path::absolute(&file)
        {
            *last = abs.into_os_string();
        }
        let status = std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
        match status {
            Ok(s) if s.success() => out.note(&format!(
                "opened {} in the browser (--no-open writes it without opening)",
                file.display()
            )),
            Ok(s) => out.warn(&format!(
                "{} could not open {}: it exited with {s}; open the file yourself",
                argv[0].to_string_lossy(),
                file.display()
            )),
            Err(e) => out.warn(&format!(
                "could not run {} to open {}: {e}; open the file yourself, or set EVALS_OPENER",
                argv[0].to_string_lossy(),
                file.display()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desktop() -> Desktop {
        Desktop {
            display: true,
            ..Desktop::default()
        }
    }

    #[test]
    fn a_desktop_opens_with_xdg_open_or_the_opener_named_and_never_on_ci_or_with_no_open() {
        let f = Path::new("r.html");
        assert_eq!(
            decide(&desktop(), false, f),
            Ok(vec!["xdg-open".into(), "r.html".into()])
        );
        let mac = Desktop {
            macos: true,
            ..Desktop::default()
        };
        assert_eq!(
            decide(&mac, false, f),
            Ok(vec!["open".into(), "r.html".into()])
        );
        let named = Desktop {
            opener: Some("firefox --new-tab".into()),
            ..Desktop::default()
        };
        assert_eq!(
            decide(&named, false, f),
            Ok(vec!["firefox".into(), "--new-tab".into(), "r.html".into()])
        );
        let ci = Desktop {
            ci: true,
            ..named.clone()
        };
        assert_eq!(decide(&ci, false, f), Err("CI is set".into()));
        assert_eq!(decide(&named, true, f), Err("--no-open".into()));
        assert_eq!(
            decide(&Desktop::default(), false, f),
            Err("no desktop (DISPLAY and WAYLAND_DISPLAY are unset)".into())
        );
    }

    #[test]
    fn the_browser_report_is_wanted_by_open_or_display_browser_or_both() {
        assert!(wanted(None, true));
        assert!(wanted(Some(Display::Browser), false));
        assert!(wanted(Some(Display::Both), false));
        for d in [None, Some(Display::Tui), Some(Display::None)] {
            assert!(!wanted(d, false), "{d:?}");
        }
    }
}
