//! `evals upgrade-config`: the agent-evals / old llm-evals lineup (top-level `vendors:` and
//! `direct:`) rewritten into today's provider sections, line by line so every comment stays.
//!
//! `vendors:` becomes `openrouter:` with a `vendors:` inside it; a vendor written as a list of
//! models (agent-evals) gets the `models:` key it now needs. Each `direct:` provider becomes
//! a top-level section of its own, its list under `models:`. Everything else is left as
//! written. serde would lose the comments, so this never goes through it.

use super::yaml::indent;

/// Top-level keys of the old layout.
pub const LEGACY_KEYS: &[&str] = &["vendors", "direct"];

/// The old layout's first top-level key (`vendors` or `direct`) and its 1-based line.
pub fn legacy_key(text: &str) -> Option<(usize, &'static str)> {
    text.lines().enumerate().find_map(|(i, l)| {
        let (key, _) = top_key(l)?;
        LEGACY_KEYS.iter().find(|k| **k == key).map(|k| (i + 1, *k))
    })
}

/// The message for a config in the old layout that failed to load.
pub fn legacy_message(path: &str, line: usize, key: &str) -> String {
    format!(
        "{path}:{line}:1: top-level '{key}:': this is the agent-evals/old llm-evals layout \
         (OpenRouter models now go under `openrouter: vendors:`, each `direct:` provider is a \
         section of its own): run `evals upgrade-config` (add -n to preview)"
    )
}

/// The upgraded text, or `None` when the text has no `vendors:`/`direct:` at the top.
/// An `Err` (`LINE:COL: message`) says what cannot be rewritten by rule, to be moved by hand.
pub fn upgrade(text: &str) -> Result<Option<String>, String> {
    let lines: Vec<&str> = text.lines().collect();
    let blocks = top_blocks(&lines);
    if !blocks.iter().any(|b| LEGACY_KEYS.contains(&b.key)) {
        return Ok(None);
    }
    let top: Vec<&str> = blocks.iter().map(|b| b.key).collect();
    let mut out: Vec<String> = lines[..blocks.first().map_or(lines.len(), |b| b.start)]
        .iter()
        .map(|l| l.to_string())
        .collect();
    for b in &blocks {
        let body = &lines[b.start + 1..b.end];
        match b.key {
            "vendors" => {
                if top.contains(&"openrouter") {
                    return Err(format!(
                        "{}:1: both `openrouter:` and a top-level `vendors:`: move the vendors under openrouter's `vendors:` by hand",
                        b.start + 1
                    ));
                }
                let (value, comment) = split_comment(b.rest);
                if !value.trim().is_empty() {
                    return Err(format!(
                        "{}:1: `vendors:` is written inline: write each vendor on a line of its own to upgrade it",
                        b.start + 1
                    ));
                }
                out.push(format!("openrouter:{}", shorten_pad(comment, 3)));
                out.push("  vendors:".to_string());
                out.extend(rewrite_children(body, 4, b.start)?);
            }
            "direct" => {
                let (value, comment) = split_comment(b.rest);
                if !value.trim().is_empty() {
                    return Err(format!(
                        "{}:1: `direct:` is written inline: write each provider on a line of its own to upgrade it",
                        b.start + 1
                    ));
                }
                if !comment.trim().is_empty() {
                    out.push(comment.trim().to_string());
                }
                for name in child_keys(body) {
                    if top.contains(&name) {
                        return Err(format!(
                            "{}:1: `direct: {name}:` and a top-level `{name}:` both exist: merge them by hand",
                            b.start + 1
                        ));
                    }
                }
                out.extend(rewrite_children(body, 0, b.start)?);
            }
            _ => out.extend(lines[b.start..b.end].iter().map(|l| l.to_string())),
        }
        out.extend(lines[b.end..b.tail].iter().map(|l| l.to_string()));
    }
    let mut s = out.join("\n");
    if text.ends_with('\n') {
        s.push('\n');
    }
    Ok(Some(s))
}

/// One top-level key and the lines it spans: `start` its own line, `end` past its body,
/// `tail` past the blank and unindented comment lines after it (they belong to no one).
struct Block<'a> {
    key: &'a str,
    rest: &'a str,
    start: usize,
    end: usize,
    tail: usize,
}

fn top_blocks<'a>(lines: &[&'a str]) -> Vec<Block<'a>> {
    let starts: Vec<(usize, &str, &str)> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| top_key(l).map(|(k, r)| (i, k, r)))
        .collect();
    starts
        .iter()
        .enumerate()
        .map(|(n, &(start, key, rest))| {
            let tail = starts.get(n + 1).map_or(lines.len(), |s| s.0);
            let mut end = tail;
            while end > start + 1 && {
                let l = lines[end - 1];
                l.trim().is_empty() || l.starts_with('#')
            } {
                end -= 1;
            }
            Block {
                key,
                rest,
                start,
                end,
                tail,
            }
        })
        .collect()
}

/// `key:` at column 0 (not a comment, a list item or a document marker): the key and the rest.
fn top_key(line: &str) -> Option<(&str, &str)> {
    if line.starts_with([' ', '\t', '#', '-', '}', ']']) || line.starts_with("...") {
        return None;
    }
    key_and_rest(line)
}

/// `name: rest` (the name unquoted, made of the characters a config key uses).
fn key_and_rest(s: &str) -> Option<(&str, &str)> {
    let (key, rest) = s.split_once(':')?;
    let ok = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    (ok && (rest.is_empty() || rest.starts_with([' ', '\t']))).then_some((key, rest))
}

fn is_content(l: &str) -> bool {
    let t = l.trim();
    !t.is_empty() && !t.starts_with('#')
}

/// The value and the `# comment` (with the spaces before it) of what follows a `key:`.
fn split_comment(rest: &str) -> (&str, &str) {
    let (mut single, mut double) = (false, false);
    let mut prev = ' ';
    for (i, c) in rest.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && prev.is_whitespace() => {
                let start = rest[..i].trim_end().len();
                return (&rest[..start], &rest[start..]);
            }
            _ => {}
        }
        prev = c;
    }
    (rest, "")
}

/// A comment's padding less `n` spaces, so `openrouter:` keeps `vendors:`' comment column.
fn shorten_pad(comment: &str, n: usize) -> String {
    let pad = comment.len() - comment.trim_start().len();
    if pad > n {
        comment[n..].to_string()
    } else {
        comment.to_string()
    }
}

/// The keys of the children of a block body (the lines at its shallowest content indent).
fn child_keys<'a>(body: &[&'a str]) -> Vec<&'a str> {
    let Some(ci) = body.iter().find(|l| is_content(l)).map(|l| indent(l)) else {
        return Vec::new();
    };
    body.iter()
        .filter(|l| is_content(l) && indent(l) == ci && !l.trim_start().starts_with('-'))
        .filter_map(|l| key_and_rest(l.trim_start()).map(|(k, _)| k))
        .collect()
}

/// Each child of `body` (`anthropic:` under `vendors:`, `typesafe:` under `direct:`) moved to
/// indent `at` as a section with `models:`: a child written as a list gets the key, one
/// written as a mapping (`models:`, `rate_limit:`) keeps its own. `first` is the line
/// (0-based) before `body`, for messages.
fn rewrite_children(body: &[&str], at: usize, first: usize) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let Some(ci) = body.iter().find(|l| is_content(l)).map(|l| indent(l)) else {
        return Ok(body.iter().map(|l| l.to_string()).collect());
    };
    // Comments keep the shift of the lines around them.
    let mut shift: isize = at as isize - ci as isize;
    let mut i = 0;
    while i < body.len() {
        let l = body[i];
        if !is_content(l) {
            out.push(reindent(l, shift));
            i += 1;
            continue;
        }
        let line_no = first + 2 + i;
        if indent(l) != ci || l.trim_start().starts_with('-') {
            return Err(format!(
                "{line_no}:1: expected a provider or vendor name here (like `anthropic:`); move this entry by hand"
            ));
        }
        let Some((name, rest)) = key_and_rest(l.trim_start()) else {
            return Err(format!(
                "{line_no}:1: expected `name:` here; move this entry by hand"
            ));
        };
        // The child's own lines: up to the next line at its indent that is not a list item.
        let mut j = i + 1;
        while j < body.len()
            && !(is_content(body[j])
                && indent(body[j]) <= ci
                && !(indent(body[j]) == ci && body[j].trim_start().starts_with('-')))
        {
            j += 1;
        }
        // Trailing comments before the next child belong to that child's place.
        let mut end = j;
        while end > i + 1 && !is_content(body[end - 1]) {
            end -= 1;
        }
        let (value, comment) = split_comment(rest);
        let value = value.trim();
        let pad = " ".repeat(at);
        let kids = &body[i + 1..end];
        let is_list = kids
            .iter()
            .find(|k| is_content(k))
            .is_some_and(|k| k.trim_start().starts_with('-'));
        if value.starts_with('[') {
            out.push(format!("{pad}{name}: {{ models: {value} }}{comment}"));
        } else if !value.is_empty() {
            out.push(format!("{pad}{name}: {value}{comment}"));
        } else {
            out.push(format!("{pad}{name}:{comment}"));
        }
        if let Some(k0) = kids.iter().find(|k| is_content(k)).map(|k| indent(k)) {
            let base = if is_list {
                out.push(format!("{pad}  models:"));
                at + 4
            } else {
                at + 2
            };
            shift = base as isize - k0 as isize;
            for k in kids {
                out.push(reindent(k, shift));
            }
        }
        shift = at as isize - ci as isize;
        for k in &body[end..j] {
            out.push(reindent(k, shift));
        }
        i = j;
    }
    Ok(out)
}

/// `l` moved right (or left, never past column 0) by `by` spaces; blank lines stay blank.
fn reindent(l: &str, by: isize) -> String {
    if l.trim().is_empty() {
        return String::new();
    }
    let now = indent(l) as isize;
    let to = (now + by).max(0) as usize;
    format!("{}{}", " ".repeat(to), &l[indent(l)..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn today_layout_is_left_alone() {
        assert_eq!(upgrade("fake:\n  models: [echo]\n"), Ok(None));
    }

    #[test]
    fn agent_evals_lists_get_models_and_direct_moves_to_the_top() {
        let old = "vendors:   # list\n  anthropic:\n    - model: a   # one\n      effort: [low, high]\n  # between\n  openai: [gpt-x]\ndirect:   # own API\n  typesafe:\n    - model: jev-latest\n";
        let new = upgrade(old).unwrap().unwrap();
        assert_eq!(
            new,
            "openrouter:   # list\n  vendors:\n    anthropic:\n      models:\n        - model: a   # one\n          effort: [low, high]\n    # between\n    openai: { models: [gpt-x] }\n# own API\ntypesafe:\n  models:\n    - model: jev-latest\n"
        );
    }

    #[test]
    fn old_llm_evals_vendor_mappings_keep_their_keys() {
        let old = "vendors:\n  anthropic:\n    rate_limit: { burst: 10, per_minute: 50 }\n    models:\n      - model: a\n";
        assert_eq!(
            upgrade(old).unwrap().unwrap(),
            "openrouter:\n  vendors:\n    anthropic:\n      rate_limit: { burst: 10, per_minute: 50 }\n      models:\n        - model: a\n"
        );
    }
}
