//! Wording shared by messages and reports, and the one escape of control characters every
//! text output goes through ([`visible`]).

use std::borrow::Cow;

/// `1 problem`, `2 problems`: the count with the word that agrees with it.
pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `text` broken at spaces into lines at most `width` terminal columns wide (color codes
/// count nothing), each line after the first starting with `indent`: so a line under a
/// table never wraps on a terminal of that width. A word wider than a line stays whole on
/// its own line; the newlines in `text` stay.
pub fn wrap(text: &str, width: usize, indent: &str) -> String {
    let indent_width = console::measure_text_width(indent);
    let mut out = String::with_capacity(text.len() + 8);
    for (n, line) in text.split('\n').enumerate() {
        if n > 0 {
            out.push('\n');
        }
        let mut used = 0;
        for (i, word) in line.split(' ').enumerate() {
            let w = console::measure_text_width(word);
            if i > 0 && used > indent_width && used + 1 + w > width {
                out.push('\n');
                out.push_str(indent);
                used = indent_width;
            } else if i > 0 {
                out.push(' ');
                used += 1;
            }
            out.push_str(word);
            used += w;
        }
    }
    out
}

/// `8.0 MiB`, `1.9 KiB`, `1000 bytes`: a size as a person reads it.
pub fn human_bytes(n: u64) -> String {
    const KIB: f64 = 1024.0;
    let f = n as f64;
    if f < KIB {
        format!("{n} bytes")
    } else if f < KIB * KIB {
        format!("{:.1} KiB", f / KIB)
    } else if f < KIB * KIB * KIB {
        format!("{:.1} MiB", f / (KIB * KIB))
    } else {
        format!("{:.1} GiB", f / (KIB * KIB * KIB))
    }
}

/// `s` as one word a POSIX shell reads back as `s`: as it is when it holds only characters
/// no shell treats specially, else single-quoted (`'a b'`, `'it'\''s'`). For the commands
/// a message tells the user to run.
pub fn shell_word(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+=:@%,".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// `text` on one line (runs of whitespace, newlines included, as one space) and at most
/// `max_chars` long, cut at a word with `…`: a provider's multi-line message stays in its
/// table cell, and a cut never leaves half a URL (a word holding `://` is dropped whole).
pub fn one_line_cut(text: &str, max_chars: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max_chars {
        return flat;
    }
    let mut out = String::new();
    for word in flat.split(' ') {
        let len = out.chars().count() + usize::from(!out.is_empty()) + word.chars().count();
        if len > max_chars {
            // A first word longer than the whole budget (and no URL) is cut inside.
            if out.is_empty() && !word.contains("://") {
                out = word.chars().take(max_chars).collect();
            }
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    format!("{}…", out.trim_end_matches([',', ';', ':']))
}

/// `text` with every control character shown instead of acted on: a case id's ESC, a
/// reply's BEL or CR, a scorer's NUL would otherwise drive the terminal (set its title,
/// move the cursor, overwrite a line) or hide in a report. Each becomes visible text, `\r`
/// for a carriage return and `\uXXXX` for the others (C0, DEL and C1), the way JSON writes
/// them, so a JSON text inside the output (the HTML report's case data) still reads back
/// the same. Newlines and tabs stay: every text format needs them. Borrowed when there is
/// nothing to escape, which one pass over the bytes says.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !has_control(text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        push_visible(&mut out, c);
    }
    Cow::Owned(out)
}

/// [`visible`] for text colored by us: the color sequences (SGR, `ESC [ … m`) stay, every
/// other control character is escaped. The data in such a text is escaped before it is
/// colored, so what is left of an ESC there is ours.
pub fn visible_keeping_color(text: &str) -> Cow<'_, str> {
    if !has_control(text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c == '\u{1b}'
            && let Some(len) = sgr_len(rest)
        {
            out.push_str(&rest[..len]);
            rest = &rest[len..];
            continue;
        }
        push_visible(&mut out, c);
        rest = &rest[c.len_utf8()..];
    }
    // An escape only lengthens: the same length is the same text (our colors alone).
    if out.len() == text.len() {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(out)
    }
}

/// The length of the color sequence `text` starts with (`ESC [`, digits and `;`, `m`).
fn sgr_len(text: &str) -> Option<usize> {
    let body = text.strip_prefix("\u{1b}[")?;
    let params = body
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b';' || *b == b':')
        .count();
    (body.as_bytes().get(params) == Some(&b'm')).then_some(2 + params + 1)
}

fn push_visible(out: &mut String, c: char) {
    match c {
        '\n' | '\t' => out.push(c),
        '\r' => out.push_str("\\r"),
        c if c.is_control() => {
            use std::fmt::Write as _;
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        }
        c => out.push(c),
    }
}

/// Whether `text` holds a control character other than a newline or a tab: a byte below
/// 0x20, DEL, or a C1 control (U+0080..U+009F, `C2 80`..`C2 9F` in UTF-8).
fn has_control(text: &str) -> bool {
    let b = text.as_bytes();
    b.iter().enumerate().any(|(i, &x)| {
        (x < 0x20 && x != b'\n' && x != b'\t')
            || x == 0x7f
            || (x == 0xc2 && b.get(i + 1).is_some_and(|n| (0x80..0xa0).contains(n)))
    })
}

/// `s` with its `%XX` sequences decoded (lossily, as UTF-8) and everything else as it is:
/// for finding a secret written percent-encoded (a URL's password, a key in a query).
pub(crate) fn percent_decoded(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (b[i], hex) {
            (b'%', Some(v)) => {
                out.push(v);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_agree_with_their_words() {
        assert_eq!(plural(1, "dataset", "datasets"), "1 dataset");
        assert_eq!(plural(0, "case", "cases"), "0 cases");
        assert_eq!(plural(2, "file holds", "files hold"), "2 files hold");
    }

    #[test]
    fn wrapped_lines_fit_the_width_and_carry_the_indent() {
        let text = "best value: deepseek/deepseek-v4.1-flash [effort high, temp 0.1, max 8192] — 100.0% at $0.0016";
        let w = wrap(text, 40, "  ");
        assert!(
            w.lines().all(|l| console::measure_text_width(l) <= 40),
            "{w}"
        );
        assert!(w.lines().skip(1).all(|l| l.starts_with("  ")), "{w}");
        assert_eq!(
            w.split_whitespace().collect::<Vec<_>>(),
            text.split_whitespace().collect::<Vec<_>>()
        );
        assert_eq!(wrap("short one", 40, "  "), "short one");
        // Color codes take no room.
        let colored = "\u{1b}[36mabc\u{1b}[0m def";
        assert_eq!(wrap(colored, 7, ""), colored);
    }

    #[test]
    fn a_long_message_is_cut_at_a_word_never_inside_a_url_and_kept_on_one_line() {
        let msg = "Invalid request:\n  see https://platform.openai.com/docs/guides/structured-outputs for the rules";
        assert_eq!(
            one_line_cut(msg, 200),
            "Invalid request: see https://platform.openai.com/docs/guides/structured-outputs for the rules"
        );
        assert_eq!(one_line_cut(msg, 40), "Invalid request: see…");
        assert_eq!(one_line_cut("abcdefghij", 4), "abcd…");
        assert_eq!(one_line_cut("short", 40), "short");
    }

    #[test]
    fn control_characters_are_shown_and_newlines_tabs_and_our_colors_stay() {
        assert!(matches!(visible("plain\ttext\nhé"), Cow::Borrowed(_)));
        assert_eq!(
            visible("a\u{1b}]0;t\u{7}b\rc\0d\u{7f}e\u{9b}f\ng\th"),
            "a\\u001b]0;t\\u0007b\\rc\\u0000d\\u007fe\\u009bf\ng\th"
        );
        // As JSON writes them: a JSON text escaped this way still parses to the same.
        let json = format!("\"{}\"", visible("x\u{7f}\u{85}y"));
        let back: String = serde_json::from_str(&json).expect("valid JSON");
        assert_eq!(back, "x\u{7f}\u{85}y");
        let ours = "\u{1b}[1m\u{1b}[38;5;6mcase\u{1b}[0m";
        assert!(matches!(visible_keeping_color(ours), Cow::Borrowed(_)));
        assert_eq!(
            visible_keeping_color("\u{1b}[1mid \u{1b}]0;x\u{7} \u{1b}[2J\u{1b}[0m"),
            "\u{1b}[1mid \\u001b]0;x\\u0007 \\u001b[2J\u{1b}[0m"
        );
    }
}
