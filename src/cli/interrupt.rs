//! Ctrl-C and SIGTERM for every command: the CLI's opt-in (the library installs no signal
//! handler; it takes a [`Cancel`] token).
//!
//! [`install`] runs once at start-up: a thread of its own waits for SIGINT or SIGTERM. The
//! first trips the process's token, which a run (its partial results reported and stored
//! as `interrupted`) and the dashboard (its server stopped) act on; whatever the command is
//! blocked on instead (a database that never answers, an API call), a watchdog ends the
//! process [`GRACE`] after the signal, exit 130, once the workers' process groups are
//! killed. A second signal ends it at once. A command that returns after the signal exits
//! 130 too ([`exit_code`]).

use std::sync::OnceLock;
use std::time::Duration;

use super::exit;
use llm_evals::runner::Cancel;

/// How long a command has to end by itself after Ctrl-C (its report written, its run
/// stored) before the process is ended: under the 2 s the docs promise, with room for
/// the process to go.
pub(crate) const GRACE: Duration = Duration::from_millis(1500);

static TOKEN: OnceLock<Cancel> = OnceLock::new();

/// Installs the SIGINT/SIGTERM handling (once per process) and returns the token it trips.
/// The handlers are in place when this returns, so an early signal never kills the
/// process before it can clean up. Without a way to listen (no signal support), the token
/// is returned untripped and the default signal actions stay.
pub(crate) fn install() -> Cancel {
    TOKEN
        .get_or_init(|| {
            let cancel = Cancel::new();
            listen(cancel.clone());
            cancel
        })
        .clone()
}

/// The process's token ([`install`]ed at start-up; a fresh one if it was not).
pub(crate) fn token() -> Cancel {
    TOKEN.get().cloned().unwrap_or_default()
}

/// The exit code a command ends with: 130 once interrupted, whatever it returned.
pub(crate) fn exit_code(code: i32) -> i32 {
    match TOKEN.get() {
        Some(t) if t.is_cancelled() => exit::INTERRUPTED,
        _ => code,
    }
}

fn listen(cancel: Cancel) {
    let (ready, registered) = std::sync::mpsc::channel::<()>();
    let spawned = std::thread::Builder::new()
        .name("evals-signals".into())
        .spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                #[cfg(unix)]
                let (mut int, mut term) = {
                    use tokio::signal::unix::{SignalKind, signal};
                    match (
                        signal(SignalKind::interrupt()),
                        signal(SignalKind::terminate()),
                    ) {
                        (Ok(int), Ok(term)) => (int, term),
                        _ => return,
                    }
                };
                let _ = ready.send(());
                let mut first = true;
                loop {
                    #[cfg(unix)]
                    tokio::select! {
                        _ = int.recv() => {}
                        _ = term.recv() => {}
                    }
                    #[cfg(not(unix))]
                    if tokio::signal::ctrl_c().await.is_err() {
                        return;
                    }
                    if !first {
                        end_now();
                    }
                    first = false;
                    cancel.cancel();
                    tokio::spawn(async {
                        tokio::time::sleep(GRACE).await;
                        end_now();
                    });
                }
            })
        });
    // The handlers are in place (or could not be, and the default actions stay) before
    // the command starts: the thread says so, or ends without a word.
    if spawned.is_ok() {
        let _ = registered.recv();
    }
}

/// Ends the process with 130: the workers' process groups killed first (they run in
/// groups of their own, which a terminal's Ctrl-C does not reach), then a last word.
fn end_now() -> ! {
    llm_evals::runner::kill_workers();
    let said = "interrupted: stopped\n";
    // Straight to the descriptor: the command may hold stderr's lock (blocked writing to a
    // pipe nobody reads), and the process must end all the same.
    #[cfg(unix)]
    // SAFETY: write(2) on fd 2 from a valid buffer of that length; it only copies it.
    unsafe {
        libc::write(2, said.as_ptr().cast(), said.len());
    }
    #[cfg(not(unix))]
    eprint!("{said}");
    std::process::exit(exit::INTERRUPTED)
}
