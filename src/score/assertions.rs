//! The `assertions` scorer: a list of checks on the reply's text, the score being the share
//! that passed.
//!
//! Checks come from an `expect` mapping: the suite's (`scorer.expect`) with the case's own
//! `expect` merged over it, a key of the case replacing the suite's key of that name. Each
//! string of a `contains`, `not_contains` or `regex` list is one assertion. The text checked
//! is the reply's output when it is a string, its compact JSON otherwise, and the raw text
//! when there is no output. `contains` and `not_contains` are case-sensitive (use `regex`
//! with `(?i)` for the other kind); `equals` with a string compares trimmed text, with any
//! other JSON value compares parsed JSON (numbers by value). The JSON checks accept a reply
//! wrapped in one Markdown code fence, as models often send it.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use regex::Regex;
use serde_json::{Map, Value};

use super::Scorer;
use crate::results::{Diagnostic, MetricDef, Outcome, Reply, Score};
use crate::suggest::did_you_mean;
use crate::suite::Case;

/// The assertion kinds an `expect` mapping may hold, in the order they are checked.
pub const ASSERTION_KINDS: &[&str] = &[
    "equals",
    "contains",
    "not_contains",
    "regex",
    "json_valid",
    "required_json_keys",
    "json_schema",
    "min_chars",
    "max_chars",
    "tool_calls",
    "no_tool_calls",
    "tool_call_count",
    "requests",
    "no_requests",
];

/// Keys that qualify an assertion rather than being one: `ordered: true` makes
/// `tool_calls` a sequence.
const MODIFIERS: &[&str] = &["ordered"];

/// What a tool-call check says of a reply nobody could see the tool calls of.
const NO_TOOL_INFO: &str = "no tool-call information: the reply has no observed tool calls and its adapter reported none (an in-process provider, or an exec adapter that made no call through the gateway)";

/// What a request check says of a reply whose adapter's requests nobody could see.
const NO_REQUEST_INFO: &str = "no request information: only an exec adapter's calls to its adapter.upstreams, through the gateway, are seen";

/// The keys of a wanted request (`expect.requests`).
const REQUEST_KEYS: &[&str] = &["upstream", "method", "path", "query", "body"];

/// How much of the reply a diagnostic shows.
const EXCERPT_CHARS: usize = 200;

/// One assertion, parsed from an `expect` mapping.
#[derive(Debug, Clone, PartialEq)]
enum Check {
    Equals(Value),
    Contains(String),
    NotContains(String),
    Regex(String),
    JsonValid,
    RequiredJsonKeys(Vec<String>),
    JsonSchema(Value),
    MinChars(u64),
    MaxChars(u64),
    /// One call wanted among the reply's (a name, and arguments matched as a subset).
    ToolCall(Value),
    /// These calls, in this order, among the reply's (others may come between).
    ToolCallsInOrder(Vec<Value>),
    NoToolCalls,
    ToolCallCount(Option<u64>, Option<u64>),
    /// One request wanted among those the program sent to its upstreams (a subset match).
    Request(Value),
    /// These requests, in this order (others may come between).
    RequestsInOrder(Vec<Value>),
    /// No request to these upstreams (`None`: to any).
    NoRequests(Option<Vec<String>>),
}

impl Check {
    /// How a diagnostic names the assertion: `contains "30 days"`, `regex ^\d+$`.
    fn label(&self) -> String {
        match self {
            Check::Equals(Value::String(s)) => format!("equals {s:?}"),
            Check::Equals(v) => format!("equals {v}"),
            Check::Contains(s) => format!("contains {s:?}"),
            Check::NotContains(s) => format!("not_contains {s:?}"),
            Check::Regex(p) => format!("regex {p}"),
            Check::JsonValid => "json_valid".to_string(),
            Check::RequiredJsonKeys(keys) => format!("required_json_keys [{}]", keys.join(", ")),
            Check::JsonSchema(_) => "json_schema".to_string(),
            Check::MinChars(n) => format!("min_chars {n}"),
            Check::MaxChars(n) => format!("max_chars {n}"),
            Check::ToolCall(c) => format!("tool_calls {}", call_label(c)),
            Check::ToolCallsInOrder(cs) => format!(
                "tool_calls (ordered) {}",
                cs.iter().map(call_label).collect::<Vec<_>>().join(" → ")
            ),
            Check::NoToolCalls => "no_tool_calls".to_string(),
            Check::ToolCallCount(min, max) => format!(
                "tool_call_count {}..{}",
                min.map(|n| n.to_string()).unwrap_or_default(),
                max.map(|n| n.to_string()).unwrap_or_default()
            ),
            Check::Request(r) => format!("requests {}", request_label(r)),
            Check::RequestsInOrder(rs) => format!(
                "requests (ordered) {}",
                rs.iter().map(request_label).collect::<Vec<_>>().join(" → ")
            ),
            Check::NoRequests(None) => "no_requests".to_string(),
            Check::NoRequests(Some(names)) => format!("no_requests [{}]", names.join(", ")),
        }
    }

    /// Whether it looks at the requests the program sent (which need the gateway's view).
    fn on_requests(&self) -> bool {
        matches!(
            self,
            Check::Request(_) | Check::RequestsInOrder(_) | Check::NoRequests(_)
        )
    }

    /// Whether it looks at the reply's tool calls (which need tool-call information).
    fn on_tool_calls(&self) -> bool {
        matches!(
            self,
            Check::ToolCall(_)
                | Check::ToolCallsInOrder(_)
                | Check::NoToolCalls
                | Check::ToolCallCount(..)
        )
    }

    /// What the assertion wants, for the diagnostic.
    fn want(&self) -> Value {
        match self {
            Check::Equals(v) | Check::JsonSchema(v) => v.clone(),
            Check::Contains(s) | Check::NotContains(s) | Check::Regex(s) => {
                Value::String(s.clone())
            }
            Check::JsonValid => Value::Bool(true),
            Check::RequiredJsonKeys(keys) => keys.iter().cloned().map(Value::String).collect(),
            Check::MinChars(n) | Check::MaxChars(n) => Value::from(*n),
            Check::ToolCall(c) => c.clone(),
            Check::ToolCallsInOrder(cs) => Value::Array(cs.clone()),
            Check::NoToolCalls => Value::Array(vec![]),
            Check::ToolCallCount(min, max) => serde_json::json!({"min": min, "max": max}),
            Check::Request(r) => r.clone(),
            Check::RequestsInOrder(rs) => Value::Array(rs.clone()),
            Check::NoRequests(names) => serde_json::json!(names),
        }
    }
}

/// `name(arguments)` of a wanted call.
fn call_label(c: &Value) -> String {
    let name = c.get("name").and_then(Value::as_str).unwrap_or("?");
    match c.get("arguments") {
        Some(a) => format!("{name}({a})"),
        None => name.to_string(),
    }
}

/// Whether `got` holds everything `want` says: an object's keys as subsets, lists item by
/// item, other values equal (numbers by value).
fn subset(want: &Value, got: &Value) -> bool {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => w
            .iter()
            .all(|(k, v)| g.get(k).is_some_and(|gv| subset(v, gv))),
        (Value::Array(w), Value::Array(g)) => {
            w.len() == g.len() && w.iter().zip(g).all(|(w, g)| subset(w, g))
        }
        _ => json_eq(want, got),
    }
}

/// Whether an observed call is the wanted one.
fn call_matches(want: &Value, got: &crate::results::ToolCall) -> bool {
    want.get("name").and_then(Value::as_str) == Some(got.name.as_str())
        && want
            .get("arguments")
            .is_none_or(|a| subset(a, &got.arguments))
}

/// `GET shipping /orders {"id":"42"}` of a wanted request.
fn request_label(r: &Value) -> String {
    let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
    let mut out = format!("{} {} {}", s("method"), s("upstream"), s("path"));
    for k in ["query", "body"] {
        if let Some(v) = r.get(k) {
            out.push_str(&format!(" {k} {v}"));
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether a step of the trajectory is the wanted request: its upstream, and each of
/// method, path, query and body the want gives (query values as strings, the body as a
/// subset where 1, "1", false and null stay distinct).
fn request_matches(want: &Value, got: &crate::results::Step) -> bool {
    let s = |k: &str| want.get(k).and_then(Value::as_str);
    got.kind == crate::results::StepKind::Upstream
        && s("upstream") == Some(got.name.as_str())
        && s("method").is_none_or(|m| m.eq_ignore_ascii_case(&got.method))
        && s("path").is_none_or(|p| format!("/{}", p.trim_start_matches('/')) == got.path)
        && want
            .get("query")
            .and_then(Value::as_object)
            .is_none_or(|q| {
                q.iter().all(|(k, v)| {
                    v.as_str()
                        .is_some_and(|v| got.query.get(k).map(String::as_str) == Some(v))
                })
            })
        && want
            .get("body")
            .is_none_or(|b| subset(b, got.body.as_ref().unwrap_or(&Value::Null)))
}

/// The problem of a wanted request, if it is not `{upstream, method?, path?, query?,
/// body?}` with string query values.
fn request_problem(i: usize, r: &Value) -> Option<String> {
    let Some(obj) = r.as_object() else {
        return Some(format!(
            "`requests[{i}]` must be {{upstream, method, path, query, body}}, not {}",
            crate::score::kind_of(r)
        ));
    };
    if let Some(k) = obj.keys().find(|k| !REQUEST_KEYS.contains(&k.as_str())) {
        return Some(match did_you_mean(k, REQUEST_KEYS) {
            Some(s) => format!("`requests[{i}]`: unknown key '{k}' (did you mean '{s}'?)"),
            None => format!(
                "`requests[{i}]`: unknown key '{k}'; a request is {{{}}}",
                REQUEST_KEYS.join(", ")
            ),
        });
    }
    if obj.get("upstream").and_then(Value::as_str).is_none() {
        return Some(format!(
            "`requests[{i}]` needs `upstream`: the name of the adapter.upstreams API it goes to"
        ));
    }
    for k in ["method", "path"] {
        if obj.get(k).is_some_and(|v| !v.is_string()) {
            return Some(format!("`requests[{i}].{k}` must be a string"));
        }
    }
    match obj.get("query") {
        None => None,
        Some(Value::Object(q)) => q.iter().find(|(_, v)| !v.is_string()).map(|(k, v)| {
            format!(
                "`requests[{i}].query.{k}` is {v}, but a query's values are strings: write {k}: \"{}\"",
                match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                }
            )
        }),
        Some(other) => Some(format!(
            "`requests[{i}].query` must be a mapping of parameters, not {}",
            crate::score::kind_of(other)
        )),
    }
}

/// The calls as a diagnostic shows them.
fn calls_value(calls: &[crate::results::ToolCall]) -> Value {
    serde_json::to_value(calls).unwrap_or(Value::Null)
}

/// Grades replies by the assertions of the suite's and the case's `expect`.
pub struct AssertionsScorer {
    suite_expect: Option<Value>,
    /// Compiled patterns and schemas by source, so a suite-wide check compiles once.
    regexes: Mutex<HashMap<String, Result<Regex, String>>>,
    schemas: Mutex<HashMap<String, Result<Arc<jsonschema::Validator>, String>>>,
}

impl std::fmt::Debug for AssertionsScorer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AssertionsScorer")
            .field("suite_expect", &self.suite_expect)
            .finish_non_exhaustive()
    }
}

impl AssertionsScorer {
    /// A scorer with the suite-wide `expect` block (`scorer.expect`), checked up front: the
    /// error names the first bad key, e.g. `unknown assertion 'contians' (did you mean
    /// 'contains'?)`.
    pub fn new(suite_expect: Option<Value>) -> Result<Self, String> {
        let scorer = AssertionsScorer {
            suite_expect: None,
            regexes: Mutex::new(HashMap::new()),
            schemas: Mutex::new(HashMap::new()),
        };
        if let Some(block) = &suite_expect {
            let Value::Object(map) = block else {
                return Err(format!(
                    "`expect` must be a mapping of assertions ({}), not {}",
                    ASSERTION_KINDS.join(", "),
                    crate::score::kind_of(block)
                ));
            };
            let (_, problems) = scorer.parse(map);
            if let Some(first) = problems.into_iter().next() {
                return Err(first);
            }
        }
        Ok(AssertionsScorer {
            suite_expect,
            ..scorer
        })
    }

    /// The suite's `expect` with the case's merged over it; a case key wins. A case `expect`
    /// that is not a mapping is reported by `verify` and otherwise ignored.
    fn merged(&self, case: &Case) -> Map<String, Value> {
        let mut map = match &self.suite_expect {
            Some(Value::Object(m)) => m.clone(),
            _ => Map::new(),
        };
        if let Some(Value::Object(own)) = &case.expect {
            for (k, v) in own {
                map.insert(k.clone(), v.clone());
            }
        }
        map
    }

    /// The checks of an `expect` mapping in [`ASSERTION_KINDS`] order, and its problems.
    /// A check whose pattern or schema does not compile is kept: it fails when scored.
    fn parse(&self, map: &Map<String, Value>) -> (Vec<Check>, Vec<String>) {
        let mut checks = Vec::new();
        let mut problems = Vec::new();
        for &kind in ASSERTION_KINDS {
            let Some(value) = map.get(kind) else { continue };
            match kind {
                "equals" => checks.push(Check::Equals(value.clone())),
                "contains" | "not_contains" | "regex" => match strings(value) {
                    Some(list) => {
                        for s in list {
                            checks.push(match kind {
                                "contains" => Check::Contains(s),
                                "not_contains" => Check::NotContains(s),
                                _ => {
                                    if let Err(e) = self.regex(&s) {
                                        problems.push(format!("regex {s:?}: {e}"));
                                    }
                                    Check::Regex(s)
                                }
                            });
                        }
                    }
                    None => problems.push(format!(
                        "`{kind}` must be a string or a list of strings, not {}",
                        crate::score::kind_of(value)
                    )),
                },
                "json_valid" => match value {
                    Value::Bool(true) => checks.push(Check::JsonValid),
                    // `false` switches off a suite-wide `json_valid: true` for a case.
                    Value::Bool(false) => {}
                    other => problems.push(format!(
                        "`json_valid` must be true or false, not {}",
                        crate::score::kind_of(other)
                    )),
                },
                "required_json_keys" => match value {
                    Value::Array(_) => match strings(value) {
                        Some(keys) => checks.push(Check::RequiredJsonKeys(keys)),
                        None => problems
                            .push("`required_json_keys` must be a list of strings".to_string()),
                    },
                    other => problems.push(format!(
                        "`required_json_keys` must be a list of strings, not {}",
                        crate::score::kind_of(other)
                    )),
                },
                "json_schema" => {
                    if let Err(e) = self.schema(value) {
                        problems.push(format!("json_schema: {e}"));
                    }
                    checks.push(Check::JsonSchema(value.clone()));
                }
                "tool_calls" => {
                    let ordered = map.get("ordered").and_then(Value::as_bool) == Some(true);
                    let list = match value {
                        Value::Array(l) => l.clone(),
                        one @ Value::Object(_) => vec![one.clone()],
                        other => {
                            problems.push(format!(
                                "`tool_calls` must be a list of {{name, arguments}}, not {}",
                                crate::score::kind_of(other)
                            ));
                            continue;
                        }
                    };
                    let bad = list.iter().position(|c| {
                        c.get("name").and_then(Value::as_str).is_none()
                            || c.as_object()
                                .is_some_and(|o| o.keys().any(|k| k != "name" && k != "arguments"))
                    });
                    if let Some(i) = bad {
                        problems.push(format!(
                            "`tool_calls[{i}]` must be {{name, arguments}} (arguments optional, matched as a subset)"
                        ));
                        continue;
                    }
                    if ordered {
                        checks.push(Check::ToolCallsInOrder(list));
                    } else {
                        checks.extend(list.into_iter().map(Check::ToolCall));
                    }
                }
                "requests" => {
                    let ordered = map.get("ordered").and_then(Value::as_bool) == Some(true);
                    let list = match value {
                        Value::Array(l) => l.clone(),
                        one @ Value::Object(_) => vec![one.clone()],
                        other => {
                            problems.push(format!(
                                "`requests` must be a list of {{upstream, method, path, query, body}}, not {}",
                                crate::score::kind_of(other)
                            ));
                            continue;
                        }
                    };
                    if let Some(p) = list
                        .iter()
                        .enumerate()
                        .find_map(|(i, r)| request_problem(i, r))
                    {
                        problems.push(p);
                        continue;
                    }
                    if ordered {
                        checks.push(Check::RequestsInOrder(list));
                    } else {
                        checks.extend(list.into_iter().map(Check::Request));
                    }
                }
                "no_requests" => match value {
                    Value::Bool(true) => checks.push(Check::NoRequests(None)),
                    Value::Bool(false) => {}
                    other => match strings(other) {
                        Some(names) => checks.push(Check::NoRequests(Some(names))),
                        None => problems.push(format!(
                            "`no_requests` must be a list of upstream names (or true: none at all), not {}",
                            crate::score::kind_of(other)
                        )),
                    },
                },
                "no_tool_calls" => match value {
                    Value::Bool(true) => checks.push(Check::NoToolCalls),
                    Value::Bool(false) => {}
                    other => problems.push(format!(
                        "`no_tool_calls` must be true or false, not {}",
                        crate::score::kind_of(other)
                    )),
                },
                "tool_call_count" => {
                    let bound = |k: &str| value.get(k).and_then(Value::as_u64);
                    let ok = value.as_object().is_some_and(|o| {
                        !o.is_empty()
                            && o.iter()
                                .all(|(k, v)| (k == "min" || k == "max") && v.is_u64())
                    });
                    if !ok {
                        problems.push(
                            "`tool_call_count` must be {min, max} (whole numbers, either optional)"
                                .to_string(),
                        );
                    } else if let (Some(min), Some(max)) = (bound("min"), bound("max"))
                        && min > max
                    {
                        problems.push(format!(
                            "`tool_call_count` min {min} is more than max {max}: no reply can pass"
                        ));
                    } else {
                        checks.push(Check::ToolCallCount(bound("min"), bound("max")));
                    }
                }
                _ => match value.as_u64() {
                    Some(n) if kind == "min_chars" => checks.push(Check::MinChars(n)),
                    Some(n) => checks.push(Check::MaxChars(n)),
                    None => problems.push(format!(
                        "`{kind}` must be a whole number of characters, not {value}"
                    )),
                },
            }
        }
        if let (Some(min), Some(max)) = (
            map.get("min_chars").and_then(Value::as_u64),
            map.get("max_chars").and_then(Value::as_u64),
        ) && min > max
        {
            problems.push(format!(
                "`min_chars` {min} is more than `max_chars` {max}: no reply can pass both"
            ));
        }
        if map.contains_key("ordered")
            && !map.contains_key("tool_calls")
            && !map.contains_key("requests")
        {
            problems.push(
                "`ordered` qualifies `tool_calls` or `requests`, which this case does not have"
                    .to_string(),
            );
        }
        for key in map
            .keys()
            .filter(|k| !ASSERTION_KINDS.contains(&k.as_str()) && !MODIFIERS.contains(&k.as_str()))
        {
            problems.push(match did_you_mean(key, ASSERTION_KINDS) {
                Some(s) => format!("unknown assertion '{key}' (did you mean '{s}'?)"),
                None => format!(
                    "unknown assertion '{key}'; the assertions are {}",
                    ASSERTION_KINDS.join(", ")
                ),
            });
        }
        (checks, problems)
    }

    fn regex(&self, pattern: &str) -> Result<Regex, String> {
        let mut cache = self.regexes.lock().unwrap_or_else(PoisonError::into_inner);
        cache
            .entry(pattern.to_string())
            .or_insert_with(|| {
                Regex::new(pattern).map_err(|e| format!("invalid regex: {}", regex_reason(&e)))
            })
            .clone()
    }

    fn schema(&self, schema: &Value) -> Result<Arc<jsonschema::Validator>, String> {
        let mut cache = self.schemas.lock().unwrap_or_else(PoisonError::into_inner);
        cache
            .entry(schema.to_string())
            .or_insert_with(|| match schema {
                Value::Object(_) | Value::Bool(_) => jsonschema::validator_for(schema)
                    .map(Arc::new)
                    .map_err(|e| format!("invalid JSON Schema: {e}")),
                other => Err(format!(
                    "a JSON Schema is an object, not {}",
                    crate::score::kind_of(other)
                )),
            })
            .clone()
    }

    /// Runs one check; `Err` carries what the diagnostic shows as `got`.
    fn check(&self, check: &Check, text: &str, reply: &Reply) -> Result<(), Value> {
        let output = reply.output.as_ref();
        let excerpt = || excerpt(text);
        let pass = |ok: bool, got: Value| if ok { Ok(()) } else { Err(got) };
        if check.on_requests() {
            let Some(steps) = &reply.trajectory else {
                return Err(Value::String(NO_REQUEST_INFO.to_string()));
            };
            let sent: Vec<&crate::results::Step> = steps
                .iter()
                .filter(|s| s.kind == crate::results::StepKind::Upstream)
                .collect();
            let got = || serde_json::to_value(&sent).unwrap_or(Value::Null);
            return match check {
                Check::Request(want) => pass(sent.iter().any(|s| request_matches(want, s)), got()),
                Check::RequestsInOrder(wants) => {
                    let mut rest = sent.iter();
                    let ok = wants
                        .iter()
                        .all(|w| rest.by_ref().any(|s| request_matches(w, s)));
                    pass(ok, got())
                }
                Check::NoRequests(names) => pass(
                    !sent
                        .iter()
                        .any(|s| names.as_ref().is_none_or(|n| n.contains(&s.name))),
                    got(),
                ),
                _ => unreachable!("on_requests covers the request checks"),
            };
        }
        if check.on_tool_calls() {
            let Some(calls) = &reply.tool_calls else {
                return Err(Value::String(NO_TOOL_INFO.to_string()));
            };
            let got = || calls_value(calls);
            return match check {
                Check::ToolCall(want) => pass(calls.iter().any(|c| call_matches(want, c)), got()),
                Check::ToolCallsInOrder(wants) => {
                    let mut rest = calls.iter();
                    let ok = wants
                        .iter()
                        .all(|w| rest.by_ref().any(|c| call_matches(w, c)));
                    pass(ok, got())
                }
                Check::NoToolCalls => pass(calls.is_empty(), got()),
                Check::ToolCallCount(min, max) => {
                    let n = calls.len() as u64;
                    pass(
                        min.is_none_or(|m| n >= m) && max.is_none_or(|m| n <= m),
                        Value::from(n),
                    )
                }
                _ => unreachable!("on_tool_calls covers the tool-call checks"),
            };
        }
        match check {
            Check::Equals(Value::String(want)) => pass(text.trim() == want.trim(), excerpt()),
            Check::Equals(want) => {
                let ok = as_json(output, text).is_some_and(|got| json_eq(&got, want));
                pass(ok, excerpt())
            }
            Check::Contains(s) => pass(text.contains(s.as_str()), excerpt()),
            Check::NotContains(s) => pass(!text.contains(s.as_str()), excerpt()),
            Check::Regex(p) => match self.regex(p) {
                Ok(re) => pass(re.is_match(text), excerpt()),
                Err(e) => Err(Value::String(e)),
            },
            Check::JsonValid => pass(as_json(output, text).is_some(), excerpt()),
            Check::RequiredJsonKeys(keys) => match as_json(output, text) {
                // `got` lists the keys the object has, beside the wanted ones.
                Some(Value::Object(obj)) => pass(
                    keys.iter().all(|k| obj.contains_key(k)),
                    obj.keys().cloned().map(Value::String).collect(),
                ),
                _ => Err(excerpt()),
            },
            Check::JsonSchema(schema) => {
                let validator = self.schema(schema).map_err(Value::String)?;
                let Some(doc) = as_json(output, text) else {
                    return Err(excerpt());
                };
                // `got` says why the document does not match, which the text alone does not.
                let reasons: Vec<String> = validator
                    .iter_errors(&doc)
                    .take(3)
                    .map(|e| {
                        let path = e.instance_path().to_string();
                        if path.is_empty() {
                            e.to_string()
                        } else {
                            format!("{path}: {e}")
                        }
                    })
                    .collect();
                pass(reasons.is_empty(), Value::String(reasons.join("; ")))
            }
            // For lengths, `got` is the length.
            Check::MinChars(n) => {
                let len = text.chars().count() as u64;
                pass(len >= *n, Value::from(len))
            }
            Check::MaxChars(n) => {
                let len = text.chars().count() as u64;
                pass(len <= *n, Value::from(len))
            }
            Check::ToolCall(_)
            | Check::ToolCallsInOrder(_)
            | Check::NoToolCalls
            | Check::ToolCallCount(..)
            | Check::Request(_)
            | Check::RequestsInOrder(_)
            | Check::NoRequests(_) => unreachable!("checked above"),
        }
    }
}

/// The strings of a string or a list of strings.
fn strings(value: &Value) -> Option<Vec<String>> {
    match value {
        Value::String(s) => Some(vec![s.clone()]),
        Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().map(str::to_string))
            .collect(),
        _ => None,
    }
}

/// The one-line reason of a regex error (syntax errors draw a multi-line caret diagram).
fn regex_reason(e: &regex::Error) -> String {
    let text = e.to_string();
    text.lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .map(str::to_string)
        .unwrap_or_else(|| text.lines().last().unwrap_or_default().trim().to_string())
}

/// The text assertions look at.
fn reply_text(reply: &Reply) -> String {
    match &reply.output {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => reply.raw.clone().unwrap_or_default(),
    }
}

/// The reply as JSON: a structured output as it is, else the text parsed (inside one
/// Markdown code fence if it has one).
fn as_json(output: Option<&Value>, text: &str) -> Option<Value> {
    if let Some(v) = output
        && !v.is_string()
    {
        return Some(v.clone());
    }
    let trimmed = text.trim();
    let body = match trimmed.strip_prefix("```") {
        Some(rest) => {
            let rest = rest.split_once('\n').map_or("", |(_, body)| body);
            rest.trim_end().strip_suffix("```").unwrap_or(rest)
        }
        None => trimmed,
    };
    serde_json::from_str(body.trim()).ok()
}

/// JSON equality with numbers compared by value (`1` equals `1.0`).
pub(crate) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x == y,
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_eq(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// The text cut to [`EXCERPT_CHARS`] characters, with `…` when cut.
fn excerpt(text: &str) -> Value {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(EXCERPT_CHARS).collect();
    if chars.next().is_some() {
        Value::String(format!("{head}…"))
    } else {
        Value::String(head)
    }
}

impl Scorer for AssertionsScorer {
    fn metrics(&self) -> Vec<MetricDef> {
        vec![
            MetricDef {
                name: "pass_rate".to_string(),
                description: "Share of the case's assertions that passed (its mean is over \
                              cases; --min-pass-rate counts whole cases, as `passed` does)"
                    .to_string(),
                primary: true,
                higher_is_better: true,
            },
            MetricDef {
                name: "passed".to_string(),
                description: "1 when every assertion of the case passed, else 0; its mean is \
                              the share of cases that passed outright"
                    .to_string(),
                primary: false,
                higher_is_better: true,
            },
        ]
    }

    fn score(&self, case: &Case, reply: &Reply) -> Score {
        let (checks, _) = self.parse(&self.merged(case));
        let zero = |diagnostic: Diagnostic| Score {
            value: 0.0,
            metrics: BTreeMap::from([
                ("pass_rate".to_string(), Some(0.0)),
                ("passed".to_string(), Some(0.0)),
            ]),
            diagnostics: vec![diagnostic],
            passed: Some(false),
        };
        if let Some(error) = &reply.error {
            return zero(Diagnostic {
                field: "(reply)".to_string(),
                want: Value::Null,
                got: Value::String(if checks.is_empty() {
                    error.clone()
                } else {
                    format!(
                        "{error} (all {} failed)",
                        crate::text::plural(checks.len(), "assertion", "assertions")
                    )
                }),
                outcome: Outcome::Failed,
            });
        }
        let text = reply_text(reply);
        let mut diagnostics = Vec::new();
        for check in &checks {
            if let Err(got) = self.check(check, &text, reply) {
                diagnostics.push(Diagnostic {
                    field: check.label(),
                    want: check.want(),
                    got,
                    outcome: Outcome::Failed,
                });
            }
        }
        // No assertions: a usable reply is all the case asks for (LLMEvalForge scores it 1.0).
        let total = checks.len();
        let pass_rate = if total == 0 {
            1.0
        } else {
            (total - diagnostics.len()) as f64 / total as f64
        };
        let all = if diagnostics.is_empty() { 1.0 } else { 0.0 };
        Score {
            value: pass_rate,
            metrics: BTreeMap::from([
                ("pass_rate".to_string(), Some(pass_rate)),
                ("passed".to_string(), Some(all)),
            ]),
            passed: Some(diagnostics.is_empty()),
            diagnostics,
        }
    }

    /// As [`Scorer::score`], except that a tool-call check on a reply without tool-call
    /// information is an error of the case (RubyLLM's rule: `null` is not `[]`).
    fn score_checked<'a>(&'a self, case: &'a Case, reply: &'a Reply) -> super::ScoreFuture<'a> {
        Box::pin(async move {
            if reply.error.is_none() && reply.tool_calls.is_none() {
                let (checks, _) = self.parse(&self.merged(case));
                if let Some(c) = checks.iter().find(|c| c.on_tool_calls()) {
                    return Err(crate::results::CaseError::new(
                        crate::results::CaseErrorKind::Scorer,
                        format!("{}: {NO_TOOL_INFO}", c.label()),
                    ));
                }
            }
            // Likewise a request check on a reply whose requests nobody saw.
            if reply.error.is_none() && reply.trajectory.is_none() {
                let (checks, _) = self.parse(&self.merged(case));
                if let Some(c) = checks.iter().find(|c| c.on_requests()) {
                    return Err(crate::results::CaseError::new(
                        crate::results::CaseErrorKind::Scorer,
                        format!("{}: {NO_REQUEST_INFO}", c.label()),
                    ));
                }
            }
            Ok(self.score(case, reply))
        })
    }

    fn verify(&self, case: &Case) -> Vec<String> {
        let mut problems = Vec::new();
        if let Some(own) = &case.expect
            && !own.is_object()
        {
            problems.push(format!(
                "`expect` must be a mapping of assertions ({}), not {}",
                ASSERTION_KINDS.join(", "),
                crate::score::kind_of(own)
            ));
        }
        let (checks, found) = self.parse(&self.merged(case));
        problems.extend(found);
        // A case with no assertions passes on any usable reply; one that gives an `expected`
        // answer surely meant it to be checked.
        if checks.is_empty() && problems.is_empty() && case.expected.is_some() {
            problems.push(
                "no assertions, and `expected` alone checks nothing: use `expect: { equals: ... }` (or add `scorer.expect`)"
                    .to_string(),
            );
        }
        problems
    }

    fn summary(&self, case: &Case) -> String {
        match self.parse(&self.merged(case)).0.len() {
            0 => "none: a reply passes".to_string(),
            n => crate::text::plural(n, "assertion", "assertions"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use serde_json::json;

    use super::*;
    use crate::suite::CaseInput;

    fn case(expect: Value) -> Case {
        Case {
            id: "refund-window".into(),
            dataset: "support".into(),
            variant: "refund-window".into(),
            input: CaseInput::Text("How long do I have to return it?".into()),
            expected: None,
            expect: Some(expect),
            tags: vec![],
            weight: 1.0,
            metadata: Map::new(),
            minimum_scores: BTreeMap::new(),
            mock_response: None,
            source: PathBuf::from("datasets/support.jsonl"),
            line: Some(3),
            expected_components: None,
        }
    }

    fn text(s: &str) -> Reply {
        Reply {
            output: Some(Value::String(s.into())),
            raw: Some(s.into()),
            ..Reply::default()
        }
    }

    fn scorer() -> AssertionsScorer {
        match AssertionsScorer::new(None) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        }
    }

    /// The score of one `expect` block against a reply text.
    fn score(expect: Value, reply: &str) -> Score {
        scorer().score(&case(expect), &text(reply))
    }

    fn passes(expect: Value, reply: &str) -> bool {
        let s = score(expect, reply);
        s.value == 1.0 && s.diagnostics.is_empty()
    }

    #[test]
    fn equals_string_is_trimmed() {
        assert!(passes(json!({"equals": "30 days"}), "  30 days\n"));
        assert!(!passes(json!({"equals": "30 days"}), "thirty days"));
    }

    #[test]
    fn equals_json_compares_values() {
        assert!(passes(
            json!({"equals": {"days": 30}}),
            r#"{ "days": 30.0 }"#
        ));
        assert!(!passes(json!({"equals": {"days": 30}}), r#"{"days": 31}"#));
        let structured = Reply {
            output: Some(json!({"days": 30})),
            ..Reply::default()
        };
        assert_eq!(
            scorer()
                .score(&case(json!({"equals": {"days": 30}})), &structured)
                .value,
            1.0
        );
    }

    #[test]
    fn contains_each_string_is_one_assertion() {
        let s = score(
            json!({"contains": ["30 days", "receipt", "store credit"]}),
            "Within 30 days, with a receipt.",
        );
        assert!((s.value - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!(s.metrics.get("passed"), Some(&Some(0.0)));
        assert_eq!(
            s.diagnostics,
            vec![Diagnostic {
                field: "contains \"store credit\"".into(),
                want: json!("store credit"),
                got: json!("Within 30 days, with a receipt."),
                outcome: Outcome::Failed,
            }]
        );
        assert!(passes(json!({"contains": "30 days"}), "within 30 days"));
        assert!(!passes(json!({"contains": "30 Days"}), "within 30 days"));
    }

    #[test]
    fn not_contains() {
        assert!(passes(
            json!({"not_contains": ["sorry", "As an AI"]}),
            "Within 30 days."
        ));
        assert!(!passes(
            json!({"not_contains": "sorry"}),
            "I'm sorry, 30 days."
        ));
    }

    #[test]
    fn regex_searches_the_text() {
        assert!(passes(json!({"regex": r"^\d+$"}), "30"));
        let s = score(json!({"regex": [r"^\d+$", r"(?i)days"]}), "30 DAYS");
        assert_eq!(s.value, 0.5);
        assert_eq!(s.diagnostics[0].field, r"regex ^\d+$");
    }

    #[test]
    fn an_invalid_regex_fails_with_the_reason_and_verify_reports_it() {
        let s = score(json!({"regex": "(unclosed"}), "anything");
        assert_eq!(s.value, 0.0);
        let got = s.diagnostics[0]
            .got
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(got.starts_with("invalid regex: "), "{got}");
        let problems = scorer().verify(&case(json!({"regex": "(unclosed"})));
        assert_eq!(problems.len(), 1);
        assert_eq!(
            problems[0],
            "regex \"(unclosed\": invalid regex: unclosed group"
        );
    }

    #[test]
    fn json_valid() {
        assert!(passes(json!({"json_valid": true}), r#"{"a": 1}"#));
        assert!(passes(
            json!({"json_valid": true}),
            "```json\n{\"a\": 1}\n```"
        ));
        assert!(!passes(json!({"json_valid": true}), "Sure! {\"a\": 1}"));
    }

    #[test]
    fn required_json_keys() {
        assert!(passes(
            json!({"required_json_keys": ["days", "policy"]}),
            r#"{"days": 30, "policy": "x"}"#
        ));
        let s = score(
            json!({"required_json_keys": ["days", "policy"]}),
            r#"{"days": 30}"#,
        );
        assert_eq!(s.value, 0.0);
        assert_eq!(s.diagnostics[0].want, json!(["days", "policy"]));
        assert_eq!(s.diagnostics[0].got, json!(["days"]));
        assert!(!passes(json!({"required_json_keys": ["days"]}), "[1, 2]"));
    }

    #[test]
    fn json_schema() {
        let schema = json!({
            "type": "object",
            "required": ["days"],
            "properties": {"days": {"type": "integer"}}
        });
        assert!(passes(json!({"json_schema": schema}), r#"{"days": 30}"#));
        let s = score(json!({"json_schema": schema}), r#"{"days": "thirty"}"#);
        assert_eq!(s.value, 0.0);
        let got = s.diagnostics[0]
            .got
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(got.starts_with("/days: "), "{got}");
        assert!(!passes(json!({"json_schema": schema}), "not json"));
    }

    #[test]
    fn a_bad_json_schema_is_a_verify_problem() {
        let problems = scorer().verify(&case(json!({"json_schema": {"type": "strin"}})));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with("json_schema: invalid JSON Schema"),
            "{}",
            problems[0]
        );
        let problems = scorer().verify(&case(json!({"json_schema": "object"})));
        assert_eq!(
            problems,
            vec!["json_schema: a JSON Schema is an object, not a string".to_string()]
        );
    }

    #[test]
    fn min_and_max_chars_count_characters() {
        assert!(passes(json!({"min_chars": 3, "max_chars": 5}), "héllo"));
        let s = score(json!({"min_chars": 10}), "héllo");
        assert_eq!(s.diagnostics[0].got, json!(5));
        assert!(!passes(json!({"max_chars": 4}), "héllo"));
    }

    #[test]
    fn long_text_is_cut_in_diagnostics() {
        let long = "x".repeat(500);
        let s = score(json!({"contains": "y"}), &long);
        let got = s.diagnostics[0]
            .got
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert_eq!(got.chars().count(), 201);
        assert!(got.ends_with('…'));
    }

    #[test]
    fn case_expect_merges_over_the_suite_and_case_keys_win() {
        let scorer = AssertionsScorer::new(Some(json!({"contains": "days", "max_chars": 10})))
            .unwrap_or_else(|e| panic!("{e}"));
        let c = case(json!({"max_chars": 100, "regex": r"\d+"}));
        assert_eq!(scorer.summary(&c), "3 assertions");
        let s = scorer.score(&c, &text("Within 30 days of purchase."));
        assert_eq!(s.value, 1.0, "{:?}", s.diagnostics);
        // A case without its own `expect` gets the suite's.
        let mut bare = case(json!({}));
        bare.expect = None;
        assert_eq!(scorer.summary(&bare), "2 assertions");
        assert_eq!(
            scorer
                .score(&bare, &text("Within 30 days of purchase."))
                .value,
            0.5
        );
    }

    #[test]
    fn json_valid_false_switches_off_the_suites() {
        let scorer = AssertionsScorer::new(Some(json!({"json_valid": true, "contains": "a"})))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            scorer.summary(&case(json!({"json_valid": false}))),
            "1 assertion"
        );
    }

    #[test]
    fn reply_error_fails_every_assertion() {
        let r = Reply {
            error: Some("refused".into()),
            ..Reply::default()
        };
        let s = scorer().score(&case(json!({"contains": ["a", "b"]})), &r);
        assert_eq!(s.value, 0.0);
        assert_eq!(s.metrics.get("pass_rate"), Some(&Some(0.0)));
        assert_eq!(s.metrics.get("passed"), Some(&Some(0.0)));
        assert_eq!(s.diagnostics.len(), 1);
        assert_eq!(s.diagnostics[0].field, "(reply)");
        assert_eq!(
            s.diagnostics[0].got,
            json!("refused (all 2 assertions failed)")
        );
    }

    #[test]
    fn structured_output_is_checked_as_json_text_and_raw_when_no_output() {
        let r = Reply {
            output: Some(json!({"days": 30})),
            ..Reply::default()
        };
        assert_eq!(
            scorer()
                .score(&case(json!({"contains": "\"days\":30"})), &r)
                .value,
            1.0
        );
        let r = Reply {
            raw: Some("30 days".into()),
            ..Reply::default()
        };
        assert_eq!(
            scorer().score(&case(json!({"contains": "30"})), &r).value,
            1.0
        );
    }

    #[test]
    fn new_refuses_an_unknown_key_with_a_suggestion() {
        let err = AssertionsScorer::new(Some(json!({"contians": "x"}))).err();
        assert_eq!(
            err.as_deref(),
            Some("unknown assertion 'contians' (did you mean 'contains'?)")
        );
        let err = AssertionsScorer::new(Some(json!({"min_chars": "ten"}))).err();
        assert_eq!(
            err.as_deref(),
            Some("`min_chars` must be a whole number of characters, not \"ten\"")
        );
        assert!(AssertionsScorer::new(Some(json!(["contains"]))).is_err());
    }

    #[test]
    fn a_case_without_assertions_passes_on_a_usable_reply() {
        let mut c = case(json!({}));
        c.expect = None;
        assert_eq!(scorer().verify(&c), Vec::<String>::new());
        let s = scorer().score(&c, &text("anything"));
        assert_eq!((s.value, s.passed), (1.0, Some(true)));
        assert_eq!(s.metrics.get("passed"), Some(&Some(1.0)));
        assert!(s.diagnostics.is_empty());
        let unusable = Reply {
            error: Some("empty reply".into()),
            ..Reply::default()
        };
        let s = scorer().score(&c, &unusable);
        assert_eq!((s.value, s.passed), (0.0, Some(false)));
        assert_eq!(s.diagnostics[0].got, json!("empty reply"));
        // With an `expected` answer and nothing to check it, verify says so.
        c.expected = Some(json!("30 days"));
        assert_eq!(
            scorer().verify(&c),
            vec![
                "no assertions, and `expected` alone checks nothing: use `expect: { equals: ... \
                 }` (or add `scorer.expect`)"
                    .to_string()
            ]
        );
    }

    #[test]
    fn verify_unknown_key_and_contradictory_lengths() {
        let problems = scorer().verify(&case(json!({"regx": "a", "min_chars": 9, "max_chars": 3})));
        assert_eq!(
            problems,
            vec![
                "`min_chars` 9 is more than `max_chars` 3: no reply can pass both".to_string(),
                "unknown assertion 'regx' (did you mean 'regex'?)".to_string(),
            ]
        );
    }

    fn calls(list: &[(&str, Value)]) -> Reply {
        Reply {
            output: Some(Value::String(String::new())),
            tool_calls: Some(
                list.iter()
                    .map(|(n, a)| crate::results::ToolCall {
                        name: n.to_string(),
                        arguments: a.clone(),
                    })
                    .collect(),
            ),
            ..Reply::default()
        }
    }

    #[test]
    fn tool_calls_match_by_name_and_argument_subset_in_any_order_unless_ordered() {
        let reply = calls(&[
            ("lookup", json!({"order_id": "1042", "verbose": true})),
            ("refund", json!({"order_id": "1042", "amount": 40.0})),
        ]);
        let value = |expect: Value| scorer().score(&case(expect), &reply).value;
        // Any order; arguments a subset, numbers by value.
        assert_eq!(
            value(json!({"tool_calls": [
                {"name": "refund", "arguments": {"amount": 40}},
                {"name": "lookup", "arguments": {"order_id": "1042"}}]})),
            1.0
        );
        // One wanted call is one assertion: a wrong argument fails that one.
        assert_eq!(
            value(json!({"tool_calls": [
                {"name": "refund", "arguments": {"amount": 80}}, {"name": "lookup"}]})),
            0.5
        );
        assert_eq!(
            value(json!({"ordered": true, "tool_calls": [{"name": "lookup"}, {"name": "refund"}]})),
            1.0
        );
        assert_eq!(
            value(json!({"ordered": true, "tool_calls": [{"name": "refund"}, {"name": "lookup"}]})),
            0.0
        );
        assert_eq!(value(json!({"tool_call_count": {"min": 2, "max": 2}})), 1.0);
        assert_eq!(value(json!({"tool_call_count": {"max": 1}})), 0.0);
        assert_eq!(value(json!({"no_tool_calls": true})), 0.0);
        assert_eq!(
            scorer()
                .score(&case(json!({"no_tool_calls": true})), &calls(&[]))
                .value,
            1.0
        );
    }

    #[test]
    fn tool_call_checks_without_tool_call_information_fail_and_error_when_awaited() {
        let expect = json!({"no_tool_calls": true});
        let s = scorer().score(&case(expect.clone()), &text("hi"));
        assert_eq!(s.value, 0.0);
        assert!(
            s.diagnostics[0]
                .got
                .as_str()
                .unwrap()
                .starts_with("no tool-call information")
        );
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let err = rt
            .block_on(scorer().score_checked(&case(expect), &text("hi")))
            .unwrap_err();
        assert_eq!(err.kind, crate::results::CaseErrorKind::Scorer);
        assert!(
            err.message
                .starts_with("no_tool_calls: no tool-call information"),
            "{}",
            err.message
        );
        // A text check on the same reply needs no tool-call information.
        assert!(
            rt.block_on(scorer().score_checked(&case(json!({"contains": "hi"})), &text("hi")))
                .is_ok()
        );
    }

    #[test]
    fn bad_tool_call_assertions_are_named() {
        let problems = |expect: Value| scorer().verify(&case(expect));
        assert_eq!(
            problems(json!({"tool_calls": [{"arguments": {}}]})),
            ["`tool_calls[0]` must be {name, arguments} (arguments optional, matched as a subset)"]
        );
        assert_eq!(
            problems(json!({"tool_call_count": {"min": 3, "max": 1}})),
            ["`tool_call_count` min 3 is more than max 1: no reply can pass"]
        );
        assert_eq!(
            problems(json!({"ordered": true, "contains": "x"})),
            ["`ordered` qualifies `tool_calls` or `requests`, which this case does not have"]
        );
        assert_eq!(
            problems(json!({"tool_cals": []})),
            ["unknown assertion 'tool_cals' (did you mean 'tool_calls'?)"]
        );
    }

    fn sent(trajectory: Option<Vec<crate::results::Step>>) -> Reply {
        Reply {
            output: Some(Value::String("ok".into())),
            trajectory,
            ..Reply::default()
        }
    }

    fn step(
        name: &str,
        method: &str,
        path: &str,
        query: &str,
        body: Value,
    ) -> crate::results::Step {
        crate::results::Step {
            kind: crate::results::StepKind::Upstream,
            name: name.into(),
            method: method.into(),
            path: path.into(),
            query: crate::results::trajectory::query_map(query),
            body: (!body.is_null()).then_some(body),
            status: Some(200),
            model: None,
        }
    }

    #[test]
    fn requests_match_as_a_subset_in_any_order_unless_ordered_json_types_distinct() {
        let steps = vec![
            crate::results::Step {
                kind: crate::results::StepKind::Model,
                ..step(
                    "openai/gpt-x",
                    "POST",
                    "/v1/chat/completions",
                    "",
                    Value::Null,
                )
            },
            step(
                "shipping",
                "GET",
                "/orders",
                "id=42&fields=status",
                Value::Null,
            ),
            step(
                "shipping",
                "POST",
                "/events",
                "",
                json!({"order": "42", "seen": true, "count": 1, "note": null}),
            ),
        ];
        let reply = sent(Some(steps));
        let run = |expect: Value| scorer().score(&case(expect), &reply);
        let ok = |expect: Value| {
            let s = run(expect.clone());
            assert!(s.diagnostics.len() <= 1, "{expect}: {s:?}");
            s.passed == Some(true)
        };
        assert!(ok(
            json!({"requests": [{"upstream": "shipping", "method": "get", "path": "orders", "query": {"id": "42"}}]})
        ));
        assert!(!ok(
            json!({"requests": [{"upstream": "shipping", "query": {"id": "43"}}]})
        ));
        assert!(!ok(json!({"requests": [{"upstream": "weather"}]})));
        // Any order, unless ordered.
        let both = |ordered: bool| {
            json!({"ordered": ordered, "requests": [
                {"upstream": "shipping", "path": "/events"},
                {"upstream": "shipping", "path": "/orders"},
            ]})
        };
        assert!(ok(both(false)));
        assert!(!ok(both(true)));
        // 1, "1", true, false and null are five values.
        for (body, want) in [
            (json!({"count": 1}), true),
            (json!({"count": "1"}), false),
            (json!({"count": 1.0}), true),
            (json!({"seen": true}), true),
            (json!({"seen": 1}), false),
            (json!({"note": null}), true),
            (json!({"note": false}), false),
            (json!({"missing": null}), false),
            (json!({"order": 42}), false),
        ] {
            let e = json!({"requests": [{"upstream": "shipping", "method": "POST", "body": body}]});
            assert_eq!(ok(e.clone()), want, "{e}");
        }
        assert!(ok(json!({"no_requests": ["weather"]})));
        assert!(!ok(json!({"no_requests": ["shipping"]})));
        assert!(!ok(json!({"no_requests": true})));
        let failed = run(json!({"requests": [{"upstream": "shipping", "path": "/refunds"}]}));
        assert_eq!(failed.diagnostics[0].field, "requests shipping /refunds");
        assert_eq!(
            failed.diagnostics[0].got.as_array().map(Vec::len),
            Some(2),
            "the requests sent"
        );
        // A query value that is not a string is a problem of the suite, said with the fix.
        let (_, problems) = scorer().parse(
            json!({"requests": [{"upstream": "s", "query": {"id": 42}}]})
                .as_object()
                .unwrap(),
        );
        assert_eq!(
            problems,
            ["`requests[0].query.id` is 42, but a query's values are strings: write id: \"42\""]
        );
        let (_, problems) =
            scorer().parse(json!({"requests": [{"upstrem": "s"}]}).as_object().unwrap());
        assert_eq!(
            problems,
            ["`requests[0]`: unknown key 'upstrem' (did you mean 'upstream'?)"]
        );
    }

    #[tokio::test]
    async fn a_request_check_on_a_reply_whose_requests_nobody_saw_errors_the_case() {
        let s = scorer();
        let case = case(json!({"no_requests": true}));
        let reply = sent(None);
        let err = s.score_checked(&case, &reply).await.unwrap_err();
        assert_eq!(err.kind, crate::results::CaseErrorKind::Scorer);
        assert!(
            err.message
                .starts_with("no_requests: no request information"),
            "{}",
            err.message
        );
        assert!(s.score_checked(&case, &sent(Some(vec![]))).await.is_ok());
    }
}
