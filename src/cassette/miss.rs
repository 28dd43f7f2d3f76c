//! A replay miss as data: which cassette, why nothing matched, the nearest recording and
//! how the request differs from it, and the hint that ends the message. The runner and the
//! reports read its kind; its [`Display`](std::fmt::Display) is the message a user reads.
//!
//! vcrpy's `CannotOverwriteExistingCassetteException` carries the cassette and the failed
//! request in the same way: the explanation is built from them, never parsed back.

use std::fmt;
use std::path::{Path, PathBuf};

use super::format::{Interaction, RecordedRequest, load};
use super::matcher::{describe_difference, nearest};
use super::store::CassetteKey;

/// Replay found no recording for a request.
#[derive(Debug, Clone, PartialEq)]
pub struct Miss {
    /// The cassette the case replays from (it may not exist).
    pub path: PathBuf,
    /// Why nothing matched, with the nearest recording when there is one.
    pub reason: MissReason,
    /// What to run to record it: "run `evals record -c vague` to record it".
    pub hint: String,
}

/// Why a request found no recording.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum MissReason {
    /// There is no cassette for the case, under these settings or any other.
    NoCassette,
    /// There is no cassette under these settings (a changed temperature or effort is
    /// another folder); `nearest` is the case's closest recording under other settings.
    OtherSettings {
        /// The cassette holding it.
        nearest: PathBuf,
        /// How the request differs from it, one field a line.
        diff: Vec<String>,
    },
    /// The cassette holds no interactions.
    Empty,
    /// The request differs from every recording; `nearest` (an index into the cassette's
    /// interactions) differs in the fields of `diff`, one line each.
    Differs {
        /// The index of the nearest recording in the cassette's interactions.
        nearest: usize,
        /// How the request differs from it, one field a line.
        diff: Vec<String>,
    },
    /// The request is recorded `times` times and every recording is used up: it was sent
    /// more often than when recorded.
    UsedUp {
        /// The index of the request's first recording in the cassette's interactions.
        nearest: usize,
        /// How many times it is recorded.
        times: usize,
    },
}

impl Miss {
    /// The field-by-field diff against the nearest recording (empty when there is none, or
    /// when the request is the same and only used up).
    pub fn diff(&self) -> &[String] {
        match &self.reason {
            MissReason::OtherSettings { diff, .. } | MissReason::Differs { diff, .. } => diff,
            _ => &[],
        }
    }

    /// The file holding the nearest recording: this cassette, or the same case's under
    /// other settings; `None` when there is no recording to compare with.
    pub fn nearest_file(&self) -> Option<&Path> {
        match &self.reason {
            MissReason::OtherSettings { nearest, .. } => Some(nearest),
            MissReason::Differs { .. } | MissReason::UsedUp { .. } => Some(&self.path),
            MissReason::NoCassette | MissReason::Empty => None,
        }
    }
}

impl fmt::Display for Miss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        match &self.reason {
            MissReason::NoCassette => writeln!(f, "no cassette for this case ({path})")?,
            MissReason::OtherSettings { nearest, diff } => {
                writeln!(
                    f,
                    "no cassette for this case with these settings ({path}); nearest recording: {}",
                    nearest.display()
                )?;
                indented(f, diff)?;
            }
            MissReason::Empty => {
                writeln!(f, "no recording matches this request ({path})")?;
                writeln!(f, "  the cassette holds no interactions")?;
            }
            MissReason::Differs { diff, .. } => {
                writeln!(f, "no recording matches this request ({path})")?;
                indented(f, diff)?;
            }
            MissReason::UsedUp { times, .. } => {
                writeln!(f, "no recording matches this request ({path})")?;
                writeln!(
                    f,
                    "  this request was recorded {times} time(s) and every recording is \
                     used: it was sent more often than when recorded"
                )?;
            }
        }
        f.write_str(&self.hint)
    }
}

/// The lines of a miss's diff, indented under its first line.
fn indented(f: &mut fmt::Formatter<'_>, lines: &[String]) -> fmt::Result {
    for line in lines {
        writeln!(f, "  {line}")?;
    }
    Ok(())
}

/// Explains why `request` found no recording in the cassette of `key` under `dir` (at
/// `path`). `recorded` is the cassette as loaded, `None` when there was none: then the
/// case's cassettes under the contender's other settings are searched for the nearest.
pub(crate) fn diagnose(
    path: &Path,
    key: &CassetteKey,
    dir: &Path,
    recorded: Option<&[Interaction]>,
    request: &RecordedRequest,
    ignore: &[String],
    hint: &str,
) -> Miss {
    let reason = match recorded {
        None => {
            // Settings are part of the path: a changed temperature or effort finds no file.
            // Diff against the nearest recording of this case under other settings.
            let best = key
                .other_settings(dir)
                .into_iter()
                .filter_map(|other| {
                    let interactions = load(&other).ok()?.interactions;
                    let i = nearest(request, &interactions, ignore)?;
                    let lines = describe_difference(&interactions[i].request, request, ignore);
                    Some((lines.len(), other, lines))
                })
                .min_by_key(|(n, _, _)| *n);
            match best {
                None => MissReason::NoCassette,
                Some((_, nearest, diff)) => MissReason::OtherSettings { nearest, diff },
            }
        }
        Some(recorded) => match nearest(request, recorded, ignore) {
            None => MissReason::Empty,
            Some(index) => {
                let diff = describe_difference(&recorded[index].request, request, ignore);
                if diff.is_empty() {
                    let times = recorded
                        .iter()
                        .filter(|i| i.fingerprint == recorded[index].fingerprint)
                        .count();
                    MissReason::UsedUp {
                        nearest: index,
                        times,
                    }
                } else {
                    MissReason::Differs {
                        nearest: index,
                        diff,
                    }
                }
            }
        },
    };
    Miss {
        path: path.to_path_buf(),
        reason,
        hint: hint.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn miss(reason: MissReason) -> Miss {
        Miss {
            path: PathBuf::from("c/x.json"),
            reason,
            hint: "run `evals record -c x` to record it".into(),
        }
    }

    #[test]
    fn each_reason_reads_as_the_message_and_says_where_the_nearest_is() {
        let m = miss(MissReason::NoCassette);
        assert_eq!(
            m.to_string(),
            "no cassette for this case (c/x.json)\nrun `evals record -c x` to record it"
        );
        assert_eq!(m.nearest_file(), None);
        let m = miss(MissReason::OtherSettings {
            nearest: PathBuf::from("c/y.json"),
            diff: vec!["temperature: 0.1 → 0.7".into()],
        });
        assert_eq!(
            m.to_string(),
            "no cassette for this case with these settings (c/x.json); nearest recording: \
             c/y.json\n  temperature: 0.1 → 0.7\nrun `evals record -c x` to record it"
        );
        assert_eq!(m.nearest_file(), Some(Path::new("c/y.json")));
        assert_eq!(m.diff(), ["temperature: 0.1 → 0.7"]);
        let m = miss(MissReason::UsedUp {
            nearest: 0,
            times: 2,
        });
        assert_eq!(
            m.to_string(),
            "no recording matches this request (c/x.json)\n  this request was recorded 2 \
             time(s) and every recording is used: it was sent more often than when \
             recorded\nrun `evals record -c x` to record it"
        );
        assert!(m.diff().is_empty());
        assert_eq!(
            miss(MissReason::Empty).to_string(),
            "no recording matches this request (c/x.json)\n  the cassette holds no \
             interactions\nrun `evals record -c x` to record it"
        );
    }
}
