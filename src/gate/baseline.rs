//! Resolving `--baseline`: a JSON snapshot file, a run in the history (its number, `3` or
//! `#3`, its id, or a unique prefix of its id), or else a branch.
//!
//! A branch means the latest completed run of the same suite on that branch that started
//! no later than this run, this run excluded. If that run has another suite fingerprint
//! the scorer, schema, thresholds or version changed and the comparison would mislead, so
//! it is refused with the reason; so is a branch with no run at all, except for `check` on
//! that very branch ([`resolve_or_first`]): the first run there is the first baseline.
//!
//! A branch whose runs are all dated after this one and after this machine's clock (a
//! clock that was, or is, wrong) has runs: they are never taken as a baseline (one never
//! comes from the future) and never taken as absent either. The check is refused (exit 2,
//! or warned about with `--missing-baseline pass`) saying how many there are and how far
//! ahead, and on that branch itself this run is not its first baseline. (Runs dated after
//! an old run but not after the clock are just later history: a stored run judged again,
//! in `evals report` or the dashboard, is still its branch's first if it was.)

use std::path::{Path, PathBuf};

use super::{BaselineError, LaterRuns};
use crate::error::Result;
use crate::history::RunStore;
use crate::results::{BaselineInfo, CaseLog, RunResult, RunStatus, Selection};

/// A baseline run as the gate reads it: the run without its cases, which are in the case
/// log beside it ([`RunStore::get_logged`]), and how `--baseline` named it.
#[derive(Debug)]
pub struct Loaded {
    /// The run, its experiments' `cases` empty (and its planned cases' keys left out).
    pub run: RunResult,
    /// Its cases.
    pub cases: CaseLog,
    /// Which run it is and how it was named.
    pub info: BaselineInfo,
}

/// What a check compares with.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Baseline {
    /// The latest earlier completed, compatible run of this branch (a name that is a unique
    /// prefix of a run id in the history is read as that run, as `--baseline` does).
    Branch(String),
    /// A run of the history: its number (`3`, `#3`), its id, or a unique prefix of its id.
    Run(String),
    /// A run's JSON snapshot (`evals export`, `check --json`).
    File(PathBuf),
}

impl Baseline {
    /// `--baseline`'s value as the command line reads it: a file when one is there or the
    /// name ends with `.json`, a run when it is a number or a run id, else a branch. A blank
    /// value is no baseline.
    pub fn parse(reference: &str) -> Option<Baseline> {
        let r = reference.trim();
        if r.is_empty() {
            return None;
        }
        if Path::new(reference).exists() || r.ends_with(".json") {
            return Some(Baseline::File(PathBuf::from(reference)));
        }
        Baseline::parse_in_history(r)
    }

    /// [`Baseline::parse`], never a file: a run or a branch of the history, whatever the
    /// value names on disk (`evals dashboard`'s `?baseline=`).
    pub fn parse_in_history(reference: &str) -> Option<Baseline> {
        let r = reference.trim();
        if r.is_empty() {
            None
        } else if uuid::Uuid::parse_str(r).is_ok() || is_run_number(r) {
            Some(Baseline::Run(r.to_string()))
        } else {
            Some(Baseline::Branch(r.to_string()))
        }
    }

    /// As the user named it: what messages and the comparison's `reference` say.
    pub fn reference(&self) -> String {
        match self {
            Baseline::Branch(r) | Baseline::Run(r) => r.clone(),
            Baseline::File(p) => p.display().to_string(),
        }
    }
}

impl std::fmt::Display for Baseline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reference())
    }
}

/// Finds the baseline `baseline` names for `run`, held whole (its cases in it; its
/// planned cases' keys left out). `history` is the store (if it opened).
pub fn resolve(
    baseline: &Baseline,
    run: &RunResult,
    history: Option<&dyn RunStore>,
    history_path: &Path,
) -> Result<(RunResult, BaselineInfo)> {
    let mut b = resolve_logged(baseline, run, history, history_path)?;
    b.cases.fill(&mut b.run)?;
    Ok((b.run, b.info))
}

/// [`resolve`], the baseline's cases left in its case log.
pub fn resolve_logged(
    baseline: &Baseline,
    run: &RunResult,
    history: Option<&dyn RunStore>,
    history_path: &Path,
) -> Result<Loaded> {
    match find(baseline, run, history, history_path, false)? {
        Found::Baseline(b) => Ok(*b),
        Found::First(_) => unreachable!("only check's own branch makes a first baseline"),
    }
}

/// What `check` compares with: a baseline, or none because this run is the first baseline.
#[derive(Debug)]
pub enum Found {
    Baseline(Box<Loaded>),
    /// `reference` is this run's own branch and holds no earlier compatible run: this run
    /// becomes the baseline. The note says so, and why.
    First(String),
}

/// Like [`resolve`], for `check`: when `reference` is the branch this run is on and that
/// branch has no earlier compatible run (the first check on `main`, or the first since the
/// suite fingerprint or the selection changed), there is nothing to fall from, so this run
/// is the first baseline rather than a missing one.
pub fn resolve_or_first(
    baseline: &Baseline,
    run: &RunResult,
    history: Option<&dyn RunStore>,
    history_path: &Path,
) -> Result<Found> {
    find(baseline, run, history, history_path, true)
}

/// [`resolve`], and with `first`, [`resolve_or_first`]: a file is read, a run (number, id,
/// unique id prefix) or a branch is looked up in the store, once.
fn find(
    baseline: &Baseline,
    run: &RunResult,
    history: Option<&dyn RunStore>,
    history_path: &Path,
    first: bool,
) -> Result<Found> {
    let reference = &baseline.reference();
    let reference = reference.as_str();
    let found = if let Baseline::File(path) = baseline {
        if !path.exists() {
            return Err(BaselineError::NoSuchFile {
                reference: reference.to_string(),
            }
            .into());
        }
        // A file named on the command line is read whole (it is capped, and refused when
        // it is a device or a pipe), then logged.
        let run = crate::results::snapshot::load(path)
            .map_err(|e| e.named_by_setting(crate::error::Setting::Baseline))?;
        crate::history::logged(&run)?
    } else if let Baseline::Run(_) = baseline {
        let h = store(history, history_path)?;
        let id = h.find(reference)?;
        id.map(|id| h.get_logged(&id))
            .transpose()?
            .flatten()
            .ok_or_else(|| BaselineError::NoSuchRun {
                reference: reference.to_string(),
                history: history_path.to_path_buf(),
            })?
    } else if let Some(id) = match history {
        // A unique prefix of a run id (even one equal to the branch name); anything else
        // is a branch.
        Some(h) => h.find(reference)?,
        None => None,
    } {
        let h = store(history, history_path)?;
        h.get_logged(&id)?.ok_or_else(|| BaselineError::Vanished {
            id: id.clone(),
            history: history_path.to_path_buf(),
            rerun: "run the command again",
        })?
    } else {
        let h = store(history, history_path)?;
        match latest_on_branch(reference, run, h, history_path)? {
            Ok(found) => found,
            // The first check on its own branch: no baseline yet, and none missing. (Runs
            // dated after this one are there: this is no first.)
            Err(miss)
                if first
                    && run.run.branch.as_deref() == Some(reference)
                    && !matches!(miss, Miss::Later { .. }) =>
            {
                let complete = run.run.status == RunStatus::Completed;
                return Ok(Found::First(miss.first_note(reference, complete)));
            }
            Err(miss) => return Err(miss.error(reference, run, history_path).into()),
        }
    };
    let (found, cases) = found;
    if !crate::fingerprint::same(&found.run.suite_fingerprint, &run.run.suite_fingerprint) {
        return Err(BaselineError::Fingerprint {
            id: found.run.id.clone(),
            reference: reference.to_string(),
            theirs: found.run.suite_fingerprint.clone(),
            ours: run.run.suite_fingerprint.clone(),
        }
        .into());
    }
    let info = BaselineInfo {
        id: found.run.id.clone(),
        branch: found.run.branch.clone(),
        commit: found.run.commit.clone(),
        started_at: found.run.started_at,
        reference: reference.to_string(),
    };
    Ok(Found::Baseline(Box::new(Loaded {
        run: found,
        cases,
        info,
    })))
}

/// Why a branch offered no baseline.
enum Miss {
    /// No completed run of the suite on it, before this one.
    NoRun,
    /// The newest run there has another suite fingerprint, and none matches.
    Fingerprint { newest: String, fingerprint: String },
    /// Runs there match the fingerprint but none selected what this run selects.
    Selection {
        newest: String,
        selection: Option<Selection>,
    },
    /// No run there started before this one, but `count` completed runs are dated after
    /// it and after this machine's clock, the newest `newest` (its start).
    Later { count: usize, newest: String },
}

impl Miss {
    /// The error `--baseline BRANCH` gives off that branch.
    fn error(self, reference: &str, run: &RunResult, history_path: &Path) -> BaselineError {
        let r = &run.run;
        match self {
            Miss::NoRun => BaselineError::NoRunOnBranch {
                suite: r.suite.clone(),
                branch: reference.to_string(),
                history: history_path.to_path_buf(),
            },
            Miss::Fingerprint {
                newest,
                fingerprint,
            } => BaselineError::BranchFingerprint {
                branch: reference.to_string(),
                newest,
                theirs: fingerprint,
                ours: r.suite_fingerprint.clone(),
            },
            Miss::Selection { newest, selection } => BaselineError::Selection {
                branch: reference.to_string(),
                newest,
                ours: describe_selection(run_selection(run)),
                theirs: describe_selection(selection.as_ref()),
            },
            Miss::Later { count, newest } => BaselineError::Later(Box::new(LaterRuns {
                suite: r.suite.clone(),
                branch: reference.to_string(),
                history: history_path.to_path_buf(),
                count,
                started: crate::results::time::text(&r.started_at),
                ahead: ahead_by(&crate::results::time::text(&r.started_at), &newest),
            })),
        }
    }

    /// The note of the first check on `reference` itself; a run that stopped early is no
    /// baseline (only completed runs are), so its note says the next complete one will be.
    fn first_note(&self, reference: &str, complete: bool) -> String {
        if !complete {
            return format!(
                "no earlier run of {reference}: this run stopped early, so it is no baseline; the next complete check on {reference} will be the first"
            );
        }
        match self {
            Miss::NoRun => {
                format!("no earlier run of {reference}: this run is the first baseline")
            }
            Miss::Fingerprint { .. } => format!(
                "no earlier run of {reference} has this suite fingerprint (the scorer, schema, thresholds or version changed): this run is the first baseline"
            ),
            Miss::Selection { .. } => format!(
                "no earlier run of {reference} selected what this run selects: this run is the first baseline for this selection"
            ),
            Miss::Later { .. } => unreachable!("runs dated later make no first baseline"),
        }
    }
}

fn run_selection(run: &RunResult) -> Option<&Selection> {
    run.run.settings.selection.as_ref()
}

/// The latest completed, compatible run of `run`'s suite on `branch` that started before it:
/// the same suite fingerprint, and the same selection of models, datasets, cases, tags and
/// settings (a narrowed `run -m x -c y` on main is no baseline for a full check).
fn latest_on_branch(
    branch: &str,
    run: &RunResult,
    h: &dyn RunStore,
    history_path: &Path,
) -> Result<std::result::Result<(RunResult, CaseLog), Miss>> {
    let r = &run.run;
    let runs = h.runs_on_branch(
        &r.suite,
        branch,
        &crate::results::time::text(&r.started_at),
        &r.id,
    )?;
    let Some(newest) = runs.first() else {
        return later_on_branch(branch, run, h);
    };
    let selection = run_selection(run);
    // The newest compatible run wins.
    let compatible = runs.iter().find(|b| {
        crate::fingerprint::same(&b.suite_fingerprint, &r.suite_fingerprint)
            && same_selection(b.selection.as_ref(), selection)
    });
    let Some(latest) = compatible else {
        if !crate::fingerprint::same(&newest.suite_fingerprint, &r.suite_fingerprint) {
            return Ok(Err(Miss::Fingerprint {
                newest: newest.id.clone(),
                fingerprint: newest.suite_fingerprint.clone(),
            }));
        }
        return Ok(Err(Miss::Selection {
            newest: newest.id.clone(),
            selection: newest.selection.clone(),
        }));
    };
    h.get_logged(&latest.id)?.map(Ok).ok_or_else(|| {
        BaselineError::Vanished {
            id: latest.id.clone(),
            history: history_path.to_path_buf(),
            rerun: "run `evals check` again",
        }
        .into()
    })
}

/// No run of `branch` started before `run`: whether completed runs are dated after it and
/// after this machine's clock ([`Miss::Later`], how many and the newest's start), else
/// [`Miss::NoRun`].
fn later_on_branch(
    branch: &str,
    run: &RunResult,
    h: &dyn RunStore,
) -> Result<std::result::Result<(RunResult, CaseLog), Miss>> {
    let r = &run.run;
    let now = chrono::Utc::now();
    let after_now = |t: &crate::results::Timestamp| *t > now;
    // Every completed run of the branch, newest first: none started before this one.
    let later: Vec<_> = h
        .runs_on_branch(&r.suite, branch, END_OF_TIME, &r.id)?
        .into_iter()
        .filter(|l| l.started_at >= r.started_at && after_now(&l.started_at))
        .collect();
    Ok(Err(match later.first() {
        Some(newest) => Miss::Later {
            count: later.len(),
            newest: crate::results::time::text(&newest.started_at),
        },
        None => Miss::NoRun,
    }))
}

/// A start time after every run's (RFC 3339 times compare as text).
const END_OF_TIME: &str = "9999-12-31T23:59:59Z";

/// How far `later` (RFC 3339) is after `start`, in words: `3 h 12 min`, `2 days 4 h`,
/// `40 s` (the two largest units); `a moment` when the times do not parse or are equal.
fn ahead_by(start: &str, later: &str) -> String {
    let parse = |t: &str| chrono::DateTime::parse_from_rfc3339(t).ok();
    let (Some(a), Some(b)) = (parse(start), parse(later)) else {
        return "a moment".into();
    };
    let secs = (b - a).num_seconds().max(0);
    let units = [(86_400, "day"), (3_600, "h"), (60, "min"), (1, "s")];
    let mut parts = Vec::new();
    let mut rest = secs;
    for (size, name) in units {
        let n = rest / size;
        rest %= size;
        if n > 0 || !parts.is_empty() {
            let word = match (name, n) {
                ("day", 1) => "day".to_string(),
                ("day", _) => "days".to_string(),
                (other, _) => other.to_string(),
            };
            parts.push(format!("{n} {word}"));
        }
        if parts.len() == 2 {
            break;
        }
    }
    // "1 h 0 min" reads as "1 h".
    if parts.len() == 2 && parts[1].starts_with("0 ") {
        parts.pop();
    }
    if parts.is_empty() {
        "a moment".into()
    } else {
        parts.join(" ")
    }
}

/// `3` or `#3`: a run's number in the history, never a branch.
fn is_run_number(reference: &str) -> bool {
    let digits = reference.strip_prefix('#').unwrap_or(reference);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

fn store<'a>(history: Option<&'a dyn RunStore>, path: &Path) -> Result<&'a dyn RunStore> {
    history.ok_or_else(|| {
        BaselineError::NoHistory {
            history: path.to_path_buf(),
        }
        .into()
    })
}

/// Whether two runs selected the same; a run that narrowed nothing (or was stored before
/// selections were recorded) selected everything.
fn same_selection(a: Option<&Selection>, b: Option<&Selection>) -> bool {
    let everything = |s: Option<&Selection>| s.is_none_or(Selection::is_everything);
    a == b || (everything(a) && everything(b))
}

/// `-m a,b -d x` style, or `everything`.
fn describe_selection(v: Option<&Selection>) -> String {
    let mut parts = Vec::new();
    if let Some(v) = v {
        for (list, flag) in [
            (&v.models, "-m"),
            (&v.datasets, "-d"),
            (&v.cases, "-c"),
            (&v.efforts, "-e"),
            (&v.temperatures, "-t"),
            (&v.tags, "--tag"),
        ] {
            if !list.is_empty() {
                parts.push(format!("{flag} {}", list.join(",")));
            }
        }
        if let Some(m) = v.max_tokens {
            parts.push(format!("--max-tokens {m}"));
        }
        if let Some(s) = &v.shard {
            parts.push(format!("--shard {}", s.label()));
        }
    }
    if parts.is_empty() {
        "everything".into()
    } else {
        parts.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(reference: &str) -> Baseline {
        Baseline::parse(reference).expect("a reference")
    }
    use crate::history::History;
    use crate::results::testing::{case, run};

    fn setup() -> (tempfile::TempDir, History, std::path::PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("h.sqlite3");
        let h = History::open(&path).expect("open");
        (dir, h, path)
    }

    #[test]
    fn a_run_that_narrowed_nothing_selected_everything() {
        let empty = Selection::default();
        assert!(same_selection(None, Some(&empty)));
        let narrowed = Selection {
            models: vec!["fake/echo".into()],
            ..Selection::default()
        };
        assert!(!same_selection(None, Some(&narrowed)));
        assert!(same_selection(Some(&narrowed), Some(&narrowed.clone())));
    }

    #[test]
    fn how_far_ahead_is_said_in_its_two_largest_units() {
        let at = |t: &str| format!("2026-01-01T{t}Z");
        let start = at("00:00:00");
        assert_eq!(ahead_by(&start, &at("03:12:30")), "3 h 12 min");
        assert_eq!(ahead_by(&start, &at("01:00:09")), "1 h");
        assert_eq!(ahead_by(&start, &at("00:00:40")), "40 s");
        assert_eq!(ahead_by(&start, "2026-01-03T04:00:00Z"), "2 days 4 h");
        assert_eq!(ahead_by(&start, "2026-01-02T00:00:00Z"), "1 day");
        assert_eq!(ahead_by(&start, &start), "a moment");
        assert_eq!(ahead_by("not a time", &start), "a moment");
    }

    #[test]
    fn runs_dated_after_this_one_are_said_never_absent_and_never_a_first_baseline() {
        let (_d, mut h, p) = setup();
        for id in ["0000-1", "0000-2"] {
            h.insert(&run(id, "main", "2999-01-05T03:00:00Z", vec![]))
                .expect("insert");
        }
        let on_main = run("me", "main", "2999-01-05T00:00:00Z", vec![]);
        let e = resolve_or_first(&named("main"), &on_main, Some(&h), &p).expect_err("refused");
        assert!(e.is_bad_input());
        assert!(
            e.to_string().contains(
                "started before this run (2999-01-05T00:00:00Z), but 2 completed runs there are dated after it and after this machine's clock, the newest by 3 h:"
            ),
            "{e}"
        );
        // A stored run judged again later: the runs after it are history, not the future,
        // and it was its branch's first.
        let (_d, mut h, p) = setup();
        let old = run("old", "main", "2026-01-01T00:00:00Z", vec![]);
        h.insert(&run("0000-0", "main", "2026-01-02T00:00:00Z", vec![]))
            .expect("insert");
        assert!(matches!(
            resolve_or_first(&named("main"), &old, Some(&h), &p),
            Ok(Found::First(_))
        ));
    }

    #[test]
    fn a_branch_resolves_to_its_latest_earlier_run() {
        let (_d, mut h, p) = setup();
        h.insert(&run(
            "0000-1",
            "main",
            "2026-01-01T00:00:00Z",
            vec![case("a", Some(1.0), Some(true))],
        ))
        .expect("insert");
        h.insert(&run("0000-3", "main", "2026-01-03T00:00:00Z", vec![]))
            .expect("insert");
        let me = run("me", "feature", "2026-01-02T00:00:00Z", vec![]);
        let (b, info) = resolve(&named("main"), &me, Some(&h), &p).expect("baseline");
        assert_eq!(b.run.id, "0000-1");
        assert_eq!(info.reference, "main");
    }

    #[test]
    fn a_fingerprint_mismatch_is_refused_with_the_reason() {
        let (_d, mut h, p) = setup();
        let mut old = run("old", "main", "2026-01-01T00:00:00Z", vec![]);
        old.run.suite_fingerprint = "aaaaaaaaaaaaaaaa".into();
        h.insert(&old).expect("insert");
        let me = run("me", "feature", "2026-01-02T00:00:00Z", vec![]);
        let e = resolve(&named("main"), &me, Some(&h), &p).expect_err("refused");
        assert!(e.is_bad_input());
        let msg = e.message(crate::error::Audience::CommandLine);
        assert!(
            msg.starts_with(
                "baseline run old on main has suite fingerprint aaaaaaaaaaaa, this run has suite-fp"
            ),
            "{msg}"
        );
        assert!(
            msg.ends_with("re-run on main, or pass --missing-baseline pass"),
            "{msg}"
        );
    }

    #[test]
    fn a_baseline_stored_with_the_old_cut_suite_fingerprint_is_still_this_suites() {
        let (_d, mut h, p) = setup();
        let full = crate::fingerprint::of_json(&serde_json::json!({"scorers": []}));
        let mut old = run("old", "main", "2026-01-01T00:00:00Z", vec![]);
        old.run.suite_fingerprint = full[..16].to_string();
        h.insert(&old).expect("insert");
        let mut me = run("me", "feature", "2026-01-02T00:00:00Z", vec![]);
        me.run.suite_fingerprint = full;
        let (b, _) = resolve(&named("main"), &me, Some(&h), &p).expect("the same suite");
        assert_eq!(b.run.id, "old");
    }

    #[test]
    fn no_run_on_the_branch_names_the_fix() {
        let (_d, h, p) = setup();
        let me = run("me", "feature", "2026-01-02T00:00:00Z", vec![]);
        let e = resolve(&named("main"), &me, Some(&h), &p).expect_err("none");
        assert!(e.is_bad_input());
        assert!(
            e.to_string()
                .contains("no completed run of suite tax-intake on branch main"),
            "{e}"
        );
    }

    #[test]
    fn a_run_id_and_a_file_resolve() {
        let (d, mut h, p) = setup();
        let id = uuid::Uuid::now_v7().to_string();
        h.insert(&run(&id, "main", "2026-01-01T00:00:00Z", vec![]))
            .expect("insert");
        let me = run("me", "feature", "2026-01-02T00:00:00Z", vec![]);
        assert_eq!(
            resolve(&named(&id), &me, Some(&h), &p)
                .expect("by id")
                .0
                .run
                .id,
            id
        );
        let file = d.path().join("base.json");
        let b = run("from-file", "main", "2026-01-01T00:00:00Z", vec![]);
        std::fs::write(&file, serde_json::to_string(&b).expect("json")).expect("write");
        let got = resolve(&named(&file.to_string_lossy()), &me, None, &p).expect("by file");
        assert_eq!(got.0, b);
        let missing = uuid::Uuid::now_v7().to_string();
        assert!(resolve(&named(&missing), &me, Some(&h), &p).is_err());
    }

    #[test]
    fn a_run_number_and_an_id_prefix_resolve_and_a_missing_number_is_no_branch() {
        let (_d, mut h, p) = setup();
        let id = uuid::Uuid::now_v7().to_string();
        h.insert(&run(&id, "main", "2026-01-01T00:00:00Z", vec![]))
            .expect("insert");
        let me = run("me", "feature", "2026-01-02T00:00:00Z", vec![]);
        for reference in ["1", "#1", &id[..20]] {
            let (b, info) = resolve(&named(reference), &me, Some(&h), &p).expect(reference);
            assert_eq!(b.run.id, id);
            assert_eq!(info.reference, reference);
        }
        let e = resolve(&named("7"), &me, Some(&h), &p).expect_err("no run 7");
        assert!(e.to_string().starts_with("no run 7 in "), "{e}");
    }

    #[test]
    fn the_first_check_on_its_own_branch_is_the_first_baseline_and_elsewhere_is_refused() {
        let (_d, h, p) = setup();
        let on_main = run("me", "main", "2026-01-02T00:00:00Z", vec![]);
        match resolve_or_first(&named("main"), &on_main, Some(&h), &p).expect("first") {
            Found::First(note) => assert_eq!(
                note,
                "no earlier run of main: this run is the first baseline"
            ),
            Found::Baseline(b) => panic!("a baseline: {}", b.run.run.id),
        }
        let on_feature = run("me", "feature", "2026-01-02T00:00:00Z", vec![]);
        let e = resolve_or_first(&named("main"), &on_feature, Some(&h), &p).expect_err("refused");
        assert!(e.is_bad_input());
        // Without a history to read, nothing is assumed.
        assert!(resolve_or_first(&named("main"), &on_main, None, &p).is_err());
    }
}
