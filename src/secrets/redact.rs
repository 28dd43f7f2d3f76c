//! Keeping secrets in the process: one pattern table, one scrubber, one scan.
//!
//! Scrubbing replaces the value of every secret the caller names (the API keys the suite
//! uses, and everything [`crate::secrets`] knows) in each form it may take on the way out
//! (raw, trimmed, JSON-escaped, `\u`-escaped, percent-encoded, base64-encoded) and every
//! `redact` pattern with `[REDACTED]`. The egress scrubber also replaces what the pattern
//! table recognises (known key prefixes, bearer tokens, JWTs, private keys, passwords in
//! URLs). The scan looks for the same things; a cassette that holds one is not written, and
//! `evals cassettes scan` reports it. Findings name the kind of secret and where it is,
//! never the secret.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use base64::Engine as _;
use regex::Regex;
use serde_json::{Map, Value};

/// What a scrubbed secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Request headers that may be written to a cassette; everything else (auth, SDK
/// telemetry, cookies) is dropped.
pub(crate) const REQUEST_HEADERS: &[&str] = &["content-type", "accept"];
/// Response headers that may be written (`retry-after` so replayed rate limits behave).
/// `x-litellm-response-cost`: a LiteLLM proxy reports a non-streamed call's cost only there,
/// so replay reports it too.
pub(crate) const RESPONSE_HEADERS: &[&str] =
    &["content-type", "retry-after", "x-litellm-response-cost"];

/// Secret values shorter than this are neither scrubbed nor scanned for: replacing every
/// `1234` in every body would mangle recordings, and no real key is that short.
pub(crate) const MIN_SECRET_LEN: usize = 8;

/// What the secret scan found in a file: a secret (where, and what kind, never the value),
/// or a file it could not read, so a scan never passes by not looking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// A secret in a file: the file is not safe to commit.
    Secret {
        /// The file.
        path: PathBuf,
        /// 1-based.
        line: usize,
        /// A human name such as "OpenAI-style key (sk-…)".
        kind: &'static str,
    },
    /// The file (or a folder on the way to it) could not be read: not checked.
    Unreadable {
        /// The file or folder.
        path: PathBuf,
        /// What the file system said.
        why: String,
    },
}

impl Finding {
    /// The file it is about.
    pub fn path(&self) -> &Path {
        match self {
            Finding::Secret { path, .. } | Finding::Unreadable { path, .. } => path,
        }
    }
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

/// A table row: kind, regex, plausibility check. A regex with a group named `s` marks the
/// secret part of its match (`Bearer <s>`, `https://user:<s>@`): only that is replaced.
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

/// A token that mixes letters and digits: `xai-` followed by a word is prose, a key is not.
fn has_digit(token: &str) -> bool {
    token.bytes().any(|b| b.is_ascii_digit())
}

/// What already says `[REDACTED]` is not a secret (`https://user:[REDACTED]@host`).
fn not_redacted(token: &str) -> bool {
    !token.contains(REDACTED)
}

/// The one table of credential shapes: the write-time refusal, the egress scrubber and
/// `evals cassettes scan` all read it. Most specific first: a later pattern's match that
/// overlaps an earlier one is not reported again (an OpenRouter key is not also an
/// "OpenAI-style key").
pub(crate) const PATTERN_TABLE: &[PatternSpec] = &[
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
        "Stripe key (sk_live_…, rk_live_…)",
        r"\b[rs]k_live_[A-Za-z0-9]{20,}",
        always,
    ),
    (
        "OpenAI-style key (sk-…)",
        r"\bsk-[A-Za-z0-9_-]{20,}",
        not_prose,
    ),
    (
        "AWS access key id (AKIA…)",
        r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
        always,
    ),
    (
        "AWS secret access key",
        r#"(?i)aws_?secret(?:_?access)?_?key["']?\s*[:=]\s*["']?(?P<s>[A-Za-z0-9/+=]{40})\b"#,
        always,
    ),
    (
        "GitHub token (ghp_/gho_/ghu_/ghs_/ghr_…)",
        r"\bgh[pousr]_[A-Za-z0-9]{30,}",
        always,
    ),
    (
        "GitHub token (github_pat_…)",
        r"\bgithub_pat_[A-Za-z0-9_]{30,}",
        always,
    ),
    ("Google API key (AIza…)", r"\bAIza[0-9A-Za-z_-]{35}", always),
    (
        "Hugging Face token (hf_…)",
        r"\bhf_[A-Za-z0-9]{30,}",
        always,
    ),
    ("Groq key (gsk_…)", r"\bgsk_[A-Za-z0-9]{40,}", always),
    ("xAI key (xai-…)", r"\bxai-[A-Za-z0-9]{40,}", has_digit),
    (
        "Slack token (xox?-…)",
        r"\bxox[abeoprs]-[A-Za-z0-9-]{10,}",
        always,
    ),
    (
        "Azure api-key header",
        r#"(?i)\bapi-key["']?\s*[:=]\s*["']?(?P<s>[A-Za-z0-9]{32,})\b"#,
        always,
    ),
    (
        "private key block (-----BEGIN … PRIVATE KEY-----)",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
        always,
    ),
    (
        "password in a URL (scheme://user:password@)",
        r#"\b[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@"'<>\\]+:(?P<s>[^/\s:@"'<>\\]{3,})@"#,
        not_redacted,
    ),
    (
        "bearer token (Bearer …)",
        r"(?i)\bbearer\s+(?P<s>[A-Za-z0-9._~+/=-]{20,})",
        always,
    ),
    (
        "JWT (eyJ….eyJ….…)",
        r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}",
        always,
    ),
];

/// A table regex as compiled: ASCII word boundaries (a Unicode `\b` makes the fast engines
/// give up on non-ASCII text, and model output is full of it).
fn compiled(re: &str) -> String {
    re.replace(r"\b", r"(?-u:\b)")
}

static PATTERNS: LazyLock<Vec<Pattern>> = LazyLock::new(|| {
    PATTERN_TABLE
        .iter()
        .map(|&(kind, re, plausible)| Pattern {
            kind,
            regex: Regex::new(&compiled(re)).expect("built-in secret patterns are valid regexes"),
            plausible,
        })
        .collect()
});

/// Every pattern of the table at once: most text holds none, and one pass says so. Built
/// the first time a text may match ([`table_may_match`]).
static ANY_PATTERN: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();

fn any_pattern() -> Regex {
    let alternation: Vec<String> = PATTERN_TABLE
        .iter()
        .map(|(_, re, _)| format!("(?:{})", compiled(re).replace("(?P<s>", "(?:")))
        .collect();
    Regex::new(&alternation.join("|")).expect("built-in secret patterns are valid regexes")
}

/// Whether `text` holds something of [`PATTERN_TABLE`]'s shape: the compiled alternation
/// once it exists; before, a text holding none of the rows' literals is let through
/// without building it ([`may_match_table`]).
fn table_may_match(text: &str) -> bool {
    match ANY_PATTERN.get() {
        Some(re) => re.is_match(text),
        None => may_match_table(text) && ANY_PATTERN.get_or_init(any_pattern).is_match(text),
    }
}

/// What every row of [`PATTERN_TABLE`] cannot match without: its literal prefix or, for
/// the case-blind rows, its key word (sought ignoring ASCII case). A short text holding
/// none of them is passed by [`may_match_table`] while [`ANY_PATTERN`] is not built yet:
/// compiling the table is about a millisecond, most of a short command's start-up, and most
/// of what such a command prints (`suite: toy (...)`) could never match. Once it is built
/// (the first text that may match), the regex alone decides. Kept beside the table:
/// `every_pattern_is_found_named_and_scrubbed` fails when a row's sample gets past it.
const TABLE_LITERALS: &[&str] = &[
    "sk-",
    "sk_live_",
    "rk_live_",
    "AKIA",
    "ASIA",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "AIza",
    "hf_",
    "gsk_",
    "xai-",
    "xox",
    "-----BEGIN",
    "://",
    "eyJ",
];
const TABLE_WORDS: &[&str] = &["secret", "api-key", "bearer"];

/// Whether `text` may hold a match of [`PATTERN_TABLE`]: always for a long text (there the
/// compiled alternation is the quicker test), else whether it holds one of the rows'
/// literals.
fn may_match_table(text: &str) -> bool {
    if text.len() > 4096 {
        return true;
    }
    TABLE_LITERALS.iter().any(|l| text.contains(l))
        || TABLE_WORDS.iter().any(|w| {
            text.as_bytes()
                .windows(w.len())
                .any(|b| b.eq_ignore_ascii_case(w.as_bytes()))
        })
}

const SECRET_VALUE: &str = "secret value from the environment (one of the suite's API keys)";

/// Each form a secret value may take in what leaves the process: as it is, trimmed (a
/// server that trims the header echoes the key without its space), JSON-escaped, fully
/// `\u`-escaped, percent-encoded (upper and lower hex) and base64-encoded (standard and
/// URL-safe, padded or not, and the stable middle of its encoding at the other two byte
/// offsets of a longer base64 text). Forms shorter than [`MIN_SECRET_LEN`] are left out.
pub(crate) fn encoded_forms(value: &str) -> Vec<String> {
    let mut forms: Vec<String> = Vec::new();
    let trimmed = value.trim();
    for v in [value, trimmed] {
        if v.len() < MIN_SECRET_LEN {
            continue;
        }
        forms.push(v.to_string());
        let json = serde_json::to_string(v).unwrap_or_default();
        forms.push(json[1..json.len() - 1].to_string());
        let unicode: String = v.encode_utf16().map(|u| format!("\\u{u:04x}")).collect();
        forms.push(unicode.to_uppercase().replace("\\U", "\\u"));
        forms.push(unicode);
        let mut upper = String::new();
        let mut lower = String::new();
        for b in v.bytes() {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                upper.push(b as char);
                lower.push(b as char);
            } else {
                upper.push_str(&format!("%{b:02X}"));
                lower.push_str(&format!("%{b:02x}"));
            }
        }
        forms.push(upper);
        forms.push(lower);
        forms.push(upper_plus(v));
        for engine in [
            &base64::engine::general_purpose::STANDARD,
            &base64::engine::general_purpose::URL_SAFE,
        ] {
            let whole = engine.encode(v);
            forms.push(whole.trim_end_matches('=').to_string());
            forms.push(whole);
            // Inside a longer base64 text the value starts 1 or 2 bytes into a group: the
            // characters that depend on the value alone are the same whatever surrounds it.
            for shift in 1..3usize {
                let mut bytes = vec![0u8; shift];
                bytes.extend_from_slice(v.as_bytes());
                let enc = engine.encode(&bytes);
                let skip = (shift * 8).div_ceil(6);
                let stable = (bytes.len() / 3) * 4;
                if stable > skip + MIN_SECRET_LEN {
                    forms.push(enc[skip..stable].to_string());
                }
            }
        }
    }
    forms.retain(|f| f.len() >= MIN_SECRET_LEN);
    forms.sort();
    forms.dedup();
    forms
}

/// Form-encoding (`application/x-www-form-urlencoded`) writes a space as `+`.
fn upper_plus(v: &str) -> String {
    let mut out = String::new();
    for b in v.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else if b == b' ' {
            out.push('+');
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Scrubs secrets out of what is about to leave the process, and scans text for any left.
#[derive(Debug, Clone, Default)]
pub(crate) struct Redactor {
    /// Every encoded form of every secret, longest first, so a secret that contains another
    /// is replaced whole.
    needles: Vec<String>,
    /// The needles as one alternation (`None` when there are none).
    needle_regex: Option<Regex>,
    patterns: Vec<Regex>,
    /// Also replace what the pattern table recognises (the egress scrubber does; the
    /// cassette writer refuses instead, so a recording is never silently altered).
    table: bool,
}

impl Redactor {
    pub fn new(secrets: &[String], patterns: &[Regex]) -> Redactor {
        let mut needles: Vec<String> = secrets.iter().flat_map(|s| encoded_forms(s)).collect();
        needles.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        needles.dedup();
        let needle_regex = if needles.is_empty() {
            None
        } else {
            let alternation: Vec<String> = needles.iter().map(|n| regex::escape(n)).collect();
            Some(
                regex::RegexBuilder::new(&alternation.join("|"))
                    .size_limit(64 << 20)
                    .build()
                    .expect("escaped literals form a valid regex"),
            )
        };
        Redactor {
            needles,
            needle_regex,
            patterns: patterns.to_vec(),
            table: false,
        }
    }

    /// A redactor that also replaces everything the pattern table recognises.
    pub fn with_table(mut self) -> Redactor {
        self.table = true;
        self
    }

    pub fn is_empty(&self) -> bool {
        self.needles.is_empty() && self.patterns.is_empty() && !self.table
    }

    /// `text` with every secret replaced; borrowed when there was none.
    pub fn scrub<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        use std::borrow::Cow;
        let mut out: Cow<'a, str> = Cow::Borrowed(text);
        if let Some(re) = &self.needle_regex
            && re.is_match(&out)
        {
            out = Cow::Owned(re.replace_all(&out, REDACTED).into_owned());
        }
        for pattern in &self.patterns {
            if pattern.is_match(&out) {
                out = Cow::Owned(pattern.replace_all(&out, REDACTED).into_owned());
            }
        }
        if self.table && table_may_match(&out) {
            for pattern in PATTERNS.iter() {
                if !pattern.regex.is_match(&out) {
                    continue;
                }
                let replaced = pattern.regex.replace_all(&out, |c: &regex::Captures| {
                    let whole = c.get(0).expect("group 0");
                    if !(pattern.plausible)(whole.as_str()) {
                        return whole.as_str().to_string();
                    }
                    match c.name("s") {
                        Some(s) => format!(
                            "{}{REDACTED}{}",
                            &whole.as_str()[..s.start() - whole.start()],
                            &whole.as_str()[s.end() - whole.start()..]
                        ),
                        None => REDACTED.to_string(),
                    }
                });
                out = Cow::Owned(replaced.into_owned());
            }
        }
        out
    }

    pub fn scrub_str(&self, text: &str) -> String {
        self.scrub(text).into_owned()
    }

    /// A copy of `value` with every string and every object key scrubbed.
    pub fn scrub_value(&self, value: &Value) -> Value {
        let mut v = value.clone();
        self.scrub_in_place(&mut v);
        v
    }

    /// Scrubs every string and every object key of `value` where it is.
    pub fn scrub_in_place(&self, value: &mut Value) {
        if self.is_empty() {
            return;
        }
        match value {
            Value::String(s) => {
                if let std::borrow::Cow::Owned(o) = self.scrub(s) {
                    *s = o;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.scrub_in_place(v)),
            Value::Object(map) => {
                let dirty = map.keys().any(|k| self.scrub(k) != k.as_str());
                if dirty {
                    let old = std::mem::take(map);
                    let mut out = Map::new();
                    for (k, mut v) in old {
                        self.scrub_in_place(&mut v);
                        out.insert(self.scrub_str(&k), v);
                    }
                    *map = out;
                } else {
                    map.values_mut().for_each(|v| self.scrub_in_place(v));
                }
            }
            _ => {}
        }
    }

    /// Every line of `text` that holds something like a credential, with its kind.
    pub fn scan_text(&self, text: &str) -> Vec<TextFinding> {
        scan_needles(text, &self.needles)
    }
}

fn scan_text(text: &str, secrets: &[String]) -> Vec<TextFinding> {
    let needles: Vec<String> = secrets.iter().flat_map(|s| encoded_forms(s)).collect();
    scan_needles(text, &needles)
}

fn scan_needles(text: &str, needles: &[String]) -> Vec<TextFinding> {
    let mut findings = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let mut spans: Vec<(usize, usize)> = Vec::new();
        let mut kinds: Vec<&'static str> = Vec::new();
        // Values first: a known key is named as one even where a pattern would match too.
        for needle in needles {
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
        if table_may_match(line) {
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
        }
        findings.extend(kinds.into_iter().map(|kind| TextFinding {
            line: index + 1,
            kind,
        }));
    }
    findings
}
/// Scans files, and every file under each folder, for secrets: known key prefixes, bearer
/// tokens, JWTs, and the `extra_secrets` values. A file that cannot be read is reported as
/// [`Finding::Unreadable`], so a scan never passes by not looking.
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
                    Err(e) => findings.push(Finding::Unreadable {
                        path: e.path().unwrap_or(root).to_path_buf(),
                        why: e.to_string(),
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
            findings.extend(
                scan_text(&text, secrets)
                    .into_iter()
                    .map(|f| Finding::Secret {
                        path: path.to_path_buf(),
                        line: f.line,
                        kind: f.kind,
                    }),
            );
        }
        Err(e) => findings.push(Finding::Unreadable {
            path: path.to_path_buf(),
            why: e.to_string(),
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

    /// One sample per row of the pattern table: the text, the kind the scan names, and the
    /// secret part the egress scrubber must remove.
    const SAMPLES: &[(&str, &str, &str)] = &[
        (OR_KEY, "OpenRouter key (sk-or-v1-…)", OR_KEY),
        (
            "key sk-proj-AbCdEf0123456789AbCdEf0123456789",
            "OpenAI-style key (sk-…)",
            "sk-proj-AbCdEf0123456789AbCdEf0123456789",
        ),
        (
            "sk-ant-api03-AbCdEf0123456789AbCdEf01",
            "Anthropic key (sk-ant-…)",
            "sk-ant-api03-AbCdEf0123456789AbCdEf01",
        ),
        (
            "stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc and rk_live_4eC39HqLyjWDarjtT1zdp7dc",
            "Stripe key (sk_live_…, rk_live_…)",
            "4eC39HqLyjWDarjtT1zdp7dc",
        ),
        (
            "AKIAIOSFODNN7EXAMPLE",
            "AWS access key id (AKIA…)",
            "AKIAIOSFODNN7EXAMPLE",
        ),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "AWS secret access key",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        ),
        (
            "ghp_0123456789abcdefghijABCDEFGHIJ012345",
            "GitHub token (ghp_/gho_/ghu_/ghs_/ghr_…)",
            "ghp_0123456789abcdefghijABCDEFGHIJ012345",
        ),
        (
            "actions token ghs_0123456789abcdefghijABCDEFGHIJ012345",
            "GitHub token (ghp_/gho_/ghu_/ghs_/ghr_…)",
            "ghs_0123456789abcdefghijABCDEFGHIJ012345",
        ),
        (
            "oauth gho_0123456789abcdefghijABCDEFGHIJ012345 user ghu_0123456789abcdefghijABCDEFGHIJ012345",
            "GitHub token (ghp_/gho_/ghu_/ghs_/ghr_…)",
            "0123456789abcdefghijABCDEFGHIJ012345",
        ),
        (
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUV",
            "GitHub token (github_pat_…)",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
        ),
        (
            "GET https://generativelanguage.googleapis.com/v1beta/models?key=AIzaSyA-0123456789abcdefghijklmnopqrstu",
            "Google API key (AIza…)",
            "AIzaSyA-0123456789abcdefghijklmnopqrstu",
        ),
        (
            "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567",
            "Hugging Face token (hf_…)",
            "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567",
        ),
        (
            "gsk_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfGhIjKlMnOp",
            "Groq key (gsk_…)",
            "gsk_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfGhIjKlMnOp",
        ),
        (
            "xai-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCd",
            "xAI key (xai-…)",
            "xai-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        ),
        (
            "xoxb-1234567890-abcdef and xoxp-1234567890-abcdef",
            "Slack token (xox?-…)",
            "1234567890-abcdef",
        ),
        (
            r#""api-key": "0123456789abcdef0123456789abcdef""#,
            "Azure api-key header",
            "0123456789abcdef0123456789abcdef",
        ),
        (
            "-----BEGIN RSA PRIVATE KEY-----",
            "private key block (-----BEGIN … PRIVATE KEY-----)",
            "BEGIN RSA PRIVATE KEY",
        ),
        (
            "DATABASE_URL=postgres://admin:hunter2hunter2@db.internal:5432/app",
            "password in a URL (scheme://user:password@)",
            "hunter2hunter2",
        ),
        (
            r#""authorization": "Bearer abcdefghijklmnopqrstuvwxyz012345""#,
            "bearer token (Bearer …)",
            "abcdefghijklmnopqrstuvwxyz012345",
        ),
        (
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "JWT (eyJ….eyJ….…)",
            "dozjgNryP4J3jVmNHl0w5N",
        ),
    ];

    #[test]
    fn every_pattern_is_found_named_and_scrubbed() {
        let egress = Redactor::new(&[], &[]).with_table();
        for &(text, kind, secret) in SAMPLES {
            assert_eq!(kinds(text), vec![kind], "scan of {text}");
            let scrubbed = egress.scrub_str(text);
            assert!(
                !scrubbed.contains(secret),
                "{kind}: {scrubbed} still holds {secret}"
            );
            assert!(scrubbed.contains(REDACTED), "{kind}: {scrubbed}");
            assert!(
                kinds(&scrubbed).is_empty(),
                "{kind}: {scrubbed} still scans"
            );
        }
        // The short-text test lets every sample through, alone and inside a sentence.
        for &(text, kind, _) in SAMPLES {
            assert!(
                may_match_table(text),
                "{kind}: {text} passed as holding none"
            );
            let said = format!("the reply said {} there", text.to_uppercase());
            if kinds(&said) == vec![kind] {
                assert!(may_match_table(&said), "{kind}: {said}");
            }
        }
        assert!(!may_match_table("suite: toy (evals/.llm-evals.config.yml)"));
        // Every row of the table has a sample.
        for (kind, _, _) in PATTERN_TABLE {
            assert!(
                SAMPLES.iter().any(|s| s.1 == *kind),
                "no sample for pattern {kind}"
            );
        }
        // The part around a marked secret stays readable.
        assert_eq!(
            egress.scrub_str("postgres://admin:hunter2hunter2@db/app"),
            "postgres://admin:[REDACTED]@db/app"
        );
        assert_eq!(
            egress.scrub_str("Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345"),
            "Authorization: Bearer [REDACTED]"
        );
    }

    #[test]
    fn known_values_are_found_in_every_encoding() {
        use base64::Engine as _;
        let key = "sekrit/value+with=odd chars";
        let b64 = base64::engine::general_purpose::STANDARD;
        let forms = [
            key.to_string(),
            "sekrit%2Fvalue%2Bwith%3Dodd%20chars".to_string(),
            "sekrit%2fvalue%2bwith%3dodd%20chars".to_string(),
            "sekrit%2Fvalue%2Bwith%3Dodd+chars".to_string(),
            b64.encode(key),
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(key),
            // Inside a longer base64 text, at each byte offset.
            b64.encode(format!("user:{key}")),
            b64.encode(format!("ab{key}xyz")),
            key.encode_utf16().map(|u| format!("\\u{u:04x}")).collect(),
            key.encode_utf16().map(|u| format!("\\u{u:04X}")).collect(),
        ];
        let r = Redactor::new(&[format!("  {key}\n")], &[]);
        for form in &forms {
            let text = format!("echo: {form} done");
            assert_eq!(r.scan_text(&text).len(), 1, "scan missed {form}");
            let scrubbed = r.scrub_str(&text);
            assert!(
                scrubbed.contains(REDACTED),
                "scrub missed {form}: {scrubbed}"
            );
            assert!(r.scan_text(&scrubbed).is_empty(), "{scrubbed}");
        }
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
        assert_eq!(
            found[0],
            Finding::Secret {
                path: dir.path().join("a/x.json"),
                line: 2,
                kind: "OpenRouter key (sk-or-v1-…)"
            }
        );
        assert_eq!(found[1].path(), dir.path().join("env.json"));
        assert!(!format!("{found:?}").contains("0123456789abcdef"));
        let missing = scan_paths(&[dir.path().join("nope.json")], &[]);
        assert_eq!(missing.len(), 1);
        assert!(
            matches!(&missing[0], Finding::Unreadable { path, .. } if path.ends_with("nope.json")),
            "{missing:?}"
        );
    }
}
