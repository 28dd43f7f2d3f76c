//! The library's error: what went wrong, as data a caller can match.
//!
//! [`Error`] is one enum over every subsystem's failure; [`Error::kind`] names its family
//! ([`ErrorKind`]) and [`Error::is_bad_input`] tells a problem with what the caller gave (a
//! config, a case, a cassette, a setting: fix the input) from one that happened while
//! running (a write that failed, a server that went away). The library never decides an
//! exit code: the `evals` binary maps these to its documented codes (`src/cli/exit.rs`).
//!
//! The subsystems' own error types live here, on the ground floor, so that this module
//! names nothing above it: [`CassetteError`] (re-exported by `cassette`), [`HistoryError`]
//! (`history`) and [`BaselineError`] (`gate`).

mod baseline;
mod cassette;
mod history;

use std::path::{Path, PathBuf};

pub use baseline::{BaselineError, LaterRuns};
pub use cassette::{CassetteError, SecretPlace};
pub use history::HistoryError;

/// Who a message speaks to ([`Error::message`]): a Rust caller of the library, who sets
/// options and calls functions, or a user of the `evals` command line, who passes flags and
/// runs commands. The problem is the same; the fix is said in their words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Audience {
    /// A Rust caller: settings by their option names (`tolerance`), fixes as options.
    Library,
    /// A user of `evals`: settings by their flags (`--tolerance`), fixes as commands.
    CommandLine,
}

/// A setting a caller gives the library (an option of a run, a check or a plan), as
/// messages name it: by [`Setting::name`] to a Rust caller, by [`Setting::flag`] to the
/// command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Setting {
    /// The gate's tolerance on a mean score's drop ([`crate::gate::Rules`]).
    Tolerance,
    /// The significance level of the statistical gate.
    Alpha,
    /// Tries per case.
    Repeat,
    /// Cases in flight per experiment.
    Parallelism,
    /// Experiments at a time.
    Concurrency,
    /// A run's shard, `K/N`.
    Shard,
    /// The baseline a check compares with.
    Baseline,
    /// What a check does without a usable baseline.
    MissingBaseline,
    /// The cassette mode.
    Cassettes,
    /// Where the run history is.
    History,
    /// How far (percent) an experiment's cost may rise over the baseline's.
    MaxCostIncrease,
    /// How far (percent) an experiment's tokens may rise.
    MaxTokensIncrease,
    /// How far (percent) an experiment's p50 latency may rise.
    MaxLatencyIncrease,
}

impl Setting {
    /// How a Rust caller knows it: the option's name (`tolerance`, `missing_baseline`).
    pub fn name(self) -> &'static str {
        match self {
            Setting::Tolerance => "tolerance",
            Setting::Alpha => "alpha",
            Setting::Repeat => "repeat",
            Setting::Parallelism => "parallelism",
            Setting::Concurrency => "concurrency",
            Setting::Shard => "shard",
            Setting::Baseline => "baseline",
            Setting::MissingBaseline => "missing_baseline",
            Setting::Cassettes => "cassette mode",
            Setting::History => "history",
            Setting::MaxCostIncrease => "max_cost_increase",
            Setting::MaxTokensIncrease => "max_tokens_increase",
            Setting::MaxLatencyIncrease => "max_latency_increase",
        }
    }

    /// How the `evals` command line spells it: its flag (`--tolerance`, `-p`).
    pub fn flag(self) -> &'static str {
        match self {
            Setting::Tolerance => "--tolerance",
            Setting::Alpha => "--alpha",
            Setting::Repeat => "--repeat",
            Setting::Parallelism => "-p",
            Setting::Concurrency => "-j",
            Setting::Shard => "--shard",
            Setting::Baseline => "--baseline",
            Setting::MissingBaseline => "--missing-baseline",
            Setting::Cassettes => "--cassettes",
            Setting::History => "--history",
            Setting::MaxCostIncrease => "--max-cost-increase",
            Setting::MaxTokensIncrease => "--max-tokens-increase",
            Setting::MaxLatencyIncrease => "--max-latency-increase",
        }
    }

    /// Its name for `to`.
    pub fn named(self, to: Audience) -> &'static str {
        match to {
            Audience::Library => self.name(),
            Audience::CommandLine => self.flag(),
        }
    }
}

/// The family of an [`Error`], for a caller that branches on what went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A config, case or cassette file is wrong ([`Error::Config`]).
    Config,
    /// A setting or a request that cannot be honoured ([`Error::Usage`],
    /// [`Error::Invalid`], [`Error::MissingKey`]).
    Usage,
    /// A suite input is missing or unreadable ([`Error::Input`]).
    Input,
    /// A file could not be read or written while running ([`Error::Io`]).
    Io,
    /// No usable baseline ([`Error::Baseline`]).
    Baseline,
    /// The run history ([`Error::History`]).
    History,
    /// A cassette file or a cassette mode ([`Error::Cassette`]).
    Cassette,
    /// Anything else that stopped the work ([`Error::Failed`]).
    Failed,
}

/// What went wrong, each family a variant; the message names the file (and line, key) and
/// the fix. Its `Display` speaks to a Rust caller; [`Error::message`] to either audience.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A config, case or cassette file is wrong; the message names the file and the fix.
    #[error("{0}")]
    Config(String),
    /// Something asked for that cannot be done.
    #[error("{0}")]
    Usage(String),
    /// A setting given a value that cannot be honoured: `tolerance 1.5: expected a fraction
    /// between 0 and 1` (the command line: `--tolerance 1.5: …`).
    #[error("{} {value}: {problem}", setting.name())]
    #[non_exhaustive]
    Invalid {
        /// Which setting.
        setting: Setting,
        /// The value given, as given.
        value: String,
        /// What is wrong with it, and what would do.
        problem: String,
    },
    /// An API key the run needs is not set (in the environment, nor the suite's
    /// `env_files`).
    #[error("{}", missing_key(var, needed_by, *live, Audience::Library))]
    #[non_exhaustive]
    MissingKey {
        /// The variable (`OPENAI_API_KEY`).
        var: String,
        /// Who needs it (`openai/gpt-4o-mini`, `the judge openai/gpt-4o`).
        needed_by: String,
        /// Whether only live calls need it (a replay would do without).
        live: bool,
    },
    /// No usable baseline for `check`.
    #[error(transparent)]
    Baseline(#[from] BaselineError),
    /// A run history that is not one (exit 2) or that failed while running (exit 1).
    #[error(transparent)]
    History(#[from] HistoryError),
    /// A suite input is missing or cannot be read: the config, a file it names
    /// (`scorer.schema`, `adapter.system`, `env_files`), a case file, or a file named on the
    /// command line (`--baseline run.json`, `evals render FILE`). Bad input: exit 2.
    #[error("{}", input_message(path, key.as_deref(), named_in.as_deref(), source))]
    Input {
        /// The file, as shown to the user.
        path: PathBuf,
        /// The key or flag that named the file (`scorer.schema`, `evals render FILE`), if
        /// any.
        key: Option<String>,
        /// The setting that named the file (the baseline), if that is what did; worded for
        /// the audience ([`Error::message`]).
        setting: Option<Setting>,
        /// The file holding that key (the config), if any.
        named_in: Option<String>,
        /// Why it could not be read.
        #[source]
        source: std::io::Error,
    },
    /// A file could not be read or written while running (exit 1).
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why it could not be read or written.
        #[source]
        source: std::io::Error,
    },
    /// A cassette that cannot be read or written, or a cassette mode that is no mode:
    /// bad input (exit 2) or a failure while running (exit 1), as
    /// [`CassetteError::is_bad_input`] says.
    #[error(transparent)]
    Cassette(#[from] CassetteError),
    /// Anything else that stops a command (exit 1).
    #[error("{0}")]
    Failed(String),
}

impl Error {
    /// The family this error belongs to.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Config(_) => ErrorKind::Config,
            Error::Usage(_) | Error::Invalid { .. } | Error::MissingKey { .. } => ErrorKind::Usage,
            Error::Input { .. } => ErrorKind::Input,
            Error::Io { .. } => ErrorKind::Io,
            Error::Baseline(_) => ErrorKind::Baseline,
            Error::History(_) => ErrorKind::History,
            Error::Cassette(_) => ErrorKind::Cassette,
            Error::Failed(_) => ErrorKind::Failed,
        }
    }

    /// Whether the input is at fault (a config, a case, a cassette, a history that is no
    /// history, a setting, no usable baseline): fixing what was given fixes it. Otherwise
    /// something failed while running.
    pub fn is_bad_input(&self) -> bool {
        match self {
            Error::Config(_)
            | Error::Usage(_)
            | Error::Invalid { .. }
            | Error::MissingKey { .. }
            | Error::Baseline(_)
            | Error::Input { .. } => true,
            Error::Cassette(e) => e.is_bad_input(),
            Error::History(e) => e.is_bad_input(),
            Error::Io { .. } | Error::Failed(_) => false,
        }
    }

    /// The message for `to`: a setting by its option name or its flag, a fix as an option
    /// or a command. `Display` is [`Audience::Library`]'s.
    pub fn message(&self, to: Audience) -> String {
        match self {
            Error::Invalid {
                setting,
                value,
                problem,
            } => format!("{} {value}: {problem}", setting.named(to)),
            Error::MissingKey {
                var,
                needed_by,
                live,
            } => missing_key(var, needed_by, *live, to),
            Error::Input {
                path,
                key,
                setting: Some(setting),
                named_in,
                source,
            } => input_message(
                path,
                Some(key.as_deref().unwrap_or(setting.named(to))),
                named_in.as_deref(),
                source,
            ),
            Error::Baseline(e) => e.message(to),
            Error::History(e) => e.message(to),
            Error::Cassette(e) => e.message(to),
            other => other.to_string(),
        }
    }

    /// A setting given a value that cannot be honoured ([`Error::Invalid`]).
    pub fn invalid(setting: Setting, value: impl ToString, problem: impl Into<String>) -> Self {
        Error::Invalid {
            setting,
            value: value.to_string(),
            problem: problem.into(),
        }
    }

    /// An API key `var` that `needed_by` needs ([`Error::MissingKey`]); `live`: for live
    /// calls only.
    pub fn missing_key(var: impl Into<String>, needed_by: impl Into<String>, live: bool) -> Self {
        Error::MissingKey {
            var: var.into(),
            needed_by: needed_by.into(),
            live,
        }
    }

    /// A file `path` that could not be read or written while running (exit 1); a suite input
    /// the user gave is an [`Error::input`] (exit 2).
    pub fn io(path: impl AsRef<Path>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.as_ref().to_path_buf(),
            source,
        }
    }

    /// A suite input `path` (as shown) that could not be read.
    pub fn input(path: impl AsRef<Path>, source: std::io::Error) -> Self {
        Error::Input {
            path: path.as_ref().to_path_buf(),
            key: None,
            setting: None,
            named_in: None,
            source,
        }
    }

    /// Says which key (or flag) named the input that could not be read, and in which file
    /// (`None` for a flag); any other error is returned as it is.
    pub fn named_by(self, by: &str, file: Option<&str>) -> Self {
        match self {
            Error::Input { path, source, .. } => Error::Input {
                path,
                key: Some(by.to_string()),
                setting: None,
                named_in: file.map(str::to_string),
                source,
            },
            other => other,
        }
    }

    /// Says which setting named the input that could not be read (the baseline); any other
    /// error is returned as it is.
    pub fn named_by_setting(self, setting: Setting) -> Self {
        match self {
            Error::Input { path, source, .. } => Error::Input {
                path,
                key: None,
                setting: Some(setting),
                named_in: None,
                source,
            },
            other => other,
        }
    }
}

/// `OPENAI_API_KEY is not set: openai/gpt-4o needs it for live calls (…)`.
fn missing_key(var: &str, needed_by: &str, live: bool, to: Audience) -> String {
    match (live, to) {
        (false, Audience::CommandLine) => {
            format!("{var} is not set: {needed_by} needs it (export {var}=...)")
        }
        (false, Audience::Library) => format!(
            "{var} is not set: {needed_by} needs it (set it in the environment or the suite's env_files)"
        ),
        (true, Audience::CommandLine) => format!(
            "{var} is not set: {needed_by} needs it for live calls (export {var}=..., or replay recorded cassettes with --cassettes replay)"
        ),
        (true, Audience::Library) => format!(
            "{var} is not set: {needed_by} needs it for live calls (set it in the environment or the suite's env_files, or replay the recorded cassettes: Mode::Replay)"
        ),
    }
}

/// `evals/schema.json: no such file (scorer.schema in evals/.llm-evals.config.yml names
/// it): create it, or point scorer.schema at the file`.
fn input_message(
    path: &Path,
    key: Option<&str>,
    named_in: Option<&str>,
    e: &std::io::Error,
) -> String {
    use std::io::ErrorKind;
    let shown = path.display();
    let by = match (key, named_in) {
        (Some(k), Some(f)) => format!(" ({k} in {f} names it)"),
        (Some(k), None) => format!(" (named by {k})"),
        _ => String::new(),
    };
    if let Some(why) = e.get_ref().and_then(|r| r.downcast_ref::<Refused>()) {
        let fix = match (why, key) {
            (Refused::NotRegular, Some(k)) => format!("point {k} at a regular file"),
            (Refused::NotRegular, None) => "name a regular file".to_string(),
            (Refused::TooLarge { .. }, _) => {
                "name the file evals wrote (a larger one is not one of its own)".to_string()
            }
        };
        return format!("{shown}: {why}{by}: {fix}");
    }
    let what = match e.kind() {
        ErrorKind::NotFound => "no such file".to_string(),
        ErrorKind::PermissionDenied => "cannot be read (permission denied)".to_string(),
        ErrorKind::IsADirectory => "is a folder, not a file".to_string(),
        _ => format!("cannot be read: {e}"),
    };
    let fix = match (e.kind(), key) {
        (ErrorKind::NotFound, Some(k)) => format!("create it, or point {k} at the file"),
        (ErrorKind::NotFound, None) => "check the path, or create the file".to_string(),
        (ErrorKind::PermissionDenied, _) => "make it readable (chmod u+r)".to_string(),
        (_, Some(k)) => format!("point {k} at a readable file"),
        (_, None) => "replace it with a readable file".to_string(),
    };
    format!("{shown}: {what}{by}: {fix}")
}

/// Why [`crate::fs::read_regular_text`] refused a file before reading it (the message of its
/// [`Error::Input`]).
#[derive(Debug, thiserror::Error)]
pub(crate) enum Refused {
    /// A device (`/dev/urandom`), a pipe, a socket: it could be read forever.
    #[error("is not a regular file (a device, a pipe or a socket), which could be read forever")]
    NotRegular,
    /// Past the cap.
    #[error("is {size}, over the {cap} evals reads of one file")]
    TooLarge { size: String, cap: String },
}

/// The crate's result: its error is an [`Error`] unless said otherwise.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::ErrorKind;

    fn io(kind: ErrorKind) -> std::io::Error {
        std::io::Error::from(kind)
    }

    #[test]
    fn an_unreadable_input_names_the_key_and_the_fix() {
        let e = Error::input("evals/.env", io(ErrorKind::PermissionDenied))
            .named_by("env_files", Some("evals/.llm-evals.config.yml"));
        assert_eq!(
            e.to_string(),
            "evals/.env: cannot be read (permission denied) (env_files in evals/.llm-evals.config.yml names it): make it readable (chmod u+r)"
        );
        let e = Error::input("run.json", io(ErrorKind::IsADirectory)).named_by("--baseline", None);
        assert_eq!(
            e.to_string(),
            "run.json: is a folder, not a file (named by --baseline): point --baseline at a readable file"
        );
        // Only an input error takes the key: others are left as they are.
        let e = Error::Usage("bad".into()).named_by("--baseline", None);
        assert_eq!(e.to_string(), "bad");
    }
}
