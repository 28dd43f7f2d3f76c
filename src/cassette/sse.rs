//! Server-sent events as a cassette holds them. A streamed response is kept in memory as
//! its text (what the worker is sent back, byte for byte, when it is live); in the file it
//! is its list of events, each `{"event", "id", "retry", "comment"}` where present and its
//! data as `data` (a JSON object or list, pretty and sorted like the rest of the file) or
//! `text` (anything else, `[DONE]`), so a re-recorded stream diffs event by event. Replay
//! sends the same events, in order, at once (the recorded pacing collapsed).

use serde_json::{Map, Value};

/// Whether `text` is a stream of server-sent events that [`events`] writes without loss:
/// every line an SSE field, at least one `data:`, and the events read back from
/// [`text`] the same.
pub(crate) fn is_stream(text: &str) -> bool {
    let fields = ["data:", "event:", "id:", "retry:", ":"];
    let mut data = false;
    for line in text.lines() {
        if line.is_empty() {
            continue;
        }
        if !fields.iter().any(|f| line.starts_with(f)) {
            return false;
        }
        data |= line.starts_with("data:");
    }
    data && {
        let events = events(text);
        self::events(&self::text(&events)) == events
    }
}

/// The events of a stream, in order.
pub(crate) fn events(text: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut event = Map::new();
    let mut data: Option<String> = None;
    let mut comment: Option<String> = None;
    let mut flush = |event: &mut Map<String, Value>,
                     data: &mut Option<String>,
                     comment: &mut Option<String>| {
        if let Some(c) = comment.take() {
            event.insert("comment".into(), Value::String(c));
        }
        if let Some(d) = data.take() {
            match serde_json::from_str::<Value>(&d) {
                Ok(v @ (Value::Object(_) | Value::Array(_))) => {
                    event.insert("data".into(), v);
                }
                _ => {
                    event.insert("text".into(), Value::String(d));
                }
            }
        }
        if !event.is_empty() {
            out.push(Value::Object(std::mem::take(event)));
        }
    };
    for line in text.lines() {
        if line.is_empty() {
            flush(&mut event, &mut data, &mut comment);
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "" => append(&mut comment, value),
            "data" => append(&mut data, value),
            "event" | "id" | "retry" => {
                event.insert(field.into(), Value::String(value.into()));
            }
            _ => {}
        }
    }
    flush(&mut event, &mut data, &mut comment);
    out
}

fn append(to: &mut Option<String>, line: &str) {
    match to {
        Some(s) => {
            s.push('\n');
            s.push_str(line);
        }
        None => *to = Some(line.to_string()),
    }
}

/// The stream of `events`, as a server sends it.
pub(crate) fn text(events: &[Value]) -> String {
    let mut out = String::new();
    for e in events {
        let field = |k: &str| e.get(k).and_then(Value::as_str);
        if let Some(c) = field("comment") {
            for line in c.split('\n') {
                out.push_str(&format!(": {line}\n"));
            }
        }
        for k in ["event", "id", "retry"] {
            if let Some(v) = field(k) {
                out.push_str(&format!("{k}: {v}\n"));
            }
        }
        if let Some(d) = e.get("data") {
            out.push_str(&format!("data: {d}\n"));
        } else if let Some(t) = field("text") {
            for line in t.split('\n') {
                out.push_str(&format!("data: {line}\n"));
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_stream_is_its_events_and_reads_back_event_for_event() {
        let stream = "event: message_start\ndata: {\"type\":\"message_start\",\"n\":1}\n\n: ping\n\ndata: {\"b\":2,\"a\":[1]}\r\n\r\ndata: [DONE]\n\n";
        assert!(is_stream(stream));
        let events = events(stream);
        assert_eq!(
            events,
            [
                json!({"event": "message_start", "data": {"type": "message_start", "n": 1}}),
                json!({"comment": "ping"}),
                json!({"data": {"a": [1], "b": 2}}),
                json!({"text": "[DONE]"}),
            ]
        );
        let again = text(&events);
        assert_eq!(super::events(&again), events);
        assert!(
            again.starts_with(
                "event: message_start\ndata: {\"n\":1,\"type\":\"message_start\"}\n\n"
            )
        );
    }

    #[test]
    fn text_that_is_not_a_stream_stays_text() {
        assert!(!is_stream("<html>data: no</html>"));
        assert!(!is_stream("event: x\n\n"), "no data");
        assert!(!is_stream("{\"a\": 1}"));
        // A JSON string as data is text, kept as written.
        assert_eq!(
            events("data: \"quoted\"\n\n"),
            [json!({"text": "\"quoted\""})]
        );
    }
}
