//! Progress bars on stderr: one per experiment, only on a terminal. While they draw,
//! anything else written to stderr (a library's messages, an exec adapter's, a panic) goes
//! to `log/<command>.warnings.<stamp>.log` instead of garbling them; the bars and our own
//! notices draw on the terminal itself.

use std::fs::File;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use llm_evals::runner::{Event, Quiet, RunPlan, Sink};

/// One bar per experiment, in plan order: the sink of [`Progress::sink`].
struct Bars(Vec<ProgressBar>);

impl Sink for Bars {
    fn event(&self, event: &Event<'_>) {
        if let Event::CaseFinished {
            experiment, case, ..
        } = event
            && let Some(b) = self.0.get(*experiment)
        {
            b.inc(1);
            if case.error.is_some() {
                b.set_message("errors");
            }
        }
    }
}

pub(crate) struct Progress {
    bars: Option<(MultiProgress, Vec<ProgressBar>)>,
    capture: Option<Capture>,
}

/// stderr sent to a log file; the terminal kept for the bars.
struct Capture {
    terminal: Arc<Mutex<File>>,
    log: PathBuf,
}

impl Capture {
    /// Points fd 2 at `log` and keeps the terminal it pointed at.
    #[cfg(unix)]
    fn start(log: &Path) -> Option<Capture> {
        use std::os::fd::{AsRawFd, FromRawFd};
        std::fs::create_dir_all(log.parent()?).ok()?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .ok()?;
        // SAFETY: dup/dup2 on fds this process owns; the duplicate is then owned by a File.
        unsafe {
            let saved = libc::dup(2);
            if saved < 0 {
                return None;
            }
            if libc::dup2(file.as_raw_fd(), 2) < 0 {
                libc::close(saved);
                return None;
            }
            Some(Capture {
                terminal: Arc::new(Mutex::new(File::from_raw_fd(saved))),
                log: log.to_path_buf(),
            })
        }
    }

    #[cfg(not(unix))]
    fn start(_log: &Path) -> Option<Capture> {
        None
    }

    /// Points fd 2 back at the terminal; returns the log if anything was written to it.
    fn stop(&self) -> Option<PathBuf> {
        self.restore();
        tidy_log(&self.log)
    }

    fn restore(&self) {
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            let terminal = self
                .terminal
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            // SAFETY: dup2 onto fd 2 from an fd the File owns.
            unsafe {
                libc::dup2(terminal.as_raw_fd(), 2);
            }
        }
    }
}

impl Drop for Capture {
    /// A run that stops on an error still gives stderr back before the error is printed.
    fn drop(&mut self) {
        self.restore();
    }
}

/// The warnings log if anything was written to it; an empty one is removed (and `log/`
/// with it, when that leaves it empty).
pub(crate) fn tidy_log(log: &Path) -> Option<PathBuf> {
    match std::fs::metadata(log) {
        Ok(m) if m.len() > 0 => Some(log.to_path_buf()),
        Ok(_) => {
            let _ = std::fs::remove_file(log);
            if let Some(dir) = log.parent() {
                let _ = std::fs::remove_dir(dir); // only when empty
            }
            None
        }
        Err(_) => None,
    }
}

impl Progress {
    /// Bars for every experiment of the plan, when stderr is a terminal; stderr then goes to
    /// `log` until [`Progress::finish`].
    pub(crate) fn new(plan: &RunPlan, log: &Path) -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress {
                bars: None,
                capture: None,
            };
        }
        let capture = Capture::start(log);
        let terminal = capture
            .as_ref()
            .and_then(|c| c.terminal.lock().ok().and_then(|t| t.try_clone().ok()));
        let target = match terminal {
            Some(t) => {
                ProgressDrawTarget::term(console::Term::read_write_pair(std::io::stdin(), t), 15)
            }
            None => ProgressDrawTarget::stderr(),
        };
        let multi = MultiProgress::with_draw_target(target);
        // One colour per contender, in the order the leaderboard colours model names.
        const COLOURS: &[&str] = &["cyan", "magenta", "green", "yellow", "blue", "red"];
        let mut bars = Vec::new();
        for (i, c) in plan.lineup.contenders.iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            let style = ProgressStyle::with_template(&format!(
                "{{prefix:>40.{colour}}} {{bar:30.{colour}/white}} {{pos}}/{{len}} {{msg}}"
            ))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            for d in plan.datasets() {
                let n = plan.cases.heads().filter(|x| x.dataset == d).count() as u64;
                let b = multi.add(ProgressBar::new(n));
                b.set_style(style.clone());
                b.set_prefix(
                    llm_evals::text::visible(&format!("{} {} · {d}", c.id(), c.settings_slug()))
                        .into_owned(),
                );
                bars.push(b);
            }
        }
        Progress {
            bars: Some((multi, bars)),
            capture,
        }
    }

    /// The sink that moves the bars as cases finish; `None` when no bar draws.
    pub(crate) fn sink(&self) -> Option<Arc<dyn Sink>> {
        let (_, bars) = self.bars.as_ref()?;
        Some(Arc::new(Bars(bars.clone())))
    }

    /// Whether stderr goes to the warnings log now.
    pub(crate) fn capturing(&self) -> bool {
        self.capture.is_some()
    }

    /// Writes our own notices on the terminal, with the bars hidden meanwhile.
    pub(crate) fn quiet(&self) -> Quiet {
        let terminal = self.capture.as_ref().map(|c| c.terminal.clone());
        match &self.bars {
            Some((multi, _)) => {
                let multi = multi.clone();
                Arc::new(move |f: &mut dyn FnMut(&mut dyn Write)| {
                    multi.suspend(|| match &terminal {
                        Some(t) => {
                            let mut t = t.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                            f(&mut *t);
                        }
                        None => f(&mut std::io::stderr()),
                    })
                })
            }
            None => Arc::new(|f: &mut dyn FnMut(&mut dyn Write)| f(&mut std::io::stderr())),
        }
    }

    /// Clears the bars and gives stderr back; returns the warnings log if anything went there.
    pub(crate) fn finish(&self) -> Option<PathBuf> {
        if let Some((m, bars)) = &self.bars {
            for b in bars {
                // Keep each bar where it stopped: an aborted run did not finish its cases.
                b.abandon();
            }
            let _ = m.clear();
        }
        match &self.capture {
            Some(c) => c.stop(),
            None => None,
        }
    }
}
