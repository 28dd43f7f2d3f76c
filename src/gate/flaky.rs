//! `evals flaky`: the cases whose verdict varied across the last runs of a branch, read
//! from the history, so a team can fix or quarantine them.
//!
//! A case's verdict in a run is `pass`, `fail` or `error` (and `flaky` when its own
//! `--repeat K` tries disagreed). Only runs where the case had the fingerprint it has in
//! the newest run count: a case whose input, expected or thresholds changed is expected to
//! change its verdict.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::error::Result;
use crate::history::{HistoryStore, RunFilter};
use crate::results::{CaseResult, ContenderInfo};

/// One case's verdict in one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum RunVerdict {
    /// Met its thresholds (on every try).
    Pass,
    /// Failed them (on most tries).
    Fail,
    /// Some of its tries passed and some failed.
    Flaky,
    /// Errored: no score.
    Error,
}

impl RunVerdict {
    /// The verdict of a case result.
    pub fn of(c: &CaseResult) -> RunVerdict {
        if c.error.is_some() {
            RunVerdict::Error
        } else if c.flaky() {
            RunVerdict::Flaky
        } else if c.passed == Some(false) {
            RunVerdict::Fail
        } else {
            RunVerdict::Pass
        }
    }

    /// One letter for the terminal's history column: `P`, `F`, `~`, `E`.
    pub fn letter(self) -> char {
        match self {
            RunVerdict::Pass => 'P',
            RunVerdict::Fail => 'F',
            RunVerdict::Flaky => '~',
            RunVerdict::Error => 'E',
        }
    }
}

/// A case whose verdict varied.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlakyCase {
    /// The contender that ran it.
    pub contender: ContenderInfo,
    /// Its dataset.
    pub dataset: String,
    /// Its id.
    pub case: String,
    /// Its verdict in each run it ran in, oldest first.
    pub verdicts: Vec<RunVerdict>,
    /// The runs those verdicts are from (ids), oldest first.
    pub runs: Vec<String>,
}

impl FlakyCase {
    /// How many of its runs it passed.
    pub fn passed(&self) -> usize {
        self.verdicts
            .iter()
            .filter(|v| **v == RunVerdict::Pass)
            .count()
    }
}

/// What [`flaky`] read and found.
#[derive(Debug, Clone, PartialEq)]
pub struct Flaky {
    /// How many runs it read (at most `last`; 0 when the branch has none).
    pub runs: usize,
    /// The cases whose verdict varied, most changeable first.
    pub cases: Vec<FlakyCase>,
}

/// The cases of `suite` (any suite: `None`) whose verdict varied over the last `last` runs
/// on `branch`, most changeable first (then by contender, dataset and case).
pub fn flaky(
    store: &dyn HistoryStore,
    suite: Option<&str>,
    branch: &str,
    last: usize,
) -> Result<Flaky> {
    let runs = store.list(&RunFilter {
        suite: suite.map(str::to_string),
        branch: Some(branch.to_string()),
        limit: Some(last),
    })?;
    // Keyed by (contender, dataset, case): the newest fingerprint, then each run's verdict
    // (newest first, as the runs come).
    type Key = (ContenderInfo, String, String);
    let mut seen: BTreeMap<Key, (String, Vec<(String, RunVerdict)>)> = BTreeMap::new();
    for summary in &runs {
        let Some(run) = store.get(&summary.id)? else {
            continue;
        };
        for e in &run.experiments {
            for c in &e.cases {
                let key = (e.contender.clone(), e.dataset.clone(), c.case.clone());
                let entry = seen
                    .entry(key)
                    .or_insert_with(|| (c.fingerprint.clone(), Vec::new()));
                if crate::fingerprint::same(&entry.0, &c.fingerprint) {
                    entry.1.push((run.run.id.clone(), RunVerdict::of(c)));
                }
            }
        }
    }
    let mut out: Vec<FlakyCase> = seen
        .into_iter()
        .filter_map(|((contender, dataset, case), (_, mut vs))| {
            vs.reverse();
            let varied = vs.iter().any(|(_, v)| *v != vs[0].1)
                || vs.iter().any(|(_, v)| *v == RunVerdict::Flaky);
            varied.then(|| FlakyCase {
                contender,
                dataset,
                case,
                runs: vs.iter().map(|(id, _)| id.clone()).collect(),
                verdicts: vs.into_iter().map(|(_, v)| v).collect(),
            })
        })
        .collect();
    let changes = |f: &FlakyCase| {
        f.verdicts.windows(2).filter(|w| w[0] != w[1]).count()
            + f.verdicts
                .iter()
                .filter(|v| **v == RunVerdict::Flaky)
                .count()
    };
    out.sort_by_key(|f| std::cmp::Reverse(changes(f)));
    Ok(Flaky {
        runs: runs.len(),
        cases: out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::testing::{case, run};

    #[test]
    fn a_case_whose_verdict_varied_on_main_is_listed_and_a_steady_or_changed_one_is_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut store = crate::history::SqliteStore::open(&dir.path().join("h.sqlite3")).unwrap();
        let verdicts = [(true, true), (false, true), (true, true)];
        for (i, (a, b)) in verdicts.iter().enumerate() {
            let mut changed = case("changed", Some(1.0), Some(i != 1));
            // Its expected answer changed in the last run: that run does not count.
            if i == 2 {
                changed.fingerprint = "fp-new".into();
            }
            let r = run(
                &format!("r{i}"),
                "main",
                &format!("2026-01-0{}T00:00:00Z", i + 1),
                vec![
                    case("a", Some(1.0), Some(*a)),
                    case("b", Some(1.0), Some(*b)),
                    changed,
                ],
            );
            store.insert(&r).unwrap();
        }
        // A run on another branch is not main's.
        let other = run(
            "o",
            "f",
            "2026-01-05T00:00:00Z",
            vec![case("b", None, None)],
        );
        store.insert(&other).unwrap();
        let got = flaky(&store, Some("tax-intake"), "main", 10).unwrap().cases;
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].case, "a");
        assert_eq!(
            got[0].verdicts,
            [RunVerdict::Pass, RunVerdict::Fail, RunVerdict::Pass]
        );
        assert_eq!(got[0].runs, ["r0", "r1", "r2"]);
        assert_eq!(got[0].passed(), 2);
        // Only the last two runs: a failed then passed.
        let got = flaky(&store, None, "main", 2).unwrap().cases;
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].verdicts, [RunVerdict::Fail, RunVerdict::Pass]);
        // The last run alone varies in nothing.
        assert!(flaky(&store, None, "main", 1).unwrap().cases.is_empty());
    }
}
