//! Finding the recording for a request, and explaining a miss.
//!
//! Recordings are found by fingerprint through a first-in-first-out queue per fingerprint,
//! so repeated and concurrent identical requests each get their own recorded response, in
//! the order they were recorded. When nothing matches, the miss is explained field by field
//! against the nearest recording of that case: the one whose request differs in the fewest
//! leaf fields.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use super::fingerprint::{canonical_url, fingerprint_at, strip_fields};
use super::format::{Interaction, RecordedRequest};

/// Strings longer than this (or holding a newline) are shown as a line diff.
const LINE_DIFF_OVER: usize = 20;
/// Values longer than this are shortened in a diff line.
const SHORT_VALUE: usize = 120;
/// A diff stops after this many lines, saying how many it left out.
const MAX_DIFF_LINES: usize = 60;

/// The recordings of one case, each used once, in the order they were recorded. Each
/// recording is found by the fingerprint written with it (a queue per fingerprint: one
/// lookup, however many recordings the cassette holds) and, when none written answers, by
/// the one its request has now relative to the provider's `base_url` (so a cassette written
/// when fingerprints held the whole URL replays as it is). The fingerprint a request has now
/// is computed only then (a replay whose fingerprints are current, the usual case, hashes
/// no recording): [`Matcher::take`] gives the first unused recording whose written
/// fingerprint matches, else the first whose fingerprint now does.
#[derive(Debug, Default)]
pub(crate) struct Matcher {
    /// The recordings by their fingerprint as written, each queue in recorded order.
    written: HashMap<String, VecDeque<usize>>,
    /// Each recording's fingerprint now, once computed.
    now: Vec<Option<String>>,
    used: Vec<bool>,
    ignore_fields: Vec<String>,
    base: String,
}

impl Matcher {
    /// `base` is the provider's `base_url` as the requests are fingerprinted now (scrubbed).
    pub fn new(interactions: &[Interaction], ignore_fields: &[String], base: &str) -> Matcher {
        Matcher {
            written: interactions
                .iter()
                .enumerate()
                .fold(HashMap::new(), |mut by, (index, i)| {
                    by.entry(i.fingerprint.clone())
                        .or_insert_with(VecDeque::new)
                        .push_back(index);
                    by
                }),
            now: vec![None; interactions.len()],
            used: vec![false; interactions.len()],
            ignore_fields: ignore_fields.to_vec(),
            base: base.to_string(),
        }
    }

    /// Whether the recording at `index` was replayed.
    pub fn is_used(&self, index: usize) -> bool {
        self.used.get(index).copied().unwrap_or(false)
    }

    /// The next unused recording with this fingerprint (`interactions` are the ones the
    /// matcher was made from).
    pub fn take(&mut self, fingerprint: &str, interactions: &[Interaction]) -> Option<usize> {
        if let Some(queue) = self.written.get_mut(fingerprint) {
            while let Some(index) = queue.pop_front() {
                if !self.used[index] {
                    self.used[index] = true;
                    return Some(index);
                }
            }
        }
        for (index, interaction) in interactions.iter().enumerate().take(self.used.len()) {
            if self.used[index] {
                continue;
            }
            let now = self.now[index].get_or_insert_with(|| {
                fingerprint_at(
                    &interaction.request.to_http(),
                    &self.ignore_fields,
                    &self.base,
                )
            });
            if now == fingerprint {
                self.used[index] = true;
                return Some(index);
            }
        }
        None
    }
}

/// What a request is compared on: method, canonical URL, and the body minus ignored fields.
struct View {
    method: String,
    url: String,
    body: Value,
}

impl View {
    fn of(req: &RecordedRequest, ignore_fields: &[String]) -> View {
        View {
            method: req.method.to_ascii_uppercase(),
            url: canonical_url(&req.url),
            body: req
                .body
                .as_ref()
                .map_or(Value::Null, |b| strip_fields(b, ignore_fields)),
        }
    }
}

/// The recorded interaction whose request differs from `request` in the fewest leaf fields
/// (the first such one on a tie).
pub(crate) fn nearest(
    request: &RecordedRequest,
    recorded: &[Interaction],
    ignore_fields: &[String],
) -> Option<usize> {
    let wanted = View::of(request, ignore_fields);
    let wanted_leaves = leaves(&wanted.body);
    recorded
        .iter()
        .enumerate()
        .map(|(index, interaction)| {
            let have = View::of(&interaction.request, ignore_fields);
            let mut distance =
                usize::from(have.method != wanted.method) + usize::from(have.url != wanted.url);
            let have_leaves = leaves(&have.body);
            let paths: BTreeSet<&String> = have_leaves.keys().chain(wanted_leaves.keys()).collect();
            distance += paths
                .into_iter()
                .filter(|p| have_leaves.get(*p) != wanted_leaves.get(*p))
                .count();
            (distance, index)
        })
        .min()
        .map(|(_, index)| index)
}

/// Every leaf of a JSON value by its `a.b[0].c` path (empty objects and arrays are leaves).
fn leaves(value: &Value) -> BTreeMap<String, &Value> {
    fn walk<'v>(path: String, value: &'v Value, out: &mut BTreeMap<String, &'v Value>) {
        match value {
            Value::Object(map) if !map.is_empty() => {
                for (key, child) in map {
                    walk(join_key(&path, key), child, out);
                }
            }
            Value::Array(items) if !items.is_empty() => {
                for (index, child) in items.iter().enumerate() {
                    walk(format!("{path}[{index}]"), child, out);
                }
            }
            leaf => {
                out.insert(path, leaf);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(String::new(), value, &mut out);
    out
}

fn join_key(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// How `request` differs from `recorded`, one line per changed field (line diffs indented
/// below their field). Empty when they are the same after `ignore_fields`.
pub(crate) fn describe_difference(
    recorded: &RecordedRequest,
    request: &RecordedRequest,
    ignore_fields: &[String],
) -> Vec<String> {
    let old = View::of(recorded, ignore_fields);
    let new = View::of(request, ignore_fields);
    let mut out = Vec::new();
    if old.method != new.method {
        out.push(format!("method: {} → {}", old.method, new.method));
    }
    if old.url != new.url {
        out.push(format!("url: {} → {}", old.url, new.url));
    }
    diff_values("", &old.body, &new.body, &mut out);
    if out.len() > MAX_DIFF_LINES {
        let more = out.len() - MAX_DIFF_LINES;
        out.truncate(MAX_DIFF_LINES);
        out.push(format!("… and {more} more lines of difference"));
    }
    out
}

fn label(path: &str) -> &str {
    if path.is_empty() { "body" } else { path }
}

fn diff_values(path: &str, old: &Value, new: &Value, out: &mut Vec<String>) {
    if old == new {
        return;
    }
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for key in keys {
                let child = join_key(path, key);
                match (a.get(key), b.get(key)) {
                    (Some(o), Some(n)) => diff_values(&child, o, n, out),
                    (Some(_), None) => out.push(format!("- {child}: (absent)")),
                    (None, Some(n)) => out.push(format!("+ {child}: {}", short(n))),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for index in 0..a.len().max(b.len()) {
                let child = format!("{path}[{index}]");
                match (a.get(index), b.get(index)) {
                    (Some(o), Some(n)) => diff_values(&child, o, n, out),
                    (Some(_), None) => out.push(format!("- {child}: (absent)")),
                    (None, Some(n)) => out.push(format!("+ {child}: {}", short(n))),
                    (None, None) => {}
                }
            }
        }
        (Value::String(a), Value::String(b))
            if a.contains('\n')
                || b.contains('\n')
                || a.chars().count() > LINE_DIFF_OVER
                || b.chars().count() > LINE_DIFF_OVER =>
        {
            out.push(format!("{}:", label(path)));
            line_diff(a, b, out);
        }
        _ => out.push(format!("{}: {} → {}", label(path), short(old), short(new))),
    }
}

/// Changed lines with `-`/`+`, a line of context around each change, `…` between hunks.
fn line_diff(old: &str, new: &str, out: &mut Vec<String>) {
    let diff = TextDiff::from_lines(old, new);
    for (index, group) in diff.grouped_ops(1).iter().enumerate() {
        if index > 0 {
            out.push("  …".to_string());
        }
        for op in group {
            for change in diff.iter_changes(op) {
                let sign = match change.tag() {
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                    ChangeTag::Equal => ' ',
                };
                let text = change.value().trim_end_matches(['\n', '\r']);
                out.push(format!("  {sign}{}", truncate(text, SHORT_VALUE * 2)));
            }
        }
    }
}

/// A value as compact JSON, shortened when long.
fn short(value: &Value) -> String {
    truncate(&value.to_string(), SHORT_VALUE)
}

/// `text` cut to `max_chars`, scrubbed first (a key across the cut would keep its first half).
pub(crate) fn truncate(text: &str, max_chars: usize) -> String {
    let text = &*crate::secrets::scrub(text);
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::super::format::RecordedResponse;
    use super::*;

    fn request(body: Value) -> RecordedRequest {
        RecordedRequest {
            method: "POST".into(),
            url: "https://x/v1/chat/completions".into(),
            headers: BTreeMap::new(),
            body: Some(body),
            raw: None,
        }
    }

    fn interaction(fingerprint: &str, body: Value) -> Interaction {
        Interaction {
            fingerprint: fingerprint.into(),
            request: request(body),
            response: RecordedResponse {
                status: 200,
                headers: BTreeMap::new(),
                body: Value::Null,
                raw: None,
            },
            latency_ms: 1,
            usage: None,
            upstream: None,
        }
    }

    #[test]
    fn queues_are_first_in_first_out_per_fingerprint() {
        let recorded = vec![
            interaction("a", json!(1)),
            interaction("b", json!(2)),
            interaction("a", json!(3)),
        ];
        let mut m = Matcher::new(&recorded, &[], "");
        assert_eq!(m.take("a", &recorded), Some(0));
        assert_eq!(m.take("b", &recorded), Some(1));
        assert_eq!(m.take("a", &recorded), Some(2));
        assert_eq!(m.take("a", &recorded), None);
        assert_eq!(m.take("zzz", &recorded), None);
    }

    #[test]
    fn a_recording_is_found_by_its_written_fingerprint_then_by_its_fingerprint_now_in_order() {
        let mut recorded = vec![
            interaction("stale", json!(1)),
            interaction("x", json!(2)),
            interaction("y", json!(1)),
        ];
        let now = fingerprint_at(&recorded[0].request.to_http(), &[], "");
        recorded[1].fingerprint = now.clone();
        let mut m = Matcher::new(&recorded, &[], "");
        // 1 as written (one lookup); then 0 by what its request hashes to now, 2 the same.
        assert_eq!(m.take(&now, &recorded), Some(1));
        assert_eq!(m.take(&now, &recorded), Some(0));
        assert_eq!(m.take(&now, &recorded), Some(2));
        assert_eq!(m.take(&now, &recorded), None);
        assert_eq!(m.take("stale", &recorded), None);
    }

    #[test]
    fn nearest_has_the_fewest_differing_leaves() {
        let recorded = vec![
            interaction(
                "1",
                json!({"model": "x", "temperature": 0.1, "messages": [{"content": "a"}]}),
            ),
            interaction(
                "2",
                json!({"model": "m", "temperature": 0.1, "messages": [{"content": "b"}]}),
            ),
        ];
        let wanted =
            request(json!({"model": "m", "temperature": 0.7, "messages": [{"content": "b"}]}));
        assert_eq!(nearest(&wanted, &recorded, &[]), Some(1));
        assert_eq!(nearest(&wanted, &[], &[]), None);
    }

    #[test]
    fn differences_are_shown_field_by_field() {
        let old = request(json!({
            "messages": [{"role": "system", "content": "You extract tax facts."}],
            "temperature": 0.1,
            "stop": ["\n"],
            "user": "u1",
        }));
        let new = request(json!({
            "messages": [{"role": "system", "content": "You extract tax facts. Be brief."}],
            "temperature": 0.7,
            "seed": 3,
            "user": "u2",
        }));
        let lines = describe_difference(&old, &new, &["user".to_string()]);
        assert_eq!(
            lines,
            vec![
                "messages[0].content:",
                "  -You extract tax facts.",
                "  +You extract tax facts. Be brief.",
                "+ seed: 3",
                "- stop: (absent)",
                "temperature: 0.1 → 0.7",
            ]
        );
    }

    #[test]
    fn multi_line_strings_get_a_line_diff_with_context() {
        let old = request(json!({"p": "one\ntwo\nthree\nfour\nfive"}));
        let new = request(json!({"p": "one\ntwo\nTHREE\nfour\nfive"}));
        assert_eq!(
            describe_difference(&old, &new, &[]),
            vec!["p:", "   two", "  -three", "  +THREE", "   four"]
        );
    }

    #[test]
    fn method_url_and_short_strings_read_as_old_to_new() {
        let old = request(json!({"model": "a"}));
        let mut new = request(json!({"model": "b"}));
        new.url = "https://x/v2/chat/completions".into();
        assert_eq!(
            describe_difference(&old, &new, &[]),
            vec![
                "url: https://x/v1/chat/completions → https://x/v2/chat/completions",
                "model: \"a\" → \"b\"",
            ]
        );
    }
}
