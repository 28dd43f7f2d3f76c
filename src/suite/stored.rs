//! The suite's cases as loaded: for a JSONL case only where its line is in its file
//! (offset, length, line number) beside what selection reads without parsing it (its id,
//! its dataset, its tags), and all of that on disk, in the store's index (two temporary
//! files: 32 bytes a case and its id), so the memory a suite takes does not grow with its
//! cases; a dataset, a file and each distinct set of tags are held once, in memory. A case
//! becomes a [`Case`] only when something reads it (a worker as it starts the case,
//! `verify`, `cases`): its line is read again from the file, which stays open, and parsed.
//! A file written to after it loaded is caught when a case is read ([`Changed`]): its size
//! or modification time differs. A selection, or one dataset's cases, is a range or a list
//! of indices into the same shared store, so a plan never copies the suite's cases.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use super::case::Case;
use crate::fs::span;

/// A JSONL file the cases are read from, open since it loaded.
#[derive(Debug)]
pub(super) struct Source {
    pub(super) path: PathBuf,
    pub(super) file: File,
    /// Its size and modification time when it loaded.
    pub(super) stamp: Stamp,
}

/// What tells a file written to since it loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
}

impl Stamp {
    pub(super) fn of(file: &File) -> std::io::Result<Stamp> {
        let m = file.metadata()?;
        Ok(Stamp {
            len: m.len(),
            modified: m.modified().ok(),
        })
    }
}

/// A case's JSONL file changed after the suite loaded: its line can no longer be trusted
/// to be the case that was checked (and selected, and counted).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{}:{line}: the file changed after the suite loaded (its cases were checked as they were): run again on the file as it is now",
    path.display()
)]
pub struct Changed {
    /// The JSONL file.
    pub path: PathBuf,
    /// The line of the case being read.
    pub line: usize,
}

impl From<Changed> for crate::error::Error {
    fn from(c: Changed) -> crate::error::Error {
        crate::error::Error::Config(c.to_string())
    }
}

/// What a case's record says its source is for a case from a folder (`input.txt`,
/// `expected.json`): such a case is held parsed, its record's line its index in
/// [`Store::parsed`].
const FOLDER: u32 = u32::MAX;

/// A count that is a `u32` in the store: past it (4 G cases, or 4 GiB of ids) the suite
/// could not be held anyway.
fn small(n: usize, what: &str) -> u32 {
    u32::try_from(n).unwrap_or_else(|_| panic!("a suite with over 4 G {what}"))
}

/// One case's entry in the store's index file: where its id is in the ids file, its
/// source and line, where its line is in that source, and its set of tags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rec {
    id_at: u64,
    id_len: u32,
    /// A JSONL case's line number; a folder case's index in `parsed`.
    line: u32,
    /// A JSONL case's line in its file, packed ([`span::pack`]); 0 for a folder case.
    span: u64,
    /// Which of `files`, or [`FOLDER`].
    source: u32,
    /// Its set of tags: an index into `tag_sets` (0: none).
    tags: u32,
}

/// A record's size in the index file.
const REC: usize = 32;

impl Rec {
    fn to_bytes(self) -> [u8; REC] {
        let mut b = [0; REC];
        b[0..8].copy_from_slice(&self.id_at.to_le_bytes());
        b[8..12].copy_from_slice(&self.id_len.to_le_bytes());
        b[12..16].copy_from_slice(&self.line.to_le_bytes());
        b[16..24].copy_from_slice(&self.span.to_le_bytes());
        b[24..28].copy_from_slice(&self.source.to_le_bytes());
        b[28..32].copy_from_slice(&self.tags.to_le_bytes());
        b
    }

    fn from_bytes(b: &[u8]) -> Rec {
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        Rec {
            id_at: u64_at(0),
            id_len: u32_at(8),
            line: u32_at(12),
            span: u64_at(16),
            source: u32_at(24),
            tags: u32_at(28),
        }
    }

    fn ids_end(&self) -> u64 {
        self.id_at + u64::from(self.id_len)
    }
}

/// Records read at once by an iteration over the cases (32 KiB): few enough that a run's
/// peak does not grow with the suite until it has this many cases.
const CHUNK: usize = 1024;

/// The index's two anonymous temporary files (gone when the store is dropped): a record
/// a case, in case order, and the ids one after the other in the same order.
#[derive(Debug)]
struct Index {
    recs: File,
    ids: File,
    /// Writing, while the suite loads.
    recs_out: Option<BufWriter<File>>,
    ids_out: Option<BufWriter<File>>,
    /// The ids' bytes written.
    ids_len: u64,
}

impl Index {
    fn new() -> std::io::Result<Index> {
        let (recs, ids) = (tempfile::tempfile()?, tempfile::tempfile()?);
        Ok(Index {
            recs_out: Some(BufWriter::with_capacity(64 * 1024, recs.try_clone()?)),
            ids_out: Some(BufWriter::with_capacity(64 * 1024, ids.try_clone()?)),
            recs,
            ids,
            ids_len: 0,
        })
    }

    fn flush(&mut self) -> std::io::Result<()> {
        for out in [&mut self.recs_out, &mut self.ids_out]
            .into_iter()
            .flatten()
        {
            out.flush()?;
        }
        Ok(())
    }
}

/// Reads the index's bytes at `at`: the store wrote them, so a failure is the temporary
/// folder's, past what a run can go on from.
fn read_back(file: &File, buf: &mut [u8], at: u64) {
    if let Err(e) = crate::fs::read_exact_at(file, buf, at) {
        panic!("the suite's case index, in a temporary file, cannot be read back: {e}");
    }
}

/// Every loaded case, in dataset then id order, on disk ([`Index`]): 32 bytes a case and
/// its id, in temporary files, none in memory, so a suite of 100,000 cases loads in the
/// memory of one of 1,000. What is the same for many cases is held once, in memory: a
/// dataset is a contiguous run of cases ([`Run`]), each distinct set of tags is held once.
#[derive(Debug)]
pub(super) struct Store {
    len: u32,
    /// Made with the first case.
    index: Option<Index>,
    /// The lines too long, or too far into their file, to pack: offset and length.
    long: Vec<(u64, u64)>,
    /// Each dataset's run of cases, in case order (a dataset with no case has none).
    runs: Vec<Run>,
    /// Each distinct set of tags, once; the first is the empty one.
    tag_sets: Vec<Box<[String]>>,
    files: Vec<Source>,
    parsed: Vec<Case>,
    /// The dataset being loaded.
    loading: Option<Loading>,
    /// The first failure to write the index.
    failed: Option<std::io::Error>,
}

/// A dataset's cases: from where the one before's end, to `end`, in the store.
#[derive(Debug)]
struct Run {
    end: u32,
    name: String,
}

/// A dataset as it loads: its cases are written to the index in the order they load; if
/// that is id order (a generated file's usually is) they stay where they are, the first
/// duplicate found as they load (beside the case it repeats); if not, [`Store::end`] reads
/// the dataset's records back and writes them again sorted, holding that one dataset in
/// memory while it does.
#[derive(Debug)]
struct Loading {
    name: String,
    start: u32,
    /// Whether every case so far came in id order (a duplicate beside what it repeats).
    sorted: bool,
    /// The last case loaded: its id, source and line.
    last: Option<(String, u32, u32)>,
    dup: Option<Dup>,
    /// Whether a case's id can name another's cassette file
    /// ([`crate::cassette::may_share_a_file`]): the dataset's files are then compared.
    odd: bool,
}

/// Why a dataset's cases cannot all be kept: two share an id, or two ids name one
/// cassette file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Clash {
    /// The same id twice.
    Id(Dup),
    /// Two ids, one cassette file.
    File(SharedFile),
}

/// A loading dataset's records read back ([`Store::loaded_from`]): the records, their ids
/// one after the other, and where in the ids file the first one starts.
struct Loaded {
    recs: Vec<Rec>,
    ids: Vec<u8>,
    ids_from: u64,
}

/// Two cases of one dataset whose ids name the same cassette file (`x\y` and `x/y`):
/// their ids and where each loaded, the one that loaded first first, and the file below
/// each contender's folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SharedFile {
    pub(super) ids: (String, String),
    pub(super) first: (u32, u32),
    pub(super) second: (u32, u32),
    pub(super) file: PathBuf,
}

/// Two cases of one dataset with the same id: where each loaded (a source and line, as in
/// [`Rec`]), the one that loaded first first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Dup {
    pub(super) id: String,
    first: (u32, u32),
    second: (u32, u32),
}

impl Default for Store {
    fn default() -> Store {
        Store {
            len: 0,
            index: None,
            long: Vec::new(),
            runs: Vec::new(),
            tag_sets: vec![Box::default()],
            files: Vec::new(),
            parsed: Vec::new(),
            loading: None,
            failed: None,
        }
    }
}

impl Store {
    /// How many cases.
    pub(super) fn len(&self) -> usize {
        self.len as usize
    }

    /// Starts loading dataset `name`: the cases pushed until [`Store::end`] are its.
    pub(super) fn begin(&mut self, name: &str) {
        assert!(
            self.loading.is_none(),
            "dataset {name} begun inside another"
        );
        self.loading = Some(Loading {
            name: name.to_string(),
            start: self.len,
            sorted: true,
            last: None,
            dup: None,
            odd: false,
        });
    }

    /// Adds an opened JSONL file; its index.
    pub(super) fn file(&mut self, source: Source) -> u32 {
        self.files.push(source);
        small(self.files.len() - 1, "files")
    }

    /// Adds a case of the dataset loading, with its id, tags and where it is.
    fn push(&mut self, id: &str, tags: Vec<String>, source: u32, line: u32, span: u64) {
        let tags = self.tag_set(tags);
        let l = self
            .loading
            .as_mut()
            .expect("a case pushed outside a dataset");
        l.odd = l.odd || crate::cassette::may_share_a_file(id);
        match &mut l.last {
            Some((last, last_source, last_line)) => {
                if l.sorted {
                    match id.cmp(last.as_str()) {
                        std::cmp::Ordering::Less => l.sorted = false,
                        std::cmp::Ordering::Equal if l.dup.is_none() => {
                            l.dup = Some(Dup {
                                id: id.to_string(),
                                first: (*last_source, *last_line),
                                second: (source, line),
                            });
                        }
                        _ => {}
                    }
                }
                last.clear();
                last.push_str(id);
                (*last_source, *last_line) = (source, line);
            }
            None => l.last = Some((id.to_string(), source, line)),
        }
        self.len = small(self.len as usize + 1, "cases");
        if self.failed.is_some() {
            return;
        }
        if self.index.is_none() {
            match Index::new() {
                Ok(index) => self.index = Some(index),
                Err(e) => {
                    self.failed = Some(e);
                    return;
                }
            }
        }
        let index = self.index.as_mut().expect("made above");
        let rec = Rec {
            id_at: index.ids_len,
            id_len: small(id.len(), "bytes of an id"),
            line,
            span,
            source,
            tags,
        };
        index.ids_len += id.len() as u64;
        let written = (|| {
            let (Some(recs), Some(ids)) = (&mut index.recs_out, &mut index.ids_out) else {
                unreachable!("a case pushed after the suite loaded")
            };
            ids.write_all(id.as_bytes())?;
            recs.write_all(&rec.to_bytes())
        })();
        if let Err(e) = written {
            self.failed = Some(e);
        }
    }

    /// Adds a case of the dataset loading from a JSONL line: `len` bytes at `at` in file
    /// `file`, line `line`.
    pub(super) fn push_line(
        &mut self,
        file: u32,
        id: &str,
        tags: Vec<String>,
        line: u32,
        at: u64,
        len: u64,
    ) {
        let span = span::pack(at, len, &mut self.long);
        self.push(id, tags, file, line, span);
    }

    /// Adds a case of the dataset loading from a folder, held parsed.
    pub(super) fn push_parsed(&mut self, case: Case) {
        let i = small(self.parsed.len(), "cases");
        let (id, tags) = (case.id.clone(), case.tags.clone());
        self.parsed.push(case);
        self.push(&id, tags, FOLDER, i, 0);
    }

    /// The index of this set of tags in `tag_sets`, added if new. The sets are few (a
    /// suite tags its cases with a handful of words), so a search is quick.
    fn tag_set(&mut self, tags: Vec<String>) -> u32 {
        if tags.is_empty() {
            return 0;
        }
        match self.tag_sets.iter().position(|t| **t == *tags) {
            Some(i) => i as u32,
            None => {
                self.tag_sets.push(tags.into());
                small(self.tag_sets.len() - 1, "sets of tags")
            }
        }
    }

    /// Where a case loaded: its folder case, or its file and line.
    pub(super) fn place(&self, (source, line): (u32, u32)) -> Place<'_> {
        match source {
            FOLDER => Place::Folder(&self.parsed[line as usize]),
            file => Place::Line(&self.files[file as usize], line),
        }
    }

    /// Where each case of a [`Dup`] loaded.
    pub(super) fn places(&self, dup: &Dup) -> (Place<'_>, Place<'_>) {
        (self.place(dup.first), self.place(dup.second))
    }

    /// Ends the dataset loading, its cases in id order (a case's duplicates beside it in
    /// the order they loaded); the first duplicate, if any: the first case to have loaded
    /// after a case with its id, with that case. Else, when an id could name another's
    /// cassette file, the first two that do.
    pub(super) fn end(&mut self) -> Result<(), Clash> {
        let l = self.loading.take().expect("no dataset loading");
        if l.start == self.len {
            return Ok(());
        }
        let dataset = l.name.clone();
        self.runs.push(Run {
            end: self.len,
            name: l.name,
        });
        let dup = if l.sorted {
            Ok(l.dup)
        } else {
            self.sort_from(l.start)
        };
        let shared = match dup {
            Ok(Some(dup)) => return Err(Clash::Id(dup)),
            Ok(None) if l.odd => self.shared_file_from(l.start, &dataset),
            Ok(None) => Ok(None),
            Err(e) => Err(e),
        };
        match shared {
            Ok(shared) => shared.map_or(Ok(()), |s| Err(Clash::File(s))),
            Err(e) => {
                self.failed.get_or_insert(e);
                Ok(())
            }
        }
    }

    /// The records from `start` on (the dataset loading) and their ids, read back whole
    /// (the index flushed first); `None` when there is no index or it already failed.
    fn loaded_from(&mut self, start: u32) -> std::io::Result<Option<Loaded>> {
        let Some(index) = self.index.as_mut() else {
            return Ok(None);
        };
        if self.failed.is_some() {
            return Ok(None);
        }
        index.flush()?;
        let n = (self.len - start) as usize;
        let mut bytes = vec![0; n * REC];
        crate::fs::read_exact_at(&index.recs, &mut bytes, start as u64 * REC as u64)?;
        let recs: Vec<Rec> = bytes.chunks_exact(REC).map(Rec::from_bytes).collect();
        drop(bytes);
        let ids_from = recs[0].id_at;
        let mut ids = vec![0; (index.ids_len - ids_from) as usize];
        crate::fs::read_exact_at(&index.ids, &mut ids, ids_from)?;
        Ok(Some(Loaded {
            recs,
            ids,
            ids_from,
        }))
    }

    /// The first two cases from `start` on (one dataset's, `dataset`) whose ids name the
    /// same cassette file, if any: every id's file is compared, the dataset's held while
    /// it is (only a dataset with an id that can share a file is looked at).
    fn shared_file_from(
        &mut self,
        start: u32,
        dataset: &str,
    ) -> std::io::Result<Option<SharedFile>> {
        let Some(Loaded {
            recs,
            ids,
            ids_from,
        }) = self.loaded_from(start)?
        else {
            return Ok(None);
        };
        let id = |r: &Rec| {
            String::from_utf8_lossy(
                &ids[(r.id_at - ids_from) as usize..(r.ids_end() - ids_from) as usize],
            )
            .into_owned()
        };
        let mut files: Vec<(PathBuf, usize)> = recs
            .iter()
            .enumerate()
            .map(|(k, r)| (crate::cassette::case_file(dataset, &id(r)), k))
            .collect();
        files.sort();
        // Of each pair that shares a file, the one whose second case loaded first (a
        // dataset's folder cases load before its JSONL files, in file order).
        let order = |r: &Rec| {
            let file = if r.source == FOLDER {
                0
            } else {
                u64::from(r.source) + 1
            };
            (file, r.line)
        };
        let pair = files
            .windows(2)
            .filter(|w| w[0].0 == w[1].0)
            .map(|w| {
                let (a, b) = (&recs[w[0].1], &recs[w[1].1]);
                if order(a) <= order(b) { (a, b) } else { (b, a) }
            })
            .min_by_key(|(_, b)| order(b));
        Ok(pair.map(|(a, b)| SharedFile {
            ids: (id(a), id(b)),
            first: (a.source, a.line),
            second: (b.source, b.line),
            file: crate::cassette::case_file(dataset, &id(a)),
        }))
    }

    /// Sorts the records from `start` on by id (then load order), written again where
    /// they were; the first duplicate.
    fn sort_from(&mut self, start: u32) -> std::io::Result<Option<Dup>> {
        let Some(Loaded {
            recs,
            ids,
            ids_from,
        }) = self.loaded_from(start)?
        else {
            return Ok(None);
        };
        let n = recs.len();
        let index = self.index.as_mut().expect("loaded_from read the index");
        let id = |r: &Rec| &ids[(r.id_at - ids_from) as usize..(r.ids_end() - ids_from) as usize];
        let mut order: Vec<u32> = (0..n as u32).collect();
        // Stable: a case's duplicates stay in the order they loaded.
        order.sort_by(|&a, &b| id(&recs[a as usize]).cmp(id(&recs[b as usize])));
        let dup = order
            .windows(2)
            .enumerate()
            .filter(|(k, w)| {
                let same = |a: u32, b: u32| id(&recs[a as usize]) == id(&recs[b as usize]);
                same(w[0], w[1]) && (*k == 0 || !same(order[k - 1], w[0]))
            })
            .map(|(_, w)| (w[0], w[1]))
            .min_by_key(|&(_, second)| second)
            .map(|(a, b)| {
                let (a, b) = (&recs[a as usize], &recs[b as usize]);
                Dup {
                    id: String::from_utf8_lossy(id(b)).into_owned(),
                    first: (a.source, a.line),
                    second: (b.source, b.line),
                }
            });
        // Written back a chunk at a time, so the dataset is not held twice.
        let (mut recs_at, mut ids_at) = (start as u64 * REC as u64, ids_from);
        let (mut out_recs, mut out_ids) = (Vec::new(), Vec::new());
        for chunk in order.chunks(CHUNK) {
            out_recs.clear();
            out_ids.clear();
            for &k in chunk {
                let r = recs[k as usize];
                let moved = Rec {
                    id_at: ids_at + out_ids.len() as u64,
                    ..r
                };
                out_recs.extend_from_slice(&moved.to_bytes());
                out_ids.extend_from_slice(id(&r));
            }
            crate::fs::write_all_at(&index.recs, &out_recs, recs_at)?;
            crate::fs::write_all_at(&index.ids, &out_ids, ids_at)?;
            recs_at += out_recs.len() as u64;
            ids_at += out_ids.len() as u64;
        }
        Ok(dup)
    }

    /// Every dataset loaded: the index written out.
    pub(super) fn done(&mut self) -> std::io::Result<()> {
        assert!(self.loading.is_none(), "a dataset still loading");
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if let Some(index) = &mut self.index {
            index.flush()?;
            (index.recs_out, index.ids_out) = (None, None);
        }
        Ok(())
    }

    fn index(&self) -> &Index {
        self.index
            .as_ref()
            .expect("a case read from a store with none")
    }

    /// Case `i`'s record.
    fn rec(&self, i: u32) -> Rec {
        let mut b = [0; REC];
        read_back(&self.index().recs, &mut b, i as u64 * REC as u64);
        Rec::from_bytes(&b)
    }

    /// Records `from..` (at most [`CHUNK`]) and their ids, for an iteration.
    fn chunk(&self, from: u32) -> Chunk {
        let n = CHUNK.min((self.len - from) as usize);
        let mut bytes = vec![0; n * REC];
        read_back(&self.index().recs, &mut bytes, from as u64 * REC as u64);
        let recs: Vec<Rec> = bytes.chunks_exact(REC).map(Rec::from_bytes).collect();
        drop(bytes);
        let (ids_from, ids_end) = match (recs.first(), recs.last()) {
            (Some(a), Some(b)) => (a.id_at, b.ids_end()),
            _ => (0, 0),
        };
        let mut ids = vec![0; (ids_end - ids_from) as usize];
        read_back(&self.index().ids, &mut ids, ids_from);
        Chunk {
            from,
            recs,
            ids,
            ids_from,
        }
    }

    /// Case `i`'s record and id from `chunk`, the chunk holding it read first if it does
    /// not (an iteration reads the index a chunk at a time).
    fn read_in(&self, chunk: &mut Option<Chunk>, i: u32) -> (Rec, String) {
        match chunk {
            Some(c) if c.holds(i) => c.get(i),
            _ => chunk.insert(self.chunk(i)).get(i),
        }
    }

    /// An id as the index holds it (the loader's `&str`, so UTF-8).
    fn id_text(bytes: Vec<u8>) -> String {
        String::from_utf8(bytes).expect("an id the store wrote from a str")
    }

    fn run(&self, i: u32) -> &Run {
        &self.runs[self.run_index(i)]
    }

    /// The index of the dataset of case `i` in the store's datasets with cases.
    fn run_index(&self, i: u32) -> usize {
        self.runs.partition_point(|r| r.end <= i)
    }

    fn head(&self, i: u32) -> CaseHead<'_> {
        let rec = self.rec(i);
        let mut id = vec![0; rec.id_len as usize];
        read_back(&self.index().ids, &mut id, rec.id_at);
        self.head_of(i, rec, Store::id_text(id))
    }

    fn head_of(&self, i: u32, rec: Rec, id: String) -> CaseHead<'_> {
        let (variant, source, line, line_bytes) = match self.place((rec.source, rec.line)) {
            Place::Folder(c) => (c.variant.clone(), c.source.as_path(), c.line, None),
            Place::Line(file, line) => (
                id.split('/').next().unwrap_or(&id).to_string(),
                file.path.as_path(),
                Some(line as usize),
                span::unpack(rec.span, &self.long).map(|(_, len)| len),
            ),
        };
        CaseHead {
            id,
            dataset: &self.run(i).name,
            variant,
            tags: &self.tag_sets[rec.tags as usize],
            source,
            line,
            line_bytes,
        }
    }

    fn case(&self, i: u32) -> Result<Case, Changed> {
        let rec = self.rec(i);
        let run = self.run(i);
        match self.place((rec.source, rec.line)) {
            Place::Folder(c) => Ok(c.clone()),
            Place::Line(source, line) => {
                let changed = || Changed {
                    path: source.path.clone(),
                    line: line as usize,
                };
                let (at, len) = span::unpack(rec.span, &self.long).ok_or_else(changed)?;
                let mut text = vec![0; usize::try_from(len).map_err(|_| changed())?];
                if Stamp::of(&source.file).ok() != Some(source.stamp)
                    || crate::fs::read_exact_at(&source.file, &mut text, at).is_err()
                {
                    return Err(changed());
                }
                let text = String::from_utf8(text).map_err(|_| changed())?;
                super::cases::reparse_line(&run.name, &source.path, line as usize, &text)
                    // The same text, parsed the same way, loaded without an error: a line
                    // that no longer parses was written over in the same second with the
                    // same size.
                    .map_err(|_| changed())
            }
        }
    }
}

/// Records read at once, with their ids.
struct Chunk {
    from: u32,
    recs: Vec<Rec>,
    ids: Vec<u8>,
    ids_from: u64,
}

impl Chunk {
    fn holds(&self, i: u32) -> bool {
        (self.from..self.from + self.recs.len() as u32).contains(&i)
    }

    fn get(&self, i: u32) -> (Rec, String) {
        let rec = self.recs[(i - self.from) as usize];
        let at = (rec.id_at - self.ids_from) as usize;
        let id = self.ids[at..at + rec.id_len as usize].to_vec();
        (rec, Store::id_text(id))
    }
}

/// Where a case is.
pub(super) enum Place<'a> {
    /// A case from a folder, held parsed.
    Folder(&'a Case),
    /// A JSONL file's line.
    Line(&'a Source, u32),
}

/// What a case is known by without parsing it: its id, dataset, variant, tags and file.
#[derive(Debug, Clone)]
pub struct CaseHead<'a> {
    /// As [`Case::id`] (read from the suite's index, on disk).
    pub id: String,
    /// As [`Case::dataset`].
    pub dataset: &'a str,
    /// As [`Case::variant`].
    pub variant: String,
    /// As [`Case::tags`].
    pub tags: &'a [String],
    /// The input file or the JSONL file.
    pub source: &'a Path,
    /// The JSONL line.
    pub line: Option<usize>,
    /// The JSONL line's length in bytes (what every call of the case sends at most).
    pub line_bytes: Option<u64>,
}

impl CaseHead<'_> {
    /// `dataset/id`, as [`Case::key`].
    pub fn key(&self) -> String {
        format!("{}/{}", self.dataset, self.id)
    }
}

/// Which of the store's cases a list holds, in order.
#[derive(Debug, Clone)]
enum Picked {
    /// A run of consecutive cases (the whole suite, one dataset of it): nothing per case.
    Range(u32, u32),
    /// Indices into the store.
    List(Arc<[u32]>),
}

impl Picked {
    fn len(&self) -> usize {
        match self {
            Picked::Range(from, to) => (to - from) as usize,
            Picked::List(l) => l.len(),
        }
    }

    fn at(&self, i: usize) -> u32 {
        match self {
            Picked::Range(from, to) => {
                assert!(i < (to - from) as usize, "case {i} of {}", to - from);
                from + i as u32
            }
            Picked::List(l) => l[i],
        }
    }

    /// The list of these indices (increasing), a range while they are consecutive: a
    /// list is made only at the first gap, so a selection of a whole dataset holds nothing
    /// a case even as it is collected.
    fn of(picked: impl Iterator<Item = u32>) -> Picked {
        let (mut from, mut to) = (0, 0);
        let mut list: Option<Vec<u32>> = None;
        for i in picked {
            match &mut list {
                Some(l) => l.push(i),
                None if from == to => (from, to) = (i, i + 1),
                None if i == to => to += 1,
                None => {
                    let mut l: Vec<u32> = (from..to).collect();
                    l.push(i);
                    list = Some(l);
                }
            }
        }
        match list {
            Some(l) => Picked::List(l.into()),
            None => Picked::Range(from, to),
        }
    }
}

/// A list of cases: a suite's, or a selection of them. Cheap to clone (the cases are
/// shared); each [`Case`] is built when read ([`Cases::get`], [`Cases::iter`]).
#[derive(Debug, Clone)]
pub struct Cases {
    store: Arc<Store>,
    picked: Picked,
}

impl Default for Cases {
    fn default() -> Cases {
        Cases::new(Store::default())
    }
}

impl Cases {
    pub(super) fn new(store: Store) -> Cases {
        let picked = Picked::Range(0, small(store.len(), "cases"));
        Cases {
            store: Arc::new(store),
            picked,
        }
    }

    /// How many cases.
    pub fn len(&self) -> usize {
        self.picked.len()
    }

    /// Whether there is no case.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `i`-th case, parsed: its JSONL line read again from its file (an error if the
    /// file changed since the suite loaded).
    pub fn get(&self, i: usize) -> Result<Case, Changed> {
        self.store.case(self.picked.at(i))
    }

    /// What the `i`-th case is known by, without parsing it.
    pub fn head(&self, i: usize) -> CaseHead<'_> {
        self.store.head(self.picked.at(i))
    }

    /// The `i`-th case's dataset (held in memory: nothing is read).
    pub fn dataset(&self, i: usize) -> &str {
        &self.store.run(self.picked.at(i)).name
    }

    /// Every case, parsed one at a time as the iterator reaches it.
    pub fn iter(&self) -> impl Iterator<Item = Result<Case, Changed>> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Every case's [`CaseHead`], in order: the suite's index read a chunk at a time.
    pub fn heads(&self) -> impl Iterator<Item = CaseHead<'_>> + '_ {
        let mut chunk = None;
        (0..self.len()).map(move |i| {
            let at = self.picked.at(i);
            let (rec, id) = self.store.read_in(&mut chunk, at);
            self.store.head_of(at, rec, id)
        })
    }

    /// Every case's `dataset/id` key ([`CaseHead::key`]), in order, the iterator holding
    /// its own handle on the cases (they are shared), the index read a chunk at a time.
    pub fn keys(&self) -> impl Iterator<Item = String> + Send + use<> {
        let cases = self.clone();
        let mut chunk = None;
        (0..cases.len()).map(move |i| {
            let at = cases.picked.at(i);
            let (_, id) = cases.store.read_in(&mut chunk, at);
            format!("{}/{id}", cases.store.run(at).name)
        })
    }

    /// The cases whose head `keep` accepts, in order (sharing this list's cases).
    pub fn filter(&self, mut keep: impl FnMut(&CaseHead<'_>) -> bool) -> Cases {
        let picked = (0..self.len())
            .map(|i| self.picked.at(i))
            .zip(self.heads())
            .filter(|(_, head)| keep(head))
            .map(|(i, _)| i);
        Cases {
            store: self.store.clone(),
            picked: Picked::of(picked),
        }
    }

    /// The datasets of these cases, in order of first appearance.
    pub fn datasets(&self) -> Vec<String> {
        let mut seen: Vec<usize> = Vec::new();
        for i in 0..self.len() {
            let d = self.store.run_index(self.picked.at(i));
            if !seen.contains(&d) {
                seen.push(d);
            }
        }
        seen.into_iter()
            .map(|d| self.store.runs[d].name.clone())
            .collect()
    }

    /// These cases split by dataset, in order of first appearance.
    pub fn by_dataset(&self) -> Vec<(String, Cases)> {
        self.datasets()
            .into_iter()
            .map(|d| {
                let cases = self.filter(|h| h.dataset == d);
                (d, cases)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::cases::{Selection, load_cases, parse_line, select};
    use std::path::Path;

    const LINES: &str = r#"{"id": "b/2", "input": "two", "expected": {"a": 1}, "tags": ["x"]}
{"id": "a/1", "input": {"q": "one"}, "expect": [{"contains": "o"}], "weight": 2, "metadata": {"k": [1, 2]}, "minimum_scores": {"score": 0.5}, "mock_response": {"a": 1}}

{"id": "c", "id": "c/3", "input": "a key given twice keeps the last"}
{"id": 7, "input": "a number id", "mock_response": null}
"#;

    fn suite(dir: &Path) {
        let ds = dir.join("evals/datasets/d");
        std::fs::create_dir_all(ds.join("cases/plain")).unwrap();
        std::fs::write(ds.join("cases/plain/input.txt"), "from a folder").unwrap();
        std::fs::write(ds.join("cases/plain/expected.json"), r#"{"a": 2}"#).unwrap();
        std::fs::write(ds.join("cases.jsonl"), LINES).unwrap();
    }

    #[test]
    fn a_case_read_again_is_the_case_its_line_loaded_as() {
        let tmp = tempfile::tempdir().unwrap();
        suite(tmp.path());
        let set = load_cases(&tmp.path().join("evals"), tmp.path(), tmp.path()).unwrap();
        let file = tmp.path().join("evals/datasets/d/cases.jsonl");
        let ids: Vec<String> = set.cases.heads().map(|h| h.id).collect();
        assert_eq!(ids, ["7", "a/1", "b/2", "c/3", "plain"]);
        for (i, head) in set.cases.heads().enumerate() {
            let case = set.cases.get(i).unwrap();
            assert_eq!(
                (
                    head.id.as_str(),
                    head.dataset,
                    head.variant.as_str(),
                    head.tags
                ),
                (
                    case.id.as_str(),
                    case.dataset.as_str(),
                    case.variant.as_str(),
                    case.tags.as_slice()
                )
            );
            assert_eq!((head.source, head.line), (case.source.as_path(), case.line));
            if let Some(n) = case.line {
                let line = LINES.lines().nth(n - 1).unwrap();
                assert_eq!(case, parse_line("d", &file, n, line, tmp.path()).unwrap());
            }
        }
        assert_eq!(
            set.cases.get(3).unwrap().input.as_text(),
            "a key given twice keeps the last"
        );
        assert_eq!(
            set.cases.get(1).unwrap().mock_response.as_deref(),
            Some(r#"{"a":1}"#)
        );
    }

    #[test]
    fn a_selection_shares_the_suites_cases_in_their_order() {
        let tmp = tempfile::tempdir().unwrap();
        suite(tmp.path());
        let set = load_cases(&tmp.path().join("evals"), tmp.path(), tmp.path()).unwrap();
        let sel = Selection {
            cases: vec!["d/b/2".into(), "plain".into(), "a".into()],
            ..Default::default()
        };
        let picked = select(&set, &sel).unwrap();
        let keys: Vec<String> = picked.heads().map(|h| h.key()).collect();
        assert_eq!(keys, ["d/a/1", "d/b/2", "d/plain"]);
        assert_eq!(picked.get(1).unwrap(), set.cases.get(2).unwrap());
        assert_eq!(picked.by_dataset().len(), 1);
        assert_eq!(picked.datasets(), ["d"]);
    }

    #[test]
    fn a_case_read_after_its_file_changed_is_an_error_naming_the_line() {
        let tmp = tempfile::tempdir().unwrap();
        suite(tmp.path());
        let set = load_cases(&tmp.path().join("evals"), tmp.path(), tmp.path()).unwrap();
        let file = tmp.path().join("evals/datasets/d/cases.jsonl");
        assert!(set.cases.get(2).is_ok());
        // Written over in place (the same inode): the size tells.
        std::fs::write(&file, LINES.replace("two", "2")).unwrap();
        let e = set.cases.get(2).unwrap_err();
        assert_eq!((e.path.as_path(), e.line), (file.as_path(), 1));
        assert_eq!(
            crate::error::Error::from(e).to_string(),
            format!(
                "{}:1: the file changed after the suite loaded (its cases were checked as they were): run again on the file as it is now",
                file.display()
            )
        );
        // A case held parsed (from a folder) reads as it loaded.
        assert_eq!(set.cases.get(4).unwrap().id, "plain");
    }

    #[test]
    fn a_file_replaced_after_it_loaded_still_reads_as_it_loaded() {
        // An editor saves by renaming a new file over the old: the open file is the old.
        let tmp = tempfile::tempdir().unwrap();
        suite(tmp.path());
        let set = load_cases(&tmp.path().join("evals"), tmp.path(), tmp.path()).unwrap();
        let before = set.cases.get(2).unwrap();
        let file = tmp.path().join("evals/datasets/d/cases.jsonl");
        let new = tmp.path().join("new.jsonl");
        std::fs::write(&new, LINES.replace("two", "2")).unwrap();
        std::fs::rename(&new, &file).unwrap();
        assert_eq!(set.cases.get(2).unwrap(), before);
    }

    #[test]
    fn a_file_read_a_line_at_a_time_fails_as_the_whole_file_did() {
        let tmp = tempfile::tempdir().unwrap();
        let ds = tmp.path().join("evals/datasets/d");
        std::fs::create_dir_all(&ds).unwrap();
        let load = |bytes: &[u8]| {
            std::fs::write(ds.join("cases.jsonl"), bytes).unwrap();
            load_cases(&tmp.path().join("evals"), tmp.path(), tmp.path())
                .unwrap_err()
                .to_string()
        };
        // Each as reading the file whole says it; a bad line before a byte that is not
        // UTF-8: the file's encoding is said first.
        let whole = |bytes: &[u8]| {
            std::fs::write(ds.join("cases.jsonl"), bytes).unwrap();
            let shown = "evals/datasets/d/cases.jsonl";
            crate::fs::read_text(&ds.join("cases.jsonl"), shown)
                .unwrap_err()
                .to_string()
        };
        for bytes in [
            &b"{\"id\": \"a\", \"input\": \"x\"}\r\nnot json\n{\"id\": \"b\", \"input\": \"\xE9\"}\n"[..],
            b"\xFF\xFE{\x00",
            b"\n\xFE\xFF",
            b"{\"id\": \"a\", \"input\": \"x\xC3\"}",
        ] {
            assert_eq!(load(bytes), whole(bytes));
        }
        assert_eq!(
            load(b"{\"id\": \"a\", \"input\": \"x\"}\r\nnot json\n{\"id\": \"b\", \"input\": \"\xE9\"}\n"),
            "evals/datasets/d/cases.jsonl:3: not UTF-8 (byte 23 of the line, offset 58 in the file): save the file as UTF-8"
        );
        assert_eq!(
            load(b"{\"id\": \"a\", \"input\": \"x\"}\nnot json"),
            "evals/datasets/d/cases.jsonl:2:2: not valid JSON: expected ident"
        );
        // The first id loaded twice is named, with the case it repeats.
        assert_eq!(
            load(b"{\"id\": \"b\", \"input\": \"x\"}\n{\"id\": \"a\", \"input\": \"x\"}\n{\"id\": \"b\", \"input\": \"x\"}\n{\"id\": \"a\", \"input\": \"x\"}\n{\"id\": \"b\", \"input\": \"x\"}\n"),
            "duplicate case id 'b' in dataset 'd': evals/datasets/d/cases.jsonl:1 and evals/datasets/d/cases.jsonl:3; give one of them another id"
        );
    }

    #[test]
    fn a_whole_dataset_is_a_range_and_a_selection_a_list() {
        let tmp = tempfile::tempdir().unwrap();
        suite(tmp.path());
        let set = load_cases(&tmp.path().join("evals"), tmp.path(), tmp.path()).unwrap();
        assert!(matches!(set.cases.picked, super::Picked::Range(0, 5)));
        let odd = set.cases.filter(|h| h.id != "a/1");
        assert!(matches!(odd.picked, super::Picked::List(_)));
        let ids: Vec<String> = odd.heads().map(|h| h.id).collect();
        assert_eq!(ids, ["7", "b/2", "c/3", "plain"]);
        let tail = odd.filter(|h| h.id != "7");
        assert!(matches!(tail.picked, super::Picked::Range(2, 5)));
        assert_eq!(tail.get(0).unwrap().id, "b/2");
    }

    fn load(dir: &Path) -> super::super::cases::CaseSet {
        load_cases(&dir.join("evals"), dir, dir).unwrap()
    }

    fn write(dir: &Path, file: &str, text: &str) {
        let path = dir.join("evals/datasets").join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn a_line_longer_than_a_packed_length_reads_back_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let big = "x".repeat(crate::fs::span::LONG as usize + 10);
        let lines = format!(
            "{{\"id\": \"b\", \"input\": \"short\"}}\n{{\"id\": \"a\", \"input\": \"{big}\"}}\n{{\"id\": \"c\", \"input\": \"after\"}}\n"
        );
        write(tmp.path(), "d/cases.jsonl", &lines);
        let set = load(tmp.path());
        let ids: Vec<String> = set.cases.heads().map(|h| h.id).collect();
        assert_eq!(ids, ["a", "b", "c"]);
        assert_eq!(set.cases.store.long.len(), 1);
        assert_eq!(set.cases.get(0).unwrap().input.as_text(), big);
        assert_eq!(set.cases.get(0).unwrap().line, Some(2));
        assert_eq!(set.cases.get(1).unwrap().input.as_text(), "short");
        assert_eq!(set.cases.get(2).unwrap().input.as_text(), "after");
    }

    #[test]
    fn cases_either_side_of_a_dataset_boundary_keep_their_dataset() {
        let tmp = tempfile::tempdir().unwrap();
        write(
            tmp.path(),
            "a/cases.jsonl",
            "{\"id\": \"z\", \"input\": \"az\"}\n{\"id\": \"y\", \"input\": \"ay\"}\n",
        );
        // A dataset with no case between two with some.
        std::fs::create_dir_all(tmp.path().join("evals/datasets/b")).unwrap();
        write(
            tmp.path(),
            "c/cases.jsonl",
            "{\"id\": \"b\", \"input\": \"cb\"}\n{\"id\": \"a\", \"input\": \"ca\"}\n",
        );
        let set = load(tmp.path());
        assert_eq!(set.datasets, ["a", "b", "c"]);
        let keys: Vec<String> = set.cases.heads().map(|h| h.key()).collect();
        assert_eq!(keys, ["a/y", "a/z", "c/a", "c/b"]);
        let inputs: Vec<String> = set
            .cases
            .iter()
            .map(|c| {
                let c = c.unwrap();
                format!("{}:{}:{:?}", c.dataset, c.input.as_text(), c.line)
            })
            .collect();
        assert_eq!(
            inputs,
            [
                "a:ay:Some(2)",
                "a:az:Some(1)",
                "c:ca:Some(2)",
                "c:cb:Some(1)"
            ]
        );
        assert_eq!(set.cases.datasets(), ["a", "c"]);
        let split: Vec<String> = set
            .cases
            .by_dataset()
            .into_iter()
            .map(|(d, cases)| format!("{d}: {}", cases.heads().map(|h| h.id).collect::<String>()))
            .collect();
        assert_eq!(split, ["a: yz", "c: ab"]);
        let tail = set.cases.filter(|h| h.id != "y");
        assert_eq!(tail.datasets(), ["a", "c"]);
        assert_eq!(tail.head(0).dataset, "a");
        assert_eq!(tail.head(1).dataset, "c");
    }

    #[test]
    fn tags_on_few_cases_or_on_most_read_as_each_line_has_them() {
        for tagged in [1, 3, 9] {
            let tmp = tempfile::tempdir().unwrap();
            let lines: String = (0..10)
                .map(|i| {
                    let tags = match i {
                        i if i >= tagged => String::new(),
                        i if i % 2 == 0 => r#", "tags": ["even", "t"]"#.to_string(),
                        _ => r#", "tags": ["odd"]"#.to_string(),
                    };
                    format!("{{\"id\": \"{}\", \"input\": \"x\"{tags}}}\n", 9 - i)
                })
                .collect();
            write(tmp.path(), "d/cases.jsonl", &lines);
            let set = load(tmp.path());
            // Two sets, each held once: the empty one beside them.
            assert_eq!(
                set.cases.store.tag_sets.len(),
                if tagged > 1 { 3 } else { 2 }
            );
            for (i, head) in set.cases.heads().enumerate() {
                assert_eq!(head.tags, set.cases.get(i).unwrap().tags, "{tagged}: {i}");
            }
            let even = select(
                &set,
                &Selection {
                    tags: vec!["t".into()],
                    ..Default::default()
                },
            )
            .unwrap();
            let ids: Vec<String> = even.heads().map(|h| h.id).collect();
            let want: Vec<String> = (0..tagged)
                .rev()
                .filter(|i| i % 2 == 0)
                .map(|i| (9 - i).to_string())
                .collect();
            assert_eq!(ids, want, "{tagged} tagged");
        }
    }

    #[test]
    fn folder_cases_and_two_files_in_one_dataset_interleave_by_id() {
        let tmp = tempfile::tempdir().unwrap();
        let ds = tmp.path().join("evals/datasets/d");
        for (variant, text) in [("b", "folder b"), ("e", "folder e")] {
            std::fs::create_dir_all(ds.join("cases").join(variant)).unwrap();
            std::fs::write(ds.join("cases").join(variant).join("input.txt"), text).unwrap();
        }
        write(
            tmp.path(),
            "d/one.jsonl",
            "{\"id\": \"d\", \"input\": \"one d\"}\n\n{\"id\": \"a\", \"input\": \"one a\", \"tags\": [\"t\"]}\n",
        );
        write(
            tmp.path(),
            "d/two.jsonl",
            "{\"id\": \"c\", \"input\": \"two c\"}\n{\"id\": \"f\", \"input\": \"two f\"}\n",
        );
        let set = load(tmp.path());
        let got: Vec<String> = set
            .cases
            .heads()
            .map(|h| {
                let file = h.source.strip_prefix(&ds).unwrap().display().to_string();
                format!("{} {} {file} {:?} {:?}", h.id, h.variant, h.line, h.tags)
            })
            .collect();
        assert_eq!(
            got,
            [
                r#"a a one.jsonl Some(3) ["t"]"#,
                "b b cases/b/input.txt None []",
                "c c two.jsonl Some(1) []",
                "d d one.jsonl Some(1) []",
                "e e cases/e/input.txt None []",
                "f f two.jsonl Some(2) []",
            ]
        );
        let inputs: Vec<String> = set
            .cases
            .iter()
            .map(|c| c.unwrap().input.as_text().to_string())
            .collect();
        assert_eq!(
            inputs,
            ["one a", "folder b", "two c", "one d", "folder e", "two f"]
        );
        // A duplicate across the two files and the folder is named where each loaded.
        write(
            tmp.path(),
            "d/two.jsonl",
            "{\"id\": \"c\", \"input\": \"two c\"}\n{\"id\": \"e\", \"input\": \"two e\"}\n{\"id\": \"d\", \"input\": \"two d\"}\n",
        );
        let e = load_cases(&tmp.path().join("evals"), tmp.path(), tmp.path())
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "duplicate case id 'e' in dataset 'd': evals/datasets/d/cases/e/input.txt and evals/datasets/d/two.jsonl:2; give one of them another id"
        );
    }

    #[test]
    fn a_duplicate_in_a_file_already_in_id_order_is_named_as_it_loads() {
        let tmp = tempfile::tempdir().unwrap();
        let shown = "evals/datasets/d/cases.jsonl";
        for (ids, want) in [
            // In id order throughout: found as the lines load.
            (&["a", "b", "b", "c", "c"][..], ("b", 2, 3)),
            // In order until the last: sorted after, the same pair.
            (&["a", "b", "b", "a"][..], ("b", 2, 3)),
            (&["b", "c", "a", "c", "a"][..], ("c", 2, 4)),
        ] {
            let lines: String = ids
                .iter()
                .map(|id| format!("{{\"id\": \"{id}\", \"input\": \"x\"}}\n"))
                .collect();
            write(tmp.path(), "d/cases.jsonl", &lines);
            let e = load_cases(&tmp.path().join("evals"), tmp.path(), tmp.path())
                .unwrap_err()
                .to_string();
            let (id, a, b) = want;
            assert_eq!(
                e,
                format!(
                    "duplicate case id '{id}' in dataset 'd': {shown}:{a} and {shown}:{b}; give one of them another id"
                ),
                "{ids:?}"
            );
        }
    }

    #[test]
    fn datasets_past_a_chunk_in_order_or_not_read_back_sorted_with_their_tags() {
        let tmp = tempfile::tempdir().unwrap();
        let n = super::CHUNK + 700;
        // Dataset a in id order; dataset b in reverse, so sorted as it ends.
        let line = |i: usize| {
            let tags = if i.is_multiple_of(3) {
                r#", "tags": ["third"]"#
            } else {
                ""
            };
            format!("{{\"id\": \"c{i:05}\", \"input\": \"in {i}\"{tags}}}\n")
        };
        write(
            tmp.path(),
            "a/cases.jsonl",
            &(0..n).map(line).collect::<String>(),
        );
        write(
            tmp.path(),
            "b/cases.jsonl",
            &(0..n).rev().map(line).collect::<String>(),
        );
        let set = load(tmp.path());
        assert_eq!(set.cases.len(), 2 * n);
        let heads: Vec<_> = set.cases.heads().collect();
        // The keys a run's snapshot lists, read as the heads are.
        assert!(set.cases.keys().eq(heads.iter().map(|h| h.key())));
        for (k, head) in heads.iter().enumerate() {
            assert_eq!(set.cases.dataset(k), head.dataset);
            let (dataset, i) = (if k < n { "a" } else { "b" }, k % n);
            assert_eq!(head.key(), format!("{dataset}/c{i:05}"));
            assert_eq!(head.variant, format!("c{i:05}"));
            assert_eq!(head.line, Some(if k < n { i + 1 } else { n - i }));
            assert_eq!(!head.tags.is_empty(), i % 3 == 0, "{k}");
            // One at a time, as a worker reads it, the same.
            let one = set.cases.head(k);
            assert_eq!(
                (one.key(), one.line, one.tags),
                (head.key(), head.line, head.tags)
            );
        }
        for k in [0, 1, n - 1, n, n + 1, 2 * n - 1] {
            let case = set.cases.get(k).unwrap();
            assert_eq!(case.input.as_text(), format!("in {}", k % n));
            assert_eq!(case.dataset, if k < n { "a" } else { "b" });
        }
        // A selection across the chunks reads the same heads.
        let third = select(
            &set,
            &Selection {
                tags: vec!["third".into()],
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(third.len(), 2 * n.div_ceil(3));
        assert!(third.heads().all(|h| h.tags == ["third"]));
        assert_eq!(
            third.get(third.len() - 1).unwrap().id,
            format!("c{:05}", (n - 1) / 3 * 3)
        );
    }
}
