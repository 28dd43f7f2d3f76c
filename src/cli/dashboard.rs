//! `evals dashboard`: serves the history read-only until Ctrl-C or SIGTERM (then exit 130,
//! as any interrupted command) (`llm_evals::dashboard`), the URL on stdout's first line.

use super::args::{DashboardArgs, Global};
use super::exit;
use super::output::Out;
use llm_evals::error::{Error, Result};

/// Opens the history as the other history commands find it and serves it.
pub(crate) fn run(
    g: &Global,
    a: &DashboardArgs,
    env: &llm_evals::env::Env,
    out: &Out,
) -> Result<i32> {
    let at = super::history::history_path(g, a.history.as_deref(), env, out)?;
    if !at.exists() {
        return Err(Error::Usage(format!(
            "{}: no history here yet; run `evals check` (or any run) first, or pass --history PATH",
            at.shown()
        )));
    }
    let mut options = llm_evals::dashboard::Options::default();
    options.bind = a.bind;
    options.port = a.port;
    options.baseline = a.baseline.clone();
    options.limits.request_bytes = a.max_request_bytes;
    options.limits.run_bytes = a.max_run_bytes;
    options.cancel = super::interrupt::token();
    options.env = env.clone();
    llm_evals::dashboard::serve(&at, &options, |addr| {
        out.line(&format!("http://{addr}/"));
        if !addr.ip().is_loopback() {
            out.warn(&format!(
                "listening on {}: anyone who can reach this address reads the history (the dashboard has no login)",
                addr.ip()
            ));
        }
        out.note(&format!("serving {} read-only; Ctrl-C stops", at.shown()));
    })?;
    // Served until interrupted: the exit code says so (`interrupt::exit_code`).
    Ok(exit::INTERRUPTED)
}
