//! Wording shared by messages and reports.

/// `1 problem`, `2 problems`: the count with the word that agrees with it.
pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
