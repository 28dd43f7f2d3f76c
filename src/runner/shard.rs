//! Sharding: one suite's selected cases cut into N disjoint slices that CI jobs run apart
//! (`evals check --shard K/N`), and the slices' runs put back into the one run the whole
//! suite would have made in one job (`evals merge`).
//!
//! The cut is stable: the same selection, recordings and N always give the same slices,
//! whichever job computes them, with no coordination between jobs. Cases are dealt longest
//! first (the recorded latency of their cassettes, summed over the contenders; ties by case
//! key) to the slice with the least time so far, so slices take similar time. The merge
//! recomputes every figure from the case results with the runner's own aggregation
//! (`results::aggregate`) and weighs the tables as the runner does, so the merged
//! run is the one-job run apart from its id, times and command line.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::path::Path;
use std::str::FromStr;

use crate::error::{Error, Result};
use crate::results::{RunResult, RunStatus, Shard};
use crate::suite::{Cases, Contender, Suite};

/// `--shard K/N` as given: slice K (from 1) of N. (`u32`s: it sits in the command line's
/// parsed flags, kept small.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardSpec {
    /// K, from 1.
    pub index: u32,
    /// N, at least 1.
    pub count: u32,
}

impl FromStr for ShardSpec {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<ShardSpec, String> {
        let bad = || {
            format!(
                "`{s}`: expected K/N, slice K of N with 1 <= K <= N (--shard 1/4 … --shard 4/4)"
            )
        };
        let (k, n) = s.trim().split_once('/').ok_or_else(bad)?;
        // Digits past a u32 are a number too: said as past the bound, not as garbage.
        let number = |t: &str| {
            let t = t.trim();
            match t.parse::<u32>() {
                Ok(n) => Ok(n),
                Err(_) if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) => Ok(u32::MAX),
                Err(_) => Err(bad()),
            }
        };
        let (index, count) = (number(k)?, number(n)?);
        let max = crate::suite::bounds::MAX_SHARDS;
        if count > max {
            return Err(format!(
                "`{s}`: at most {max} shards (the cut weighs every case against each): give a smaller N"
            ));
        }
        if count == 0 || index == 0 || index > count {
            return Err(bad());
        }
        Ok(ShardSpec { index, count })
    }
}

impl fmt::Display for ShardSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// The slice `spec` names of the selected `cases`, and the [`Shard`] record the run keeps
/// (its group, the selection's size, where each of its cases stands in it). Costs come
/// from the recordings in the suite's cassette folder ([`recorded_ms`]).
pub fn slice(
    suite: &Suite,
    contenders: &[Contender],
    cases: &Cases,
    spec: ShardSpec,
    group: &str,
) -> (Cases, Shard) {
    let dir = suite.cassette_dir();
    let keyed: Vec<(String, Option<u64>)> = cases
        .heads()
        .map(|h| {
            let ms = contenders.iter().fold(None, |sum: Option<u64>, c| {
                let key = super::execute::cassette_key_of(c, h.dataset, &h.id);
                match (sum, recorded_ms(&key.path_in(&dir))) {
                    (Some(a), Some(b)) => Some(a + b),
                    (a, b) => a.or(b),
                }
            });
            (h.key(), ms)
        })
        .collect();
    let (index, count) = (spec.index as usize, spec.count as usize);
    let owner = assign(&keyed, count);
    let positions: Vec<usize> = (0..owner.len())
        .filter(|&i| owner[i] == index - 1)
        .collect();
    let mut i = 0;
    let mine = cases.filter(|_| {
        let keep = owner[i] == index - 1;
        i += 1;
        keep
    });
    let shard = Shard {
        index,
        count,
        group: group.to_string(),
        selected: cases.len(),
        positions,
    };
    (mine, shard)
}

/// The recorded latency of one cassette file, in milliseconds: the sum over its exchanges.
/// `None` when there is no readable cassette (a fake or mock contender, a case not yet
/// recorded). Only the latencies are read.
pub fn recorded_ms(path: &Path) -> Option<u64> {
    #[derive(serde::Deserialize)]
    struct Timed {
        #[serde(default)]
        interactions: Vec<Exchange>,
    }
    #[derive(serde::Deserialize)]
    struct Exchange {
        #[serde(default)]
        latency_ms: u64,
    }
    let bytes = std::fs::read(path).ok()?;
    let t: Timed = serde_json::from_slice(&bytes).ok()?;
    Some(t.interactions.iter().map(|x| x.latency_ms).sum())
}

/// Which slice (from 0) each case goes to: longest first, ties by key, each to the slice
/// with the least time so far (ties to the lowest slice). A case with no recording counts
/// as the mean of those recorded (1 ms when none is), so unrecorded suites are dealt round
/// robin in key order. Integer milliseconds: the same on every machine.
pub fn assign(cases: &[(String, Option<u64>)], count: usize) -> Vec<usize> {
    let count = count.max(1);
    let known: Vec<u64> = cases.iter().filter_map(|(_, ms)| *ms).collect();
    let fallback = if known.is_empty() {
        1
    } else {
        (known.iter().sum::<u64>() / known.len() as u64).max(1)
    };
    let mut order: Vec<usize> = (0..cases.len()).collect();
    let cost = |i: usize| cases[i].1.unwrap_or(fallback);
    order.sort_by(|&a, &b| {
        cost(b)
            .cmp(&cost(a))
            .then_with(|| cases[a].0.cmp(&cases[b].0))
    });
    let mut load = vec![0u64; count];
    let mut owner = vec![0usize; cases.len()];
    for i in order {
        let (k, _) = load
            .iter()
            .enumerate()
            .min_by_key(|&(k, l)| (*l, k))
            .unwrap_or((0, &0));
        load[k] += cost(i);
        owner[i] = k;
    }
    owner
}

/// A shard's run and the name it is known by in messages (its file, or `run <id>`).
#[derive(Debug)]
pub struct ShardRun {
    /// `shard-1.json`, `run 0190…`.
    pub shown: String,
    /// The shard's run, its cases in its experiments.
    pub run: RunResult,
}

/// Puts the shards of one run group back into the run the whole selection would have made
/// in one job: the cases in suite order, every figure recomputed from them, the weighted
/// scores per dataset table, the plan's every case in its settings, the selection without
/// the shard. Its id is new, it started when the first shard did and finished when the
/// last did, and `argv` is the merge's command line. A shard missing, given twice, or of
/// another group, suite, selection or N is an error naming them (exit 2); so is a shard
/// that holds anything but its own slice, every case once per contender.
pub fn merge(shards: Vec<ShardRun>, argv: Vec<String>) -> Result<RunResult> {
    let Some(first) = shards.first() else {
        return Err(Error::Usage(
            "evals merge: no shard given; pass each shard's JSON (`evals check --shard K/N --json FILE`), or --group ID to read them from the history".into(),
        ));
    };
    let shard_of = |s: &ShardRun| -> Result<Shard> {
        s.run
            .run
            .settings
            .selection
            .as_ref()
            .and_then(|sel| sel.shard.clone())
            .ok_or_else(|| {
                Error::Usage(format!(
                    "{}: not a shard (a run made without --shard); `evals merge` takes the JSON each `evals check --shard K/N` wrote",
                    s.shown
                ))
            })
    };
    let head = shard_of(first)?;
    let unsharded = |r: &RunResult| {
        let mut sel = r.run.settings.selection.clone().unwrap_or_default();
        sel.shard = None;
        sel
    };
    let want_sel = unsharded(&first.run);
    let mut seen: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
    for s in &shards {
        let sh = shard_of(s)?;
        let (r, f) = (&s.run.run, &first.run.run);
        let differs = |what: &str, theirs: String, ours: String| {
            Error::Usage(format!(
                "{} is shard {} of {what} {theirs}, but {} is of {what} {ours}: merge the shards of one run (one group, one suite, one N)",
                s.shown,
                sh.label(),
                first.shown
            ))
        };
        if sh.group != head.group {
            return Err(differs("group", sh.group.clone(), head.group.clone()));
        }
        if sh.count != head.count {
            return Err(differs(
                "a run cut into",
                sh.count.to_string(),
                head.count.to_string(),
            ));
        }
        if r.suite != f.suite
            || !crate::fingerprint::same(&r.suite_fingerprint, &f.suite_fingerprint)
        {
            return Err(differs(
                "suite",
                format!("{} ({})", r.suite, short(&r.suite_fingerprint)),
                format!("{} ({})", f.suite, short(&f.suite_fingerprint)),
            ));
        }
        if unsharded(&s.run) != want_sel
            || r.settings.contenders != f.settings.contenders
            || r.settings.parallelism != f.settings.parallelism
            || r.settings.cassettes != f.settings.cassettes
            || sh.selected != head.selected
        {
            return Err(differs(
                "a run with another selection or settings (-m, -d, -c, --tag, -p, --cassettes); in group",
                sh.group.clone(),
                head.group.clone(),
            ));
        }
        if sh.positions.len() != r.settings.cases.len() {
            return Err(Error::Usage(format!(
                "{}: shard {} lists {} cases but places {}: not a file `evals check --shard` wrote",
                s.shown,
                sh.label(),
                r.settings.cases.len(),
                sh.positions.len()
            )));
        }
        seen.entry(sh.index).or_default().push(&s.shown);
    }
    let twice: Vec<String> = seen
        .iter()
        .filter(|(_, v)| v.len() > 1)
        .map(|(k, v)| format!("shard {k}/{} in {}", head.count, v.join(" and ")))
        .collect();
    let missing: Vec<String> = (1..=head.count)
        .filter(|k| !seen.contains_key(k))
        .map(|k| format!("{k}/{}", head.count))
        .collect();
    if !twice.is_empty() || !missing.is_empty() {
        let mut why = Vec::new();
        if !missing.is_empty() {
            why.push(format!(
                "missing shard{} {}",
                if missing.len() == 1 { "" } else { "s" },
                missing.join(", ")
            ));
        }
        if !twice.is_empty() {
            why.push(format!("given twice: {}", twice.join("; ")));
        }
        return Err(Error::Usage(format!(
            "evals merge: group {}: {}; pass each of the {} shards' JSON once",
            head.group,
            why.join("; "),
            head.count
        )));
    }

    // Every case of the selection, once, at its place.
    let mut keys: Vec<Option<String>> = vec![None; head.selected];
    let mut place: HashMap<String, usize> = HashMap::new();
    let mut whose: Vec<String> = vec![String::new(); head.selected];
    for s in &shards {
        let sh = shard_of(s)?;
        for (k, &p) in s.run.run.settings.cases.iter().zip(&sh.positions) {
            let slot = keys.get_mut(p).ok_or_else(|| {
                Error::Usage(format!(
                    "{}: case {k} is placed at {p}, past the selection's {} cases: not a file `evals check --shard` wrote",
                    s.shown, head.selected
                ))
            })?;
            if slot.is_some() {
                return Err(Error::Usage(format!(
                    "case {k} is in both {} and {}: the shards were cut differently (another selection or other recordings); run every shard from one commit",
                    whose[p], s.shown
                )));
            }
            *slot = Some(k.to_string());
            whose[p] = s.shown.clone();
            place.insert(k.into_owned(), p);
        }
    }
    let none = keys.iter().filter(|k| k.is_none()).count();
    if none > 0 {
        return Err(Error::Usage(format!(
            "evals merge: group {}: {none} of the selection's {} cases are in no shard; run every shard from one commit",
            head.group, head.selected
        )));
    }
    let keys: Vec<String> = keys.into_iter().flatten().collect();
    for s in &shards {
        holds_its_slice(s, &shard_of(s)?)?;
    }

    // The datasets in the order the one-job run has them: first appearance in the plan.
    let mut datasets: Vec<String> = Vec::new();
    let mut dataset_of: Vec<Option<&str>> = vec![None; head.selected];
    for s in &shards {
        for e in &s.run.experiments {
            for c in &e.cases {
                if let Some(&p) = place.get(&format!("{}/{}", e.dataset, c.case)) {
                    dataset_of[p] = Some(e.dataset.as_str());
                }
            }
        }
    }
    for (k, d) in keys.iter().zip(&dataset_of) {
        // A case that never ran (a stopped shard) is placed by its key's dataset.
        let d = d.or_else(|| k.split_once('/').map(|(d, _)| d)).unwrap_or(k);
        if !datasets.iter().any(|x| x == d) {
            datasets.push(d.to_string());
        }
    }
    drop(dataset_of);

    let info = first.run.run.clone();
    let f = &info;
    let (started_at, finished_at, status) =
        span(&shards.iter().map(|s| &s.run).collect::<Vec<_>>());
    let primary = first
        .run
        .primary_metric()
        .map(|m| m.name.clone())
        .unwrap_or_default();
    let mut pooled: HashMap<(String, String), Vec<(usize, crate::results::CaseResult)>> =
        HashMap::new();
    let mut contender_of: HashMap<String, crate::results::ContenderInfo> = HashMap::new();
    for s in shards {
        for e in s.run.experiments {
            let key = e.contender.key();
            contender_of
                .entry(key.clone())
                .or_insert(e.contender.clone());
            let slot = pooled.entry((key, e.dataset.clone())).or_default();
            for c in e.cases {
                let k = format!("{}/{}", e.dataset, c.case);
                let p = place.get(&k).copied().ok_or_else(|| {
                    Error::Usage(format!(
                        "{}: case {k} ran but is not in its settings' cases: not a file `evals check --shard` wrote",
                        s.shown
                    ))
                })?;
                slot.push((p, c));
            }
        }
    }
    let mut experiments = Vec::new();
    for info in &f.settings.contenders {
        for d in &datasets {
            let Some(mut cases) = pooled.remove(&(info.key(), d.clone())) else {
                continue;
            };
            cases.sort_by_key(|(p, _)| *p);
            let contender = contender_of
                .remove(&info.key())
                .unwrap_or_else(|| info.clone());
            contender_of.insert(info.key(), contender.clone());
            experiments.push(crate::results::aggregate::aggregate(
                contender,
                d.clone(),
                &primary,
                cases.into_iter().map(|(_, c)| c).collect(),
                f.settings.parallelism,
            ));
        }
    }
    let experiments = super::evaluate::weigh(experiments, &datasets, &f.weights);
    let mut run = info;
    run.id = uuid::Uuid::now_v7().to_string();
    run.argv = argv;
    run.started_at = started_at;
    run.finished_at = finished_at;
    run.status = status;
    run.settings.cases = keys.into();
    run.settings.selection = Some(want_sel);
    Ok(RunResult { run, experiments })
}

/// Checks that a shard's results are exactly its slice: every case result one of its own
/// cases (never one of another shard's, never one outside the selection), each once per
/// contender, and, when the shard completed, every case of its slice there for every
/// contender. A shard edited, cut short or mixed with another could otherwise add a case
/// twice to the merged run or lose one, and a lost case hides a regression (a removed
/// case is not gated). A stopped shard may hold fewer: the merged run is then stopped too.
fn holds_its_slice(s: &ShardRun, shard: &Shard) -> Result<()> {
    let own: HashSet<String> = s
        .run
        .run
        .settings
        .cases
        .iter()
        .map(|k| k.into_owned())
        .collect();
    let bad = |why: String| {
        Error::Usage(format!(
            "{}: shard {}: {why}; merge the JSON files `evals check --shard` wrote, as written",
            s.shown,
            shard.label()
        ))
    };
    let mut held: HashSet<(String, String)> = HashSet::new();
    for e in &s.run.experiments {
        for c in &e.cases {
            let k = format!("{}/{}", e.dataset, c.case);
            if !own.contains(&k) {
                return Err(bad(format!(
                    "case {k} ({}) is not one of this shard's cases",
                    e.contender.id
                )));
            }
            if !held.insert((e.contender.key(), k.clone())) {
                return Err(bad(format!(
                    "case {k} ({}) is held more than once",
                    e.contender.id
                )));
            }
        }
    }
    if s.run.run.status != RunStatus::Completed {
        return Ok(());
    }
    for c in &s.run.run.settings.contenders {
        let who = c.key();
        for k in s.run.run.settings.cases.iter() {
            if !held.contains(&(who.clone(), k.to_string())) {
                return Err(bad(format!(
                    "case {k} ({}) has no result, though the shard completed",
                    c.id
                )));
            }
        }
    }
    Ok(())
}

fn short(fingerprint: &str) -> &str {
    fingerprint.get(..12).unwrap_or(fingerprint)
}

/// The merged run's times and status, from every shard's: it started with the first and
/// finished with the last; it completed only if every shard did (else interrupted before
/// aborted).
fn span(
    runs: &[&RunResult],
) -> (
    crate::results::Timestamp,
    Option<crate::results::Timestamp>,
    RunStatus,
) {
    let started = runs
        .iter()
        .map(|r| r.run.started_at)
        .min()
        .unwrap_or_default();
    let finished = runs
        .iter()
        .map(|r| r.run.finished_at)
        .collect::<Option<Vec<_>>>()
        .and_then(|v| v.into_iter().max());
    let status = if runs.iter().any(|r| r.run.status == RunStatus::Interrupted) {
        RunStatus::Interrupted
    } else if runs.iter().any(|r| r.run.status == RunStatus::Aborted) {
        RunStatus::Aborted
    } else {
        RunStatus::Completed
    };
    (started, finished, status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keyed(costs: &[(&str, Option<u64>)]) -> Vec<(String, Option<u64>)> {
        costs.iter().map(|(k, c)| (k.to_string(), *c)).collect()
    }

    #[test]
    fn k_of_n_is_parsed_and_anything_else_is_refused() {
        assert_eq!(
            "2/4".parse::<ShardSpec>(),
            Ok(ShardSpec { index: 2, count: 4 })
        );
        assert_eq!("1/1".parse::<ShardSpec>().unwrap().to_string(), "1/1");
        for bad in ["0/4", "5/4", "1/0", "4", "a/b", "1/4/2", ""] {
            let e = bad.parse::<ShardSpec>().expect_err(bad);
            assert!(e.contains("expected K/N"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_longest_recorded_cases_are_dealt_first_to_the_least_loaded_slice() {
        // b 9 → 0; c 5, e 4 → 1 (9 each); a 3 (before d by key) → 0; d 3 → 1; f 2 → 0;
        // g 1 → 1: 14 s against 13 s.
        let cases = keyed(&[
            ("d/a", Some(3000)),
            ("d/b", Some(9000)),
            ("d/c", Some(5000)),
            ("d/d", Some(3000)),
            ("d/e", Some(4000)),
            ("d/f", Some(2000)),
            ("d/g", Some(1000)),
        ]);
        let owner = assign(&cases, 2);
        let load = |k: usize| -> u64 {
            (0..cases.len())
                .filter(|&i| owner[i] == k)
                .map(|i| cases[i].1.unwrap())
                .sum()
        };
        assert_eq!(owner[1], 0, "the longest case opens the first slice");
        assert_eq!((load(0), load(1)), (14000, 13000));
        // Every case in exactly one slice; the same input, the same cut.
        assert_eq!(owner.len(), cases.len());
        assert_eq!(assign(&cases, 2), owner);
    }

    #[test]
    fn unrecorded_cases_count_as_the_mean_and_a_suite_without_recordings_is_dealt_round_robin_by_key()
     {
        let cases = keyed(&[("d/c", None), ("d/a", None), ("d/d", None), ("d/b", None)]);
        // By key: a → 0, b → 1, c → 2, then d → 0.
        assert_eq!(assign(&cases, 3), vec![2, 0, 0, 1]);
        let mixed = keyed(&[("d/a", Some(100)), ("d/b", None), ("d/c", Some(300))]);
        // b counts as 200: c, b, a.
        assert_eq!(assign(&mixed, 3), vec![2, 1, 0]);
        // More slices than cases: the rest are empty, never an error.
        assert_eq!(assign(&keyed(&[("d/a", None)]), 4), vec![0]);
    }

    #[test]
    fn a_cassettes_recorded_latency_is_the_sum_of_its_exchanges() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.json");
        std::fs::write(
            &p,
            r#"{"format": 1, "case": "d/a", "interactions": [{"latency_ms": 120, "request": {"body": {"latency_ms": 9}}}, {"latency_ms": 30}]}"#,
        )
        .unwrap();
        assert_eq!(recorded_ms(&p), Some(150));
        assert_eq!(recorded_ms(&dir.path().join("none.json")), None);
        std::fs::write(&p, "not json").unwrap();
        assert_eq!(recorded_ms(&p), None);
    }
}
