//! The exit codes of `evals`, the one table (the README's "Exit codes" says the same). The
//! library says what went wrong ([`Error::kind`], [`Error::is_bad_input`]); this file
//! decides what that means for the process.
//!
//! | code | constant | when |
//! |------|----------|------|
//! | 0 | [`OK`] | passed: nothing regressed, every threshold met, no case errored |
//! | 1 | [`FAILED`] | a regression; a failed threshold (`check`, `run`, `compare`, including `--min-score` and `--min-pass-rate`); a case that errored; an aborted run (`errors.abort_after`, 100 failures in a row); a problem `verify` found; a command that went wrong while running (a write failing mid-run; the GitHub API could not be reached; a cassette write the file system or the secret scan refused) |
//! | 2 | [`USAGE`] | bad usage or bad input: a flag or argument clap refuses, or a command line asking for the impossible; a config or case file that is wrong: unknown key, unclosed bracket, a YAML past 50,000 nodes, not UTF-8, a key with whitespace; a suite input that is missing or unreadable: the config, `scorer.schema`, `adapter.system`/`adapter.user` templates, case files, `env_files`, `--baseline run.json`, the file of `evals render`/`evals comment`; a cassette that cannot be read, is not one or is of a newer format, a `--cassettes` value that is no mode; no usable baseline; a history that is not a database (`history`, `export`, `report`); a report path that cannot be written |
//! | 130 | [`INTERRUPTED`] | interrupted (Ctrl-C): what finished is reported and stored as `interrupted` |

use llm_evals::error::Error;
use llm_evals::results::RunStatus;

/// Passed.
pub(crate) const OK: i32 = 0;
/// A regression, a failed threshold, an errored case, an aborted run, a `verify`
/// problem, or a command that went wrong while running.
pub(crate) const FAILED: i32 = 1;
/// Bad usage or bad input.
pub(crate) const USAGE: i32 = 2;
/// Interrupted (128 + SIGINT).
pub(crate) const INTERRUPTED: i32 = 130;

/// The exit code of a command that stopped with `e`: bad input exits 2, a failure while
/// running 1.
pub(crate) fn code(e: &Error) -> i32 {
    if e.is_bad_input() { USAGE } else { FAILED }
}

/// The exit code of a finished run from how it ended and whether it `passed` (its gate,
/// thresholds and cases).
pub(crate) fn of_run(status: RunStatus, passed: bool) -> i32 {
    match status {
        RunStatus::Interrupted => INTERRUPTED,
        RunStatus::Aborted => FAILED,
        RunStatus::Completed if passed => OK,
        RunStatus::Completed => FAILED,
        // A way of ending this binary does not know never passes.
        _ => FAILED,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::ErrorKind;

    fn io(kind: ErrorKind) -> std::io::Error {
        std::io::Error::from(kind)
    }

    #[test]
    fn each_kind_exits_as_the_table_says() {
        let s = || "x".to_string();
        assert_eq!(code(&Error::Config(s())), USAGE);
        assert_eq!(code(&Error::Usage(s())), USAGE);
        let no_history = llm_evals::gate::BaselineError::NoHistory {
            history: "h.sqlite3".into(),
        };
        assert_eq!(code(&Error::Baseline(no_history)), USAGE);
        assert_eq!(code(&Error::input("a", io(ErrorKind::NotFound))), USAGE);
        assert_eq!(code(&Error::io("a", io(ErrorKind::StorageFull))), FAILED);
        assert_eq!(code(&Error::Failed(s())), FAILED);
        use llm_evals::cassette::CassetteError;
        let path = || std::path::PathBuf::from("c.json");
        for bad_input in [
            CassetteError::TooNew {
                path: path(),
                format: 7,
                known: 1,
            },
            CassetteError::NotACassette {
                path: path(),
                why: s(),
            },
            CassetteError::Unreadable {
                path: path(),
                why: s(),
            },
            CassetteError::UnknownMode { given: s() },
        ] {
            assert_eq!(code(&Error::from(bad_input)), USAGE);
        }
        let unwritable = CassetteError::Unwritable {
            path: path(),
            why: s(),
        };
        assert_eq!(code(&Error::from(unwritable)), FAILED);
        use llm_evals::history::HistoryError;
        for bad_input in [
            HistoryError::NotAHistory {
                shown: s(),
                what: "not a SQLite database",
            },
            HistoryError::TooNew {
                path: path(),
                found: 9,
                known: 2,
            },
            HistoryError::Ambiguous {
                prefix: s(),
                path: path(),
                count: 2,
                listed: s(),
            },
        ] {
            assert_eq!(code(&Error::from(bad_input)), USAGE);
        }
        for failed in [
            HistoryError::Sqlite {
                shown: s(),
                why: s(),
            },
            HistoryError::Unreadable {
                path: path(),
                id: s(),
                why: s(),
            },
        ] {
            assert_eq!(code(&Error::from(failed)), FAILED);
        }
    }

    #[test]
    fn an_aborted_or_interrupted_run_never_exits_0() {
        use llm_evals::results::RunStatus;
        assert_eq!(of_run(RunStatus::Completed, true), OK);
        assert_eq!(of_run(RunStatus::Completed, false), FAILED);
        assert_eq!(of_run(RunStatus::Aborted, true), FAILED);
        assert_eq!(of_run(RunStatus::Interrupted, true), INTERRUPTED);
        assert_eq!(of_run(RunStatus::Interrupted, false), INTERRUPTED);
    }
}
