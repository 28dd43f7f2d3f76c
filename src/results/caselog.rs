//! A run's case results on disk, not in memory: each finished case appended to a temporary
//! file, read back in case order by whoever needs the cases (the JSON snapshot, the
//! history's case rows, a report that lists cases), one at a time.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::Mutex;

use super::{CaseResult, RunResult};
use crate::error::{Error, Result};
use crate::fs::span;

/// The case results of a run, on disk: each finished case appended as one line of JSON to
/// an anonymous temporary file (gone when the log is dropped), and where its line is
/// written to its slot in a second one: nothing a case is held in memory, so a run of
/// 100,000 cases needs no more than a run of 1,000. Read back in case order by
/// [`CaseLog::cases`].
pub struct CaseLog {
    file: Mutex<Spill>,
    /// Per experiment (in the run's experiment order), where its slots are and how many
    /// of its cases are logged.
    index: Mutex<Vec<Slots>>,
}

impl std::fmt::Debug for CaseLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaseLog").finish_non_exhaustive()
    }
}

/// An experiment's slots in the slot file: from slot `first`, one a planned case (by case
/// position), each where its line is ([`span::pack`]) as a little-endian `u64`, a line
/// past what packs in [`Spill::long`]. A slot never written reads 0 (the file is made its
/// full size, with holes): a case not logged.
#[derive(Debug, Clone, Default)]
struct Slots {
    first: u64,
    len: usize,
    logged: usize,
}

/// Slots read at once when reading back (8 KiB).
const CHUNK: usize = 1024;

struct Spill {
    out: BufWriter<File>,
    at: u64,
    /// The slot file: 8 bytes a planned case.
    slots: File,
    /// Offset and length of the lines too long, or too far into the file, to pack.
    long: Vec<(u64, u64)>,
    /// The first write error; the log is then unreadable and says so.
    failed: Option<String>,
}

fn temp() -> Result<File> {
    tempfile::tempfile().map_err(|e| {
        Error::Failed(format!(
            "cannot create a temporary file for the case results: {e}"
        ))
    })
}

impl CaseLog {
    /// An empty log for experiments of these sizes (cases planned in each).
    pub fn new(sizes: &[usize]) -> Result<CaseLog> {
        let (file, slots) = (temp()?, temp()?);
        let mut index = Vec::with_capacity(sizes.len());
        let mut first = 0u64;
        for &len in sizes {
            index.push(Slots {
                first,
                len,
                logged: 0,
            });
            first += len as u64;
        }
        slots.set_len(first * 8).map_err(|e| {
            Error::Failed(format!(
                "cannot create a temporary file for the case results: {e}"
            ))
        })?;
        Ok(CaseLog {
            file: Mutex::new(Spill {
                out: BufWriter::new(file),
                at: 0,
                slots,
                long: Vec::new(),
                failed: None,
            }),
            index: Mutex::new(index),
        })
    }

    /// Appends the case at `position` of experiment `experiment` (each position once; one
    /// past the experiment's planned cases is not kept).
    pub fn push(&self, experiment: usize, position: usize, case: &CaseResult) {
        match serde_json::to_vec(case) {
            Ok(line) => self.push_line(experiment, position, &line),
            Err(e) => {
                lock(&self.file).failed.get_or_insert(e.to_string());
            }
        }
    }

    /// Logs `line` (a case's compact JSON) at `position` of experiment `experiment`, counted.
    fn push_line(&self, experiment: usize, position: usize, line: &[u8]) {
        let first = match lock(&self.index).get_mut(experiment) {
            Some(s) if position < s.len => {
                s.logged += 1;
                s.first
            }
            _ => return,
        };
        self.write_line(first, position, line);
    }

    fn write_line(&self, first: u64, position: usize, line: &[u8]) {
        let mut f = lock(&self.file);
        let at = f.at;
        if let Err(e) = f.out.write_all(line).and_then(|()| f.out.write_all(b"\n")) {
            f.failed.get_or_insert(e.to_string());
            return;
        }
        f.at += line.len() as u64 + 1;
        let slot = span::pack(at, line.len() as u64, &mut f.long);
        let slot_at = (first + position as u64) * 8;
        if let Err(e) = crate::fs::write_all_at(&f.slots, &slot.to_le_bytes(), slot_at) {
            f.failed.get_or_insert(e.to_string());
        }
    }

    /// Starts one more experiment, its size not known: the cases [`CaseLog::append`]ed
    /// after it are its own, at positions 0, 1, 2... (a log read from a stream, where each
    /// experiment's cases come whole before the next's; only its last experiment grows).
    pub fn add_experiment(&self) {
        let mut index = lock(&self.index);
        let first = index.last().map_or(0, |s| s.first + s.len as u64);
        index.push(Slots {
            first,
            len: 0,
            logged: 0,
        });
    }

    /// Appends a case (its compact JSON, one [`CaseResult`] as `serde_json::to_vec` writes
    /// it) to the last experiment [`CaseLog::add_experiment`] started, at its next position.
    pub fn append(&self, line: &[u8]) {
        let (experiment, position) = {
            let mut index = lock(&self.index);
            let experiment = index.len().wrapping_sub(1);
            let Some(s) = index.last_mut() else { return };
            s.len += 1;
            (experiment, s.len - 1)
        };
        self.push_line(experiment, position, line);
    }

    /// Keeps the experiments `keep` says (in the run's experiment order), as the run drops
    /// experiments where no case ran.
    pub fn retain(&self, keep: &[bool]) {
        let mut index = lock(&self.index);
        let mut i = 0;
        index.retain(|_| {
            let k = keep.get(i).copied().unwrap_or(true);
            i += 1;
            k
        });
    }

    /// How many cases experiment `experiment` holds.
    pub fn len(&self, experiment: usize) -> usize {
        lock(&self.index).get(experiment).map_or(0, |s| s.logged)
    }

    /// Whether no case is logged at all.
    pub fn is_empty(&self) -> bool {
        lock(&self.index).iter().all(|s| s.logged == 0)
    }

    /// The case results of experiment `experiment`, in case order, read one at a time.
    pub fn cases(&self, experiment: usize) -> Result<Cases<'_>> {
        let slots = lock(&self.index)
            .get(experiment)
            .cloned()
            .unwrap_or_default();
        let (file, slot_file, long) = {
            let mut f = lock(&self.file);
            if let Some(e) = &f.failed {
                return Err(Error::Failed(format!(
                    "the case results could not be kept on disk: {e}"
                )));
            }
            f.out.flush().map_err(|e| {
                Error::Failed(format!("the case results could not be kept on disk: {e}"))
            })?;
            let clone = |file: &File| file.try_clone().map_err(unread);
            (clone(f.out.get_ref())?, clone(&f.slots)?, f.long.clone())
        };
        Ok(Cases {
            slots,
            next: 0,
            file,
            slot_file,
            long,
            chunk: Vec::new(),
            chunk_from: 0,
            buf: Vec::new(),
            last: 0,
            _log: std::marker::PhantomData,
        })
    }

    /// Puts every experiment's cases back into `run` (for a report that lists cases, or a
    /// library caller that wants the whole [`RunResult`]).
    pub fn fill(&self, run: &mut RunResult) -> Result<()> {
        for (i, e) in run.experiments.iter_mut().enumerate() {
            e.cases = self.cases(i)?.collect::<Result<Vec<_>>>()?;
        }
        Ok(())
    }
}

/// The cases of one experiment, read back from a [`CaseLog`] in case order: its slots a
/// chunk at a time, each logged case's line at its offset.
#[derive(Debug)]
pub struct Cases<'a> {
    slots: Slots,
    /// The case position to look from.
    next: usize,
    file: File,
    slot_file: File,
    /// The long lines' places as they were when reading began.
    long: Vec<(u64, u64)>,
    /// Slots `chunk_from..chunk_from + chunk.len()`, as read.
    chunk: Vec<u64>,
    chunk_from: usize,
    buf: Vec<u8>,
    /// The position of the case last read.
    last: usize,
    _log: std::marker::PhantomData<&'a CaseLog>,
}

impl Cases<'_> {
    /// The position (in its experiment's planned cases) of the case last read.
    pub fn last_position(&self) -> usize {
        self.last
    }

    /// The case at `position`, read at its offset; `None` when none is logged there. The
    /// reading goes on from where it was.
    pub fn at(&mut self, position: usize) -> Result<Option<CaseResult>> {
        if position >= self.slots.len {
            return Ok(None);
        }
        let Some((at, len)) = span::unpack(self.slot(position).map_err(unread)?, &self.long) else {
            return Ok(None);
        };
        self.read_line(at, len).map_err(unread)?;
        serde_json::from_slice(&self.buf)
            .map(Some)
            .map_err(unreadable)
    }

    /// The line `len` bytes long at `at` into the buffer. At an offset, not after a seek:
    /// the readers' handles share one file position, and the history store reads the log
    /// on two threads at once.
    fn read_line(&mut self, at: u64, len: u64) -> std::io::Result<()> {
        let len = usize::try_from(len).map_err(std::io::Error::other)?;
        self.buf.resize(len, 0);
        crate::fs::read_exact_at(&self.file, &mut self.buf, at)
    }

    /// The slot of case `position` (below the experiment's size), its chunk read if not
    /// in hand.
    fn slot(&mut self, position: usize) -> std::io::Result<u64> {
        if !(self.chunk_from..self.chunk_from + self.chunk.len()).contains(&position) {
            let n = CHUNK.min(self.slots.len - position);
            let mut bytes = vec![0u8; n * 8];
            crate::fs::read_exact_at(
                &self.slot_file,
                &mut bytes,
                (self.slots.first + position as u64) * 8,
            )?;
            self.chunk.clear();
            self.chunk.extend(
                bytes
                    .chunks_exact(8)
                    .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))),
            );
            self.chunk_from = position;
        }
        Ok(self.chunk[position - self.chunk_from])
    }

    /// The first logged case at or after `from`: its position, offset and length.
    fn next_from(&mut self, from: usize) -> std::io::Result<Option<(usize, u64, u64)>> {
        for j in from..self.slots.len {
            // A long line logged after reading began is not read (the log is read once the
            // run has finished).
            if let Some((at, len)) = span::unpack(self.slot(j)?, &self.long) {
                return Ok(Some((j, at, len)));
            }
        }
        Ok(None)
    }

    /// The next case's line as it was logged (its compact JSON, no newline), not parsed:
    /// for a writer that copies it, or a reader that wants a few of its fields.
    pub fn next_line(&mut self) -> Option<Result<&[u8]>> {
        let (j, at, len) = match self.next_from(self.next) {
            Ok(found) => found?,
            Err(e) => return Some(Err(unread(e))),
        };
        self.next = j + 1;
        self.last = j;
        if let Err(e) = self.read_line(at, len) {
            return Some(Err(unread(e)));
        }
        Some(Ok(&self.buf))
    }
}

/// The error of a log that cannot be read.
fn unread(e: std::io::Error) -> Error {
    Error::Failed(format!("the case results cannot be read back: {e}"))
}

/// The error of a logged line that does not parse.
pub fn unreadable(e: serde_json::Error) -> Error {
    Error::Failed(format!(
        "a case result kept on disk does not read back: {e}"
    ))
}

impl Iterator for Cases<'_> {
    type Item = Result<CaseResult>;

    fn next(&mut self) -> Option<Result<CaseResult>> {
        Some(match self.next_line()? {
            Ok(line) => serde_json::from_slice(line).map_err(unreadable),
            Err(e) => Err(e),
        })
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Writes `run` as JSON with its cases streamed from `log`, byte for byte what serializing
/// the whole run (cases in it) would give, pretty (the snapshot file) or compact (the
/// history's copy). Each piece goes to `out` in one `write` (a JSON value or the text
/// between two), so a writer that scrubs each write sees every string whole.
pub fn write_json(run: &RunResult, log: &CaseLog, pretty: bool, out: &mut dyn Write) -> Result<()> {
    let ser = |v: &dyn erased::Ser| -> Result<String> {
        v.to(pretty)
            .map_err(|e| Error::Failed(format!("could not serialize run {}: {e}", run.run.id)))
    };
    let io = |e: std::io::Error| Error::Failed(format!("could not write run {}: {e}", run.run.id));
    let nl = |depth: usize| -> String {
        if pretty {
            format!("\n{}", "  ".repeat(depth))
        } else {
            String::new()
        }
    };
    let nest = |text: &str, depth: usize| -> String {
        if pretty {
            text.replace('\n', &nl(depth))
        } else {
            text.to_string()
        }
    };
    // The run with no experiments, split where they go. `rfind`: the key cannot occur in a
    // string (its quotes would be escaped), and only `comparison` follows it.
    let frame = super::snapshot::frame_json(run, pretty)
        .map_err(|e| Error::Failed(format!("could not serialize run {}: {e}", run.run.id)))?;
    let (head, tail) = split_at_empty(&frame, "experiments", pretty)?;
    // The planned cases' keys go where the frame has none: the first `"cases"` key, as
    // only scalars and lists of strings come before the settings in a run, and `cases` is
    // the settings' first key. In pieces of whole keys, each piece one write.
    let (before, after) = split_at_first_empty(&head, "cases", pretty)?;
    out.write_all(before.as_bytes()).map_err(io)?;
    let mut piece = String::new();
    let mut any = false;
    for (j, key) in run.run.settings.cases.iter().enumerate() {
        if j > 0 {
            piece.push(',');
        }
        piece.push_str(&nl(4));
        piece.push_str(&ser(&key)?);
        any = true;
        if piece.len() >= 8192 {
            out.write_all(piece.as_bytes()).map_err(io)?;
            piece.clear();
        }
    }
    if any {
        piece.push_str(&nl(3));
    }
    piece.push_str(after);
    out.write_all(piece.as_bytes()).map_err(io)?;
    for (i, e) in run.experiments.iter().enumerate() {
        let mut piece = if i > 0 { "," } else { "" }.to_string();
        piece.push_str(&nl(2));
        let (ehead, etail) = split_at_empty(&ser(e)?, "cases", pretty)?;
        piece.push_str(&nest(&ehead, 2));
        out.write_all(piece.as_bytes()).map_err(io)?;
        let mut any = false;
        let mut cases = log.cases(i)?;
        if pretty {
            for (j, c) in cases.enumerate() {
                let c = c?;
                let mut piece = if j > 0 { "," } else { "" }.to_string();
                piece.push_str(&nl(4));
                piece.push_str(&nest(&ser(&c)?, 4));
                out.write_all(piece.as_bytes()).map_err(io)?;
                any = true;
            }
        } else {
            // Compact, a case is the line it was logged as (`serde_json::to_vec` of it):
            // copied, not parsed and serialized again.
            let mut piece = Vec::new();
            while let Some(line) = cases.next_line() {
                piece.clear();
                if any {
                    piece.push(b',');
                }
                piece.extend_from_slice(line?);
                out.write_all(&piece).map_err(io)?;
                any = true;
            }
        }
        let mut piece = if any { nl(3) } else { String::new() };
        piece.push_str(&nest(&etail, 2));
        out.write_all(piece.as_bytes()).map_err(io)?;
    }
    let mut piece = if run.experiments.is_empty() {
        String::new()
    } else {
        nl(1)
    };
    piece.push_str(&tail);
    out.write_all(piece.as_bytes()).map_err(io)?;
    Ok(())
}

/// `{... "key": [` and `] ...}` of a text whose last `"key"` holds an empty array.
fn split_at_empty(text: &str, key: &str, pretty: bool) -> Result<(String, String)> {
    let empty = empty_array(key, pretty);
    let at = text
        .rfind(&empty)
        .ok_or_else(|| Error::Failed(format!("the run's JSON has no `{key}` to fill")))?;
    let open = at + empty.len() - 1;
    Ok((text[..open].to_string(), text[open..].to_string()))
}

/// [`split_at_empty`] at the first `"key"`, borrowing.
fn split_at_first_empty<'t>(text: &'t str, key: &str, pretty: bool) -> Result<(&'t str, &'t str)> {
    let empty = empty_array(key, pretty);
    let at = text
        .find(&empty)
        .ok_or_else(|| Error::Failed(format!("the run's JSON has no `{key}` to fill")))?;
    Ok(text.split_at(at + empty.len() - 1))
}

/// `"key": []` as the JSON text has it: no space when compact. (The key cannot occur in a
/// string: its quotes would be escaped.)
fn empty_array(key: &str, pretty: bool) -> String {
    if pretty {
        format!("\"{key}\": []")
    } else {
        format!("\"{key}\":[]")
    }
}

/// Serializing a value pretty or compact, behind one `dyn` (the pieces are of three types).
mod erased {
    pub trait Ser {
        fn to(&self, pretty: bool) -> serde_json::Result<String>;
    }

    impl<T: serde::Serialize> Ser for T {
        fn to(&self, pretty: bool) -> serde_json::Result<String> {
            if pretty {
                serde_json::to_string_pretty(self)
            } else {
                serde_json::to_string(self)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::testing::{case, run};

    fn logged(r: &RunResult) -> (RunResult, CaseLog) {
        let sizes: Vec<usize> = r.experiments.iter().map(|e| e.cases.len()).collect();
        let log = CaseLog::new(&sizes).unwrap();
        let mut bare = r.clone();
        for (i, e) in bare.experiments.iter_mut().enumerate() {
            // Out of order, as workers finish them.
            for (j, c) in e.cases.iter().enumerate().rev() {
                log.push(i, j, c);
            }
            e.cases.clear();
        }
        (bare, log)
    }

    #[test]
    fn the_streamed_json_is_the_serialized_run_byte_for_byte() {
        let mut r = run(
            "r1",
            "main",
            "2026-01-01T00:00:00Z",
            vec![
                case("a", Some(0.5), Some(true)),
                case("b", None, None),
                case("c\"experiments\": []", Some(1.0), Some(false)),
            ],
        );
        let mut empty = r.experiments[0].clone();
        empty.cases.clear();
        empty.dataset = "empty".into();
        r.experiments.push(empty);
        r.run.settings.cases = vec!["d/a".to_string(), "d/\"cases\": []".into()].into();
        r.run.settings.selection = Some(Default::default());
        r.run.argv = vec!["\"cases\": []".into()];
        let (mut bare, log) = logged(&r);
        // As a run being made holds them: named from its cases when written.
        let keys: Vec<String> = r
            .run
            .settings
            .cases
            .iter()
            .map(|k| k.into_owned())
            .collect();
        bare.run.settings.cases =
            crate::results::CaseKeys::named(keys.len(), move |i| keys[i].clone());
        for pretty in [true, false] {
            let mut out = Vec::new();
            write_json(&bare, &log, pretty, &mut out).unwrap();
            let want = if pretty {
                serde_json::to_string_pretty(&r).unwrap()
            } else {
                serde_json::to_string(&r).unwrap()
            };
            assert_eq!(String::from_utf8(out).unwrap(), want, "pretty: {pretty}");
        }
        let mut filled = bare.clone();
        log.fill(&mut filled).unwrap();
        assert_eq!(filled, r);
    }

    #[test]
    fn a_run_with_no_experiment_streams_as_it_serializes() {
        let mut r = run("r1", "main", "2026-01-01T00:00:00Z", vec![]);
        r.experiments.clear();
        let (bare, log) = logged(&r);
        let mut out = Vec::new();
        write_json(&bare, &log, true, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            serde_json::to_string_pretty(&r).unwrap()
        );
    }

    #[test]
    fn an_experiment_larger_than_a_chunk_reads_back_in_order_across_chunks() {
        let n = CHUNK * 2 + 3;
        let log = CaseLog::new(&[2, n]).unwrap();
        for j in (0..n).rev().filter(|j| j % 5 != 1) {
            log.push(1, j, &case(&format!("c{j}"), Some(1.0), None));
        }
        log.push(0, 1, &case("first", None, None));
        let ids: Vec<String> = log.cases(1).unwrap().map(|c| c.unwrap().case).collect();
        let want: Vec<String> = (0..n)
            .filter(|j| j % 5 != 1)
            .map(|j| format!("c{j}"))
            .collect();
        assert_eq!(ids, want);
        assert_eq!((log.len(0), log.len(1)), (1, want.len()));
        let ids: Vec<String> = log.cases(0).unwrap().map(|c| c.unwrap().case).collect();
        assert_eq!(ids, ["first"]);
    }

    #[test]
    fn cases_not_logged_are_skipped_and_a_long_one_reads_back_whole() {
        let mut long = case("long", Some(1.0), Some(true));
        long.output = Some(serde_json::json!({ "answer": "x".repeat(span::LONG as usize) }));
        let (a, b) = (case("a", Some(0.5), None), case("b", None, None));
        let log = CaseLog::new(&[5, 2]).unwrap();
        log.push(0, 3, &b);
        log.push(0, 1, &long);
        log.push(0, 0, &a);
        // Past the planned cases: not kept.
        log.push(0, 5, &a);
        log.push(1, 1, &a);
        assert_eq!((log.len(0), log.len(1), log.is_empty()), (3, 1, false));
        assert_eq!(lock(&log.file).long.len(), 1);
        let read: Vec<CaseResult> = log.cases(0).unwrap().map(Result::unwrap).collect();
        assert_eq!(read, [a.clone(), long, b]);
        let read: Vec<CaseResult> = log.cases(1).unwrap().map(Result::unwrap).collect();
        assert_eq!(read, [a]);
        assert!(CaseLog::new(&[3]).unwrap().is_empty());
    }
}

/// Where a run's case results are read from: the run's own experiments (a run held whole,
/// as a snapshot file or a test builds it) or the case log beside a run whose cases were
/// streamed to disk (its experiments' `cases` empty). The gate and the reports read cases
/// through it, one at a time, whichever it is.
#[derive(Debug, Clone, Copy)]
pub enum CaseSource<'a> {
    /// In the run: `experiments[i].cases`.
    Run(&'a RunResult),
    /// In a case log, experiment for experiment in the run's order.
    Log(&'a CaseLog),
}

impl<'a> CaseSource<'a> {
    /// `run`'s cases: in `log` when there is one, else in the run itself.
    pub fn of(run: &'a RunResult, log: Option<&'a CaseLog>) -> CaseSource<'a> {
        match log {
            Some(log) => CaseSource::Log(log),
            None => CaseSource::Run(run),
        }
    }

    /// How many cases experiment `experiment` holds.
    pub fn len(&self, experiment: usize) -> usize {
        match self {
            CaseSource::Run(run) => run.experiments.get(experiment).map_or(0, |e| e.cases.len()),
            CaseSource::Log(log) => log.len(experiment),
        }
    }

    /// Whether experiment `experiment` holds no case.
    pub fn is_empty(&self, experiment: usize) -> bool {
        self.len(experiment) == 0
    }

    /// Experiment `experiment`'s cases in case order, one at a time, each with its
    /// position (what [`CaseReader::at`] reads it back by).
    pub fn cases(&self, experiment: usize) -> Result<SourceCases<'a>> {
        Ok(match self {
            CaseSource::Run(run) => SourceCases::Run(
                run.experiments
                    .get(experiment)
                    .map_or(&[][..], |e| &e.cases[..])
                    .iter()
                    .enumerate(),
            ),
            CaseSource::Log(log) => SourceCases::Log(log.cases(experiment)?),
        })
    }

    /// Random access to experiment `experiment`'s cases.
    pub fn reader(&self, experiment: usize) -> Result<CaseReader<'a>> {
        Ok(match self {
            CaseSource::Run(run) => CaseReader::Run(
                run.experiments
                    .get(experiment)
                    .map_or(&[][..], |e| &e.cases[..]),
            ),
            CaseSource::Log(log) => CaseReader::Log(log.cases(experiment)?),
        })
    }
}

/// One experiment's cases from a [`CaseSource`]: borrowed from the run, or read from the
/// log and owned.
#[derive(Debug)]
pub enum SourceCases<'a> {
    /// Borrowed from the run's experiment.
    Run(std::iter::Enumerate<std::slice::Iter<'a, CaseResult>>),
    /// Read from the log.
    Log(Cases<'a>),
}

/// Random access to one experiment's cases of a [`CaseSource`], by the positions its
/// iteration gave: a slice of the run, or reads at an offset of the log.
#[derive(Debug)]
pub enum CaseReader<'a> {
    /// The run's experiment's cases.
    Run(&'a [CaseResult]),
    /// The log's, read at their offsets.
    Log(Cases<'a>),
}

impl<'a> CaseReader<'a> {
    /// The case at `position`; `None` when there is none.
    pub fn at(&mut self, position: usize) -> Result<Option<std::borrow::Cow<'a, CaseResult>>> {
        match self {
            CaseReader::Run(cases) => Ok(cases.get(position).map(std::borrow::Cow::Borrowed)),
            CaseReader::Log(cases) => Ok(cases.at(position)?.map(std::borrow::Cow::Owned)),
        }
    }
}

impl<'a> Iterator for SourceCases<'a> {
    type Item = Result<(usize, std::borrow::Cow<'a, CaseResult>)>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            SourceCases::Run(it) => it
                .next()
                .map(|(j, c)| Ok((j, std::borrow::Cow::Borrowed(c)))),
            SourceCases::Log(cases) => {
                let c = cases.next()?;
                Some(c.map(|c| (cases.last_position(), std::borrow::Cow::Owned(c))))
            }
        }
    }
}
