//! When a run stops early: `errors.abort_after`, 100 failed calls in a row (pause and ask),
//! and a [`Cancel`] tripped by its caller (the CLI trips it on Ctrl-C / SIGTERM). One owner
//! of these counts; every case asks it before it starts.
//!
//! The library installs no signal handler: a process-wide handler is the program's to
//! choose, so the caller holds the token and decides what trips it.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{Notify, RwLock, watch};

/// A cancellation token the caller holds: tripping it stops a run (nothing new starts,
/// in-flight calls are cancelled, what finished is returned as `interrupted`) and `evals
/// dashboard`'s server. Clones share one state; it never un-trips. The CLI trips its one
/// token on SIGINT or SIGTERM; a library caller trips it from wherever it likes.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<CancelState>);

#[derive(Debug, Default)]
struct CancelState {
    tripped: AtomicBool,
    notify: Notify,
}

impl Cancel {
    /// A token not yet tripped.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Trips the token: every clone is cancelled, and whoever awaits
    /// [`Cancel::cancelled`] wakes.
    pub fn cancel(&self) {
        self.0.tripped.store(true, Ordering::SeqCst);
        self.0.notify.notify_waiters();
    }

    /// Whether the token was tripped.
    pub fn is_cancelled(&self) -> bool {
        self.0.tripped.load(Ordering::SeqCst)
    }

    /// Resolves once the token is tripped (at once if it already was).
    pub async fn cancelled(&self) {
        loop {
            let notified = self.0.notify.notified();
            let mut notified = std::pin::pin!(notified);
            // Registered before the flag is read, so a trip in between is never missed.
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

use crate::results::{CaseResult, RunStatus};
use crate::suite::config::AbortAfter;

/// What the run does when 100 calls in a row fail.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum OnStreak {
    /// `-y/--yes`: print the details and go on.
    GoOn,
    /// Ask on the terminal; stop when stdin is not one.
    Ask,
}

#[derive(Default)]
struct Counts {
    finished: usize,
    failures: usize,
    in_a_row: usize,
    /// The failures of the current streak: (model, dataset, case, message).
    streak: Vec<(String, String, String, String)>,
}

/// Runs a closure that writes to the user's terminal (the writer it is given) with the
/// progress bars hidden, so a notice never garbles them. The CLI passes one that suspends its
/// bars and writes where they draw (stderr itself goes to the warnings log meanwhile); the
/// default writes to stderr.
pub type Quiet = std::sync::Arc<dyn Fn(&mut dyn FnMut(&mut dyn std::io::Write)) + Send + Sync>;

/// The one owner of a run's stop and pause decisions: counts finished and failed cases,
/// stops the run on `errors.abort_after` or an interrupt, pauses it to ask after a streak of
/// failed live calls. Every case asks [`Control::may_start`] first.
pub(crate) struct Control {
    quiet: Quiet,
    /// The caller's token: tripped, the run is interrupted.
    interrupt: Cancel,
    stop: AtomicBool,
    status: Mutex<RunStatus>,
    counts: Mutex<Counts>,
    abort_after: Option<AbortAfter>,
    on_streak: OnStreak,
    streak_limit: usize,
    /// Held for writing while the run asks whether to go on: no case starts meanwhile.
    pause: RwLock<()>,
    /// Turns true to cancel in-flight cases (interrupt).
    cancel: watch::Sender<bool>,
    /// Every model and dataset of the run, to say "all" when a streak hit them all.
    models: Vec<String>,
    datasets: Vec<String>,
    /// How many distinct cases (`dataset/id`) the run has.
    cases: usize,
    /// Whether failures are live calls (the 100-in-a-row rule); a replay's misses are
    /// deterministic and cost nothing, so they never pause or stop a run.
    live: bool,
}

impl Control {
    /// A control for a run of these `models`, `datasets` and `cases` (named in the streak's
    /// notice), counting every call as live until [`Control::with_live_calls`] says not.
    pub fn new(
        abort_after: Option<AbortAfter>,
        on_streak: OnStreak,
        models: Vec<String>,
        datasets: Vec<String>,
        cases: usize,
    ) -> Control {
        Control {
            quiet: std::sync::Arc::new(|f: &mut dyn FnMut(&mut dyn std::io::Write)| {
                f(&mut std::io::stderr())
            }),
            interrupt: Cancel::new(),
            stop: AtomicBool::new(false),
            status: Mutex::new(RunStatus::Completed),
            counts: Mutex::new(Counts::default()),
            abort_after,
            on_streak,
            streak_limit: 100,
            pause: RwLock::new(()),
            cancel: watch::Sender::new(false),
            models,
            datasets,
            cases,
            live: true,
        }
    }

    /// Whether the run's calls go live (`record`, `auto`, `live`) or only replay: a replay
    /// never pauses for failures in a row.
    pub fn with_live_calls(mut self, live: bool) -> Control {
        self.live = live;
        self
    }

    /// Interrupts the run when `cancel` trips (see [`Control::interrupted`]).
    pub fn with_cancel(mut self, cancel: Cancel) -> Control {
        self.interrupt = cancel;
        self
    }

    /// Resolves when the caller's token trips (at once if it already has).
    pub async fn interrupted(&self) {
        self.interrupt.cancelled().await
    }

    /// Prints notices through `quiet` (see [`Quiet`]).
    pub fn with_quiet(mut self, quiet: Quiet) -> Control {
        self.quiet = quiet;
        self
    }

    /// Writes a line to stderr with the progress bars out of the way, scrubbed (a provider's
    /// message may quote the key it was sent) and its control characters shown.
    pub fn notice(&self, line: &str) {
        let line = crate::secrets::scrub(line);
        let line = crate::text::visible(&line);
        (self.quiet)(&mut |w: &mut dyn std::io::Write| {
            let _ = writeln!(w, "{line}");
        });
    }

    /// How the run ends so far: completed, or why it stopped (the first reason wins).
    pub fn status(&self) -> RunStatus {
        *self
            .status
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether the run is stopping: no case starts any more.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    fn halt(&self, status: RunStatus) {
        let mut s = self
            .status
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if *s == RunStatus::Completed {
            *s = status;
        }
        self.stop.store(true, Ordering::SeqCst);
    }

    /// The caller's token tripped (Ctrl-C or SIGTERM in the CLI): start nothing more,
    /// cancel what is in flight.
    pub fn interrupt(&self) {
        self.halt(RunStatus::Interrupted);
        self.cancel.send_replace(true);
    }

    /// Resolves when in-flight cases must be cancelled.
    pub async fn cancelled(&self) {
        let mut rx = self.cancel.subscribe();
        let _ = rx.wait_for(|c| *c).await;
    }

    /// Whether a case may start: waits while the run is paused to ask, then says no once
    /// the run is stopping.
    pub async fn may_start(&self) -> bool {
        let _open = self.pause.read().await;
        !self.stopped()
    }

    /// Counts a finished case; may stop the run (abort_after) or pause it to ask.
    pub async fn finished(&self, model: &str, dataset: &str, r: &CaseResult) {
        let failed = r.error.is_some() || r.reply_error.is_some();
        let (abort, streak) = {
            let mut c = self
                .counts
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            c.finished += 1;
            if failed {
                c.failures += 1;
            }
            // Only live calls make a streak: a replay's misses never pause the run.
            if failed && self.live {
                c.in_a_row += 1;
                let msg = r
                    .error
                    .as_ref()
                    .map(|e| e.message.clone())
                    .or_else(|| r.reply_error.clone())
                    .unwrap_or_default();
                c.streak
                    .push((model.to_string(), dataset.to_string(), r.case.clone(), msg));
            } else {
                c.in_a_row = 0;
                c.streak.clear();
            }
            let abort = self.abort_after.and_then(|a| {
                let pct = 100.0 * c.failures as f64 / c.finished as f64;
                let over = c.failures >= a.total && a.percent.is_none_or(|p| pct >= p);
                over.then(|| {
                    format!(
                        "errors.abort_after: {} of {} finished calls failed ({pct:.0}%); stopped starting calls",
                        c.failures, c.finished
                    )
                })
            });
            let streak = if self.live && c.in_a_row >= self.streak_limit {
                c.in_a_row = 0;
                Some(std::mem::take(&mut c.streak))
            } else {
                None
            };
            (abort, streak)
        };
        if let Some(m) = abort {
            self.notice(&format!("error: {m}"));
            // The notice said why; the run keeps only that it was aborted.
            self.halt(RunStatus::Aborted);
            return;
        }
        if let Some(streak) = streak
            && !self.stopped()
        {
            let _hold = self.pause.write().await;
            self.notice(&self.describe(&streak));
            let go_on = match self.on_streak {
                OnStreak::GoOn => {
                    self.notice("going on (--yes)");
                    true
                }
                OnStreak::Ask if std::io::stdin().is_terminal() => ask(self.quiet.clone()).await,
                OnStreak::Ask => {
                    self.notice(
                        "stopping: stdin is not a terminal, so nobody can be asked; pass --yes to keep going"
                    );
                    false
                }
            };
            if !go_on {
                self.halt(RunStatus::Aborted);
            }
        }
    }

    fn describe(&self, streak: &[(String, String, String, String)]) -> String {
        let mut messages: BTreeMap<&str, usize> = BTreeMap::new();
        for (_, _, _, m) in streak {
            *messages.entry(m.lines().next().unwrap_or("")).or_default() += 1;
        }
        let set = |f: fn(&(String, String, String, String)) -> &String| -> Vec<String> {
            let mut v: Vec<String> = streak.iter().map(|s| f(s).clone()).collect();
            v.sort();
            v.dedup();
            v
        };
        let models = set(|s| &s.0);
        let datasets = set(|s| &s.1);
        // Cases are named `dataset/id`: the same id may stand in several datasets.
        let mut cases: Vec<String> = streak.iter().map(|s| format!("{}/{}", s.1, s.2)).collect();
        cases.sort();
        cases.dedup();
        let name = |found: &[String], all: &[String]| {
            if found.len() == all.len() && all.len() > 1 {
                "all".to_string()
            } else {
                found.join(", ")
            }
        };
        let mut out = format!(
            "warning: {} calls in a row failed; the run is paused\n",
            streak.len()
        );
        for (m, n) in messages.iter().take(5) {
            out.push_str(&format!("  {n} × {m}\n"));
        }
        out.push_str(&format!("  models: {}\n", name(&models, &self.models)));
        out.push_str(&format!(
            "  datasets: {}\n",
            name(&datasets, &self.datasets)
        ));
        if cases.len() == self.cases && self.cases > 1 {
            out.push_str("  cases: all");
            return out;
        }
        let shown: Vec<&String> = cases.iter().take(10).collect();
        out.push_str(&format!(
            "  cases: {}{}",
            shown
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            if cases.len() > 10 {
                format!(" and {} more", cases.len() - 10)
            } else {
                String::new()
            }
        ));
        out
    }
}

async fn ask(quiet: Quiet) -> bool {
    tokio::task::spawn_blocking(move || {
        let mut yes = false;
        quiet(&mut |w: &mut dyn std::io::Write| {
            let _ = write!(
                w,
                "keep going? another 100 failures in a row will ask again [y/N] "
            );
            let _ = w.flush();
            let mut line = String::new();
            yes = std::io::stdin().read_line(&mut line).is_ok()
                && matches!(line.trim(), "y" | "Y" | "yes");
        });
        yes
    })
    .await
    .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancel_token_wakes_every_waiter_and_stays_tripped() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let token = Cancel::new();
        assert!(!token.is_cancelled());
        let clone = token.clone();
        rt.block_on(async {
            let waiters: Vec<_> = (0..3)
                .map(|_| {
                    let t = clone.clone();
                    tokio::spawn(async move { t.cancelled().await })
                })
                .collect();
            tokio::task::yield_now().await;
            token.cancel();
            for w in waiters {
                tokio::time::timeout(std::time::Duration::from_secs(5), w)
                    .await
                    .expect("woken")
                    .expect("joined");
            }
            // Tripped before anyone waits: resolves at once.
            tokio::time::timeout(std::time::Duration::from_secs(5), clone.cancelled())
                .await
                .expect("at once");
        });
        assert!(clone.is_cancelled());
    }

    #[test]
    fn a_tripped_token_interrupts_the_run_it_controls() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let cancel = Cancel::new();
        let control =
            Control::new(None, OnStreak::GoOn, vec![], vec![], 0).with_cancel(cancel.clone());
        cancel.cancel();
        rt.block_on(async {
            tokio::time::timeout(std::time::Duration::from_secs(5), control.interrupted())
                .await
                .expect("the token reaches the control");
        });
    }
}
