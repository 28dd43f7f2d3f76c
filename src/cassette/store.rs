//! Where cassettes live and how they are written.
//!
//! One file per case per contender at
//! `<dir>/<provider>/<model>/<settings>/<dataset>/<case id>.json`. Every part is made
//! filesystem-safe on its own, so no name (`../../etc`, `/abs`, `a\b`) can reach outside
//! the cassette folder; only a case id's `/` (or `\`) makes more than one folder level. A
//! part whose name would be over [`MAX_NAME`] bytes (no file system takes it) is cut and
//! given a hash of the whole. Two case ids can still name one file (`x\y` and `x/y`, `a//b`
//! and `a/b`): [`may_share_a_file`] says which ids can, and the suite refuses two that do
//! when it loads. This file is the one owner of that layout: [`CassetteKey::path_in`]
//! walks it forward, [`CassetteKey::other_settings`] walks it back to the same case under
//! other settings.

use std::path::{Path, PathBuf};

use super::format::Cassette;
use super::redact::Redactor;
use crate::error::{CassetteError, SecretPlace};

/// Which cassette a case's exchanges belong to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CassetteKey {
    /// The provider's config section: `openrouter`, `fake`.
    pub provider: String,
    /// The model as sent: `openai/gpt-4o-mini`.
    pub model: String,
    /// The contender's settings as one stable word, e.g. `default` or `effort-low_t0.1`.
    pub settings: String,
    /// The case's dataset.
    pub dataset: String,
    /// The case id within its dataset; `vague/003` is two path levels.
    pub case_id: String,
}

/// A contender's settings as one stable word, the `<settings>` folder of the layout:
/// `default`, or `effort-low.temp-0.1.max-8192` (each part present only when set).
pub fn settings_slug(
    effort: Option<&str>,
    temperature: Option<&str>,
    max_tokens: Option<u32>,
) -> String {
    let mut parts = Vec::new();
    if let Some(e) = effort {
        parts.push(format!("effort-{e}"));
    }
    if let Some(t) = temperature {
        parts.push(format!("temp-{t}"));
    }
    if let Some(m) = max_tokens {
        parts.push(format!("max-{m}"));
    }
    if parts.is_empty() {
        "default".to_string()
    } else {
        parts.join(".")
    }
}

impl CassetteKey {
    /// The cassette file of this key in the cassette folder `dir`.
    pub fn path_in(&self, dir: &Path) -> PathBuf {
        dir.join(self.relative_path())
    }

    /// The file's path below the cassette folder. Never absolute, never contains `..`.
    pub fn relative_path(&self) -> PathBuf {
        self.contender_folder().join(self.case_path())
    }

    /// The same case's cassettes under the contender's other settings folders (another
    /// effort, temperature or max_tokens of the same provider and model) in `dir`, sorted.
    pub fn other_settings(&self, dir: &Path) -> Vec<PathBuf> {
        let model_dir = dir.join(self.model_folder());
        let own = sanitize_part(&self.settings);
        let case = self.case_path();
        let Ok(entries) = std::fs::read_dir(&model_dir) else {
            return vec![];
        };
        let mut found: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_str() != Some(own.as_str()))
            .map(|e| e.path().join(&case))
            .filter(|p| p.is_file())
            .collect();
        found.sort();
        found
    }

    /// `<provider>/<model>/<settings>`: the folder of every case of one contender (two
    /// contenders sharing it would share their cassettes).
    pub fn contender_folder(&self) -> PathBuf {
        let mut path = self.model_folder();
        path.push(sanitize_part(&self.settings));
        path
    }

    /// `<provider>/<model>`: the folder of every settings of this model.
    fn model_folder(&self) -> PathBuf {
        let mut path = PathBuf::new();
        path.push(sanitize_part(&self.provider));
        // A model's `/` is a vendor prefix, not a folder: `openai/gpt-4o-mini` →
        // `openai__gpt-4o-mini`, so every model is exactly one level.
        path.push(sanitize_part(&self.model.replace('/', "__")));
        path
    }

    /// `<dataset>/<case id>.json`, below the settings folder.
    fn case_path(&self) -> PathBuf {
        case_file(&self.dataset, &self.case_id)
    }
}

/// `<dataset>/<case id>.json`: where a case's cassette is below each contender's folder.
/// A case id's `/` and `\` make folder levels, empty levels left out.
pub fn case_file(dataset: &str, case_id: &str) -> PathBuf {
    let mut path = PathBuf::new();
    path.push(sanitize_part(dataset));
    let mut levels: Vec<&str> = case_id
        .split(['/', '\\'])
        .filter(|s| !s.is_empty())
        .collect();
    let file = levels.pop().map_or_else(|| "_".to_string(), sanitize_part);
    for level in levels {
        path.push(sanitize_part(level));
    }
    path.push(format!("{file}.json"));
    path
}

/// Whether a case id can name the same cassette file as another id of its dataset: one
/// with a `\` or an empty level (`a//b`, a leading or trailing `/`, or no id at all) reads
/// as an id written with single `/`s. Any other id's file is its own (its levels, each
/// made safe by [`sanitize_part`], which keeps names apart).
pub fn may_share_a_file(case_id: &str) -> bool {
    case_id.is_empty()
        || case_id.contains('\\')
        || case_id.starts_with('/')
        || case_id.ends_with('/')
        || case_id.contains("//")
}

/// The longest name a part of a cassette's path may have, in bytes, `.json` included:
/// what ext4, APFS and NTFS take (255). A longer one (which no file system takes, so no
/// cassette has it) is cut and given a hash of the whole.
pub const MAX_NAME: usize = 255;

/// What a part over [`MAX_NAME`] keeps of its clean text, before its hash.
const CUT_TO: usize = 64;

/// Keeps `[A-Za-z0-9._-]`, replaces anything else with `_`; never empty, never `.` or `..`.
/// A part that had to change gets a short hash of the original, so two names that clean
/// to the same text (`a b`, `a_b`) never share a file. A part too long for a file name
/// ([`MAX_NAME`], room for `.json` kept) is its first 64 bytes and a longer hash of the
/// whole, so a 300-character case id gets a file too.
pub(crate) fn sanitize_part(part: &str) -> String {
    let clean = clean_part(part);
    let digest = || crate::fingerprint::sha256_hex(part.as_bytes());
    let changed = clean != part;
    // `-` and 8 hex digits when changed, `.json` when the part is the file.
    let named_len = clean.len() + if changed { 9 } else { 0 } + ".json".len();
    if named_len > MAX_NAME {
        // Clean text is ASCII: any byte is a char boundary.
        format!("{}-{}", &clean[..CUT_TO], &digest()[..16])
    } else if changed {
        format!("{clean}-{}", &digest()[..8])
    } else {
        clean
    }
}

fn clean_part(part: &str) -> String {
    let clean: String = part
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.is_empty() {
        "_".to_string()
    } else if clean.chars().all(|c| c == '.') {
        "_".repeat(clean.len())
    } else {
        clean
    }
}

/// Every `*.json` file under `dir`, sorted; an absent folder has none.
pub fn list_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(walkdir::DirEntry::into_path)
        .filter(|p| p.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    files
}

/// Every temp file a killed write left under `dir` (`.evals-tmp-*.partial`, see
/// [`crate::fs::write_atomic`]), sorted; they are never cassettes, and `git add` would
/// commit them.
pub fn list_partial_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter(|e| crate::fs::is_partial_write(&e.file_name().to_string_lossy()))
        .map(walkdir::DirEntry::into_path)
        .collect();
    files.sort();
    files
}

/// Why a cassette was not written: the split `auto` needs (a refused file system is noted
/// and the run goes on; a refused cassette is an error in every mode).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum WriteError {
    /// The cassette itself is refused: it would hold a secret (or cannot be serialized).
    Refused(CassetteError),
    /// The file system would not take it (a read-only folder, a full disk); names the file.
    Io(CassetteError),
}

impl From<WriteError> for super::http::CallError {
    fn from(e: WriteError) -> super::http::CallError {
        match e {
            WriteError::Refused(e) | WriteError::Io(e) => e.into(),
        }
    }
}

/// What a write did to the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Written {
    /// There was no cassette there.
    New,
    /// The old one differed and was replaced.
    Changed,
    /// The old one says the same but for when and by which version it was recorded, the
    /// latencies and the volatile fields ([`super::volatile`]): it is left as it was, not
    /// rewritten.
    Unchanged,
}

/// Serializes, scans for secrets, and writes atomically, unless the file there already says
/// the same apart from the `volatile` fields ([`Written::Unchanged`]: not rewritten, so its
/// bytes, its date and the git diff stay quiet). A secret still present after scrubbing
/// stops the write; the error names its kind, never its value.
pub(crate) fn write(
    path: &Path,
    cassette: &Cassette,
    redactor: &Redactor,
    volatile: &[String],
) -> Result<Written, WriteError> {
    let text = cassette.to_pretty_json().map_err(|e| {
        WriteError::Refused(CassetteError::Unserializable {
            path: path.to_path_buf(),
            why: e.to_string(),
        })
    })?;
    if let Some(finding) = redactor.scan_text(&text).into_iter().next() {
        return Err(WriteError::Refused(CassetteError::SecretRefused {
            path: path.to_path_buf(),
            kind: finding.kind,
            line: finding.line,
            place: where_secret(cassette, redactor),
        }));
    }
    let written = match std::fs::read_to_string(path) {
        Err(_) if !path.exists() => Written::New,
        // Unreadable: replace it, as before.
        Err(_) => Written::Changed,
        Ok(old_text) => {
            // Both sides as their files read back, so a body kept `raw` on one side and
            // as `body` on the other compares by what it says.
            let same = super::format::parse(&old_text, path)
                .ok()
                .zip(super::format::parse(&text, path).ok())
                .is_some_and(|(old, new)| super::volatile::says_the_same(&new, &old, volatile));
            if same {
                return Ok(Written::Unchanged);
            }
            Written::Changed
        }
    };
    // The scan above is the guard (its redactor knows every secret the egress scrubber
    // does, and the pattern table): the text is written as scanned, not scrubbed again.
    crate::fs::write_atomic_verbatim(path, text.as_bytes()).map_err(|e| {
        let why = match e {
            // The file itself is named first; a folder that could not be made, after it.
            crate::error::Error::Io { path: p, source } if p != path => {
                format!("{}: {source}", p.display())
            }
            crate::error::Error::Io { source, .. } => source.to_string(),
            other => other.to_string(),
        };
        WriteError::Io(CassetteError::Unwritable {
            path: path.to_path_buf(),
            why,
        })
    })?;
    Ok(written)
}

/// Where the first secret the scan finds in `cassette` is: a request (URL, headers, body)
/// or a response; `None` when it is in neither (the case id, the contender).
fn where_secret(cassette: &Cassette, redactor: &Redactor) -> Option<SecretPlace> {
    let holds = |v: serde_json::Result<String>| {
        v.map(|text| !redactor.scan_text(&text).is_empty())
            .unwrap_or(false)
    };
    cassette.interactions.iter().find_map(|i| {
        if holds(serde_json::to_string_pretty(&i.request)) {
            Some(SecretPlace::Request)
        } else if holds(serde_json::to_string_pretty(&i.response)) {
            Some(SecretPlace::Response)
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use std::path::Component;

    use super::*;

    fn key(case_id: &str) -> CassetteKey {
        CassetteKey {
            provider: "openrouter".into(),
            model: "openai/gpt-4o-mini".into(),
            settings: "default".into(),
            dataset: "toy".into(),
            case_id: case_id.into(),
        }
    }

    fn stays_inside(path: &Path) -> bool {
        path.components().all(|c| matches!(c, Component::Normal(_)))
    }

    #[test]
    fn layout_is_provider_model_settings_dataset_case() {
        assert_eq!(
            key("vague/003").relative_path(),
            PathBuf::from("openrouter/openai__gpt-4o-mini/default/toy/vague/003.json")
        );
        // A name that had to change carries a hash of the original: no two share a file.
        assert_eq!(
            key("refund window").relative_path(),
            PathBuf::from("openrouter/openai__gpt-4o-mini/default/toy/refund_window-15b168a5.json")
        );
        assert_ne!(
            key("refund window").relative_path(),
            key("refund_window").relative_path()
        );
    }

    #[test]
    fn settings_make_one_word_and_other_settings_walk_the_layout_back() {
        assert_eq!(settings_slug(None, None, None), "default");
        assert_eq!(
            settings_slug(Some("low"), Some("0.1"), Some(8192)),
            "effort-low.temp-0.1.max-8192"
        );
        let dir = tempfile::tempdir().unwrap();
        let mut k = key("vague/003");
        let own = k.path_in(dir.path());
        k.settings = "temp-0.7".into();
        let warm = k.path_in(dir.path());
        k.settings = "effort-high".into();
        let high = k.path_in(dir.path());
        k.case_id = "other".into();
        let other_case = k.path_in(dir.path());
        for p in [&own, &warm, &high, &other_case] {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "{}").unwrap();
        }
        // The same case under the other settings folders, never itself or another case.
        assert_eq!(
            key("vague/003").other_settings(dir.path()),
            vec![high, warm]
        );
        assert!(key("new").other_settings(dir.path()).is_empty());
        assert!(key("x").other_settings(&dir.path().join("none")).is_empty());
    }

    #[test]
    fn dot_dot_case_id_cannot_escape_the_folder() {
        for id in [
            "../../etc",
            "/etc/passwd",
            "..",
            ".",
            "",
            "a/../../b",
            "..\\..\\x",
            "C:\\x",
        ] {
            let p = key(id).relative_path();
            assert!(stays_inside(&p), "{id:?} → {}", p.display());
            assert!(p.starts_with("openrouter/openai__gpt-4o-mini/default/toy"));
        }
        assert_eq!(
            key("../../etc").relative_path(),
            PathBuf::from(
                "openrouter/openai__gpt-4o-mini/default/toy/__-5ec1f7e7/__-5ec1f7e7/etc.json"
            )
        );
        let mut k = key("x");
        k.provider = "..".into();
        k.model = "../..".into();
        k.dataset = "/".into();
        k.settings = ".".into();
        assert!(
            stays_inside(&k.relative_path()),
            "{}",
            k.relative_path().display()
        );
    }

    #[test]
    fn sanitize_keeps_safe_names_as_they_are_and_marks_changed_ones() {
        assert_eq!(sanitize_part("gpt-4.1_mini"), "gpt-4.1_mini");
        assert_eq!(sanitize_part("llama3.2:latest"), "llama3.2_latest-17177962");
        assert_ne!(
            sanitize_part("llama3.2:latest"),
            sanitize_part("llama3.2_latest")
        );
        assert!(sanitize_part("...").starts_with("___-"));
    }

    #[test]
    fn a_part_too_long_for_a_file_name_is_cut_and_hashed_and_one_that_fits_is_kept() {
        // 250 bytes + `.json` fits a file name: kept as it is (its cassette is where it was).
        let fits = "a".repeat(250);
        assert_eq!(sanitize_part(&fits), fits);
        for long in ["b".repeat(300), format!("{} c", "c".repeat(290))] {
            let cut = sanitize_part(&long);
            assert_eq!(cut.len(), 64 + 1 + 16, "{cut}");
            assert!(cut.starts_with(&long.replace(' ', "_")[..64]), "{cut}");
        }
        // Two long ids that share their first 64 bytes keep their own files.
        let (x, y) = (format!("{fits}x"), format!("{fits}y"));
        assert_ne!(sanitize_part(&x), sanitize_part(&y));
        let file = case_file("d", &format!("v/{}", "z".repeat(300)));
        for part in file.iter() {
            assert!(part.len() <= MAX_NAME, "{}", file.display());
        }
    }

    #[test]
    fn ids_that_can_share_a_file_are_those_with_a_backslash_or_an_empty_level() {
        for odd in ["x\\y", "a//b", "/a", "a/", ""] {
            assert!(may_share_a_file(odd), "{odd}");
        }
        assert_eq!(case_file("d", "x\\y"), case_file("d", "x/y"));
        assert_eq!(case_file("d", "a//b"), case_file("d", "a/b"));
        for plain in ["x/y", "vague/003", "a b", "..", "_"] {
            assert!(!may_share_a_file(plain), "{plain}");
        }
    }

    #[test]
    fn list_files_finds_nested_json_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/b/c.json"), "{}").unwrap();
        std::fs::write(dir.path().join("a/d.json"), "{}").unwrap();
        std::fs::write(dir.path().join("a/notes.txt"), "").unwrap();
        let files = list_files(dir.path());
        assert_eq!(
            files,
            vec![dir.path().join("a/b/c.json"), dir.path().join("a/d.json")]
        );
        assert!(list_files(&dir.path().join("missing")).is_empty());
    }

    #[test]
    fn partial_files_are_the_temp_files_of_interrupted_writes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        for name in [
            "a/b/c.json",
            "a/b/.evals-tmp-Xy12ab.partial",
            "a/.tmpAbC123",
            "a/.tmp-notes",
            "a/evals-tmp-x.partial",
            "a/.evals-tmp-x.json",
        ] {
            std::fs::write(dir.path().join(name), "{").unwrap();
        }
        assert_eq!(
            list_partial_files(dir.path()),
            vec![
                dir.path().join("a/.tmpAbC123"),
                dir.path().join("a/b/.evals-tmp-Xy12ab.partial"),
            ]
        );
        // A partial file is never taken for a cassette.
        assert_eq!(
            list_files(dir.path()),
            vec![
                dir.path().join("a/.evals-tmp-x.json"),
                dir.path().join("a/b/c.json")
            ]
        );
    }
}

#[cfg(test)]
mod quiet_rewrites {
    use std::collections::BTreeMap;

    use serde_json::{Value, json};

    use super::*;
    use crate::cassette::format::{
        CassetteContender, FORMAT, Interaction, RecordedRequest, RecordedResponse,
    };
    use crate::cassette::volatile::volatile_fields;

    /// A cassette of one chat exchange answering `content`, as the server numbered it
    /// (`n`: its id, its `created` time, its fingerprint and the latency).
    fn recorded(n: u64, content: &str, upstream: Option<&str>) -> Cassette {
        let body = json!({
            "id": format!("chatcmpl-{n}"),
            "created": 1_700_000_000 + n,
            "system_fingerprint": format!("fp_{n}"),
            "choices": [{"message": {"role": "assistant", "content": content}}],
        });
        Cassette {
            format: FORMAT,
            case: "d/c0".into(),
            contender: CassetteContender {
                id: "local/m1".into(),
                provider: "local".into(),
                model: "m1".into(),
                effort: None,
                temperature: None,
                max_tokens: Some(64),
            },
            recorded_at: chrono::DateTime::from_timestamp(1_700_000_000 + n as i64, 0)
                .expect("a valid time"),
            evals_version: format!("0.{n}.0"),
            interactions: vec![Interaction {
                fingerprint: "f".repeat(64),
                request: RecordedRequest {
                    method: "POST".into(),
                    url: "http://127.0.0.1:1/v1/chat/completions".into(),
                    headers: BTreeMap::new(),
                    body: Some(json!({"model": "m1", "messages": []})),
                    raw: None,
                },
                response: RecordedResponse {
                    status: 200,
                    headers: BTreeMap::new(),
                    body,
                    raw: None,
                },
                latency_ms: 100 + n,
                usage: None,
                upstream: upstream.map(str::to_string),
            }],
        }
    }

    fn write_it(path: &Path, c: &Cassette) -> Written {
        let redactor = Redactor::new(&[], &[]);
        write(path, c, &redactor, &volatile_fields(&[])).unwrap()
    }

    #[test]
    fn a_re_record_differing_only_in_volatile_fields_leaves_the_file_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c0.json");
        assert_eq!(write_it(&path, &recorded(1, "hi", None)), Written::New);
        let before = std::fs::read(&path).unwrap();
        assert_eq!(
            write_it(&path, &recorded(2, "hi", None)),
            Written::Unchanged
        );
        assert_eq!(std::fs::read(&path).unwrap(), before);
        // A changed answer is rewritten, with the new ids.
        assert_eq!(
            write_it(&path, &recorded(3, "hello", None)),
            Written::Changed
        );
        let after = std::fs::read_to_string(&path).unwrap();
        assert!(
            after.contains("chatcmpl-3") && after.contains("hello"),
            "{after}"
        );
    }

    #[test]
    fn a_body_kept_raw_in_the_providers_key_order_compares_by_what_it_says() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c0.json");
        let raw = |n: u64| {
            let mut c = recorded(n, "hi", None);
            let text = format!(
                "{{\"id\":\"chatcmpl-{n}\",\"choices\":[{{\"message\":{{\"role\":\"assistant\",\"content\":\"hi\"}}}}],\"created\":{n}}}"
            );
            c.interactions[0].response.body = serde_json::from_str::<Value>(&text).unwrap();
            c.interactions[0].response.raw = Some(text);
            c
        };
        assert_eq!(write_it(&path, &raw(1)), Written::New);
        let before = std::fs::read(&path).unwrap();
        assert!(String::from_utf8_lossy(&before).contains("\"raw\""));
        assert_eq!(write_it(&path, &raw(2)), Written::Unchanged);
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }

    #[test]
    fn another_apis_changed_id_is_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c0.json");
        write_it(&path, &recorded(1, "hi", Some("orders")));
        assert_eq!(
            write_it(&path, &recorded(2, "hi", Some("orders"))),
            Written::Changed
        );
        // Apart from the recording's own date, version and latency, it is the same.
        let mut again = recorded(2, "hi", Some("orders"));
        again.recorded_at = recorded(9, "", None).recorded_at;
        again.interactions[0].latency_ms = 1;
        assert_eq!(write_it(&path, &again), Written::Unchanged);
    }

    #[test]
    fn a_volatile_field_the_user_names_is_quiet_too() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c0.json");
        let traced = |trace: &str| {
            let mut c = recorded(1, "hi", None);
            c.interactions[0].response.body["meta"] = json!({"trace": trace});
            c
        };
        let redactor = Redactor::new(&[], &[]);
        let extended = volatile_fields(&["meta.trace".into()]);
        write(&path, &traced("t1"), &redactor, &extended).unwrap();
        assert_eq!(
            write(&path, &traced("t2"), &redactor, &extended).unwrap(),
            Written::Unchanged
        );
        assert_eq!(
            write(&path, &traced("t3"), &redactor, &volatile_fields(&[])).unwrap(),
            Written::Changed
        );
    }
}
