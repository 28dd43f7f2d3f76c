//! The process environment: every variable evals reads, named once ([`EnvVars`], each
//! documented; the README's table of variables is this list), and the one place the
//! process's variables and command line are read. No other file of `src/` calls
//! `std::env::var`, `var_os`, `vars` or `args` (a test greps for them).
//!
//! The library reads the environment only through an [`Environment`] its caller passes
//! (`RunOptions::env`): the CLI builds [`Environment::from_process`] at its start; a library
//! caller builds its own, or keeps [`Environment::default`], which reads nothing and asks
//! `git` nothing (no CI, no redirects, the real backoff, no branch or commit, no argv, no
//! API key from the process: only the suite's `env_files`).
//!
//! Two reads stay where they are, through functions of this module, because they are not
//! settings: the workers' allow-listed environment ([`process_vars`]: a worker inherits
//! `PATH`, `HOME`, `LC_*`… and what `adapter.pass_env` names, and `PATH` is searched for its
//! program: [`process_var_os`]), and the egress scrubber's scan of secret-named variables
//! (every value that could leak is hidden, whether or not the run uses it).

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::sync::Arc;

/// Every environment variable evals reads, by name. The README's table lists exactly
/// these (a test holds the two equal). Variables a suite names itself (`api_key_env`,
/// `adapter.upstreams.*.key_env`, `adapter.pass_env`) are read too, like the ones here.
#[derive(Debug, Clone, Copy)]
pub struct EnvVars;

impl EnvVars {
    // evals' own.

    /// The cassette mode of `run`, `compare`, `record` and `check` when `--cassettes` is not
    /// given: `replay`, `record`, `auto` or `live`.
    pub const EVALS_CASSETTES: &'static str = "EVALS_CASSETTES";
    /// The history store when `--history` is not given: a SQLite file or a `postgres://`
    /// URL.
    pub const EVALS_HISTORY: &'static str = "EVALS_HISTORY";
    /// The branch a run is recorded under, over what CI or git says (`--branch` beats it).
    pub const EVALS_BRANCH: &'static str = "EVALS_BRANCH";
    /// `FROM=TO,...`: a live request whose URL starts with `FROM` goes to `TO` instead (the
    /// cassette keeps the canonical URL), to record against a local server.
    pub const EVALS_REDIRECT: &'static str = "EVALS_REDIRECT";
    /// A factor on the retry backoff (a test knob: `0.01` waits 10 ms, not 1 s).
    pub const EVALS_BACKOFF_SCALE: &'static str = "EVALS_BACKOFF_SCALE";
    /// The command that opens the HTML report (`--open`, `results.display: browser`), in
    /// place of `xdg-open` or `open`.
    pub const EVALS_OPENER: &'static str = "EVALS_OPENER";
    /// The PostgreSQL history's `statement_timeout` when the URL sets none (`30s`, `0` for
    /// none).
    pub const EVALS_PG_STATEMENT_TIMEOUT: &'static str = "EVALS_PG_STATEMENT_TIMEOUT";

    // CI.

    /// Set (not empty, `0` or `false`): on CI. `auto` cassettes then replay, and no browser
    /// opens.
    pub const CI: &'static str = "CI";
    /// GitHub Actions: a pull request's head branch (the run's branch).
    pub const GITHUB_HEAD_REF: &'static str = "GITHUB_HEAD_REF";
    /// GitHub Actions: the branch or tag pushed (the run's branch outside a pull request).
    pub const GITHUB_REF_NAME: &'static str = "GITHUB_REF_NAME";
    /// GitHub Actions: the commit (the run's commit).
    pub const GITHUB_SHA: &'static str = "GITHUB_SHA";
    /// `evals comment`: the token that may write the pull request's comment.
    pub const GITHUB_TOKEN: &'static str = "GITHUB_TOKEN";
    /// `evals comment`: the repository, `owner/name` (`--repo` beats it).
    pub const GITHUB_REPOSITORY: &'static str = "GITHUB_REPOSITORY";
    /// `evals comment`: the API's root (GitHub Enterprise); default `https://api.github.com`.
    pub const GITHUB_API_URL: &'static str = "GITHUB_API_URL";
    /// `evals comment`: the event file, which names the pull request (`--pr` beats it) and
    /// a fork's head.
    pub const GITHUB_EVENT_PATH: &'static str = "GITHUB_EVENT_PATH";
    /// `check`: the job summary file its Markdown is appended to.
    pub const GITHUB_STEP_SUMMARY: &'static str = "GITHUB_STEP_SUMMARY";
    /// `check --shard`, `merge`: the workflow run, with the attempt the default run group.
    pub const GITHUB_RUN_ID: &'static str = "GITHUB_RUN_ID";
    /// `check --shard`, `merge`: the attempt of the workflow run (a re-run is a new one).
    pub const GITHUB_RUN_ATTEMPT: &'static str = "GITHUB_RUN_ATTEMPT";

    // The terminal and the desktop.

    /// Set (not empty): no color (`--color auto`).
    pub const NO_COLOR: &'static str = "NO_COLOR";
    /// `dumb`: no color (`--color auto`).
    pub const TERM: &'static str = "TERM";
    /// The width tables fit in, over the terminal's.
    pub const COLUMNS: &'static str = "COLUMNS";
    /// An X display: the HTML report can be opened with `xdg-open`.
    pub const DISPLAY: &'static str = "DISPLAY";
    /// A Wayland display: the HTML report can be opened with `xdg-open`.
    pub const WAYLAND_DISPLAY: &'static str = "WAYLAND_DISPLAY";

    // The history.

    /// The history when neither `--history`, `EVALS_HISTORY` nor `history.url` says, if it
    /// is a `postgres://` URL.
    pub const DATABASE_URL: &'static str = "DATABASE_URL";
    /// The PostgreSQL password when the URL has none.
    pub const PGPASSWORD: &'static str = "PGPASSWORD";
    /// The PostgreSQL connect timeout in seconds when the URL sets none.
    pub const PGCONNECT_TIMEOUT: &'static str = "PGCONNECT_TIMEOUT";

    // The providers' API keys (a provider section's `api_key_env` names another).

    /// `openai:` (chat and Responses APIs).
    pub const OPENAI_API_KEY: &'static str = "OPENAI_API_KEY";
    /// `openrouter:`.
    pub const OPENROUTER_API_KEY: &'static str = "OPENROUTER_API_KEY";
    /// `anthropic:`.
    pub const ANTHROPIC_API_KEY: &'static str = "ANTHROPIC_API_KEY";
    /// `gemini:`.
    pub const GEMINI_API_KEY: &'static str = "GEMINI_API_KEY";
    /// `gemini:`, when `GEMINI_API_KEY` is unset (the name Google's SDKs also read).
    pub const GOOGLE_API_KEY: &'static str = "GOOGLE_API_KEY";
    /// `typesafe:`.
    pub const TYPESAFE_API_KEY: &'static str = "TYPESAFE_API_KEY";

    // The trackers (read like the keys: the environment, then the suite's `env_files`).

    /// The `otlp` tracker's OTLP/HTTP root (traces go to `/v1/traces` under it).
    pub const OTEL_EXPORTER_OTLP_ENDPOINT: &'static str = "OTEL_EXPORTER_OTLP_ENDPOINT";
    /// The `otlp` tracker's traces URL, whole (over the root).
    pub const OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: &'static str =
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
    /// The `otlp` tracker's headers, `name=value,...`.
    pub const OTEL_EXPORTER_OTLP_HEADERS: &'static str = "OTEL_EXPORTER_OTLP_HEADERS";
    /// The `logfire` tracker's write token.
    pub const LOGFIRE_TOKEN: &'static str = "LOGFIRE_TOKEN";
    /// The `logfire` tracker's root, over its default.
    pub const LOGFIRE_BASE_URL: &'static str = "LOGFIRE_BASE_URL";
    /// The `braintrust` tracker's API key.
    pub const BRAINTRUST_API_KEY: &'static str = "BRAINTRUST_API_KEY";
    /// The `braintrust` tracker's API root, over its default.
    pub const BRAINTRUST_API_URL: &'static str = "BRAINTRUST_API_URL";
    /// The `braintrust` tracker's project, by id (over `--project` and `project:`).
    pub const BRAINTRUST_PROJECT_ID: &'static str = "BRAINTRUST_PROJECT_ID";

    // Workers.

    /// Searched for an exec adapter's or scorer's program (and passed to the worker, with
    /// the rest of the allow-list).
    pub const PATH: &'static str = "PATH";
}

/// The environment a run reads: what the library needs of the process, read once by the
/// caller. [`Environment::default`] reads nothing; the CLI passes
/// [`Environment::from_process`].
#[derive(Clone, Default)]
pub struct Environment {
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
    /// Where a run's branch and commit come from: CI's variables, and whether `git` is asked
    /// for what they leave out.
    pub git: GitSource,
    /// The command line a run records in its info (`RunInfo::argv`). Default: none.
    pub argv: Vec<String>,
    /// The PostgreSQL history's variables, used when its URL leaves them out.
    pub postgres: PostgresVars,
    /// Where other variables are looked up: the API keys, the trackers' settings, the
    /// `evals comment` and terminal variables of the CLI. Default: nowhere.
    vars: Vars,
}

/// An older name of [`Environment`].
pub type Env = Environment;

/// Where a run's git branch and commit come from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GitSource {
    /// The branch CI names: `EVALS_BRANCH`, else `GITHUB_HEAD_REF` (a pull request's
    /// branch), else `GITHUB_REF_NAME`.
    pub branch: Option<String>,
    /// The commit CI names: `GITHUB_SHA`.
    pub commit: Option<String>,
    /// Whether to ask `git` (`git rev-parse`, in the project) for what CI leaves out.
    /// Default: no (no process is started).
    pub ask_git: bool,
}

/// The PostgreSQL history's variables (as libpq reads its own), used when the URL leaves
/// them out. Its `Debug` never shows the password.
#[derive(Clone, Default, PartialEq)]
pub struct PostgresVars {
    /// `PGPASSWORD`.
    pub password: Option<String>,
    /// `PGCONNECT_TIMEOUT`, as written (checked when a store opens).
    pub connect_timeout: Option<String>,
    /// `EVALS_PG_STATEMENT_TIMEOUT`, as written (checked when a store opens).
    pub statement_timeout: Option<String>,
}

impl fmt::Debug for PostgresVars {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresVars")
            .field("password", &self.password.as_ref().map(|_| "[set]"))
            .field("connect_timeout", &self.connect_timeout)
            .field("statement_timeout", &self.statement_timeout)
            .finish()
    }
}

impl PostgresVars {
    /// The variable `name` of these (`PGPASSWORD`, `PGCONNECT_TIMEOUT`,
    /// `EVALS_PG_STATEMENT_TIMEOUT`), when set and not blank.
    pub fn get(&self, name: &str) -> Option<String> {
        let v = match name {
            EnvVars::PGPASSWORD => &self.password,
            EnvVars::PGCONNECT_TIMEOUT => &self.connect_timeout,
            EnvVars::EVALS_PG_STATEMENT_TIMEOUT => &self.statement_timeout,
            _ => return None,
        };
        v.clone().filter(|v| !v.trim().is_empty())
    }
}

/// A lookup of variables by name.
type Lookup = Arc<dyn Fn(&str) -> Option<OsString> + Send + Sync>;

/// Where [`Environment::var`] looks: nowhere, the process, or a caller's lookup.
#[derive(Clone, Default)]
enum Vars {
    #[default]
    Nowhere,
    Process,
    Given(Lookup),
}

impl fmt::Debug for Environment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let vars = match self.vars {
            Vars::Nowhere => "nowhere",
            Vars::Process => "the process",
            Vars::Given(_) => "the caller's lookup",
        };
        f.debug_struct("Environment")
            .field("ci", &self.ci)
            .field("redirects", &self.redirects)
            .field("backoff_scale", &self.backoff_scale)
            .field("git", &self.git)
            .field("argv", &self.argv)
            .field("postgres", &self.postgres)
            .field("vars", &vars)
            .finish()
    }
}

impl Environment {
    /// The environment of this process: its variables, its command line, and `git` asked
    /// for the branch and commit CI does not name.
    pub fn from_process() -> Environment {
        let mut env = Environment::read(&|name| std::env::var_os(name));
        env.argv = std::env::args_os()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        env.vars = Vars::Process;
        env
    }

    /// The environment `get` answers (a test's, or a caller's own), `git` asked as
    /// [`Environment::from_process`] does; no argv.
    pub fn from_vars(
        get: impl Fn(&str) -> Option<OsString> + Send + Sync + 'static,
    ) -> Environment {
        let mut env = Environment::read(&get);
        env.vars = Vars::Given(Arc::new(get));
        env
    }

    fn read(get: &dyn Fn(&str) -> Option<OsString>) -> Environment {
        let text = |name: &str| {
            get(name)
                .and_then(|v| v.into_string().ok())
                .filter(|v| !v.trim().is_empty())
        };
        Environment {
            ci: is_ci(get(EnvVars::CI).as_deref()),
            redirects: text(EnvVars::EVALS_REDIRECT)
                .map(|v| parse_redirects(&v))
                .unwrap_or_default(),
            backoff_scale: text(EnvVars::EVALS_BACKOFF_SCALE)
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|v| v.is_finite() && *v >= 0.0),
            git: GitSource {
                branch: text(EnvVars::EVALS_BRANCH)
                    .or_else(|| text(EnvVars::GITHUB_HEAD_REF))
                    .or_else(|| text(EnvVars::GITHUB_REF_NAME)),
                commit: text(EnvVars::GITHUB_SHA),
                ask_git: true,
            },
            argv: Vec::new(),
            postgres: PostgresVars {
                password: text(EnvVars::PGPASSWORD),
                connect_timeout: text(EnvVars::PGCONNECT_TIMEOUT),
                statement_timeout: text(EnvVars::EVALS_PG_STATEMENT_TIMEOUT),
            },
            vars: Vars::Nowhere,
        }
    }

    /// This environment, its other variables (API keys, trackers' settings) looked up with
    /// `get`: a library caller hands a run its keys without setting process variables.
    pub fn with_vars(
        mut self,
        get: impl Fn(&str) -> Option<OsString> + Send + Sync + 'static,
    ) -> Environment {
        self.vars = Vars::Given(Arc::new(get));
        self
    }

    /// The variable `name`, when set, not empty and Unicode; `None` from an environment
    /// that reads nothing.
    pub fn var(&self, name: &str) -> Option<String> {
        self.var_os(name)
            .and_then(|v| v.into_string().ok())
            .filter(|v| !v.is_empty())
    }

    /// The variable `name` as the system holds it, when set (even empty).
    pub fn var_os(&self, name: &str) -> Option<OsString> {
        match &self.vars {
            Vars::Nowhere => None,
            Vars::Process => std::env::var_os(name),
            Vars::Given(get) => get(name),
        }
    }
}

/// The process's variable `name`, when set (even empty): for the reads that are not a
/// run's settings (see the module docs), never for a setting.
pub fn process_var_os(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}

/// Every variable of the process: what a worker's allow-list and the egress scrubber's
/// scan filter (see the module docs), never read for a setting.
pub fn process_vars() -> std::env::VarsOs {
    std::env::vars_os()
}

/// The process's command line, as the binaries' `main` hands it to the CLI.
pub fn process_args() -> std::env::ArgsOs {
    std::env::args_os()
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

    fn env(vars: &[(&str, &str)]) -> Environment {
        let vars: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        Environment::from_vars(move |name| vars.get(name).cloned())
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
        let none = env(&[]);
        assert!(!none.ci && none.redirects.is_empty() && none.backoff_scale.is_none());
    }

    #[test]
    fn the_branch_comes_from_evals_branch_then_the_pull_request_then_the_ref() {
        let branch = |vars: &[(&str, &str)]| env(vars).git.branch;
        assert_eq!(branch(&[]), None);
        assert_eq!(
            branch(&[("GITHUB_REF_NAME", "main")]).as_deref(),
            Some("main")
        );
        assert_eq!(
            branch(&[("GITHUB_REF_NAME", "7/merge"), ("GITHUB_HEAD_REF", "fix")]).as_deref(),
            Some("fix")
        );
        assert_eq!(
            branch(&[("GITHUB_HEAD_REF", "fix"), ("EVALS_BRANCH", "mine")]).as_deref(),
            Some("mine")
        );
        // A blank variable is unset.
        assert_eq!(branch(&[("GITHUB_HEAD_REF", "  ")]), None);
        let e = env(&[("GITHUB_SHA", "abc123")]);
        assert_eq!(e.git.commit.as_deref(), Some("abc123"));
        assert!(e.git.ask_git, "a read environment asks git");
    }

    #[test]
    fn the_default_environment_reads_nothing_and_asks_git_nothing() {
        let e = Environment::default();
        assert!(!e.ci && e.redirects.is_empty() && e.backoff_scale.is_none());
        assert_eq!(e.git, GitSource::default());
        assert!(!e.git.ask_git);
        assert!(e.argv.is_empty());
        assert_eq!(e.postgres, PostgresVars::default());
        // PATH is set in any test process: the default environment still does not see it.
        assert!(process_var_os("PATH").is_some());
        assert_eq!(e.var("PATH"), None);
        assert!(Environment::from_process().var("PATH").is_some());
    }

    #[test]
    fn the_postgres_password_is_read_and_never_shown() {
        let e = env(&[("PGPASSWORD", "hunter2-secret"), ("PGCONNECT_TIMEOUT", "4")]);
        assert_eq!(
            e.postgres.get("PGPASSWORD").as_deref(),
            Some("hunter2-secret")
        );
        assert_eq!(e.postgres.get("PGCONNECT_TIMEOUT").as_deref(), Some("4"));
        assert_eq!(e.postgres.get("EVALS_PG_STATEMENT_TIMEOUT"), None);
        let shown = format!("{e:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
    }

    #[test]
    fn a_callers_lookup_answers_the_other_variables() {
        let e = Environment::default().with_vars(|n| (n == "MY_KEY").then(|| "k-123".into()));
        assert_eq!(e.var("MY_KEY").as_deref(), Some("k-123"));
        assert_eq!(e.var("OTHER"), None);
        // An empty variable is unset for `var`, set for `var_os`.
        let e = env(&[("EMPTY", "")]);
        assert_eq!(e.var("EMPTY"), None);
        assert_eq!(e.var_os("EMPTY"), Some(OsString::new()));
    }
}
