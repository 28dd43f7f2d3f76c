//! What a YAML syntax or size error means, in words: a `[` or `{` that is never closed (named
//! where it was opened, not where the parser gave up), and a file that expands past
//! serde-saphyr's budget (an alias bomb) rather than `budget breached: Nodes { .. }`.

use serde_saphyr::Error as YamlError;
use serde_saphyr::budget::BudgetBreach;
use serde_saphyr::granit_parser::{Event, Parser, StructureStyle};

/// A suite's YAML is written by hand: past this many nodes it is an alias bomb, not a config
/// (serde-saphyr's default, 250,000, takes seconds to reach).
const MAX_NODES: usize = 50_000;

/// serde-saphyr's options for suite files: its defaults, with [`MAX_NODES`].
pub(crate) fn options() -> serde_saphyr::Options {
    let mut o = serde_saphyr::Options::default();
    if let Some(b) = o.budget.as_mut() {
        b.max_nodes = MAX_NODES;
    }
    o
}

/// The error under serde-saphyr's snippet and alias wrappers.
pub(crate) fn innermost(mut e: &YamlError) -> &YamlError {
    loop {
        match e {
            YamlError::WithSnippet { error, .. } | YamlError::AliasError { error, .. } => e = error,
            other => return other,
        }
    }
}

/// A budget breach said as what the file does wrong and how to fix it.
pub(crate) fn budget_message(breach: &BudgetBreach) -> String {
    let limits = options().budget.unwrap_or_default();
    match breach {
        BudgetBreach::Nodes { .. }
        | BudgetBreach::Events { .. }
        | BudgetBreach::Aliases { .. }
        | BudgetBreach::AliasAnchorRatio { .. }
        | BudgetBreach::RecordedAnchorEvents { .. }
        | BudgetBreach::RecordedAnchorBytes { .. } => format!(
            "the YAML expands past {} nodes (aliases that repeat each other?): write the values out, or use fewer `*aliases`",
            limits.max_nodes
        ),
        BudgetBreach::Depth { .. } => format!(
            "the YAML nests deeper than {} levels: flatten it",
            limits.max_depth
        ),
        other => format!("the YAML is past a size limit ({other:?}): make the file smaller"),
    }
}

/// A flow collection that the file opens and never closes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Unclosed {
    /// 1-based line and column of the opening bracket.
    pub line: usize,
    pub column: usize,
    pub open: char,
}

impl Unclosed {
    pub fn close(&self) -> char {
        if self.open == '[' { ']' } else { '}' }
    }
}

/// The flow collection (`[...]`, `{...}`) the parser was inside when it failed, if the
/// file never closes it. A collection that is closed, around some other mistake, is not
/// blamed: the parser's own message says more then.
pub(crate) fn unclosed_flow(text: &str) -> Option<Unclosed> {
    // Byte offsets of the open collections; None for block collections.
    let mut open: Vec<Option<usize>> = Vec::new();
    let mut failed = false;
    for next in Parser::new_from_str(text) {
        match next {
            Ok((Event::SequenceStart(style, ..) | Event::MappingStart(style, ..), span)) => {
                open.push(
                    (style == StructureStyle::Flow)
                        .then(|| span.start.byte_offset())
                        .flatten(),
                );
            }
            Ok((Event::SequenceEnd | Event::MappingEnd, _)) => {
                open.pop();
            }
            Ok(_) => {}
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    if !failed {
        return None;
    }
    // The span of a collection with an anchor or tag starts there; the bracket follows.
    let start = open.iter().rev().flatten().next().copied()?;
    let at = start + text.get(start..)?.find(['[', '{'])?;
    if closes(&text[at..]) {
        return None;
    }
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Some(Unclosed {
        line,
        column: text[line_start..at].chars().count() + 1,
        open: text[at..].chars().next()?,
    })
}

/// Whether the flow collection opening `text` is closed by its own bracket. Read as flow
/// YAML: quoted scalars (a quote starts one only where a value starts) and `#` comments
/// hide brackets. A quote never closed is "don't know": treated as closed, so the parser's
/// own message stands.
fn closes(text: &str) -> bool {
    let mut stack: Vec<char> = Vec::new();
    let mut chars = text.chars().peekable();
    let mut value_start = true;
    let mut prev = ' ';
    while let Some(c) = chars.next() {
        match c {
            '"' | '\'' if value_start => {
                let mut closed = false;
                while let Some(q) = chars.next() {
                    if c == '"' && q == '\\' {
                        chars.next();
                    } else if q == c {
                        // `''` inside a single-quoted scalar is a quote, not the end.
                        if c == '\'' && chars.peek() == Some(&'\'') {
                            chars.next();
                        } else {
                            closed = true;
                            break;
                        }
                    }
                }
                if !closed {
                    return true;
                }
                value_start = false;
            }
            '#' if prev.is_whitespace() => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        break;
                    }
                }
                prev = '\n';
                continue;
            }
            '[' | '{' => {
                stack.push(c);
                value_start = true;
            }
            ']' | '}' => {
                let want = if c == ']' { '[' } else { '{' };
                if stack.pop() != Some(want) {
                    return false;
                }
                if stack.is_empty() {
                    return true;
                }
                value_start = false;
            }
            ',' => value_start = true,
            ':' if chars.peek().is_none_or(|n| n.is_whitespace()) => value_start = true,
            c if c.is_whitespace() => {}
            _ => value_start = false,
        }
        prev = c;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brackets_in_quotes_and_comments_do_not_count() {
        assert!(closes("[a, \"]\" , 'it''s ]', b] # x"));
        assert!(closes("[a, # ] not this one\n b]"));
        assert!(closes("{a: don't, b: [c]}"));
        assert!(!closes("[a, {b: c]"));
        assert!(!closes("[a, b\nc: d\n"));
    }

    #[test]
    fn the_innermost_unclosed_collection_is_found_where_it_opens() {
        let u = unclosed_flow("a: 1\nb: &x [c, d\ne: f\n").unwrap();
        assert_eq!((u.line, u.column, u.open, u.close()), (2, 7, '[', ']'));
        assert_eq!(unclosed_flow("a: [b, c]\n"), None);
        assert_eq!(unclosed_flow("a: [\n  b,\n  \"c\" \"d\",\n]\n"), None);
    }
}
