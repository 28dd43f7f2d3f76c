//! The one way out: every string that leaves the process passes through [`scrub`].
//!
//! The process keeps one egress scrubber. It knows every secret value in play: the values
//! of environment variables whose names say they hold one ([`is_secret_name`]:
//! `GITHUB_TOKEN`, `*_KEY`, `*_TOKEN`, `*_SECRET`, `*PASSWORD`, `AWS_SECRET*`, ...), the
//! suite's API keys and the secret-named values of its `env_files` (registered when the
//! suite loads), and whatever a library caller [`register`]s. It replaces each of them in
//! every form (raw, trimmed, JSON-, `\u`-, ASCII-, percent- and base64-encoded, and the
//! escaped forms escaped again as a rendered diagnostic holds them), the value of every
//! credential query parameter (`?api_key=…`), and everything the pattern table of
//! [`redact`] recognises with `[REDACTED]`.
//!
//! The sinks call it: [`crate::fs::write_atomic`] (reports, snapshots, cassettes,
//! exports), the history store's rows, the terminal output, the warnings log (exec
//! workers' stderr is read line by line and scrubbed), and the GitHub comment's request
//! body.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::{Arc, LazyLock, RwLock};

use serde_json::Value;

pub mod redact;

use redact::Redactor;

struct Egress {
    values: BTreeSet<String>,
    /// Credential query parameters beyond the built-in ones (`cassettes.redact_query`).
    query_names: Vec<String>,
    redactor: Arc<Redactor>,
}

static EGRESS: LazyLock<RwLock<Egress>> = LazyLock::new(|| {
    let values = env_secret_values();
    let redactor = Arc::new(build(&values, &[]));
    RwLock::new(Egress {
        values,
        query_names: Vec::new(),
        redactor,
    })
});

fn build(values: &BTreeSet<String>, query_names: &[String]) -> Redactor {
    let list: Vec<String> = values.iter().cloned().collect();
    Redactor::new(&list, &[])
        .with_table()
        .with_query_names(query_names)
}

/// Whether an environment variable's name says it holds a secret: `GITHUB_TOKEN` and any
/// name ending in `_KEY`, `_KEYS`, `_TOKEN`, `_SECRET`, `PASSWORD`, `PASSWD`, or holding
/// `SECRET` or `CREDENTIAL`, or starting with `AWS_SECRET`. Case-insensitive.
pub fn is_secret_name(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    n == "GITHUB_TOKEN"
        || n.ends_with("_KEY")
        || n.ends_with("_KEYS")
        || n.ends_with("_TOKEN")
        || n.ends_with("_SECRET")
        || n.ends_with("PASSWORD")
        || n.ends_with("PASSWD")
        || n.contains("SECRET")
        || n.contains("CREDENTIAL")
        || n.starts_with("AWS_SECRET")
}

/// The values of this process's secret-named environment variables.
fn env_secret_values() -> BTreeSet<String> {
    crate::env::process_vars()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| is_secret_name(k))
        .map(|(_, v)| v)
        .filter(|v| v.trim().len() >= redact::MIN_SECRET_LEN)
        .collect()
}

/// Adds secret values to the egress scrubber (values shorter than 8 characters are
/// ignored: no key is that short, and scrubbing `1234` everywhere would mangle reports).
pub fn register<I, S>(values: I)
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let new: Vec<String> = values
        .into_iter()
        .map(Into::into)
        .filter(|v| v.trim().len() >= redact::MIN_SECRET_LEN)
        .collect();
    let mut egress = EGRESS.write().unwrap_or_else(|e| e.into_inner());
    let before = egress.values.len();
    egress.values.extend(new);
    if egress.values.len() != before {
        egress.redactor = Arc::new(build(&egress.values, &egress.query_names));
    }
}

/// Adds query parameter names whose values are credentials (`cassettes.redact_query`) to
/// the built-in ones ([`redact::CREDENTIAL_QUERY_NAMES`]): their values are scrubbed from
/// everything that leaves the process, as `name=[REDACTED]`.
pub fn register_query_names(names: &[String]) {
    let mut egress = EGRESS.write().unwrap_or_else(|e| e.into_inner());
    let before = egress.query_names.len();
    for n in names {
        if !n.is_empty() && !egress.query_names.contains(n) {
            egress.query_names.push(n.clone());
        }
    }
    if egress.query_names.len() != before {
        egress.redactor = Arc::new(build(&egress.values, &egress.query_names));
    }
}

/// Every secret value the egress scrubber knows (for the secret scan).
pub fn known() -> Vec<String> {
    let egress = EGRESS.read().unwrap_or_else(|e| e.into_inner());
    egress.values.iter().cloned().collect()
}

fn redactor() -> Arc<Redactor> {
    let egress = EGRESS.read().unwrap_or_else(|e| e.into_inner());
    egress.redactor.clone()
}

/// `text` with every known secret and every recognised credential replaced by
/// `[REDACTED]`; borrowed when there was none.
pub fn scrub(text: &str) -> Cow<'_, str> {
    match redactor().scrub(text) {
        Cow::Borrowed(_) => Cow::Borrowed(text),
        Cow::Owned(o) => Cow::Owned(o),
    }
}

/// Scrubs every string and object key of a JSON value in place.
pub fn scrub_json(value: &mut Value) {
    redactor().scrub_in_place(value)
}

/// Scrubs every string of a serializable value where it is (a case result, before any
/// renderer escapes its text for HTML or Markdown, where the escaped form would no longer
/// match). Cheap when there is nothing to scrub: one serialization and one scan.
pub fn scrub_model<T>(value: &mut T)
where
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    let Ok(text) = serde_json::to_string(value) else {
        return;
    };
    if matches!(scrub(&text), Cow::Borrowed(_)) {
        return;
    }
    let Ok(mut v) = serde_json::to_value(&*value) else {
        return;
    };
    scrub_json(&mut v);
    if let Ok(clean) = serde_json::from_value(v) {
        *value = clean;
    }
}

/// Scrubs bytes that are UTF-8 text; other bytes (never written by us) pass as they are.
pub fn scrub_bytes(bytes: &[u8]) -> Cow<'_, [u8]> {
    match std::str::from_utf8(bytes) {
        Ok(text) => match scrub(text) {
            Cow::Borrowed(_) => Cow::Borrowed(bytes),
            Cow::Owned(o) => Cow::Owned(o.into_bytes()),
        },
        Err(_) => Cow::Borrowed(bytes),
    }
}

/// A writer that scrubs each `write` as a whole before passing it on ([`scrub_bytes`]): for
/// text written in pieces (a streamed snapshot), each piece a JSON value or the text between
/// two, so no string is cut across writes.
#[derive(Debug)]
pub struct ScrubWriter<W: std::io::Write>(pub W);

impl<W: std::io::Write> std::io::Write for ScrubWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write_all(&scrub_bytes(buf))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names() {
        for n in [
            "GITHUB_TOKEN",
            "OPENAI_API_KEY",
            "my_service_token",
            "DB_PASSWORD",
            "AWS_SECRET_ACCESS_KEY",
            "CLIENT_SECRET",
            "GOOGLE_APPLICATION_CREDENTIALS",
        ] {
            assert!(is_secret_name(n), "{n}");
        }
        for n in [
            "PATH",
            "HOME",
            "KEYBOARD",
            "PWD",
            "TOKENIZERS_PARALLELISM",
            "LANG",
        ] {
            assert!(!is_secret_name(n), "{n}");
        }
    }

    #[test]
    fn registered_values_are_scrubbed_in_every_form() {
        let key = "egress-test-key-0123456789";
        register([format!(" {key}\n")]);
        assert_eq!(scrub(&format!("a {key} b")), "a [REDACTED] b");
        let b64 = {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD.encode(key)
        };
        assert!(!scrub(&format!("x={b64}")).contains(&b64));
        assert_eq!(scrub("nothing to see"), "nothing to see");
        assert!(matches!(scrub("nothing to see"), Cow::Borrowed(_)));
        assert!(known().iter().any(|v| v.contains(key)));
    }
}
