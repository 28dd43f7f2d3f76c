//! A YAML document as a tree of nodes that remember their line, so an importer can say
//! where in a foreign file the part it could not translate is. Read with the same parser
//! (granit, under serde-saphyr) as the suite's own config; scalars stay text (a foreign
//! tool's YAML 1.1 booleans and numbers are read back by the caller that knows the key).

use serde_saphyr::granit_parser::{Event, Parser};

/// One YAML node and the 1-based line it starts on.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// 1-based line the node starts on.
    pub line: usize,
    /// What it holds.
    pub value: Value,
}

/// What a node holds. A mapping keeps its keys' order and each key's line.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A scalar as written (quoted or not) and whether it was plain (unquoted), so `null`,
    /// `true` and `3` can be told from `"null"`, `"true"` and `"3"`.
    Scalar {
        /// The text after YAML's escapes.
        text: String,
        /// Written without quotes.
        plain: bool,
    },
    /// A sequence's items.
    Seq(Vec<Node>),
    /// A mapping's keys and values, in order.
    Map(Vec<(Node, Node)>),
}

impl Node {
    /// The text of a scalar (`None` for a collection or a plain `null`/`~`).
    pub fn str(&self) -> Option<&str> {
        match &self.value {
            Value::Scalar { text, plain } => {
                if *plain && matches!(text.as_str(), "null" | "~" | "Null" | "NULL" | "") {
                    None
                } else {
                    Some(text)
                }
            }
            _ => None,
        }
    }

    /// A mapping's value under `key`.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            Value::Map(entries) => entries
                .iter()
                .find(|(k, _)| k.str() == Some(key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// A mapping's entries (empty for anything else).
    pub fn entries(&self) -> &[(Node, Node)] {
        match &self.value {
            Value::Map(entries) => entries,
            _ => &[],
        }
    }

    /// A sequence's items (empty for anything else).
    pub fn items(&self) -> &[Node] {
        match &self.value {
            Value::Seq(items) => items,
            _ => &[],
        }
    }

    /// Whether it is a mapping.
    pub fn is_map(&self) -> bool {
        matches!(self.value, Value::Map(_))
    }

    /// Whether it is a sequence.
    pub fn is_seq(&self) -> bool {
        matches!(self.value, Value::Seq(_))
    }

    /// A number, read from a plain or quoted scalar.
    pub fn number(&self) -> Option<f64> {
        self.str().and_then(|s| s.trim().parse::<f64>().ok())
    }

    /// The node as JSON: plain scalars typed as YAML 1.2's core schema reads them
    /// (`true`/`false`, integers, floats, null), everything else text.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match &self.value {
            Value::Scalar { text, plain } => {
                if !plain {
                    return J::String(text.clone());
                }
                match text.as_str() {
                    "null" | "~" | "Null" | "NULL" | "" => J::Null,
                    "true" | "True" | "TRUE" => J::Bool(true),
                    "false" | "False" | "FALSE" => J::Bool(false),
                    t => {
                        if let Ok(i) = t.parse::<i64>() {
                            J::from(i)
                        } else if let Some(f) = t
                            .parse::<f64>()
                            .ok()
                            .filter(|f| f.is_finite() && t.chars().any(|c| c.is_ascii_digit()))
                        {
                            serde_json::Number::from_f64(f).map_or(J::String(t.into()), J::Number)
                        } else {
                            J::String(t.into())
                        }
                    }
                }
            }
            Value::Seq(items) => J::Array(items.iter().map(Node::to_json).collect()),
            Value::Map(entries) => J::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.str().unwrap_or("null").to_string(), v.to_json()))
                    .collect(),
            ),
        }
    }
}

/// Where a YAML text stops being YAML: the 1-based line and column, and the parser's words.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntaxError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// The parser's words.
    pub message: String,
}

/// The first document of `text` as a tree (`None` for an empty file). Aliases are resolved
/// to a copy of their anchor's node; past `max_nodes` nodes (an alias bomb) is an error.
pub fn parse(text: &str, max_nodes: usize) -> Result<Option<Node>, SyntaxError> {
    let mut anchors: std::collections::HashMap<usize, Node> = std::collections::HashMap::new();
    // Open collections: the node so far, its anchor id, and a pending mapping key.
    let mut stack: Vec<(Node, usize, Option<Node>)> = Vec::new();
    let mut root: Option<Node> = None;
    let mut count = 0usize;
    let too_big = |line| SyntaxError {
        line,
        column: 1,
        message: format!(
            "the YAML expands past {max_nodes} nodes (aliases that repeat each other?)"
        ),
    };
    for next in Parser::new_from_str(text) {
        let (event, span) = next.map_err(|e| SyntaxError {
            line: e.marker().line(),
            column: e.marker().col() + 1,
            message: e.info().to_string(),
        })?;
        let line = span.start.line();
        let done: Option<(Node, usize)> = match event {
            Event::DocumentEnd if root.is_some() || !stack.is_empty() => break,
            Event::Scalar(text, style, anchor, _) => Some((
                Node {
                    line,
                    value: Value::Scalar {
                        text: text.into_owned(),
                        plain: matches!(style, serde_saphyr::granit_parser::ScalarStyle::Plain),
                    },
                },
                anchor,
            )),
            Event::Alias(id) => {
                let node = anchors.get(&id).cloned().ok_or(SyntaxError {
                    line,
                    column: span.start.col() + 1,
                    message: "an alias to no anchor".into(),
                })?;
                count += weight(&node);
                if count > max_nodes {
                    return Err(too_big(line));
                }
                Some((node, 0))
            }
            Event::SequenceStart(_, anchor, _) => {
                stack.push((
                    Node {
                        line,
                        value: Value::Seq(Vec::new()),
                    },
                    anchor,
                    None,
                ));
                None
            }
            Event::MappingStart(_, anchor, _) => {
                stack.push((
                    Node {
                        line,
                        value: Value::Map(Vec::new()),
                    },
                    anchor,
                    None,
                ));
                None
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let (node, anchor, _) = stack.pop().ok_or(SyntaxError {
                    line,
                    column: 1,
                    message: "a collection closed that was never opened".into(),
                })?;
                Some((node, anchor))
            }
            _ => None,
        };
        let Some((node, anchor)) = done else { continue };
        count += 1;
        if count > max_nodes {
            return Err(too_big(line));
        }
        if anchor != 0 {
            anchors.insert(anchor, node.clone());
        }
        match stack.last_mut() {
            None => root = Some(node),
            Some((parent, _, pending)) => match &mut parent.value {
                Value::Seq(items) => items.push(node),
                Value::Map(entries) => match pending.take() {
                    None => *pending = Some(node),
                    Some(key) => entries.push((key, node)),
                },
                Value::Scalar { .. } => {}
            },
        }
    }
    Ok(root)
}

/// How many nodes a (copied) node holds.
fn weight(node: &Node) -> usize {
    match &node.value {
        Value::Scalar { .. } => 1,
        Value::Seq(items) => 1 + items.iter().map(weight).sum::<usize>(),
        Value::Map(entries) => {
            1 + entries
                .iter()
                .map(|(k, v)| weight(k) + weight(v))
                .sum::<usize>()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_keep_their_lines_and_aliases_resolve() {
        let doc = parse(
            "a: 1\nb:\n  - &x {k: v}\n  - *x\nc: 'null'\nd: null\n",
            1000,
        )
        .unwrap()
        .unwrap();
        assert_eq!(doc.get("a").unwrap().line, 1);
        let b = doc.get("b").unwrap();
        assert_eq!(b.items().len(), 2);
        assert_eq!(b.items()[0].line, 3);
        assert_eq!(b.items()[1].get("k").unwrap().str(), Some("v"));
        assert_eq!(doc.get("c").unwrap().str(), Some("null"));
        assert_eq!(doc.get("d").unwrap().str(), None);
        assert_eq!(doc.to_json()["a"], serde_json::json!(1));
    }

    #[test]
    fn a_syntax_error_names_its_line() {
        let err = parse("a: 1\nb: [1, 2\nc: 3\n", 1000).unwrap_err();
        assert!(err.line >= 2, "{err:?}");
    }
}
