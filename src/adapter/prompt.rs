use std::path::Path;

use minijinja::{Environment, UndefinedBehavior};
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::provider::{ChatRequest, Completion};
use crate::results::{CaseError, CaseErrorKind, Reply, ToolCall};
use crate::suite::config::{SchemaSource, ScorerConfig, resolve_path};
use crate::suite::{Case, CaseInput, Suite};

/// The built-in adapter: `system`/`user` templates (files beside the config, or inline),
/// `{{ input }}`, `{{ vars.x }}` (or `{{ x }}`, as LLMEvalForge templates write it),
/// `{{ schema }}`, `{{ metadata.x }}`; `json: true` asks for and parses a JSON object.
#[derive(Debug)]
pub struct PromptAdapter {
    env: Environment<'static>,
    has_system: bool,
    json: bool,
    schema: Value,
    /// `adapter.tools`, as sent (`None`: no tools).
    tools: Option<Value>,
    /// `adapter.tool_choice`, as sent.
    tool_choice: Option<Value>,
}

impl PromptAdapter {
    /// The adapter for a suite's `adapter: { kind: prompt }`: `system` and `user` are each a
    /// template file (beside the config) or inline text (`user` defaults to `{{ input }}`);
    /// a template that does not parse, or a named template file that is missing, is a
    /// config error. `json` asks for a JSON object and parses the reply as one.
    pub fn new(
        suite: &Suite,
        system: Option<&str>,
        user: Option<&str>,
        json: bool,
    ) -> Result<Self> {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_keep_trailing_newline(false);
        // `key` is the config key holding `t` (`adapter.system`, `adapter.user`).
        let load = |key: &str, t: &str| -> Result<String> {
            // A single line naming an existing file is a file; anything else is inline text.
            if !t.contains('\n') && !t.contains("{{") {
                let p = resolve_path(&suite.root, t.trim());
                let shown = crate::suite::discovery::display_path(&p, &suite.cwd);
                if p.is_file() {
                    return crate::fs::read_text(&p, &shown)
                        .map_err(|e| e.named_by(key, Some(&suite.display_path)));
                }
                if Path::new(t.trim())
                    .extension()
                    .is_some_and(|e| e == "md" || e == "txt" || e == "j2" || e == "jinja")
                {
                    return Err(Error::Config(format!(
                        "{}: {key}: template file {shown} does not exist: create it, or write the template inline",
                        suite.display_path,
                    )));
                }
            }
            Ok(t.to_string())
        };
        let mut has_system = false;
        if let Some(s) = system {
            env.add_template_owned("system", load("adapter.system", s)?)
                .map_err(|e| {
                    Error::Config(format!("{}: adapter.system: {e}", suite.display_path))
                })?;
            has_system = true;
        }
        env.add_template_owned("user", load("adapter.user", user.unwrap_or("{{ input }}"))?)
            .map_err(|e| Error::Config(format!("{}: adapter.user: {e}", suite.display_path)))?;
        let schema = suite
            .scorers
            .iter()
            .find_map(|s| match s {
                ScorerConfig::Fields {
                    schema: SchemaSource::Inline(schema),
                } => serde_json::to_value(schema).ok(),
                _ => None,
            })
            .unwrap_or(Value::Null);
        Ok(PromptAdapter {
            env,
            has_system,
            json,
            schema,
            tools: None,
            tool_choice: None,
        })
    }

    /// Offers `tools` (OpenAI function definitions: a list, or a JSON/YAML file beside the
    /// config holding one) with `tool_choice`. A definition without `type` is taken as a
    /// function's (`{name, description, parameters}`) and wrapped as OpenAI wants it.
    pub fn with_tools(
        mut self,
        suite: &Suite,
        tools: Option<&Value>,
        tool_choice: Option<&Value>,
    ) -> Result<Self> {
        let at = &suite.display_path;
        let list = match tools {
            None => None,
            Some(Value::String(file)) => {
                let p = resolve_path(&suite.root, file.trim());
                let shown = crate::suite::discovery::display_path(&p, &suite.cwd);
                if !p.is_file() {
                    return Err(Error::Config(format!(
                        "{at}: adapter.tools: {shown} does not exist: write the tools inline as a list, or create the file"
                    )));
                }
                let text = crate::fs::read_text(&p, &shown)?;
                let v: Value = serde_saphyr::from_str(&text).map_err(|e| {
                    Error::Config(format!("{shown}: adapter.tools: not JSON or YAML: {e}"))
                })?;
                Some(v)
            }
            Some(v) => Some(v.clone()),
        };
        if let Some(list) = list {
            let Value::Array(items) = list else {
                return Err(Error::Config(format!(
                    "{at}: adapter.tools must be a list of function definitions (or a file holding one), not {}",
                    crate::score::kind_of(&list)
                )));
            };
            let mut out = Vec::new();
            for (i, t) in items.into_iter().enumerate() {
                let wrapped = match &t {
                    Value::Object(o) if o.contains_key("type") => t.clone(),
                    Value::Object(o) if o.contains_key("name") => {
                        json!({"type": "function", "function": t})
                    }
                    _ => {
                        return Err(Error::Config(format!(
                            "{at}: adapter.tools[{i}] is not a function definition: give {{type: function, function: {{name, description, parameters}}}} or {{name, description, parameters}}"
                        )));
                    }
                };
                out.push(wrapped);
            }
            self.tools = Some(Value::Array(out));
        }
        self.tool_choice = tool_choice.cloned();
        Ok(self)
    }

    /// Renders the prompts for a case. A variable the case lacks fails the case before any
    /// call, naming it.
    pub fn prepare(&self, case: &Case) -> std::result::Result<ChatRequest, String> {
        let vars = match &case.input {
            CaseInput::Vars(v) => Value::Object(v.clone()),
            CaseInput::Text(_) => json!({}),
        };
        let schema_text = if self.schema.is_null() {
            String::new()
        } else {
            serde_json::to_string_pretty(&self.schema).unwrap_or_default()
        };
        // An object input's variables are also top-level names (`{{ question }}`); the
        // adapter's own names (`input`, `vars`, `schema`, `metadata`, `case`) win over them.
        let mut ctx = match &vars {
            Value::Object(v) => v.clone(),
            _ => serde_json::Map::new(),
        };
        let own = json!({
            "input": case.input.as_text(),
            "vars": vars,
            "schema": schema_text,
            "metadata": case.metadata,
            "case": { "id": case.id, "dataset": case.dataset, "variant": case.variant },
        });
        if let Value::Object(own) = own {
            ctx.extend(own);
        }
        let ctx = Value::Object(ctx);
        let render = |name: &str| -> std::result::Result<String, String> {
            let t = self.env.get_template(name).map_err(|e| e.to_string())?;
            t.render(&ctx).map_err(|e| {
                if e.kind() == minijinja::ErrorKind::UndefinedError {
                    let mut missing: Vec<String> = t
                        .undeclared_variables(true)
                        .into_iter()
                        .filter(|path| lookup(&ctx, path).is_none())
                        .collect();
                    missing.sort();
                    if !missing.is_empty() {
                        let fix = match &case.input {
                            CaseInput::Vars(_) => "add it to the case's input or fix the template",
                            // A text input has no variables to hold it.
                            CaseInput::Text(_) => "this case's input is text, which only `{{ input }}` holds: give it an object input with that key, or fix the template",
                        };
                        return format!(
                            "template '{name}' uses {} but this case has no such value; {fix}",
                            missing.iter().map(|m| format!("`{{{{ {m} }}}}`")).collect::<Vec<_>>().join(", ")
                        );
                    }
                }
                describe(name, &e)
            })
        };
        Ok(ChatRequest {
            system: if self.has_system {
                Some(render("system")?)
            } else {
                None
            },
            user: render("user")?,
            json: self.json,
            tools: self.tools.clone(),
            tool_choice: self.tool_choice.clone(),
            messages: conversation(case)?,
        })
    }

    /// Turns the model's text into a reply; unusable text is the model's failure. A reply
    /// that only asks for tool calls (or only returns components) has no text, and is
    /// usable.
    pub fn parse(&self, completion: Completion, tool_calls: Option<Vec<ToolCall>>) -> Reply {
        let raw = completion.text;
        let some = |n: Option<usize>| n.is_some_and(|n| n > 0);
        let calls_only = raw.trim().is_empty()
            && (some(tool_calls.as_ref().map(Vec::len))
                || some(completion.components.as_ref().map(Vec::len)));
        let mut reply = Reply {
            output: None,
            raw: Some(raw.clone()),
            error: None,
            usage: completion.usage,
            tool_calls,
            trajectory: None,
            components: completion.components,
        };
        if calls_only {
            return reply;
        }
        if raw.trim().is_empty() {
            // A refusal's words are the reply's text and its diagnostic.
            reply.error = Some(match completion.refusal {
                Some(words) => {
                    let said = format!("refused: {words}");
                    reply.raw = Some(words);
                    said
                }
                None => super::EMPTY_REPLY.to_string(),
            });
            return reply;
        }
        if !self.json {
            reply.output = Some(Value::String(raw));
            return reply;
        }
        match parse_json_reply(&raw) {
            Ok(v) => reply.output = Some(v),
            Err(e) => reply.error = Some(format!("not JSON: {e}")),
        }
        reply
    }

    /// Offline check: every case renders.
    pub fn verify(&self, case: &Case) -> Vec<String> {
        match self.prepare(case) {
            Ok(_) => vec![],
            Err(e) => vec![e],
        }
    }
}

/// A case's conversation: an object input's `messages`, a list of `{role, content}`
/// (sent after the system message, in place of the user message). Empty for any other
/// input.
fn conversation(case: &Case) -> std::result::Result<Vec<Value>, String> {
    let CaseInput::Vars(vars) = &case.input else {
        return Ok(vec![]);
    };
    let Some(messages) = vars.get("messages") else {
        return Ok(vec![]);
    };
    let Value::Array(list) = messages else {
        return Err(format!(
            "input.messages must be a list of {{role, content}}, not {}",
            crate::score::kind_of(messages)
        ));
    };
    for (i, m) in list.iter().enumerate() {
        let role = m.get("role").and_then(Value::as_str);
        if !matches!(
            role,
            Some("system" | "user" | "assistant" | "tool" | "developer")
        ) || m.get("content").is_none()
        {
            return Err(format!(
                "input.messages[{i}] is not a message: give {{role: user|assistant|system|tool, content: ...}}"
            ));
        }
    }
    Ok(list.clone())
}

/// Parses a JSON object from a reply, tolerating a Markdown code fence around it.
fn parse_json_reply(raw: &str) -> std::result::Result<Value, String> {
    let t = raw.trim();
    let t = t
        .strip_prefix("```json")
        .or_else(|| t.strip_prefix("```"))
        .and_then(|s| s.trim_end().strip_suffix("```"))
        .unwrap_or(t)
        .trim();
    match serde_json::from_str::<Value>(t) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(other) => Err(format!(
            "expected a JSON object, got {}",
            crate::score::kind_of(&other)
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// Follows a dotted path (`vars.question`) through the template context.
fn lookup<'a>(ctx: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(ctx, |v, part| v.get(part))
}

fn describe(template: &str, e: &minijinja::Error) -> String {
    if e.kind() == minijinja::ErrorKind::UndefinedError {
        let detail = e.detail().map(|d| format!(" ({d})")).unwrap_or_default();
        let line = e.line().map(|l| format!(" line {l}")).unwrap_or_default();
        format!(
            "template '{template}'{line}: a variable is undefined for this case{detail}; add it to the case's input or fix the template"
        )
    } else {
        format!("template '{template}': {e}")
    }
}

impl super::Adapter for PromptAdapter {
    fn verify(&self, case: &Case) -> Vec<String> {
        PromptAdapter::verify(self, case)
    }

    fn predict(&self, case: &Case) -> Option<ChatRequest> {
        self.prepare(case).ok()
    }

    fn start(self: std::sync::Arc<Self>) -> std::sync::Arc<dyn super::AdapterSession> {
        self
    }
}

/// Nothing to keep between cases: each is rendered, sent once and parsed.
impl super::AdapterSession for PromptAdapter {
    fn answer<'a>(
        &'a self,
        model: super::CaseModel<'a>,
    ) -> super::BoxFuture<'a, std::result::Result<super::Answer, CaseError>> {
        Box::pin(async move {
            let request = self
                .prepare(model.case)
                .map_err(|e| CaseError::new(CaseErrorKind::Template, e))?;
            let (completion, calls) = model
                .complete_observed(&request)
                .await
                .map_err(CaseError::from)?;
            let latency_s = Some(completion.latency_s);
            let truncated = completion.truncated.clone();
            Ok(super::Answer {
                reply: self.parse(completion, calls),
                latency_s,
                truncated,
                warnings: vec![],
            })
        })
    }
}
