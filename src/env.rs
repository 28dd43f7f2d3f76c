//! The process environment, read once: the CLI builds an [`Env`] at its start and passes it
//! down, so the library's behaviour depends on what it is handed, never on the process's
//! variables (a library caller builds its own, or uses [`Env::default`]: not CI, no
//! redirects, the real backoff).
//!
//! What is read here: `CI`, `EVALS_REDIRECT`, `EVALS_BACKOFF_SCALE`. Read elsewhere, on
//! purpose: the API keys (by the suite, which also reads them from its `env_files`), the
//! `GITHUB_*` variables (by the GitHub helper and git detection), the trackers' variables
//! (`BRAINTRUST_*`, `LOGFIRE_*`, `OTEL_EXPORTER_OTLP_*`: by `crate::tracker`, through the
//! suite, so `env_files` may hold them like the API keys), `NO_COLOR`/`TERM`/`COLUMNS`
//! (by the CLI's output), `EVALS_CASSETTES`/`EVALS_HISTORY`/`EVALS_LINEUP` (by clap, as
//! flag defaults), and `PGPASSWORD`/`PGCONNECT_TIMEOUT`/`EVALS_PG_STATEMENT_TIMEOUT` (by the
//! PostgreSQL store, as libpq reads its own, when the URL leaves them out).

use std::ffi::{OsStr, OsString};

/// What the run path reads from the environment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Env {
    /// `CI` is set, to anything but empty, `0` or `false` (insta's rule): `auto` then acts
    /// as `replay`, so CI never writes a cassette.
    pub ci: bool,
    /// `EVALS_REDIRECT=FROM=TO,...`: a live request whose URL starts with `FROM` is sent to
    /// `TO` instead (the canonical URL stays in the cassette and its fingerprint), to record
    /// against a local server.
    pub redirects: Vec<(String, String)>,
    /// `EVALS_BACKOFF_SCALE`: a test knob multiplying the retry backoff (the tests use
    /// 0.01, so a retried call waits 10 ms, not 1 s); `Retry-After` is honoured as sent.
    /// `None` when unset or not a finite number ≥ 0.
    pub backoff_scale: Option<f64>,
}

impl Env {
    /// The environment of this process.
    pub fn from_process() -> Env {
        Env::from_vars(|name| std::env::var_os(name))
    }

    /// The environment `get` answers (a test's, or a caller's own).
    pub fn from_vars(get: impl Fn(&str) -> Option<OsString>) -> Env {
        let text = |name: &str| get(name).and_then(|v| v.into_string().ok());
        Env {
            ci: is_ci(get("CI").as_deref()),
            redirects: text("EVALS_REDIRECT")
                .map(|v| parse_redirects(&v))
                .unwrap_or_default(),
            backoff_scale: text("EVALS_BACKOFF_SCALE")
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|v| v.is_finite() && *v >= 0.0),
        }
    }
}

/// Whether a `CI` value means CI: set, and not empty, `0` or `false`.
fn is_ci(value: Option<&OsStr>) -> bool {
    value.is_some_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// `FROM=TO` pairs separated by commas; a pair without `=` is skipped.
fn parse_redirects(value: &str) -> Vec<(String, String)> {
    value
        .split(',')
        .filter_map(|pair| {
            pair.split_once('=')
                .map(|(a, b)| (a.trim().to_string(), b.trim().to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn env(vars: &[(&str, &str)]) -> Env {
        let vars: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        Env::from_vars(|name| vars.get(name).cloned())
    }

    #[test]
    fn ci_is_set_unless_empty_zero_or_false() {
        assert!(!env(&[]).ci);
        for off in ["", "0", "false"] {
            assert!(!env(&[("CI", off)]).ci, "{off:?}");
        }
        for on in ["true", "1", "yes"] {
            assert!(env(&[("CI", on)]).ci, "{on:?}");
        }
    }

    #[test]
    fn redirects_and_the_backoff_scale_are_read_once_here() {
        let e = env(&[
            (
                "EVALS_REDIRECT",
                "https://a/v1=http://127.0.0.1:9/v1, nonsense ,b=c",
            ),
            ("EVALS_BACKOFF_SCALE", "0.01"),
        ]);
        assert_eq!(
            e.redirects,
            [
                (
                    "https://a/v1".to_string(),
                    "http://127.0.0.1:9/v1".to_string()
                ),
                ("b".to_string(), "c".to_string())
            ]
        );
        assert_eq!(e.backoff_scale, Some(0.01));
        for bad in ["-1", "NaN", "inf", "fast"] {
            assert_eq!(
                env(&[("EVALS_BACKOFF_SCALE", bad)]).backoff_scale,
                None,
                "{bad}"
            );
        }
        assert_eq!(env(&[]), Env::default());
    }
}
