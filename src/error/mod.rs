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

/// The family of an [`Error`], for a caller that branches on what went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A config, case or cassette file is wrong ([`Error::Config`]).
    Config,
    /// A setting or a request that cannot be honoured ([`Error::Usage`]).
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
/// the fix.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A config, case or cassette file is wrong; the message names the file and the fix.
    #[error("{0}")]
    Config(String),
    /// The command line asks for something that cannot be done.
    #[error("{0}")]
    Usage(String),
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
        /// The key or flag that named the file (`scorer.schema`, `--baseline`), if any.
        key: Option<String>,
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
            Error::Usage(_) => ErrorKind::Usage,
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
            Error::Config(_) | Error::Usage(_) | Error::Baseline(_) | Error::Input { .. } => true,
            Error::Cassette(e) => e.is_bad_input(),
            Error::History(e) => e.is_bad_input(),
            Error::Io { .. } | Error::Failed(_) => false,
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
                named_in: file.map(str::to_string),
                source,
            },
            other => other,
        }
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
