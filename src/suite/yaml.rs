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

/// Words YAML reads as booleans when they are not quoted (YAML 1.1: the Norway problem).
const BOOLEAN_WORDS: &[(&str, bool)] = &[
    ("yes", true),
    ("y", true),
    ("on", true),
    ("true", true),
    ("no", false),
    ("n", false),
    ("off", false),
    ("false", false),
];

/// Keys whose value is meant to be a boolean: a `yes` there is no mistake.
const BOOLEAN_KEYS: &[&str] = &["nullable", "json", "autosave"];

/// "invalid type: boolean" where text was expected: the unquoted `yes`/`no`/`on`/`off`/`y`/`n`
/// in the section starting at `line` (an enum value, a list item, a field name), said as
/// `LINE:COL: ... quote it: values: ["yes", "no"]`. serde-saphyr places the error at the
/// section, not at the word, so the word is looked for below it.
pub(crate) fn yaml11_boolean(text: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let first = line.checked_sub(1)?;
    let base = indent(lines.get(first)?);
    for (i, l) in lines.iter().enumerate().skip(first) {
        if i > first
            && !l.trim().is_empty()
            && !l.trim_start().starts_with('#')
            && indent(l) <= base
        {
            break;
        }
        if let Some(m) = boolean_on_line(&lines, i) {
            return Some(m);
        }
    }
    None
}

/// How many spaces a line starts with (YAML indents with spaces only).
pub(super) fn indent(l: &str) -> usize {
    l.len() - l.trim_start_matches(' ').len()
}

/// The first unquoted boolean word on line `i` that stands where text is expected.
fn boolean_on_line(lines: &[&str], i: usize) -> Option<String> {
    let l = lines[i];
    let bytes: Vec<char> = l.chars().collect();
    // Keys of the flow collections open at this point of the line, and the last `key:`.
    let mut stack: Vec<(char, String)> = Vec::new();
    let mut pending: Option<String> = None;
    let mut j = 0;
    while j < bytes.len() {
        let c = bytes[j];
        match c {
            '#' if j == 0 || bytes[j - 1].is_whitespace() => break,
            '"' | '\'' => {
                j += 1;
                while j < bytes.len() && bytes[j] != c {
                    j += 1;
                }
            }
            '[' | '{' => stack.push((c, pending.take().unwrap_or_default())),
            ']' | '}' => {
                stack.pop();
            }
            ',' => pending = None,
            c if c.is_alphanumeric() || c == '_' => {
                let start = j;
                while j + 1 < bytes.len() && !" \t[]{},:#".contains(bytes[j + 1]) {
                    j += 1;
                }
                let word: String = bytes[start..=j].iter().collect();
                let after = bytes[j + 1..].iter().find(|c| **c != ' ' && **c != '\t');
                let is_key = after == Some(&':');
                if let Some((_, b)) = BOOLEAN_WORDS
                    .iter()
                    .find(|(w, _)| w.eq_ignore_ascii_case(&word))
                {
                    let owner = if is_key {
                        None
                    } else {
                        pending
                            .clone()
                            .or_else(|| stack.last().map(|(_, k)| k.clone()))
                    };
                    if !owner.as_deref().is_some_and(|o| BOOLEAN_KEYS.contains(&o)) {
                        return Some(describe(
                            lines, i, start, &word, *b, is_key, &stack, pending,
                        ));
                    }
                }
                if is_key {
                    pending = Some(word);
                }
            }
            _ => {}
        }
        j += 1;
    }
    None
}

/// `LINE:COL: '<word>' in <path> is read by YAML as ...: quote it: <the fixed text>`.
#[expect(
    clippy::too_many_arguments,
    reason = "one message from the scan's state"
)]
fn describe(
    lines: &[&str],
    i: usize,
    col: usize,
    word: &str,
    value: bool,
    is_key: bool,
    stack: &[(char, String)],
    pending: Option<String>,
) -> String {
    let l = lines[i];
    // The keys above this line, outermost first.
    let mut path: Vec<String> = Vec::new();
    let mut ind = indent(l);
    let item = l.trim_start().starts_with("- ");
    for above in lines[..i].iter().rev() {
        let t = above.trim_start();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let ai = indent(above);
        let bare_key = t.trim_end().ends_with(':');
        if ai < ind || (item && ai == ind && bare_key && path.is_empty()) {
            if let Some((k, _)) = t.trim_start_matches("- ").split_once(':') {
                path.push(k.trim().to_string());
            }
            ind = ai;
            if ai == 0 {
                break;
            }
        }
    }
    path.reverse();
    let line_key = l
        .trim_start()
        .trim_start_matches("- ")
        .split_once(':')
        .map(|(k, _)| k.trim().to_string())
        .filter(|k| !k.is_empty() && k != word && !k.contains(['{', '[', ' ']));
    if let Some(k) = line_key.filter(|k| stack.first().is_none_or(|(_, s)| s != k)) {
        path.push(k);
    }
    path.extend(
        stack
            .iter()
            .map(|(_, k)| k.clone())
            .filter(|k| !k.is_empty()),
    );
    if let Some(p) = pending.filter(|_| !is_key) {
        path.push(p);
    }
    path.dedup();
    let at = format!("{}:{}", i + 1, col + 1);
    let quoted = |s: &str| {
        let mut out = String::new();
        let mut word = String::new();
        let flush = |word: &mut String, out: &mut String| {
            if BOOLEAN_WORDS
                .iter()
                .any(|(w, _)| w.eq_ignore_ascii_case(word))
            {
                out.push_str(&format!("\"{word}\""));
            } else {
                out.push_str(word);
            }
            word.clear();
        };
        for c in s.chars() {
            if " \t[]{},:".contains(c) {
                flush(&mut word, &mut out);
                out.push(c);
            } else {
                word.push(c);
            }
        }
        flush(&mut word, &mut out);
        out
    };
    let where_ = if path.is_empty() {
        String::new()
    } else {
        format!(" in {}", path.join("."))
    };
    let content = l.trim();
    let content = match content.find(" #") {
        Some(k) => content[..k].trim_end(),
        None => content,
    };
    // The fix as written on this line: a flow list `values: [yes, no]` whole, else the line.
    let fix = match (content.find('['), content.rfind(']')) {
        (Some(a), Some(b)) if !is_key && a < b => {
            let key_start = content[..a]
                .trim_end()
                .trim_end_matches(':')
                .rfind([' ', '{', ','])
                .map_or(0, |k| k + 1);
            quoted(&content[key_start..=b])
        }
        _ => quoted(content),
    };
    if is_key {
        format!(
            "{at}: the field name '{word}'{where_} is read by YAML as the boolean {value}, not as text: quote it: {fix}"
        )
    } else {
        format!(
            "{at}: '{word}'{where_} is read by YAML as the boolean {value}, not as text: quote it: {fix}"
        )
    }
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
