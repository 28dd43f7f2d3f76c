//! "Did you mean" suggestions for misspelt names (assertion kinds, weights, config keys).
//!
//! A small optimal-string-alignment distance (Levenshtein plus adjacent transpositions, so
//! `contians` is one edit from `contains`) picks the closest candidate, and only when it is
//! close enough to be a plausible typo rather than a different word.

/// The candidate closest to `word`, if it is a plausible misspelling of it.
///
/// Comparison ignores ASCII case. A candidate qualifies when its distance is at most a third
/// of the word's length (at least 1); ties go to the earlier candidate.
pub fn did_you_mean<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let word_lower = word.to_ascii_lowercase();
    let limit = (word.chars().count() / 3).max(1);
    let mut best: Option<(usize, &'a str)> = None;
    for &candidate in candidates {
        let d = distance(&word_lower, &candidate.to_ascii_lowercase());
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, candidate));
        }
    }
    best.map(|(_, c)| c)
}

/// Optimal string alignment distance over chars.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows: two back (for transpositions), one back, current.
    let mut prev2: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur: Vec<usize> = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(prev2[j - 2] + 1);
            }
            cur[j] = d;
        }
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transposition_is_one_edit() {
        assert_eq!(distance("contians", "contains"), 1);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("kitten", "sitting"), 3);
    }

    #[test]
    fn suggests_the_closest_plausible_candidate() {
        let kinds = ["equals", "contains", "not_contains", "regex"];
        assert_eq!(did_you_mean("contians", &kinds), Some("contains"));
        assert_eq!(did_you_mean("Regx", &kinds), Some("regex"));
        assert_eq!(did_you_mean("not_contain", &kinds), Some("not_contains"));
        assert_eq!(did_you_mean("banana", &kinds), None);
    }

    #[test]
    fn short_words_need_a_close_match() {
        assert_eq!(did_you_mean("tme", &["time", "cost"]), Some("time"));
        assert_eq!(did_you_mean("xy", &["time", "cost"]), None);
    }
}
