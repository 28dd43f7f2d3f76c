//! Response components: UI payloads (A2UI and the like) an agent returns beside its text,
//! `components: [{protocol, version, payload}]`. They are data of the reply, kept as
//! written (a JSON-lines string stays a string), scored apart from the text by
//! `scorer: { kind: components }`, and carried in the snapshot and the history with the
//! case. `None` ("not reported": nobody said) is never `Some([])` ("explicitly none").

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One component of a reply: the protocol it speaks, the version it declares, and its
/// payload as the agent gave it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Component {
    /// The protocol: `a2ui`, or your renderer's own name.
    pub protocol: String,
    /// The version the payload declares (`"0.8"`): text, compared exactly.
    pub version: String,
    /// The payload as sent: a JSON value, or a string (A2UI's JSON lines stay a string).
    pub payload: Value,
    /// The tool whose result it was, when the agent captured it from a tool call rather
    /// than building it for its final answer; `None` for a plain renderer's output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
}

impl Component {
    /// `a2ui 0.8`, as messages name a component's kind.
    pub fn label(&self) -> String {
        format!("{} {}", self.protocol, self.version)
    }

    /// The messages of a JSON-lines payload (A2UI streams one JSON message a line): a
    /// string's non-blank lines, each parsed; a list is taken as its messages already
    /// parsed. `Err` names the line that is not JSON, or a payload of another kind.
    pub fn json_lines(payload: &Value) -> Result<Vec<Value>, String> {
        match payload {
            Value::String(text) => text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
                .map(|(i, l)| {
                    serde_json::from_str(l)
                        .map_err(|e| format!("its line {} is not JSON ({e})", i + 1))
                })
                .collect(),
            Value::Array(messages) => Ok(messages.clone()),
            other => Err(format!(
                "its payload is {}, not JSON lines (a string of one JSON message a line)",
                match other {
                    Value::Object(_) => "an object",
                    Value::Null => "null",
                    _ => "a scalar",
                }
            )),
        }
    }
}

/// A reply's components as a report shows them: pretty JSON, `[]` for explicitly none;
/// `None` when they were not reported.
pub fn pretty(components: Option<&[Component]>) -> Option<String> {
    components.map(|c| serde_json::to_string_pretty(c).unwrap_or_else(|_| format!("{c:?}")))
}

/// The unified diff of a case's components, baseline to candidate (`(not reported)` for
/// `null`); `None` when they are the same.
pub fn diff(baseline: Option<&[Component]>, candidate: Option<&[Component]>) -> Option<String> {
    if baseline == candidate {
        return None;
    }
    let text = |c| match pretty(c) {
        Some(p) => format!("{p}\n"),
        None => "(not reported)\n".to_string(),
    };
    let (a, b) = (text(baseline), text(candidate));
    Some(
        similar::TextDiff::from_lines(&a, &b)
            .unified_diff()
            .context_radius(3)
            .header("baseline components", "candidate components")
            .to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn null_and_an_empty_list_of_components_are_told_apart_in_json() {
        #[derive(Deserialize, Serialize)]
        struct R {
            #[serde(default, skip_serializing_if = "Option::is_none")]
            components: Option<Vec<Component>>,
        }
        let read = |s: &str| serde_json::from_str::<R>(s).unwrap().components;
        assert_eq!(read("{}"), None);
        assert_eq!(read(r#"{"components": null}"#), None);
        assert_eq!(read(r#"{"components": []}"#), Some(vec![]));
        let written =
            |c: Option<Vec<Component>>| serde_json::to_string(&R { components: c }).unwrap();
        assert_eq!(written(None), "{}");
        assert_eq!(written(Some(vec![])), r#"{"components":[]}"#);
    }

    #[test]
    fn a_diff_tells_not_reported_from_explicitly_none_and_is_none_when_unchanged() {
        let one: Vec<Component> =
            serde_json::from_value(json!([{"protocol": "a2ui", "version": "0.8", "payload": 1}]))
                .unwrap();
        assert_eq!(diff(Some(&one), Some(&one)), None);
        assert_eq!(diff(None, None), None);
        let gone = diff(Some(&[]), None).unwrap();
        assert!(gone.contains("-[]\n+(not reported)\n"), "{gone}");
        let changed = diff(Some(&one), Some(&[])).unwrap();
        assert!(changed.contains("-    \"payload\": 1"), "{changed}");
    }

    #[test]
    fn a_component_keeps_its_payload_as_written_and_refuses_unknown_keys() {
        let c: Component = serde_json::from_value(
            json!({"protocol": "a2ui", "version": "0.8", "payload": "{\"a\": 1}\n"}),
        )
        .unwrap();
        assert_eq!(c.payload, json!("{\"a\": 1}\n"));
        assert_eq!(c.label(), "a2ui 0.8");
        let typo = serde_json::from_value::<Component>(
            json!({"protocol": "a2ui", "version": "0.8", "paylod": {}}),
        );
        assert!(typo.is_err());
    }

    #[test]
    fn json_lines_are_parsed_line_by_line_and_a_bad_line_is_named() {
        assert_eq!(
            Component::json_lines(&json!("{\"a\":1}\n\n{\"b\": 2}\n")).unwrap(),
            vec![json!({"a": 1}), json!({"b": 2})]
        );
        assert_eq!(
            Component::json_lines(&json!([{"a": 1}])).unwrap(),
            vec![json!({"a": 1})]
        );
        assert_eq!(
            Component::json_lines(&json!("{\"a\":1}\nnot json")).unwrap_err(),
            "its line 2 is not JSON (expected ident at line 1 column 2)"
        );
        assert!(
            Component::json_lines(&json!({"a": 1}))
                .unwrap_err()
                .starts_with("its payload is an object")
        );
    }
}
