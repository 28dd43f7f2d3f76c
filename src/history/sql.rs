//! What every SQL store does the same way, written once: the run-reference rule (a number,
//! an id, a unique id prefix, an ambiguous prefix listed), the baseline candidates, the
//! readers' queries, and each row read into its type. A store says only how its dialect
//! spells each [`Query`] and how it runs one ([`Dialect`]); the rules live here.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::PathBuf;

use super::{
    BranchRun, CaseQuery, CaseRun, HistoryError, RunQuery, RunSummary, ScorePoint, SnapshotLimit,
};
use crate::error::{Error, Result};
use crate::results::{CaseLog, RunResult};

/// The queries every store answers, each with its parameters (`$1`, `$2`… in the order
/// given) and the columns it returns. A store's SQL for each is in its own file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Query {
    /// `$1` a run number → the run's id.
    IdOfNumber,
    /// `$1` an id → the same id, when a run has it.
    Id,
    /// `$1` a lowercase id prefix, `$2` its length in bytes → `id, number` of the first six
    /// runs whose id starts with it, by number (`>=` and a substring, never LIKE: `_` and
    /// `%` are no patterns, and case counts).
    Prefixed,
    /// `$1` a prefix, `$2` its length → how many runs' ids start with it.
    CountPrefixed,
    /// `$1` suite, `$2` branch, `$3` the run's start, `$4` the run's id → `id,
    /// suite_fingerprint, settings` (as text), `started_at` of the completed runs of the suite on the
    /// branch that started before `$3` (within its second, those whose time-ordered id is
    /// below `$4`), `$4` itself left out, newest first. Text compares byte-wise on every
    /// store.
    BaselineCandidates,
    /// `$1` suite, `$2` branch, `$3` status, `$4` since, `$5` before (each may be null: no
    /// filter), `$6` the limit → a [`RunSummary`]'s columns (`id, started_at, branch,
    /// commit, suite, command, mode, status, cases, score, errors, number`), newest first.
    Runs,
    /// `$1` case, `$2` dataset, `$3` suite, `$4` branch (null: any), `$5` the limit → a
    /// [`CaseRun`]'s columns in its fields' order, newest run first.
    CaseRuns,
    /// `$1` branch, `$2` suite (null: any), `$3` the limit → a [`ScorePoint`]'s columns in
    /// its fields' order, over the last `$3` completed runs on the branch, oldest first.
    Scores,
}

/// A value bound to a query's parameter.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Arg<'a> {
    /// Text, or null.
    Text(Option<&'a str>),
    /// An integer, or null.
    Int(Option<i64>),
    /// A `LIMIT`: `None` is none (each dialect spells "no limit" its own way).
    Limit(Option<usize>),
}

impl Arg<'_> {
    /// A limit as a number, `None` for none.
    pub(crate) fn limit(limit: Option<usize>) -> Option<i64> {
        limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX))
    }
}

/// A value read from a row, as the store's client gave it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cell {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

/// One row of a query's answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row(pub(crate) Vec<Cell>);

impl Row {
    fn cell(&self, i: usize) -> std::result::Result<&Cell, String> {
        self.0
            .get(i)
            .ok_or_else(|| format!("the answer has no column {}", i + 1))
    }

    fn opt_text(&self, i: usize) -> std::result::Result<Option<String>, String> {
        match self.cell(i)? {
            Cell::Null => Ok(None),
            Cell::Text(s) => Ok(Some(s.clone())),
            Cell::Int(n) => Ok(Some(n.to_string())),
            Cell::Real(x) => Err(format!("column {}: a number ({x}), not text", i + 1)),
        }
    }

    fn text(&self, i: usize) -> std::result::Result<String, String> {
        self.opt_text(i)?
            .ok_or_else(|| format!("column {}: null, not text", i + 1))
    }

    fn time(&self, i: usize) -> std::result::Result<crate::results::Timestamp, String> {
        let t = self.text(i)?;
        crate::results::time::parse(&t)
            .ok_or_else(|| format!("column {}: {t:?} is no RFC 3339 time", i + 1))
    }

    fn status(&self, i: usize) -> std::result::Result<crate::results::RunStatus, String> {
        let name = self.text(i)?;
        crate::results::RunStatus::parse(&name).ok_or_else(|| {
            format!(
                "column {}: {name:?} is no run status this version knows",
                i + 1
            )
        })
    }

    fn opt_int(&self, i: usize) -> std::result::Result<Option<i64>, String> {
        match self.cell(i)? {
            Cell::Null => Ok(None),
            Cell::Int(n) => Ok(Some(*n)),
            // A sum comes back as a decimal's text from MySQL.
            Cell::Text(s) => s
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| format!("column {}: {s:?}, not an integer", i + 1)),
            Cell::Real(x) if x.fract() == 0.0 && x.abs() < 9.0e15 => Ok(Some(*x as i64)),
            Cell::Real(x) => Err(format!("column {}: {x}, not an integer", i + 1)),
        }
    }

    fn int(&self, i: usize) -> std::result::Result<i64, String> {
        self.opt_int(i)?
            .ok_or_else(|| format!("column {}: null, not an integer", i + 1))
    }

    fn opt_real(&self, i: usize) -> std::result::Result<Option<f64>, String> {
        match self.cell(i)? {
            Cell::Null => Ok(None),
            Cell::Real(x) => Ok(Some(*x)),
            Cell::Int(n) => Ok(Some(*n as f64)),
            Cell::Text(s) => s
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| format!("column {}: {s:?}, not a number", i + 1)),
        }
    }

    fn opt_bool(&self, i: usize) -> std::result::Result<Option<bool>, String> {
        Ok(self.opt_int(i)?.map(|n| n != 0))
    }

    fn count(&self, i: usize) -> std::result::Result<usize, String> {
        Ok(usize::try_from(self.int(i)?).unwrap_or(0))
    }
}

/// A stored snapshot, as a store reads it under the snapshot limit.
pub(crate) enum Snapshot {
    /// Its bytes (the run's compact JSON).
    Bytes(Vec<u8>),
    /// Over the limit: its size, and nothing of it read.
    Over(u64),
}

/// How a SQL store runs the shared queries: the rest of each rule is here.
pub(crate) trait Dialect {
    /// Where the store is, as the errors name it (a path, the URL without its password).
    fn shown(&self) -> PathBuf;

    /// The rows of `query` with `args` bound to its parameters in order.
    fn rows(&self, query: Query, args: &[Arg<'_>]) -> Result<Vec<Row>>;

    /// The snapshot of run `id`, unless it is larger than `limit` bytes; `None` when no
    /// run has that id.
    fn snapshot(&self, id: &str, limit: Option<u64>) -> Result<Option<Snapshot>>;

    /// [`Dialect::snapshot`], handed to `read` as a stream rather than whole: `None` when
    /// no run has that id, `Some(Err(size))` when it is over `limit` (and nothing of it is
    /// read). By default its bytes are read whole first.
    fn read_snapshot(
        &self,
        id: &str,
        limit: Option<u64>,
        read: &mut dyn FnMut(&mut dyn std::io::Read) -> Result<()>,
    ) -> Result<Option<std::result::Result<(), u64>>> {
        Ok(match self.snapshot(id, limit)? {
            None => None,
            Some(Snapshot::Over(size)) => Some(Err(size)),
            Some(Snapshot::Bytes(bytes)) => {
                read(&mut &bytes[..])?;
                Some(Ok(()))
            }
        })
    }

    /// The cap on the snapshots read back, when one is set.
    fn snapshot_limit(&self) -> Option<SnapshotLimit>;

    /// The store's error for a row that is not what its query returns.
    fn unexpected(&self, query: Query, why: String) -> Error;
}

/// Each row of `query` read by `read`.
fn read<T>(
    d: &impl Dialect,
    query: Query,
    args: &[Arg<'_>],
    read: impl Fn(&Row) -> std::result::Result<T, String>,
) -> Result<Vec<T>> {
    d.rows(query, args)?
        .iter()
        .map(|r| read(r).map_err(|why| d.unexpected(query, why)))
        .collect()
}

/// The run with this id, rebuilt from its snapshot (refused over the snapshot limit, when
/// one is set, before the snapshot is read).
pub(crate) fn get(d: &impl Dialect, id: &str) -> Result<Option<RunResult>> {
    let limit = d.snapshot_limit();
    match d.snapshot(id, limit.map(|l| l.bytes))? {
        None => Ok(None),
        Some(Snapshot::Over(size)) => Err(super::too_large(d.shown(), id, size, limit)),
        Some(Snapshot::Bytes(bytes)) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            HistoryError::Unreadable {
                path: d.shown(),
                id: id.to_string(),
                why: e.to_string(),
            }
            .into()
        }),
    }
}

/// The run with this id as [`get`] reads it, streamed: its cases in a case log, not in
/// memory ([`crate::results::snapshot::read_logged`]).
pub(crate) fn get_logged(d: &impl Dialect, id: &str) -> Result<Option<(RunResult, CaseLog)>> {
    let limit = d.snapshot_limit();
    let shown = d.shown();
    let mut got = None;
    let read = d.read_snapshot(id, limit.map(|l| l.bytes), &mut |r| {
        let what = format!("{} (run {id})", shown.display());
        let run = crate::results::snapshot::read_logged(r, &what).map_err(|e| {
            HistoryError::Unreadable {
                path: shown.clone(),
                id: id.to_string(),
                why: e.to_string(),
            }
        })?;
        got = Some(run);
        Ok(())
    })?;
    match read {
        None => Ok(None),
        Some(Err(size)) => Err(super::too_large(d.shown(), id, size, limit)),
        Some(Ok(())) => Ok(got),
    }
}

/// The id of the run `reference` names: [`super::RunStore::find`]'s rule.
pub(crate) fn find(d: &impl Dialect, reference: &str) -> Result<Option<String>> {
    let r = reference.trim();
    let digits = r.strip_prefix('#').unwrap_or(r);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        let Ok(n) = digits.parse::<i64>() else {
            return Ok(None);
        };
        let ids = read(d, Query::IdOfNumber, &[Arg::Int(Some(n))], |r| r.text(0))?;
        return Ok(ids.into_iter().next());
    }
    let exact = read(d, Query::Id, &[Arg::Text(Some(r))], |r| r.text(0))?;
    if let Some(id) = exact.into_iter().next() {
        return Ok(Some(id));
    }
    let prefix_like = r.len() >= 4 && r.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
    if !prefix_like {
        return Ok(None);
    }
    // Ids are lowercase hex: a prefix matches whatever its case.
    let lower = r.to_ascii_lowercase();
    let len = Arg::Int(Some(lower.len() as i64));
    let args = [Arg::Text(Some(&lower)), len];
    let found = read(d, Query::Prefixed, &args, |r| {
        Ok((r.text(0)?, r.opt_int(1)?))
    })?;
    match found.as_slice() {
        [] => Ok(None),
        [(id, _)] => Ok(Some(id.clone())),
        many => {
            let count = read(d, Query::CountPrefixed, &args, |r| r.count(0))?
                .into_iter()
                .next()
                .unwrap_or(many.len());
            let listed: Vec<String> = many
                .iter()
                .take(5)
                .map(|(id, n)| match n {
                    Some(n) => format!("#{n} {id}"),
                    None => id.clone(),
                })
                .collect();
            let more = if count > 5 { ", ..." } else { "" };
            Err(HistoryError::Ambiguous {
                prefix: r.to_string(),
                path: d.shown(),
                count,
                listed: format!("{}{more}", listed.join(", ")),
            }
            .into())
        }
    }
}

/// The baseline candidates: [`super::RunStore::runs_on_branch`].
pub(crate) fn runs_on_branch(
    d: &impl Dialect,
    suite: &str,
    branch: &str,
    before: &str,
    exclude_id: &str,
) -> Result<Vec<BranchRun>> {
    let args = [suite, branch, before, exclude_id].map(|s| Arg::Text(Some(s)));
    read(d, Query::BaselineCandidates, &args, |r| {
        Ok(BranchRun {
            id: r.text(0)?,
            suite_fingerprint: r.text(1)?,
            selection: crate::results::Settings::selection_in(&r.text(2)?),
            started_at: r.time(3)?,
        })
    })
}

/// Runs matching `q`, newest first: [`super::HistoryReads::runs`].
pub(crate) fn runs<'a>(d: &impl Dialect, q: &'a RunQuery) -> Result<Vec<RunSummary>> {
    let text = |s: &'a Option<String>| Arg::Text(s.as_deref());
    let args = [
        text(&q.suite),
        text(&q.branch),
        Arg::Text(q.status.map(crate::results::RunStatus::as_str)),
        text(&q.since),
        text(&q.before),
        Arg::Limit(q.limit),
    ];
    read(d, Query::Runs, &args, |r| {
        Ok(RunSummary {
            id: r.text(0)?,
            started_at: r.time(1)?,
            branch: r.opt_text(2)?,
            commit: r.opt_text(3)?,
            suite: r.text(4)?,
            command: r.text(5)?,
            mode: r.text(6)?,
            status: r.status(7)?,
            cases: r.count(8)?,
            score: r.opt_real(9)?,
            errors: r.count(10)?,
            number: r.int(11)?,
        })
    })
}

/// One case's results across runs, oldest first: [`super::HistoryReads::case_runs`].
pub(crate) fn case_runs<'a>(d: &impl Dialect, q: &'a CaseQuery) -> Result<Vec<CaseRun>> {
    let text = |s: &'a Option<String>| Arg::Text(s.as_deref());
    let args = [
        Arg::Text(Some(&q.case)),
        text(&q.dataset),
        text(&q.suite),
        text(&q.branch),
        Arg::Limit(q.limit),
    ];
    let mut rows = read(d, Query::CaseRuns, &args, |r| {
        Ok(CaseRun {
            number: r.int(0)?,
            run_id: r.text(1)?,
            started_at: r.time(2)?,
            branch: r.opt_text(3)?,
            commit: r.opt_text(4)?,
            suite: r.text(5)?,
            status: r.status(6)?,
            contender: r.text(7)?,
            dataset: r.text(8)?,
            case: r.text(9)?,
            fingerprint: r.text(10)?,
            score: r.opt_real(11)?,
            passed: r.opt_bool(12)?,
            error: r.opt_text(13)?,
        })
    })?;
    // Read newest first (the limit keeps the newest), shown oldest first.
    rows.reverse();
    Ok(rows)
}

/// Each experiment's score in the last `last` completed runs on `branch`, oldest first:
/// [`super::HistoryReads::scores_on_branch`].
pub(crate) fn scores_on_branch(
    d: &impl Dialect,
    branch: &str,
    suite: Option<&str>,
    last: usize,
) -> Result<Vec<ScorePoint>> {
    let args = [
        Arg::Text(Some(branch)),
        Arg::Text(suite),
        Arg::Limit(Some(last)),
    ];
    read(d, Query::Scores, &args, |r| {
        Ok(ScorePoint {
            number: r.int(0)?,
            run_id: r.text(1)?,
            started_at: r.time(2)?,
            commit: r.opt_text(3)?,
            suite: r.text(4)?,
            contender: r.text(5)?,
            dataset: r.text(6)?,
            score: r.opt_real(7)?,
        })
    })
}

/// A run's own text for its row, as every store writes it: its argv and its settings
/// (without the planned cases' keys: they are in the snapshot; a row that does not grow
/// with the suite), each passed through the egress scrubber. Each case result was scrubbed
/// when it finished (`CaseResult::scrub_secrets`), so its columns are clean.
pub(crate) fn run_text(run: &RunResult) -> (String, String) {
    use crate::secrets::scrub;
    let argv = serde_json::to_string(&run.run.argv).unwrap_or_else(|_| "[]".into());
    let settings = run
        .run
        .settings
        .without_cases_json()
        .unwrap_or_else(|_| "{}".into());
    (scrub(&argv).into_owned(), scrub(&settings).into_owned())
}

/// What a case's rows hold, read from its logged line (a [`crate::results::CaseResult`]'s
/// JSON) without the rest of it (its output, diagnostics, usage): names borrowed from the
/// line where they hold no escape.
#[derive(serde::Deserialize)]
pub(crate) struct CaseRow<'a> {
    #[serde(borrow)]
    pub(crate) case: Cow<'a, str>,
    #[serde(borrow)]
    pub(crate) fingerprint: Cow<'a, str>,
    pub(crate) score: Option<f64>,
    pub(crate) passed: Option<bool>,
    /// The error's message.
    #[serde(borrow)]
    pub(crate) error: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(crate) metrics: BTreeMap<Cow<'a, str>, Option<f64>>,
}

/// The run's compact JSON (what a store keeps as its snapshot), scrubbed, in a temporary
/// file, with its length.
pub(crate) fn compact_snapshot(run: &RunResult, cases: &CaseLog) -> Result<(std::fs::File, u64)> {
    use std::io::Write;
    let failed = |err: std::io::Error| HistoryError::Unwritten {
        path: None,
        what: "serialize",
        id: run.run.id.clone(),
        why: err.to_string(),
    };
    let mut file = tempfile::tempfile().map_err(failed)?;
    let mut out = crate::secrets::ScrubWriter(std::io::BufWriter::new(&mut file));
    crate::results::write_json(run, cases, false, &mut out)?;
    out.flush().map_err(failed)?;
    drop(out);
    let len = std::io::Seek::stream_position(&mut file).map_err(failed)?;
    Ok((file, len))
}
