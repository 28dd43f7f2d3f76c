//! Wording shared by messages and reports.

/// `1 problem`, `2 problems`: the count with the word that agrees with it.
pub(crate) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
