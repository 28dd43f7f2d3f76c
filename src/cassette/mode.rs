//! The cassette mode and the whole policy that picks it: the flag (or `EVALS_CASSETTES`)
//! if given, else the command's default (`record` records, `check` replays, the rest run
//! `auto`), and on CI `auto` acts as `replay`, so CI never writes a cassette.

use std::fmt;
use std::str::FromStr;

use crate::error::CassetteError;

/// How the transport uses cassettes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Mode {
    /// Answer only from cassettes; a request with no recording is an error of the case.
    Replay,
    /// Always call upstream; rewrite the cassette of every case that ran.
    Record,
    /// Replay what is recorded, call upstream and record what is not.
    Auto,
    /// Call upstream; read and write nothing.
    Live,
}

impl Mode {
    /// The mode to run in: with `CI` set, `auto` acts as `replay` (no writes on CI).
    pub fn resolve(self, ci: bool) -> Mode {
        match self {
            Mode::Auto if ci => Mode::Replay,
            other => other,
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Replay => "replay",
            Mode::Record => "record",
            Mode::Auto => "auto",
            Mode::Live => "live",
        })
    }
}

impl FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Mode, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "replay" => Ok(Mode::Replay),
            "record" => Ok(Mode::Record),
            "auto" => Ok(Mode::Auto),
            "live" => Ok(Mode::Live),
            _ => Err(format!(
                "unknown cassette mode `{s}`; use replay, record, auto or live"
            )),
        }
    }
}

/// Where a mode given by name came from (the two say it differently in `-v`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ModeSource {
    /// `--cassettes MODE` on the command line.
    Flag,
    /// The `EVALS_CASSETTES` variable.
    Env,
}

/// The mode a run acts in, and why it is that one (for `-v`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModeChoice {
    /// The mode, the CI rule applied: what the run acts in.
    pub mode: Mode,
    /// "--cassettes auto is auto, which acts as replay because CI is set".
    pub why: String,
}

/// Picks the mode of a command: `given` (the flag's or the variable's value) if any, else
/// `default`, the command's own (`results::Command::default_mode`: record records, check
/// replays, run and compare are auto); then the CI rule ([`Mode::resolve`]). `command` is
/// the command's name, for the reason. A value that is no mode is
/// [`CassetteError::UnknownMode`].
pub fn choose(
    given: Option<(&str, ModeSource)>,
    default: Mode,
    command: &str,
    ci: bool,
) -> Result<ModeChoice, CassetteError> {
    let (mode, mut why) = match given {
        Some((m, source)) => {
            let mode = m.parse::<Mode>().map_err(|_| CassetteError::UnknownMode {
                given: m.to_string(),
            })?;
            let why = match source {
                ModeSource::Flag => format!("--cassettes {m}"),
                ModeSource::Env => format!("EVALS_CASSETTES={m}"),
            };
            (mode, why)
        }
        None => (default, format!("the default of `{command}`")),
    };
    let resolved = mode.resolve(ci);
    if resolved != mode {
        why = format!("{why} is {mode}, which acts as {resolved} because CI is set");
    }
    Ok(ModeChoice {
        mode: resolved,
        why,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_print_and_resolve_on_ci() {
        for mode in [Mode::Replay, Mode::Record, Mode::Auto, Mode::Live] {
            assert_eq!(mode.to_string().parse::<Mode>(), Ok(mode));
        }
        assert_eq!("AUTO".parse::<Mode>(), Ok(Mode::Auto));
        assert!(
            "tape"
                .parse::<Mode>()
                .unwrap_err()
                .contains("replay, record, auto or live")
        );
        assert_eq!(Mode::Auto.resolve(true), Mode::Replay);
        assert_eq!(Mode::Auto.resolve(false), Mode::Auto);
        assert_eq!(Mode::Record.resolve(true), Mode::Record);
        assert_eq!(Mode::Live.resolve(true), Mode::Live);
    }

    #[test]
    fn each_command_has_its_default_and_ci_turns_auto_into_replay() {
        use crate::results::Command;
        let pick = |given, command: &str, ci| {
            let command = match command {
                "record" => Command::Record,
                "check" => Command::Check,
                "run" => Command::Run,
                _ => Command::Compare,
            };
            choose(given, command.default_mode(), command.as_str(), ci).unwrap()
        };
        assert_eq!(pick(None, "record", true).mode, Mode::Record);
        assert_eq!(pick(None, "check", false).mode, Mode::Replay);
        assert_eq!(pick(None, "run", false).mode, Mode::Auto);
        assert_eq!(
            pick(None, "compare", true),
            ModeChoice {
                mode: Mode::Replay,
                why: "the default of `compare` is auto, which acts as replay because CI is set"
                    .into()
            }
        );
        assert_eq!(
            pick(Some(("live", ModeSource::Flag)), "run", true),
            ModeChoice {
                mode: Mode::Live,
                why: "--cassettes live".into()
            }
        );
        assert_eq!(
            pick(Some(("auto", ModeSource::Env)), "run", false).why,
            "EVALS_CASSETTES=auto"
        );
        let err = choose(Some(("tape", ModeSource::Env)), Mode::Auto, "run", false).unwrap_err();
        assert_eq!(
            err.message(crate::error::Audience::CommandLine),
            "--cassettes tape: expected one of replay, record, auto, live"
        );
        assert_eq!(
            err.to_string(),
            "cassette mode tape: expected one of replay, record, auto, live"
        );
    }
}
