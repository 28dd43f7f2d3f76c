//! A worker's JSON body with the contender's fields put on it, as text: the gateway forwards
//! what the worker sent, byte for byte, but for the fields the contender's provider changed
//! (its model, effort, temperature, max tokens). Key order, spacing, escapes, duplicate keys
//! and the spelling of every number (`1e2`, a 23-digit integer) stay as the worker wrote
//! them: parsing and writing the body again would sort its keys, drop its spacing and turn
//! `12345678901234567890123` into `1.2345678901234568e+22`.
//!
//! The provider edits a parsed copy ([`crate::provider::Provider::forward_call`]); [`splice`]
//! compares it with the body as parsed and changes the text only where they differ: a
//! changed value is written in its place (an object that is in both, member by member), a
//! new member goes at the end of its object in the object's own separators, a removed one
//! is left out.

use serde_json::{Map, Value};

/// `text`, a JSON document that parses to `old`, changed to say `new`: every byte of
/// `text` kept but where `new` differs from `old`. Falls back to `new` serialized whole if
/// `text` cannot be read as `old` (it always can: `old` was parsed from it).
pub(crate) fn splice(text: &str, old: &Value, new: &Value) -> String {
    if old == new {
        return text.to_string();
    }
    let spliced = match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            let open = skip_ws(text.as_bytes(), 0);
            object(text, open, o, n)
                .map(|(inner, close)| format!("{}{inner}{}", &text[..open], &text[close + 1..]))
        }
        _ => None,
    };
    spliced.unwrap_or_else(|| new.to_string())
}

/// One member of an object in the text: its key, and where its key and value are.
struct Member {
    key: String,
    /// Where the key's opening quote is.
    key_start: usize,
    /// Just past the key's closing quote.
    key_end: usize,
    /// The value's first byte and just past its last.
    value: (usize, usize),
}

/// The object at `open` (its `{`) rewritten to say `new` where it said `old`, and where its
/// `}` is.
fn object(
    text: &str,
    open: usize,
    old: &Map<String, Value>,
    new: &Map<String, Value>,
) -> Option<(String, usize)> {
    let (members, close) = members(text, open)?;
    let count = |key: &str| members.iter().filter(|m| m.key == key).count();
    // The object's own spelling, for what is added: its colon and its separator.
    let colon = members.first().map_or(":", |m| &text[m.key_end..m.value.0]);
    let separator = match members.as_slice() {
        [a, b, ..] => &text[a.value.1..b.key_start],
        _ => ",",
    };
    let mut kept: Vec<(usize, String)> = Vec::new();
    let mut removed = false;
    for m in &members {
        let Some(wanted) = new.get(&m.key) else {
            removed = true;
            continue;
        };
        let slice = &text[m.value.0..m.value.1];
        // A key given twice parses to its last value: each is compared on its own.
        let was = if count(&m.key) > 1 {
            serde_json::from_str::<Value>(slice).ok()?
        } else {
            old.get(&m.key)?.clone()
        };
        let value = if was == *wanted {
            slice.to_string()
        } else if let (Value::Object(o), Value::Object(n)) = (&was, wanted) {
            object(text, m.value.0, o, n)?.0
        } else {
            serde_json::to_string(wanted).ok()?
        };
        kept.push((
            m.key_start,
            format!("{}{value}", &text[m.key_start..m.value.0]),
        ));
    }
    let added: Vec<String> = new
        .iter()
        .filter(|(k, _)| !old.contains_key(*k))
        .map(|(k, v)| {
            Some(format!(
                "{}{colon}{}",
                Value::String(k.clone()),
                serde_json::to_string(v).ok()?
            ))
        })
        .collect::<Option<_>>()?;
    let mut out = String::from("{");
    match (members.first(), members.last()) {
        (Some(first), Some(last)) if !removed => {
            // Values changed in place, between the bytes as they were.
            let mut at = open + 1;
            for (m, (_, member)) in members.iter().zip(&kept) {
                out.push_str(&text[at..m.key_start]);
                out.push_str(member);
                at = m.value.1;
            }
            debug_assert!(at == last.value.1 && first.key_start > open);
            for a in &added {
                out.push_str(separator);
                out.push_str(a);
            }
            out.push_str(&text[at..close]);
        }
        (Some(first), Some(last)) => {
            // A member left out: the others joined by the object's separator.
            out.push_str(&text[open + 1..first.key_start]);
            let all: Vec<&str> = kept
                .iter()
                .map(|(_, m)| m.as_str())
                .chain(added.iter().map(String::as_str))
                .collect();
            out.push_str(&all.join(separator));
            out.push_str(&text[last.value.1..close]);
        }
        _ => {
            out.push_str(&added.join(separator));
            out.push_str(&text[open + 1..close]);
        }
    }
    out.push('}');
    Some((out, close))
}

/// The members of the object whose `{` is at `open`, and where its `}` is.
fn members(text: &str, open: usize) -> Option<(Vec<Member>, usize)> {
    let b = text.as_bytes();
    if b.get(open) != Some(&b'{') {
        return None;
    }
    let mut out = Vec::new();
    let mut i = skip_ws(b, open + 1);
    if b.get(i) == Some(&b'}') {
        return Some((out, i));
    }
    loop {
        let key_start = i;
        let key_end = string_end(b, i)?;
        let key: String = serde_json::from_str(&text[key_start..key_end]).ok()?;
        i = skip_ws(b, key_end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        let start = skip_ws(b, i + 1);
        let end = value_end(b, start)?;
        out.push(Member {
            key,
            key_start,
            key_end,
            value: (start, end),
        });
        i = skip_ws(b, end);
        match b.get(i) {
            Some(b',') => i = skip_ws(b, i + 1),
            Some(b'}') => return Some((out, i)),
            _ => return None,
        }
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while b
        .get(i)
        .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
    {
        i += 1;
    }
    i
}

/// Just past the string whose opening quote is at `i`.
fn string_end(b: &[u8], mut i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    i += 1;
    loop {
        match b.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
}

/// Just past the value that starts at `i`.
fn value_end(b: &[u8], mut i: usize) -> Option<usize> {
    match b.get(i)? {
        b'"' => string_end(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            loop {
                match b.get(i)? {
                    b'"' => {
                        i = string_end(b, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            // A number or a literal: up to what ends a value.
            let start = i;
            while b
                .get(i)
                .is_some_and(|c| !matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
            {
                i += 1;
            }
            (i > start).then_some(i)
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// `text` as the provider would change it with `edit`, spliced.
    fn spliced(text: &str, edit: impl FnOnce(&mut Map<String, Value>)) -> String {
        let old: Value = serde_json::from_str(text).unwrap();
        let mut new = old.clone();
        edit(new.as_object_mut().unwrap());
        let out = splice(text, &old, &new);
        assert_eq!(
            serde_json::from_str::<Value>(&out).unwrap(),
            new,
            "the text says what the provider asked: {out}"
        );
        out
    }

    #[test]
    fn only_the_changed_fields_change_every_other_byte_stays() {
        let text = "{ \"z\" :1e2,\"model\":  \"any\",\"n\":12345678901234567890123 ,\n \"m\":[ {\"b\":1,\"a\":2} ]}";
        // Unchanged: the same bytes, not re-serialized.
        assert_eq!(spliced(text, |_| {}), text);
        assert_eq!(
            spliced(text, |o| {
                o.insert("model".into(), json!("gpt-x"));
            }),
            "{ \"z\" :1e2,\"model\":  \"gpt-x\",\"n\":12345678901234567890123 ,\n \"m\":[ {\"b\":1,\"a\":2} ]}"
        );
        // Added at the end, in the object's own separators.
        assert_eq!(
            spliced(text, |o| {
                o.insert("temperature".into(), json!(0.1));
            }),
            "{ \"z\" :1e2,\"model\":  \"any\",\"n\":12345678901234567890123 ,\n \"m\":[ {\"b\":1,\"a\":2} ],\"temperature\" :0.1}"
        );
        let pretty = "{\n  \"model\": \"any\",\n  \"max_tokens\": 10\n}\n";
        assert_eq!(
            spliced(pretty, |o| {
                o.remove("max_tokens");
                o.insert("max_completion_tokens".into(), json!(5));
            }),
            "{\n  \"model\": \"any\",\n  \"max_completion_tokens\": 5\n}\n"
        );
    }

    #[test]
    fn a_nested_object_is_changed_member_by_member() {
        let text = r#"{"contents":[],"generationConfig":{"topK":40,"temperature":1}}"#;
        assert_eq!(
            spliced(text, |o| {
                o["generationConfig"]["temperature"] = json!(0.2);
                o["generationConfig"]["thinkingConfig"] = json!({"thinkingBudget": 512});
            }),
            r#"{"contents":[],"generationConfig":{"topK":40,"temperature":0.2,"thinkingConfig":{"thinkingBudget":512}}}"#
        );
        let empty = r#"{"a":1,"reasoning":{ }}"#;
        assert_eq!(
            spliced(empty, |o| o["reasoning"]["effort"] = json!("low")),
            r#"{"a":1,"reasoning":{"effort":"low" }}"#
        );
    }

    #[test]
    fn a_key_given_twice_is_set_in_each_place_and_a_removed_one_everywhere() {
        let text = r#"{"model":"a","x":"\"}","model":"b"}"#;
        assert_eq!(
            spliced(text, |o| {
                o.insert("model".into(), json!("c"));
            }),
            r#"{"model":"c","x":"\"}","model":"c"}"#
        );
        assert_eq!(
            spliced(text, |o| {
                o.remove("model");
            }),
            r#"{"x":"\"}"}"#
        );
    }

    #[test]
    fn a_body_that_is_not_an_object_is_written_whole_when_it_changes() {
        assert_eq!(splice("[1, 2]", &json!([1, 2]), &json!([1, 2])), "[1, 2]");
        assert_eq!(splice("[1, 2]", &json!([1, 2]), &json!([3])), "[3]");
    }
}
