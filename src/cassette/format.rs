//! The cassette file: its serde types, its `format` version, and loading with errors that
//! name the file.
//!
//! A cassette holds every HTTP exchange of one case for one contender, in the order they
//! happened. It is written as pretty JSON with every object's keys sorted (the value is
//! turned into a `serde_json::Value`, whose maps are sorted), so re-recording an unchanged
//! case gives a small, readable git diff.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::http::{HttpRequest, HttpResponse};
use crate::error::CassetteError;

/// The newest cassette format this build reads. A newer file is refused, not guessed at.
/// A cassette is written as format 1 unless it holds a stream: then as format 2, whose
/// streamed responses are lists of `events` (an older evals refuses it instead of
/// misreading it); format 1 files load as they always did. A cassette holding an exec
/// adapter's calls to its other APIs (interactions with an `upstream`) is format 3, so an
/// older evals refuses it instead of replaying them as model calls.
pub const FORMAT: u32 = 3;

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
pub struct RecordedRequest {
    /// `POST`.
    pub method: String,
    /// The URL, its credentials scrubbed.
    pub url: String,
    /// The allow-listed headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The body, when it had one.
    #[serde(default)]
    pub body: Option<Value>,
}

/// The response as written: allow-listed headers only, secrets scrubbed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedResponse {
    /// The HTTP status.
    pub status: u16,
    /// The allow-listed headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The body (a stream as its events).
    pub body: Value,
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
            latency: Duration::from_millis(self.latency_ms),
        }
    }
}

impl Cassette {
    /// Pretty JSON with every object's keys sorted, ending in a newline.
    pub fn to_pretty_json(&self) -> Result<String, serde_json::Error> {
        // Through `Value`: its maps are BTreeMaps, so struct fields come out sorted too.
        let mut value = serde_json::to_value(self)?;
        let mut streams = false;
        for response in responses_mut(&mut value) {
            if let Some(Value::String(text)) = response.get("body")
                && super::sse::is_stream(text)
            {
                let events = super::sse::events(text);
                response.remove("body");
                response.insert("events".into(), Value::Array(events));
                streams = true;
            }
        }
        let upstreams = self.interactions.iter().any(|i| i.upstream.is_some());
        value["format"] = serde_json::json!(if upstreams {
            FORMAT
        } else if streams {
            STREAM_FORMAT
        } else {
            PLAIN_FORMAT
        });
        let mut text = serde_json::to_string_pretty(&value)?;
        text.push('\n');
        Ok(text)
    }
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
    // Straight into the types when the text can hold no stream (no `events`, spelled out
    // or escaped): one parse and no tree of the whole file. Anything it does not read is
    // read again the long way below, whose errors name what is wrong.
    if !text.contains("events")
        && !text.contains("\\u")
        && let Ok(cassette) = serde_json::from_str::<Cassette>(text)
    {
        if cassette.format > FORMAT {
            return Err(CassetteError::TooNew {
                path: path.to_path_buf(),
                format: u64::from(cassette.format),
                known: u64::from(FORMAT),
            });
        }
        return Ok(cassette);
    }
    let value: Value = serde_json::from_str(text).map_err(|e| not_a_cassette(e.to_string()))?;
    let format = match value.get("format") {
        Some(f) => f
            .as_u64()
            .ok_or_else(|| not_a_cassette(format!("`format` is {f}, expected a number")))?,
        None => return Err(not_a_cassette("no `format` field".into())),
    };
    if format > u64::from(FORMAT) {
        return Err(CassetteError::TooNew {
            path: path.to_path_buf(),
            format,
            known: u64::from(FORMAT),
        });
    }
    let mut value = value;
    for response in responses_mut(&mut value) {
        if let Some(Value::Array(events)) = response.remove("events") {
            response.insert("body".into(), Value::String(super::sse::text(&events)));
        }
    }
    Cassette::deserialize(value).map_err(|e| not_a_cassette(e.to_string()))
}

/// Each interaction's `response` object in a cassette's JSON.
fn responses_mut(value: &mut Value) -> impl Iterator<Item = &mut serde_json::Map<String, Value>> {
    value
        .get_mut("interactions")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(|i| i.get_mut("response").and_then(Value::as_object_mut))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

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
                },
                response: RecordedResponse {
                    status: 200,
                    headers: BTreeMap::new(),
                    body: json!({"usage": {"prompt_tokens": 3, "completion_tokens": 4, "cost": 0.5}}),
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
            "cassettes/a/b.json: format 7 is newer than this evals understands (3); upgrade evals"
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
}
