//! The JSON snapshot on disk: the format apart from the result model, its version, and
//! reading and writing a file of it.
//!
//! The domain types ([`RunResult`], [`CaseResult`]) serialize through the format structs
//! here, so every writer (the snapshot file, `-f json`, the history's `snapshot` column)
//! writes the same bytes. What the format pins down, and the model does not:
//! - a version (`format`), checked before anything else is read: a file too old or too
//!   new is refused by name with the fix, never half-read;
//! - a case error is its message (`error`, as it always was) plus its kind beside it
//!   (`error_kind`, added in format 1 without a bump: older readers ignore it, and a file
//!   without it reads each kind from its message, [`CaseErrorKind::of_message`]);
//! - the keys a case leaves out when empty (`failed_thresholds`, `raw`, `tags`...) and the
//!   defaults an older file falls back to (`weight: 1`).
//!
//! Format changes: a new optional key keeps the version; a key removed, renamed or changed
//! in meaning bumps [`SNAPSHOT_FORMAT`], and [`check_readable`] then names what reads it.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::comparison::Comparison;
use super::model::{
    CaseError, CaseErrorKind, CaseResult, Diagnostic, ExperimentResult, Repeat, RunInfo, RunResult,
    Usage,
};
use crate::error::{Error, Result};

/// A version of the snapshot format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FormatVersion(pub u32);

impl std::fmt::Display for FormatVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The snapshot format this build writes.
pub const SNAPSHOT_FORMAT: FormatVersion = FormatVersion(1);

/// The oldest snapshot format this build reads.
pub const OLDEST_READABLE: FormatVersion = FormatVersion(1);

/// Why a snapshot's version cannot be read by this build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Incompatibility {
    /// Written by an evals older than any this build reads.
    TooOld(FormatVersion),
    /// Written by a newer evals: `found` is a version (not necessarily a `u32`) past ours.
    TooNew(u64),
}

/// Whether this build reads a snapshot of format `found` (a `format` key as written:
/// any unsigned integer, so a version past `u32` is "too new", not cut to fit).
pub fn check_readable(found: u64) -> std::result::Result<FormatVersion, Incompatibility> {
    match u32::try_from(found) {
        Ok(v) if FormatVersion(v) < OLDEST_READABLE => {
            Err(Incompatibility::TooOld(FormatVersion(v)))
        }
        Ok(v) if FormatVersion(v) <= SNAPSHOT_FORMAT => Ok(FormatVersion(v)),
        _ => Err(Incompatibility::TooNew(found)),
    }
}

/// A snapshot file that cannot be read, naming the file and the fix (bad input: exit 2).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// Not JSON, or not the shape of a snapshot.
    #[error("{path}:{line}:{column}: not a JSON snapshot: {message}")]
    NotJson {
        /// The file, as shown to the user.
        path: String,
        /// The line where it goes wrong (from 1).
        line: usize,
        /// The column there (from 1).
        column: usize,
        /// What is wrong there, in serde_json's words.
        message: String,
    },
    /// JSON without a `format` version (a file that is no snapshot of evals).
    #[error("{path}: not a JSON snapshot (no `format`)")]
    NoFormat {
        /// The file, as shown to the user.
        path: String,
    },
    /// A version this build does not read.
    #[error("{}", incompatible_message(path, *found))]
    Incompatible {
        /// The file, as shown to the user.
        path: String,
        /// How it is out of reach: too old or too new, with the version found.
        found: Incompatibility,
    },
}

fn incompatible_message(path: &str, found: Incompatibility) -> String {
    match found {
        Incompatibility::TooOld(v) => format!(
            "{path}: snapshot format {v} is older than this evals reads ({OLDEST_READABLE} to {SNAPSHOT_FORMAT}); render it with the evals that wrote it"
        ),
        Incompatibility::TooNew(v) => format!(
            "{path}: snapshot format {v} is newer than this evals reads ({OLDEST_READABLE} to {SNAPSHOT_FORMAT}); render it with the evals that wrote it, or upgrade evals"
        ),
    }
}

impl From<SnapshotError> for Error {
    fn from(e: SnapshotError) -> Error {
        Error::Usage(e.to_string())
    }
}

/// Reads a snapshot file's run, naming the file in every error: the version is checked
/// first, so a newer file is refused by its version, not by the first key it does not know.
/// A comparison written beside the run is left out ([`load_checked`] keeps it).
pub fn load(path: &Path) -> Result<RunResult> {
    load_checked(path).map(|(run, _)| run)
}

/// Reads a snapshot file: the run and the comparison written beside it (`check --json`).
pub fn load_checked(path: &Path) -> Result<(RunResult, Option<Comparison>)> {
    let shown = path.display().to_string();
    // A snapshot is named on the command line: a device or a pipe is refused, not read.
    let text = crate::fs::read_regular_text(path, &shown, crate::fs::MAX_NAMED_FILE_BYTES)?;
    Ok(parse_checked(&text, &shown)?)
}

/// Parses a snapshot's text into its run; `shown` names it in errors.
pub fn parse(text: &str, shown: &str) -> std::result::Result<RunResult, SnapshotError> {
    parse_checked(text, shown).map(|(run, _)| run)
}

/// Parses a snapshot's text: the run and the comparison beside it; `shown` names it in
/// errors.
pub fn parse_checked(
    text: &str,
    shown: &str,
) -> std::result::Result<(RunResult, Option<Comparison>), SnapshotError> {
    let not_json = |e: serde_json::Error| SnapshotError::NotJson {
        path: shown.to_string(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    };
    // Only `format` is kept; the rest is skipped over, not built.
    #[derive(Deserialize)]
    struct Header {
        format: Option<Value>,
    }
    let header: Header = serde_json::from_str(text).map_err(not_json)?;
    let Some(found) = header.format.as_ref().and_then(Value::as_u64) else {
        return Err(SnapshotError::NoFormat {
            path: shown.to_string(),
        });
    };
    check_readable(found).map_err(|found| SnapshotError::Incompatible {
        path: shown.to_string(),
        found,
    })?;
    let f: SnapshotFormat = serde_json::from_str(text).map_err(not_json)?;
    Ok((
        RunResult {
            run: f.run,
            experiments: f.experiments,
        },
        f.comparison,
    ))
}

/// Reads a snapshot from `reader` as a stream, for the gate: the run without its cases,
/// which go to a case log one at a time as they are read (each copied as it was written,
/// not parsed), and without its planned cases' keys (`settings.cases`, which a baseline
/// never needs). A comparison written beside the run is skipped. Nothing grows with the
/// number of cases but the log on disk. The version (`format`, which every evals writes
/// first) is checked when it is read, before what follows it; `shown` names the snapshot
/// in errors.
pub fn read_logged(
    reader: impl std::io::Read,
    shown: &str,
) -> std::result::Result<(RunResult, super::CaseLog), SnapshotError> {
    use serde::de::DeserializeSeed;
    let unread = |message: String| SnapshotError::NotJson {
        path: shown.to_string(),
        line: 0,
        column: 0,
        message,
    };
    let log = super::CaseLog::new(&[]).map_err(|e| unread(e.to_string()))?;
    let refused = std::cell::Cell::new(None);
    let mut de =
        serde_json::Deserializer::from_reader(std::io::BufReader::with_capacity(64 * 1024, reader));
    let read = stream::Top {
        log: &log,
        refused: &refused,
    }
    .deserialize(&mut de)
    .and_then(|top| de.end().map(|()| top));
    if let Some(found) = refused.get() {
        return Err(SnapshotError::Incompatible {
            path: shown.to_string(),
            found,
        });
    }
    let (format, run, experiments) = read.map_err(|e| SnapshotError::NotJson {
        path: shown.to_string(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })?;
    // A version that was read was checked as it was (`refused` above).
    if format.is_none() {
        return Err(SnapshotError::NoFormat {
            path: shown.to_string(),
        });
    }
    let run = run.ok_or_else(|| unread("missing field `run`".into()))?;
    Ok((RunResult { run, experiments }, log))
}

/// The visitors of [`read_logged`]: each object read key by key into a map of its own
/// (small: a run's info, an experiment's figures), but for the one key that holds what
/// grows (`experiments`, an experiment's `cases`, the settings' `cases`), which is handed
/// to its own seed; the map, that key set empty, is then read as the model's type.
mod stream {
    use std::cell::Cell;

    use serde::de::{DeserializeSeed, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
    use serde_json::value::RawValue;
    use serde_json::{Map, Value};

    use super::{Incompatibility, check_readable};
    use crate::results::{CaseLog, ExperimentResult, RunInfo};

    pub(super) struct Top<'a> {
        pub(super) log: &'a CaseLog,
        pub(super) refused: &'a Cell<Option<Incompatibility>>,
    }

    type Read = (Option<u64>, Option<RunInfo>, Vec<ExperimentResult>);

    impl<'de> DeserializeSeed<'de> for Top<'_> {
        type Value = Read;
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Read, D::Error> {
            d.deserialize_map(self)
        }
    }

    impl<'de> Visitor<'de> for Top<'_> {
        type Value = Read;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a snapshot of evals")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Read, A::Error> {
            let (mut format, mut run, mut experiments) = (None, None, Vec::new());
            while let Some(key) = map.next_key::<String>()? {
                match key.as_str() {
                    "format" => {
                        let v: Value = map.next_value()?;
                        format = v.as_u64();
                        if let Some(found) = format
                            && let Err(refused) = check_readable(found)
                        {
                            self.refused.set(Some(refused));
                            return Err(A::Error::custom(
                                "a snapshot format this evals does not read",
                            ));
                        }
                    }
                    "run" => {
                        let fields = map.next_value_seed(Except {
                            key: "settings",
                            seed: SettingsSeed,
                        })?;
                        run = Some(serde_json::from_value(fields).map_err(A::Error::custom)?);
                    }
                    "experiments" => {
                        experiments = map.next_value_seed(Experiments { log: self.log })?;
                    }
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok((format, run, experiments))
        }
    }

    /// A seed for the value of the key an [`Except`] hands over: what it gives is set
    /// under that key.
    pub(super) trait KeySeed {
        fn read<'de, A: MapAccess<'de>>(&self, map: &mut A) -> Result<Value, A::Error>;
    }

    /// An object read into a map, the value of `key` read by `seed`.
    struct Except<S> {
        key: &'static str,
        seed: S,
    }

    impl<'de, S: KeySeed> DeserializeSeed<'de> for Except<S> {
        type Value = Value;
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
            d.deserialize_map(self)
        }
    }

    impl<'de, S: KeySeed> Visitor<'de> for Except<S> {
        type Value = Value;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
            let mut fields = Map::new();
            while let Some(key) = map.next_key::<String>()? {
                let value = if key == self.key {
                    self.seed.read(&mut map)?
                } else {
                    map.next_value()?
                };
                fields.insert(key, value);
            }
            Ok(Value::Object(fields))
        }
    }

    /// The settings, their planned cases' keys skipped.
    struct SettingsSeed;

    impl KeySeed for SettingsSeed {
        fn read<'de, A: MapAccess<'de>>(&self, map: &mut A) -> Result<Value, A::Error> {
            map.next_value_seed(Except {
                key: "cases",
                seed: Skip,
            })
        }
    }

    /// A value skipped over, an empty list in its place.
    struct Skip;

    impl KeySeed for Skip {
        fn read<'de, A: MapAccess<'de>>(&self, map: &mut A) -> Result<Value, A::Error> {
            map.next_value::<IgnoredAny>()?;
            Ok(Value::Array(Vec::new()))
        }
    }

    /// The experiments, each one's cases to the log.
    struct Experiments<'a> {
        log: &'a CaseLog,
    }

    impl<'de> DeserializeSeed<'de> for Experiments<'_> {
        type Value = Vec<ExperimentResult>;
        fn deserialize<D: serde::Deserializer<'de>>(
            self,
            d: D,
        ) -> Result<Vec<ExperimentResult>, D::Error> {
            d.deserialize_seq(self)
        }
    }

    impl<'de> Visitor<'de> for Experiments<'_> {
        type Value = Vec<ExperimentResult>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list of experiments")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            loop {
                self.log.add_experiment();
                let seed = Except {
                    key: "cases",
                    seed: CasesSeed { log: self.log },
                };
                let Some(fields) = seq.next_element_seed(seed)? else {
                    break;
                };
                out.push(serde_json::from_value(fields).map_err(A::Error::custom)?);
            }
            Ok(out)
        }
    }

    /// An experiment's cases, each appended to the log as it was written.
    struct CasesSeed<'a> {
        log: &'a CaseLog,
    }

    impl KeySeed for CasesSeed<'_> {
        fn read<'de, A: MapAccess<'de>>(&self, map: &mut A) -> Result<Value, A::Error> {
            map.next_value_seed(Cases { log: self.log })?;
            Ok(Value::Array(Vec::new()))
        }
    }

    struct Cases<'a> {
        log: &'a CaseLog,
    }

    impl<'de> DeserializeSeed<'de> for Cases<'_> {
        type Value = ();
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_seq(self)
        }
    }

    impl<'de> Visitor<'de> for Cases<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list of case results")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            while let Some(case) = seq.next_element::<Box<RawValue>>()? {
                self.log.append(case.get().as_bytes());
            }
            Ok(())
        }
    }
}

/// The snapshot as pretty JSON with a final newline, uncompared (`"comparison": null`):
/// the file `save` writes.
pub fn to_json(run: &RunResult) -> String {
    to_json_with::<()>(run, None)
}

/// The snapshot as pretty JSON with a final newline, the comparison written beside the
/// run: `report::json` passes the comparison as its reports word it.
pub fn to_json_with<C: Serialize>(run: &RunResult, comparison: Option<C>) -> String {
    let snapshot = SnapshotRef {
        format: SNAPSHOT_FORMAT,
        run: &run.run,
        experiments: &run.experiments,
        comparison,
    };
    let mut s = serde_json::to_string_pretty(&snapshot)
        .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}

/// The uncompared snapshot of `run` without its experiments (`"experiments": []`) nor its
/// planned cases (`"cases": []` in the settings), pretty or compact: the frame
/// [`crate::results::write_json`] streams the case keys and the case log into. The run
/// info is copied without its keys (the rest is a few short lists).
pub(crate) fn frame_json(run: &RunResult, pretty: bool) -> serde_json::Result<String> {
    let mut info = run.run.clone();
    info.settings.cases = Default::default();
    let frame = SnapshotRef::<()> {
        format: SNAPSHOT_FORMAT,
        run: &info,
        experiments: &[],
        comparison: None,
    };
    if pretty {
        serde_json::to_string_pretty(&frame)
    } else {
        serde_json::to_string(&frame)
    }
}

/// Writes the uncompared snapshot to `path` atomically, scrubbed of secrets on the way out.
pub fn save(path: &Path, run: &RunResult) -> Result<()> {
    crate::fs::write_atomic(path, to_json(run).as_bytes())
}

/// The snapshot as written: `format`, then the run. The comparison is a part of its own
/// (`null` for a run no `check` compared), so the model need not hold it to write it; its
/// written form (reasons in words) is the reports' to give.
#[derive(Serialize)]
struct SnapshotRef<'a, C: Serialize> {
    format: FormatVersion,
    run: &'a RunInfo,
    experiments: &'a [ExperimentResult],
    comparison: Option<C>,
}

/// The snapshot as read.
#[derive(Deserialize)]
struct SnapshotFormat {
    format: u64,
    run: RunInfo,
    experiments: Vec<ExperimentResult>,
    #[serde(default)]
    comparison: Option<Comparison>,
}

impl Serialize for RunResult {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        SnapshotRef::<()> {
            format: SNAPSHOT_FORMAT,
            run: &self.run,
            experiments: &self.experiments,
            comparison: None,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for RunResult {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<RunResult, D::Error> {
        let f = SnapshotFormat::deserialize(d)?;
        check_readable(f.format).map_err(|found| {
            serde::de::Error::custom(incompatible_message("the snapshot", found))
        })?;
        Ok(RunResult {
            run: f.run,
            experiments: f.experiments,
        })
    }
}

/// A case result as written.
#[derive(Serialize)]
struct CaseRef<'a> {
    case: &'a str,
    variant: &'a str,
    fingerprint: &'a str,
    score: Option<f64>,
    metrics: &'a BTreeMap<String, Option<f64>>,
    passed: Option<bool>,
    #[serde(skip_serializing_if = "none")]
    failed_thresholds: &'a [String],
    error: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_kind: Option<CaseErrorKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reply_error: Option<&'a str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    truncated: bool,
    output: &'a Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw: Option<&'a str>,
    diagnostics: &'a [Diagnostic],
    usage: &'a Usage,
    latency_s: Option<f64>,
    duration_s: f64,
    #[serde(skip_serializing_if = "none")]
    tags: &'a [String],
    weight: f64,
    #[serde(skip_serializing_if = "none")]
    repeats: &'a [Repeat],
    #[serde(skip_serializing_if = "unused")]
    judge_usage: &'a Usage,
    #[serde(skip_serializing_if = "Option::is_none")]
    input: &'a Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expected: &'a Option<Value>,
    #[serde(skip_serializing_if = "none")]
    trajectory: &'a [crate::results::Step],
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: &'a Option<Vec<crate::results::ToolCall>>,
    #[serde(skip_serializing_if = "none")]
    warnings: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    components: &'a Option<Vec<crate::results::Component>>,
}

fn unused(u: &&Usage) -> bool {
    **u == Usage::default()
}

/// A case result as read; what older files leave out falls back to its default.
#[derive(Deserialize)]
struct CaseFormat {
    case: String,
    variant: String,
    fingerprint: String,
    score: Option<f64>,
    metrics: BTreeMap<String, Option<f64>>,
    passed: Option<bool>,
    #[serde(default)]
    failed_thresholds: Vec<String>,
    error: Option<String>,
    #[serde(default)]
    error_kind: Option<CaseErrorKind>,
    #[serde(default)]
    reply_error: Option<String>,
    #[serde(default)]
    truncated: bool,
    output: Option<Value>,
    #[serde(default)]
    raw: Option<String>,
    diagnostics: Vec<Diagnostic>,
    usage: Usage,
    latency_s: Option<f64>,
    duration_s: f64,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default = "one")]
    weight: f64,
    #[serde(default)]
    repeats: Vec<Repeat>,
    #[serde(default)]
    judge_usage: Usage,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    expected: Option<Value>,
    #[serde(default)]
    trajectory: Vec<crate::results::Step>,
    #[serde(default)]
    tool_calls: Option<Vec<crate::results::ToolCall>>,
    #[serde(default)]
    warnings: Vec<String>,
    #[serde(default)]
    components: Option<Vec<crate::results::Component>>,
}

fn none<T>(list: &&[T]) -> bool {
    list.is_empty()
}

fn one() -> f64 {
    1.0
}

impl Serialize for CaseResult {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        CaseRef {
            case: &self.case,
            variant: &self.variant,
            fingerprint: &self.fingerprint,
            score: self.score,
            metrics: &self.metrics,
            passed: self.passed,
            failed_thresholds: &self.failed_thresholds,
            error: self.error.as_ref().map(|e| e.message.as_str()),
            error_kind: self.error.as_ref().map(|e| e.kind),
            reply_error: self.reply_error.as_deref(),
            truncated: self.truncated,
            output: &self.output,
            raw: self.raw.as_deref(),
            diagnostics: &self.diagnostics,
            usage: &self.usage,
            latency_s: self.latency_s,
            duration_s: self.duration_s,
            tags: &self.tags,
            weight: self.weight,
            repeats: &self.repeats,
            judge_usage: &self.judge_usage,
            input: &self.input,
            expected: &self.expected,
            trajectory: &self.trajectory,
            tool_calls: &self.tool_calls,
            warnings: &self.warnings,
            components: &self.components,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for CaseResult {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<CaseResult, D::Error> {
        let f = CaseFormat::deserialize(d)?;
        Ok(CaseResult {
            case: f.case,
            variant: f.variant,
            fingerprint: f.fingerprint,
            score: f.score,
            metrics: f.metrics,
            passed: f.passed,
            failed_thresholds: f.failed_thresholds,
            error: f.error.map(|message| CaseError {
                kind: f
                    .error_kind
                    .unwrap_or_else(|| CaseErrorKind::of_message(&message)),
                message,
            }),
            reply_error: f.reply_error,
            truncated: f.truncated,
            output: f.output,
            raw: f.raw,
            diagnostics: f.diagnostics,
            usage: f.usage,
            latency_s: f.latency_s,
            duration_s: f.duration_s,
            tags: f.tags,
            weight: f.weight,
            repeats: f.repeats,
            judge_usage: f.judge_usage,
            input: f.input,
            expected: f.expected,
            trajectory: f.trajectory,
            tool_calls: f.tool_calls,
            warnings: f.warnings,
            components: f.components,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cassette::Mode;
    use crate::results::testing::{case, error, run};
    use crate::results::{CaseStatus, Command, Outcome, RunStatus};

    /// `evals check --json` of a suite with a fake model answering right, one answering
    /// prose, and a `base_url` model with no cassettes, written by evals before the model was
    /// typed (the second check on main, so it holds a comparison).
    const WRITTEN_BEFORE_KINDS: &str = include_str!("testdata/check-format-1.json");

    #[test]
    fn a_snapshot_written_before_the_model_was_typed_reads_into_the_enums() {
        let (r, c) = parse_checked(WRITTEN_BEFORE_KINDS, "old.json").expect("reads");
        assert_eq!(r.run.status, RunStatus::Completed);
        assert_eq!(r.run.command, Command::Check);
        assert_eq!(r.run.mode, Mode::Replay);
        assert_eq!(r.run.settings.cassettes, Some(Mode::Replay));
        assert_eq!(r.run.settings.parallelism, 4);
        assert!(r.run.settings.selection.as_ref().unwrap().is_everything());
        let echo = &r.experiments[1];
        assert_eq!(echo.cases[0].diagnostics[0].outcome, Outcome::Invalid);
        // No `error_kind` in the file: a miss is known by the cassette layer's wording.
        let missed = &r.experiments[2].cases[0];
        assert_eq!(missed.error.as_ref().unwrap().kind, CaseErrorKind::Miss);
        assert!(
            missed
                .error
                .as_ref()
                .unwrap()
                .message
                .starts_with("no cassette for this case (")
        );
        let c = c.as_ref().expect("a check's comparison");
        assert!(c.cases.iter().any(|d| d.status == CaseStatus::Errored));
    }

    #[test]
    fn a_snapshot_written_before_the_model_was_typed_writes_back_the_same_plus_each_errors_kind() {
        let (r, c) = parse_checked(WRITTEN_BEFORE_KINDS, "old.json").expect("reads");
        let again = to_json_with(&r, c.as_ref().map(crate::report::verdict::Written::new));
        let added: Vec<&str> = again
            .lines()
            .filter(|l| l.trim_start().starts_with("\"error_kind\""))
            .collect();
        assert_eq!(added, vec!["          \"error_kind\": \"miss\","; 3]);
        let without: String = again
            .lines()
            .filter(|l| !l.trim_start().starts_with("\"error_kind\""))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(without, WRITTEN_BEFORE_KINDS);
    }

    #[test]
    fn a_case_errors_kind_is_written_beside_its_message_and_read_back() {
        let mut r = run(
            "r",
            "main",
            "2026-01-01T00:00:00Z",
            vec![case("a", None, None)],
        );
        // A transport failure worded like a miss stays a transport failure.
        r.experiments[0].cases[0].error = Some(CaseError::new(
            CaseErrorKind::Transport,
            "no recording matches this request, said the proxy",
        ));
        let text = to_json(&r);
        assert!(text.contains("\"error\": \"no recording matches this request, said the proxy\",\n          \"error_kind\": \"transport\","), "{text}");
        assert_eq!(parse(&text, "r.json").expect("reads"), r);
    }

    #[test]
    fn every_kind_and_an_outcome_of_your_own_round_trip() {
        use CaseErrorKind::*;
        for kind in [
            Transport,
            Miss,
            Cassette,
            RefusedWrite,
            TooLarge,
            Template,
            Adapter,
            Timeout,
            Other,
            Scorer,
            Crashed,
        ] {
            let mut r = run(
                "r",
                "main",
                "2026-01-01T00:00:00Z",
                vec![case("a", None, None)],
            );
            r.experiments[0].cases[0].error = Some(CaseError::new(kind, "x"));
            r.experiments[0].cases[0].diagnostics = vec![Diagnostic {
                field: "f".into(),
                want: Value::Null,
                got: Value::Null,
                outcome: Outcome::Other("wrong".into()),
            }];
            assert_eq!(parse(&to_json(&r), "r.json").expect("reads"), r);
        }
        let text = to_json(&run("r", "main", "2026-01-01T00:00:00Z", vec![]));
        assert!(
            text.starts_with("{\n  \"format\": 1,\n  \"run\": {"),
            "{text}"
        );
        assert!(text.contains("\"command\": \"check\""), "{text}");
        assert!(text.contains("\"mode\": \"replay\""), "{text}");
        assert!(text.contains("\"status\": \"completed\""), "{text}");
    }

    #[test]
    fn an_error_without_a_kind_is_a_miss_only_by_the_miss_wording() {
        assert_eq!(error("HTTP 500").unwrap().kind, CaseErrorKind::Other);
        assert_eq!(
            error("no recording matches this request (a.json)")
                .unwrap()
                .kind,
            CaseErrorKind::Miss
        );
    }

    fn with_format(format: &str) -> String {
        WRITTEN_BEFORE_KINDS.replacen("\"format\": 1", &format!("\"format\": {format}"), 1)
    }

    #[test]
    fn a_snapshot_too_new_or_too_old_is_refused_by_its_version_naming_the_file_and_the_fix() {
        let e = parse(&with_format("2"), "runs/new.json").expect_err("too new");
        assert_eq!(
            e.to_string(),
            "runs/new.json: snapshot format 2 is newer than this evals reads (1 to 1); render it with the evals that wrote it, or upgrade evals"
        );
        assert!(Error::from(e).is_bad_input());
        let e = parse(&with_format("0"), "runs/old.json").expect_err("too old");
        assert_eq!(
            e.to_string(),
            "runs/old.json: snapshot format 0 is older than this evals reads (1 to 1); render it with the evals that wrote it"
        );
        assert!(Error::from(e).is_bad_input());
    }

    #[test]
    fn a_version_past_u32_is_too_new_not_cut_to_one_that_reads() {
        // 2^32 + 1 was once cut to 1 (`as u32`) and read as format 1.
        let e = parse(&with_format("4294967297"), "x.json").expect_err("too new");
        assert!(matches!(
            e,
            SnapshotError::Incompatible {
                found: Incompatibility::TooNew(4294967297),
                ..
            }
        ));
        assert_eq!(check_readable(1), Ok(FormatVersion(1)));
        assert_eq!(
            check_readable(u64::MAX),
            Err(Incompatibility::TooNew(u64::MAX))
        );
    }

    #[test]
    fn a_file_that_is_no_snapshot_says_where_and_exits_2() {
        let e = parse("{\"run\": 1}", "x.json").expect_err("no format");
        assert_eq!(e.to_string(), "x.json: not a JSON snapshot (no `format`)");
        let e = parse("{\n  \"format\": 1,\n", "x.json").expect_err("cut short");
        assert!(
            e.to_string()
                .starts_with("x.json:3:0: not a JSON snapshot: "),
            "{e}"
        );
        let e = parse("{\"format\": 1, \"run\": {}}", "x.json").expect_err("no run info");
        assert!(e.to_string().starts_with("x.json:1:"), "{e}");
        assert!(Error::from(e).is_bad_input());
    }

    #[test]
    fn a_stored_snapshot_of_a_newer_format_is_refused_where_it_is_read() {
        let e = serde_json::from_str::<RunResult>(&with_format("2")).expect_err("too new");
        assert!(e.to_string().contains("snapshot format 2 is newer"), "{e}");
    }

    #[test]
    fn a_snapshot_read_as_a_stream_is_the_run_its_cases_in_a_log_and_its_keys_left_out() {
        let mut r = run(
            "r",
            "main",
            "2026-01-01T00:00:00Z",
            vec![
                case("a", Some(1.0), Some(true)),
                case("b \"quoted\"\nline", Some(0.0), Some(false)),
            ],
        );
        let mut second = r.experiments[0].clone();
        second.dataset = "other".into();
        second.cases.truncate(1);
        r.experiments.push(second);
        let mut no_cases = r.experiments[0].clone();
        no_cases.dataset = "empty".into();
        no_cases.cases.clear();
        r.experiments.push(no_cases);
        let check =
            serde_json::to_string(&serde_json::from_str::<Value>(WRITTEN_BEFORE_KINDS).unwrap())
                .unwrap();
        for (text, shown) in [
            (to_json(&r), "pretty"),
            (serde_json::to_string(&r).unwrap(), "compact"),
            (
                WRITTEN_BEFORE_KINDS.to_string(),
                "a check's, with its comparison",
            ),
            (check, "the same, compact"),
        ] {
            let mut want = parse(&text, shown).expect(shown);
            want.run.settings.cases = Default::default();
            let (mut got, log) = read_logged(text.as_bytes(), shown).expect(shown);
            assert!(
                got.experiments.iter().all(|e| e.cases.is_empty()),
                "{shown}"
            );
            log.fill(&mut got).expect(shown);
            assert_eq!(got, want, "{shown}");
        }
        // The version is checked as it is read: a newer one is refused by its version.
        let e = read_logged(with_format("2").as_bytes(), "new.json").expect_err("too new");
        assert!(matches!(e, SnapshotError::Incompatible { .. }), "{e}");
        assert!(
            e.to_string()
                .starts_with("new.json: snapshot format 2 is newer"),
            "{e}"
        );
        let e = read_logged(&b"{\"run\": 1}"[..], "x.json").expect_err("no format");
        assert!(e.to_string().starts_with("x.json:"), "{e}");
        let e = read_logged(&b"{\"format\": 1, \"run\""[..], "cut.json").expect_err("cut");
        assert!(e.to_string().starts_with("cut.json:1:"), "{e}");
    }

    #[test]
    fn load_and_save_name_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("nested/run.json");
        let r = run(
            "r",
            "main",
            "2026-01-01T00:00:00Z",
            vec![case("a", Some(1.0), Some(true))],
        );
        save(&path, &r).expect("save");
        assert_eq!(load(&path).expect("load"), r);
        let e = load(&dir.path().join("missing.json")).expect_err("missing");
        assert!(e.to_string().contains("missing.json"), "{e}");
        assert!(e.is_bad_input());
    }

    #[test]
    fn a_history_stored_before_the_model_was_typed_still_loads_and_gives_baselines() {
        // Two checks on main of the suite above, stored by evals before the model was typed.
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("history.sqlite3");
        std::fs::copy(
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/src/results/testdata/history-before-kinds.sqlite3"
            ),
            &path,
        )
        .expect("copy");
        use crate::history::{HistoryReads, RunStore};
        let h = crate::history::History::open(&path).expect("opens");
        let runs = h.list(&Default::default()).expect("lists");
        assert_eq!(runs.len(), 2);
        for summary in &runs {
            // Read as a stream for the gate: the same run, its cases from the log.
            let mut want = h.get(&summary.id).expect("reads").expect("there");
            want.run.settings.cases = Default::default();
            let (mut got, log) = h.get_logged(&summary.id).expect("reads").expect("there");
            log.fill(&mut got).expect("fills");
            assert_eq!(got, want);
            assert_eq!(
                (summary.command.as_str(), summary.mode.as_str()),
                ("check", "replay")
            );
            assert_eq!(summary.status, RunStatus::Completed);
            let r = h.get(&summary.id).expect("reads").expect("is there");
            assert_eq!(r.run.status, RunStatus::Completed);
            let missed = &r.experiments[2].cases[0];
            assert_eq!(missed.error.as_ref().unwrap().kind, CaseErrorKind::Miss);
        }
        let newest = &runs[0];
        let earlier = h
            .runs_on_branch("proj", "main", "2099-01-01T00:00:00Z", &newest.id)
            .expect("branch runs");
        assert_eq!(earlier.len(), 1);
        assert!(
            earlier[0]
                .selection
                .as_ref()
                .is_some_and(|s| s.is_everything())
        );
    }
}
