//! Keeping secrets out of cassettes: scrubbing before a write, and scanning what is written.
//!
//! Scrubbing replaces the value of every secret the caller names (the API keys the suite
//! uses) and every `redact` pattern with `[REDACTED]`, in URLs and in every JSON string and
//! key of request and response bodies. The scan then looks for anything that still looks
//! like a credential (known key prefixes, bearer tokens, JWTs, the secret values
//! themselves); a cassette that holds one is not written. Findings name the kind of secret
//! and where it is, never the secret.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

/// What a scrubbed secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Secret values shorter than this are neither scrubbed nor scanned for: replacing every
/// `1234` in every body would mangle recordings, and no real key is that short.
const MIN_SECRET_LEN: usize = 8;

/// A secret found in a file: where, and what kind (never the value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub path: PathBuf,
    /// 1-based; 0 when the file could not be read (then `kind` says why).
    pub line: usize,
    /// A human name such as "OpenAI-style key (sk-…)".
    pub kind: String,
}

/// A secret found in text, before it has a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TextFinding {
    pub line: usize,
    pub kind: &'static str,
}

struct Pattern {
    kind: &'static str,
    regex: Regex,
    /// Rejects matches that are ordinary text (`sk-learn-is-a-python-library`).
    plausible: fn(&str) -> bool,
}

/// A table row: kind, regex, plausibility check.
type PatternSpec = (&'static str, &'static str, fn(&str) -> bool);

fn always(_: &str) -> bool {
    true
}

/// Hyphenated lowercase words (`sk-learn-based-pipeline-step`) are prose, not a key.
fn not_prose(token: &str) -> bool {
    let body = token.trim_start_matches("sk-");
    let prose = body.contains('-')
        && body
            .split('-')
            .all(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase()));
    !prose
}

/// Most specific first: a later pattern's match that overlaps an earlier one is not reported
/// again (an OpenRouter key is not also an "OpenAI-style key").
static PATTERNS: LazyLock<Vec<Pattern>> = LazyLock::new(|| {
    let table: [PatternSpec; 9] = [
        (
            "OpenRouter key (sk-or-v1-…)",
            r"\bsk-or-v1-[A-Za-z0-9_-]{20,}",
            always,
        ),
        (
            "Anthropic key (sk-ant-…)",
            r"\bsk-ant-[A-Za-z0-9_-]{20,}",
            always,
        ),
        (
            "OpenAI-style key (sk-…)",
            r"\bsk-[A-Za-z0-9_-]{20,}",
            not_prose,
        ),
        ("AWS access key id (AKIA…)", r"\bAKIA[0-9A-Z]{16}\b", always),
        ("GitHub token (ghp_…)", r"\bghp_[A-Za-z0-9]{30,}", always),
        (
            "GitHub token (github_pat_…)",
            r"\bgithub_pat_[A-Za-z0-9_]{30,}",
            always,
        ),
        (
            "Slack token (xoxb-…)",
            r"\bxox[abprs]-[A-Za-z0-9-]{10,}",
            always,
        ),
        (
            "bearer token (Bearer …)",
            r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{20,}",
            always,
        ),
        (
            "JWT (eyJ….eyJ….…)",
            r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}",
            always,
        ),
    ];
    table
        .into_iter()
        .map(|(kind, re, plausible)| Pattern {
            kind,
            regex: Regex::new(re).expect("built-in secret patterns are valid regexes"),
            plausible,
        })
        .collect()
});

const SECRET_VALUE: &str = "secret value from the environment (one of the suite's API keys)";

/// Scrubs secrets out of what is about to be written, and scans text for any left.
#[derive(Debug, Clone, Default)]
pub(crate) struct Redactor {
    /// Longest first, so a secret that contains another is replaced whole.
    secrets: Vec<String>,
    patterns: Vec<Regex>,
}

impl Redactor {
    pub fn new(secrets: &[String], patterns: &[Regex]) -> Redactor {
        let mut secrets: Vec<String> = secrets
            .iter()
            .filter(|s| s.len() >= MIN_SECRET_LEN)
            .cloned()
            .collect();
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        Redactor {
            secrets,
            patterns: patterns.to_vec(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty() && self.patterns.is_empty()
    }

    pub fn scrub_str(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
        for pattern in &self.patterns {
            if pattern.is_match(&out) {
                out = pattern.replace_all(&out, REDACTED).into_owned();
            }
        }
        out
    }

    /// A copy of `value` with every string and every object key scrubbed.
    pub fn scrub_value(&self, value: &Value) -> Value {
        if self.is_empty() {
            return value.clone();
        }
        match value {
            Value::String(s) => Value::String(self.scrub_str(s)),
            Value::Array(items) => {
                Value::Array(items.iter().map(|v| self.scrub_value(v)).collect())
            }
            Value::Object(map) => {
                let mut out = Map::new();
                for (k, v) in map {
                    out.insert(self.scrub_str(k), self.scrub_value(v));
                }
                Value::Object(out)
            }
            other => other.clone(),
        }
    }

    /// Every line of `text` that holds something like a credential, with its kind.
    pub fn scan_text(&self, text: &str) -> Vec<TextFinding> {
        scan_text(text, &self.secrets)
    }
}

fn scan_text(text: &str, secrets: &[String]) -> Vec<TextFinding> {
    // A secret inside a JSON string may appear escaped (`"` → `\"`), so look for both forms.
    let needles: Vec<String> = secrets
        .iter()
        .filter(|s| s.len() >= MIN_SECRET_LEN)
        .flat_map(|s| {
            let escaped = serde_json::to_string(s).unwrap_or_default();
            let escaped = escaped.trim_matches('"').to_string();
            [s.clone(), escaped]
        })
        .collect();
    let mut findings = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let mut spans: Vec<(usize, usize)> = Vec::new();
        let mut kinds: Vec<&'static str> = Vec::new();
        for pattern in PATTERNS.iter() {
            for m in pattern.regex.find_iter(line) {
                let overlaps = spans.iter().any(|&(s, e)| m.start() < e && s < m.end());
                if overlaps || !(pattern.plausible)(m.as_str()) {
                    continue;
                }
                spans.push((m.start(), m.end()));
                if !kinds.contains(&pattern.kind) {
                    kinds.push(pattern.kind);
                }
            }
        }
        for needle in &needles {
            for (start, _) in line.match_indices(needle.as_str()) {
                let end = start + needle.len();
                if spans.iter().any(|&(s, e)| start < e && s < end) {
                    continue;
                }
                spans.push((start, end));
                if !kinds.contains(&SECRET_VALUE) {
                    kinds.push(SECRET_VALUE);
                }
            }
        }
        findings.extend(kinds.into_iter().map(|kind| TextFinding {
            line: index + 1,
            kind,
        }));
    }
    findings
}

/// Scans files, and every file under each folder, for secrets: known key prefixes, bearer
/// tokens, JWTs, and the `extra_secrets` values. A file that cannot be read is reported with
/// line 0 and the reason, so a scan never passes by not looking.
pub fn scan_paths(paths: &[PathBuf], extra_secrets: &[String]) -> Vec<Finding> {
    let mut findings = Vec::new();
    for root in paths {
        if root.is_dir() {
            let walker = walkdir::WalkDir::new(root)
                .sort_by_file_name()
                .into_iter()
                .filter_entry(|e| e.file_name() != ".git");
            for entry in walker {
                match entry {
                    Ok(e) if e.file_type().is_file() => {
                        scan_file(e.path(), extra_secrets, &mut findings);
                    }
                    Ok(_) => {}
                    Err(e) => findings.push(Finding {
                        path: e.path().unwrap_or(root).to_path_buf(),
                        line: 0,
                        kind: format!("cannot read: {e}"),
                    }),
                }
            }
        } else {
            scan_file(root, extra_secrets, &mut findings);
        }
    }
    findings
}

fn scan_file(path: &Path, secrets: &[String], findings: &mut Vec<Finding>) {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            findings.extend(scan_text(&text, secrets).into_iter().map(|f| Finding {
                path: path.to_path_buf(),
                line: f.line,
                kind: f.kind.to_string(),
            }));
        }
        Err(e) => findings.push(Finding {
            path: path.to_path_buf(),
            line: 0,
            kind: format!("cannot read: {e}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn kinds(text: &str) -> Vec<&'static str> {
        scan_text(text, &[]).into_iter().map(|f| f.kind).collect()
    }

    const OR_KEY: &str = "sk-or-v1-0123456789abcdef0123456789abcdef01234567";

    #[test]
    fn known_key_shapes_are_found_and_named() {
        assert_eq!(kinds(OR_KEY), vec!["OpenRouter key (sk-or-v1-…)"]);
        assert_eq!(
            kinds("key sk-proj-AbCdEf0123456789AbCdEf0123456789"),
            vec!["OpenAI-style key (sk-…)"]
        );
        assert_eq!(
            kinds("sk-ant-api03-AbCdEf0123456789AbCdEf01"),
            vec!["Anthropic key (sk-ant-…)"]
        );
        assert_eq!(
            kinds("AKIAIOSFODNN7EXAMPLE"),
            vec!["AWS access key id (AKIA…)"]
        );
        assert_eq!(
            kinds("ghp_0123456789abcdefghijABCDEFGHIJ012345"),
            vec!["GitHub token (ghp_…)"]
        );
        assert_eq!(
            kinds("xoxb-1234567890-abcdef"),
            vec!["Slack token (xoxb-…)"]
        );
        assert_eq!(
            kinds(r#""authorization": "Bearer abcdefghijklmnopqrstuvwxyz012345""#),
            vec!["bearer token (Bearer …)"]
        );
        assert_eq!(
            kinds(
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
            ),
            vec!["JWT (eyJ….eyJ….…)"]
        );
    }

    #[test]
    fn ordinary_words_do_not_trigger() {
        assert!(
            kinds("we used sk-learn and scikit-learn; see task-abcdefghijklmnopqrstuvwxyz")
                .is_empty()
        );
        assert!(kinds("sk-learn-based-feature-extraction-pipeline").is_empty());
        assert!(kinds("Bearer [REDACTED]").is_empty());
        assert!(kinds("the bearer of bad news").is_empty());
    }

    #[test]
    fn secret_values_are_found_even_escaped() {
        let secret = "my\"weird-secret-value".to_string();
        let text = serde_json::to_string(&json!({"k": format!("x {secret} y")})).unwrap();
        let found = scan_text(&text, std::slice::from_ref(&secret));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].kind, SECRET_VALUE);
    }

    #[test]
    fn scrubbing_reaches_strings_and_keys_everywhere() {
        let r = Redactor::new(
            &["topsecret-123".to_string(), "short".to_string()],
            &[Regex::new(r"trace-[0-9]+").unwrap()],
        );
        let v = json!({
            "topsecret-123": ["a topsecret-123 b", {"n": "trace-42"}],
            "short": "short stays",
        });
        let out = r.scrub_value(&v);
        assert_eq!(
            out,
            json!({
                "[REDACTED]": ["a [REDACTED] b", {"n": "[REDACTED]"}],
                "short": "short stays",
            })
        );
        assert_eq!(
            r.scrub_str("https://x/v1?key=topsecret-123"),
            "https://x/v1?key=[REDACTED]"
        );
    }

    #[test]
    fn scan_paths_walks_folders_and_never_prints_the_secret() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a")).unwrap();
        std::fs::write(
            dir.path().join("a/x.json"),
            format!("{{\n  \"k\": \"{OR_KEY}\"\n}}\n"),
        )
        .unwrap();
        std::fs::write(dir.path().join("clean.json"), "{\"k\": \"sk-learn\"}").unwrap();
        std::fs::write(
            dir.path().join("env.json"),
            "{\"k\": \"value-of-my-env-key\"}",
        )
        .unwrap();
        let found = scan_paths(
            &[dir.path().to_path_buf()],
            &["value-of-my-env-key".to_string()],
        );
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].path, dir.path().join("a/x.json"));
        assert_eq!(found[0].line, 2);
        assert_eq!(found[0].kind, "OpenRouter key (sk-or-v1-…)");
        assert_eq!(found[1].path, dir.path().join("env.json"));
        assert!(!format!("{found:?}").contains("0123456789abcdef"));
        let missing = scan_paths(&[dir.path().join("nope.json")], &[]);
        assert_eq!(missing.len(), 1);
        assert_eq!(missing[0].line, 0);
    }
}
