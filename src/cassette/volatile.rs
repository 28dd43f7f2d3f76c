//! Volatile fields: what differs between two recordings of the same answer (the
//! response's id, its `created` time, `system_fingerprint`, the server's own timings), and
//! so is no reason to rewrite a cassette.
//!
//! A re-record compares the new cassette with the one on disk apart from these fields,
//! `recorded_at`, the evals version and the latencies; when they say the same, the file is
//! left as it was, so a re-record of 500 cases shows in git only the answers that changed.
//! The fields are dotted paths from the root of a model's response body and of each event's
//! data in a stream (a segment meeting a list applies to each element, as `ignore_fields`
//! do): [`DEFAULT_VOLATILE_FIELDS`], and the suite's `cassettes.volatile_fields` beside
//! them. The responses of an exec adapter's other APIs are compared whole: an id there may
//! be the answer the agent reports.

use serde_json::{Value, json};

use super::fingerprint::strip_fields;
use super::format::{Cassette, Interaction};
use super::sse::{self, Data};

/// The fields of a model's response that differ on every call, whatever the answer:
/// response and item ids, creation times, the backend's `system_fingerprint`, provider
/// request ids, OpenAI's stream padding (`obfuscation`), and the timings Groq and Ollama
/// put in the body.
pub const DEFAULT_VOLATILE_FIELDS: &[&str] = &[
    // OpenAI chat completions, OpenRouter, most OpenAI-compatible servers.
    "id",
    "created",
    "system_fingerprint",
    "obfuscation",
    "request_id",
    // The Responses API: the response, its items and their events.
    "created_at",
    "output.id",
    "item_id",
    "item.id",
    "response.id",
    "response.created_at",
    "response.output.id",
    // Anthropic's stream opens with the message's id.
    "message.id",
    // Gemini.
    "responseId",
    "createTime",
    // Groq's id and timings.
    "x_groq.id",
    "usage.queue_time",
    "usage.prompt_time",
    "usage.completion_time",
    "usage.total_time",
    // Ollama's native API.
    "total_duration",
    "load_duration",
    "prompt_eval_duration",
    "eval_duration",
];

/// The volatile fields of a suite: the defaults, then `extra` (`cassettes.volatile_fields`)
/// that are not among them.
pub fn volatile_fields(extra: &[String]) -> Vec<String> {
    let mut fields: Vec<String> = DEFAULT_VOLATILE_FIELDS
        .iter()
        .map(|f| (*f).to_string())
        .collect();
    for f in extra {
        if !fields.contains(f) {
            fields.push(f.clone());
        }
    }
    fields
}

/// Whether `new` says what `old` says, apart from when and by which version each was
/// recorded, the latencies and the `volatile` fields of the model's responses: same case
/// and contender, and exchange by exchange the same request, status, headers, usage and
/// body. Both are best read from their files' text, so `raw` and `body` forms compare alike.
pub(crate) fn says_the_same(new: &Cassette, old: &Cassette, volatile: &[String]) -> bool {
    new.case == old.case
        && new.contender == old.contender
        && new.interactions.len() == old.interactions.len()
        && new
            .interactions
            .iter()
            .zip(&old.interactions)
            .all(|(n, o)| same_exchange(n, o, volatile))
}

fn same_exchange(new: &Interaction, old: &Interaction, volatile: &[String]) -> bool {
    let heads_match = new.fingerprint == old.fingerprint
        && new.upstream == old.upstream
        && new.request == old.request
        && new.usage == old.usage
        && new.response.status == old.response.status
        && new.response.headers == old.response.headers;
    heads_match
        && match new.upstream {
            // Another API's answer: compared whole, its bytes too.
            Some(_) => new.response == old.response,
            None => quiet(&new.response.body, volatile) == quiet(&old.response.body, volatile),
        }
}

/// A response body without its volatile fields: a JSON body stripped of them; a stream as
/// its events, each event's JSON data stripped of them (a data line written in another key
/// order or spacing compares as its JSON).
fn quiet(body: &Value, volatile: &[String]) -> Value {
    match body {
        Value::String(text) if sse::is_stream(text) => sse::events(text)
            .into_iter()
            .map(|e| {
                let data = match e.data {
                    Some(Data::Json(v)) => strip_fields(&v, volatile),
                    Some(Data::Raw(r)) => match serde_json::from_str::<Value>(&r) {
                        Ok(v) => strip_fields(&v, volatile),
                        Err(_) => Value::String(r),
                    },
                    Some(Data::Text(t)) => json!({ "text": t }),
                    None => Value::Null,
                };
                json!([e.event, e.id, e.retry, e.comment, data])
            })
            .collect(),
        other => strip_fields(other, volatile),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> Vec<String> {
        volatile_fields(&[])
    }

    #[test]
    fn a_chat_completion_differing_in_id_created_and_fingerprint_says_the_same() {
        let a = json!({"id": "chatcmpl-1", "created": 1, "system_fingerprint": "fp_a",
            "choices": [{"message": {"content": "hi"}}], "usage": {"total_time": 0.2}});
        let b = json!({"id": "chatcmpl-2", "created": 2, "system_fingerprint": "fp_b",
            "choices": [{"message": {"content": "hi"}}], "usage": {"total_time": 0.3}});
        let c = json!({"id": "chatcmpl-2", "created": 2,
            "choices": [{"message": {"content": "hello"}}]});
        assert_eq!(quiet(&a, &defaults()), quiet(&b, &defaults()));
        assert_ne!(quiet(&a, &defaults()), quiet(&c, &defaults()));
    }

    #[test]
    fn a_streams_per_chunk_ids_are_volatile_but_its_text_is_not() {
        let stream = |id: &str, word: &str| {
            Value::String(format!(
                "data: {{\"id\":\"{id}\",\"created\":7,\"choices\":[{{\"delta\":{{\"content\":\"{word}\"}}}}],\"obfuscation\":\"x{id}\"}}\n\n\
                 data: {{\"created\":8,\"choices\":[],\"id\":\"{id}\"}}\n\ndata: [DONE]\n\n"
            ))
        };
        let v = defaults();
        assert_eq!(quiet(&stream("a", "hi"), &v), quiet(&stream("b", "hi"), &v));
        assert_ne!(quiet(&stream("a", "hi"), &v), quiet(&stream("a", "ho"), &v));
    }

    #[test]
    fn the_users_fields_extend_the_defaults_once() {
        let fields = volatile_fields(&["meta.trace".into(), "id".into()]);
        assert_eq!(fields.len(), DEFAULT_VOLATILE_FIELDS.len() + 1);
        let a = json!({"meta": {"trace": "t1"}, "answer": 1});
        let b = json!({"meta": {"trace": "t2"}, "answer": 1});
        assert_ne!(quiet(&a, &defaults()), quiet(&b, &defaults()));
        assert_eq!(quiet(&a, &fields), quiet(&b, &fields));
    }
}
