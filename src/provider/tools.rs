//! The prompt adapter's `tools:` and `tool_choice:` (OpenAI chat-completions shapes) read
//! once, for the native APIs to write in their own shapes (Anthropic's, Gemini's, the
//! Responses API's). An entry that is not an OpenAI function is the API's own tool (a
//! server tool, say) and is sent as written; so is a `tool_choice` none of OpenAI's shapes.

use serde_json::{Value, json};

/// One offered function: `{"type": "function", "function": {name, description,
/// parameters, strict}}`.
pub(super) struct Function<'a> {
    pub name: &'a str,
    pub description: Option<&'a str>,
    /// Its JSON Schema; `None` when the definition gives none (a function of no arguments).
    pub parameters: Option<&'a Value>,
    pub strict: Option<bool>,
}

/// A tool as the adapter holds it: an OpenAI function, or an entry of the API's own.
pub(super) enum Tool<'a> {
    Function(Function<'a>),
    Own(&'a Value),
}

/// The tools offered, in order (none when `tools` is not a list).
pub(super) fn tools(tools: &Value) -> Vec<Tool<'_>> {
    let Some(list) = tools.as_array() else {
        return vec![];
    };
    list.iter()
        .map(|t| {
            let f = t.get("function").filter(|_| t["type"] == "function");
            match f.and_then(|f| Some((f, f.get("name")?.as_str()?))) {
                Some((f, name)) => Tool::Function(Function {
                    name,
                    description: f.get("description").and_then(Value::as_str),
                    parameters: f.get("parameters").filter(|p| !p.is_null()),
                    strict: f.get("strict").and_then(Value::as_bool),
                }),
                None => Tool::Own(t),
            }
        })
        .collect()
}

/// OpenAI's `tool_choice`, read.
pub(super) enum Choice<'a> {
    /// `"auto"`: the model decides.
    Auto,
    /// `"none"`: no call.
    None,
    /// `"required"`: some call.
    Required,
    /// `{"type": "function", "function": {"name"}}`: this function.
    Named(&'a str),
    /// Not one of OpenAI's shapes: the API's own, sent as written.
    Own(&'a Value),
}

/// What `tool_choice` asks for.
pub(super) fn choice(choice: &Value) -> Choice<'_> {
    match choice {
        Value::String(s) if s == "auto" => Choice::Auto,
        Value::String(s) if s == "none" => Choice::None,
        Value::String(s) if s == "required" => Choice::Required,
        v => match v.pointer("/function/name").and_then(Value::as_str) {
            Some(name) if v["type"] == "function" => Choice::Named(name),
            _ => Choice::Own(v),
        },
    }
}

/// The schema of a function that gives none: an object of no properties (the APIs that
/// require a schema accept this one).
pub(super) fn no_arguments() -> Value {
    json!({"type": "object", "properties": {}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_functions_are_read_and_anything_else_is_the_apis_own() {
        let offered = json!([
            {"type": "function", "function": {"name": "a", "description": "A", "parameters": {"type": "object"}, "strict": true}},
            {"type": "function", "function": {"name": "b"}},
            {"type": "web_search_20250305", "name": "web_search"},
        ]);
        let read = tools(&offered);
        assert_eq!(read.len(), 3);
        let Tool::Function(a) = &read[0] else {
            panic!("a is a function")
        };
        assert_eq!(
            (a.name, a.description, a.parameters, a.strict),
            ("a", Some("A"), Some(&json!({"type": "object"})), Some(true))
        );
        let Tool::Function(b) = &read[1] else {
            panic!("b is a function")
        };
        assert_eq!((b.description, b.parameters, b.strict), (None, None, None));
        assert!(matches!(read[2], Tool::Own(v) if v["name"] == "web_search"));
        assert!(tools(&json!("nope")).is_empty());
    }

    #[test]
    fn every_openai_tool_choice_is_read_and_anything_else_is_the_apis_own() {
        assert!(matches!(choice(&json!("auto")), Choice::Auto));
        assert!(matches!(choice(&json!("none")), Choice::None));
        assert!(matches!(choice(&json!("required")), Choice::Required));
        assert!(matches!(
            choice(&json!({"type": "function", "function": {"name": "f"}})),
            Choice::Named("f")
        ));
        assert!(matches!(choice(&json!({"type": "any"})), Choice::Own(_)));
    }
}
