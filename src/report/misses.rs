//! Cassette misses grouped by cause: a request change (the system prompt edited) misses
//! every case it touches with the same field diff; reports show that diff once, with the
//! cases and contenders it hit and one `evals record` hint per contender.

use std::collections::BTreeMap;

use super::format::contender_label;
use crate::error::Result;
use crate::results::{
    CaseErrorKind, CaseResult, CaseSource, CaseStatus, ContenderInfo, Reason, RunResult,
};

/// Whether an error's text is a cassette miss's, for the verdict reasons, which are text
/// (case errors carry their kind: [`crate::results::CaseError`]).
pub fn is_miss(error: &str) -> bool {
    CaseErrorKind::of_message(error) == CaseErrorKind::Miss
}

/// Whether a verdict reason is a miss's: a case errored with no recording (read back from
/// a snapshot, `label · case: errored: no recording ...`).
pub fn is_miss_reason(reason: &Reason) -> bool {
    match reason {
        Reason::CaseErrored {
            kind: Some(kind), ..
        } => *kind == CaseErrorKind::Miss,
        // A comparison of runs stored before kinds were: the miss's wording tells.
        Reason::CaseErrored { error, .. } => error.as_deref().is_some_and(is_miss),
        Reason::Recorded(text) => text
            .split_once(": errored: ")
            .is_some_and(|(_, e)| is_miss(e)),
        _ => false,
    }
}

/// One cause of misses: the normalised diff and every case it hit.
#[derive(Debug, Clone, PartialEq)]
pub struct MissGroup {
    /// What changed, as the first case it hit shows it: the miss's first line without its
    /// cassette path, then its field diff (the per-case hint left out).
    pub diff: String,
    /// `(contender label, dataset, case)`, in run order.
    pub cases: Vec<(String, String, String)>,
    /// The contenders it hit, in run order, each once.
    pub contenders: Vec<ContenderInfo>,
}

impl MissGroup {
    /// `evals record -m local/m1 -t 0.1`: one per contender.
    pub fn hints(&self) -> Vec<String> {
        self.contenders.iter().map(record_hint).collect()
    }
}

fn record_hint(c: &ContenderInfo) -> String {
    let mut s = format!("evals record -m {}", c.id);
    if let Some(e) = &c.effort {
        s.push_str(&format!(" -e {e}"));
    }
    if let Some(t) = &c.temperature {
        s.push_str(&format!(" -t {t}"));
    }
    s
}

/// A miss's text with what differs from case to case taken out: the cassette path of the
/// first line and the hint naming the case.
pub fn normalise(error: &str) -> String {
    let mut lines: Vec<&str> = error.trim_end().lines().collect();
    if lines
        .last()
        .is_some_and(|l| l.starts_with("run `evals record"))
    {
        lines.pop();
    }
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        if i == 0 {
            // `no recording matches this request (PATH)` and `...; nearest recording: PATH`.
            let head = match line.find(" (") {
                Some(k) => {
                    let rest = &line[k + 2..];
                    match rest.find(')') {
                        Some(j) => format!("{}{}", &line[..k], &rest[j + 1..]),
                        None => line[..k].to_string(),
                    }
                }
                None => line.to_string(),
            };
            let head = match head.find("; nearest recording: ") {
                Some(k) => format!("{}; nearest recording under other settings", &head[..k]),
                None => head,
            };
            out.push_str(&head);
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// What a normalised miss changed, with what is the case's own taken out: a changed line
/// (`-old`, `+new`) or value (`a → b`) becomes the edit between them, the text they share
/// at the start and the end left out; context lines go. So the user template gaining a
/// `Question: ` prefix is one cause, whatever each case's input.
pub fn cause(normalised: &str) -> String {
    let lines: Vec<&str> = normalised.lines().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let t = line.trim_start();
        let indent = &line[..line.len() - t.len()];
        let next = lines.get(i + 1).map(|l| l.trim_start());
        if let (Some(old), Some(new)) =
            (t.strip_prefix('-'), next.and_then(|n| n.strip_prefix('+')))
        {
            out.push_str(&format!("{indent}~{}\n", edit(old, new)));
            i += 2;
            continue;
        }
        if let Some((field, change)) = t.split_once(": ")
            && let Some((old, new)) = change.split_once(" → ")
        {
            out.push_str(&format!("{indent}{field}: ~{}\n", edit(old, new)));
        } else if !(t.starts_with(' ') || line.starts_with("     ")) {
            out.push_str(line);
            out.push('\n');
        }
        i += 1;
    }
    out
}

/// `old` → `new` as what was removed and added between their common start and end.
fn edit(old: &str, new: &str) -> String {
    let (a, b): (Vec<char>, Vec<char>) = (old.chars().collect(), new.chars().collect());
    let pre = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suf = a[pre..]
        .iter()
        .rev()
        .zip(b[pre..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let removed: String = a[pre..a.len() - suf].iter().collect();
    let added: String = b[pre..b.len() - suf].iter().collect();
    format!("[-{removed}][+{added}]")
}

/// The run's misses grouped by their normalised diff, the largest group first, its cases
/// read from `cases` one at a time (what is held is the misses).
pub fn groups(run: &RunResult, cases: CaseSource<'_>) -> Result<Vec<MissGroup>> {
    let mut grouping = Grouping::default();
    super::each_case(run, cases, |i, c| {
        grouping.add(&run.experiments[i], c);
        Ok(())
    })?;
    Ok(grouping.groups())
}

/// Misses grouped as the cases are read ([`groups`], for a reader that reads the cases for
/// more than their misses).
#[derive(Debug, Default)]
pub(crate) struct Grouping {
    by: BTreeMap<String, (usize, MissGroup)>,
}

impl Grouping {
    /// Case `c` of experiment `e`, grouped when it missed its cassette.
    pub(crate) fn add(&mut self, e: &crate::results::ExperimentResult, c: &CaseResult) {
        let Some(err) = c
            .error
            .as_ref()
            .filter(|e| e.kind == CaseErrorKind::Miss)
            .map(|e| e.message.as_str())
        else {
            return;
        };
        let shown = normalise(err);
        let order = self.by.len() + 1;
        let entry = self.by.entry(cause(&shown)).or_insert_with(|| {
            (
                order,
                MissGroup {
                    diff: shown,
                    cases: vec![],
                    contenders: vec![],
                },
            )
        });
        entry.1.cases.push((
            contender_label(&e.contender),
            e.dataset.clone(),
            c.case.clone(),
        ));
        if !entry.1.contenders.contains(&e.contender) {
            entry.1.contenders.push(e.contender.clone());
        }
    }

    /// The groups, the largest first.
    pub(crate) fn groups(self) -> Vec<MissGroup> {
        let mut v: Vec<(usize, MissGroup)> = self.by.into_values().collect();
        v.sort_by_key(|(o, g)| (std::cmp::Reverse(g.cases.len()), *o));
        v.into_iter().map(|(_, g)| g).collect()
    }
}

/// Whether a comparison's case is a miss (reported in its group, not row by row).
pub fn delta_is_miss(d: &crate::results::CaseDelta) -> bool {
    // A comparison from before kinds were written has the message alone.
    let kind = d
        .error_kind
        .or_else(|| d.error.as_deref().map(CaseErrorKind::of_message));
    d.status == CaseStatus::Errored && kind == Some(CaseErrorKind::Miss)
}

/// `local/m1 (300 cases), local/m2 (300 cases)`: who a group hit.
pub fn who(g: &MissGroup) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for (label, _, _) in &g.cases {
        match counts.iter_mut().find(|(l, _)| l == label) {
            Some((_, n)) => *n += 1,
            None => counts.push((label.clone(), 1)),
        }
    }
    counts
        .iter()
        .map(|(l, n)| format!("{l} ({})", crate::text::plural(*n, "case", "cases")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The cases of a group, `dataset/case` once each whatever the contender, the first
/// `max` and a count of the rest.
pub fn case_list(g: &MissGroup, max: usize) -> String {
    let mut seen: Vec<String> = Vec::new();
    for (_, d, c) in &g.cases {
        let k = format!("{d}/{c}");
        if !seen.contains(&k) {
            seen.push(k);
        }
    }
    let mut s = seen
        .iter()
        .take(max)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if seen.len() > max {
        s.push_str(&format!(" and {} more", seen.len() - max));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::CaseError;
    use crate::results::testing::{case, run};

    #[test]
    fn a_verdict_reason_is_a_miss_by_its_kind_and_by_its_wording_only_without_one() {
        let at = crate::results::CaseRef {
            contender: crate::results::testing::contender(),
            dataset: "d".into(),
            case: "a".into(),
            reply_error: None,
            said: None,
        };
        let errored = |error: &str, kind| Reason::CaseErrored {
            at: at.clone(),
            error: Some(error.into()),
            kind,
        };
        assert!(is_miss_reason(&errored(
            "worded otherwise",
            Some(CaseErrorKind::Miss)
        )));
        let wording = "no cassette for this case (a.json)";
        assert!(!is_miss_reason(&errored(
            wording,
            Some(CaseErrorKind::Transport)
        )));
        assert!(is_miss_reason(&errored(wording, None)));
    }

    #[test]
    fn misses_are_found_by_their_kind_not_their_wording() {
        let mut miss = case("a", None, None);
        miss.error = Some(CaseError::new(
            CaseErrorKind::Miss,
            "a miss worded some other way (a.json)",
        ));
        let mut worded_like_one = case("b", None, None);
        worded_like_one.error = Some(CaseError::new(
            CaseErrorKind::Transport,
            "no recording matches this request, said the proxy",
        ));
        let r = run(
            "r",
            "main",
            "2026-01-01T00:00:00Z",
            vec![miss, worded_like_one],
        );
        let g = groups(&r, CaseSource::Run(&r)).unwrap();
        assert_eq!(g.len(), 1);
        assert_eq!(
            g[0].cases,
            vec![("fake/echo [temp 0]".into(), "tax".into(), "a".into())]
        );
    }

    #[test]
    fn the_path_and_the_hint_are_not_part_of_the_cause() {
        let a = "no recording matches this request (cassettes/a.json)\n  messages[0].content: \"x\" → \"y\"\nrun `evals record -d d -c a -m m` to record it";
        let b = "no recording matches this request (cassettes/b.json)\n  messages[0].content: \"x\" → \"y\"\nrun `evals record -d d -c b -m m` to record it";
        assert_eq!(normalise(a), normalise(b));
        assert_eq!(
            normalise(a),
            "no recording matches this request\n  messages[0].content: \"x\" → \"y\"\n"
        );
        let c = "no recording matches this request (c.json)\n  messages[1].content:\n    -Case c.\n    +Question: Case c.\nrun `evals record -c c` to record it";
        let d = "no recording matches this request (d.json)\n  messages[1].content:\n    -Case d, longer.\n    +Question: Case d, longer.\n     context\nrun `evals record -c d` to record it";
        assert_eq!(cause(&normalise(c)), cause(&normalise(d)));
        assert_ne!(normalise(c), normalise(d));
        assert!(is_miss_reason(&Reason::Recorded(format!(
            "m · d · a: errored: {a}"
        ))));
    }
}
