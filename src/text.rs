//! Wording shared by messages and reports.

/// `1 problem`, `2 problems`: the count with the word that agrees with it.
pub(crate) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `s` as one word a POSIX shell reads back as `s`: as it is when it holds only characters
/// no shell treats specially, else single-quoted (`'a b'`, `'it'\''s'`). For the commands
/// a message tells the user to run.
pub(crate) fn shell_word(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+=:@%,".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}
