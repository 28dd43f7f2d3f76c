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

/// Query parameters whose value is a credential (`?api_key=…`, `&sig=…`), matched in any
/// case; `cassettes.redact_query` adds names. A request's URL keeps each as `[REDACTED]`
/// (`Redactor::scrub_request_url`); the scan and the egress scrubber find a value left.
pub const CREDENTIAL_QUERY_NAMES: &[&str] = &[
    "api_key",
    "access_token",
    "key",
    "token",
    "sig",
    "signature",
    "password",
    "client_secret",
];

const QUERY_KIND: &str = "credential in a URL query (api_key=…)";

/// A credential parameter of a query and its value (group `s`): after `?`, `&` or `;`
/// (also `&amp;`, as HTML writes it), the name in any case, `=`, up to the next
/// separator, space, quote or bracket.
pub(crate) fn query_regex(extra: &[String]) -> Regex {
    let names: Vec<String> = CREDENTIAL_QUERY_NAMES
        .iter()
        .map(|n| (*n).to_string())
        .chain(extra.iter().filter(|n| !n.is_empty()).cloned())
        .map(|n| regex::escape(&n))
        .collect();
    Regex::new(&format!(
        r#"(?i)[?&;](?:{})=(?P<s>[^&#\s"'<>\\]+)"#,
        names.join("|")
    ))
    .expect("escaped names form a valid regex")
}

static BUILTIN_QUERY: LazyLock<Regex> = LazyLock::new(|| query_regex(&[]));

/// `text` with the value of each credential parameter `keep` accepts replaced.
fn redact_params<'a>(
    query: &Regex,
    text: &'a str,
    keep: impl Fn(&str) -> bool,
) -> std::borrow::Cow<'a, str> {
    query.replace_all(text, |c: &regex::Captures| {
        let whole = c.get(0).expect("group 0");
        let value = c.name("s").expect("group s");
        let v = value.as_str();
        if is_redacted(v) || !keep(v) {
            return whole.as_str().to_string();
        }
        format!(
            "{}{REDACTED}",
            &whole.as_str()[..value.start() - whole.start()]
        )
    })
}

/// `[REDACTED]` as it is, or as a URL encoder writes it.
fn is_redacted(v: &str) -> bool {
    v.starts_with(REDACTED)
        || v.get(..14)
            .is_some_and(|p| p.eq_ignore_ascii_case("%5BREDACTED%5D"))
}

/// Whether a credential parameter's value found in text is worth flagging: not
/// `[REDACTED]`, and not a placeholder of documentation or generated code
/// (`key=YOUR_API_KEY`, `token={token}`, `sig=${SIG}`, `key=xxx`).
fn plausible_query_value(v: &str) -> bool {
    let lower = v.to_ascii_lowercase();
    let placeholder = ["{", "$", "%7b", "%3c", "%24", "*"]
        .iter()
        .any(|p| lower.starts_with(p))
        || v.chars()
            .all(|c| c.is_ascii_uppercase() || "_-.".contains(c))
        || v.chars().all(|c| matches!(c, 'x' | 'X' | '.' | '*'));
    !v.is_empty() && !is_redacted(v) && !placeholder
}

/// The JSON fields whose value is a credential, and how the scan names each.
const FIELD_KINDS: &[(&str, &str)] = &[
    ("api_key", "credential in a JSON field (\"api_key\": …)"),
    ("password", "credential in a JSON field (\"password\": …)"),
    ("secret", "credential in a JSON field (\"secret\": …)"),
    (
        "access_token",
        "credential in a JSON field (\"access_token\": …)",
    ),
];

/// A field of [`FIELD_KINDS`] (any case) holding a string, in a JSON text or in a JSON
/// text inside a JSON string (its quotes escaped): the name (group `n`) and the value up to
/// its closing quote (group `v`).
static FIELD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)\\*"(?P<n>api_key|password|secret|access_token)\\*"\s*:\s*\\*"(?P<v>(?:[^"\\]|\\.)*?)\\*""#,
    )
    .expect("the field pattern is a valid regex")
});

/// The kinds of credential fields `line` holds with a value (not empty, not `[REDACTED]`,
/// not a span already found), their value spans added to `spans`.
fn field_kinds(line: &str, spans: &mut Vec<(usize, usize)>) -> Vec<&'static str> {
    let mut kinds = Vec::new();
    if !line.contains('"') {
        return kinds;
    }
    for c in FIELD.captures_iter(line) {
        let (n, v) = (c.name("n").expect("group n"), c.name("v").expect("group v"));
        let overlaps = spans.iter().any(|&(s, e)| v.start() < e && s < v.end());
        if v.as_str().is_empty() || is_redacted(v.as_str()) || overlaps {
            continue;
        }
        spans.push((v.start(), v.end()));
        let name = n.as_str().to_ascii_lowercase();
        if let Some((_, kind)) = FIELD_KINDS.iter().find(|(f, _)| *f == name)
            && !kinds.contains(kind)
        {
            kinds.push(*kind);
        }
    }
    kinds
}

/// How an `sk-`/`sk-ant-` key may be encoded in a file, and the words the scan adds to the
/// key's kind.
const ENCODINGS: [&str; 3] = ["base64-encoded", "percent-encoded", "\\u-escaped"];

/// The table's `sk-` rows (OpenRouter, Anthropic, OpenAI-style) with their kinds for each of
/// [`ENCODINGS`], looked for in the decoded text of a line.
static ENCODED_KINDS: LazyLock<Vec<(usize, [String; 3])>> = LazyLock::new(|| {
    PATTERN_TABLE
        .iter()
        .enumerate()
        .filter(|(_, (_, re, _))| re.starts_with(r"\bsk-"))
        .map(|(i, (kind, _, _))| (i, ENCODINGS.map(|e| format!("{kind}, {e}"))))
        .collect()
});

/// A run of base64 (standard or URL-safe) long enough to hold a key.
static BASE64_RUN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[A-Za-z0-9+/_-]{24,}={0,2}").expect("the base64 pattern is a valid regex")
});

/// `\u0073`, also as a JSON text inside a string writes it (`\\u0073`).
static U_ESCAPE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\\+u([0-9a-fA-F]{4})").expect("the escape pattern is a valid regex")
});

/// The kinds of `sk-`/`sk-ant-` keys `line` holds encoded (base64, percent, `\u`): each
/// decoding of the line (or of each base64 run in it) is searched with the table's `sk-`
/// rows; a key the line also holds as it is was found already.
fn encoded_key_kinds(line: &str) -> Vec<&'static str> {
    let mut kinds: Vec<&'static str> = Vec::new();
    let mut look = |decoded: &str, encoding: usize| {
        for (row, names) in ENCODED_KINDS.iter() {
            let pattern = &PATTERNS[*row];
            let found = pattern
                .regex
                .find_iter(decoded)
                .any(|m| (pattern.plausible)(m.as_str()) && !line.contains(m.as_str()));
            if found {
                let kind: &'static str = names[encoding].as_str();
                if !kinds.contains(&kind) {
                    kinds.push(kind);
                }
                // The most specific row found names it (the table's order).
                break;
            }
        }
    };
    if line.contains('\\') && U_ESCAPE.is_match(line) {
        let decoded = U_ESCAPE.replace_all(line, |c: &regex::Captures| {
            u32::from_str_radix(&c[1], 16)
                .ok()
                .and_then(char::from_u32)
                .map_or_else(|| c[0].to_string(), String::from)
        });
        look(&decoded, 2);
    }
    if line.contains('%') {
        let decoded = crate::text::percent_decoded(line);
        if decoded != line {
            look(&decoded, 1);
        }
    }
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    let config =
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
    let engines = [
        GeneralPurpose::new(&base64::alphabet::STANDARD, config),
        GeneralPurpose::new(&base64::alphabet::URL_SAFE, config),
    ];
    for run in BASE64_RUN.find_iter(line) {
        for engine in &engines {
            if let Ok(bytes) = engine.decode(run.as_str()) {
                look(&String::from_utf8_lossy(&bytes), 0);
            }
        }
    }
    kinds
}

/// Each form a secret value may take in what leaves the process: as it is, trimmed (a
/// server that trims the header echoes the key without its space), JSON-escaped, fully
/// `\u`-escaped, ASCII-escaped (as Python's `json.dumps` writes it: JSON-escaped, each
/// non-ASCII character as `\uXXXX`), each of those escaped again as it is once rendered
/// into JSON or a diagnostic (`\\u0041`, `pa\\\"ss`), the `\u` forms in lower and upper
/// hex, percent-encoded (upper and lower hex) and base64-encoded (standard and URL-safe,
/// padded or not, and the stable middle of its encoding at the other two byte offsets of a
/// longer base64 text). Forms shorter than [`MIN_SECRET_LEN`] are left out.
pub(crate) fn encoded_forms(value: &str) -> Vec<String> {
    let mut forms: Vec<String> = Vec::new();
    let trimmed = value.trim();
    for v in [value, trimmed] {
        if v.len() < MIN_SECRET_LEN {
            continue;
        }
        forms.push(v.to_string());
        let unicode: String = v.encode_utf16().map(|u| format!("\\u{u:04x}")).collect();
        let escaped = [
            json_inner(v),
            unicode.to_uppercase().replace("\\U", "\\u"),
            unicode,
            ascii_escaped(v, false),
            ascii_escaped(v, true),
        ];
        for e in escaped {
            // Rendered again (a diagnostic's `got "\\u0041…"`, a JSON file holding it).
            forms.push(json_inner(&e));
            forms.push(e);
        }
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

/// `v` as the inside of a JSON string (`"` and `\` escaped, control characters `\uXXXX`).
fn json_inner(v: &str) -> String {
    let json = serde_json::to_string(v).unwrap_or_default();
    json.get(1..json.len().saturating_sub(1))
        .unwrap_or_default()
        .to_string()
}

/// `v` JSON-escaped with every non-ASCII UTF-16 unit as `\uXXXX` (`upper`: upper hex), as
/// Python's `json.dumps` (and any JSON writer told to keep to ASCII) writes it.
fn ascii_escaped(v: &str, upper: bool) -> String {
    let mut out = String::new();
    for c in json_inner(v).chars() {
        if c.is_ascii() {
            out.push(c);
            continue;
        }
        let mut units = [0u16; 2];
        for u in c.encode_utf16(&mut units) {
            if upper {
                out.push_str(&format!("\\u{u:04X}"));
            } else {
                out.push_str(&format!("\\u{u:04x}"));
            }
        }
    }
    out
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
    /// The credential query parameters ([`query_regex`]); `None`: the built-in names.
    query: Option<Regex>,
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
            query: None,
        }
    }

    /// A redactor that also takes `names` (`cassettes.redact_query`) for credential query
    /// parameters, beside the built-in ones ([`CREDENTIAL_QUERY_NAMES`]).
    pub fn with_query_names(mut self, names: &[String]) -> Redactor {
        if names.iter().any(|n| !n.is_empty()) {
            self.query = Some(query_regex(names));
        }
        self
    }

    fn query(&self) -> &Regex {
        self.query.as_ref().unwrap_or(&BUILTIN_QUERY)
    }

    /// A request's URL as a cassette keeps it: scrubbed, and the value of every credential
    /// query parameter (by its name, whatever the value) replaced with `[REDACTED]`. The
    /// fingerprint is taken of this form, so such a parameter is matched by its name
    /// alone: replay needs neither the credential nor the same one.
    pub fn scrub_request_url(&self, url: &str) -> String {
        let url = self.scrub(url);
        redact_params(self.query(), &url, |_| true).into_owned()
    }

    /// A query string (`a=1&api_key=…`, no `?`) with every credential parameter's value
    /// replaced, as [`Redactor::scrub_request_url`] does it: for the trajectory of a case.
    pub fn redact_query(&self, query: &str) -> String {
        let marked = format!("?{query}");
        let out = redact_params(self.query(), &marked, |_| true);
        out[1..].to_string()
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
        if self.table && out.contains('=') && self.query().is_match(&out) {
            out = Cow::Owned(redact_params(self.query(), &out, plausible_query_value).into_owned());
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
        scan_needles(text, &self.needles, self.query())
    }
}

fn scan_text(text: &str, secrets: &[String], query: &Regex) -> Vec<TextFinding> {
    let needles: Vec<String> = secrets.iter().flat_map(|s| encoded_forms(s)).collect();
    scan_needles(text, &needles, query)
}

fn scan_needles(text: &str, needles: &[String], query: &Regex) -> Vec<TextFinding> {
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
        if line.contains('=') {
            for c in query.captures_iter(line) {
                let (m, v) = (c.get(0).expect("group 0"), c.name("s").expect("group s"));
                let overlaps = spans.iter().any(|&(s, e)| m.start() < e && s < m.end());
                if overlaps || !plausible_query_value(v.as_str()) {
                    continue;
                }
                spans.push((m.start(), m.end()));
                if !kinds.contains(&QUERY_KIND) {
                    kinds.push(QUERY_KIND);
                }
            }
        }
        for kind in field_kinds(line, &mut spans)
            .into_iter()
            .chain(encoded_key_kinds(line))
        {
            if !kinds.contains(&kind) {
                kinds.push(kind);
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
/// tokens, JWTs, `sk-` keys encoded (base64, percent, `\u`), credentials in URL queries
/// (the built-in names and `query_names`) and in JSON fields, and the `extra_secrets`
/// values. A file that cannot be read is reported as [`Finding::Unreadable`], so a scan
/// never passes by not looking.
pub fn scan_paths(
    paths: &[PathBuf],
    extra_secrets: &[String],
    query_names: &[String],
) -> Vec<Finding> {
    let query = query_regex(query_names);
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
                        scan_file(e.path(), extra_secrets, &query, &mut findings);
                    }
                    Ok(_) => {}
                    Err(e) => findings.push(Finding::Unreadable {
                        path: e.path().unwrap_or(root).to_path_buf(),
                        why: e.to_string(),
                    }),
                }
            }
        } else {
            scan_file(root, extra_secrets, &query, &mut findings);
        }
    }
    findings
}

fn scan_file(path: &Path, secrets: &[String], query: &Regex, findings: &mut Vec<Finding>) {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            findings.extend(scan_text(&text, secrets, query).into_iter().map(|f| {
                Finding::Secret {
                    path: path.to_path_buf(),
                    line: f.line,
                    kind: f.kind,
                }
            }));
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
        scan_text(text, &[], &BUILTIN_QUERY)
            .into_iter()
            .map(|f| f.kind)
            .collect()
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
    fn escaped_forms_are_found_as_json_dumps_writes_them_and_as_rendered_again() {
        let key = "ключ\"pa\\ss-0123";
        let r = Redactor::new(&[key.to_string()], &[]);
        let json_dumps = r#"\u043a\u043b\u044e\u0447\"pa\\ss-0123"#;
        let forms = [
            json_dumps.to_string(),
            json_dumps
                .replace("043a", "043A")
                .replace("043b", "043B")
                .replace("044e", "044E"),
            // A diagnostic's `got`, rendered into JSON: every backslash doubled.
            json_inner(json_dumps),
            json_inner(&json_inner(key)),
            json_inner(
                &key.encode_utf16()
                    .map(|u| format!("\\u{u:04x}"))
                    .collect::<String>(),
            ),
        ];
        for form in &forms {
            let text = format!("got \"{form}\" here");
            assert_eq!(r.scan_text(&text).len(), 1, "scan missed {form}");
            let scrubbed = r.scrub_str(&text);
            assert_eq!(scrubbed, "got \"[REDACTED]\" here", "{form}");
        }
    }

    #[test]
    fn credential_query_parameters_are_found_and_scrubbed_but_placeholders_are_not() {
        let query = "credential in a URL query (api_key=…)";
        for text in [
            "GET https://api.example/find?q=1&api_key=abc123",
            "see https://x.example/a?Token=t0k3n-v4lue",
            "https://x.example/a?q=1&amp;sig=0a1b2c3d",
        ] {
            assert_eq!(kinds(text), vec![query], "{text}");
        }
        for text in [
            "https://x.example/a?api_key=[REDACTED]",
            "https://x.example/a?api_key=%5BREDACTED%5D&q=1",
            "curl 'https://maps.example/geo?address=x&key=YOUR_API_KEY'",
            "https://x.example/a?token={token}&sig=${SIG}&key=xxxx",
            "https://x.example/a?monkey=banana1&keys=2",
        ] {
            assert!(kinds(text).is_empty(), "{text}: {:?}", kinds(text));
        }
        let egress = Redactor::new(&[], &[])
            .with_table()
            .with_query_names(&["session".to_string()]);
        assert_eq!(
            egress.scrub_str("GET /find?q=1&api_key=abc123&session=s3ss1on&page=2 failed"),
            "GET /find?q=1&api_key=[REDACTED]&session=[REDACTED]&page=2 failed"
        );
        // A request's URL keeps every credential parameter's value out, whatever it is.
        let r = Redactor::new(&[], &[]).with_query_names(&["session".to_string()]);
        assert_eq!(
            r.scrub_request_url("https://x/a?key=YOUR_KEY&Session=x&q=hi#frag"),
            "https://x/a?key=[REDACTED]&Session=[REDACTED]&q=hi#frag"
        );
        assert_eq!(r.redact_query("token=abc&q=1"), "token=[REDACTED]&q=1");
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
        let found = scan_text(&text, std::slice::from_ref(&secret), &BUILTIN_QUERY);
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
            &[],
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
        let missing = scan_paths(&[dir.path().join("nope.json")], &[], &[]);
        assert_eq!(missing.len(), 1);
        assert!(
            matches!(&missing[0], Finding::Unreadable { path, .. } if path.ends_with("nope.json")),
            "{missing:?}"
        );
    }
}
