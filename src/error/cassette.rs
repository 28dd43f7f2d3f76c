//! [`CassetteError`]: what goes wrong with a cassette file (reading, parsing, writing) or
//! with the choice of a cassette mode. Each message names the file and the fix; the crate's
//! [`crate::error::Error::is_bad_input`] maps each kind to its exit code.

use std::path::PathBuf;

/// A failure of the cassette subsystem. A case that meets one errors (no score); a command
/// that meets one (`evals cassettes status`, `--cassettes`) stops with it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CassetteError {
    /// The file exists but could not be read.
    #[error("{}: cannot read cassette: {why}", path.display())]
    Unreadable {
        /// The cassette file.
        path: PathBuf,
        /// What the file system said.
        why: String,
    },
    /// Not JSON, or JSON that is not a cassette (`why` says which, with the position).
    #[error("{}: not a cassette ({why})", path.display())]
    NotACassette {
        /// The file.
        path: PathBuf,
        /// The parser's message, with the line and column.
        why: String,
    },
    /// Written by a newer `evals`: refused, never guessed at.
    #[error(
        "{}: format {format} is newer than this evals understands ({known}); upgrade evals",
        path.display()
    )]
    TooNew {
        /// The cassette file.
        path: PathBuf,
        /// The format version the file declares.
        format: u64,
        /// The newest format this build reads.
        known: u64,
    },
    /// The cassette could not be turned into JSON.
    #[error("{}: cannot serialize cassette: {why}", path.display())]
    Unserializable {
        /// The cassette that was to be written.
        path: PathBuf,
        /// The serializer's message.
        why: String,
    },
    /// The cassette would hold a secret (after scrubbing): the write is refused. Names the
    /// kind of secret and where, never its value.
    #[error(
        "refusing to write {}: it would contain {} (line {line}){}; {}",
        path.display(),
        with_article(kind),
        place.map_or("", SecretPlace::phrase),
        SecretPlace::fix(*place)
    )]
    SecretRefused {
        /// The cassette that was to be written (nothing was).
        path: PathBuf,
        /// The kind of secret ("OpenAI-style key (sk-…)").
        kind: &'static str,
        /// 1-based line of the cassette's text.
        line: usize,
        /// Where in the cassette it is; `None`: neither a request nor a response (the case
        /// id, the contender).
        place: Option<SecretPlace>,
    },
    /// The file system refused the write (a read-only folder, a full disk).
    #[error("cannot write cassette {}: {why}", path.display())]
    Unwritable {
        /// The cassette that was to be written.
        path: PathBuf,
        /// What the file system said.
        why: String,
    },
    /// A `--cassettes`/`EVALS_CASSETTES` value that is no mode.
    #[error("cassette mode {given}: expected one of replay, record, auto, live")]
    UnknownMode {
        /// The value as given.
        given: String,
    },
}

impl CassetteError {
    /// The message for `to` (the mode as `--cassettes` on the command line).
    pub fn message(&self, to: super::Audience) -> String {
        match (self, to) {
            (CassetteError::UnknownMode { given }, super::Audience::CommandLine) => {
                format!("--cassettes {given}: expected one of replay, record, auto, live")
            }
            _ => self.to_string(),
        }
    }

    /// Whether this is bad input (a file or a value the user must fix; exit 2) rather than
    /// a failure while running (a write the file system or the secret scan refused; exit 1).
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            CassetteError::Unreadable { .. }
                | CassetteError::NotACassette { .. }
                | CassetteError::TooNew { .. }
                | CassetteError::UnknownMode { .. }
        )
    }
}

/// The part of a cassette a secret is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretPlace {
    /// In a recorded request: the suite sent it (a prompt or a case input holds it).
    Request,
    /// In a recorded response: the server sent it back.
    Response,
}

impl SecretPlace {
    fn phrase(self) -> &'static str {
        match self {
            SecretPlace::Request => " in a request",
            SecretPlace::Response => " in a response",
        }
    }

    fn fix(place: Option<SecretPlace>) -> &'static str {
        match place {
            Some(SecretPlace::Request) => {
                "keep the secret out of the request (a prompt or a case input holds it), \
                 or add a `cassettes.redact` pattern for it"
            }
            Some(SecretPlace::Response) => {
                "the server sent it back in its response (the request was scrubbed): add a \
                 `cassettes.redact` pattern for it"
            }
            None => {
                "add a `cassettes.redact` pattern for it, or keep it out of the case id and \
                 the contender's name"
            }
        }
    }
}

fn with_article(kind: &str) -> String {
    let article = match kind.chars().next() {
        Some('A' | 'E' | 'I' | 'O' | 'U' | 'a' | 'e' | 'i' | 'o' | 'u') => "an",
        _ => "a",
    };
    format!("{article} {kind}")
}
