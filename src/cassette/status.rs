//! What `evals cassettes status` reports: for each case and contender that records, whether
//! its cassette is there and still matches the request the suite would send now; then the
//! files no case uses and the temp files interrupted writes left. The caller (which knows
//! the suite, the adapter and the providers) says what it expects; this module looks.

use std::collections::BTreeSet;
use std::path::PathBuf;

use super::format::load_if_present;
use super::http::HttpRequest;
use super::matcher::Matcher;
use super::session::{CassetteOptions, filed};
use super::store::{CassetteKey, list_files, list_partial_files};

/// The state of one case's cassette for one contender.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Status {
    /// The cassette holds the request the suite sends now.
    Recorded,
    /// There is no cassette.
    Missing,
    /// The cassette no longer holds the request the suite sends now (a prompt, a setting
    /// or the case changed): replay would miss.
    Stale,
    /// The request cannot be known without running the case (an exec adapter's), so the
    /// cassette could not be checked.
    Unchecked,
    /// The file is there but could not be read, is not a cassette, or is of a newer
    /// format ([`Entry::problem`] says which): replay would error the case.
    Corrupt,
}

impl Status {
    /// The word the status table shows.
    pub fn label(self) -> &'static str {
        match self {
            Status::Recorded => "recorded",
            Status::Missing => "missing",
            Status::Stale => "stale",
            Status::Unchecked => "unchecked",
            Status::Corrupt => "corrupt",
        }
    }
}

/// A cassette the suite expects: whose it is, and the request it should hold.
#[derive(Debug, Clone)]
pub struct Expected {
    /// Whose cassette it is: contender, dataset, case.
    pub key: CassetteKey,
    /// How the contender is shown: `openai/gpt-4o-mini [default]`.
    pub contender: String,
    /// `dataset/case id`.
    pub case: String,
    /// The request the suite would send now; `None` when it cannot be known.
    pub request: Option<HttpRequest>,
    /// The provider's `base_url`, which request fingerprints count from.
    pub base_url: String,
}

/// One expected cassette and its status.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Missing, stale, recorded...
    pub status: Status,
    /// How the contender is shown: `openai/gpt-4o-mini [default]`.
    pub contender: String,
    /// `dataset/case id`.
    pub case: String,
    /// The cassette file.
    pub path: PathBuf,
    /// Why a [`Status::Corrupt`] cassette is: the error replay would give, naming the file.
    pub problem: Option<String>,
}

/// The state of a cassette folder against what a suite expects.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StatusReport {
    /// One per expected cassette, in the order given.
    pub entries: Vec<Entry>,
    /// Cassette files no expected cassette is (sorted).
    pub unused: Vec<PathBuf>,
    /// Temp files a killed write left (sorted): never cassettes.
    pub partial: Vec<PathBuf>,
    /// The hand-written answers of an exec adapter's other APIs (`fixtures/<upstream>/…`),
    /// in case order, each file once.
    pub fixtures: Vec<Fixture>,
}

/// A hand-written answer of one of an exec adapter's other APIs.
#[derive(Debug, Clone, PartialEq)]
pub struct Fixture {
    /// The upstream it answers for (`shipping`).
    pub upstream: String,
    /// The case it is for (`dataset/id`), or `dataset/*` for a JSONL file's cases.
    pub case: String,
    /// The file.
    pub path: PathBuf,
}

impl StatusReport {
    /// How many entries have `status`.
    pub fn count(&self, status: Status) -> usize {
        self.entries.iter().filter(|e| e.status == status).count()
    }

    /// Whether something must be recorded: a cassette missing, stale or corrupt.
    pub fn needs_recording(&self) -> bool {
        self.count(Status::Missing) + self.count(Status::Stale) + self.count(Status::Corrupt) > 0
    }
}

/// Checks every `expected` cassette in `options.dir`, as replay would find it (the request
/// scrubbed and fingerprinted as a session does it, looked up as its matcher does), and
/// lists the files nothing expects. A cassette that is there but cannot be read, is not
/// one, or is of a newer format is listed as [`Status::Corrupt`] with the error naming the
/// file, and the listing goes on.
pub fn status(
    options: &CassetteOptions,
    expected: impl IntoIterator<Item = Expected>,
) -> StatusReport {
    let dir = options.dir.as_path();
    let ignore_fields = &options.ignore_fields;
    let redactor = options.redactor();
    let mut wanted: BTreeSet<PathBuf> = BTreeSet::new();
    let mut entries = Vec::new();
    for e in expected {
        let path = e.key.path_in(dir);
        wanted.insert(path.clone());
        let mut problem = None;
        let status = match load_if_present(&path) {
            Err(why) => {
                problem = Some(why.to_string());
                Status::Corrupt
            }
            Ok(None) => Status::Missing,
            Ok(Some(cassette)) => match e.request {
                Some(request) => {
                    let base = redactor.scrub_str(&e.base_url);
                    let (_, fp) = filed(&redactor, &request, ignore_fields, &base);
                    let mut matcher = Matcher::new(&cassette.interactions, ignore_fields, &base);
                    if matcher.take(&fp, &cassette.interactions).is_some() {
                        Status::Recorded
                    } else {
                        Status::Stale
                    }
                }
                // An exec adapter's requests cannot be predicted without running it.
                None => Status::Unchecked,
            },
        };
        entries.push(Entry {
            status,
            contender: e.contender,
            case: e.case,
            path,
            problem,
        });
    }
    let unused = list_files(dir)
        .into_iter()
        .filter(|p| !wanted.contains(p))
        .collect();
    StatusReport {
        entries,
        unused,
        partial: list_partial_files(dir),
        fixtures: vec![],
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use super::*;
    use crate::cassette::CassetteError;
    use crate::cassette::format::{
        Cassette, CassetteContender, FORMAT, Interaction, RecordedRequest, RecordedResponse,
    };
    use crate::cassette::redact::Redactor;

    fn key(case_id: &str) -> CassetteKey {
        CassetteKey {
            provider: "local".into(),
            model: "m".into(),
            settings: "default".into(),
            dataset: "toy".into(),
            case_id: case_id.into(),
        }
    }

    fn request(prompt: &str) -> HttpRequest {
        HttpRequest {
            method: "POST".into(),
            url: "http://h/v1/chat/completions".into(),
            headers: vec![],
            body: Some(json!({"prompt": prompt})),
            raw: None,
        }
    }

    fn expected(case_id: &str, request: Option<HttpRequest>) -> Expected {
        Expected {
            key: key(case_id),
            contender: "local/m [default]".into(),
            case: format!("toy/{case_id}"),
            request,
            base_url: "http://h/v1".into(),
        }
    }

    fn options(dir: &Path, redact: &[&str]) -> CassetteOptions {
        CassetteOptions {
            dir: dir.to_path_buf(),
            ignore_fields: vec![],
            redact: redact
                .iter()
                .map(|p| regex::Regex::new(p).unwrap())
                .collect(),
            redact_query: vec![],
            secrets: vec![],
            ..CassetteOptions::default()
        }
    }

    /// Writes the cassette a recording of `prompt` would (its request filed as a session
    /// files it, under `options`).
    fn write_as(options: &CassetteOptions, case_id: &str, prompt: &str) {
        let redactor = Redactor::new(&options.secrets, &options.redact);
        let (recorded, fp) = filed(&redactor, &request(prompt), &[], "http://h/v1");
        write_interaction(&options.dir, case_id, fp, recorded);
    }

    fn write(dir: &Path, case_id: &str, prompt: &str) {
        let r = request(prompt);
        let fp = crate::cassette::fingerprint::fingerprint_at(&r, &[], "http://h/v1");
        let recorded = RecordedRequest {
            method: r.method,
            url: r.url,
            headers: Default::default(),
            body: r.body,
            raw: None,
        };
        write_interaction(dir, case_id, fp, recorded);
    }

    fn write_interaction(dir: &Path, case_id: &str, fp: String, recorded: RecordedRequest) {
        let cassette = Cassette {
            format: FORMAT,
            case: format!("toy/{case_id}"),
            contender: CassetteContender {
                id: "local/m".into(),
                provider: "local".into(),
                model: "m".into(),
                effort: None,
                temperature: None,
                max_tokens: None,
            },
            recorded_at: chrono::DateTime::from_timestamp(0, 0).unwrap_or_default(),
            evals_version: "0".into(),
            interactions: vec![Interaction {
                fingerprint: fp,
                request: recorded,
                response: RecordedResponse {
                    status: 200,
                    headers: Default::default(),
                    body: json!({}),
                    raw: None,
                },
                latency_ms: 1,
                upstream: None,
                usage: None,
            }],
        };
        let path = key(case_id).path_in(dir);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, cassette.to_pretty_json().unwrap()).unwrap();
    }

    #[test]
    fn each_expected_cassette_gets_its_status_and_the_rest_are_unused() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "same", "hi");
        write(dir.path(), "edited", "old prompt");
        write(dir.path(), "exec", "whatever");
        write(dir.path(), "gone", "hi");
        let report = status(
            &options(dir.path(), &[]),
            [
                expected("same", Some(request("hi"))),
                expected("edited", Some(request("new prompt"))),
                expected("exec", None),
                expected("new", Some(request("hi"))),
            ],
        );
        let statuses: Vec<Status> = report.entries.iter().map(|e| e.status).collect();
        assert_eq!(
            statuses,
            [
                Status::Recorded,
                Status::Stale,
                Status::Unchecked,
                Status::Missing
            ]
        );
        assert_eq!(report.entries[3].path, key("new").path_in(dir.path()));
        assert_eq!(report.unused, [key("gone").path_in(dir.path())]);
        assert_eq!(report.count(Status::Stale), 1);
        assert!(report.needs_recording());
        assert_eq!(Status::Unchecked.label(), "unchecked");
    }

    #[test]
    fn a_cassette_of_a_newer_format_or_corrupt_is_listed_as_corrupt_and_the_rest_go_on() {
        let dir = tempfile::tempdir().unwrap();
        let options = options(dir.path(), &[]);
        let path = key("x").path_in(dir.path());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, r#"{"format": 9}"#).unwrap();
        std::fs::write(key("y").path_in(dir.path()), "{ not json").unwrap();
        write_as(&options, "z", "hello");
        let report = status(
            &options,
            [
                expected("x", None),
                expected("y", None),
                expected("z", Some(request("hello"))),
            ],
        );
        let got: Vec<Status> = report.entries.iter().map(|e| e.status).collect();
        assert_eq!(got, [Status::Corrupt, Status::Corrupt, Status::Recorded]);
        assert_eq!(
            report.entries[0].problem,
            Some(
                CassetteError::TooNew {
                    path,
                    format: 9,
                    known: u64::from(crate::cassette::format::FORMAT)
                }
                .to_string()
            )
        );
        assert!(report.needs_recording());
    }

    #[test]
    fn a_request_a_redact_pattern_changes_is_recorded_as_replay_finds_it() {
        // The recording holds `[REDACTED]` where the prompt had the account number; status
        // scrubs the predicted request the same way before it fingerprints it.
        let dir = tempfile::tempdir().unwrap();
        let options = options(dir.path(), &["acct-[0-9]+"]);
        write_as(&options, "acct", "look up acct-42");
        let report = status(
            &options,
            [expected("acct", Some(request("look up acct-42")))],
        );
        assert_eq!(report.entries[0].status, Status::Recorded);
        let report = status(
            &options,
            [expected("acct", Some(request("look up acct-43 now")))],
        );
        assert_eq!(report.entries[0].status, Status::Stale);
    }
}
