//! The cassette file: its serde types, its `format` version, and loading with errors that
//! name the file.
//!
//! A cassette holds every HTTP exchange of one case for one contender, in the order they
//! happened. It is written as pretty JSON with every object's keys sorted (the value is
//! turned into a `serde_json::Value`, whose maps are sorted), so re-recording an unchanged
//! case gives a small, readable git diff.
//!
//! A body is kept byte for byte. Where evals' own serialization of it gives back its bytes
//! (JSON evals sent, text), it is written as `body`, pretty and sorted; where it does not (a
//! provider's answer in its own key order, an exec worker's request with its spacing and
//! its `1e2`), as `raw`: the JSON written into the file as it came, not re-serialized
//! (`serde_json`'s `RawValue`), or a JSON string holding the text when it cannot stand
//! there (spaces around it, a top-level string). The fingerprint is computed from the
//! parsed body, apart from the bytes.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use super::http::{HttpRequest, HttpResponse};
use super::sse::{self, Data, Event};
use crate::error::CassetteError;

/// The newest cassette format this build reads. A newer file is refused, not guessed at.
/// A cassette is written in the oldest format that holds what it has, so an older evals
/// reads what it can and refuses the rest instead of misreading it: format 1 with no stream
/// in it; format 2 when a streamed response is a list of `events`; format 3 when it holds
/// an exec adapter's calls to its other APIs (interactions with an `upstream`); format 4
/// when a body (or an event's data) is kept as it came, in `raw`.
pub const FORMAT: u32 = 4;

/// The format of a cassette with other APIs' calls and no `raw` body.
const UPSTREAM_FORMAT: u32 = 3;

/// The format of a cassette with a stream and no other API's interaction in it.
const STREAM_FORMAT: u32 = 2;

/// The format of a cassette with no stream in it.
const PLAIN_FORMAT: u32 = 1;

/// One cassette file: all exchanges of one case for one contender.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cassette {
    pub format: u32,
    /// `dataset/case id`.
    pub case: String,
    pub contender: CassetteContender,
    pub recorded_at: DateTime<Utc>,
    /// The `evals` version that wrote the file.
    pub evals_version: String,
    /// In the order the responses arrived.
    pub interactions: Vec<Interaction>,
}

/// The contender a cassette was recorded for, as written in the file. The cassette's own
/// type (the run's model may change without changing the file): the runner converts at the
/// edge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CassetteContender {
    /// Display id: `openai/gpt-4o-mini`.
    pub id: String,
    /// The config section it came from: `openrouter`, `local`.
    pub provider: String,
    /// The model name sent to the provider.
    pub model: String,
    pub effort: Option<String>,
    /// As written in the config (`0.1`).
    pub temperature: Option<String>,
    pub max_tokens: Option<u32>,
}

/// One request and the response it got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interaction {
    /// The fingerprint of the (scrubbed) request: what replay matches it by.
    pub fingerprint: String,
    /// What was sent.
    pub request: RecordedRequest,
    /// What came back.
    pub response: RecordedResponse,
    /// Reported as the call's latency on replay, so a replayed run shows recorded figures.
    pub latency_ms: u64,
    /// Read from an OpenAI-shaped body when present; informational only (the provider
    /// reads usage from the replayed body itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<RecordedUsage>,
    /// The exec adapter's other API this request went to (`shipping`, a name of
    /// `adapter.upstreams`); `None`: the model (format 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
}

/// The request as written: allow-listed headers only, secrets scrubbed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "FileRequest")]
pub struct RecordedRequest {
    /// `POST`.
    pub method: String,
    /// The URL, its credentials scrubbed.
    pub url: String,
    /// The allow-listed headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The body as JSON (what the fingerprint and the diffs read).
    #[serde(default)]
    pub body: Option<Value>,
    /// The body's bytes as sent, where they are not what `body` serializes to (an exec
    /// worker's request relayed by the gateway); written as `raw` in place of `body`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
}

/// The response as written: allow-listed headers only, secrets scrubbed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "FileResponse")]
pub struct RecordedResponse {
    /// The HTTP status.
    pub status: u16,
    /// The allow-listed headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The body (a stream as its events).
    pub body: Value,
    /// The body's bytes as they came, where they are not what `body` gives back
    /// (what the file would give back); written as `raw` in place of `body`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
}

impl RecordedRequest {
    /// The same request without `raw` when the body's bytes are what `body` serializes to
    /// anyway: the file keeps `body`, pretty and sorted.
    pub(crate) fn raw_if_needed(mut self) -> RecordedRequest {
        if self.raw.is_some() {
            let plain = HttpRequest {
                raw: None,
                ..self.to_http()
            };
            if plain.body_bytes().ok().flatten().as_deref()
                == self.raw.as_deref().map(str::as_bytes)
            {
                self.raw = None;
            }
        }
        self
    }
}

impl RecordedResponse {
    /// The same response without `raw` when `body` gives back the same bytes anyway.
    pub(crate) fn raw_if_needed(mut self) -> RecordedResponse {
        if let Some(raw) = &self.raw
            && super::http::body_bytes(None, &self.body, &self.headers) == raw.as_bytes()
        {
            self.raw = None;
        }
        self
    }
}

/// A request as the file has it: its body as `body`, or as it was sent as `raw`.
#[derive(Deserialize)]
struct FileRequest {
    method: String,
    url: String,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    body: Option<Value>,
    #[serde(default)]
    raw: Option<Box<RawValue>>,
}

impl TryFrom<FileRequest> for RecordedRequest {
    type Error = String;

    fn try_from(f: FileRequest) -> Result<RecordedRequest, String> {
        let raw = f.raw.as_deref().map(raw_text).transpose()?;
        let body = match &raw {
            Some(text) => Some(parsed(text)),
            None => f.body,
        };
        Ok(RecordedRequest {
            method: f.method,
            url: f.url,
            headers: f.headers,
            body,
            raw,
        })
    }
}

/// A response as the file has it: its body as `body`, as it came as `raw`, or a stream as
/// its `events`.
#[derive(Deserialize)]
struct FileResponse {
    status: u16,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// `"body": null` (a body-less answer, an MCP notification's 202) is a body, `null`.
    #[serde(default, deserialize_with = "present")]
    body: Option<Value>,
    #[serde(default)]
    raw: Option<Box<RawValue>>,
    #[serde(default)]
    events: Option<Vec<FileEvent>>,
}

/// A field that is there, even as `null` (`Some(Value::Null)`); one left out is `None`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// An event of a stream as the file has it ([`sse::Event`]).
#[derive(Deserialize)]
struct FileEvent {
    #[serde(default)]
    event: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    retry: Option<String>,
    #[serde(default)]
    comment: Option<String>,
    #[serde(default)]
    data: Option<Value>,
    #[serde(default)]
    raw: Option<Box<RawValue>>,
    #[serde(default)]
    text: Option<String>,
}

impl TryFrom<FileResponse> for RecordedResponse {
    type Error = String;

    fn try_from(f: FileResponse) -> Result<RecordedResponse, String> {
        let raw = f.raw.as_deref().map(raw_text).transpose()?;
        let body = match (&raw, f.events, f.body) {
            (Some(text), _, _) => parsed(text),
            (None, Some(events), _) => {
                let events = events
                    .into_iter()
                    .map(|e| {
                        let data = match (e.data, e.raw, e.text) {
                            (Some(d), _, _) => Some(Data::Json(d)),
                            (None, Some(r), _) => Some(Data::Raw(r.get().to_string())),
                            (None, None, Some(t)) => Some(Data::Text(t)),
                            (None, None, None) => None,
                        };
                        Event {
                            event: e.event,
                            id: e.id,
                            retry: e.retry,
                            comment: e.comment,
                            data,
                        }
                    })
                    .collect::<Vec<_>>();
                Value::String(sse::text(&events))
            }
            (None, None, Some(body)) => body,
            (None, None, None) => return Err("missing field `body`".into()),
        };
        Ok(RecordedResponse {
            status: f.status,
            headers: f.headers,
            body,
            raw,
        })
    }
}

/// The bytes a `raw` holds: a JSON string's text, or the JSON written there as it is.
fn raw_text(raw: &RawValue) -> Result<String, String> {
    let text = raw.get();
    if text.starts_with('"') {
        serde_json::from_str::<String>(text).map_err(|e| format!("`raw`: {e}"))
    } else {
        Ok(text.to_string())
    }
}

/// A body's text as JSON, or as a JSON string holding the text when it is not JSON (as
/// the live client reads it).
fn parsed(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

/// Whether `text` can stand in the file as it is, as a `raw` that reads back as the same
/// bytes: one JSON document, no space around it, and not a string (a `raw` string holds
/// text).
pub(crate) fn embeddable(text: &str) -> bool {
    !text.starts_with('"')
        && serde_json::from_str::<&RawValue>(text).is_ok_and(|r| r.get().len() == text.len())
}

/// Token counts and cost as the provider reported them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RecordedUsage {
    /// Prompt tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// Completion tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// Dollars, as reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// Prompt tokens read from the provider's cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// Completion tokens spent reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    /// What the upstream provider charged for the inference when the body says apart from
    /// `cost` (OpenRouter's `cost_details.upstream_inference_cost`: with your own key, BYOK,
    /// OpenRouter bills `cost: 0` and the spend is the upstream's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_cost: Option<f64>,
}

impl RecordedUsage {
    /// The tokens and cost a response body reports: `usage.prompt_tokens` (or
    /// `input_tokens`), `usage.completion_tokens` (or `output_tokens`) and `usage.cost` of
    /// an OpenAI-shaped body, or of the last event carrying `usage` in a server-sent-events
    /// body (`stream: true`); `None` when it reports none of them. The one reader of usage:
    /// the cassette writes it, the providers price their completions with it.
    pub(crate) fn from_body(body: &Value) -> Option<RecordedUsage> {
        if let Value::String(text) = body {
            let last = text
                .lines()
                .rev()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .find(|v| v.get("usage").is_some_and(|u| !u.is_null()))?;
            return RecordedUsage::from_body(&last);
        }
        let usage = body.get("usage")?;
        let num = |k: &str| usage.get(k).and_then(Value::as_u64);
        let at = |path: &[&str]| dig(usage, path).and_then(Value::as_u64);
        let usage = RecordedUsage {
            prompt_tokens: num("prompt_tokens").or_else(|| num("input_tokens")),
            completion_tokens: num("completion_tokens").or_else(|| num("output_tokens")),
            cost: usage.get("cost").and_then(Value::as_f64),
            // Chat completions' `prompt_tokens_details`, the Responses API's
            // `input_tokens_details`, Anthropic's `cache_read_input_tokens`.
            cached_tokens: at(&["prompt_tokens_details", "cached_tokens"])
                .or_else(|| at(&["input_tokens_details", "cached_tokens"]))
                .or_else(|| num("cache_read_input_tokens")),
            reasoning_tokens: at(&["completion_tokens_details", "reasoning_tokens"])
                .or_else(|| at(&["output_tokens_details", "reasoning_tokens"])),
            upstream_cost: dig(usage, &["cost_details", "upstream_inference_cost"])
                .and_then(Value::as_f64),
        };
        let empty = usage.prompt_tokens.is_none()
            && usage.completion_tokens.is_none()
            && usage.cost.is_none();
        (!empty).then_some(usage)
    }
}

/// The value at `path` below `v` (an object's key, or an array's index written in
/// digits), as [`Value::pointer`] finds it but without its two `String`s a step: a reply is
/// read this way once per case.
pub(crate) fn dig<'a>(mut v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    for key in path {
        v = match v {
            Value::Object(map) => map.get(*key)?,
            Value::Array(items) => items.get(key.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(v)
}

impl RecordedRequest {
    /// The fingerprint replay finds this request by ([`Interaction::fingerprint`]): the
    /// hex SHA-256 of its method, its URL relative to `base_url` (the provider's; empty:
    /// the whole URL) with the query sorted, and its body with sorted keys minus
    /// `ignore_fields` (dotted paths). Headers never count. What a recording written by
    /// hand (or by a program) is filed under, so replay finds it without rehashing it.
    pub fn fingerprint(&self, ignore_fields: &[String], base_url: &str) -> String {
        super::fingerprint::fingerprint_at(&self.to_http(), ignore_fields, base_url)
    }

    /// The request as a provider would have built it (without the headers never stored).
    pub fn to_http(&self) -> HttpRequest {
        HttpRequest {
            method: self.method.clone(),
            url: self.url.clone(),
            headers: self
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            body: self.body.clone(),
            raw: self.raw.clone(),
        }
    }
}

impl Interaction {
    /// The recorded response, with the recorded latency.
    pub fn to_response(&self) -> HttpResponse {
        HttpResponse {
            status: self.response.status,
            headers: self
                .response
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            body: self.response.body.clone(),
            raw: self.response.raw.clone(),
            latency: Duration::from_millis(self.latency_ms),
        }
    }
}

/// The texts the file holds as they came (`raw`), each in place of a marker string until
/// the pretty text is made: a `Value` cannot hold JSON unparsed.
struct Verbatim {
    /// Unique to this write, so no string of a recording can pass for a marker.
    nonce: String,
    texts: Vec<String>,
}

impl Verbatim {
    fn new() -> Verbatim {
        Verbatim {
            nonce: uuid::Uuid::new_v4().simple().to_string(),
            texts: Vec::new(),
        }
    }

    /// The value `text` is written as under `raw`: a marker for JSON that can stand in the
    /// file as it is, else a JSON string holding the text.
    fn hold(&mut self, text: String) -> Value {
        if !embeddable(&text) {
            return Value::String(text);
        }
        let marker = format!("\u{1}evals-raw-{}-{}", self.nonce, self.texts.len());
        self.texts.push(text);
        Value::String(marker)
    }

    /// `pretty` with each marker replaced by its text.
    fn put_back(&self, mut pretty: String) -> String {
        for (i, text) in self.texts.iter().enumerate() {
            // As serde_json writes the marker: the control character escaped.
            let marker = format!("\"\\u0001evals-raw-{}-{i}\"", self.nonce);
            pretty = pretty.replacen(&marker, text, 1);
        }
        pretty
    }
}

impl Cassette {
    /// Pretty JSON with every object's keys sorted, ending in a newline; `raw` bodies as
    /// they came.
    pub fn to_pretty_json(&self) -> Result<String, serde_json::Error> {
        // Through `Value`: its maps are BTreeMaps, so struct fields come out sorted too.
        let mut value = serde_json::to_value(self)?;
        let mut verbatim = Verbatim::new();
        let mut streams = false;
        let mut raws = false;
        for interaction in interactions_mut(&mut value) {
            for side in ["request", "response"] {
                let Some(part) = interaction.get_mut(side).and_then(Value::as_object_mut) else {
                    continue;
                };
                if let Some(Value::String(raw)) = part.remove("raw") {
                    part.remove("body");
                    part.insert("raw".into(), verbatim.hold(raw));
                    raws = true;
                    continue;
                }
                if side == "response"
                    && let Some(Value::String(text)) = part.get("body")
                    && sse::is_stream(text)
                {
                    let events = sse::events(text)
                        .into_iter()
                        .map(|e| event_value(e, &mut verbatim, &mut raws))
                        .collect();
                    part.remove("body");
                    part.insert("events".into(), Value::Array(events));
                    streams = true;
                }
            }
        }
        let upstreams = self.interactions.iter().any(|i| i.upstream.is_some());
        value["format"] = serde_json::json!(if raws {
            FORMAT
        } else if upstreams {
            UPSTREAM_FORMAT
        } else if streams {
            STREAM_FORMAT
        } else {
            PLAIN_FORMAT
        });
        let mut text = verbatim.put_back(serde_json::to_string_pretty(&value)?);
        text.push('\n');
        Ok(text)
    }
}

/// An event as the file writes it; `raws` is set when its data is kept as it came.
fn event_value(e: Event, verbatim: &mut Verbatim, raws: &mut bool) -> Value {
    let mut out = serde_json::Map::new();
    for (k, v) in [
        ("event", e.event),
        ("id", e.id),
        ("retry", e.retry),
        ("comment", e.comment),
    ] {
        if let Some(v) = v {
            out.insert(k.into(), Value::String(v));
        }
    }
    match e.data {
        Some(Data::Json(v)) => {
            out.insert("data".into(), v);
        }
        Some(Data::Raw(text)) => {
            out.insert("raw".into(), verbatim.hold(text));
            *raws = true;
        }
        Some(Data::Text(t)) => {
            out.insert("text".into(), Value::String(t));
        }
        None => {}
    }
    Value::Object(out)
}

/// Reads a cassette, naming the file in every error: unreadable, not JSON, not a cassette,
/// or written by a newer `evals`.
pub fn load(path: &Path) -> Result<Cassette, CassetteError> {
    let text = std::fs::read_to_string(path).map_err(|e| CassetteError::Unreadable {
        path: path.to_path_buf(),
        why: e.to_string(),
    })?;
    parse(&text, path)
}

/// [`load`], with a file that does not exist as `None` (a case not recorded yet).
pub(crate) fn load_if_present(path: &Path) -> Result<Option<Cassette>, CassetteError> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse(&text, path).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(CassetteError::Unreadable {
            path: path.to_path_buf(),
            why: e.to_string(),
        }),
    }
}

/// Parses the text of the cassette at `path`, checking its `format` first: a newer one is
/// refused whatever else it holds.
pub(crate) fn parse(text: &str, path: &Path) -> Result<Cassette, CassetteError> {
    let not_a_cassette = |why: String| CassetteError::NotACassette {
        path: path.to_path_buf(),
        why,
    };
    let too_new = |format: u64| CassetteError::TooNew {
        path: path.to_path_buf(),
        format,
        known: u64::from(FORMAT),
    };
    // Straight into the types (a `raw` body can be read no other way: `RawValue` needs the
    // text); only a file they do not take is read as a tree, to say what is wrong with it.
    let typed = match serde_json::from_str::<Cassette>(text) {
        Ok(cassette) if cassette.format > FORMAT => {
            return Err(too_new(u64::from(cassette.format)));
        }
        Ok(cassette) => return Ok(cassette),
        Err(e) => e,
    };
    let value: Value = serde_json::from_str(text).map_err(|e| not_a_cassette(e.to_string()))?;
    let format = match value.get("format") {
        Some(f) => f
            .as_u64()
            .ok_or_else(|| not_a_cassette(format!("`format` is {f}, expected a number")))?,
        None => return Err(not_a_cassette("no `format` field".into())),
    };
    if format > u64::from(FORMAT) {
        return Err(too_new(format));
    }
    Err(not_a_cassette(typed.to_string()))
}

/// Each interaction's object in a cassette's JSON.
fn interactions_mut(
    value: &mut Value,
) -> impl Iterator<Item = &mut serde_json::Map<String, Value>> {
    value
        .get_mut("interactions")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_response_written_with_a_null_body_reads_back() {
        // An MCP notification's 202 has no body: recorded as `"body": null`.
        let r: RecordedResponse =
            serde_json::from_str(r#"{"status": 202, "headers": {}, "body": null}"#).unwrap();
        assert_eq!((r.status, r.body), (202, Value::Null));
        let written = serde_json::to_string(&RecordedResponse {
            status: 202,
            headers: BTreeMap::new(),
            body: Value::Null,
            raw: None,
        })
        .unwrap();
        assert_eq!(
            serde_json::from_str::<RecordedResponse>(&written)
                .unwrap()
                .body,
            Value::Null
        );
        // No body at all is still an error.
        assert!(serde_json::from_str::<RecordedResponse>(r#"{"status": 200}"#).is_err());
    }

    pub(crate) fn sample() -> Cassette {
        Cassette {
            // No stream in it: written (and so read back) as format 1.
            format: PLAIN_FORMAT,
            case: "toy/vague".into(),
            contender: CassetteContender {
                id: "fake/echo".into(),
                provider: "fake".into(),
                model: "echo".into(),
                effort: None,
                temperature: Some("0.1".into()),
                max_tokens: None,
            },
            recorded_at: DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default(),
            evals_version: env!("CARGO_PKG_VERSION").into(),
            interactions: vec![Interaction {
                fingerprint: "abc".into(),
                request: RecordedRequest {
                    method: "POST".into(),
                    url: "https://x/v1/chat/completions".into(),
                    headers: BTreeMap::from([("content-type".into(), "application/json".into())]),
                    body: Some(json!({"model": "echo", "temperature": 0.1})),
                    raw: None,
                },
                response: RecordedResponse {
                    status: 200,
                    headers: BTreeMap::new(),
                    body: json!({"usage": {"prompt_tokens": 3, "completion_tokens": 4, "cost": 0.5}}),
                    raw: None,
                },
                latency_ms: 1234,
                usage: Some(RecordedUsage {
                    prompt_tokens: Some(3),
                    completion_tokens: Some(4),
                    cost: Some(0.5),
                    ..RecordedUsage::default()
                }),
                upstream: None,
            }],
        }
    }

    #[test]
    fn round_trips_with_sorted_keys() {
        let c = sample();
        let text = c.to_pretty_json().unwrap();
        let keys: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("  \""))
            .map(|l| l.trim().split('"').nth(1).unwrap())
            .collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        assert_eq!(keys, sorted);
        assert!(text.contains("\"format\": 1"));
        assert_eq!(parse(&text, Path::new("c.json")).unwrap(), c);
    }

    #[test]
    fn corrupt_file_is_named_with_position() {
        let err = parse(
            "{\n  \"format\": 1,\n  oops\n}",
            Path::new("cassettes/a/b.json"),
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with("cassettes/a/b.json: not a cassette ("),
            "{msg}"
        );
        assert!(msg.contains("line 3 column"), "{msg}");
    }

    #[test]
    fn future_format_asks_for_an_upgrade() {
        let err = parse(r#"{"format": 7}"#, Path::new("cassettes/a/b.json")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cassettes/a/b.json: format 7 is newer than this evals understands (4); upgrade evals"
        );
    }

    #[test]
    fn json_that_is_not_a_cassette_is_named() {
        let err = parse(r#"{"hello": 1}"#, Path::new("x.json")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "x.json: not a cassette (no `format` field)"
        );
        let err = parse(r#"{"format": 1}"#, Path::new("x.json")).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("x.json: not a cassette (missing field"),
            "{err}"
        );
    }

    #[test]
    fn usage_is_read_from_an_openai_shaped_body() {
        let u = RecordedUsage::from_body(&json!({"usage": {"prompt_tokens": 5}})).unwrap();
        assert_eq!(u.prompt_tokens, Some(5));
        assert_eq!(RecordedUsage::from_body(&json!({"choices": []})), None);
    }

    #[test]
    fn usage_is_read_as_the_providers_read_it_responses_shape_and_streams_included() {
        // The Responses API's names, and a stream whose last usage-bearing event counts:
        // the cassette records what the completion was priced by.
        let responses = json!({"usage": {"input_tokens": 7, "output_tokens": 3}});
        let u = RecordedUsage::from_body(&responses).unwrap();
        assert_eq!((u.prompt_tokens, u.completion_tokens), (Some(7), Some(3)));
        let sse = Value::String(
            "data: {\"choices\":[]}\n\ndata: {\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":4,\"cost\":0.5}}\n\ndata: [DONE]\n".into(),
        );
        let u = RecordedUsage::from_body(&sse).unwrap();
        assert_eq!(
            (u.prompt_tokens, u.completion_tokens, u.cost),
            (Some(9), Some(4), Some(0.5))
        );
        assert_eq!(
            RecordedUsage::from_body(&Value::String("data: [DONE]\n".into())),
            None
        );
    }

    #[test]
    fn a_stream_is_written_as_its_events_in_format_2_and_old_format_1_streams_still_load() {
        let stream = "event: message_start\ndata: {\"type\":\"message_start\"}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
        let mut c = sample();
        c.interactions[0].response.body = Value::String(stream.into());
        let text = c.to_pretty_json().unwrap();
        assert!(text.contains("\"format\": 2"), "{text}");
        let file: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            file["interactions"][0]["response"]["events"],
            json!([
                {"event": "message_start", "data": {"type": "message_start"}},
                {"event": "message_stop", "data": {"type": "message_stop"}},
            ])
        );
        assert_eq!(file["interactions"][0]["response"].get("body"), None);
        let back = parse(&text, Path::new("c.json")).unwrap();
        assert_eq!(
            back.interactions[0].response.body,
            Value::String(stream.into())
        );
        // A cassette recorded before streams were events: its body is the stream's text.
        let mut old: Value = serde_json::from_str(&sample().to_pretty_json().unwrap()).unwrap();
        old["interactions"][0]["response"]["body"] = Value::String(stream.into());
        let old = parse(&old.to_string(), Path::new("old.json")).unwrap();
        assert_eq!(old.format, 1);
        assert_eq!(
            old.interactions[0].response.body,
            Value::String(stream.into())
        );
    }

    #[test]
    fn a_body_kept_as_it_came_is_written_raw_in_format_4_and_reads_back_byte_for_byte() {
        let sent = r#"{"z":1e2,  "model":"echo","n":12345678901234567890123,"z":2}"#;
        let came = "{\n  \"id\": \"x\",\n  \"usage\": {\"prompt_tokens\": 3}\n}\n";
        let mut c = sample();
        c.interactions[0].request.raw = Some(sent.into());
        c.interactions[0].request.body = Some(serde_json::from_str(sent).unwrap());
        c.interactions[0].response.raw = Some(came.into());
        c.interactions[0].response.body = serde_json::from_str(came).unwrap();
        let text = c.to_pretty_json().unwrap();
        assert!(text.contains("\"format\": 4"), "{text}");
        // The request's JSON stands in the file as it was sent; the response, padded with a
        // newline, as a string holding its text.
        assert!(text.contains(&format!("\"raw\": {sent}")), "{text}");
        assert!(
            text.contains(
                r#""raw": "{\n  \"id\": \"x\",\n  \"usage\": {\"prompt_tokens\": 3}\n}\n""#
            ),
            "{text}"
        );
        assert!(!text.contains("\"body\""), "raw in place of body: {text}");
        let back = parse(&text, Path::new("c.json")).unwrap();
        assert_eq!(back.interactions[0].request.raw.as_deref(), Some(sent));
        assert_eq!(back.interactions[0].response.raw.as_deref(), Some(came));
        assert_eq!(back.interactions, c.interactions);
        assert_eq!(
            back.interactions[0].response.body["usage"]["prompt_tokens"],
            3
        );
        // An older evals refuses it rather than replay other bytes.
        assert_eq!(back.format, 4);
    }

    #[test]
    fn a_raw_body_or_event_is_needed_only_where_evals_would_write_other_bytes() {
        let mut c = sample();
        // What evals itself writes for the body: no `raw`.
        let canonical = serde_json::to_string(&c.interactions[0].response.body).unwrap();
        c.interactions[0].response.raw = Some(canonical);
        let plain = c.interactions[0].response.clone().raw_if_needed();
        assert_eq!(plain.raw, None);
        // A stream whose events come in a provider's key order: each kept as it came.
        let stream = "data: {\"z\":1,\"a\":2}\n\ndata: [DONE]\n\n";
        c.interactions[0].response = RecordedResponse {
            status: 200,
            headers: BTreeMap::from([("content-type".into(), "text/event-stream".into())]),
            body: Value::String(stream.into()),
            raw: Some(stream.into()),
        }
        .raw_if_needed();
        assert_eq!(c.interactions[0].response.raw, None, "the text is the body");
        let text = c.to_pretty_json().unwrap();
        assert!(text.contains(r#""raw": {"z":1,"a":2}"#), "{text}");
        assert!(text.contains("\"format\": 4"), "{text}");
        let back = parse(&text, Path::new("c.json")).unwrap();
        assert_eq!(
            back.interactions[0].response.body,
            Value::String(stream.into())
        );
    }

    #[test]
    fn every_committed_cassette_of_an_older_format_loads_and_writes_back_the_same() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut seen = std::collections::BTreeMap::<u32, usize>::new();
        for dir in ["fixtures", "cassettes"] {
            for file in super::super::store::list_files(&root.join(dir)) {
                let text = std::fs::read_to_string(&file).unwrap();
                if !text.contains("\"interactions\"") {
                    continue;
                }
                let cassette = parse(&text, &file).unwrap_or_else(|e| panic!("{e}"));
                *seen.entry(cassette.format).or_default() += 1;
                // Unchanged on a re-record that says the same: a quiet git diff.
                assert_eq!(
                    cassette.to_pretty_json().unwrap(),
                    text,
                    "{}",
                    file.display()
                );
            }
        }
        assert!(
            seen.keys().all(|f| *f < FORMAT) && !seen.is_empty(),
            "{seen:?}"
        );
    }
}
