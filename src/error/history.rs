//! What can go wrong with a run history, each failure a kind of its own;
//! [`crate::error::Error::is_bad_input`] maps each to its exit code.

use std::path::PathBuf;

/// A history store's failure. The file is named as the user would type it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HistoryError {
    /// The file is not a SQLite database, or a damaged one: not a run history (bad input,
    /// exit 2). Moving it aside keeps it for whoever wants to look at it.
    #[error(
        "{shown}: {what}, so not a run history: move it aside (`mv {} {}`; the next run starts a new one) or open another history",
        crate::text::shell_word(shown),
        crate::text::shell_word(&format!("{shown}.bad"))
    )]
    NotAHistory {
        /// The file, as shown.
        shown: String,
        /// "not a SQLite database" or "a damaged SQLite database".
        what: &'static str,
    },
    /// Its schema is newer than this evals knows (exit 2).
    #[error(
        "{}: history schema version {found} is newer than this evals knows ({known}); upgrade evals, or open another history",
        path.display()
    )]
    TooNew {
        /// The store's file.
        path: PathBuf,
        /// The schema version the file has.
        found: usize,
        /// The newest version this evals knows.
        known: usize,
    },
    /// A run id prefix that matches more than one run (exit 2).
    #[error(
        "run id prefix {prefix} matches {count} runs in {} ({listed}): give more of the id, or the run's number",
        path.display()
    )]
    Ambiguous {
        /// The prefix given.
        prefix: String,
        /// The store's file.
        path: PathBuf,
        /// How many runs it matches.
        count: usize,
        /// The first few of them (`#3 0193…, #4 0193…, ...`).
        listed: String,
    },
    /// A stored run whose snapshot cannot be read back (exit 1).
    #[error(
        "{}: run {id} has an unreadable snapshot ({why}); read another run, or open another history",
        path.display()
    )]
    Unreadable {
        /// The store's file.
        path: PathBuf,
        /// The run.
        id: String,
        /// What the JSON reader said.
        why: String,
    },
    /// A run could not be written into the store (exit 1).
    #[error("{}could not {what} run {id}: {why}", path.as_ref().map(|p| format!("{}: ", p.display())).unwrap_or_default())]
    Unwritten {
        /// The store's file, when known.
        path: Option<PathBuf>,
        /// "serialize" or "write ...'s snapshot".
        what: &'static str,
        /// The run.
        id: String,
        /// What failed.
        why: String,
    },
    /// SQLite failed otherwise (a locked or read-only file; exit 1).
    #[error("{shown}: history store: {why}; check the file is writable, or open another history")]
    Sqlite {
        /// The file, as shown.
        shown: String,
        /// What SQLite said.
        why: String,
    },
    /// PostgreSQL failed (the server unreachable, the credentials refused, a statement
    /// failed; exit 1). `shown` is the URL without its password.
    #[error(
        "{shown}: history store: {why}; check the server is up, the URL and its credentials, or open another history"
    )]
    Postgres {
        /// The database URL, its password left out.
        shown: String,
        /// What the server or the client said (scrubbed of secrets).
        why: String,
    },
    /// PostgreSQL said nothing within a limit (exit 1); `why` names the server, the
    /// limit, where it came from and the key that changes it.
    #[error("{shown}: history store: {why}")]
    PostgresTimeout {
        /// The database URL, its password left out.
        shown: String,
        /// Which wait ran out, and how to allow longer.
        why: String,
    },
    /// A run's snapshot is larger than the store was told to read back (`evals dashboard`'s
    /// `--max-run-bytes`; exit 1).
    #[error(
        "{}: run {id}'s snapshot is {size} bytes, over the limit of {limit} bytes set by {key}: raise {key} to read it",
        path.display()
    )]
    TooLarge {
        /// The store.
        path: PathBuf,
        /// The run.
        id: String,
        /// The snapshot's size in bytes.
        size: u64,
        /// The limit.
        limit: u64,
        /// What set the limit.
        key: &'static str,
    },
}

impl HistoryError {
    /// The message for `to`: to the command line, the fix names `--history` and
    /// `evals history`.
    pub fn message(&self, to: super::Audience) -> String {
        if to == super::Audience::Library {
            return self.to_string();
        }
        match self {
            HistoryError::NotAHistory { shown, what } => format!(
                "{shown}: {what}, so not a run history: move it aside (`mv {} {}`; the next run starts a new one) or pass --history PATH",
                crate::text::shell_word(shown),
                crate::text::shell_word(&format!("{shown}.bad"))
            ),
            HistoryError::TooNew { path, found, known } => format!(
                "{}: history schema version {found} is newer than this evals knows ({known}); upgrade evals, or pass --history with another file",
                path.display()
            ),
            HistoryError::Ambiguous {
                prefix,
                path,
                count,
                listed,
            } => format!(
                "run id prefix {prefix} matches {count} runs in {} ({listed}): give more of the id, or the run's number from `evals history`",
                path.display()
            ),
            HistoryError::Unreadable { path, id, why } => format!(
                "{}: run {id} has an unreadable snapshot ({why}); export another run, or pass --history with another file",
                path.display()
            ),
            HistoryError::Sqlite { shown, why } => format!(
                "{shown}: history store: {why}; check the file is writable, or pass --history with another file"
            ),
            HistoryError::Postgres { shown, why } => format!(
                "{shown}: history store: {why}; check the server is up, the URL and its credentials, or pass --history with another store"
            ),
            other => other.to_string(),
        }
    }

    /// Whether the history itself is bad input (exit 2) rather than a failure while
    /// running (exit 1).
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            HistoryError::NotAHistory { .. }
                | HistoryError::TooNew { .. }
                | HistoryError::Ambiguous { .. }
        )
    }
}
