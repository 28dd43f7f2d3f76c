//! Progress bars on stderr: one per experiment, only on a terminal. While they draw,
//! anything else written to stderr (a library's messages, an exec adapter's, a panic) goes
//! to `log/<command>.warnings.<stamp>.log` instead of garbling them; the bars and our own
//! notices draw on the terminal itself.

use std::fs::File;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::output::Out;
use llm_evals::runner::{Event, Notices, Quiet, RunPlan, Sink};

/// [`Notices`] that reach the terminal while the bars draw (see [`Progress::notices`]).
pub(crate) struct OnTerminal<'a> {
    out: &'a Out,
    quiet: Option<Quiet>,
}

impl Notices for OnTerminal<'_> {
    fn warn(&self, msg: &str) {
        match &self.quiet {
            Some(q) => q(&mut |w: &mut dyn Write| self.out.warn_to(w, msg)),
            None => self.out.warn(msg),
        }
    }

    fn note(&self, msg: &str) {
        match &self.quiet {
            Some(q) => q(&mut |w: &mut dyn Write| self.out.note_to(w, msg)),
            None => self.out.note(msg),
        }
    }

    fn verbose(&self, msg: &str) {
        match &self.quiet {
            Some(q) => q(&mut |w: &mut dyn Write| self.out.verbose_to(w, msg)),
            None => self.out.verbose(msg),
        }
    }
}

/// One bar per experiment, in plan order, and its count of errored cases: the sink of
/// [`Progress::sink`].
struct Bars(Vec<Bar>);

/// An experiment's bar and its count of errored cases.
type Bar = (ProgressBar, Arc<AtomicUsize>);

impl Sink for Bars {
    fn event(&self, event: &Event<'_>) {
        // Time, rate and ETA count from the experiment's start, not the run's (`-j`).
        if let Event::ExperimentStarted { index, .. } = event
            && let Some((b, _)) = self.0.get(*index)
        {
            b.reset_elapsed();
            b.reset_eta();
        }
        if let Event::CaseFinished {
            experiment, case, ..
        } = event
            && let Some((b, errors)) = self.0.get(*experiment)
        {
            b.inc(1);
            if case.error.is_some() {
                let n = errors.fetch_add(1, Ordering::Relaxed) + 1;
                b.set_message(if n > 99 {
                    "99+ err".to_string()
                } else {
                    format!("{n} err")
                });
            }
        }
    }
}

/// What a bar line holds after its label and bar, at most: `pos/len` (`digits` each), the
/// elapsed time, the rate, the ETA and the errors message, each with its space.
fn tail_width(digits: usize) -> usize {
    // ` 12/40`, ` 59m59s`, ` 999.9/s`, ` eta 59m59s`, ` 99 err`.
    (1 + 2 * digits + 1) + (1 + 6) + (1 + 7) + (1 + 10) + (1 + 7)
}

/// How a bar line is laid out in `width` columns: the label's columns and the bar's (0:
/// none),
/// so that the whole line (with `len` cases) is never wider than `width - 1` (a terminal
/// wraps a line that fills its last column on some emulators).
fn layout(width: usize, len: u64, longest_label: usize) -> (usize, usize) {
    let digits = len.max(1).to_string().len();
    let room = width.saturating_sub(1 + tail_width(digits) + 1);
    // The bar takes what the whole label leaves, up to 30 columns. When that is less than 6,
    // a label that can spare the room (40 columns left it) is cut for a bar of 10; else no
    // bar at all (`pos/len` says as much) and the label takes the room.
    if room >= longest_label + 6 {
        (longest_label.max(16), (room - longest_label - 1).min(30))
    } else if room >= 40 + 11 {
        (room - 11, 10)
    } else {
        (room.max(16), 0)
    }
}

/// A bar's label (`id` then `rest`: the settings and dataset) in at most `max` columns:
/// the id is cut in the middle with `…` first, so the settings that tell bars apart still
/// show; then, if need be, the end.
fn fit_label(id: &str, rest: &str, max: usize) -> String {
    let (id_len, rest_len) = (id.chars().count(), rest.chars().count());
    if id_len + rest_len <= max {
        return format!("{id}{rest}");
    }
    let room = max.saturating_sub(rest_len).max(9);
    let id = if id_len <= room {
        id.to_string()
    } else {
        let chars: Vec<char> = id.chars().collect();
        let head = (room - 1) / 2;
        let tail = room - 1 - head;
        let mut out: String = chars[..head].iter().collect();
        out.push('…');
        out.extend(&chars[id_len - tail..]);
        out
    };
    let whole = format!("{id}{rest}");
    if whole.chars().count() <= max {
        whole
    } else {
        let mut cut: String = whole.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    }
}

/// Each experiment's bar label, in plan order: the contender as every report spells it
/// (`report::format::contender_label`), less the settings every contender shares, then
/// `· dataset` when there is more than one.
fn labels(plan: &RunPlan) -> Vec<(String, String)> {
    let infos: Vec<&llm_evals::results::ContenderInfo> =
        plan.lineup.contenders.iter().map(|c| &c.info).collect();
    let varies = |f: &dyn Fn(&llm_evals::results::ContenderInfo) -> String| {
        infos.iter().any(|c| f(c) != f(infos[0]))
    };
    let effort = varies(&|c| format!("{:?}", c.effort));
    let temp = varies(&|c| format!("{:?}", c.temperature));
    let max = varies(&|c| format!("{:?}", c.max_tokens));
    let datasets = plan.datasets();
    let mut out = Vec::new();
    for c in &infos {
        let mut shown = (*c).clone();
        if !effort {
            shown.effort = None;
        }
        if !temp {
            shown.temperature = None;
        }
        if !max {
            shown.max_tokens = None;
        }
        let label = llm_evals::report::format::contender_label(&shown);
        let settings = label.strip_prefix(c.id.as_str()).unwrap_or("").to_string();
        for d in &datasets {
            let rest = if datasets.len() > 1 {
                format!("{settings} · {d}")
            } else {
                settings.clone()
            };
            out.push((c.id.clone(), rest));
        }
    }
    out
}

/// The bars' style in `width` columns: label, bar, `pos/len`, elapsed, rate, ETA, errors.
fn style(colour: &str, label: usize, bar: usize) -> ProgressStyle {
    fn short(d: std::time::Duration) -> String {
        let s = d.as_secs();
        match s {
            0..60 => format!("{s}s"),
            60..3600 => format!("{}m{:02}s", s / 60, s % 60),
            _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
        }
    }
    let bar = if bar == 0 {
        String::new()
    } else {
        format!(" {{bar:{bar}.{colour}/white}}")
    };
    ProgressStyle::with_template(&format!(
        "{{prefix:<{label}.{colour}}}{bar} {{pos}}/{{len}} {{took}} {{rate}} {{left}} {{msg}}"
    ))
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .with_key(
        "took",
        |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{}", short(s.elapsed()));
        },
    )
    .with_key(
        "rate",
        |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
            let r = s.per_sec();
            let _ = if !r.is_finite() || r <= 0.0 {
                write!(w, "-/s")
            } else if r < 1000.0 {
                write!(w, "{r:.1}/s")
            } else {
                write!(w, "{:.0}k/s", (r / 1000.0).min(999.0))
            };
        },
    )
    .with_key(
        "left",
        |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = if s.pos() == 0 {
                write!(w, "eta -")
            } else {
                write!(w, "eta {}", short(s.eta()))
            };
        },
    )
}

/// One bar per experiment of the plan (contender × dataset, in plan order) on `multi`,
/// laid out for `width` columns.
fn add_bars(multi: &MultiProgress, plan: &RunPlan, width: usize) -> Vec<Bar> {
    // One colour per contender, in the order the leaderboard colours model names.
    const COLOURS: &[&str] = &["cyan", "magenta", "green", "yellow", "blue", "red"];
    let labels = labels(plan);
    let longest = labels
        .iter()
        .map(|(id, rest)| id.chars().count() + rest.chars().count())
        .max()
        .unwrap_or(0);
    let datasets = plan.datasets();
    let most = datasets
        .iter()
        .map(|d| plan.cases.heads().filter(|x| x.dataset == *d).count() as u64)
        .max()
        .unwrap_or(0);
    let (label_width, bar_width) = layout(width, most, longest);
    let mut bars = Vec::new();
    let mut labels = labels.into_iter();
    for i in 0..plan.lineup.contenders.len() {
        let style = style(COLOURS[i % COLOURS.len()], label_width, bar_width);
        for d in &datasets {
            let n = plan.cases.heads().filter(|x| x.dataset == *d).count() as u64;
            let b = multi.add(ProgressBar::new(n));
            b.set_style(style.clone());
            let (id, rest) = labels.next().unwrap_or_default();
            let (id, rest) = (
                llm_evals::text::visible(&id),
                llm_evals::text::visible(&rest),
            );
            b.set_prefix(fit_label(&id, &rest, label_width));
            bars.push((b, Arc::new(AtomicUsize::new(0))));
        }
    }
    bars
}

pub(crate) struct Progress {
    bars: Option<(MultiProgress, Vec<Bar>)>,
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
    /// Bars for every experiment of the plan, when stderr is a terminal, fitted to `columns`
    /// (`COLUMNS`) or the terminal's width; stderr then goes to `log` until
    /// [`Progress::finish`].
    pub(crate) fn new(plan: &RunPlan, log: &Path, columns: Option<usize>) -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress {
                bars: None,
                capture: None,
            };
        }
        // Measured before stderr goes to the log: the bars fit the terminal's width.
        let width = columns
            .or_else(|| {
                console::Term::stderr()
                    .size_checked()
                    .map(|(_, cols)| usize::from(cols))
            })
            .unwrap_or(80);
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
        Progress {
            bars: Some((multi.clone(), add_bars(&multi, plan, width))),
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

    /// The run's notices (`wrote 12 cassettes …`, a warning) written where the user sees
    /// them: through [`Progress::quiet`] on the terminal while stderr goes to the log,
    /// else as `out` writes them.
    pub(crate) fn notices<'a>(&self, out: &'a Out) -> OnTerminal<'a> {
        OnTerminal {
            out,
            quiet: self.capturing().then(|| self.quiet()),
        }
    }

    /// Clears the bars and gives stderr back; returns the warnings log if anything went there.
    pub(crate) fn finish(&self) -> Option<PathBuf> {
        if let Some((m, bars)) = &self.bars {
            for (b, _) in bars {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A terminal of `width` columns that keeps every line drawn on it.
    #[derive(Debug)]
    struct Screen {
        width: u16,
        lines: Arc<Mutex<Vec<String>>>,
    }

    impl indicatif::TermLike for Screen {
        fn width(&self) -> u16 {
            self.width
        }
        fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            self.lines.lock().unwrap().push(s.to_string());
            Ok(())
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            self.lines.lock().unwrap().push(s.to_string());
            Ok(())
        }
        fn clear_line(&self) -> std::io::Result<()> {
            Ok(())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// The lines a bar of `len` cases draws at `width` columns, with the longest label and
    /// message it can have, after `done` cases over `secs` seconds.
    fn drawn(width: u16, len: u64, done: u64, id: &str, rest: &str) -> Vec<String> {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let screen = Screen {
            width,
            lines: lines.clone(),
        };
        let b = ProgressBar::with_draw_target(
            Some(len),
            ProgressDrawTarget::term_like(Box::new(screen)),
        );
        let (label, bar) = layout(usize::from(width), len, id.len() + rest.len());
        b.set_style(style("cyan", label, bar));
        b.set_prefix(fit_label(id, rest, label));
        b.set_message("99+ err");
        b.set_position(done);
        std::thread::sleep(std::time::Duration::from_millis(20));
        b.force_draw();
        lines.lock().unwrap().clone()
    }

    /// The last bar line drawn, without its colors.
    fn last_bar(lines: &[String]) -> String {
        lines
            .iter()
            .rev()
            .map(|l| console::strip_ansi_codes(l).to_string())
            .find(|l| !l.trim().is_empty())
            .expect("a bar was drawn")
    }

    #[test]
    fn a_bar_never_wraps_at_80_columns_and_shows_time_rate_and_eta() {
        let id = "openrouter-local/a-rather-long-model-name-for-testing-v2";
        let rest = " [effort high, temp 0.7, max 8192] · tax-preparation";
        for width in [80u16, 100, 120] {
            for (len, done) in [(4, 1), (4500, 1200), (99_999, 5)] {
                let lines = drawn(width, len, done, id, rest);
                assert!(!lines.is_empty());
                for line in &lines {
                    let w = console::measure_text_width(line);
                    assert!(w < usize::from(width), "{w} columns at {width}: {line:?}");
                }
                let last = last_bar(&lines);
                assert!(last.contains(&format!("{done}/{len}")), "{last}");
                assert!(last.contains("/s") && last.contains("eta "), "{last}");
                // The settings that tell bars apart survive the cut where they fit at all.
                if width >= 100 {
                    assert!(last.contains("temp 0.7"), "{last}");
                }
            }
        }
    }

    #[test]
    fn at_80_columns_the_settings_of_a_long_model_name_still_show() {
        let id = "openrouter-local/a-rather-long-model-name-for-testing-v2";
        let lines = drawn(80, 4500, 10, id, " [effort high, temp 0.7]");
        let last = last_bar(&lines);
        assert!(last.contains(" [effort high, temp 0.7]"), "{last}");
        assert!(console::measure_text_width(&last) < 80, "{last}");
    }

    #[test]
    fn a_long_label_is_cut_in_its_id_first() {
        assert_eq!(
            fit_label("fake/oracle", " [temp 0.1]", 40),
            "fake/oracle [temp 0.1]"
        );
        let cut = fit_label("local/a-rather-long-model-name", " [temp 0.1]", 24);
        assert_eq!(cut.chars().count(), 24, "{cut}");
        assert!(
            cut.ends_with(" [temp 0.1]") && cut.starts_with("local") && cut.contains('…'),
            "{cut}"
        );
    }
}
