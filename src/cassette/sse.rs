//! Server-sent events as a cassette holds them. A streamed response is kept in memory as
//! its text (what the worker is sent back, byte for byte); in the file it is its list of
//! events, each `{"event", "id", "retry", "comment"}` where present and its data as `data`
//! (a JSON object or list that evals writes back the same, pretty and sorted like the rest
//! of the file), `raw` (a JSON object or list written as it came: its key order, spacing
//! and numbers kept) or `text` (anything else, `[DONE]`), so a re-recorded stream diffs
//! event by event. A stream whose events would not give back its every byte (`\r\n` line
//! ends, `data:` without its space) stays text. Replay sends the same events, in order, at
//! once (the recorded pacing collapsed).

use serde_json::Value;

/// One event of a stream.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Event {
    pub event: Option<String>,
    pub id: Option<String>,
    pub retry: Option<String>,
    /// A comment line's text (`: ping`), lines joined with `\n`.
    pub comment: Option<String>,
    pub data: Option<Data>,
}

/// An event's data.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Data {
    /// A JSON object or list whose compact serialization is the data, byte for byte.
    Json(Value),
    /// A JSON object or list on one line, written some other way (a provider's key order):
    /// kept as it came.
    Raw(String),
    /// Anything else (`[DONE]`, a JSON string, several lines), lines joined with `\n`.
    Text(String),
}

/// Whether `text` is a stream of server-sent events that [`events`] writes without loss:
/// every line an SSE field, at least one `data:`, and [`text`] of its events the same
/// bytes.
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
    data && self::text(&events(text)) == text
}

/// Whether `text` has a `data:` line: a stream of server-sent events, as the gateway tells
/// one with no `content-type` to say so.
pub(crate) fn has_data(text: &str) -> bool {
    text.lines().any(|l| l.starts_with("data:"))
}

/// The events of a stream, in order.
pub(crate) fn events(text: &str) -> Vec<Event> {
    let mut out = Vec::new();
    let mut event = Event::default();
    let mut data: Option<String> = None;
    let mut flush = |event: &mut Event, data: &mut Option<String>| {
        if let Some(d) = data.take() {
            event.data = Some(classify(d));
        }
        if *event != Event::default() {
            out.push(std::mem::take(event));
        }
    };
    for line in text.lines() {
        if line.is_empty() {
            flush(&mut event, &mut data);
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "" => append(&mut event.comment, value),
            "data" => append(&mut data, value),
            "event" => event.event = Some(value.into()),
            "id" => event.id = Some(value.into()),
            "retry" => event.retry = Some(value.into()),
            _ => {}
        }
    }
    flush(&mut event, &mut data);
    out
}

/// What an event's data is: JSON evals writes back the same, JSON to keep as it came, or
/// text.
fn classify(d: String) -> Data {
    match serde_json::from_str::<Value>(&d) {
        Ok(v @ (Value::Object(_) | Value::Array(_))) => {
            if serde_json::to_string(&v).is_ok_and(|again| again == d) {
                Data::Json(v)
            } else if !d.contains('\n') && super::format::embeddable(&d) {
                Data::Raw(d)
            } else {
                Data::Text(d)
            }
        }
        _ => Data::Text(d),
    }
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
pub(crate) fn text(events: &[Event]) -> String {
    let mut out = String::new();
    for e in events {
        if let Some(c) = &e.comment {
            for line in c.split('\n') {
                out.push_str(&format!(": {line}\n"));
            }
        }
        for (k, v) in [("event", &e.event), ("id", &e.id), ("retry", &e.retry)] {
            if let Some(v) = v {
                out.push_str(&format!("{k}: {v}\n"));
            }
        }
        match &e.data {
            Some(Data::Json(d)) => out.push_str(&format!("data: {d}\n")),
            Some(Data::Raw(d)) => out.push_str(&format!("data: {d}\n")),
            Some(Data::Text(t)) => {
                for line in t.split('\n') {
                    out.push_str(&format!("data: {line}\n"));
                }
            }
            None => {}
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn event(name: Option<&str>, data: Option<Data>) -> Event {
        Event {
            event: name.map(str::to_string),
            data,
            ..Event::default()
        }
    }

    #[test]
    fn a_stream_is_its_events_and_reads_back_byte_for_byte() {
        let stream = "event: message_start\ndata: {\"type\":\"message_start\",\"n\":1}\n\n: ping\n\ndata: {\"a\":[1],\"b\":2}\n\ndata: [DONE]\n\n";
        assert!(is_stream(stream));
        let events = events(stream);
        assert_eq!(
            events,
            [
                // Not sorted as evals would write it: kept as it came.
                event(
                    Some("message_start"),
                    Some(Data::Raw("{\"type\":\"message_start\",\"n\":1}".into()))
                ),
                Event {
                    comment: Some("ping".into()),
                    ..Event::default()
                },
                event(None, Some(Data::Json(json!({"a": [1], "b": 2})))),
                event(None, Some(Data::Text("[DONE]".into()))),
            ]
        );
        assert_eq!(text(&events), stream);
    }

    #[test]
    fn a_stream_its_events_would_change_stays_text() {
        // `\r\n` line ends and `data:` without its space come back otherwise from events.
        assert!(!is_stream("data: {\"b\":2,\"a\":[1]}\r\n\r\n"));
        assert!(!is_stream("data:{\"a\":1}\n\n"));
        assert!(is_stream("data: {\"a\":1}\n\n"));
    }

    #[test]
    fn text_that_is_not_a_stream_stays_text() {
        assert!(!is_stream("<html>data: no</html>"));
        assert!(!is_stream("event: x\n\n"), "no data");
        assert!(!is_stream("{\"a\": 1}"));
        // A JSON string as data is text, kept as written.
        assert_eq!(
            events("data: \"quoted\"\n\n"),
            [event(None, Some(Data::Text("\"quoted\"".into())))]
        );
    }
}
